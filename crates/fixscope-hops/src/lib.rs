//! Hop by hop (`--leg`, `--link`): a router's latency across its FIX sessions.
//!
//! A router takes a client's order (the **parent**, a request on an `up` leg) and sends its
//! own orders (the **children**, requests on a `down` leg) to venues. Every leg is stamped
//! by the same clock (one host, one tap), so the chain of one order splits exactly:
//!
//! ```text
//!  parent in ──hop_out──▶ child out ──venue_rtt──▶ venue's first response in ──hop_back──▶ parent's answer out
//!  └──────────────────────────────────────── client_rtt ─────────────────────────────────────────────────┘
//! ```
//!
//! - `venue_rtt` and `client_rtt` are the `first_response` of children and parents (the
//!   router records them for every order, linked or not; see `pipeline/routing.rs`).
//! - A child is linked to its parent by a [`LinkRule`] (`--link`), among the parents of the
//!   last `--link-window`: exactly one candidate links; two are `ambiguous` — never guessed.
//!   A parent's links are decided once its window has passed (no child can come later):
//!   then its `hop_out` (one per child) is recorded, and its `hop_back` (the venue's
//!   earliest first response to one of its children → the parent's first response of the
//!   same ExecType after it) when both are known.
//! - For each linked parent, `client_rtt == hop_out + venue_rtt + hop_back` exactly (the
//!   same timestamps) when its first response is the router's answer to the venue; a
//!   parent answered otherwise first (a router that acks before it routes) is `local_ack`.
//! - `tick_to_order`: a child no parent named (the host originated it) after the last
//!   market-data update (`md` leg, 35=W/X) of its symbol within the window.
//!
//! Timing rule as everywhere: a request's last byte, a response's first byte; a market-data
//! update's last byte (the host can act on it only then).

mod chains;
mod discover;
mod legs;
mod market_data;
mod parents;
mod rules;
#[cfg(test)]
mod tests;

use std::collections::HashMap;

pub use chains::{Band, Chain};
pub use discover::{Discovery, DISCOVER_CHILDREN};
pub use fixscope_model::counters::hops::{counters_if_present, HopCounters};
/// A link's row (`--records`' links table): the order vocabulary's (fixscope-model).
pub use fixscope_model::order::LinkRecord;
pub use legs::{Leg, LegKind, Legs};
pub use rules::{LinkRule, LinkSpec};

use fixscope_fix::message::Fields;
use fixscope_fix::tag;
use fixscope_model::order::{Latency, OrderRef, NO_GROUPS};
use fixscope_model::segment::Direction;
use fixscope_orders::consumer::OrderSink;
use fixscope_orders::correlate::{RequestType, Stage};
use market_data::MarketData;
use parents::{Answer, ParentTable};

/// Everything hop linking is tuned by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HopConfig {
    pub legs: Legs,
    pub link: LinkSpec,
    /// `--link-window`: a child links to parents at most this much older; a child's
    /// symbol's market-data update counts at most this much before it.
    pub window_ns: u64,
    /// How long after its window a linked parent still waits for its `hop_back` (the
    /// run's `-t`: a venue answering later is a timed-out order anyway).
    pub answer_wait_ns: u64,
}

/// What a response says, for matching the venue's answer with the router's: the ExecType
/// of an ExecutionReport, or a cancel reject.
type Kind = u16;
const CANCEL_REJECT: Kind = 0x100;

fn kind_of(msg_type: &[u8], exec_type: Option<u8>) -> Option<Kind> {
    match msg_type {
        b"8" => exec_type.map(Kind::from),
        b"9" => Some(CANCEL_REJECT),
        _ => None,
    }
}

