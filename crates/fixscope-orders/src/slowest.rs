//! The slowest orders: per stage, the N largest latencies with the order that had them
//! (its key, session, times and response), cumulative and per interval (`--slowest N`).
//!
//! The first question after "p99 is high" is "which orders?". Memory is bounded (N per
//! stage, twice: the current interval and the intervals before it) and the hot path pays
//! one comparison per latency ([`SlowestOrders::admits`]) against the current Nth slowest;
//! only a latency that gets in copies its key and names. Latencies above the histograms'
//! range (`-x`) are kept here with their exact value, like every other.
//!
//! The interval's list is kept while it runs; when it ends it is merged into the earlier
//! intervals' list, so the cumulative top N is the top N of both (a cumulative top-N order
//! is always in the top N of its own interval).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::consumer::{Consumer, ConsumerConfig, GlobalSession};
use crate::correlate::{RequestType, Stage};
use fixscope_model::order::{OrderBreakdown, OrderEvent};
use fixscope_model::segment::ConnectionKey;

/// `--slowest` default.
pub const DEFAULT_SLOWEST: usize = 10;

/// One slow order at one stage.
#[derive(Debug, PartialEq, Eq)]
pub struct SlowOrder {
    pub stage: Stage,
    /// The exact latency (never clamped to `-x`).
    pub latency_ns: u64,
    pub request_type: RequestType,
    /// MsgType (35) of the response that completed the stage (`8`, `9`).
    pub response_msg_type: String,
    /// ExecType (150) / OrdStatus (39) of that response, when present.
    pub exec_type: Option<char>,
    pub ord_status: Option<char>,
    /// The correlation key's value: ClOrdID, or a compound key's values joined by `|`.
    pub key: String,
    pub session: u64,
    /// The session's SenderCompID/TargetCompID (the client's view; empty when unknown).
    pub sender_comp_id: String,
    pub target_comp_id: String,
    /// The session's addresses (`None` beyond the sessions broken down individually).
    pub connection: Option<ConnectionKey>,
    /// When the request was seen, in the source's clock (add the report's
    /// `unix_offset_ns` for UNIX time). For `ack_to_fill` too: the order's request.
    pub request_ts_ns: u64,
    /// When the response completing the stage was seen, in the source's clock.
    pub response_ts_ns: u64,
    /// The first response came after `-t` (the order was counted `timed_out`, then `late`).
    pub late: bool,
    /// The order's in-host breakdown (`--breakdown`; each value `None` until measured).
    pub breakdown: Option<OrderBreakdown>,
}

impl Clone for SlowOrder {
    fn clone(&self) -> Self {
        let mut o = blank();
        o.clone_from(self);
        o
    }

    /// Reuses the strings' allocations (lists are rebuilt every interval).
    fn clone_from(&mut self, src: &Self) {
        self.stage = src.stage;
        self.latency_ns = src.latency_ns;
        self.request_type = src.request_type;
        self.response_msg_type.clone_from(&src.response_msg_type);
        self.exec_type = src.exec_type;
        self.ord_status = src.ord_status;
        self.key.clone_from(&src.key);
        self.session = src.session;
        self.sender_comp_id.clone_from(&src.sender_comp_id);
        self.target_comp_id.clone_from(&src.target_comp_id);
        self.connection = src.connection;
        self.request_ts_ns = src.request_ts_ns;
        self.response_ts_ns = src.response_ts_ns;
        self.late = src.late;
        self.breakdown = src.breakdown;
    }
}

impl SlowOrder {
    /// Slowest first; among equal latencies the earlier request first, so lists are stable.
    pub fn slower_first(a: &SlowOrder, b: &SlowOrder) -> Ordering {
        b.latency_ns
            .cmp(&a.latency_ns)
            .then(a.request_ts_ns.cmp(&b.request_ts_ns))
            .then(a.session.cmp(&b.session))
            .then_with(|| a.key.cmp(&b.key))
    }
}

pub use fixscope_model::order::{OrderRef, SessionRef};

