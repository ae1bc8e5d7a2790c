//! Both directions of one TCP connection: from the first bytes (TLS or plain FIX?) through
//! the hellos (which secrets, which suite) to application data, which comes out as
//! plaintext chunks each timed by the segment that completed its record.

use crate::cipher::RecordKey;
use crate::counters::TlsCounters;
use crate::direction::{Decrypted, DirectionState};
use crate::handshake::{self, ServerHello};
use crate::keylog::Secrets;
use crate::record::{ALERT, APPLICATION_DATA, CHANGE_CIPHER_SPEC, HANDSHAKE};
use crate::schedule;
use crate::store::{HoldPermit, KeySource};
use crate::suite::{self, Suite, Version};
use crate::uprobe::{CallCheck, CallJoin};

mod calls;

/// Which end sent the bytes: the TLS client (the FIX initiator) or the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Client,
    Server,
}

pub use crate::plain::Plain;

/// Why a TLS connection's data is not decrypted (each counted once per connection).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Undecryptable {
    /// The key log has no (or not every needed) secret for its client random.
    NoKey,
    /// The capture does not hold its hellos (it started mid-session, or a hole took them).
    NoHandshake,
    /// A version or cipher suite we do not decrypt, or 0-RTT data.
    Unsupported,
    /// `--tls-uprobes`: records came, but none of the application's OpenSSL calls did.
    NoCalls,
    /// `--tls-uprobes`: records came, no call did, and the process reading or writing
    /// the connection's socket makes its OpenSSL calls on memory BIOs (an event-loop
    /// engine): nothing ties them to a connection (`--tls-keylog` measures it).
    MemoryBio,
}

impl Undecryptable {
    pub fn name(self) -> &'static str {
        match self {
            Undecryptable::NoKey => "no_key",
            Undecryptable::NoHandshake => "no_handshake",
            Undecryptable::Unsupported => "unsupported",
            Undecryptable::NoCalls => "no_ssl_calls",
            Undecryptable::MemoryBio => "memory_bio",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// No byte seen yet that tells TLS from plain FIX.
    Detecting,
    /// Plain FIX: bytes pass through.
    Plain,
    Tls,
    /// The ServerHello came, its key is not in the key log yet (live: the engine writes
    /// it during the handshake): both directions' bytes are held, with their times, until
    /// it comes or the bound passes ([`KEY_WAIT_NS`], [`MAX_HELD_AWAITING_KEY`]).
    AwaitingKey,
    /// No key, but the application's OpenSSL calls hand over the plaintext
    /// (`--tls-uprobes`, [`crate::uprobe`]): records are framed, not decrypted.
    Uprobe,
    /// TLS we cannot decrypt: bytes are dropped.
    Dead(Undecryptable),
}

/// Client-side bytes held while waiting for the ServerHello at most (then the connection
/// is taken as not holding its handshake).
const MAX_HELD_BEFORE_SERVER_HELLO: usize = 1 << 20;

/// A connection is held for its key at most this long after its ServerHello, by the
/// capture's clock (engines log the key during the handshake: it normally comes within
/// milliseconds); then it is `no_key`.
pub const KEY_WAIT_NS: u64 = 5_000_000_000;

/// Bytes of both directions held for a key at most (then the connection is `no_key`).
pub const MAX_HELD_AWAITING_KEY: usize = 256 << 10;

/// A connection waiting for its key: its ServerHello and since when.
#[derive(Debug)]
struct Awaiting {
    hello: ServerHello,
    since_ns: u64,
    /// Its place among the connections held ([`crate::store::MAX_HELD_CONNECTIONS`]).
    _permit: HoldPermit,
}

#[derive(Debug)]
pub struct TlsConnection {
    mode: Mode,
    client: DirectionState,
    server: DirectionState,
    client_random: Option<[u8; 32]>,
    early_data: bool,
    version: Option<Version>,
    suite: Option<Suite>,
    awaiting: Option<Awaiting>,
    /// `--tls-uprobes`: each direction's records framed with their sequence numbers
    /// (client, server), from the first byte until a key is found.
    calls: Option<Box<[CallJoin; 2]>>,
    /// `--tls-uprobes` with its key found: what the calls place is compared with the
    /// decryption (client, server).
    checks: Option<Box<[CallCheck; 2]>>,
    /// `--tls-uprobes`: the kernel saw this connection's socket used by a process whose
    /// OpenSSL calls are on memory BIOs ([`Undecryptable::MemoryBio`]).
    memory_bio: bool,
}

impl Default for TlsConnection {
    fn default() -> Self {
        Self::new()
    }
}

impl TlsConnection {
    pub fn new() -> Self {
        TlsConnection {
            mode: Mode::Detecting,
            client: DirectionState::default(),
            server: DirectionState::default(),
            client_random: None,
            early_data: false,
            version: None,
            suite: None,
            awaiting: None,
            calls: None,
            checks: None,
            memory_bio: false,
        }
    }

