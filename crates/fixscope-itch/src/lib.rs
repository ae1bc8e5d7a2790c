//! Nasdaq TotalView-ITCH 5.0 over MoldUDP64: pure logic, no I/O — the caller hands it UDP
//! payloads with their capture times.
//!
//! - `moldudp64` reads a datagram: a downstream packet (header and numbered message
//!   blocks) or a retransmission request.
//! - `itch50` reads a message block into an ITCH 5.0 message, its size checked.
//! - `feed` keeps one feed's health (`FeedTracker`): new, duplicate and recovered
//!   packets, gaps, session changes, heartbeats, microbursts.
//! - `arbitration` pairs the copies of a packet on a redundant A/B pair (`AbArbiter`):
//!   which feed was first and by how much, what each feed alone delivered.
//! - `locate` maps a session's Stock Locate codes to symbols.
//! - `timestamp` turns ITCH's nanoseconds since New York midnight into UTC when the
//!   offset is unambiguous.
//! - `encode` builds packets and messages, for the tests.
//!
//! docs/protocols.md ("Nasdaq TotalView-ITCH 5.0 over MoldUDP64") has the rules.

pub mod arbitration;
pub mod encode;
pub mod feed;
pub mod itch50;
pub mod locate;
pub mod moldudp64;
pub mod timestamp;

pub use arbitration::{AbArbiter, AbEvent, ArbiterConfig, Feed};
pub use feed::{FeedConfig, FeedTracker, FreshMessage, Gap, Outcome};
pub use locate::LocateMap;

pub use fixscope_model::counters::ItchCounters;