/// A heap entry: ordered so the heap's top is the last of the kept in
/// [`SlowOrder::slower_first`] order (the one to evict).
#[derive(Clone, Debug)]
struct Entry(SlowOrder);

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        SlowOrder::slower_first(&self.0, &other.0)
    }
}

pub(crate) fn blank() -> SlowOrder {
    SlowOrder {
        stage: Stage::FirstResponse,
        latency_ns: 0,
        request_type: RequestType::NewOrder,
        response_msg_type: String::new(),
        exec_type: None,
        ord_status: None,
        key: String::new(),
        session: 0,
        sender_comp_id: String::new(),
        target_comp_id: String::new(),
        connection: None,
        request_ts_ns: 0,
        response_ts_ns: 0,
        late: false,
        breakdown: None,
    }
}

/// The N slowest of one stream of latencies (a fixed-size min-heap). Which N is exact and
/// independent of arrival order, ties included ([`SlowOrder::slower_first`]), so merging
/// interval lists gives the same list as one pass.
#[derive(Clone, Debug)]
struct TopN {
    cap: usize,
    heap: BinaryHeap<Entry>,
    /// The smallest latency that may get in: 0 until full, then the kept minimum (a tie
    /// is decided out of line), `u64::MAX` when disabled; admission is one comparison.
    min_admit: u64,
    /// The candidate being offered; its strings are reused (the evicted entry's become
    /// the next scratch), so a full list allocates nothing in steady state.
    scratch: SlowOrder,
    /// Entries of cleared lists, kept for their strings: the next interval's orders
    /// reuse them instead of allocating.
    spare: Vec<SlowOrder>,
}

impl TopN {
    fn new(cap: usize) -> Self {
        TopN {
            cap,
            heap: BinaryHeap::with_capacity(cap),
            min_admit: if cap == 0 { u64::MAX } else { 0 },
            scratch: blank(),
            spare: Vec::new(),
        }
    }

    fn clear(&mut self) {
        self.spare.extend(self.heap.drain().map(|e| e.0));
        self.min_admit = if self.cap == 0 { u64::MAX } else { 0 };
    }

    #[inline]
    fn admits(&self, ns: u64) -> bool {
        ns >= self.min_admit
    }

    /// Keeps the order `fill` writes if it is among the N slowest.
    fn offer(
        &mut self,
        ns: u64,
        request_ts_ns: u64,
        session: u64,
        fill: impl FnOnce(&mut SlowOrder),
    ) {
        if self.cap == 0 || !self.admits(ns) {
            return;
        }
        // A tie with the kept minimum whose request came later (or on a later session at
        // the same time) loses without its key: decide that before copying strings
        // (equal latencies are common with coarse clocks and simulators).
        if self.heap.len() == self.cap {
            if let Some(top) = self.heap.peek() {
                let t = &top.0;
                if ns == t.latency_ns && (request_ts_ns, session) > (t.request_ts_ns, t.session) {
                    return;
                }
            }
        }
        fill(&mut self.scratch);
        if self.heap.len() < self.cap {
            let next = self.spare.pop().unwrap_or_else(blank);
            self.heap
                .push(Entry(std::mem::replace(&mut self.scratch, next)));
        } else if let Some(mut top) = self.heap.peek_mut() {
            if SlowOrder::slower_first(&self.scratch, &top.0) == Ordering::Less {
                // Dropping `top` restores the heap; the evicted order becomes scratch.
                std::mem::swap(&mut self.scratch, &mut top.0);
            }
        }
        if self.heap.len() == self.cap {
            if let Some(top) = self.heap.peek() {
                self.min_admit = top.0.latency_ns;
            }
        }
    }

    fn offer_order(&mut self, order: &SlowOrder) {
        self.offer(
            order.latency_ns,
            order.request_ts_ns,
            order.session,
            |slot| slot.clone_from(order),
        );
    }

