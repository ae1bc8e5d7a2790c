//! Command-line options of `fixscope sim router`.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;

use clap::Parser;

use crate::delay::{parse_duration_ns, DelaySpec};

fn parse_delay(s: &str) -> Result<DelaySpec, String> {
    s.parse().map_err(|e| format!("{e}"))
}

fn parse_ns(s: &str) -> Result<u64, String> {
    parse_duration_ns(s).map_err(|e| format!("{e}"))
}

fn parse_rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => Err(format!("want a fraction in [0, 1], not {s:?}")),
    }
}

/// How a child order's ids relate to its parent's (`--id-map`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdMap {
    /// Child 11 = parent 11 (refused with `--slice` > 1: the children would share it).
    Same,
    /// Child 11 = the router's own id, child 526 (SecondaryClOrdID) = parent 11.
    Secondary,
    /// Child 11 = the router's own id, 115 = parent's 49 and a NoHops group (627=1, 628 =
    /// our SenderCompID, 629 = SendingTime, 630 = parent's 34).
    Hops,
    /// Child 11 = the router's own id and nothing links it to the parent on the wire.
    Counter,
}

impl FromStr for IdMap {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "same" => Ok(IdMap::Same),
            "526" => Ok(IdMap::Secondary),
            "hops" => Ok(IdMap::Hops),
            "counter" => Ok(IdMap::Counter),
            _ => Err(format!("want same, 526, hops or counter, not {s:?}")),
        }
    }
}

impl fmt::Display for IdMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IdMap::Same => "same",
            IdMap::Secondary => "526",
            IdMap::Hops => "hops",
            IdMap::Counter => "counter",
        })
    }
}

#[derive(clap::Args, Clone, Debug)]
pub struct RouterArgs {
    /// Address to accept client FIX sessions on (port 0 = ephemeral).
    #[arg(long, default_value = "127.0.0.1:9879")]
    pub listen: SocketAddr,
    /// The venue (a `fixscope sim exchange`) the router sends child orders to.
    #[arg(long)]
    pub venue: SocketAddr,
    /// Our SenderCompID on the venue session.
    #[arg(long, default_value = "ROUTER")]
    pub sender_comp_id: String,
    /// The venue's CompID (TargetCompID of the venue session).
    #[arg(long, default_value = "EXCH")]
    pub target_comp_id: String,
    /// BeginString of the venue session.
    #[arg(long, default_value = "FIX.4.4")]
    pub begin_string: String,
    /// Delay between a parent request's arrival and its child order(s) (DelaySpec syntax:
    /// 0, fixed:50us, uniform:20us-80us, normal:.., lognormal:.., bimodal:..).
    #[arg(long, default_value = "0", value_parser = parse_delay)]
    pub route_delay: DelaySpec,
    /// Delay between a venue response's arrival and the parent's response; same syntax.
    #[arg(long, default_value = "0", value_parser = parse_delay)]
    pub back_delay: DelaySpec,
    /// Fraction of parent requests the router rejects itself (no child).
    #[arg(long, default_value = "0", value_parser = parse_rate)]
    pub reject_rate: f64,
    /// Child orders per NewOrderSingle (OrderQty split between them).
    #[arg(long, default_value_t = 1)]
    pub slice: u16,
    /// How child ids relate to the parent's: same, 526, hops or counter.
    #[arg(long, default_value = "526")]
    pub id_map: IdMap,
    /// Seed of the delays and rejects.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Ground-truth CSV, one row per child (see fixscope_sim::router::truth).
    #[arg(long, value_name = "FILE")]
    pub truth: Option<PathBuf>,
    /// The router's own capture of both sessions (nanosecond pcap, CLOCK_REALTIME).
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// Stop after this many seconds (default: run until SIGINT/SIGTERM).
    #[arg(long)]
    pub duration: Option<f64>,
    /// HeartBtInt (108) of the venue session, in seconds.
    #[arg(long, default_value_t = 30)]
    pub heartbeat: u32,
    /// Spin instead of sleeping when the next due event is closer than this.
    #[arg(long, default_value = "50us", value_parser = parse_ns)]
    pub spin: u64,
}

#[derive(Parser)]
struct RouterCli {
    #[command(flatten)]
    args: RouterArgs,
}

impl RouterArgs {
    /// Parses flags as on the command line, e.g.
    /// `RouterArgs::from_flags(["--venue", "127.0.0.1:9878"])`.
    pub fn from_flags<I, S>(flags: I) -> anyhow::Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: Into<std::ffi::OsString> + Clone,
    {
        let argv = std::iter::once("router".into()).chain(flags.into_iter().map(Into::into));
        Ok(RouterCli::try_parse_from(argv)?.args)
    }

    /// Combinations clap cannot refuse on its own.
    pub fn validate(&self) -> anyhow::Result<()> {
        // Children are numbered in 16 bits of a write tag; far more than any test needs.
        anyhow::ensure!(
            (1..=1000).contains(&self.slice),
            "--slice must be between 1 and 1000"
        );
        anyhow::ensure!(
            !(self.id_map == IdMap::Same && self.slice > 1),
            "--id-map same cannot be combined with --slice {} (the children would share \
             the parent's ClOrdID); use --id-map 526, hops or counter",
            self.slice
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_validates() {
        let a = RouterArgs::from_flags(["--venue", "127.0.0.1:1"]).unwrap();
        assert_eq!(
            (a.id_map, a.slice, a.reject_rate),
            (IdMap::Secondary, 1, 0.0)
        );
        assert_eq!(a.listen.port(), 9879);
        a.validate().unwrap();
        let a = RouterArgs::from_flags(["--venue", "127.0.0.1:1", "--id-map", "same"]).unwrap();
        a.validate().unwrap();
        let a =
            RouterArgs::from_flags(["--venue", "127.0.0.1:1", "--id-map", "same", "--slice", "2"])
                .unwrap();
        assert!(a.validate().is_err());
        let a = RouterArgs::from_flags(["--venue", "127.0.0.1:1", "--slice", "0"]).unwrap();
        assert!(a.validate().is_err());
        assert!(RouterArgs::from_flags(["--venue", "127.0.0.1:1", "--reject-rate", "2"]).is_err());
        assert!(RouterArgs::from_flags(["--venue", "127.0.0.1:1", "--id-map", "x"]).is_err());
        assert!(RouterArgs::from_flags(["--listen", "127.0.0.1:0"]).is_err());
    }
}
