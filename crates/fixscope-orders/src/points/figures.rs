//! What reporters read of the clock (`clock` in the summary, the text and HTML tables) and
//! of the one-way stages' uncertainty.

use super::clock::{ClockEstimate, Unestimable, Window};
use super::spec::UncertaintyLimit;
use crate::correlate::Stage;

/// TAI runs 37 s ahead of UTC (since 2017): a clock that far off is one of each (a NIC's
/// PTP clock beside a system clock; libpcap #999, tcpdump #523).
pub const TAI_UTC_NS: i64 = 37_000_000_000;
const TAI_UTC_SLACK_NS: i64 = 1_000_000_000;

/// Whether an offset or a step is TAI against UTC.
pub fn is_tai_utc(ns: i64) -> bool {
    (ns.abs() - TAI_UTC_NS).abs() < TAI_UTC_SLACK_NS
}

/// One window of the clock, as reported.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowFigures {
    /// In the reference point's clock (`relative_to`).
    pub start_ns: i64,
    pub end_ns: i64,
    /// The bounds at the window's start, middle and end (`None`: that side unbounded).
    pub start: Option<(i64, i64)>,
    pub middle: Option<(i64, i64)>,
    pub end: Option<(i64, i64)>,
    pub drift_ppm: Option<f64>,
    pub samples_forward: u64,
    pub samples_reverse: u64,
    /// The stretch a step happened in.
    pub transition: bool,
    /// Why the window has no interval (`None`: it has one): `no_forward_samples`,
    /// `no_reverse_samples` or `contradicted`.
    pub unestimable: Option<&'static str>,
}

/// A step of the clock, as reported.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepFigures {
    pub at_ns: i64,
    pub after_ns: i64,
    pub by_ns: i64,
    pub size_ns: i64,
    pub tai_utc: bool,
}

/// The clock between the points, and the one-way stages' uncertainty.
#[derive(Clone, Debug, PartialEq)]
pub struct ClockFigures {
    /// `estimate`, `trust` or `offset`.
    pub mode: &'static str,
    /// The offset reported is clock(`of`) − clock(`relative_to`).
    pub of: String,
    pub relative_to: String,
    pub near_acceptor: String,
    pub far: String,
    /// Segments toward the acceptor / away from it seen at both points.
    pub samples_forward: u64,
    pub samples_reverse: u64,
    pub windows: Vec<WindowFigures>,
    pub steps: Vec<StepFigures>,
    /// The offset itself is TAI against UTC.
    pub tai_utc: bool,
    /// `trust` or `offset`: the offset used and its uncertainty.
    pub fixed: Option<(i64, u64)>,
    /// The largest uncertainty of the orders recorded, `one_way_fwd` then `one_way_rev`.
    pub one_way_uncertainty_ns: [u64; 2],
    pub limit: UncertaintyLimit,
}

impl ClockFigures {
    pub(super) fn windows_of(
        estimate: &ClockEstimate,
        b_near: bool,
        resolution_ns: (i64, i64),
    ) -> Vec<WindowFigures> {
        estimate
            .windows
            .iter()
            .map(|w| window_figures(w, b_near, resolution_ns))
            .collect()
    }

    /// The points a two-point stage is measured between, in its direction.
    pub fn points_of(&self, stage: Stage) -> Option<Vec<&str>> {
        let (far, near) = (self.far.as_str(), self.near_acceptor.as_str());
        match stage {
            Stage::Residence => Some(vec![near]),
            Stage::WireRtt | Stage::OneWayFwd => Some(vec![far, near]),
            Stage::OneWayRev => Some(vec![near, far]),
            _ => None,
        }
    }

    /// The largest uncertainty of a one-way stage's orders.
    pub fn uncertainty(&self, stage: Stage) -> Option<u64> {
        match stage {
            Stage::OneWayFwd => Some(self.one_way_uncertainty_ns[0]),
            Stage::OneWayRev => Some(self.one_way_uncertainty_ns[1]),
            _ => None,
        }
    }

    /// A one-way stage whose uncertainty is beyond `--max-clock-uncertainty` for its median:
    /// `Some(allowed)` — its percentiles are withheld, only their bounds are shown.
    pub fn withheld(&self, stage: Stage, median_ns: Option<u64>) -> Option<u64> {
        let u = self.uncertainty(stage)?;
        let allowed = self.limit.allowed_ns(median_ns.unwrap_or(0));
        (u > allowed).then_some(allowed)
    }
}

fn window_figures(w: &Window, b_near: bool, (res_a, res_b): (i64, i64)) -> WindowFigures {
    let at = |t: i64| {
        w.bounds(t)
            .map(|(lo, hi)| (lo.floor() as i64 - res_a, hi.ceil() as i64 + res_b))
    };
    WindowFigures {
        start_ns: w.start_ns,
        end_ns: w.end_ns,
        start: at(w.start_ns),
        middle: at(w.start_ns + (w.end_ns - w.start_ns) / 2),
        end: at(w.end_ns),
        drift_ppm: w.drift_ppm(),
        samples_forward: if b_near {
            w.samples_a_to_b
        } else {
            w.samples_b_to_a
        },
        samples_reverse: if b_near {
            w.samples_b_to_a
        } else {
            w.samples_a_to_b
        },
        transition: w.transition,
        unestimable: w.unestimable().map(|u| {
            // A→B is toward the acceptor when B is nearer it.
            match (u, b_near) {
                (Unestimable::NoSampleAToB, true) | (Unestimable::NoSampleBToA, false) => {
                    "no_forward_samples"
                }
                (Unestimable::NoSampleAToB, false) | (Unestimable::NoSampleBToA, true) => {
                    "no_reverse_samples"
                }
                (Unestimable::Contradicted, _) => "contradicted",
            }
        }),
    }
}
