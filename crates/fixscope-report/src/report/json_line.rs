//! The JSON interval line, written by hand into a reused buffer.
//!
//! An interval line is ~17 KB at the default `--slowest 10` (40 slow orders of 17 fields),
//! written every second. Through serde_json's `Value` it cost ~100 allocations and most of a
//! report (issue #22); through serde_json's serializer it still escaped every constant key
//! byte by byte. Here constant keys are copied as they are, numbers go through `itoa` (and
//! serde_json for floats, for the same digits), and a string is escaped by serde_json only
//! when it holds a byte that needs it. The bytes are those of the `Value` path
//! (`json::interval_value`); a test compares the two on reports with awkward strings.

use std::io::Write as _;
use std::net::IpAddr;

use super::{utc, IntervalReport, IntervalStage};
use fixscope_figures::stats::PERCENTILES;
use fixscope_model::segment::Endpoint;
use fixscope_model::source::Counter;
use fixscope_orders::breakdown::OrderBreakdown;
use fixscope_orders::correlate::Stage;
use fixscope_orders::microburst::RateFigures;
use fixscope_orders::slowest::SlowOrder;

/// Appends the interval line (without its newline) to `out`.
pub fn interval(out: &mut Vec<u8>, r: &IntervalReport<'_>) {
    let mut o = Obj::open(out);
    o.key("type");
    o.out.extend_from_slice(b"\"interval\"");
    o.u64("start_ns", r.start_ns);
    o.u64("end_ns", r.end_ns);
    o.key("start");
    utc_value(o.out, r.span.start_ns, r.span.unix_offset_ns);
    o.key("end");
    utc_value(o.out, r.span.end_ns, r.span.unix_offset_ns);
    o.f64("duration_s", r.span.seconds());
    o.key("stages");
    o.out.push(b'[');
    for (i, s) in r.all_stages().enumerate() {
        if i > 0 {
            o.out.push(b',');
        }
        stage(o.out, s);
    }
    o.out.push(b']');
    o.key("counters");
    serde_value(o.out, &r.counters);
    o.key("delta");
    serde_value(o.out, &r.delta);
    o.key("source");
    counters(o.out, r.source);
    o.key("slowest");
    let offset = r.span.unix_offset_ns;
    let mut lists = Obj::open(o.out);
    let breakdown = r.breakdown.iter().map(|s| (s.stage, r.slowest_of(s.stage)));
    for (stage, list) in Stage::ALL
        .iter()
        .map(|&s| (s, r.slowest[s.index()]))
        .chain(breakdown)
    {
        lists.key(stage.name());
        lists.out.push(b'[');
        for (i, order) in list.iter().enumerate() {
            if i > 0 {
                lists.out.push(b',');
            }
            slow_order(lists.out, order, offset);
        }
        lists.out.push(b']');
    }
    lists.close();
    session_rates(&mut o, r);
    // `live --tap`: who stamped the packets (the last field, as `json::with_timestamp_source`).
    if let Some(name) = r.span.timestamp_source {
        o.str("timestamp_source", name);
    }
    o.close();
}

/// The session layer's interval fields (#21), as `report::session::interval_fields`
/// writes them: `rate` (all sessions) and `session_rates` (sessions with messages).
fn session_rates(o: &mut Obj<'_>, r: &IntervalReport<'_>) {
    let figures = |out: &mut Obj<'_>, f: RateFigures| {
        out.u64("messages", f.messages);
        out.u64("peak_1ms", f.peak_1ms);
    };
    o.key("rate");
    let mut total = Obj::open(o.out);
    figures(&mut total, r.figures.layer().rate.interval());
    total.close();
    o.key("session_rates");
    o.out.push(b'[');
    let mut first = true;
    for s in r.figures.sessions() {
        let f = s.health.rate.interval();
        if f.messages == 0 {
            continue;
        }
        if !first {
            o.out.push(b',');
        }
        first = false;
        let mut one = Obj::open(o.out);
        one.u64("session", s.id);
        figures(&mut one, f);
        one.close();
    }
    o.out.push(b']');
}

/// A JSON object being written: keys are constants that need no escaping.
struct Obj<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> Obj<'a> {
    fn open(out: &'a mut Vec<u8>) -> Self {
        out.push(b'{');
        Obj { out, first: true }
    }

    fn key(&mut self, k: &str) {
        debug_assert!(!needs_escape(k), "constant key {k:?}");
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.out.push(b'"');
        self.out.extend_from_slice(k.as_bytes());
        self.out.extend_from_slice(b"\":");
    }

    fn u64(&mut self, k: &str, v: u64) {
        self.key(k);
        self.out
            .extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
    }

    fn opt_u64(&mut self, k: &str, v: Option<u64>) {
        match v {
            Some(v) => self.u64(k, v),
            None => {
                self.key(k);
                self.out.extend_from_slice(b"null");
            }
        }
    }

    fn f64(&mut self, k: &str, v: f64) {
        self.key(k);
        serde_value(self.out, &v);
    }

    fn str(&mut self, k: &str, v: &str) {
        self.key(k);
        string(self.out, v);
    }

    fn bool(&mut self, k: &str, v: bool) {
        self.key(k);
        self.out
            .extend_from_slice(if v { b"true" } else { b"false" });
    }

    fn close(self) {
        self.out.push(b'}');
    }
}

