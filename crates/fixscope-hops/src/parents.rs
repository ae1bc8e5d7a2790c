//! The parents of the last `--link-window` (and a while longer, waiting for their answer),
//! their children, and the indexes children and answers find them by.
//!
//! Parents come in time order, so they sit in a queue: the front ones are decided
//! (`settle`) once their window has passed and forgotten (`forget`) once they waited long
//! enough for their answer. A parent's id is its place in the run (`first_id` + index).

use std::collections::VecDeque;

// hashbrown's default hasher (foldhash), and lookups by borrowed ids (`IdRef`): a lookup
// per order message allocates nothing and hashes fast.
use hashbrown::{Equivalent, HashMap};

use super::chains::{Chain, ChainSplit};
use super::{hop_latency, order_ref, HopCounters, Kind, LinkRecord};
use fixscope_orders::consumer::OrderSink;
use fixscope_orders::correlate::{RequestType, Stage};

/// A session and ClOrdID borrowed: looks up `(u64, Vec<u8>)` keys without building one
/// (a tuple of `u64` and `&[u8]` hashes as the tuple of `u64` and `Vec<u8>` does).
#[derive(Hash)]
struct IdRef<'a>(u64, &'a [u8]);

impl Equivalent<(u64, Vec<u8>)> for IdRef<'_> {
    fn equivalent(&self, key: &(u64, Vec<u8>)) -> bool {
        self.0 == key.0 && self.1 == key.1.as_slice()
    }
}

/// A response of a leg's session, as the linker needs it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Answer {
    pub session: u64,
    pub kind: Kind,
    pub ts_ns: u64,
    /// The first response after the session's last capture hole (0: none): an order
    /// older than it may have had this answer in the hole.
    pub hole_after: u64,
}

struct Child {
    session: u64,
    id: Vec<u8>,
    ts_ns: u64,
    /// Its first response from the venue.
    venue_first: Option<u64>,
}

struct Parent {
    session: u64,
    request_type: RequestType,
    id: Vec<u8>,
    ts_ns: u64,
    /// Its link values, one after the other in `link_bytes`: (rule, hash, end). The indexes
    /// hold only the hashes; a candidate's own bytes are compared, so a hash collision
    /// never links.
    keys: Vec<(usize, u64, usize)>,
    link_bytes: Vec<u8>,
    /// A cancel's or replace's OrigClOrdID (41; empty for a new order).
    orig: Vec<u8>,
    /// The rule its first child linked by.
    rule: usize,
    children: Vec<Child>,
    ambiguous: bool,
    settled: bool,
    /// Its first response (time, kind).
    first_response: Option<(u64, Kind)>,
    /// The venue's earliest first response to one of its children (time, kind, child).
    venue_first: Option<(u64, Kind, usize)>,
    /// The parent's first response of the venue's kind after it.
    hop_back_ts: Option<u64>,
    /// Its first response came before any venue answer, or was of another kind.
    local: Option<bool>,
    /// A capture hole may hold an answer of this order: no `hop_back`, no `local_ack`.
    hole: bool,
    /// An answer stamped before what it answers (a capture that reordered them): the same.
    reversed: bool,
    hop_back_done: bool,
    decided: bool,
}

impl Parent {
    fn linked(&self) -> bool {
        !self.ambiguous && !self.children.is_empty()
    }
}

/// Children whose parents a later cancel or replace can still be chained to.
const MAX_LINEAGE: usize = 1 << 20;

/// Parents found for a child's link value.
pub(super) struct Found {
    pub in_window: Vec<u64>,
    /// A parent named it, but longer than the window before it.
    pub late: bool,
}

impl Found {
    /// Parent `id` (`p`) named by a child stamped `ts_ns`: a candidate inside the window,
    /// late beyond it. A parent stamped after the child cannot be its parent (its hop
    /// would be negative: a capture that reordered them).
    fn add(&mut self, id: u64, p: &Parent, ts_ns: u64, window_ns: u64) {
        if p.ts_ns > ts_ns {
            return;
        }
        if !p.settled && ts_ns - p.ts_ns <= window_ns {
            self.in_window.push(id);
        } else {
            self.late = true;
        }
    }
}

