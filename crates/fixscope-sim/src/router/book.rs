//! What the router remembers: parent orders (with their child legs at the venue), parent
//! requests in flight (D, F, G, with the truth of each child) and the lookups from ClOrdIDs
//! to them.
//!
//! Plain data in slabs whose entries (and their buffers) are reused, so steady traffic does
//! not allocate. Entries carry a generation: a reference to a freed entry is recognised.

use std::hash::BuildHasher;

use foldhash::fast::FixedState;
use hashbrown::HashMap;

/// A reference to a slab entry: index and generation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ref {
    pub idx: u32,
    pub gen: u32,
}

/// Entries of a [`Slab`] reset themselves for reuse, keeping their buffers.
pub trait Reuse: Default {
    fn reset(&mut self);
    fn gen(&self) -> u32;
    fn set_gen(&mut self, gen: u32);
}

pub struct Slab<T> {
    items: Vec<T>,
    live: Vec<bool>,
    free: Vec<u32>,
}

impl<T: Reuse> Slab<T> {
    pub fn with_capacity(n: usize) -> Self {
        Slab {
            items: Vec::with_capacity(n),
            live: Vec::with_capacity(n),
            free: Vec::new(),
        }
    }

    pub fn alloc(&mut self) -> Ref {
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                let mut it = T::default();
                // Generations start at 1: `Ref::default()` (0, 0) never names an entry.
                it.set_gen(1);
                self.items.push(it);
                self.live.push(false);
                (self.items.len() - 1) as u32
            }
        };
        let it = &mut self.items[idx as usize];
        it.reset();
        self.live[idx as usize] = true;
        Ref { idx, gen: it.gen() }
    }

    pub fn release(&mut self, r: Ref) {
        if self.get(r).is_none() {
            return;
        }
        let it = &mut self.items[r.idx as usize];
        it.set_gen(it.gen().wrapping_add(1).max(1));
        self.live[r.idx as usize] = false;
        self.free.push(r.idx);
    }

    pub fn get(&self, r: Ref) -> Option<&T> {
        let i = r.idx as usize;
        match (self.items.get(i), self.live.get(i)) {
            (Some(it), Some(true)) if it.gen() == r.gen => Some(it),
            _ => None,
        }
    }

    pub fn get_mut(&mut self, r: Ref) -> Option<&mut T> {
        let i = r.idx as usize;
        match (self.items.get_mut(i), self.live.get(i)) {
            (Some(it), Some(true)) if it.gen() == r.gen => Some(it),
            _ => None,
        }
    }

    /// The live entry at `idx` whose generation ends in `gen16` (a write tag's reference).
    pub fn find_tagged(&self, idx: u32, gen16: u16) -> Option<Ref> {
        let i = idx as usize;
        match (self.items.get(i), self.live.get(i)) {
            (Some(it), Some(true)) if it.gen() as u16 == gen16 => Some(Ref { idx, gen: it.gen() }),
            _ => None,
        }
    }

    /// References of all live entries (end of run).
    pub fn live_refs(&self) -> Vec<Ref> {
        (0..self.items.len())
            .filter(|&i| self.live[i])
            .map(|i| Ref {
                idx: i as u32,
                gen: self.items[i].gen(),
            })
            .collect()
    }
}

/// One child order at the venue as the parent order knows it.
#[derive(Default)]
pub struct Leg {
    /// Its current ClOrdID at the venue (a replace moves it on).
    pub id: Vec<u8>,
    pub qty: u64,
    pub cum: u64,
    /// Filled, cancelled or rejected.
    pub done: bool,
}

/// A parent order of a client session.
#[derive(Default)]
pub struct Order {
    gen: u32,
    /// The client connection (index, generation) it came in on.
    pub conn: Ref,
    pub order_id: u64,
    /// Its current ClOrdID (a replace moves it on).
    pub parent_id: Vec<u8>,
    pub symbol: Vec<u8>,
    pub side: Vec<u8>,
    pub ord_type: Vec<u8>,
    pub price: Vec<u8>,
    pub qty: u64,
    pub cum: u64,
    /// The first `nlegs` entries are this order's (the rest keep their buffers).
    pub legs: Vec<Leg>,
    pub nlegs: usize,
    /// Lookup keys that point at this order (removed when it is freed).
    pub keys: Vec<u64>,
    /// Requests of this order still in flight.
    pub open_reqs: u32,
    /// Latest due times of its routing and mapping-back timers: later events of one order
    /// never overtake earlier ones, whatever delays are drawn.
    pub last_route_due: u64,
    pub last_back_due: u64,
}

impl Order {
    pub fn legs(&self) -> &[Leg] {
        &self.legs[..self.nlegs]
    }

    /// Sets the legs' quantities: `qty` split in `n` (the first ones take the remainder).
    pub fn split(&mut self, n: usize, qty: u64) {
        while self.legs.len() < n {
            self.legs.push(Leg::default());
        }
        self.nlegs = n;
        for (k, leg) in self.legs[..n].iter_mut().enumerate() {
            leg.id.clear();
            leg.qty = slice_qty(qty, n, k);
            leg.cum = 0;
            leg.done = false;
        }
    }

    pub fn all_done(&self) -> bool {
        self.legs().iter().all(|l| l.done)
    }
}

/// Slice `k` of `qty` split in `n` parts.
pub fn slice_qty(qty: u64, n: usize, k: usize) -> u64 {
    let n = n.max(1) as u64;
    qty / n + u64::from((k as u64) < qty % n)
}