    /// Gives the kept entries of the order (`session`, `request_ts_ns`) its breakdown.
    fn attach(&mut self, session: u64, request_ts_ns: u64, b: &OrderBreakdown) {
        let is_it = |o: &SlowOrder| o.session == session && o.request_ts_ns == request_ts_ns;
        if !self.heap.iter().any(|e| is_it(&e.0)) {
            return;
        }
        // The breakdown is not part of the order: rebuilding keeps the heap as it was.
        let mut entries = std::mem::take(&mut self.heap).into_vec();
        for e in entries.iter_mut().filter(|e| is_it(&e.0)) {
            e.0.breakdown = Some(*b);
        }
        self.heap = BinaryHeap::from(entries);
    }

    fn sorted_into(&self, out: &mut Vec<SlowOrder>) {
        // Overwrites the entries already there (their strings' allocations reused).
        out.truncate(self.heap.len());
        for (i, e) in self.heap.iter().enumerate() {
            match out.get_mut(i) {
                Some(o) => o.clone_from(&e.0),
                None => out.push(e.0.clone()),
            }
        }
        out.sort_by(SlowOrder::slower_first);
    }
}

/// The slowest orders of a run, per stage: the current interval and everything.
#[derive(Clone, Debug)]
pub struct SlowestOrders {
    cap: usize,
    current: [TopN; Stage::COUNT],
    earlier: [TopN; Stage::COUNT],
    interval_view: [Vec<SlowOrder>; Stage::COUNT],
    cumulative_view: [Vec<SlowOrder>; Stage::COUNT],
    /// A worker's list being absorbed by the merger (reused).
    absorbing: Vec<SlowOrder>,
}

impl SlowestOrders {
    /// Keeps the `n` slowest per stage (0: none).
    pub fn new(n: usize) -> Self {
        SlowestOrders {
            cap: n,
            current: std::array::from_fn(|_| TopN::new(n)),
            earlier: std::array::from_fn(|_| TopN::new(n)),
            interval_view: Default::default(),
            cumulative_view: Default::default(),
            absorbing: Vec::new(),
        }
    }

    /// How many are kept per stage.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Whether a latency of `ns` at `stage` gets into the list: the hot path's only cost.
    #[inline]
    pub fn admits(&self, stage: Stage, ns: u64) -> bool {
        self.current[stage.index()].admits(ns)
    }

    /// Keeps an order admitted by [`SlowestOrders::admits`] (called rarely: out of line).
    #[cold]
    #[allow(clippy::too_many_arguments)]
    pub fn offer(
        &mut self,
        stage: Stage,
        ns: u64,
        request_type: RequestType,
        session: u64,
        request_ts_ns: u64,
        late: bool,
        order: &OrderRef<'_>,
        names: &SessionRef<'_>,
    ) {
        self.current[stage.index()].offer(ns, request_ts_ns, session, |o| {
            o.stage = stage;
            o.latency_ns = ns;
            o.request_type = request_type;
            set_lossy(&mut o.response_msg_type, order.response_msg_type, false);
            o.exec_type = order.exec_type.map(char::from);
            o.ord_status = order.ord_status.map(char::from);
            set_lossy(&mut o.key, order.key, true);
            o.session = session;
            o.sender_comp_id.clear();
            o.sender_comp_id.push_str(names.sender_comp_id);
            o.target_comp_id.clear();
            o.target_comp_id.push_str(names.target_comp_id);
            o.connection = names.connection;
            o.request_ts_ns = request_ts_ns;
            o.response_ts_ns = order.response_ts_ns;
            o.late = late;
            o.breakdown = order.breakdown;
        });
    }

    /// Keeps an order read back from elsewhere (an interval log: `fixscope report`) as if
    /// it had been recorded in the current interval.
    pub fn offer_order(&mut self, order: &SlowOrder) {
        self.current[order.stage.index()].offer_order(order);
    }

    /// An order's breakdown measured after it was kept (its socket calls came after its
    /// segments): every list holding it gets it.
    pub fn attach_breakdown(&mut self, session: u64, request_ts_ns: u64, b: &OrderBreakdown) {
        for t in self.current.iter_mut().chain(self.earlier.iter_mut()) {
            t.attach(session, request_ts_ns, b);
        }
    }