pub(super) struct ParentTable {
    queue: VecDeque<Parent>,
    first_id: u64,
    /// The first parent not settled yet.
    next_to_settle: u64,
    /// Parents by the hash of their link value, per rule.
    by_rule: Vec<HashMap<u64, Vec<u64>>>,
    hasher: hashbrown::DefaultHashBuilder,
    /// Parents by session and ClOrdID (their answers name them so).
    by_id: HashMap<(u64, Vec<u8>), u64>,
    /// Children by session and ClOrdID: (parent, index among its children).
    children: HashMap<(u64, Vec<u8>), (u64, usize)>,
    /// Cancel/replace parents by session and the OrigClOrdID (41) they name.
    by_orig: HashMap<(u64, Vec<u8>), Vec<u64>>,
    /// The parent of each child of a linked parent forgotten since (session and ClOrdID
    /// both sides), for the cancels and replaces that come later: the last
    /// [`MAX_LINEAGE`] children.
    lineage: HashMap<(u64, Vec<u8>), (u64, Vec<u8>)>,
    lineage_order: VecDeque<(u64, Vec<u8>)>,
    children_pending: u64,
    /// The chains of the orders whose hops add up to their `client_rtt`.
    pub(super) chains: ChainSplit,
    /// The rules' names, by index (the chains name theirs).
    rule_names: Vec<String>,
    /// `--records`: the links of the parents forgotten since they were last taken.
    pub(super) link_records: Option<Vec<LinkRecord>>,
}

impl ParentTable {
    pub(super) fn new(rules: usize, rule_names: Vec<String>) -> Self {
        ParentTable {
            queue: VecDeque::new(),
            first_id: 0,
            next_to_settle: 0,
            by_rule: (0..rules).map(|_| HashMap::default()).collect(),
            hasher: hashbrown::DefaultHashBuilder::default(),
            by_id: HashMap::default(),
            children: HashMap::default(),
            by_orig: HashMap::default(),
            lineage: HashMap::default(),
            lineage_order: VecDeque::new(),
            children_pending: 0,
            chains: ChainSplit::default(),
            rule_names,
            link_records: None,
        }
    }

    fn get(&self, id: u64) -> Option<&Parent> {
        id.checked_sub(self.first_id)
            .and_then(|i| self.queue.get(i as usize))
    }

    fn get_mut(&mut self, id: u64) -> Option<&mut Parent> {
        id.checked_sub(self.first_id)
            .and_then(|i| self.queue.get_mut(i as usize))
    }

    /// A parent request: its id.
    pub(super) fn open(
        &mut self,
        session: u64,
        t: RequestType,
        cl_ord_id: &[u8],
        orig: &[u8],
        ts_ns: u64,
    ) -> u64 {
        let id = self.first_id + self.queue.len() as u64;
        self.queue.push_back(Parent {
            session,
            request_type: t,
            id: cl_ord_id.to_vec(),
            ts_ns,
            keys: Vec::new(),
            link_bytes: Vec::new(),
            orig: Vec::new(),
            rule: 0,
            children: Vec::new(),
            ambiguous: false,
            settled: false,
            first_response: None,
            venue_first: None,
            hop_back_ts: None,
            local: None,
            hole: false,
            reversed: false,
            hop_back_done: false,
            decided: false,
        });
        if !cl_ord_id.is_empty() {
            self.by_id.insert((session, cl_ord_id.to_vec()), id);
        }
        if !orig.is_empty() {
            self.by_orig
                .entry((session, orig.to_vec()))
                .or_default()
                .push(id);
            if let Some(p) = self.get_mut(id) {
                p.orig = orig.to_vec();
            }
        }
        id
    }

    /// The parent `id` has `value` under rule `rule`.
    pub(super) fn index(&mut self, rule: usize, value: &[u8], id: u64) {
        use std::hash::BuildHasher;
        let hash = self.hasher.hash_one(value);
        self.by_rule[rule].entry(hash).or_default().push(id);
        if let Some(p) = self.get_mut(id) {
            p.link_bytes.extend_from_slice(value);
            p.keys.push((rule, hash, p.link_bytes.len()));
        }
    }