impl Reuse for Order {
    fn reset(&mut self) {
        self.conn = Ref::default();
        self.order_id = 0;
        self.parent_id.clear();
        self.symbol.clear();
        self.side.clear();
        self.ord_type.clear();
        self.price.clear();
        self.qty = 0;
        self.cum = 0;
        self.nlegs = 0;
        self.keys.clear();
        self.open_reqs = 0;
        self.last_route_due = 0;
        self.last_back_due = 0;
    }
    fn gen(&self) -> u32 {
        self.gen
    }
    fn set_gen(&mut self, gen: u32) {
        self.gen = gen;
    }
}

/// One child request sent (or to be sent) for a parent request, with its truth.
#[derive(Default)]
pub struct Child {
    /// Which leg of the order it acts on.
    pub leg: usize,
    pub id: Vec<u8>,
    /// Its OrderQty (a G's new quantity for the leg).
    pub qty: u64,
    pub written_ns: u64,
    pub venue_first_ns: u64,
    /// The first venue response's 150, or b'9' for an OrderCancelReject (0: none yet).
    pub venue_first_type: u8,
    /// A parent response caused by its first venue response is queued, not yet written.
    pub resp_pending: bool,
    pub resp_written_ns: u64,
}

/// A parent request (D, F or G) from a client, until its truth rows are written.
#[derive(Default)]
pub struct Req {
    gen: u32,
    pub conn: Ref,
    pub order: Ref,
    /// The client session's SenderCompID.
    pub session: Vec<u8>,
    pub msg_type: u8,
    pub parent_id: Vec<u8>,
    /// 41 of an F/G.
    pub orig_id: Vec<u8>,
    /// 34 of the request (hops: 630).
    pub seq: u64,
    pub read_ns: u64,
    /// Rejected by the router itself (`--reject-rate`, or nothing live to cancel/replace).
    pub rejected: bool,
    pub reject_text: &'static str,
    /// A G's new OrderQty and Price (0/empty: unchanged).
    pub qty: u64,
    pub price: Vec<u8>,
    /// The parent's first response: queued (its exec type) and written.
    pub first_type: u8,
    pub first_written_ns: u64,
    /// The first `nchildren` entries are this request's.
    pub children: Vec<Child>,
    pub nchildren: usize,
    /// The children were sent (or the reject queued): the route timer has fired.
    pub routed: bool,
}

impl Req {
    pub fn children(&self) -> &[Child] {
        &self.children[..self.nchildren]
    }

    /// Adds a child for `leg` with id and quantity; returns its slot.
    pub fn push_child(&mut self, leg: usize, qty: u64) -> usize {
        if self.children.len() == self.nchildren {
            self.children.push(Child::default());
        }
        let c = &mut self.children[self.nchildren];
        c.leg = leg;
        c.id.clear();
        c.qty = qty;
        c.written_ns = 0;
        c.venue_first_ns = 0;
        c.venue_first_type = 0;
        c.resp_pending = false;
        c.resp_written_ns = 0;
        self.nchildren += 1;
        self.nchildren - 1
    }

    /// All there is to know: its rows can be written.
    pub fn is_done(&self) -> bool {
        if !self.routed || self.first_written_ns == 0 {
            return false;
        }
        self.children()
            .iter()
            .all(|c| c.written_ns != 0 && c.venue_first_ns != 0 && !c.resp_pending)
    }
}

impl Reuse for Req {
    fn reset(&mut self) {
        self.conn = Ref::default();
        self.order = Ref::default();
        self.session.clear();
        self.msg_type = 0;
        self.parent_id.clear();
        self.orig_id.clear();
        self.seq = 0;
        self.read_ns = 0;
        self.rejected = false;
        self.reject_text = "";
        self.qty = 0;
        self.price.clear();
        self.first_type = 0;
        self.first_written_ns = 0;
        self.nchildren = 0;
        self.routed = false;
    }
    fn gen(&self) -> u32 {
        self.gen
    }
    fn set_gen(&mut self, gen: u32) {
        self.gen = gen;
    }
}

/// Where a child ClOrdID leads: its order and leg, and the request child it answers.
#[derive(Clone, Copy, Debug)]
pub struct ChildRef {
    pub order: Ref,
    pub leg: usize,
    pub req: Ref,
    pub child: usize,
}

/// Lookups by ClOrdID, keyed by a hash (collisions are astronomically unlikely and would
/// only misroute a simulated response).
pub struct Index {
    hasher: FixedState,
    /// (client connection, parent ClOrdID) → order.
    pub parents: HashMap<u64, Ref>,
    /// Child ClOrdID → order, leg, request child.
    pub children: HashMap<u64, ChildRef>,
}

impl Index {
    pub fn new() -> Self {
        Index {
            hasher: FixedState::with_seed(0x0070_07e5),
            parents: HashMap::with_capacity(1 << 16),
            children: HashMap::with_capacity(1 << 16),
        }
    }

    pub fn parent_key(&self, conn: Ref, id: &[u8]) -> u64 {
        self.hasher.hash_one((0u8, conn.idx, conn.gen, id))
    }

    pub fn child_key(&self, id: &[u8]) -> u64 {
        self.hasher.hash_one((1u8, id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_add_up() {
        for (qty, n) in [(100, 2), (101, 3), (1, 2), (0, 3), (7, 7)] {
            let parts: Vec<u64> = (0..n).map(|k| slice_qty(qty, n, k)).collect();
            assert_eq!(parts.iter().sum::<u64>(), qty, "{qty} {n}");
        }
    }

    #[test]
    fn slab_recognises_stale_refs() {
        let mut s: Slab<Req> = Slab::with_capacity(2);
        let a = s.alloc();
        s.release(a);
        let b = s.alloc();
        assert_eq!(a.idx, b.idx);
        assert!(s.get(a).is_none());
        assert!(s.get(b).is_some());
        assert!(
            s.get(Ref::default()).is_none(),
            "the default Ref names nothing"
        );
    }
}