/// What serde_json escapes: control characters, `"` and `\`.
fn needs_escape(s: &str) -> bool {
    s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\')
}

fn string(out: &mut Vec<u8>, s: &str) {
    if needs_escape(s) {
        serde_value(out, s);
    } else {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    }
}

/// Anything else through serde_json (floats: the same digits as its `Value`; non-finite:
/// `null`). Writing into a `Vec` cannot fail.
fn serde_value<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    let _ = serde_json::to_writer(&mut *out, v);
}

/// A source timestamp as an ISO-8601 UTC string (never needs escaping).
fn utc_value(out: &mut Vec<u8>, ts_ns: u64, unix_offset_ns: i64) {
    match u64::try_from(i128::from(ts_ns) + i128::from(unix_offset_ns)) {
        Ok(unix_ns) => {
            out.push(b'"');
            if fixscope_model::clock::write_iso8601_utc_nanos(out, unix_ns).is_none() {
                let t = fixscope_model::clock::iso8601_utc(
                    unix_ns,
                    fixscope_model::clock::Precision::Nanos,
                );
                let _ = write!(out, "{t}");
            }
            out.push(b'"');
        }
        Err(_) => string(out, &utc(ts_ns, unix_offset_ns)),
    }
}

fn counters(out: &mut Vec<u8>, list: &[Counter]) {
    out.push(b'{');
    for (i, (k, v)) in list.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        string(out, k);
        out.push(b':');
        out.extend_from_slice(itoa::Buffer::new().format(*v).as_bytes());
    }
    out.push(b'}');
}

/// One stage of the interval; figures of an empty stage are `null`, never 0.
fn stage(out: &mut Vec<u8>, s: &IntervalStage) {
    let some = |v| (s.count > 0).then_some(v);
    let mut o = Obj::open(out);
    o.str("stage", s.stage.name());
    o.u64("count", s.count);
    o.f64("rate_per_s", s.rate_per_s);
    o.opt_u64("min_ns", some(s.min_ns));
    if s.count > 0 {
        o.f64("mean_ns", s.mean_ns);
    } else {
        o.key("mean_ns");
        o.out.extend_from_slice(b"null");
    }
    o.opt_u64("max_ns", some(s.max_ns));
    for ((_, _, field), v) in PERCENTILES.iter().zip(s.percentiles_ns) {
        o.opt_u64(field, v);
    }
    o.u64("over_range", s.over_range);
    o.close();
}

/// One slow order, self-contained (as `json::slow_order_json`).
fn slow_order(out: &mut Vec<u8>, order: &SlowOrder, unix_offset_ns: i64) {
    let mut o = Obj::open(out);
    o.str("stage", order.stage.name());
    o.u64("latency_ns", order.latency_ns);
    o.str("key", &order.key);
    o.str("msg_type", order.request_type.msg_type());
    o.str("response_msg_type", &order.response_msg_type);
    let mut char_field = |k: &str, c: Option<char>| match c {
        Some(c) => o.str(k, c.encode_utf8(&mut [0; 4])),
        None => {
            o.key(k);
            o.out.extend_from_slice(b"null");
        }
    };
    char_field("exec_type", order.exec_type);
    char_field("ord_status", order.ord_status);
    o.u64("session", order.session);
    o.str("sender_comp_id", &order.sender_comp_id);
    o.str("target_comp_id", &order.target_comp_id);
    match order.connection {
        Some(c) => {
            o.key("client");
            endpoint(o.out, &c.client);
            o.key("server");
            endpoint(o.out, &c.server);
        }
        None => {
            o.key("client");
            o.out.extend_from_slice(b"null");
            o.key("server");
            o.out.extend_from_slice(b"null");
        }
    }
    o.u64("request_ns", order.request_ts_ns);
    o.key("request_time");
    utc_value(o.out, order.request_ts_ns, unix_offset_ns);
    o.u64("response_ns", order.response_ts_ns);
    o.bool("late", order.late);
    if let Some(b) = order.breakdown {
        o.key("breakdown");
        breakdown(o.out, &b);
    }
    o.close();
}

