//! The pending-request table: a slab of requests waiting for responses, with
//!
//! - an index by (session, key) for matching responses;
//! - a queue in request order, for evicting the oldest when the table is full (`-m`);
//! - a queue in request order of requests not yet answered, for the `-t` alert;
//! - a doubly linked list per session, so a closed connection releases its requests in
//!   O(its requests).
//!
//! Slots are reused (steady state allocates nothing); queue entries carry the slot's
//! generation, so entries of freed slots are recognised as stale and skipped.

use std::collections::VecDeque;
use std::hash::{BuildHasher, Hash, Hasher};

use hashbrown::{HashMap, HashTable};

use fixscope_model::order::RequestType;

/// No slot (end of a session list).
const NONE: u32 = u32::MAX;

/// One tracked request.
///
/// Aligned to a cache line and 128 bytes long: a response's lookup touches one aligned pair
/// of lines (which the CPU's adjacent-line prefetch fetches together), not three.
#[derive(Debug)]
#[repr(align(64))]
pub(super) struct Pending {
    pub session: u64,
    key: KeyBytes,
    hash: u64,
    /// The time of the segment carrying the request's last byte.
    pub request_ts_ns: u64,
    /// TCP sequence number of the request's last byte (`--breakdown`).
    pub request_seq: u32,
    pub request_type: RequestType,
    /// The request's MsgSeqNum (34; 0 when absent): a session Reject names it in RefSeqNum.
    pub msg_seq: u32,
    /// When the first acknowledgement came (valid when `acked`; not an `Option`, which
    /// would cost 7 more bytes and the slot its two-cache-line size).
    pub ack_ts_ns: u64,
    pub acked: bool,
    /// The order's `--by` value ids (the slot's spare bytes).
    pub groups: fixscope_model::order::Groups,
    /// A first response came.
    pub responded: bool,
    pub filled: bool,
    /// Counted `timed_out` (no response within `-t`); a response after it is `late`.
    pub timed_out: bool,
    /// Bumped when the slot is freed, so stale queue entries are recognised.
    generation: u32,
    live: bool,
    /// Neighbours in the session's list.
    prev: u32,
    next: u32,
}

/// The `request_ts_ns` of an order whose response came before its request was seen
/// (`response_before_request`): it has no time to measure from. (A sentinel, not a flag:
/// one more field would make the slot three cache lines.)
pub(super) const SEEN_AFTER_ITS_RESPONSE: u64 = u64::MAX;

impl Pending {
    /// Whether a response of the order came before its request was seen: it records no
    /// latency, its later responses are only matched to it.
    pub fn seen_after_its_response(&self) -> bool {
        self.request_ts_ns == SEEN_AFTER_ITS_RESPONSE
    }

    /// Its first response, at `ts_ns`, is stamped before the request: the capture put them
    /// out of the wire's order (host stamps; a hole in the response stream that a later
    /// segment filled is reordering, not delay — the response is timed by its own
    /// segment). As for a response read before its request (`early.rs`), the order then
    /// records no latency, now or from its later responses, and the caller counts it once
    /// in `response_before_request`. True when it was.
    #[inline]
    pub fn answered_before_it_was_seen(&mut self, ts_ns: u64) -> bool {
        if ts_ns >= self.request_ts_ns || self.seen_after_its_response() {
            return false;
        }
        self.request_ts_ns = SEEN_AFTER_ITS_RESPONSE;
        true
    }

    /// The hash of (session, key) the index files it under.
    pub fn hash_of(&self) -> u64 {
        self.hash
    }

    /// The request's key.
    pub fn key_bytes(&self) -> &[u8] {
        self.key.get()
    }