    /// Parent `p`'s link value under `rule` (empty when it has none).
    fn link_value(p: &Parent, rule: usize) -> Option<&[u8]> {
        let mut start = 0;
        for &(r, _, end) in &p.keys {
            if r == rule {
                return Some(&p.link_bytes[start..end]);
            }
            start = end;
        }
        None
    }

    /// The parents a child stamped `ts_ns` names by `value` under rule `rule`.
    pub(super) fn candidates(
        &self,
        rule: usize,
        value: &[u8],
        ts_ns: u64,
        window_ns: u64,
    ) -> Found {
        let mut found = Found {
            in_window: Vec::new(),
            late: false,
        };
        use std::hash::BuildHasher;
        let hash = self.hasher.hash_one(value);
        for &id in self.by_rule[rule].get(&hash).into_iter().flatten() {
            let Some(p) = self.get(id) else { continue };
            if Self::link_value(p, rule) != Some(value) {
                continue;
            }
            found.add(id, p, ts_ns, window_ns);
        }
        found
    }

    /// Links a child to parent `id` (decided when the parent's window ends). A second child
    /// with the child's id makes the parent ambiguous: which one was its order is a guess.
    pub(super) fn link(
        &mut self,
        id: u64,
        session: u64,
        cl_ord_id: &[u8],
        ts_ns: u64,
        rule: usize,
        _t: RequestType,
    ) {
        let Some(p) = self.get_mut(id) else { return };
        if p.children.is_empty() {
            p.rule = rule;
        }
        if p.children
            .iter()
            .any(|c| c.session == session && c.id == cl_ord_id)
        {
            p.ambiguous = true;
        }
        let index = p.children.len();
        p.children.push(Child {
            session,
            id: cl_ord_id.to_vec(),
            ts_ns,
            venue_first: None,
        });
        self.children_pending += 1;
        if !cl_ord_id.is_empty() {
            self.children
                .insert((session, cl_ord_id.to_vec()), (id, index));
        }
    }

    /// The cancel/replace parents a cancel/replace child stamped `ts_ns` on `session`
    /// chains to: its 41 names a child of parent P (linked now, or remembered), and they
    /// name P in their 41, on P's session.
    pub(super) fn chain_candidates(
        &self,
        session: u64,
        orig: &[u8],
        ts_ns: u64,
        window_ns: u64,
    ) -> Found {
        let mut found = Found {
            in_window: Vec::new(),
            late: false,
        };
        let named = match self.children.get(&IdRef(session, orig)) {
            Some(&(pid, _)) => self.get(pid).map(|p| (p.session, p.id.as_slice())),
            None => self
                .lineage
                .get(&IdRef(session, orig))
                .map(|(s, id)| (*s, id.as_slice())),
        };
        let Some((parent_session, parent_id)) = named else {
            return found;
        };
        for &id in self
            .by_orig
            .get(&IdRef(parent_session, parent_id))
            .into_iter()
            .flatten()
        {
            let Some(p) = self.get(id) else { continue };
            found.add(id, p, ts_ns, window_ns);
        }
        found
    }

    pub(super) fn mark_ambiguous(&mut self, id: u64) {
        if let Some(p) = self.get_mut(id) {
            p.ambiguous = true;
        }
    }

    /// A parent's answer: its parent's id when something about it was learnt.
    pub(super) fn parent_answered(&mut self, cl_ord_id: &[u8], a: Answer) -> Option<u64> {
        let &id = self.by_id.get(&IdRef(a.session, cl_ord_id))?;
        let p = self.get_mut(id)?;
        if a.ts_ns < p.ts_ns {
            // Stamped before its request: no stretch of this order is measured.
            p.reversed = true;
            return Some(id);
        }
        let before_hole = p.ts_ns < a.hole_after;
        if p.first_response.is_none() {
            p.hole |= before_hole;
            p.first_response = Some((a.ts_ns, a.kind));
            // Answers come in time order: a first response before any venue answer was the
            // router's own; after one, it answers the venue only if it is of its kind.
            p.local = Some(match p.venue_first {
                None => true,
                Some((_, kind, _)) => kind != a.kind,
            });
        }
        if let (Some((venue_ts, kind, _)), None) = (p.venue_first, p.hop_back_ts) {
            if kind == a.kind && a.ts_ns < venue_ts {
                p.reversed = true;
            } else if kind == a.kind {
                // A hole after the venue's answer may have held the router's.
                p.hole |= a.hole_after > venue_ts;
                p.hop_back_ts = Some(a.ts_ns);
            }
        }
        Some(id)
    }

