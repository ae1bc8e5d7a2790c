//! `fixscope sim client`: a FIX initiator that sends orders open-loop (each order at a
//! pre-computed time, latency measured from that time too, so a slow exchange cannot hide
//! latency) or closed-loop (a window of outstanding orders per session).
//!
//! - `schedule`: from the flags to a [`schedule::Plan`] (send times, count, deadlines);
//! - `flow`: what to send now — walk the open-loop schedule or refill the closed-loop window;
//! - `orders`: building and encoding one request (ClOrdIDs, the mix, split writes);
//! - `conn`: one session's socket, buffers and ring of tracked requests;
//! - `responses`: responses matched to tracked requests, latencies, client truth records;
//! - `event_loop`: the epoll loop (logon, phases, reads, writes, logout);
//! - `report`: latency histograms and the printed report.

mod conn;
mod event_loop;
mod flow;
mod orders;
pub(crate) mod report;
mod responses;
mod schedule;

use fixscope_core::clock::monotonic_ns;
use fixscope_core::fix::encode::FixEncoder;
use fixscope_core::shutdown::Shutdown;

pub use report::{ClientReport, StageStats};

use crate::args::ClientArgs;
use crate::inbuf::FramingStats;
use crate::rng::Rng;
use crate::sending_time::UtcClock;
use crate::sys::{self, Epoll, TimerFd};
use crate::truth::{TruthWriter, CLIENT_HEADER};
use conn::Sess;
use event_loop::{Client, TIMER};
use report::Latencies;
use schedule::{Load, Plan};

pub(crate) const STAGE_FIRST: usize = 0;
pub(crate) const STAGE_ACK: usize = 1;
pub(crate) const STAGE_FILL: usize = 2;

#[derive(Default)]
struct Counters {
    sent: [u64; 3],
    acks: u64,
    fills: u64,
    filled_orders: u64,
    rejects: u64,
    cancel_rejects: u64,
    completed: u64,
    unmatched: u64,
    overrun: u64,
    max_send_lag_ns: u64,
    first_send_ns: u64,
    last_send_ns: u64,
}

/// Everything shared by the sessions of one client.
struct Ctx {
    enc: FixEncoder,
    clock: UtcClock,
    rng: Rng,
    lat: Latencies,
    c: Counters,
    truth: Option<TruthWriter>,
    pad: Vec<u8>,
    scratch: Vec<u8>,
    id: Vec<u8>,
    split: bool,
    no_fill: bool,
    mix: [u32; 3],
    /// Symbols, accounts and venues of the orders (seeded apart from the mix).
    fields: OrderFields,
    poss_resend_every: u64,
}

/// `--symbols`, `--accounts`, `--venues`: drawn per order from their own seeded stream, so
/// the mix and the delays stay as they were for a given --seed.
struct OrderFields {
    rng: Rng,
    symbols: Option<crate::args::Weighted>,
    accounts: Option<crate::args::Weighted>,
    venues: Option<crate::args::Weighted>,
}

/// Runs the load client to completion (count/duration reached and responses drained, or
/// `shutdown` triggered) and returns its report.
pub fn run_client(args: &ClientArgs, shutdown: &Shutdown) -> anyhow::Result<ClientReport> {
    let load = Load::from_args(args)?;
    let truth = match &args.truth {
        Some(p) => Some(TruthWriter::create(p, CLIENT_HEADER)?),
        None => None,
    };
    let mut ctx = Ctx {
        enc: FixEncoder::new(),
        clock: UtcClock::new(),
        rng: Rng::new(args.seed),
        lat: Latencies::new()?,
        c: Counters::default(),
        truth,
        pad: vec![b'x'; args.pad],
        scratch: Vec::with_capacity(1024),
        id: Vec::with_capacity(128),
        split: args.split_clordid,
        no_fill: args.no_fill,
        mix: [args.mix.d, args.mix.f, args.mix.g],
        fields: OrderFields {
            rng: Rng::new(args.seed ^ 0xf1e1_d5f1_e1d5_0001),
            symbols: args.symbols.clone(),
            accounts: args.accounts.clone(),
            venues: args.venues.clone(),
        },
        poss_resend_every: args.poss_resend_every,
    };
    let epoll = Epoll::new()?;
    let timerfd = TimerFd::new()?;
    epoll.add(timerfd.raw_fd(), TIMER, false)?;
    sys::tighten_timer_slack();

    let mut sessions = Vec::with_capacity(args.sessions);
    for i in 0..args.sessions {
        let mut s = Sess::connect(args, i, load.ring, &mut ctx)?;
        s.configure(args);
        epoll.add(s.raw_fd(), i as u64, true)?;
        sessions.push(s);
    }
    let mut client = Client {
        epoll,
        timerfd,
        sessions,
        ctx,
        framing: FramingStats::default(),
        spin_ns: args.spin,
        links: event_loop::LinkCfg::from_args(args),
    };
    client.logon_all(shutdown)?;

    let plan = Plan::new(&load, args, monotonic_ns());
    client.run(&plan, shutdown)?;
    if let Some(path) = &args.session_truth {
        let records: Vec<_> = client
            .sessions
            .iter()
            .map(|s| crate::wire_truth::SessionTruthRecord {
                client_comp_id: String::from_utf8_lossy(s.session.sender_comp_id()).into_owned(),
                server_comp_id: String::from_utf8_lossy(s.session.target_comp_id()).into_owned(),
                side: "client",
                truth: &s.session.wire,
            })
            .collect();
        crate::wire_truth::write_session_truth(path, &records)?;
    }
    client.report(args, load.window)
}