    /// Builds the sorted interval lists an interval report reads
    /// ([`SlowestOrders::interval`]); the run's lists wait for [`SlowestOrders::refresh`].
    pub fn refresh_interval(&mut self) {
        for s in 0..Stage::COUNT {
            self.current[s].sorted_into(&mut self.interval_view[s]);
        }
    }

    /// Builds the sorted lists reports read ([`SlowestOrders::interval`], `cumulative`).
    pub fn refresh(&mut self) {
        for s in 0..Stage::COUNT {
            self.current[s].sorted_into(&mut self.interval_view[s]);
            let mut all = self.earlier[s].clone();
            for o in &self.interval_view[s] {
                all.offer_order(o);
            }
            all.sorted_into(&mut self.cumulative_view[s]);
        }
    }

    /// The current interval's slowest at `stage`, slowest first (after `refresh`).
    pub fn interval(&self, stage: Stage) -> &[SlowOrder] {
        &self.interval_view[stage.index()]
    }

    /// The run's slowest at `stage`, slowest first (after `refresh`).
    pub fn cumulative(&self, stage: Stage) -> &[SlowOrder] {
        &self.cumulative_view[stage.index()]
    }

    /// Adds everything `other` kept, interval for interval: the lists of two halves of a
    /// run merged are the whole run's lists (which N is exact and order-independent).
    pub fn merge_from(&mut self, other: &SlowestOrders) {
        for (mine, theirs) in self
            .current
            .iter_mut()
            .zip(other.current.iter())
            .chain(self.earlier.iter_mut().zip(other.earlier.iter()))
        {
            for e in theirs.heap.iter() {
                mine.offer_order(&e.0);
            }
        }
    }

    /// Moves the current interval's orders at `stage` into `out` (any order; a worker of a
    /// sharded run hands them to the merger), emptying the list.
    pub fn take_interval(&mut self, stage: Stage, out: &mut Vec<SlowOrder>) {
        let t = &mut self.current[stage.index()];
        t.sorted_into(out);
        t.clear();
    }

    /// Swaps the current interval's lists with `other`'s (a two-stage run's hand-over:
    /// one side's are empty).
    pub fn swap_interval(&mut self, other: &mut SlowestOrders) {
        std::mem::swap(&mut self.current, &mut other.current);
    }

    /// Takes `other`'s earlier intervals (a two-stage run's end: this side's are empty).
    pub fn adopt_earlier(&mut self, other: &mut SlowestOrders) {
        std::mem::swap(&mut self.earlier, &mut other.earlier);
    }

    /// The current interval joins the earlier ones.
    pub fn reset_interval(&mut self) {
        for (earlier, current) in self.earlier.iter_mut().zip(self.current.iter_mut()) {
            for e in current.heap.iter() {
                earlier.offer_order(&e.0);
            }
            current.clear();
        }
    }

    /// Forgets everything (the live `r` key).
    pub fn reset_all(&mut self) {
        for t in self.current.iter_mut().chain(self.earlier.iter_mut()) {
            t.clear();
        }
        for v in self
            .interval_view
            .iter_mut()
            .chain(self.cumulative_view.iter_mut())
        {
            v.clear();
        }
    }
}

/// The slowest orders, read-only (after a close or a refresh).
#[derive(Clone, Copy)]
pub struct SlowestFigures<'a>(&'a SlowestOrders);

impl<'a> SlowestFigures<'a> {
    /// The run's slowest at `stage`, slowest first.
    pub fn cumulative(&self, stage: Stage) -> &'a [SlowOrder] {
        self.0.cumulative(stage)
    }

    /// The interval's slowest at `stage`, slowest first.
    pub fn interval(&self, stage: Stage) -> &'a [SlowOrder] {
        self.0.interval(stage)
    }

    /// How many are kept per stage (`--slowest`).
    pub fn capacity(&self) -> usize {
        self.0.capacity()
    }
}