    /// True once the connection was seen to carry TLS.
    pub fn is_tls(&self) -> bool {
        matches!(
            self.mode,
            Mode::Tls | Mode::AwaitingKey | Mode::Uprobe | Mode::Dead(_)
        )
    }

    /// Why this connection is not decrypted, if it is not.
    pub fn undecryptable(&self) -> Option<Undecryptable> {
        match self.mode {
            Mode::Dead(why) => Some(why),
            _ => None,
        }
    }

    /// True while the connection is held for its key.
    pub fn is_awaiting_key(&self) -> bool {
        self.mode == Mode::AwaitingKey
    }

    /// True when the connection's end must be told ([`TlsConnection::settle`]): it is held
    /// for its key, followed by calls that may be held for their records, or decrypted with
    /// its calls checked against the decryption (a check that compared nothing is said).
    pub fn needs_settling(&self) -> bool {
        matches!(self.mode, Mode::AwaitingKey | Mode::Uprobe) || self.checks.is_some()
    }

    /// When the wait for its key ends, while it is held: its ServerHello's time plus
    /// [`KEY_WAIT_NS`] (the caller's clock calls [`TlsConnection::tick`] once past it).
    pub fn key_wait_deadline_ns(&self) -> Option<u64> {
        self.awaiting
            .as_ref()
            .map(|a| a.since_ns.saturating_add(KEY_WAIT_NS))
    }

    /// The suite negotiated, once the ServerHello was read.
    pub fn suite(&self) -> Option<&Suite> {
        self.suite.as_ref()
    }

