//! `--leg`, `--link`, `--link-window` (#31): a router's sessions measured hop by hop.

use anyhow::{bail, Result};
use clap::Args;
use fixscope_core::hops::{HopConfig, Leg, Legs, LinkSpec};
use fixscope_core::ports::PortSet;

/// Which sessions are a router's parents, children and market data, and how they link.
#[derive(Args, Debug, Clone, Default)]
pub struct LegArgs {
    /// A leg of a router: `up=PORTS[/server|/client]` (orders coming in: parents),
    /// `down=PORTS[/client]` (orders going out to venues: children), `md=PORTS[/client]`
    /// (FIX market data coming in, for tick_to_order). PORTS are the acceptor's, as with
    /// -p (which then is not needed). Repeat for each leg. Adds the stages hop_out,
    /// venue_rtt, hop_back, client_rtt and tick_to_order.
    #[arg(long = "leg", value_name = "KIND=PORTS[/ROLE]")]
    pub legs: Vec<Leg>,
    /// How a child names its parent, tried in order per child: `hops` (115 = parent's 49,
    /// last 630 = parent's 34), `11` (same ClOrdID and Side), `CHILD=PARENT` tags (e.g.
    /// 526=11); `auto` tries hops, 11, 526=11, then on a capture the rule `discover` finds
    /// on its first 10,000 children. A child naming two parents is ambiguous, never guessed;
    /// `discover` prints every candidate rule and the one it suggests, then exits.
    #[arg(
        long,
        value_name = "RULE[,RULE...]|auto",
        default_value = "auto",
        requires = "legs"
    )]
    pub link: LinkSpec,
    /// A child links to parents at most this much older (and a market-data tick counts at
    /// most this much before a child), e.g. 1s, 200ms.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = humantime::parse_duration, requires = "legs")]
    pub link_window: std::time::Duration,
}

impl LegArgs {
    /// The hop linker's configuration (`None` without `--leg`); `timeout_ns` is `-t`.
    pub fn hop_config(&self, timeout_ns: u64) -> Result<Option<HopConfig>> {
        if self.legs.is_empty() {
            return Ok(None);
        }
        let legs = Legs(self.legs.clone());
        legs.check().map_err(anyhow::Error::msg)?;
        let window_ns = u64::try_from(self.link_window.as_nanos()).unwrap_or(u64::MAX);
        if window_ns == 0 {
            bail!("--link-window must be above 0");
        }
        Ok(Some(HopConfig {
            legs,
            link: self.link.clone(),
            window_ns,
            answer_wait_ns: timeout_ns,
        }))
    }

    /// The watched ports: `-p`'s and every leg's.
    pub fn watched_ports(&self, ports: Option<&PortSet>) -> Result<PortSet> {
        let mut list: Vec<String> = ports.map(|p| p.to_string()).into_iter().collect();
        list.extend(self.legs.iter().map(|l| l.ports.to_string()));
        if list.is_empty() {
            bail!("-p/--port (or --leg) is required: the FIX port(s) to watch");
        }
        list.join(",")
            .parse()
            .map_err(|e| anyhow::anyhow!("ports: {e}"))
    }

    /// `--link discover`: read, propose rules, exit (no report).
    pub fn discover(&self) -> bool {
        !self.legs.is_empty() && self.link == LinkSpec::Discover
    }

    /// Live: each leg's ports with its role (the kernel filter takes a role per range).
    pub fn port_roles(&self) -> Vec<(PortSet, fixscope_core::Role)> {
        self.legs
            .iter()
            .map(|l| (l.ports.clone(), l.role))
            .collect()
    }
}