    /// A venue's answer to a child: its parent's id when something was learnt.
    pub(super) fn child_answered(&mut self, cl_ord_id: &[u8], a: Answer) -> Option<u64> {
        let &(id, index) = self.children.get(&IdRef(a.session, cl_ord_id))?;
        let p = self.get_mut(id)?;
        let child = p.children.get_mut(index)?;
        if child.venue_first.is_some() {
            return None;
        }
        if a.ts_ns < child.ts_ns {
            p.reversed = true;
            return Some(id);
        }
        child.venue_first = Some(a.ts_ns);
        p.hole |= child.ts_ns < a.hole_after;
        if p.venue_first.is_none() {
            p.venue_first = Some((a.ts_ns, a.kind, index));
        }
        Some(id)
    }

    /// Records what parent `id` has ready: `hop_back` once it is settled and both ends
    /// are known; whether its first response was the router's answer to the venue.
    pub(super) fn emit_ready(
        &mut self,
        id: u64,
        counters: &mut HopCounters,
        sink: &mut dyn OrderSink,
    ) {
        let Some(p) = self.get_mut(id) else { return };
        if !p.settled || !p.linked() {
            return;
        }
        if p.hole || p.reversed {
            if !p.decided {
                p.decided = true;
                p.hop_back_done = true;
                if p.hole {
                    counters.hops_after_capture_hole += 1;
                } else {
                    counters.hops_time_reversed += 1;
                }
            }
            return;
        }
        if let (false, Some(back), Some((venue_ts, kind, _))) =
            (p.hop_back_done, p.hop_back_ts, p.venue_first)
        {
            p.hop_back_done = true;
            let latency = hop_latency(
                Stage::HopBack,
                p.request_type,
                p.session,
                back - venue_ts,
                venue_ts,
            );
            let msg_type: &[u8] = if kind == super::CANCEL_REJECT {
                b"9"
            } else {
                b"8"
            };
            let exec = (kind != super::CANCEL_REJECT).then_some(kind as u8);
            sink.record_order(latency, &order_ref(&p.id, msg_type, exec, back));
        }
        if let (false, Some(local)) = (p.decided, p.local) {
            p.decided = true;
            if local {
                counters.local_ack += 1;
            } else if let (Some((first, _)), Some(back), Some((venue_ts, _, c))) =
                (p.first_response, p.hop_back_ts, p.venue_first)
            {
                // Not local: the first response is the answer to the venue's (`back`).
                debug_assert_eq!(first, back);
                let (child_ts, rule) = (p.children[c].ts_ns, p.rule);
                let mut chain = Chain {
                    key: String::from_utf8_lossy(&p.id).into_owned(),
                    rule: String::new(),
                    session: p.session,
                    request_ts_ns: p.ts_ns,
                    client_rtt_ns: first - p.ts_ns,
                    hop_out_ns: child_ts - p.ts_ns,
                    venue_rtt_ns: venue_ts - child_ts,
                    hop_back_ns: back - venue_ts,
                };
                chain.rule = self.rule_names.get(rule).cloned().unwrap_or_default();
                self.chains.add(chain);
            }
        }
    }

