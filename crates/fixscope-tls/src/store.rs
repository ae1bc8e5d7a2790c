//! Where a connection finds its secrets: a [`KeySource`]. A [`KeyLog`] read up front never
//! learns (offline: every file was read before the first packet, so a missing key is
//! missing). A [`KeyStore`] following its files (`live`) learns the lines engines append
//! while it runs, so a connection whose key is not there yet may be **held** a while
//! ([`HoldPermit`]) rather than given up.
//!
//! The lookup happens at a connection's ServerHello and while it is held, never per
//! record: the hot path pays nothing for the lock.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use crate::follow::KeyLogFiles;
use crate::keylog::{KeyLog, KeyLogStats, Secrets};

/// Connections held for their key at once, at most, in one run (each holds at most
/// `connection::MAX_HELD_AWAITING_KEY` bytes): the memory held is bounded.
pub const MAX_HELD_CONNECTIONS: usize = 256;

/// The files are re-read on a miss at most this often (a burst of held connections' pushes
/// must not become a burst of reads).
const MIN_REREAD: Duration = Duration::from_millis(1);

/// What a connection's secrets are looked up in.
pub trait KeySource {
    /// The secrets logged for `client_random`.
    fn secrets(&self, client_random: &[u8; 32]) -> Option<Secrets>;

    /// Leave to hold a connection whose key is not there yet (`None`: no line can come any
    /// more, or too many connections are held already).
    fn hold(&self) -> Option<HoldPermit> {
        None
    }

    /// Whether a connection without a key is to be followed by the application's OpenSSL
    /// calls (`--tls-uprobes`, [`crate::uprobe`]) rather than given up.
    fn by_uprobes(&self) -> bool {
        false
    }
}

impl KeySource for KeyLog {
    fn secrets(&self, client_random: &[u8; 32]) -> Option<Secrets> {
        self.get(client_random).cloned()
    }
}

/// One connection held for its key; dropping it frees its place.
#[derive(Debug)]
pub struct HoldPermit(Arc<AtomicUsize>);

impl Drop for HoldPermit {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

#[derive(Debug)]
struct Following {
    files: KeyLogFiles,
    last_read: Instant,
}

/// The secrets of a run, shared by all its pipelines (shards, stages).
#[derive(Debug)]
pub struct KeyStore {
    keys: RwLock<KeyLog>,
    /// `None`: every line was read up front.
    following: Option<Mutex<Following>>,
    held: Arc<AtomicUsize>,
    /// `--tls-uprobes`: connections are followed by their application's OpenSSL calls.
    uprobes: bool,
}

impl From<KeyLog> for KeyStore {
    fn from(keys: KeyLog) -> Self {
        KeyStore {
            keys: RwLock::new(keys),
            following: None,
            held: Arc::default(),
            uprobes: false,
        }
    }
}

impl KeyStore {
    /// Reads every file now, and follows them: lines appended later are learnt on a miss.
    pub fn follow<P: AsRef<Path>>(paths: &[P]) -> std::io::Result<Self> {
        let mut files = KeyLogFiles::new(paths);
        let mut keys = KeyLog::new();
        files.read_all(&mut keys)?;
        Ok(KeyStore {
            keys: RwLock::new(keys),
            following: Some(Mutex::new(Following {
                files,
                last_read: Instant::now(),
            })),
            held: Arc::default(),
            uprobes: false,
        })
    }

    /// A connection whose key is not here when its ServerHello is read is followed by its
    /// application's OpenSSL calls (`live --tls-uprobes`) instead of held for the key.
    pub fn and_uprobes(mut self) -> Self {
        self.uprobes = true;
        self
    }

    pub fn is_following(&self) -> bool {
        self.following.is_some()
    }

    /// What the lines read so far held.
    pub fn stats(&self) -> KeyLogStats {
        self.keys.read().map(|k| k.stats()).unwrap_or_default()
    }

    /// Connections (client randoms) with a secret so far.
    pub fn len(&self) -> usize {
        self.keys.read().map(|k| k.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reads what was appended to the files (if followed and not read within
    /// [`MIN_REREAD`]); true if anything was.
    pub fn read_new(&self) -> bool {
        let Some(following) = &self.following else {
            return false;
        };
        // Another pipeline reading already: its lines will be there for our next look.
        let Ok(mut f) = following.try_lock() else {
            return false;
        };
        if f.last_read.elapsed() < MIN_REREAD {
            return false;
        }
        f.last_read = Instant::now();
        let mut fresh = KeyLog::new();
        if f.files.read_new(&mut fresh) == 0 {
            return false;
        }
        match self.keys.write() {
            Ok(mut keys) => keys.absorb(fresh),
            Err(_) => return false,
        }
        true
    }

    fn lookup(&self, client_random: &[u8; 32]) -> Option<Secrets> {
        self.keys.read().ok()?.get(client_random).cloned()
    }
}

impl KeySource for KeyStore {
    fn secrets(&self, client_random: &[u8; 32]) -> Option<Secrets> {
        let complete = |s: &Secrets| {
            s.master.is_some()
                || (s.client_handshake.is_some()
                    && s.server_handshake.is_some()
                    && s.client_traffic.is_some()
                    && s.server_traffic.is_some())
        };
        match self.lookup(client_random) {
            // TLS 1.3's four lines are written one by one: a part is not yet the key.
            Some(s) if complete(&s) || !self.is_following() => Some(s),
            _ if self.read_new() => self.lookup(client_random),
            found => found,
        }
    }

    fn hold(&self) -> Option<HoldPermit> {
        self.following.as_ref()?;
        self.held
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < MAX_HELD_CONNECTIONS).then_some(n + 1)
            })
            .ok()?;
        Some(HoldPermit(self.held.clone()))
    }

    fn by_uprobes(&self) -> bool {
        self.uprobes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_store_never_holds_a_followed_one_holds_a_bounded_number() {
        let fixed = KeyStore::from(KeyLog::new());
        assert!(fixed.hold().is_none());
        let followed = KeyStore::follow::<&Path>(&[]).unwrap();
        let permits: Vec<_> = (0..MAX_HELD_CONNECTIONS)
            .map(|_| followed.hold().unwrap())
            .collect();
        assert!(followed.hold().is_none());
        drop(permits);
        assert!(followed.hold().is_some());
    }
}
