//! `--point`, `--clock`, `--clock-window`, `--max-clock-uncertainty` (#32): one session
//! captured at two points, each with its own clock.

use anyhow::{bail, Result};
use clap::Args;
use fixscope_core::points::{ClockMode, ClockSettings, PointSpec, UncertaintyLimit};

/// Two capture points of one FIX session, and what is known of their clocks.
#[derive(Args, Debug, Clone, Default)]
pub struct PointArgs {
    /// A capture point: `NAME=FILE[,FILE…]`, one clock domain (a host, or a tap stamped by
    /// one device). Give two, instead of capture files: the same TCP segments are matched
    /// across them, and the stages residence, wire_rtt, one_way_fwd and one_way_rev are
    /// added (docs/points.md).
    #[arg(long = "point", value_name = "NAME=FILE[,FILE...]", value_parser = PointSpec::parse)]
    pub points: Vec<PointSpec>,
    /// How the offset between the points' clocks is known: `estimate` (from the segments
    /// both saw: an interval per window, its drift and steps), `trust` (the captures' clocks
    /// as they are, checked against causality), or `offset=B-A=+12.4us~0.8us` (B's clock
    /// minus A's, ± its uncertainty; checked too).
    #[arg(long, value_name = "estimate|trust|offset=B-A=±V[~U]", default_value = "estimate", value_parser = ClockMode::parse, requires = "points")]
    pub clock: ClockMode,
    /// The longest stretch one offset line is fitted over (split at steps), e.g. 10s.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = humantime::parse_duration, requires = "points")]
    pub clock_window: std::time::Duration,
    /// One-way percentiles are withheld (their bounds shown instead) when the clock's
    /// uncertainty is above this: a share of the stage's median (`10%`) or a duration
    /// (`5us`).
    #[arg(long, value_name = "PERCENT%|DURATION", default_value = "10%", value_parser = UncertaintyLimit::parse, requires = "points")]
    pub max_clock_uncertainty: UncertaintyLimit,
}

impl PointArgs {
    pub fn given(&self) -> bool {
        !self.points.is_empty()
    }

    /// The two points and the clock settings.
    pub fn settings(&self) -> Result<(&PointSpec, &PointSpec, ClockSettings)> {
        let [a, b] = self.points.as_slice() else {
            bail!(
                "--point: give two points, NAME=FILE each (got {})",
                self.points.len()
            );
        };
        if a.name == b.name {
            bail!("--point: two points named {}", a.name);
        }
        let window_ns = u64::try_from(self.clock_window.as_nanos()).unwrap_or(u64::MAX);
        if window_ns < 1_000_000 {
            bail!("--clock-window must be at least 1ms");
        }
        Ok((
            a,
            b,
            ClockSettings {
                mode: self.clock.clone(),
                window_ns,
                limit: self.max_clock_uncertainty,
            },
        ))
    }
}
