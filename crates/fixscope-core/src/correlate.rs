//! Matching responses to the requests they answer.
//!
//! A request (NewOrderSingle D, OrderCancelRequest F, OrderCancelReplaceRequest G) is
//! remembered under its correlation key (ClOrdID 11 by default, `--key` for others) within
//! its session (the TCP connection), so equal ClOrdIDs on two sessions never mix. Responses
//! (ExecutionReport 8, OrderCancelReject 9) with the same key produce latencies per stage:
//!
//! | stage            | from            | to                                                      |
//! |------------------|-----------------|---------------------------------------------------------|
//! | `first_response` | request         | first 35=8/35=9 for the key                             |
//! | `ack`            | request         | first acknowledgement: 150=0/A/4/5/6/E, a reject 150=8, or 35=9 |
//! | `fill`           | request         | first execution: 150=F, or 150=1/2 (FIX 4.2 and older)  |
//! | `ack_to_fill`    | the ack         | that first execution                                    |
//!
//! A request stays pending until its order reaches a terminal OrdStatus (39=2/3/4/8/C) or
//! 35=9 answers it, so partial fills after the first are matched rather than counted as
//! unmatched. Pending requests are bounded in number (oldest evicted first) and in age
//! (time-to-live); the table is a slab plus an index, so steady state allocates nothing.

use std::collections::VecDeque;
use std::hash::{BuildHasher, Hash, Hasher};

use hashbrown::HashTable;

use crate::fix::{tag, SOH};

/// The latency stages fixscope measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stage {
    FirstResponse,
    Ack,
    Fill,
    AckToFill,
}

impl Stage {
    pub const ALL: [Stage; 4] = [
        Stage::FirstResponse,
        Stage::Ack,
        Stage::Fill,
        Stage::AckToFill,
    ];

    /// The name used in reports and the JSON schema.
    pub fn name(self) -> &'static str {
        match self {
            Stage::FirstResponse => "first_response",
            Stage::Ack => "ack",
            Stage::Fill => "fill",
            Stage::AckToFill => "ack_to_fill",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

/// Request message types broken down in reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RequestType {
    NewOrder,
    Cancel,
    Replace,
}

impl RequestType {
    pub const ALL: [RequestType; 3] = [
        RequestType::NewOrder,
        RequestType::Cancel,
        RequestType::Replace,
    ];

    pub fn from_msg_type(msg_type: &[u8]) -> Option<Self> {
        match msg_type {
            b"D" => Some(RequestType::NewOrder),
            b"F" => Some(RequestType::Cancel),
            b"G" => Some(RequestType::Replace),
            _ => None,
        }
    }

    /// The FIX MsgType (35) value.
    pub fn msg_type(self) -> &'static str {
        match self {
            RequestType::NewOrder => "D",
            RequestType::Cancel => "F",
            RequestType::Replace => "G",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

/// Which tags form the correlation key (`--key 11`, `--key 41`, `--key 11,1`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeySpec {
    tags: Vec<u32>,
}

impl Default for KeySpec {
    fn default() -> Self {
        KeySpec {
            tags: vec![tag::CL_ORD_ID],
        }
    }
}

impl KeySpec {
    /// Parses a comma-separated list of tag numbers.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut tags = Vec::new();
        for part in s.split(',').map(str::trim) {
            match part.parse::<u32>() {
                Ok(t) if t > 0 => {
                    if tags.contains(&t) {
                        return Err(format!("tag {t} appears twice in the key"));
                    }
                    tags.push(t)
                }
                _ => return Err(format!("'{part}' is not a FIX tag number")),
            }
        }
        if tags.is_empty() || tags.len() > 8 {
            return Err("a key has 1 to 8 tags".to_string());
        }
        Ok(KeySpec { tags })
    }