/// What linked the run's parents (the summary's `links`).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct LinkFigures {
    /// Linked parents per rule, in `--link`'s order (the rule of a parent's first child).
    pub rules: Vec<(String, u64)>,
    /// Linked parents by their number of children (index 0: one child).
    pub children_per_parent: Vec<u64>,
    /// Per band of `client_rtt`, the mean of each hop (orders whose hops add up).
    pub bands: Vec<Band>,
    /// The slowest such orders by `client_rtt`, with their hops.
    pub slowest: Vec<Chain>,
}

/// The hop linker: fed every order message of the legs' sessions, it records the hop
/// stages through the [`OrderSink`] and keeps the ledger.
pub struct HopLinker {
    config: HopConfig,
    parents: ParentTable,
    market_data: MarketData,
    /// Per session: when the first response after a capture hole in its responses came
    /// (`u64::MAX` while that response has not come yet).
    response_holes: HashMap<u64, u64>,
    pub counters: HopCounters,
    /// Children linked, per rule (in `--link`'s order).
    pub linked_by_rule: Vec<(LinkRule, u64)>,
    /// Linked parents by their number of children (index 0: one child).
    pub children_per_parent: Vec<u64>,
    /// `--link discover`: rules proposed from the traffic, nothing linked.
    pub discovery: Option<Discovery>,
    value: Vec<u8>,
    id: Vec<u8>,
}

impl HopLinker {
    pub fn new(config: HopConfig) -> Self {
        let rules = config.link.rules().to_vec();
        HopLinker {
            parents: ParentTable::new(
                rules.len(),
                rules
                    .iter()
                    .chain([&LinkRule::Chain])
                    .map(|r| r.to_string())
                    .collect(),
            ),
            linked_by_rule: rules
                .iter()
                .copied()
                .chain([LinkRule::Chain])
                .map(|r| (r, 0))
                .collect(),
            market_data: MarketData::default(),
            response_holes: HashMap::new(),
            counters: HopCounters::default(),
            children_per_parent: Vec::new(),
            value: Vec::new(),
            id: Vec::new(),
            discovery: (config.link == LinkSpec::Discover)
                .then(|| Discovery::new(config.window_ns)),
            config,
        }
    }

    pub fn config(&self) -> &HopConfig {
        &self.config
    }

    /// What linked the parents so far.
    pub fn figures(&self) -> LinkFigures {
        LinkFigures {
            rules: self
                .linked_by_rule
                .iter()
                .map(|(r, n)| (r.to_string(), *n))
                .collect(),
            children_per_parent: self.children_per_parent.clone(),
            bands: self.parents.chains.bands(),
            slowest: self.parents.chains.slowest(),
        }
    }

    /// One order message (a request or response the session layer passed, replays never)
    /// or market-data message of a leg's session.
    pub fn on_message(
        &mut self,
        leg: LegKind,
        session: u64,
        direction: Direction,
        facts: &fixscope_orders::correlate::MessageFacts<'_>,
        msg: &fixscope_fix::framing::FramedMessage<'_>,
        sink: &mut dyn OrderSink,
    ) {
        let (msg_type, exec_type) = (facts.msg_type, facts.exec_type);
        self.expire(msg.last_byte_ts_ns, sink);
        match (leg, direction) {
            (LegKind::Md, Direction::Response) if matches!(msg_type, b"W" | b"X") => {
                self.market_data.update(msg.bytes, msg.last_byte_ts_ns);
            }
            // A list's or a cross's orders are not linked (one ClOrdID per message here).
            (LegKind::Up, Direction::Request) => {
                if let Some(t) = single_order_request(msg_type) {
                    self.parent(session, t, msg.bytes, msg.last_byte_ts_ns);
                }
            }
            (LegKind::Down, Direction::Request) => {
                if let Some(t) = single_order_request(msg_type) {
                    self.child(session, t, msg.bytes, msg.last_byte_ts_ns, sink);
                }
            }
            (LegKind::Up | LegKind::Down, Direction::Response) => {
                if let Some(kind) = kind_of(msg_type, exec_type) {
                    self.response(leg, session, kind, msg.bytes, msg.first_byte_ts_ns, sink);
                }
            }
            _ => {}
        }
    }

