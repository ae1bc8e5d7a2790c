//! Responses that came before any request of their key: held a short while, because a
//! capture can put a response before its request although the wire did not (#34).
//!
//! Host-stamped captures reorder: two tap ports or two CPUs each stamp frames on their own,
//! a mirror port's copies of the two directions cross, packet sockets on a veth each read
//! the clock when they get a frame. Then an order's response is read before its request.
//! Counted `unmatched` at once, its request would then wait in the table and raise a false
//! `timed_out` (and for an order whose ack came first, the fill would be recorded as its
//! first response: a wrong number). So a response with no tracked request is held here for
//! [`REORDER_WINDOW_NS`]: if its request comes within it, either every held response of the
//! order is stamped at or after the request — the capture was read out of the wire's order
//! but its times are right, as a tap's hardware stamps are ([`fixscope_capture::wire_stamp`]) — and
//! the responses are answered then, in time order, with their latencies ([`Replay`]); or one
//! is stamped before it, and the order is counted once in `response_before_request` and
//! records no latency (there is none to trust). If no request comes, the response is
//! counted `unmatched_responses` when the window passes (or at the end).
//!
//! The common path — no response waiting — costs the request one `is_empty` check.

use std::collections::VecDeque;

use hashbrown::HashMap;

use super::rules::ResponseKind;

/// How long a response waits for a request of its key, by the capture's clock: the
/// capture's reorder window, the same a hole the peer acknowledged waits in reassembly.
pub use fixscope_model::segment::REORDER_WINDOW_NS;

/// Responses held at most; beyond it the oldest is counted unmatched at once. Bounds
/// memory on captures that start mid-stream (every response to an earlier order waits).
const MAX_HELD: usize = 1 << 16;

struct Held {
    /// The pending table's hash of (session, key).
    hash: u64,
    session: u64,
    key: Box<[u8]>,
    /// What the response was, to answer its request with if one comes.
    replay: Replay,
    /// A request claimed it.
    claimed: bool,
}

/// A held response as its request, when it comes, is answered with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replay {
    /// When the response was seen (its first byte).
    pub ts_ns: u64,
    pub(super) kind: ResponseKind,
    /// 35 (`8` or `9`), 150 and 39, for the order events it makes.
    pub msg_type: u8,
    pub exec_type: Option<u8>,
    pub ord_status: Option<u8>,
}

/// Held responses no request claimed, as they stop waiting: `unmatched` (an answer whose
/// request never came: an alarm) or `unsolicited` (an expiry, ExecType C, the venue's own,
/// or a multileg order's report after another ended it: the report of an order no longer
/// tracked, counted apart).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Unclaimed {
    pub unmatched: u64,
    pub unsolicited: u64,
}

impl Unclaimed {
    fn add(&mut self, other: Unclaimed) {
        self.unmatched += other.unmatched;
        self.unsolicited += other.unsolicited;
    }
}

/// What a request found held for its key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Claimed {
    /// Responses of the key that were waiting.
    pub responses: u32,
    /// One of them ended the order: nothing more will come for it.
    pub terminal: bool,
}

/// The responses waiting for a request, in the order they came.
#[derive(Default)]
pub(super) struct EarlyResponses {
    held: VecDeque<Held>,
    /// Unclaimed responses per hash, so a request finds its key without a scan.
    by_hash: HashMap<u64, u32>,
}