    pub fn tags(&self) -> &[u32] {
        &self.tags
    }
}

/// What correlation needs to know about one FIX message, extracted in one pass.
#[derive(Debug, Default)]
pub struct MessageFacts<'a> {
    pub msg_type: &'a [u8],
    pub exec_type: Option<u8>,
    pub ord_status: Option<u8>,
    pub sender_comp_id: &'a [u8],
    pub target_comp_id: &'a [u8],
    /// Values of the key tags, in key order (empty when absent).
    key_parts: [&'a [u8]; 8],
    key_found: u8,
}

impl<'a> MessageFacts<'a> {
    /// Reads the fields correlation needs from a framed message, stopping as soon as it
    /// has them (ExecutionReports carry 20+ fields; we need four). What is needed depends on
    /// the MsgType, which FIX puts third, so the check is a bitmask compare per field.
    #[inline]
    pub fn extract(message: &'a [u8], key: &KeySpec) -> Self {
        const TYPE: u8 = 1;
        const KEY: u8 = 2;
        const EXEC: u8 = 4;
        const STATUS: u8 = 8;
        const SENDER: u8 = 16;
        const TARGET: u8 = 32;
        let mut facts = MessageFacts::default();
        let key_len = key.tags.len() as u8;
        let mut found = 0u8;
        let mut needed = TYPE;
        for (t, value) in crate::fix::message::Fields::body(message) {
            match t {
                tag::MSG_TYPE => {
                    facts.msg_type = value;
                    found |= TYPE;
                    needed = match value {
                        b"D" | b"F" | b"G" => TYPE | KEY | SENDER | TARGET,
                        b"8" => TYPE | KEY | EXEC | STATUS,
                        b"9" => TYPE | KEY | STATUS,
                        // Session-level and other messages: only the session's names.
                        _ => TYPE | SENDER | TARGET,
                    };
                }
                tag::EXEC_TYPE => {
                    facts.exec_type = value.first().copied();
                    found |= EXEC;
                }
                tag::ORD_STATUS => {
                    facts.ord_status = value.first().copied();
                    found |= STATUS;
                }
                tag::SENDER_COMP_ID => {
                    facts.sender_comp_id = value;
                    found |= SENDER;
                }
                tag::TARGET_COMP_ID => {
                    facts.target_comp_id = value;
                    found |= TARGET;
                }
                _ => {}
            }
            if let Some(i) = key.tags.iter().position(|&k| k == t) {
                if facts.key_parts[i].is_empty() && !value.is_empty() {
                    facts.key_parts[i] = value;
                    facts.key_found += 1;
                    if facts.key_found == key_len {
                        found |= KEY;
                    }
                }
            }
            if found & needed == needed && found & TYPE != 0 {
                break;
            }
        }
        facts
    }

    /// Writes the correlation key into `buf`; false when a key tag is missing.
    pub fn key_into(&self, key: &KeySpec, buf: &mut Vec<u8>) -> bool {
        buf.clear();
        if self.key_found as usize != key.tags.len() {
            return false;
        }
        for (i, part) in self.key_parts[..key.tags.len()].iter().enumerate() {
            if i > 0 {
                buf.push(SOH);
            }
            buf.extend_from_slice(part);
        }
        true
    }
}

/// How a response relates to the order's life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ResponseKind {
    ack: bool,
    fill: bool,
    /// The request needs no more tracking (terminal OrdStatus, or a cancel reject).
    terminal: bool,
}

fn classify_response(
    msg_type: &[u8],
    exec_type: Option<u8>,
    ord_status: Option<u8>,
) -> ResponseKind {
    if msg_type == b"9" {
        return ResponseKind {
            ack: true,
            fill: false,
            terminal: true,
        };
    }
    let ack = matches!(
        exec_type,
        Some(b'0' | b'A' | b'4' | b'5' | b'6' | b'E' | b'8')
    );
    // 150=1/2 are FIX 4.2-and-older's partial fill/fill; later versions never send them,
    // so accepting them everywhere costs nothing.
    let fill = matches!(exec_type, Some(b'F' | b'1' | b'2'));
    let terminal = matches!(ord_status, Some(b'2' | b'3' | b'4' | b'8' | b'C'))
        || matches!(exec_type, Some(b'8'));
    ResponseKind {
        ack,
        fill,
        terminal,
    }
}

/// Whether a MsgType is a response fixscope correlates.
pub fn is_response_type(msg_type: &[u8]) -> bool {
    msg_type == b"8" || msg_type == b"9"
}

/// Correlation limits (`-m`, `-t`).
#[derive(Clone, Copy, Debug)]
pub struct CorrelatorLimits {
    pub max_pending: usize,
    pub ttl_ns: u64,
}

impl Default for CorrelatorLimits {
    fn default() -> Self {
        CorrelatorLimits {
            max_pending: 1 << 20,
            ttl_ns: 500_000_000,
        }
    }
}

