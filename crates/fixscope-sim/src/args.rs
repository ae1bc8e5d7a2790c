//! Command-line options of `fixscope sim exchange` and `fixscope sim client`.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;

use clap::Parser;

use crate::delay::{parse_duration_ns, DelaySpec};
use crate::stall::StallSpec;

fn parse_delay(s: &str) -> Result<DelaySpec, String> {
    s.parse().map_err(|e| format!("{e}"))
}

fn parse_stall(s: &str) -> Result<StallSpec, String> {
    s.parse().map_err(|e| format!("{e}"))
}

fn parse_ns(s: &str) -> Result<u64, String> {
    parse_duration_ns(s).map_err(|e| format!("{e}"))
}

#[derive(clap::Args, Clone, Debug)]
pub struct ExchangeArgs {
    /// Address to accept FIX sessions on (port 0 = ephemeral; IPv6 allowed).
    #[arg(long, default_value = "127.0.0.1:9878")]
    pub listen: SocketAddr,
    /// Delay between a request's arrival and its ack (0, fixed:50us, uniform:20us-80us,
    /// normal:50us,10us, lognormal:MEDIAN,SIGMA, bimodal:BASE,TAIL,P).
    #[arg(long, default_value = "0", value_parser = parse_delay)]
    pub ack_delay: DelaySpec,
    /// Delay between an ack and the fill (and between partial fills); same syntax.
    #[arg(long, default_value = "0", value_parser = parse_delay)]
    pub fill_delay: DelaySpec,
    /// Partial fills before the final fill of each order.
    #[arg(long, default_value_t = 0)]
    pub partial_fills: u32,
    /// Acknowledge orders but never fill them.
    #[arg(long)]
    pub no_fill: bool,
    /// Hold a fraction of requests for a while before answering them (the rest are answered
    /// on time), e.g. 1%:2s or 0.5%:700ms; repeat or list (1%:2s,0.1%:5s). Held are the k-th
    /// requests of each connection where floor(k*f) grows: for 1% the 100th, 200th, ...
    #[arg(long, value_name = "FRACTION:DURATION", value_parser = parse_stall, value_delimiter = ',')]
    pub stall: Vec<StallSpec>,
    /// Seed of the delay sampler.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Ground-truth CSV: clordid,session,msg_type,request_ns,ack_ns,fill_ns,read_call_ns,ack_written_ns
    /// (CLOCK_MONOTONIC; see fixscope_sim::truth).
    #[arg(long)]
    pub truth: Option<PathBuf>,
    /// Stop after this many seconds (default: run until SIGINT/SIGTERM).
    #[arg(long)]
    pub duration: Option<f64>,
    /// SenderCompID used when a client's Logon does not name one.
    #[arg(long, default_value = "EXCH")]
    pub comp_id: String,
    /// Order slots preallocated per session (grows beyond, up to --max-live-orders).
    #[arg(long, default_value_t = 16_384)]
    pub order_capacity: usize,
    /// Resting orders per session above which new orders are rejected.
    #[arg(long, default_value_t = 1 << 20)]
    pub max_live_orders: usize,
    /// Spin instead of sleeping when the next due event is closer than this.
    #[arg(long, default_value = "50us", value_parser = parse_ns)]
    pub spin: u64,
}

#[derive(clap::Args, Clone, Debug)]
pub struct ClientArgs {
    /// Exchange to connect to.
    #[arg(long, default_value = "127.0.0.1:9878")]
    pub connect: SocketAddr,
    /// Sessions (TCP connections), SenderCompID CLIENT1..CLIENTn.
    #[arg(long, default_value_t = 1)]
    pub sessions: usize,
    /// Open loop: orders per second in total, each sent at its pre-computed time
    /// t0 + i/R (latency is measured from that time too: no coordinated omission).
    #[arg(long, conflicts_with = "window")]
    pub rate: Option<f64>,
    /// Closed loop: outstanding orders per session.
    #[arg(long)]
    pub window: Option<usize>,
    /// Seconds to send for (default 10 unless --count is given).
    #[arg(long)]
    pub duration: Option<f64>,
    /// Orders to send in total (stops at whichever of --count/--duration comes first).
    #[arg(long)]
    pub count: Option<u64>,
    /// ClOrdID length (zero-padded counter after the prefix).
    #[arg(long, default_value_t = 20)]
    pub clordid_len: usize,
    /// ClOrdID prefix shared by all sessions (they then collide deliberately); default is a
    /// per-session prefix "S<n>-", so ClOrdIDs are unique.
    #[arg(long)]
    pub clordid_prefix: Option<String>,
    /// Bytes of 58=Text padding per order.
    #[arg(long, default_value_t = 0)]
    pub pad: usize,
    /// Send each order in two write() calls split in the middle of the 11= value.
    #[arg(long)]
    pub split_clordid: bool,
    /// Request mix, e.g. D=90,F=5,G=5 (F/G refer to earlier live orders).
    #[arg(long, default_value = "D=100")]
    pub mix: Mix,
    /// FIX.4.2, FIX.4.4 or FIXT.1.1.
    #[arg(long, default_value = "FIX.4.4")]
    pub begin_string: String,
    /// TargetCompID of the exchange.
    #[arg(long, default_value = "EXCH")]
    pub target_comp_id: String,
    /// SenderCompID prefix (session n is <prefix><n>).
    #[arg(long, default_value = "CLIENT")]
    pub sender_prefix: String,
    /// HeartBtInt (108) in seconds.
    #[arg(long, default_value_t = 30)]
    pub heartbeat: u32,
    /// The exchange runs with --no-fill: an order is complete once acked.
    #[arg(long)]
    pub no_fill: bool,
    /// Seconds to wait for outstanding responses after the last order.
    #[arg(long, default_value_t = 5.0)]
    pub drain_timeout: f64,
    /// Client-side truth CSV: clordid,session,msg_type,scheduled_ns,send_ns,first_ns,ack_ns,fill_ns.
    #[arg(long)]
    pub truth: Option<PathBuf>,
    /// Seed for the request mix.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Spin instead of sleeping when the next send is closer than this.
    #[arg(long, default_value = "50us", value_parser = parse_ns)]
    pub spin: u64,
}