/// An address as `Endpoint`'s `Display` writes it (never needs escaping); IPv4 without
/// the formatting machinery.
fn endpoint(out: &mut Vec<u8>, e: &Endpoint) {
    match e.addr {
        IpAddr::V4(a) => {
            out.push(b'"');
            for (i, octet) in a.octets().iter().enumerate() {
                if i > 0 {
                    out.push(b'.');
                }
                out.extend_from_slice(itoa::Buffer::new().format(*octet).as_bytes());
            }
            out.push(b':');
            out.extend_from_slice(itoa::Buffer::new().format(e.port).as_bytes());
            out.push(b'"');
        }
        IpAddr::V6(_) => {
            let _ = write!(out, "\"{e}\"");
        }
    }
}

/// `--breakdown` only: each stage's ns, or null when it was not measured.
fn breakdown(out: &mut Vec<u8>, b: &OrderBreakdown) {
    let mut o = Obj::open(out);
    for &s in &Stage::BREAKDOWN {
        o.opt_u64(s.name(), b.get(s));
    }
    o.close();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Counters, TimeSpan};
    use fixscope_figures::stats::Stats;
    use fixscope_model::order::Latency;
    use fixscope_model::segment::ConnectionKey;
    use fixscope_orders::consumer::OrderSink;
    use fixscope_orders::correlate::RequestType;
    use fixscope_orders::slowest::OrderRef;

    fn endpoint(addr: &str, port: u16) -> Endpoint {
        Endpoint {
            addr: addr.parse().unwrap(),
            port,
        }
    }

    /// The hand-written line is the `Value` path's, byte for byte: awkward keys and
    /// CompIDs (quotes, backslashes, control bytes, non-ASCII), IPv6, empty stages,
    /// values above range, breakdowns, source counters.
    #[test]
    fn bytes_are_the_value_paths() {
        for breakdown in [false, true] {
            let mut stats = Stats::new(1_000_000).with_breakdown(breakdown);
            let conns = [
                ConnectionKey {
                    client: endpoint("10.0.0.1", 40000),
                    server: endpoint("10.0.0.2", 9878),
                },
                ConnectionKey {
                    client: endpoint("fe80::1", 1),
                    server: endpoint("2001:db8::2", 65535),
                },
            ];
            for (i, c) in conns.iter().enumerate() {
                stats.open_session(i as u64 + 1, *c);
            }
            let s = stats.session_mut(1).unwrap();
            s.sender_comp_id = "CLIENT\\é".into();
            s.target_comp_id = "EXCH\n".into();
            let keys: [&[u8]; 5] = [b"ord-1", b"q\"uote", b"back\\slash", b"a\x01b", b"\xffbad"];
            for (n, key) in keys.iter().enumerate() {
                for (k, stage) in [Stage::FirstResponse, Stage::Fill, Stage::App]
                    .into_iter()
                    .enumerate()
                {
                    let ns = [500u64, 2_000_000, 77][(n + k) % 3] + n as u64;
                    let latency = Latency {
                        stage,
                        request_type: RequestType::NewOrder,
                        session: 1 + (n as u64 % 2),
                        ns,
                        late: n == 1,
                        request_ts_ns: 1_700_000_000_000_000_000 + n as u64,
                        request_seq: 0,
                        groups: fixscope_model::order::NO_GROUPS,
                    };
                    let order = OrderRef {
                        key,
                        response_msg_type: b"8",
                        exec_type: (n % 2 == 0).then_some(b'F'),
                        ord_status: Some(b'2'),
                        response_ts_ns: 1_700_000_000_000_000_500 + n as u64,
                        breakdown: breakdown.then(|| OrderBreakdown {
                            app: Some(5),
                            ..OrderBreakdown::default()
                        }),
                    };
                    stats.record_order(latency, &order);
                }
            }
            // Session-layer rates (#21): session 1 with messages, session 2 without.
            for ts in [10u64, 20, 900_000, 5_000_000] {
                stats.layer.rate.observe(ts);
                stats.session_mut(1).unwrap().health.rate.observe(ts);
            }
            stats.close_interval();
            let mut counters = Counters::default();
            counters.session.logons = 2;
            counters.framing.messages = 9;
            let source = vec![("packets".to_string(), 3), ("we\"ird".to_string(), 1)];
            let span = TimeSpan {
                start_ns: 5,
                end_ns: 1_000_000_005,
                unix_offset_ns: 1_700_000_000_000_000_000,
                // `live --tap` names its stamper; other sources do not.
                timestamp_source: breakdown.then_some("adapter_unsynced"),
            };
            let r = IntervalReport::new(span, &stats, counters, &Counters::default(), &source);
            let mut ours = Vec::new();
            interval(&mut ours, &r);
            let reference = serde_json::to_vec(&crate::report::json::interval_value(&r)).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&ours),
                String::from_utf8_lossy(&reference)
            );
        }
    }
}