/// Correlation counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CorrelationCounters {
    pub requests: u64,
    pub responses: u64,
    /// Requests that got a first response.
    pub matched: u64,
    /// Responses with no pending request of that key on that session.
    pub unmatched_responses: u64,
    /// Requests whose key was already pending on the session (the first one is kept).
    pub duplicate_requests: u64,
    /// Pending requests that reached the time-to-live without any response.
    pub timed_out: u64,
    /// Pending requests that reached the time-to-live after a response (working orders).
    pub expired_after_response: u64,
    /// Pending requests evicted (oldest first) because the table was full.
    pub evicted: u64,
    /// Requests or responses without the key tag(s).
    pub missing_key: u64,
    /// Stage latencies not recorded because the later event carries an earlier timestamp
    /// (captures merged from interfaces or taps whose clocks disagree): never recorded as
    /// 0, which would be a wrong number.
    pub time_reversed: u64,
}

/// One latency produced by a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Latency {
    pub stage: Stage,
    pub request_type: RequestType,
    pub session: u64,
    pub ns: u64,
}

#[derive(Debug, Default)]
struct Pending {
    session: u64,
    key: Vec<u8>,
    hash: u64,
    request_ts_ns: u64,
    request_type: Option<RequestType>,
    ack_ts_ns: Option<u64>,
    responded: bool,
    filled: bool,
    /// Bumped when the slot is freed, so stale queue entries are recognised.
    generation: u32,
    live: bool,
}

/// The pending-request table and the matching rules.
pub struct Correlator {
    key: KeySpec,
    limits: CorrelatorLimits,
    slots: Vec<Pending>,
    free: Vec<u32>,
    index: HashTable<u32>,
    /// Slots in request order, for expiry and eviction; entries of freed slots are stale.
    order: VecDeque<(u32, u32)>,
    hasher: foldhash::fast::FixedState,
    live: usize,
    key_buf: Vec<u8>,
    pub counters: CorrelationCounters,
}

impl Correlator {
    pub fn new(key: KeySpec, limits: CorrelatorLimits) -> Self {
        Correlator {
            key,
            limits,
            slots: Vec::new(),
            free: Vec::new(),
            index: HashTable::new(),
            order: VecDeque::new(),
            hasher: foldhash::fast::FixedState::with_seed(0x5eed_f1c5),
            live: 0,
            key_buf: Vec::new(),
            counters: CorrelationCounters::default(),
        }
    }

    pub fn key_spec(&self) -> &KeySpec {
        &self.key
    }

    /// Requests currently waiting for responses.
    pub fn pending(&self) -> usize {
        self.live
    }

    fn hash(&self, session: u64, key: &[u8]) -> u64 {
        let mut h = self.hasher.build_hasher();
        session.hash(&mut h);
        key.hash(&mut h);
        h.finish()
    }

    fn find(&self, session: u64, key: &[u8], hash: u64) -> Option<u32> {
        let slots = &self.slots;
        self.index
            .find(hash, |&i| {
                let p = &slots[i as usize];
                p.session == session && p.key == key
            })
            .copied()
    }