    fn parent(&mut self, session: u64, t: RequestType, msg: &[u8], ts_ns: u64) {
        self.counters.parents += 1;
        if let Some(d) = self.discovery.as_mut() {
            d.parent(msg, ts_ns);
        }
        if !read_id(msg, &mut self.id) {
            // No ClOrdID: its answers cannot be found; counted unlinked when its window ends.
            self.id.clear();
        }
        let orig = match t.amends() {
            false => None,
            true => rules::find(msg, tag::ORIG_CL_ORD_ID),
        };
        let id = self
            .parents
            .open(session, t, &self.id, orig.unwrap_or_default(), ts_ns);
        for (i, rule) in self.config.link.rules().iter().enumerate() {
            if rule.parent_value(msg, &mut self.value) {
                self.parents.index(i, &self.value, id);
            }
        }
    }

    fn child(
        &mut self,
        session: u64,
        t: RequestType,
        msg: &[u8],
        ts_ns: u64,
        sink: &mut dyn OrderSink,
    ) {
        self.counters.children += 1;
        if let Some(d) = self.discovery.as_mut() {
            d.child(msg, ts_ns);
        }
        let has_id = read_id(msg, &mut self.id);
        let window = self.config.window_ns;
        let mut late = false;
        for (i, rule) in self.config.link.rules().iter().enumerate() {
            if !rule.child_value(msg, &mut self.value) {
                continue;
            }
            let found = self.parents.candidates(i, &self.value, ts_ns, window);
            late |= found.late;
            match found.in_window.as_slice() {
                [] => continue,
                [one] => {
                    if !has_id {
                        self.id.clear();
                    }
                    self.parents.link(*one, session, &self.id, ts_ns, i, t);
                }
                several => {
                    for &p in several {
                        self.parents.mark_ambiguous(p);
                    }
                    self.counters.ambiguous_child += 1;
                }
            }
            return;
        }
        // A cancel or replace no rule linked: through the order it names (its 41).
        if t.amends() {
            if let Some(orig) = rules::find(msg, tag::ORIG_CL_ORD_ID) {
                let found = self.parents.chain_candidates(session, orig, ts_ns, window);
                late |= found.late;
                let chain = self.config.link.rules().len();
                match found.in_window.as_slice() {
                    [] => {}
                    [one] => {
                        if !has_id {
                            self.id.clear();
                        }
                        self.parents.link(*one, session, &self.id, ts_ns, chain, t);
                        return;
                    }
                    several => {
                        for &p in several {
                            self.parents.mark_ambiguous(p);
                        }
                        self.counters.ambiguous_child += 1;
                        return;
                    }
                }
            }
        }
        if late {
            self.counters.late_link += 1;
            return;
        }
        self.counters.unlinked_child += 1;
        if !self.config.legs.has(LegKind::Md) {
            return;
        }
        let symbol = Fields::new(msg)
            .find(|&(t, _)| t == tag::SYMBOL)
            .map(|(_, v)| v);
        match symbol.and_then(|s| self.market_data.last_update(s)) {
            Some(tick) if tick <= ts_ns && ts_ns - tick <= window => {
                let latency = hop_latency(Stage::TickToOrder, t, session, ts_ns - tick, tick);
                let id = self.id.clone();
                sink.record_order(latency, &order_ref(&id, b"", None, ts_ns));
            }
            _ => self.counters.tick_missing += 1,
        }
    }

