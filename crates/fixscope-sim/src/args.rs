//! Command-line options of `fixscope sim exchange` and `fixscope sim client`.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;

use clap::Parser;

use crate::delay::{parse_duration_ns, DelaySpec};
use crate::sim_protocol::SimProtocol;
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

fn parse_symbol_delay(s: &str) -> Result<(String, DelaySpec), String> {
    let (sym, spec) = s
        .split_once('=')
        .ok_or_else(|| format!("want SYMBOL=DELAY, e.g. MSFT=fixed:200us, not {s:?}"))?;
    if sym.is_empty() {
        return Err(format!("empty symbol in {s:?}"));
    }
    Ok((sym.to_string(), parse_delay(spec)?))
}

fn parse_weighted(s: &str) -> Result<Weighted, String> {
    s.parse()
}

#[derive(clap::Args, Clone, Debug)]
pub struct ExchangeArgs {
    /// Address to accept FIX sessions on (port 0 = ephemeral; IPv6 allowed).
    #[arg(long, default_value = "127.0.0.1:9878")]
    pub listen: SocketAddr,
    /// Protocol of the sessions: fix, or ouch42 / ouch50 (OUCH over SoupBinTCP) or ilink3
    /// (CME iLink 3). A binary exchange takes --listen, --ack-delay, --fill-delay,
    /// --partial-fills, --no-fill, --seed, --truth, --duration and --spin, and refuses the
    /// FIX-only flags by name.
    #[arg(long, default_value = "fix", value_name = "fix|ouch42|ouch50|ilink3")]
    pub protocol: SimProtocol,
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
    /// Ack delay of the orders of one symbol instead of --ack-delay (SYMBOL=DELAY, e.g.
    /// MSFT=fixed:300us); repeat for more symbols. Per-symbol latency truth for `--by 55`.
    #[arg(long, value_name = "SYMBOL=DELAY", value_parser = parse_symbol_delay)]
    pub symbol_ack_delay: Vec<(String, DelaySpec)>,
    /// Answer every N-th request (over all sessions) with an ExecutionReport rejecting it
    /// (35=8 150=8) when it is a D (0: never).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub order_reject_every: u64,
    /// Answer every N-th request with an OrderCancelReject (35=9) when it is an F or G.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub cancel_reject_every: u64,
    /// Answer every N-th request with a BusinessMessageReject (35=j, 45, 379, 380).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub business_reject_every: u64,
    /// Answer every N-th request with a session Reject (35=3, 45 RefSeqNum, 373).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub session_reject_every: u64,
    /// Answer TestRequests this long after reading them (a known test_request_rtt).
    #[arg(long, default_value = "0", value_parser = parse_ns)]
    pub test_request_delay: u64,
    /// Keep each session's last N sent messages: a ResendRequest is answered with them
    /// (43=Y, original MsgSeqNum, 122 OrigSendingTime; admin messages gap-filled). 0: one
    /// SequenceReset-GapFill covers every range asked for.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub replay_store: usize,
    /// When a session logs on again without reset, act as if our store had lost its last K
    /// messages: ask for them with a ResendRequest (their replays were seen on the wire).
    #[arg(long, default_value_t = 0, value_name = "K")]
    pub resend_last: u64,
    /// Session truth (JSON): per session, what the exchange wrote, counted as fixscope's
    /// session-layer counters, reject reasons, and each TestRequest's read/answer time.
    #[arg(long, value_name = "FILE")]
    pub session_truth: Option<PathBuf>,
    /// Per-request truth (CSV): epoch,clordid,client_comp_id,msg_type,symbol,account,
    /// venue,request_ns,answer,answer_ns,fill_ns (answer: which response answered it).
    #[arg(long, value_name = "FILE")]
    pub order_truth: Option<PathBuf>,
}