    fn vacant() -> Self {
        Pending {
            session: 0,
            key: KeyBytes::default(),
            hash: 0,
            request_ts_ns: 0,
            request_seq: 0,
            request_type: RequestType::NewOrder,
            msg_seq: 0,
            ack_ts_ns: 0,
            acked: false,
            groups: fixscope_model::order::NO_GROUPS,
            responded: false,
            filled: false,
            timed_out: false,
            generation: 0,
            live: false,
            prev: NONE,
            next: NONE,
        }
    }
}

/// Keys up to this long are kept inside the slot (ClOrdIDs are typically 10–36 bytes: a
/// UUID is 36), sized so that a slot is exactly two cache lines.
const INLINE_KEY: usize = 36;

/// A request's key, inside the slot when short: a response's lookup compares it without
/// following a pointer to another cache line (the live profile's largest stall after the
/// index itself); longer keys go to a buffer the slot keeps for reuse.
#[derive(Debug)]
struct KeyBytes {
    len: u8,
    inline: [u8; INLINE_KEY],
    long: Vec<u8>,
}

impl Default for KeyBytes {
    fn default() -> Self {
        KeyBytes {
            len: 0,
            inline: [0; INLINE_KEY],
            long: Vec::new(),
        }
    }
}

impl KeyBytes {
    #[inline]
    fn get(&self) -> &[u8] {
        match self.inline.get(..self.len as usize) {
            Some(short) if self.long.is_empty() => short,
            _ => &self.long,
        }
    }

    #[inline]
    fn set(&mut self, key: &[u8]) {
        self.long.clear();
        match self.inline.get_mut(..key.len()) {
            Some(short) => {
                short.copy_from_slice(key);
                self.len = key.len() as u8;
            }
            None => {
                self.len = 0;
                self.long.extend_from_slice(key);
            }
        }
    }
}

pub(super) struct PendingTable {
    slots: Vec<Pending>,
    free: Vec<u32>,
    index: HashTable<u32>,
    by_age: VecDeque<(u32, u32)>,
    unanswered_by_age: VecDeque<(u32, u32)>,
    session_heads: HashMap<u64, u32>,
    /// ClOrdIDs come from the wire, so an attacker could pick keys that collide under a
    /// known seed and make every lookup a long probe. foldhash's `RandomState` seeds each
    /// table from a per-process random value: colliding keys cannot be computed offline,
    /// at the speed of a non-cryptographic hash (hashbrown's own default).
    hasher: foldhash::fast::RandomState,
    live: usize,
    unanswered: usize,
}

impl PendingTable {
    pub fn new() -> Self {
        PendingTable {
            slots: Vec::new(),
            free: Vec::new(),
            index: HashTable::new(),
            by_age: VecDeque::new(),
            unanswered_by_age: VecDeque::new(),
            session_heads: HashMap::new(),
            hasher: foldhash::fast::RandomState::default(),
            live: 0,
            unanswered: 0,
        }
    }

    /// Requests tracked.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Tracked requests that have had no response yet.
    pub fn unanswered(&self) -> usize {
        self.unanswered
    }

    pub fn hash(&self, session: u64, key: &[u8]) -> u64 {
        let mut h = self.hasher.build_hasher();
        session.hash(&mut h);
        key.hash(&mut h);
        h.finish()
    }

    pub fn find(&self, session: u64, key: &[u8], hash: u64) -> Option<u32> {
        let slots = &self.slots;
        self.index
            .find(hash, |&i| {
                let p = &slots[i as usize];
                p.session == session && p.key.get() == key
            })
            .copied()
    }