impl Consumer for SlowestOrders {
    /// The interval's lists (a two-stage hand-over swaps them; a shard worker's go to the
    /// merger sorted, as [`SlowestOrders::take_interval`] gives them).
    type Interval = SlowestOrders;
    type Figures<'a> = SlowestFigures<'a>;

    fn figures(&self) -> SlowestFigures<'_> {
        SlowestFigures(self)
    }

    fn build(config: &ConsumerConfig) -> Self {
        SlowestOrders::new(config.slowest)
    }

    /// One comparison unless the order gets in; only then are its session's names looked up.
    #[inline]
    fn on_order(&mut self, event: &OrderEvent<'_>) {
        let l = &event.latency;
        if self.admits(l.stage, l.ns) {
            self.offer(
                l.stage,
                l.ns,
                l.request_type,
                l.session,
                l.request_ts_ns,
                l.late,
                event.order,
                &event.session(),
            );
        }
    }

    fn empty_interval(&self) -> SlowestOrders {
        SlowestOrders::new(self.cap)
    }

    /// The run's lists are built for summaries only ([`Consumer::refresh`]): interval
    /// reports read the interval's.
    fn close_interval(&mut self) {
        self.refresh_interval();
    }

    fn refresh(&mut self) {
        SlowestOrders::refresh(self);
    }

    fn reset_interval(&mut self) {
        SlowestOrders::reset_interval(self);
    }

    fn reset_all(&mut self) {
        SlowestOrders::reset_all(self);
    }

    fn merge_from(&mut self, other: &Self) {
        SlowestOrders::merge_from(self, other);
    }

    fn hand_over(&mut self, out: &mut SlowestOrders) {
        self.swap_interval(out);
    }

    fn take_over(&mut self, from: &mut SlowestOrders) {
        self.swap_interval(from);
    }

    fn absorb(&mut self, from: &mut SlowestOrders, global: &mut dyn FnMut(u64) -> GlobalSession) {
        let mut list = std::mem::take(&mut self.absorbing);
        let mut scratch = blank();
        for stage in Stage::EVERY {
            from.take_interval(stage, &mut list);
            for o in list.iter() {
                scratch.clone_from(o);
                let g = global(o.session);
                scratch.session = g.id;
                if !g.tracked {
                    // The one pipeline has no names for a session beyond the table.
                    scratch.sender_comp_id.clear();
                    scratch.target_comp_id.clear();
                    scratch.connection = None;
                }
                self.offer_order(&scratch);
            }
            list.clear();
        }
        self.absorbing = list;
    }

    fn adopt_folded(&mut self, reported: &mut Self) {
        self.adopt_earlier(reported);
    }
}