#[derive(clap::Args, Clone, Debug)]
pub struct ClientArgs {
    /// Exchange to connect to.
    #[arg(long, default_value = "127.0.0.1:9878")]
    pub connect: SocketAddr,
    /// Protocol of the sessions: fix, or ouch42 / ouch50 (OUCH over SoupBinTCP, usernames
    /// SIM001..) or ilink3 (CME iLink 3, a UUID per session, firm SIMFM). A binary
    /// client takes --connect, --sessions, --rate, --window 1, --count, --duration,
    /// --no-fill, --drain-timeout, --truth and --spin (window 1: each order waits for its
    /// ack and fill), and refuses the FIX-only flags by name.
    #[arg(long, default_value = "fix", value_name = "fix|ouch42|ouch50|ilink3")]
    pub protocol: SimProtocol,
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
    /// Symbols (55) of the orders, weighted: AAPL:5,MSFT:3,IBM:2 (default FXSC).
    #[arg(long, value_parser = parse_weighted)]
    pub symbols: Option<Weighted>,
    /// Accounts (1) of the orders, weighted like --symbols (default: none).
    #[arg(long, value_parser = parse_weighted)]
    pub accounts: Option<Weighted>,
    /// ExDestinations (100) of the orders, weighted like --symbols (default: none).
    #[arg(long, value_parser = parse_weighted)]
    pub venues: Option<Weighted>,
    /// Send a TestRequest on each session this often.
    #[arg(long, value_parser = parse_ns, value_name = "DURATION")]
    pub test_request_every: Option<u64>,
    /// TestReqID (112) of every TestRequest (QuickFIX sends TEST for all); default a
    /// unique TR<n> each.
    #[arg(long, value_name = "ID")]
    pub test_request_id: Option<String>,
    /// Follow every N-th order of a session with a PossResend of it (97=Y, a new
    /// MsgSeqNum, the same ClOrdID) while it is outstanding.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub poss_resend_every: u64,
    /// After every N orders of a session: wait until its orders are answered, drop the TCP
    /// connection (no Logout) and log on again (same CompIDs, numbering continues).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub reconnect_every: u64,
    /// How long a dropped session stays down.
    #[arg(long, default_value = "30ms", value_parser = parse_ns)]
    pub reconnect_pause: u64,
    /// Orders due while a session is down are queued (MsgSeqNums taken, not written) up to
    /// this many per outage, and first go out as PossDup replays when the exchange asks
    /// for them; the rest are skipped.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub queue_while_down: u64,
    /// Every K-th reconnect is a hard reset instead: odd ones a Logon with 141=Y on the new
    /// connection, even ones a SequenceReset-Reset (123=N) without reconnecting. Either
    /// starts a new epoch and the ClOrdIDs start over (reused across epochs).
    #[arg(long, default_value_t = 0, value_name = "K")]
    pub hard_reset_every: u64,
    /// On a reconnect, act as if our store had lost the exchange's last K messages: ask
    /// for them again (their replays were seen on the wire).
    #[arg(long, default_value_t = 0, value_name = "K")]
    pub resend_last: u64,
    /// Sent messages kept per session for resends (default: 65536 with
    /// --reconnect-every, else 0: a ResendRequest gets one GapFill).
    #[arg(long, value_name = "N")]
    pub replay_store: Option<usize>,
    /// Session truth (JSON): per session, what the client wrote, counted as fixscope's
    /// session-layer counters.
    #[arg(long, value_name = "FILE")]
    pub session_truth: Option<PathBuf>,
}

/// Values with weights, e.g. `AAPL:5,MSFT:3,IBM` (weight 1 when omitted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Weighted {
    pub values: Vec<(String, u64)>,
}

impl Weighted {
    /// The value for a uniform draw `r` in `[0, total)`.
    pub fn pick(&self, r: u64) -> &str {
        &self.values[self.index(r)].0
    }

    /// The index of the value for a uniform draw `r` in `[0, total)`.
    pub fn index(&self, r: u64) -> usize {
        let mut acc = 0;
        for (i, (_, w)) in self.values.iter().enumerate() {
            acc += w;
            if r < acc {
                return i;
            }
        }
        self.values.len() - 1
    }

    pub fn total(&self) -> u64 {
        self.values.iter().map(|(_, w)| w).sum()
    }
}

impl FromStr for Weighted {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut values = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (v, w) = match part.rsplit_once(':') {
                Some((v, w)) => (
                    v,
                    w.parse::<u64>()
                        .map_err(|_| format!("bad weight in {part:?}"))?,
                ),
                None => (part, 1),
            };
            if v.is_empty() || v.bytes().any(|b| b == 0x01 || b == b'=' || b == b',') {
                return Err(format!("bad value {v:?} (no SOH, '=' or ',')"));
            }
            if w == 0 {
                return Err(format!("zero weight in {part:?}"));
            }
            values.push((v.to_string(), w));
        }
        if values.is_empty() {
            return Err("want VALUE[:WEIGHT][,...]".into());
        }
        Ok(Weighted { values })
    }
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
