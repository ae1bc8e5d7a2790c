//! Per-session request slots and the ClOrdID -> resting order index.
//!
//! A slot holds one request's truth record (D, F or G) and, for a D or accepted G, the
//! order it rests as. Slots are recycled through a free list and keep their byte buffers,
//! so the steady state allocates nothing.

use std::hash::BuildHasher;

use foldhash::fast::FixedState;
use hashbrown::HashTable;

/// Rejects forced by `--*-reject-every` (the values of `Slot::forced`).
pub const FORCED_NONE: u8 = 0;
pub const FORCED_SESSION: u8 = 1;
pub const FORCED_BUSINESS: u8 = 2;
pub const FORCED_ORDER: u8 = 3;
pub const FORCED_CANCEL: u8 = 4;

#[derive(Debug, Default)]
pub struct Slot {
    pub gen: u32,
    pub in_use: bool,
    pub msg_type: u8,
    pub clordid: Vec<u8>,
    pub orig_clordid: Vec<u8>,
    pub symbol: Vec<u8>,
    /// Account (1) and ExDestination (100), for the per-request truth.
    pub account: Vec<u8>,
    pub venue: Vec<u8>,
    /// The request's MsgSeqNum (a session Reject names it in RefSeqNum 45).
    pub msg_seq: u64,
    /// The session epoch it arrived in.
    pub epoch: u64,
    /// A reject forced by `--*-reject-every`: one of the `FORCED_*` values below.
    pub forced: u8,
    /// Which response answered it (per-request truth).
    pub answer: &'static str,
    pub price: Vec<u8>,
    pub side: u8,
    pub qty: u64,
    pub cum_qty: u64,
    pub order_id: u64,
    /// Why a D will be rejected when its ack is due (validated on arrival).
    pub reject: Option<&'static str>,
    pub request_ns: u64,
    pub ack_ns: Option<u64>,
    pub fill_ns: Option<u64>,
    /// Just before the read() that returned the request's last byte.
    pub read_call_ns: u64,
    /// Just after the write() that `ack_ns` preceded returned.
    pub ack_written_ns: Option<u64>,
    /// Resting in the ClOrdID index.
    pub live: bool,
    /// A timer (ack or fill) refers to this slot; `timer_token` invalidates stale ones.
    pub timer_armed: bool,
    pub timer_token: u32,
    pub fills_done: u32,
    /// Delay of the next fill, armed once the previous response is written (so the gap
    /// between the two writes is at least the delay).
    pub next_fill_delay: u64,
    /// Responses encoded but not yet written.
    pub pending_stamps: u32,
    /// The truth record is complete once `pending_stamps` drains.
    pub finalize: bool,
    pub written: bool,
}

impl Slot {
    fn reset(&mut self) {
        self.msg_type = 0;
        self.clordid.clear();
        self.orig_clordid.clear();
        self.symbol.clear();
        self.account.clear();
        self.venue.clear();
        self.msg_seq = 0;
        self.epoch = 0;
        self.forced = 0;
        self.answer = "";
        self.price.clear();
        self.side = b'1';
        self.qty = 0;
        self.cum_qty = 0;
        self.order_id = 0;
        self.reject = None;
        self.request_ns = 0;
        self.ack_ns = None;
        self.fill_ns = None;
        self.read_call_ns = 0;
        self.ack_written_ns = None;
        self.live = false;
        self.timer_armed = false;
        self.fills_done = 0;
        self.next_fill_delay = 0;
        self.pending_stamps = 0;
        self.finalize = false;
        self.written = false;
    }

    /// Nothing refers to the slot any more and its record is out.
    pub fn releasable(&self) -> bool {
        self.written
            && !self.live
            && !self.timer_armed
            && self.pending_stamps == 0
            && self.next_fill_delay == 0
    }
}

pub struct OrderBook {
    slots: Vec<Slot>,
    free: Vec<u32>,
    index: HashTable<u32>,
    hasher: FixedState,
    live: usize,
}

