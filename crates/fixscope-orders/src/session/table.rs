//! The per-session table: each FIX session (connection) as reports show it — its
//! connection, CompIDs, request and response counts and the session layer's health.
//!
//! The session layer fills it as it binds sessions; order events carry a reference to it so
//! a consumer that keeps an order (the slowest orders) can name its session. Per-session
//! latencies are a consumer of their own (`crate::consumers::sessions`).

use crate::session::health::{SessionHealth, SessionLayerStats};
use fixscope_model::order::{SessionNames, SessionRef};
use fixscope_model::segment::ConnectionKey;
use fixscope_streams::tls::TlsSession;

/// What the session layer fills as it judges a message: the per-session table and the
/// run's session-layer figures.
pub struct SessionBook<'a> {
    pub table: &'a mut SessionTable,
    pub layer: &'a mut SessionLayerStats,
}

/// Sessions broken down individually; later ones are summed into the overall figures only.
pub const MAX_TRACKED_SESSIONS: usize = 4096;

/// A session (connection) as shown in the per-session table.
#[derive(Clone, Debug)]
pub struct SessionStats {
    pub id: u64,
    pub connection: ConnectionKey,
    /// BeginString (8): with the CompIDs, the session's identity (empty: anonymous).
    pub begin_string: String,
    /// SenderCompID/TargetCompID of the requests (the client's view).
    pub sender_comp_id: String,
    pub target_comp_id: String,
    pub requests: u64,
    pub responses: u64,
    /// The session layer: counters, state, alarms, message rate.
    pub health: SessionHealth,
    /// `--tls-keylog`: the TLS version and cipher suite it was decrypted with (`None`:
    /// plain FIX).
    pub tls: Option<TlsSession>,
}

/// The sessions of a run, in the order they were first seen (bounded).
#[derive(Clone, Debug, Default)]
pub struct SessionTable {
    /// Session `id` lives at index `id - 1`: ids are handed out in order from 1, so the
    /// per-message lookup is an index, not a hash.
    sessions: Vec<SessionStats>,
    untracked: u64,
}

impl SessionTable {
    /// No sessions (statistics rebuilt from logs, tests).
    pub const EMPTY: SessionTable = SessionTable {
        sessions: Vec::new(),
        untracked: 0,
    };

    /// Registers session `id` (the next id in order) for the table (bounded).
    pub fn open(&mut self, id: u64, connection: ConnectionKey) {
        if self.sessions.len() >= MAX_TRACKED_SESSIONS || id != self.sessions.len() as u64 + 1 {
            self.untracked += 1;
            return;
        }
        self.sessions.push(SessionStats {
            id,
            connection,
            begin_string: String::new(),
            sender_comp_id: String::new(),
            target_comp_id: String::new(),
            requests: 0,
            responses: 0,
            health: SessionHealth::default(),
            tls: None,
        });
    }

    #[inline]
    pub fn get_mut(&mut self, id: u64) -> Option<&mut SessionStats> {
        self.sessions.get_mut((id as usize).wrapping_sub(1))
    }

    #[inline]
    pub fn get(&self, id: u64) -> Option<&SessionStats> {
        self.sessions.get((id as usize).wrapping_sub(1))
    }

    /// Whether session `id` has a row (it is among the first [`MAX_TRACKED_SESSIONS`]).
    #[inline]
    pub fn tracks(&self, id: u64) -> bool {
        (id as usize).wrapping_sub(1) < self.sessions.len()
    }

    /// Sessions in the order they were first seen.
    pub fn all(&self) -> &[SessionStats] {
        &self.sessions
    }

    pub fn all_mut(&mut self) -> &mut [SessionStats] {
        &mut self.sessions
    }

    /// Sessions seen beyond [`MAX_TRACKED_SESSIONS`].
    pub fn untracked(&self) -> u64 {
        self.untracked
    }

    /// The table, emptied (a worker's, at the end of a sharded run).
    pub fn take(&mut self) -> Vec<SessionStats> {
        std::mem::take(&mut self.sessions)
    }

    /// Puts a worker's session under its global id (opened before by
    /// [`SessionTable::open`], so the table's order and bounds are the one pipeline's).
    pub fn adopt(&mut self, id: u64, mut session: SessionStats) {
        if let Some(slot) = self.get_mut(id) {
            session.id = id;
            *slot = session;
        }
    }

    /// Forgets the request and response counts (the live `r` key).
    pub fn reset_counts(&mut self) {
        for s in self.sessions.iter_mut() {
            s.requests = 0;
            s.responses = 0;
        }
    }
}

impl SessionNames for SessionTable {
    fn names(&self, session: u64) -> SessionRef<'_> {
        self.get(session)
            .map_or_else(SessionRef::default, |s| SessionRef {
                sender_comp_id: &s.sender_comp_id,
                target_comp_id: &s.target_comp_id,
                connection: Some(s.connection),
            })
    }
}
