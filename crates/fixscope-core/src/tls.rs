//! TLS between TCP reassembly and FIX framing (`--tls-keylog`, #49): each connection's
//! reassembled bytes go through its [`TlsConnection`] when a key log is given, and the
//! plaintext — timed by the segment that completed its record — into the FIX framer. The
//! decryption itself is the `fixscope-tls` crate; this module is its words in the core's
//! vocabulary. Without a key log no connection has one: the plaintext path is unchanged.

pub use fixscope_tls::{KeyLog, KeyLogStats, Plain, Side, TlsConnection, Undecryptable};

use crate::segment::Direction;

/// The TLS client is the FIX initiator: requests are what it sends.
#[inline]
pub fn side_of(direction: Direction) -> Side {
    match direction {
        Direction::Request => Side::Client,
        Direction::Response => Side::Server,
    }
}

#[inline]
pub fn direction_of(side: Side) -> Direction {
    match side {
        Side::Client => Direction::Request,
        Side::Server => Direction::Response,
    }
}