    /// Records a request seen at `ts_ns` (the time of the segment carrying its last byte).
    pub fn on_request(
        &mut self,
        session: u64,
        request_type: RequestType,
        facts: &MessageFacts,
        ts_ns: u64,
    ) {
        self.counters.requests += 1;
        let mut key_buf = std::mem::take(&mut self.key_buf);
        if !facts.key_into(&self.key, &mut key_buf) {
            self.counters.missing_key += 1;
            self.key_buf = key_buf;
            return;
        }
        let hash = self.hash(session, &key_buf);
        if self.find(session, &key_buf, hash).is_some() {
            self.counters.duplicate_requests += 1;
            self.key_buf = key_buf;
            return;
        }
        if self.live >= self.limits.max_pending {
            self.evict_oldest();
        }
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(Pending::default());
                (self.slots.len() - 1) as u32
            }
        };
        let p = &mut self.slots[slot as usize];
        p.session = session;
        p.key.clear();
        p.key.extend_from_slice(&key_buf);
        p.hash = hash;
        p.request_ts_ns = ts_ns;
        p.request_type = Some(request_type);
        p.ack_ts_ns = None;
        p.responded = false;
        p.filled = false;
        p.live = true;
        let generation = p.generation;
        let slots = &self.slots;
        self.index
            .insert_unique(hash, slot, |&i| slots[i as usize].hash);
        self.order.push_back((slot, generation));
        self.live += 1;
        self.key_buf = key_buf;
    }

    /// Matches a response seen at `ts_ns` (the time of the segment carrying its first byte)
    /// and reports the latencies it completes.
    pub fn on_response<F>(
        &mut self,
        session: u64,
        facts: &MessageFacts,
        ts_ns: u64,
        mut on_latency: F,
    ) where
        F: FnMut(Latency),
    {
        self.counters.responses += 1;
        let mut key_buf = std::mem::take(&mut self.key_buf);
        if !facts.key_into(&self.key, &mut key_buf) {
            self.counters.missing_key += 1;
            self.key_buf = key_buf;
            return;
        }
        let hash = self.hash(session, &key_buf);
        let found = self.find(session, &key_buf, hash);
        self.key_buf = key_buf;
        let Some(slot) = found else {
            self.counters.unmatched_responses += 1;
            return;
        };
        let kind = classify_response(facts.msg_type, facts.exec_type, facts.ord_status);
        let p = &mut self.slots[slot as usize];
        let Some(request_type) = p.request_type else {
            return;
        };
        let time_reversed = &mut self.counters.time_reversed;
        let mut emit = |stage, from: u64| match ts_ns.checked_sub(from) {
            Some(ns) => on_latency(Latency {
                stage,
                request_type,
                session,
                ns,
            }),
            None => *time_reversed += 1,
        };
        if !p.responded {
            p.responded = true;
            self.counters.matched += 1;
            emit(Stage::FirstResponse, p.request_ts_ns);
        }
        if kind.ack && p.ack_ts_ns.is_none() {
            p.ack_ts_ns = Some(ts_ns);
            emit(Stage::Ack, p.request_ts_ns);
        }
        if kind.fill && !p.filled {
            p.filled = true;
            emit(Stage::Fill, p.request_ts_ns);
            if let Some(ack) = p.ack_ts_ns {
                emit(Stage::AckToFill, ack);
            }
        }
        if kind.terminal {
            self.release(slot);
        }
    }

    /// Expires requests older than the time-to-live at capture time `now_ns`.
    pub fn expire(&mut self, now_ns: u64) {
        let cutoff = now_ns.saturating_sub(self.limits.ttl_ns);
        while let Some(&(slot, generation)) = self.order.front() {
            let p = &self.slots[slot as usize];
            if !p.live || p.generation != generation {
                self.order.pop_front();
                continue;
            }
            if p.request_ts_ns >= cutoff {
                break;
            }
            self.order.pop_front();
            if p.responded {
                self.counters.expired_after_response += 1;
            } else {
                self.counters.timed_out += 1;
            }
            self.release(slot);
        }
    }

    fn evict_oldest(&mut self) {
        while let Some((slot, generation)) = self.order.pop_front() {
            let p = &self.slots[slot as usize];
            if p.live && p.generation == generation {
                self.counters.evicted += 1;
                self.release(slot);
                return;
            }
        }
    }

    fn release(&mut self, slot: u32) {
        let p = &mut self.slots[slot as usize];
        if !p.live {
            return;
        }
        p.live = false;
        p.generation = p.generation.wrapping_add(1);
        let hash = p.hash;
        if let Ok(entry) = self.index.find_entry(hash, |&i| i == slot) {
            entry.remove();
        }
        self.free.push(slot);
        self.live -= 1;
        // Keep the order queue from growing without bound when most requests complete
        // long before they would expire.
        if self.order.len() > 2 * self.live + 1024 {
            let slots = &self.slots;
            self.order
                .retain(|&(s, g)| slots[s as usize].live && slots[s as usize].generation == g);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fix::encode::FixEncoder;

    fn msg(fields: &[(u32, &str)]) -> Vec<u8> {
        let mut enc = FixEncoder::new();
        enc.start(fields[0].1.as_bytes());
        for &(t, v) in &fields[1..] {
            enc.field_str(t, v);
        }
        let mut out = Vec::new();
        enc.finish(b"FIX.4.4", &mut out);
        out
    }

    fn order(id: &str) -> Vec<u8> {
        msg(&[(35, "D"), (49, "C"), (56, "X"), (11, id), (55, "IBM")])
    }

    fn report(id: &str, exec_type: &str, ord_status: &str) -> Vec<u8> {
        msg(&[
            (35, "8"),
            (49, "X"),
            (56, "C"),
            (11, id),
            (150, exec_type),
            (39, ord_status),
        ])
    }

    struct H {
        c: Correlator,
        out: Vec<Latency>,
    }

    impl H {
        fn new(limits: CorrelatorLimits) -> Self {
            H {
                c: Correlator::new(KeySpec::default(), limits),
                out: Vec::new(),
            }
        }
        fn req(&mut self, session: u64, m: &[u8], ts: u64) {
            let f = MessageFacts::extract(m, &KeySpec::default());
            let t = RequestType::from_msg_type(f.msg_type).unwrap();
            self.c.on_request(session, t, &f, ts);
        }
        fn resp(&mut self, session: u64, m: &[u8], ts: u64) {
            let f = MessageFacts::extract(m, &KeySpec::default());
            let out = &mut self.out;
            self.c.on_response(session, &f, ts, |l| out.push(l));
        }
        fn stages(&self) -> Vec<(Stage, u64)> {
            self.out.iter().map(|l| (l.stage, l.ns)).collect()
        }
    }

    #[test]
    fn order_ack_partial_fill_full_fill() {
        let mut h = H::new(CorrelatorLimits::default());
        h.req(1, &order("A"), 100);
        h.resp(1, &report("A", "0", "0"), 150);
        h.resp(1, &report("A", "F", "1"), 400);
        h.resp(1, &report("A", "F", "2"), 900);
        assert_eq!(
            h.stages(),
            vec![
                (Stage::FirstResponse, 50),
                (Stage::Ack, 50),
                (Stage::Fill, 300),
                (Stage::AckToFill, 250)
            ]
        );
        assert_eq!(h.c.counters.matched, 1);
        assert_eq!(h.c.counters.unmatched_responses, 0);
        assert_eq!(h.c.pending(), 0);
    }

    #[test]
    fn time_reversed_latencies_are_counted_never_recorded_as_zero() {
        let mut h = H::new(CorrelatorLimits::default());
        // The ack's clock is 5 µs behind the request's (merged captures, skewed clocks).
        h.req(1, &order("A"), 100_000);
        h.resp(1, &report("A", "0", "0"), 95_000);
        h.resp(1, &report("A", "F", "2"), 130_000);
        assert_eq!(
            h.stages(),
            vec![(Stage::Fill, 30_000), (Stage::AckToFill, 35_000)]
        );
        assert_eq!(h.c.counters.time_reversed, 2); // first response and ack
        assert_eq!(h.c.counters.matched, 1);
        assert_eq!(h.c.pending(), 0);
    }

    #[test]
    fn same_clordid_on_two_sessions_never_mixes() {
        let mut h = H::new(CorrelatorLimits::default());
        h.req(1, &order("A"), 100);
        h.req(2, &order("A"), 200);
        h.resp(2, &report("A", "0", "0"), 210);
        h.resp(1, &report("A", "0", "0"), 190);
        assert_eq!(h.out[0].ns, 10);
        assert_eq!(h.out[0].session, 2);
        assert_eq!(h.out[2].ns, 90);
        assert_eq!(h.out[2].session, 1);
    }

    #[test]
    fn duplicates_unmatched_and_missing_keys_are_counted() {
        let mut h = H::new(CorrelatorLimits::default());
        h.req(1, &order("A"), 100);
        h.req(1, &order("A"), 120);
        h.resp(1, &report("B", "0", "0"), 130);
        h.resp(1, &report("A", "0", "0"), 150);
        h.req(1, &msg(&[(35, "D"), (55, "IBM")]), 160);
        assert_eq!(h.c.counters.duplicate_requests, 1);
        assert_eq!(h.c.counters.unmatched_responses, 1);
        assert_eq!(h.c.counters.missing_key, 1);
        assert_eq!(h.stages()[0], (Stage::FirstResponse, 50));
    }

    #[test]
    fn reject_is_an_ack_and_ends_the_request() {
        let mut h = H::new(CorrelatorLimits::default());
        h.req(1, &order("A"), 100);
        h.resp(1, &report("A", "8", "8"), 130);
        assert_eq!(
            h.stages(),
            vec![(Stage::FirstResponse, 30), (Stage::Ack, 30)]
        );
        assert_eq!(h.c.pending(), 0);
        let cancel_reject = msg(&[(35, "9"), (11, "C1"), (41, "A"), (39, "8")]);
        h.req(1, &msg(&[(35, "F"), (11, "C1"), (41, "A")]), 200);
        h.resp(1, &cancel_reject, 260);
        assert_eq!(h.out.last().unwrap().request_type, RequestType::Cancel);
        assert_eq!(h.out.last().unwrap().ns, 60);
        assert_eq!(h.c.pending(), 0);
    }

    #[test]
    fn ttl_expiry_counts_timed_out_and_working_orders_apart() {
        let mut h = H::new(CorrelatorLimits {
            max_pending: 100,
            ttl_ns: 1000,
        });
        h.req(1, &order("A"), 0);
        h.req(1, &order("B"), 10);
        h.resp(1, &report("B", "0", "0"), 20);
        h.c.expire(999);
        assert_eq!(h.c.pending(), 2);
        h.c.expire(1011);
        assert_eq!(h.c.pending(), 0);
        assert_eq!(h.c.counters.timed_out, 1);
        assert_eq!(h.c.counters.expired_after_response, 1);
        h.resp(1, &report("A", "0", "0"), 1100);
        assert_eq!(h.c.counters.unmatched_responses, 1);
    }

    #[test]
    fn capacity_evicts_oldest_first() {
        let mut h = H::new(CorrelatorLimits {
            max_pending: 2,
            ttl_ns: u64::MAX,
        });
        h.req(1, &order("A"), 0);
        h.req(1, &order("B"), 1);
        h.req(1, &order("C"), 2);
        assert_eq!(h.c.counters.evicted, 1);
        h.resp(1, &report("A", "0", "0"), 5);
        h.resp(1, &report("C", "0", "0"), 5);
        assert_eq!(h.c.counters.unmatched_responses, 1);
        assert_eq!(h.c.counters.matched, 1);
    }

    #[test]
    fn compound_and_alternative_keys() {
        let key = KeySpec::parse("11,1").unwrap();
        let mut c = Correlator::new(key.clone(), CorrelatorLimits::default());
        let req = msg(&[(35, "D"), (1, "ACC1"), (11, "A")]);
        let other = msg(&[(35, "8"), (11, "A"), (1, "ACC2"), (150, "0"), (39, "0")]);
        let same = msg(&[(35, "8"), (11, "A"), (1, "ACC1"), (150, "0"), (39, "0")]);
        let f = MessageFacts::extract(&req, &key);
        c.on_request(1, RequestType::NewOrder, &f, 10);
        let mut n = 0;
        c.on_response(1, &MessageFacts::extract(&other, &key), 20, |_| n += 1);
        assert_eq!(n, 0);
        c.on_response(1, &MessageFacts::extract(&same, &key), 30, |_| n += 1);
        assert_eq!(n, 2);
        assert!(KeySpec::parse("11,x").is_err());
        assert!(KeySpec::parse("11,11").is_err());
        assert_eq!(KeySpec::parse("41").unwrap().tags(), &[41]);
    }

    #[test]
    fn long_clordid_has_no_length_limit() {
        let id = "X".repeat(200);
        let mut h = H::new(CorrelatorLimits::default());
        h.req(1, &order(&id), 1);
        h.resp(1, &report(&id, "0", "0"), 4);
        assert_eq!(h.stages()[0], (Stage::FirstResponse, 3));
    }

    #[test]
    fn memory_stays_flat_on_endless_input() {
        let mut h = H::new(CorrelatorLimits {
            max_pending: 64,
            ttl_ns: 50,
        });
        for i in 0..100_000u64 {
            h.req(1, &order(&i.to_string()), i);
            if i % 3 == 0 {
                h.resp(1, &report(&i.to_string(), "F", "2"), i + 1);
            }
            h.c.expire(i);
        }
        assert!(h.c.slots.len() <= 64, "slots grew to {}", h.c.slots.len());
        assert!(h.c.order.len() <= 2 * 64 + 1024);
    }
}
