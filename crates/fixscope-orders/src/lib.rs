//! fixscope's order layer: from framed messages to order events and what learns from them.
//! The correlator (`correlate`) pairs responses with the requests they answer; the session
//! layer (`session`, `microburst`) binds each connection's session and judges replays; the
//! consumers of order events (`consumer`, `consumers`, `recorder`, `slowest`, `group`) and
//! the joins that need more than one message (`breakdown`: the host's own split, `points`: two
//! capture points; a router's legs are fixscope-hops, above); `sink` is what a run's records and tracer
//! are handed. It reads FIX through fixscope-fix today; the seam's neutral order message
//! replaces that (docs/architecture.md, "Adding a protocol").

pub mod breakdown;
pub mod consumer;
pub mod consumers;
pub mod correlate;
pub mod group;
pub mod microburst;
pub mod points;
pub mod recorder;
pub mod session;
pub mod sink;
pub mod slowest;
pub mod ticks;