    /// In-order stream bytes of `side` that arrived at `ts_ns`; plaintext goes to `out`
    /// (for either side: bytes of the client held until the ServerHello came go out then).
    pub fn push<K, F>(
        &mut self,
        side: Side,
        bytes: &[u8],
        ts_ns: u64,
        keys: &K,
        counters: &mut TlsCounters,
        out: &mut F,
    ) where
        K: KeySource + ?Sized,
        F: FnMut(Side, Plain<'_>),
    {
        self.push_at(side, bytes, 0, ts_ns, keys, counters, out)
    }

    /// [`TlsConnection::push`] of bytes whose first has TCP sequence number `seq` (which
    /// `--tls-uprobes` places the application's calls by).
    #[allow(clippy::too_many_arguments)]
    pub fn push_at<K, F>(
        &mut self,
        side: Side,
        bytes: &[u8],
        seq: u32,
        ts_ns: u64,
        keys: &K,
        counters: &mut TlsCounters,
        out: &mut F,
    ) where
        K: KeySource + ?Sized,
        F: FnMut(Side, Plain<'_>),
    {
        match self.mode {
            Mode::Plain => return out(side, Plain::Data { bytes, ts_ns }),
            Mode::Dead(_) => return,
            Mode::Uprobe => return self.wire(side, bytes, seq, ts_ns, counters, out),
            Mode::AwaitingKey => {
                self.wire(side, bytes, seq, ts_ns, counters, out);
                self.direction(side).reader.push(bytes, ts_ns);
                return self.await_key(ts_ns, keys, counters, out);
            }
            Mode::Tls => {}
            Mode::Detecting => {
                if bytes.is_empty() {
                    return;
                }
                if !starts_like_a_record(bytes) {
                    // Plain FIX (or the middle of something): once a message start shows,
                    // it is plain for good; until then bytes pass through to the framer,
                    // which hunts for `8=FIX` itself.
                    if bytes.windows(5).any(|w| w == b"8=FIX") {
                        self.mode = Mode::Plain;
                    }
                    return out(side, Plain::Data { bytes, ts_ns });
                }
                counters.tls_connections += 1;
                self.mode = Mode::Tls;
                if bytes[0] != HANDSHAKE {
                    return self.give_up(Undecryptable::NoHandshake, counters);
                }
                if keys.by_uprobes() {
                    self.calls = Some(Box::default());
                }
            }
        }
        // With calls checked against it, what decryption gives is noted first.
        let mut checks = self.checks.take();
        let mut out_noted = |s: Side, p: Plain<'_>| {
            note_decrypted(&mut checks, s, &p);
            out(s, p)
        };
        self.direction(side).reader.push(bytes, ts_ns);
        self.drain(side, keys, counters, &mut out_noted);
        if side == Side::Server
            && self.mode == Mode::Tls
            && self.version.is_some()
            && !self.client.reader.pending().is_empty()
        {
            self.drain(Side::Client, keys, counters, &mut out_noted);
        }
        // A key found just now starts the checks.
        self.checks = checks.or_else(|| self.checks.take());
        if self.calls.is_some() {
            // Framed from the first byte, in case no key comes (or to check the calls).
            self.wire(side, bytes, seq, ts_ns, counters, out);
        }
    }

    /// A capture hole of `bytes` bytes in `side`'s stream (the caller resyncs its own
    /// framing).
    pub fn hole(&mut self, side: Side, bytes: u64, counters: &mut TlsCounters) {
        if let Some(calls) = self.calls.as_mut() {
            calls[side as usize].wire_hole();
        }
        match self.mode {
            Mode::Tls if self.version.is_none() => {
                self.give_up(Undecryptable::NoHandshake, counters)
            }
            // Held: the direction resyncs after it once the key came.
            Mode::Tls | Mode::AwaitingKey => self.direction(side).hole(bytes),
            _ => {}
        }
    }

    /// The clock reached `now_ns` with no bytes of this connection (live: its peers went
    /// quiet): one held for its key gets a look — decrypted at its records' own times if
    /// the key is there — and is `no_key` once its wait is over.
    pub fn tick<K, F>(&mut self, now_ns: u64, keys: &K, counters: &mut TlsCounters, out: &mut F)
    where
        K: KeySource + ?Sized,
        F: FnMut(Side, Plain<'_>),
    {
        if self.mode == Mode::AwaitingKey {
            self.await_key(now_ns, keys, counters, out);
        }
    }

    /// The connection ends (closed, forgotten, the run's end): one held for its key gets
    /// a last look, then is `no_key`; one followed by calls, none of which came for a
    /// direction, is `no_ssl_calls`.
    pub fn settle<K, F>(&mut self, keys: &K, counters: &mut TlsCounters, out: &mut F)
    where
        K: KeySource + ?Sized,
        F: FnMut(Side, Plain<'_>),
    {
        if self.mode == Mode::AwaitingKey {
            self.await_key(u64::MAX, keys, counters, out);
        }
        // Decrypted and to be checked against its calls, but none was compared: said once.
        if let Some(checks) = &self.checks {
            if checks.iter().any(|c| c.decrypted_any()) && checks.iter().all(|c| c.compared() == 0)
            {
                counters.tls_uprobe_unchecked += 1;
                self.checks = None;
            }
        }
        if let (Mode::Uprobe, Some(calls)) = (self.mode, self.calls.as_mut()) {
            if calls.iter().any(|c| c.is_silent()) {
                let why = if self.memory_bio {
                    Undecryptable::MemoryBio
                } else {
                    Undecryptable::NoCalls
                };
                return self.give_up(why, counters);
            }
            for side in [Side::Client, Side::Server] {
                calls[side as usize].settle(counters, &mut |p| out(side, p));
            }
        }
    }

    /// Held for the key at `now_ns`: decrypts everything held once it is there (records of
    /// both directions in the order they completed, at their own times), gives up once the
    /// bound passed.
    fn await_key<K, F>(&mut self, now_ns: u64, keys: &K, counters: &mut TlsCounters, out: &mut F)
    where
        K: KeySource + ?Sized,
        F: FnMut(Side, Plain<'_>),
    {
        let Some(Awaiting {
            hello, since_ns, ..
        }) = self.awaiting
        else {
            return;
        };
        let keyed = match (self.client_random, hello.version) {
            (Some(random), Some(version)) => match keys.secrets(&random) {
                Some(secrets) => self.key_with(&hello, version, random, &secrets),
                None => false,
            },
            _ => false,
        };
        if !keyed {
            let held = self.client.reader.pending().len() + self.server.reader.pending().len();
            if now_ns.saturating_sub(since_ns) > KEY_WAIT_NS || held > MAX_HELD_AWAITING_KEY {
                self.awaiting = None;
                // With --tls-uprobes, the calls held meanwhile give the plaintext instead.
                match hello.version {
                    Some(version) if self.go_by_calls(&hello, version) => {
                        self.resume_calls(counters, out)
                    }
                    _ => self.give_up(Undecryptable::NoKey, counters),
                }
            }
            return;
        }
        self.awaiting = None;
        self.mode = Mode::Tls;
        self.check_calls();
        let mut checks = self.checks.take();
        let mut out = |s: Side, p: Plain<'_>| {
            note_decrypted(&mut checks, s, &p);
            out(s, p)
        };
        let out = &mut out;
        // The rest of the ServerHello's record (TLS 1.2's Certificate, …) first.
        self.handshake_bytes(Side::Server, &[], false, since_ns, keys, counters);
        // Records in the order they completed, as they would have been read unheld: the
        // correlator must see each request before its response.
        while self.mode == Mode::Tls {
            let next = |d: &DirectionState| d.lost.is_none().then(|| d.reader.peek()).flatten();
            let side = match (next(&self.client), next(&self.server)) {
                (Some(c), Some(s)) if s.ts_ns < c.ts_ns => Side::Server,
                (Some(_), _) => Side::Client,
                (None, Some(_)) => Side::Server,
                (None, None) => break,
            };
            if !self.drain_one(side, keys, counters, out) {
                break;
            }
        }
        self.drain(Side::Client, keys, counters, out);
        self.drain(Side::Server, keys, counters, out);
        self.checks = checks;
        // The calls held while the key was awaited, checked against what was decrypted.
        self.resume_calls(counters, &mut |_, _| {});
    }

    fn direction(&mut self, side: Side) -> &mut DirectionState {
        match side {
            Side::Client => &mut self.client,
            Side::Server => &mut self.server,
        }
    }

    fn give_up(&mut self, why: Undecryptable, counters: &mut TlsCounters) {
        if self.undecryptable().is_some() {
            return;
        }
        self.mode = Mode::Dead(why);
        match why {
            Undecryptable::NoKey => counters.tls_no_key += 1,
            Undecryptable::NoHandshake => counters.tls_no_handshake += 1,
            Undecryptable::Unsupported => counters.tls_unsupported += 1,
            Undecryptable::NoCalls | Undecryptable::MemoryBio => counters.tls_uprobe_silent += 1,
        }
        self.client = DirectionState::default();
        self.server = DirectionState::default();
        // Calls still held for their records will never be placed.
        for join in self.calls.iter().flat_map(|c| c.iter()) {
            counters.tls_uprobe_unmapped += join.held_calls() as u64;
        }
        self.calls = None;
        self.checks = None;
    }

    /// Takes every complete record of `side`.
    fn drain<K, F>(&mut self, side: Side, keys: &K, counters: &mut TlsCounters, out: &mut F)
    where
        K: KeySource + ?Sized,
        F: FnMut(Side, Plain<'_>),
    {
        while self.mode == Mode::Tls && self.drain_one(side, keys, counters, out) {}
    }

    /// Takes the next complete record of `side`; false when there is none to take.
    fn drain_one<K, F>(
        &mut self,
        side: Side,
        keys: &K,
        counters: &mut TlsCounters,
        out: &mut F,
    ) -> bool
    where
        K: KeySource + ?Sized,
        F: FnMut(Side, Plain<'_>),
    {
        {
            let version = self.version;
            let d = self.direction(side);
            let next_type = match d.lost {
                None => d.reader.peek().map(|at| at.header[0]),
                Some(_) => None,
            };
            if version.is_none() && next_type == Some(APPLICATION_DATA) {
                // Protected data before the ServerHello: the client's may be waiting for
                // it (records of both directions are read in capture order); the server's
                // means the capture missed its hello.
                if side == Side::Server || d.reader.pending().len() > MAX_HELD_BEFORE_SERVER_HELLO {
                    self.give_up(Undecryptable::NoHandshake, counters);
                }
                return false;
            }
            let protected = match (version, d.lost) {
                (None, _) => false,
                (Some(_), Some(_)) => d.key.is_some(),
                (Some(Version::Tls13), None) => next_type == Some(APPLICATION_DATA),
                (Some(Version::Tls12), None) => d.key.is_some(),
            };
            match d.next_record(protected, &mut counters.tls_resyncs) {
                Decrypted::Wait => return false,
                Decrypted::Garbage => {
                    d.hole(0);
                    out(side, Plain::Gap);
                    if version.is_none() {
                        self.give_up(Undecryptable::NoHandshake, counters);
                    }
                }
                Decrypted::Failed(_) => {
                    counters.tls_auth_failed += 1;
                    d.handshake.clear();
                    out(side, Plain::Gap);
                }
                Decrypted::Clear(at) => match at.header[0] {
                    HANDSHAKE => {
                        let payload =
                            d.reader.buffered_mut()[at.payload_start..at.payload_end].to_vec();
                        self.handshake_bytes(side, &payload, false, at.ts_ns, keys, counters);
                    }
                    CHANGE_CIPHER_SPEC if version == Some(Version::Tls12) => {
                        // TLS 1.2: this direction's records are protected from here on.
                        if let Some(next) = d.next_key.take() {
                            d.key = Some(next);
                            d.seq = 0;
                            d.handshake.clear();
                        }
                    }
                    _ => {} // alerts in the clear; TLS 1.3's compatibility CCS
                },
                Decrypted::Opened(at, opened) => {
                    counters.tls_records_decrypted += 1;
                    match opened.content_type {
                        APPLICATION_DATA => {
                            let ts_ns = at.ts_ns;
                            let bytes = d.plaintext(&at, &opened);
                            out(side, Plain::Data { bytes, ts_ns });
                        }
                        HANDSHAKE => {
                            let payload = d.plaintext(&at, &opened).to_vec();
                            self.handshake_bytes(side, &payload, true, at.ts_ns, keys, counters);
                        }
                        ALERT => {}
                        _ => {}
                    }
                }
            }
        }
        true
    }

    /// Handshake bytes of `side` (in the clear, or `protected`): the hellos choose the
    /// keys; TLS 1.3's Finished switches to the application key, KeyUpdate to the next.
    fn handshake_bytes<K: KeySource + ?Sized>(
        &mut self,
        side: Side,
        bytes: &[u8],
        protected: bool,
        ts_ns: u64,
        keys: &K,
        counters: &mut TlsCounters,
    ) {
        self.direction(side).handshake.push(bytes);
        while let Some((kind, body)) = self.direction(side).handshake.next_message() {
            match (side, kind, protected) {
                (Side::Client, handshake::CLIENT_HELLO, false) => {
                    if let Some(hello) = handshake::client_hello(&body) {
                        self.client_random = Some(hello.random);
                        self.early_data |= hello.early_data;
                    }
                }
                (Side::Server, handshake::SERVER_HELLO, false) => {
                    if let Some(hello) = handshake::server_hello(&body) {
                        self.server_hello(&hello, ts_ns, keys, counters);
                    }
                }
                (_, handshake::FINISHED, true) if self.version == Some(Version::Tls13) => {
                    let d = self.direction(side);
                    if let Some(next) = d.next_key.take() {
                        d.key = Some(next);
                        d.seq = 0;
                        d.handshake.clear();
                        return;
                    }
                }
                (_, handshake::KEY_UPDATE, true) if self.version == Some(Version::Tls13) => {
                    let Some(suite) = self.suite else { return };
                    let d = self.direction(side);
                    if d.next_key.is_none() {
                        if let Some(secret) = d.traffic_secret.as_deref() {
                            let next = schedule::next_traffic_secret(suite.hash, secret);
                            d.key = RecordKey::tls13(&suite, &next);
                            d.seq = 0;
                            d.traffic_secret = Some(next);
                        }
                    }
                }
                _ => {}
            }
            if self.mode != Mode::Tls {
                return;
            }
        }
    }

    /// The ServerHello chose the version and suite: find the secrets, derive the keys.
    fn server_hello<K: KeySource + ?Sized>(
        &mut self,
        hello: &ServerHello,
        ts_ns: u64,
        keys: &K,
        counters: &mut TlsCounters,
    ) {
        if hello.hello_retry || self.version.is_some() {
            return; // a HelloRetryRequest: the real ServerHello follows
        }
        let Some(version) = hello.version else {
            return self.give_up(Undecryptable::Unsupported, counters);
        };
        if suite::find(hello.cipher_suite, version).is_none() {
            return self.give_up(Undecryptable::Unsupported, counters);
        }
        let Some(client_random) = self.client_random else {
            return self.give_up(Undecryptable::NoHandshake, counters);
        };
        if version == Version::Tls13 && self.early_data {
            // 0-RTT records use the early traffic secret and may be refused by the server
            // unseen: not decrypted (docs/tls.md).
            return self.give_up(Undecryptable::Unsupported, counters);
        }
        let keyed = match keys.secrets(&client_random) {
            Some(secrets) => self.key_with(hello, version, client_random, &secrets),
            None => false,
        };
        if keyed {
            // With --tls-uprobes, the calls are still placed, and checked against this.
            self.check_calls();
            return;
        }
        match keys.hold() {
            // Live: the line may not be written yet; held, bounded, until it is (and the
            // calls meanwhile, with --tls-uprobes).
            Some(permit) => {
                self.mode = Mode::AwaitingKey;
                self.awaiting = Some(Awaiting {
                    hello: *hello,
                    since_ns: ts_ns,
                    _permit: permit,
                });
                self.pause_calls();
            }
            // No key: with --tls-uprobes the application's calls give the plaintext.
            None if self.go_by_calls(hello, version) => {}
            None => self.give_up(Undecryptable::NoKey, counters),
        }
    }

    /// Derives both directions' keys from `secrets`; false if a secret is missing (the
    /// version and suite are set only when true).
    fn key_with(
        &mut self,
        hello: &ServerHello,
        version: Version,
        client_random: [u8; 32],
        secrets: &Secrets,
    ) -> bool {
        let Some(suite) = suite::find(hello.cipher_suite, version) else {
            return false;
        };
        let keyed = match version {
            Version::Tls13 => {
                let key = |s: &Option<Vec<u8>>| RecordKey::tls13(&suite, s.as_deref()?);
                match (
                    key(&secrets.client_handshake),
                    key(&secrets.server_handshake),
                    key(&secrets.client_traffic),
                    key(&secrets.server_traffic),
                ) {
                    (Some(ch), Some(sh), Some(ct), Some(st)) => {
                        self.client.key = Some(ch);
                        self.client.next_key = Some(ct);
                        self.client.traffic_secret = secrets.client_traffic.clone();
                        self.server.key = Some(sh);
                        self.server.next_key = Some(st);
                        self.server.traffic_secret = secrets.server_traffic.clone();
                        self.client.tls13 = true;
                        self.server.tls13 = true;
                        true
                    }
                    _ => false,
                }
            }
            Version::Tls12 => match secrets.master.as_deref() {
                Some(master) if master.len() == 48 => {
                    let k = schedule::tls12_keys(&suite, master, &client_random, &hello.random);
                    self.client.next_key =
                        RecordKey::tls12(suite.aead, &k.client_key, &k.client_iv);
                    self.server.next_key =
                        RecordKey::tls12(suite.aead, &k.server_key, &k.server_iv);
                    self.client.next_key.is_some() && self.server.next_key.is_some()
                }
                _ => false,
            },
        };
        if keyed {
            self.version = Some(version);
            self.suite = Some(suite);
        }
        keyed
    }
}

/// Decrypted plaintext noted for the calls' check (`--tls-uprobes` with a key).
fn note_decrypted(checks: &mut Option<Box<[CallCheck; 2]>>, side: Side, plain: &Plain<'_>) {
    if let (Some(c), Plain::Data { bytes, ts_ns }) = (checks.as_mut(), plain) {
        c[side as usize].decrypted(bytes, *ts_ns);
    }
}

/// The first bytes of a connection look like a TLS record header (type 20–23, version
/// 3.x, as far as a short first segment shows). Plain FIX starts with `8=FIX`, never with
/// these bytes.
fn starts_like_a_record(bytes: &[u8]) -> bool {
    (CHANGE_CIPHER_SPEC..=APPLICATION_DATA).contains(&bytes[0])
        && bytes.get(1).is_none_or(|&major| major == 3)
        && bytes.get(2).is_none_or(|&minor| minor <= 4)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keylog::KeyLog;

    fn record(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut r = vec![kind, 3, 3];
        r.extend_from_slice(&(body.len() as u16).to_be_bytes());
        r.extend_from_slice(body);
        r
    }

    /// A hello handshake record: version, random, empty session id, then `tail`.
    fn hello(kind: u8, random: [u8; 32], tail: &[u8]) -> Vec<u8> {
        let mut b = vec![3, 3];
        b.extend_from_slice(&random);
        b.push(0);
        b.extend_from_slice(tail);
        let mut m = vec![kind, 0, 0, b.len() as u8];
        m.extend_from_slice(&b);
        record(HANDSHAKE, &m)
    }

    /// Client and server hellos for `suite` (TLS 1.2), then protected data both ways.
    fn run(suite: u16, keys: &KeyLog) -> (TlsConnection, TlsCounters, usize) {
        let mut conn = TlsConnection::new();
        let mut counters = TlsCounters::default();
        let mut out = 0;
        let mut push = |conn: &mut TlsConnection, side, bytes: &[u8], counters: &mut _| {
            conn.push(side, bytes, 1, keys, counters, &mut |_, p| {
                if let Plain::Data { bytes, .. } = p {
                    out += bytes.len();
                }
            })
        };
        let [hi, lo] = suite.to_be_bytes();
        push(
            &mut conn,
            Side::Client,
            &hello(1, [1; 32], &[0, 2, hi, lo, 1, 0]),
            &mut counters,
        );
        push(
            &mut conn,
            Side::Server,
            &hello(2, [2; 32], &[hi, lo, 0]),
            &mut counters,
        );
        for side in [Side::Server, Side::Client] {
            push(
                &mut conn,
                side,
                &record(CHANGE_CIPHER_SPEC, &[1]),
                &mut counters,
            );
            push(
                &mut conn,
                side,
                &record(APPLICATION_DATA, &[0x33; 48]),
                &mut counters,
            );
        }
        (conn, counters, out)
    }

    fn keys_for_random_1() -> KeyLog {
        let mut keys = KeyLog::new();
        keys.insert(crate::keylog::Label::ClientRandom, [1; 32], vec![5; 48]);
        keys
    }

    #[test]
    fn a_cbc_suite_is_counted_not_decrypted() {
        // TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: a key is there, the suite is not decrypted.
        let (conn, counters, out) = run(0xc013, &keys_for_random_1());
        assert_eq!(conn.undecryptable(), Some(Undecryptable::Unsupported));
        assert_eq!((counters.tls_connections, counters.tls_unsupported), (1, 1));
        assert_eq!((counters.tls_auth_failed, out), (0, 0));
    }

    #[test]
    fn an_aead_suite_with_a_wrong_key_fails_each_record() {
        // TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 with a master secret that did not make the
        // records: each protected record is an auth failure, nothing comes out.
        let (conn, counters, out) = run(0xc02f, &keys_for_random_1());
        assert_eq!(conn.undecryptable(), None);
        assert_eq!((counters.tls_auth_failed, out), (2, 0));
    }

    #[test]
    fn no_key_line_is_no_key() {
        let (conn, counters, _) = run(0xc02f, &KeyLog::new());
        assert_eq!(conn.undecryptable(), Some(Undecryptable::NoKey));
        assert_eq!(counters.tls_no_key, 1);
    }

    #[test]
    fn plain_fix_passes_through() {
        let mut conn = TlsConnection::new();
        let mut counters = TlsCounters::default();
        let mut got = Vec::new();
        for part in [&b"8=FIX.4.4\x019=5\x01"[..], b"35=0\x0110=000\x01"] {
            conn.push(
                Side::Client,
                part,
                7,
                &KeyLog::new(),
                &mut counters,
                &mut |_, p| {
                    if let Plain::Data { bytes, ts_ns } = p {
                        got.extend_from_slice(bytes);
                        assert_eq!(ts_ns, 7);
                    }
                },
            );
        }
        assert_eq!(got, b"8=FIX.4.4\x019=5\x0135=0\x0110=000\x01");
        assert!(!conn.is_tls());
        assert_eq!(counters, TlsCounters::default());
    }
}