    /// The slots of every request tracked now.
    pub fn live_slots(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.slots.len() as u32).filter(|&i| self.slots[i as usize].live)
    }

    pub fn get(&self, slot: u32) -> &Pending {
        &self.slots[slot as usize]
    }

    pub fn get_mut(&mut self, slot: u32) -> &mut Pending {
        &mut self.slots[slot as usize]
    }

    /// Tracks a new request (the caller made room and checked it is not a duplicate).
    // Inlined into the request path: a second, cold caller (a request seen after its
    // response) made LLVM keep it out of line, +2.9M instructions on small.pcap.
    #[inline(always)]
    pub fn insert(
        &mut self,
        session: u64,
        key: &[u8],
        hash: u64,
        request_ts_ns: u64,
        request_seq: u32,
        request_type: RequestType,
    ) -> u32 {
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(Pending::vacant());
                (self.slots.len() - 1) as u32
            }
        };
        let head = self.session_heads.insert(session, slot).unwrap_or(NONE);
        if head != NONE {
            self.slots[head as usize].prev = slot;
        }
        let p = &mut self.slots[slot as usize];
        p.session = session;
        p.key.set(key);
        p.hash = hash;
        p.request_ts_ns = request_ts_ns;
        p.request_seq = request_seq;
        p.request_type = request_type;
        p.msg_seq = 0;
        p.ack_ts_ns = 0;
        p.acked = false;
        p.groups = fixscope_model::order::NO_GROUPS;
        p.responded = false;
        p.filled = false;
        p.timed_out = false;
        p.live = true;
        p.prev = NONE;
        p.next = head;
        let generation = p.generation;
        let slots = &self.slots;
        self.index
            .insert_unique(hash, slot, |&i| slots[i as usize].hash);
        self.by_age.push_back((slot, generation));
        self.unanswered_by_age.push_back((slot, generation));
        self.live += 1;
        self.unanswered += 1;
        slot
    }

    /// Records the request's first response; false when it had one already.
    pub fn answer(&mut self, slot: u32) -> bool {
        let p = &mut self.slots[slot as usize];
        if p.responded {
            return false;
        }
        p.responded = true;
        self.unanswered -= 1;
        self.compact();
        true
    }

    fn current(&self, (slot, generation): (u32, u32)) -> bool {
        let p = &self.slots[slot as usize];
        p.live && p.generation == generation
    }

    /// The oldest tracked request, to evict.
    pub fn oldest(&mut self) -> Option<u32> {
        while let Some(&entry) = self.by_age.front() {
            if self.current(entry) {
                return Some(entry.0);
            }
            self.by_age.pop_front();
        }
        None
    }

    /// The next unanswered request timestamped before `cutoff_ns` that has not been
    /// reported yet; it leaves the alert queue (it stays tracked).
    pub fn next_unanswered_before(&mut self, cutoff_ns: u64) -> Option<u32> {
        while let Some(&entry) = self.unanswered_by_age.front() {
            let p = &self.slots[entry.0 as usize];
            if self.current(entry) && !p.responded {
                if p.request_ts_ns >= cutoff_ns {
                    return None;
                }
                self.unanswered_by_age.pop_front();
                return Some(entry.0);
            }
            self.unanswered_by_age.pop_front();
        }
        None
    }

    /// The one tracked request of `session` whose key is `key` with a firm after it (`key`
    /// SOH firm): `Ok(None)` when none, `Err(())` when several firms' orders share `key`
    /// (O(the session's requests): asked only for a report without a firm on a session
    /// whose requests carry one, which a venue that does not echo 128 sends).
    pub fn find_with_any_firm(&self, session: u64, key: &[u8]) -> Result<Option<u32>, ()> {
        let mut found = None;
        let mut slot = self.any_of_session(session).unwrap_or(NONE);
        while slot != NONE {
            let p = &self.slots[slot as usize];
            let k = p.key_bytes();
            if k.len() > key.len() && k.starts_with(key) && k[key.len()] == fixscope_fix::SOH {
                if found.is_some() {
                    return Err(());
                }
                found = Some(slot);
            }
            slot = p.next;
        }
        Ok(found)
    }

    /// The tracked request of `session` whose MsgSeqNum is `msg_seq` (O(the session's
    /// requests): only session Rejects ask, and they are rare).
    pub fn find_by_msg_seq(&self, session: u64, msg_seq: u32) -> Option<u32> {
        let mut slot = self.any_of_session(session)?;
        while slot != NONE {
            let p = &self.slots[slot as usize];
            if p.msg_seq == msg_seq {
                return Some(slot);
            }
            slot = p.next;
        }
        None
    }

    /// The tracked requests of `session` still waiting for a first response.
    pub fn unanswered_of_session(&self, session: u64) -> Vec<u32> {
        let mut out = Vec::new();
        let mut slot = self.any_of_session(session).unwrap_or(NONE);
        while slot != NONE {
            let p = &self.slots[slot as usize];
            if !p.responded {
                out.push(slot);
            }
            slot = p.next;
        }
        out
    }

    /// The most recent tracked request of `session`, if any.
    pub fn any_of_session(&self, session: u64) -> Option<u32> {
        self.session_heads.get(&session).copied()
    }

    /// Stops tracking a request.
    pub fn release(&mut self, slot: u32) {
        let p = &mut self.slots[slot as usize];
        if !p.live {
            return;
        }
        p.live = false;
        p.generation = p.generation.wrapping_add(1);
        let (hash, session, prev, next, responded) =
            (p.hash, p.session, p.prev, p.next, p.responded);
        if let Ok(entry) = self.index.find_entry(hash, |&i| i == slot) {
            entry.remove();
        }
        if prev == NONE {
            if next == NONE {
                self.session_heads.remove(&session);
            } else {
                self.session_heads.insert(session, next);
            }
        } else {
            self.slots[prev as usize].next = next;
        }
        if next != NONE {
            self.slots[next as usize].prev = prev;
        }
        self.free.push(slot);
        self.live -= 1;
        if !responded {
            self.unanswered -= 1;
        }
        self.compact();
    }

    /// Keeps the queues from growing without bound when most requests complete long
    /// before they would be evicted or reported (O(1) amortised).
    fn compact(&mut self) {
        if self.by_age.len() > 2 * self.live + 1024 {
            let slots = &self.slots;
            self.by_age
                .retain(|&(s, g)| slots[s as usize].live && slots[s as usize].generation == g);
        }
        if self.unanswered_by_age.len() > 2 * self.unanswered + 1024 {
            let slots = &self.slots;
            self.unanswered_by_age.retain(|&(s, g)| {
                let p = &slots[s as usize];
                p.live && p.generation == g && !p.responded
            });
        }
    }

    #[cfg(test)]
    pub fn footprint(&self) -> (usize, usize, usize) {
        (
            self.slots.len(),
            self.by_age.len(),
            self.unanswered_by_age.len(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_two_cache_lines() {
        assert_eq!(std::mem::size_of::<Pending>(), 128);
    }

    #[test]
    fn keys_of_every_length_read_back_and_slots_are_reused() {
        let mut k = KeyBytes::default();
        assert_eq!(k.get(), b"");
        let long: Vec<u8> = (0..100u8).collect();
        // Short, at the inline limit, one past it, long, then short again in the same slot.
        for len in [
            1,
            INLINE_KEY - 1,
            INLINE_KEY,
            INLINE_KEY + 1,
            100,
            3,
            0,
            64,
            12,
        ] {
            k.set(&long[..len]);
            assert_eq!(k.get(), &long[..len], "length {len}");
        }
        // Lookups match on the whole key, whichever way it is stored.
        let mut table = PendingTable::new();
        for len in [5, INLINE_KEY, INLINE_KEY + 1, 90] {
            let h = table.hash(1, &long[..len]);
            let slot = table.insert(1, &long[..len], h, 0, 0, RequestType::NewOrder);
            assert_eq!(table.find(1, &long[..len], h), Some(slot));
            assert_eq!(
                table.find(2, &long[..len], table.hash(2, &long[..len])),
                None
            );
            let shorter = &long[..len - 1];
            assert_ne!(table.find(1, shorter, table.hash(1, shorter)), Some(slot));
        }
    }
}