impl EarlyResponses {
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.by_hash.is_empty()
    }

    /// Holds a response; returns the responses that stopped waiting unclaimed (the oldest,
    /// when [`MAX_HELD`] are held).
    pub fn hold(&mut self, hash: u64, session: u64, key: &[u8], replay: Replay) -> Unclaimed {
        let mut unmatched = Unclaimed::default();
        while self.held.len() >= MAX_HELD {
            unmatched.add(self.pop_front());
        }
        self.held.push_back(Held {
            hash,
            session,
            key: key.into(),
            replay,
            claimed: false,
        });
        *self.by_hash.entry(hash).or_insert(0) += 1;
        unmatched
    }

    /// A request of (session, key) came: claims every response of its key waiting, and
    /// puts them in `replays` (emptied first) in the order they came.
    pub fn claim(
        &mut self,
        hash: u64,
        session: u64,
        key: &[u8],
        replays: &mut Vec<Replay>,
    ) -> Claimed {
        replays.clear();
        let mut found = Claimed::default();
        if !self.by_hash.contains_key(&hash) {
            return found;
        }
        for h in self.held.iter_mut() {
            if !h.claimed && h.hash == hash && h.session == session && *h.key == *key {
                h.claimed = true;
                found.responses += 1;
                found.terminal |= h.replay.kind.terminal;
                replays.push(h.replay);
            }
        }
        if found.responses > 0 {
            self.forget(hash, found.responses);
        }
        found
    }

    /// Responses that waited past the window by `now_ns` stop waiting: returns those no
    /// request claimed. Called before every segment: the common case, nothing held, is one
    /// inlined check.
    #[inline]
    pub fn expire(&mut self, now_ns: u64) -> Unclaimed {
        if self.held.is_empty() {
            return Unclaimed::default();
        }
        self.expire_held(now_ns)
    }

    #[cold]
    fn expire_held(&mut self, now_ns: u64) -> Unclaimed {
        let mut unmatched = Unclaimed::default();
        while let Some(front) = self.held.front() {
            if !front.claimed && front.replay.ts_ns.saturating_add(REORDER_WINDOW_NS) >= now_ns {
                break;
            }
            unmatched.add(self.pop_front());
        }
        unmatched
    }

    /// The end of the input: no request can come, no waiting response will be claimed.
    pub fn drain(&mut self) -> Unclaimed {
        let mut unmatched = Unclaimed::default();
        while !self.held.is_empty() {
            unmatched.add(self.pop_front());
        }
        unmatched
    }

    /// Drops the oldest held response: counted when no request had claimed it.
    fn pop_front(&mut self) -> Unclaimed {
        match self.held.pop_front() {
            Some(h) if !h.claimed => {
                self.forget(h.hash, 1);
                // The venue's own expiry, or a multileg order's report after it ended.
                let venue = h.replay.kind.venue_initiated || h.replay.kind.multileg;
                Unclaimed {
                    unmatched: u64::from(!venue),
                    unsolicited: u64::from(venue),
                }
            }
            _ => Unclaimed::default(),
        }
    }

    fn forget(&mut self, hash: u64, n: u32) {
        if let Some(count) = self.by_hash.get_mut(&hash) {
            *count -= n.min(*count);
            if *count == 0 {
                self.by_hash.remove(&hash);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(ts_ns: u64, terminal: bool) -> Replay {
        Replay {
            ts_ns,
            kind: ResponseKind {
                ack: !terminal,
                fill: terminal,
                terminal,
                ends_original: false,
                reject: false,
                unsolicited: false,
                venue_initiated: false,
                multileg: false,
            },
            msg_type: b'8',
            exec_type: Some(if terminal { b'F' } else { b'0' }),
            ord_status: Some(if terminal { b'2' } else { b'0' }),
        }
    }

    #[test]
    fn a_request_claims_every_response_of_its_key_and_only_those() {
        let mut e = EarlyResponses::default();
        let mut replays = Vec::new();
        assert_eq!(e.hold(7, 1, b"A", r(100, false)).unmatched, 0);
        assert_eq!(e.hold(7, 1, b"A", r(110, true)).unmatched, 0);
        assert_eq!(e.hold(8, 1, b"B", r(120, false)).unmatched, 0);
        // Same hash, other key (a collision): not claimed.
        assert_eq!(e.hold(7, 2, b"A", r(130, false)).unmatched, 0);
        let c = e.claim(7, 1, b"A", &mut replays);
        assert_eq!(
            c,
            Claimed {
                responses: 2,
                terminal: true
            }
        );
        assert_eq!(
            replays,
            [r(100, false), r(110, true)],
            "in the order they came"
        );
        assert_eq!(e.claim(7, 1, b"A", &mut replays), Claimed::default());
        assert!(replays.is_empty());
        // B and the other session's A are still waiting, then unmatched at the end.
        assert!(!e.is_empty());
        assert_eq!(e.drain().unmatched, 2);
        assert!(e.is_empty());
    }

    #[test]
    fn responses_past_the_window_are_unmatched_once() {
        let mut e = EarlyResponses::default();
        let mut replays = Vec::new();
        e.hold(1, 1, b"A", r(1_000, false));
        e.hold(2, 1, b"B", r(2_000, false));
        assert_eq!(e.expire(1_000 + REORDER_WINDOW_NS).unmatched, 0);
        assert_eq!(e.expire(1_001 + REORDER_WINDOW_NS).unmatched, 1);
        assert_eq!(e.claim(1, 1, b"A", &mut replays), Claimed::default());
        assert_eq!(e.claim(2, 1, b"B", &mut replays).responses, 1);
        // Claimed: never unmatched.
        assert_eq!(e.expire(u64::MAX).unmatched, 0);
        assert!(e.is_empty());
    }

    #[test]
    fn memory_is_bounded_and_what_overflows_is_unmatched() {
        let mut e = EarlyResponses::default();
        let mut unmatched = 0;
        for i in 0..(MAX_HELD as u64 + 5) {
            unmatched += e.hold(i, 1, b"K", r(i, false)).unmatched;
        }
        assert_eq!(unmatched, 5);
        assert_eq!(e.held.len(), MAX_HELD);
        assert_eq!(e.drain().unmatched, MAX_HELD as u64);
    }
}
