//! fixscope's FIX exchange simulator (acceptor) and load client (initiator).
//!
//! Both sides are single-threaded epoll loops over nonblocking sockets with an
//! allocation-free hot path; the exchange writes a ground-truth file of when it saw each
//! request and answered it, which fixscope's measurements are checked against.
//!
//! Run them in-process with [`run_exchange`] and [`run_client`], or from the `fixscope sim`
//! subcommands.

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

/// How close (ns) to a due time the loops stop sleeping in epoll and spin instead: waking
/// from a sleep costs tens of microseconds of jitter, spinning costs a core.
pub const DEFAULT_SPIN_NS: u64 = 50_000;
