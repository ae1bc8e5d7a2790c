//! fixscope's FIX exchange simulator (acceptor) and load client (initiator).
//!
//! Both sides are single-threaded epoll loops over nonblocking sockets with an
//! allocation-free hot path; the exchange writes a ground-truth file of when it saw each
//! request and answered it, which fixscope's measurements are checked against.
//!
//! Run them in-process with [`run_exchange`] and [`run_client`], or from the `fixscope sim`
//! subcommands. Delays are applied from a timer queue on CLOCK_MONOTONIC: the loops sleep in
//! epoll (woken by a timerfd) until `--spin` (default 50us) before the next due event, then
//! spin, so an idle exchange does not burn a core but delays stay precise.

pub mod args;
pub mod client;
pub mod clock;
pub mod delay;
pub mod exchange;
mod inbuf;
mod outbuf;
pub mod rng;
pub mod session;
mod shutdown;
mod sys;
pub mod truth;

pub use args::{ClientArgs, ExchangeArgs, Mix};
pub use client::{run_client, ClientReport, StageStats};
pub use clock::monotonic_ns;
pub use delay::DelaySpec;
pub use exchange::{run_exchange, ExchangeSummary};
pub use shutdown::Shutdown;