#[derive(Parser)]
struct ExchangeCli {
    #[command(flatten)]
    args: ExchangeArgs,
}

#[derive(Parser)]
struct ClientCli {
    #[command(flatten)]
    args: ClientArgs,
}

impl ExchangeArgs {
    /// Parses flags as on the command line (for tests and the demo), e.g.
    /// `ExchangeArgs::from_flags(["--listen", "127.0.0.1:0"])`.
    pub fn from_flags<I, S>(flags: I) -> anyhow::Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: Into<std::ffi::OsString> + Clone,
    {
        let argv = std::iter::once("exchange".into()).chain(flags.into_iter().map(Into::into));
        Ok(ExchangeCli::try_parse_from(argv)?.args)
    }
}

impl Default for ExchangeArgs {
    fn default() -> Self {
        ExchangeCli::parse_from(["exchange"]).args
    }
}

impl ClientArgs {
    /// Parses flags as on the command line, e.g. `ClientArgs::from_flags(["--count", "10"])`.
    pub fn from_flags<I, S>(flags: I) -> anyhow::Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: Into<std::ffi::OsString> + Clone,
    {
        let argv = std::iter::once("client".into()).chain(flags.into_iter().map(Into::into));
        Ok(ClientCli::try_parse_from(argv)?.args)
    }
}

impl Default for ClientArgs {
    fn default() -> Self {
        ClientCli::parse_from(["client"]).args
    }
}

/// Percentages of NewOrderSingle (D), OrderCancelRequest (F), OrderCancelReplaceRequest (G).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mix {
    pub d: u32,
    pub f: u32,
    pub g: u32,
}

impl Default for Mix {
    fn default() -> Self {
        Mix { d: 100, f: 0, g: 0 }
    }
}

impl FromStr for Mix {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut mix = Mix { d: 0, f: 0, g: 0 };
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("bad mix entry {part:?} (want e.g. D=90)"))?;
            let v: u32 = v
                .trim()
                .parse()
                .map_err(|_| format!("bad weight in {part:?}"))?;
            match k.trim() {
                "D" => mix.d = v,
                "F" => mix.f = v,
                "G" => mix.g = v,
                _ => return Err(format!("unknown request type {k:?} (D, F or G)")),
            }
        }
        if mix.d == 0 {
            return Err("the mix needs some D (F/G act on earlier orders)".into());
        }
        Ok(mix)
    }
}

impl fmt::Display for Mix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "D={},F={},G={}", self.d, self.f, self.g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_flags() {
        let e = ExchangeArgs::default();
        assert_eq!(e.listen.port(), 9878);
        assert_eq!(e.ack_delay, DelaySpec::Zero);
        let e = ExchangeArgs::from_flags(["--ack-delay", "fixed:200us", "--listen", "[::1]:0"])
            .unwrap();
        assert_eq!(e.ack_delay, DelaySpec::Fixed(200_000));
        assert!(e.listen.is_ipv6());
        assert!(ExchangeArgs::from_flags(["--ack-delay", "bogus"]).is_err());
        assert!(e.stall.is_empty());
        let e = ExchangeArgs::from_flags(["--stall", "1%:2s", "--stall", "0.5%:700ms,0.1%:5s"])
            .unwrap();
        let stalls: Vec<String> = e.stall.iter().map(|s| s.to_string()).collect();
        assert_eq!(
            stalls,
            ["1%:2000000000ns", "0.5%:700000000ns", "0.1%:5000000000ns"]
        );
        assert!(ExchangeArgs::from_flags(["--stall", "2s"]).is_err());

        let c = ClientArgs::from_flags(["--rate", "1000", "--mix", "D=90,F=5,G=5"]).unwrap();
        assert_eq!(c.mix, Mix { d: 90, f: 5, g: 5 });
        assert!(ClientArgs::from_flags(["--rate", "1", "--window", "2"]).is_err());
        assert!("F=100".parse::<Mix>().is_err());
    }
}