/// Copies FIX bytes into a reused string; a compound key's SOH separators become `|`.
fn set_lossy(out: &mut String, bytes: &[u8], key: bool) {
    out.clear();
    out.push_str(&String::from_utf8_lossy(bytes));
    if key && out.contains(fixscope_fix::SOH as char) {
        *out = out.replace(fixscope_fix::SOH as char, "|");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offer(s: &mut SlowestOrders, stage: Stage, ns: u64, key: &str) {
        if s.admits(stage, ns) {
            let order = OrderRef {
                key: key.as_bytes(),
                response_msg_type: b"8",
                exec_type: Some(b'0'),
                ord_status: Some(b'0'),
                response_ts_ns: ns.saturating_add(1000),
                breakdown: None,
            };
            s.offer(
                stage,
                ns,
                RequestType::NewOrder,
                1,
                1000,
                false,
                &order,
                &SessionRef::default(),
            );
        }
    }

    fn keys(list: &[SlowOrder]) -> Vec<(u64, &str)> {
        list.iter()
            .map(|o| (o.latency_ns, o.key.as_str()))
            .collect()
    }

    #[test]
    fn keeps_the_n_slowest_slowest_first_against_a_full_sort() {
        let mut s = SlowestOrders::new(5);
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut all = Vec::new();
        for i in 0..10_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let ns = x % 1_000_000;
            all.push(ns);
            offer(&mut s, Stage::Ack, ns, &format!("o{i}"));
        }
        s.refresh();
        all.sort_unstable_by(|a, b| b.cmp(a));
        let got: Vec<u64> = s
            .cumulative(Stage::Ack)
            .iter()
            .map(|o| o.latency_ns)
            .collect();
        assert_eq!(got, all[..5]);
        assert!(s.cumulative(Stage::Fill).is_empty());
    }

    #[test]
    fn cumulative_merges_intervals_and_interval_resets() {
        let mut s = SlowestOrders::new(2);
        offer(&mut s, Stage::Ack, 50, "a");
        offer(&mut s, Stage::Ack, 10, "b");
        offer(&mut s, Stage::Ack, 30, "c");
        s.refresh();
        assert_eq!(keys(s.interval(Stage::Ack)), [(50, "a"), (30, "c")]);
        s.reset_interval();
        offer(&mut s, Stage::Ack, 40, "d");
        offer(&mut s, Stage::Ack, 5, "e");
        s.refresh();
        assert_eq!(keys(s.interval(Stage::Ack)), [(40, "d"), (5, "e")]);
        assert_eq!(keys(s.cumulative(Stage::Ack)), [(50, "a"), (40, "d")]);
        s.reset_interval();
        s.refresh();
        assert!(s.interval(Stage::Ack).is_empty());
        assert_eq!(keys(s.cumulative(Stage::Ack)), [(50, "a"), (40, "d")]);
        s.reset_all();
        s.refresh();
        assert!(s.cumulative(Stage::Ack).is_empty());
    }

    #[test]
    fn equal_latencies_are_ordered_by_request_then_key_and_zero_disables() {
        let mut s = SlowestOrders::new(1);
        offer(&mut s, Stage::Fill, 7, "b");
        offer(&mut s, Stage::Fill, 7, "a");
        offer(&mut s, Stage::Fill, 7, "c");
        s.refresh();
        assert_eq!(keys(s.cumulative(Stage::Fill)), [(7, "a")]);

        let mut none = SlowestOrders::new(0);
        assert!(!none.admits(Stage::Fill, u64::MAX - 1));
        offer(&mut none, Stage::Fill, u64::MAX, "x");
        none.refresh();
        assert!(none.cumulative(Stage::Fill).is_empty());
    }

    #[test]
    fn compound_keys_read_with_bars_and_fields_are_copied() {
        let mut s = SlowestOrders::new(3);
        offer(&mut s, Stage::FirstResponse, 99, "A\x01B");
        s.refresh();
        let o = &s.cumulative(Stage::FirstResponse)[0];
        assert_eq!(o.key, "A|B");
        assert_eq!(o.response_msg_type, "8");
        assert_eq!((o.exec_type, o.ord_status), (Some('0'), Some('0')));
        assert_eq!((o.request_ts_ns, o.response_ts_ns), (1000, 1099));
    }

    #[test]
    fn merging_halves_equals_the_whole() {
        let mut whole = SlowestOrders::new(3);
        let mut halves = [SlowestOrders::new(3), SlowestOrders::new(3)];
        let lat = [50u64, 7, 50, 30, 99, 30, 30, 1, 64, 50];
        for round in 0..2 {
            for (i, ns) in lat.iter().enumerate() {
                let key = format!("k{round}{i}");
                offer(&mut whole, Stage::Ack, *ns, &key);
                offer(&mut halves[i % 2], Stage::Ack, *ns, &key);
            }
            if round == 0 {
                whole.reset_interval();
                halves.iter_mut().for_each(SlowestOrders::reset_interval);
            }
        }
        let [mut a, b] = halves;
        a.merge_from(&b);
        a.refresh();
        whole.refresh();
        assert_eq!(a.interval(Stage::Ack), whole.interval(Stage::Ack));
        assert_eq!(a.cumulative(Stage::Ack), whole.cumulative(Stage::Ack));
        assert_eq!(whole.cumulative(Stage::Ack).len(), 3);
    }
}
