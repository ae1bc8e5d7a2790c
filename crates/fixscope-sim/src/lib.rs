//! fixscope's FIX exchange simulator (acceptor), load client (initiator) and order router.
//!
//! Both sides are single-threaded epoll loops over nonblocking sockets with an
//! allocation-free hot path; the exchange writes a ground-truth file of when it saw each
//! request and answered it, which fixscope's measurements are checked against.
//!
//! Run them in-process with [`run_exchange`] and [`run_client`], or from the `fixscope sim`
//! subcommands. Delays are applied from a timer queue on CLOCK_MONOTONIC: the loops sleep in
//! epoll (woken by a timerfd) until `--spin` (default 50us) before the next due event, then
//! spin, so an idle exchange does not burn a core but delays stay precise.
//!
//! With `--protocol ouch42|ouch50|ilink3` the exchange and the client speak Nasdaq OUCH
//! over SoupBinTCP or CME iLink 3 instead, blocking and a thread per connection, with the
//! same truth files; see [`binary`].
//!
//! [`run_router`] (`fixscope sim router`) sits between the client and the exchange: it
//! accepts client sessions, routes each parent order to the venue as child order(s) after
//! `--route-delay` (split by `--slice`, ids linked to the parent by `--id-map` same, 526,
//! hops or counter, or rejected itself at `--reject-rate`) and maps the venue's responses
//! back after `--back-delay`. Its truth has one row per child (CLOCK_REALTIME read/write
//! stamps of each hop) and `--pcap` writes its own capture of both sessions with the same
//! stamps, so a two-hop measurement can be checked exactly; see [`router`].

pub mod args;
pub mod args_router;
pub mod binary;
pub mod client;
pub mod delay;
pub mod exchange;
mod inbuf;
mod outbuf;
pub mod replay_store;
pub mod rng;
pub mod router;
pub mod sending_time;
pub mod session;
pub mod sim_protocol;
pub mod stall;
mod sys;
pub mod truth;
mod uint_field;
pub mod wire_truth;

pub use args::{ClientArgs, ExchangeArgs, Mix};
pub use args_router::{IdMap, RouterArgs};
pub use binary::{BinaryProtocol, SimProtocol};
pub use client::{ClientReport, StageStats};
pub use delay::DelaySpec;
pub use exchange::ExchangeSummary;
pub use router::{run_router, RouterSummary};
pub use stall::StallSpec;

// Re-exported because they are part of this crate's API: `run_exchange`/`run_client` take a
// `Shutdown`, and callers (tests, the `fixscope` binary's live loop) read the same clock the
// truth files are stamped with.
/// The stop flag `run_exchange`/`run_client` take (the core's, re-exported for callers).
pub use fixscope_core::shutdown::Shutdown;

/// `fixscope sim exchange`: FIX, or the binary protocol `--protocol` names.
pub fn run_exchange(
    args: &ExchangeArgs,
    shutdown: &Shutdown,
    on_ready: impl FnOnce(std::net::SocketAddr),
) -> anyhow::Result<ExchangeSummary> {
    match args.protocol {
        SimProtocol::Binary(p) => binary::run_binary_exchange(p, args, shutdown, on_ready),
        _ => exchange::run_exchange(args, shutdown, on_ready),
    }
}

/// `fixscope sim client`: FIX, or the binary protocol `--protocol` names.
pub fn run_client(args: &ClientArgs, shutdown: &Shutdown) -> anyhow::Result<ClientReport> {
    match args.protocol {
        SimProtocol::Binary(p) => binary::run_binary_client(p, args, shutdown),
        _ => client::run_client(args, shutdown),
    }
}