    fn response(
        &mut self,
        leg: LegKind,
        session: u64,
        kind: Kind,
        msg: &[u8],
        ts_ns: u64,
        sink: &mut dyn OrderSink,
    ) {
        let hole_after = match self.response_holes.get_mut(&session) {
            Some(h) => {
                if *h == u64::MAX {
                    *h = ts_ns;
                }
                *h
            }
            None => 0,
        };
        if !read_id(msg, &mut self.id) {
            return;
        }
        let answer = Answer {
            session,
            kind,
            ts_ns,
            hole_after,
        };
        let done = match leg {
            LegKind::Up => self.parents.parent_answered(&self.id, answer),
            LegKind::Down => self.parents.child_answered(&self.id, answer),
            LegKind::Md => None,
        };
        if let Some(p) = done {
            self.parents.emit_ready(p, &mut self.counters, sink);
        }
    }

    /// A hole in a session's responses: an answer may have been in it (the orders waiting
    /// across it get no `hop_back` they had not got yet).
    pub fn capture_hole(&mut self, session: u64, direction: Direction) {
        if direction == Direction::Response {
            self.response_holes.insert(session, u64::MAX);
        }
    }

    /// Time moved to `now_ns`: parents whose window has passed are decided, and those that
    /// waited long enough for their answer forgotten.
    pub fn expire(&mut self, now_ns: u64, sink: &mut dyn OrderSink) {
        let settle_before = now_ns.saturating_sub(self.config.window_ns);
        let forget_before = settle_before.saturating_sub(self.config.answer_wait_ns);
        self.settle(settle_before, forget_before, sink);
    }

    /// `--records`: keep a [`LinkRecord`] per link as its parent is forgotten.
    pub fn keep_link_records(&mut self) {
        self.parents.link_records.get_or_insert_with(Vec::new);
    }

    /// The links kept since the last call (swapped into `out`, which is cleared first).
    pub fn take_link_records(&mut self, out: &mut Vec<LinkRecord>) {
        out.clear();
        if let Some(kept) = self.parents.link_records.as_mut() {
            std::mem::swap(kept, out);
        }
    }

    /// The end of the run: every parent decided and forgotten.
    pub fn finish(&mut self, sink: &mut dyn OrderSink) {
        self.settle(u64::MAX, u64::MAX, sink);
    }

    fn settle(&mut self, settle_before: u64, forget_before: u64, sink: &mut dyn OrderSink) {
        let HopLinker {
            parents,
            counters,
            linked_by_rule,
            children_per_parent,
            ..
        } = self;
        parents.settle(settle_before, counters, sink, |rule, children| {
            linked_by_rule[rule].1 += 1;
            if children > 0 {
                if children_per_parent.len() < children {
                    children_per_parent.resize(children, 0);
                }
                children_per_parent[children - 1] += 1;
            }
        });
        parents.forget(forget_before, counters);
        let (p, c) = parents.pending();
        counters.parents_pending = p;
        counters.children_pending = c;
    }
}

/// ClOrdID (11) of `msg` into `out`.
fn read_id(msg: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    match Fields::new(msg).find(|&(t, _)| t == tag::CL_ORD_ID) {
        Some((_, v)) if !v.is_empty() => {
            out.extend_from_slice(v);
            true
        }
        _ => false,
    }
}

/// The request type of a request carrying one order (D, F, G, AB): a list's or a cross's
/// several orders are not linked.
fn single_order_request(msg_type: &[u8]) -> Option<RequestType> {
    RequestType::from_msg_type(msg_type).filter(|t| t.has_order_group().is_none())
}

fn hop_latency(stage: Stage, t: RequestType, session: u64, ns: u64, from_ns: u64) -> Latency {
    Latency {
        stage,
        request_type: t,
        session,
        ns,
        late: false,
        request_ts_ns: from_ns,
        request_seq: 0,
        groups: NO_GROUPS,
    }
}

fn order_ref<'a>(
    key: &'a [u8],
    msg_type: &'a [u8],
    exec_type: Option<u8>,
    ts_ns: u64,
) -> OrderRef<'a> {
    OrderRef {
        key,
        response_msg_type: msg_type,
        exec_type,
        ord_status: None,
        response_ts_ns: ts_ns,
        breakdown: None,
    }
}
