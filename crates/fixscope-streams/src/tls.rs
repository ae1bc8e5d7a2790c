//! TLS between TCP reassembly and FIX framing (`--tls-keylog`, #49): each connection's
//! reassembled bytes go through its [`TlsConnection`] when a key log is given, and the
//! plaintext — timed by the segment that completed its record — into the FIX framer. The
//! decryption itself is the `fixscope-tls` crate; this module is its words in the core's
//! vocabulary. Without a key log no connection has one: the plaintext path is unchanged.

pub use fixscope_tls::connection::KEY_WAIT_NS;
pub use fixscope_tls::{
    CallKind, KeyLog, KeyLogStats, KeySource, KeyStore, Plain, Side, TlsCall, TlsConnection,
    Undecryptable,
};

use std::sync::Mutex;

use fixscope_model::segment::{ConnectionKey, Direction};

/// A session's TLS as the session table shows it (`--tls-keylog`): the version and the
/// cipher suite (its IANA name) of the connection it was bound on. Plaintext sessions
/// have none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TlsSession {
    /// `TLS1.2`, `TLS1.3`.
    pub version: &'static str,
    /// E.g. `TLS_AES_128_GCM_SHA256`.
    pub cipher_suite: &'static str,
}

impl TlsSession {
    /// As a log wrote it (`fixscope report`): a suite fixscope decrypts, else `None`.
    pub fn named(version: &str, cipher_suite: &str) -> Option<Self> {
        fixscope_tls::suite::SUITES
            .iter()
            .find(|s| s.name == cipher_suite && s.version.name() == version)
            .map(|s| TlsSession {
                version: s.version.name(),
                cipher_suite: s.name,
            })
    }

    /// The connection's, once its keys were derived (so, whenever it gives plaintext).
    #[inline]
    pub fn of(connection: &TlsConnection) -> Option<Self> {
        connection.suite().map(|s| TlsSession {
            version: s.version.name(),
            cipher_suite: s.name,
        })
    }
}

/// The TLS connections a run could not decrypt, and why (named at the end of the run: their
/// orders are missing from the figures). Shared by every pipeline of a run (shards, stages);
/// written only when a connection gives up, so never on the per-segment path.
#[derive(Debug, Default)]
pub struct UndecryptedConnections(Mutex<Vec<(ConnectionKey, Undecryptable)>>);

impl UndecryptedConnections {
    pub fn note(&self, key: ConnectionKey, why: Undecryptable) {
        if let Ok(mut v) = self.0.lock() {
            v.push((key, why));
        }
    }

    /// Every connection noted, sorted, each once (a plan may analyse a capture twice).
    pub fn sorted(&self) -> Vec<(ConnectionKey, Undecryptable)> {
        let mut v = self.0.lock().map(|v| v.clone()).unwrap_or_default();
        v.sort_by_key(|(k, why)| (k.to_string(), why.name()));
        v.dedup();
        v
    }
}

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