impl OrderBook {
    pub fn with_capacity(n: usize) -> Self {
        OrderBook {
            slots: Vec::with_capacity(n),
            free: Vec::with_capacity(n),
            index: HashTable::with_capacity(n),
            hasher: FixedState::with_seed(0x5eed),
            live: 0,
        }
    }

    /// A fresh slot (recycled when possible).
    pub fn alloc(&mut self) -> u32 {
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(Slot::default());
                (self.slots.len() - 1) as u32
            }
        };
        let s = &mut self.slots[idx as usize];
        s.reset();
        s.in_use = true;
        idx
    }

    pub fn release(&mut self, idx: u32) {
        let s = &mut self.slots[idx as usize];
        debug_assert!(s.in_use && !s.live);
        s.in_use = false;
        s.gen = s.gen.wrapping_add(1);
        self.free.push(idx);
    }

    pub fn get(&self, idx: u32) -> &Slot {
        &self.slots[idx as usize]
    }

    pub fn get_mut(&mut self, idx: u32) -> &mut Slot {
        &mut self.slots[idx as usize]
    }

    /// Two distinct slots at once (the request and the order it acts on).
    pub fn pair_mut(&mut self, a: u32, b: u32) -> (&mut Slot, &mut Slot) {
        let (a, b) = (a as usize, b as usize);
        debug_assert_ne!(a, b);
        if a < b {
            let (lo, hi) = self.slots.split_at_mut(b);
            (&mut lo[a], &mut hi[0])
        } else {
            let (lo, hi) = self.slots.split_at_mut(a);
            (&mut hi[0], &mut lo[b])
        }
    }

    pub fn live_count(&self) -> usize {
        self.live
    }

    /// The resting order with this ClOrdID.
    pub fn find_live(&self, clordid: &[u8]) -> Option<u32> {
        let h = self.hasher.hash_one(clordid);
        let slots = &self.slots;
        self.index
            .find(h, |&i| slots[i as usize].clordid == clordid)
            .copied()
    }

    /// Rests slot `idx` under its ClOrdID; false if another resting order has it.
    pub fn insert_live(&mut self, idx: u32) -> bool {
        let key = &self.slots[idx as usize].clordid;
        if self.find_live(key).is_some() {
            return false;
        }
        let h = self.hasher.hash_one(key.as_slice());
        let (slots, hasher) = (&self.slots, &self.hasher);
        self.index.insert_unique(h, idx, |&i| {
            hasher.hash_one(slots[i as usize].clordid.as_slice())
        });
        self.slots[idx as usize].live = true;
        self.live += 1;
        true
    }

    pub fn remove_live(&mut self, idx: u32) {
        let s = &self.slots[idx as usize];
        if !s.live {
            return;
        }
        let h = self.hasher.hash_one(s.clordid.as_slice());
        if let Ok(entry) = self.index.find_entry(h, |&i| i == idx) {
            entry.remove();
        }
        self.slots[idx as usize].live = false;
        self.live -= 1;
    }

    /// Indices of all slots in use (for the final truth flush).
    pub fn in_use(&self) -> impl Iterator<Item = u32> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.in_use)
            .map(|(i, _)| i as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_and_recycling() {
        let mut b = OrderBook::with_capacity(4);
        let a = b.alloc();
        b.get_mut(a).clordid.extend_from_slice(b"X1");
        assert!(b.insert_live(a));
        let dup = b.alloc();
        b.get_mut(dup).clordid.extend_from_slice(b"X1");
        assert!(!b.insert_live(dup));
        assert_eq!(b.find_live(b"X1"), Some(a));
        assert_eq!(b.find_live(b"X2"), None);
        b.remove_live(a);
        assert_eq!(b.find_live(b"X1"), None);
        assert_eq!(b.live_count(), 0);
        let gen = b.get(a).gen;
        b.release(a);
        let again = b.alloc();
        assert_eq!(again, a);
        assert_eq!(b.get(again).gen, gen + 1);
        assert!(b.get(again).clordid.is_empty());
        let (x, y) = b.pair_mut(again, dup);
        x.qty = 1;
        y.qty = 2;
        assert_eq!(b.in_use().count(), 2);
    }
}