    /// Decides every parent stamped before `before`: linked (its `hop_out`s recorded),
    /// unlinked or ambiguous. `linked(rule, children)` is told of each linked one.
    pub(super) fn settle(
        &mut self,
        before: u64,
        counters: &mut HopCounters,
        sink: &mut dyn OrderSink,
        mut linked: impl FnMut(usize, usize),
    ) {
        loop {
            let id = self.next_to_settle;
            let Some(p) = self.get_mut(id) else { break };
            if p.ts_ns >= before {
                break;
            }
            p.settled = true;
            let n = p.children.len() as u64;
            if p.ambiguous {
                counters.ambiguous += 1;
                counters.ambiguous_child += n;
            } else if n == 0 {
                counters.unlinked_parent += 1;
            } else {
                counters.linked += 1;
                counters.linked_children += n;
                if n > 1 {
                    counters.fanout_parents += 1;
                }
                linked(p.rule, n as usize);
                for c in &p.children {
                    let latency = hop_latency(
                        Stage::HopOut,
                        p.request_type,
                        p.session,
                        c.ts_ns - p.ts_ns,
                        p.ts_ns,
                    );
                    sink.record_order(latency, &order_ref(&p.id, b"", None, c.ts_ns));
                }
            }
            self.next_to_settle += 1;
            self.children_pending -= n;
            self.emit_ready(id, counters, sink);
        }
    }

    /// Forgets the settled parents stamped before `before` (and their children).
    pub(super) fn forget(&mut self, before: u64, _counters: &mut HopCounters) {
        while let Some(p) = self.queue.front() {
            if p.ts_ns >= before || !p.settled {
                break;
            }
            let p = self.queue.pop_front().expect("front exists");
            let id = self.first_id;
            self.first_id += 1;
            for &(rule, hash, _) in &p.keys {
                if let Some(ids) = self.by_rule[rule].get_mut(&hash) {
                    ids.retain(|&i| i != id);
                    if ids.is_empty() {
                        self.by_rule[rule].remove(&hash);
                    }
                }
            }
            if !p.orig.is_empty() {
                let key = (p.session, p.orig.clone());
                if let Some(ids) = self.by_orig.get_mut(&key) {
                    ids.retain(|&i| i != id);
                    if ids.is_empty() {
                        self.by_orig.remove(&key);
                    }
                }
            }
            let linked = p.linked();
            if linked {
                if let Some(out) = self.link_records.as_mut() {
                    keep_links(&p, &self.rule_names, out);
                }
            }
            let key = (p.session, p.id);
            if self.by_id.get(&key) == Some(&id) {
                self.by_id.remove(&key);
            }
            for c in p.children {
                let child = (c.session, c.id);
                if self.children.get(&child).map(|&(pid, _)| pid) == Some(id) {
                    self.children.remove(&child);
                }
                if linked && !child.1.is_empty() {
                    self.remember(child, key.clone());
                }
            }
        }
    }

    /// A forgotten linked parent's child, for later cancels and replaces naming it.
    fn remember(&mut self, child: (u64, Vec<u8>), parent: (u64, Vec<u8>)) {
        if self.lineage_order.len() >= MAX_LINEAGE {
            if let Some(old) = self.lineage_order.pop_front() {
                self.lineage.remove(&old);
            }
        }
        if self.lineage.insert(child.clone(), parent).is_none() {
            self.lineage_order.push_back(child);
        }
    }

    /// Parents not settled yet, and their children.
    pub(super) fn pending(&self) -> (u64, u64) {
        let settled = self.next_to_settle - self.first_id;
        (self.queue.len() as u64 - settled, self.children_pending)
    }
}

/// A forgotten linked parent's links, one per child (`--records`).
fn keep_links(p: &Parent, rule_names: &[String], out: &mut Vec<LinkRecord>) {
    let measured = !(p.hole || p.reversed) && p.local == Some(false);
    let hop_back_ns = match (measured, p.hop_back_ts, p.venue_first) {
        (true, Some(back), Some((venue_ts, _, _))) => back.checked_sub(venue_ts),
        _ => None,
    };
    for c in &p.children {
        out.push(LinkRecord {
            parent_session: p.session,
            parent_key: p.id.clone(),
            parent_request_type: p.request_type,
            parent_ts_ns: p.ts_ns,
            parent_first_response_ns: p.first_response.map(|(t, _)| t),
            child_session: c.session,
            child_key: c.id.clone(),
            child_ts_ns: c.ts_ns,
            child_venue_first_ns: c.venue_first,
            rule: rule_names.get(p.rule).cloned().unwrap_or_default(),
            children: p.children.len() as u32,
            hop_back_ns,
            local_ack: if p.hole || p.reversed { None } else { p.local },
        });
    }
}
