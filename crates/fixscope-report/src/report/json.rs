//! JSON lines: one object per interval, then one summary object. The schema is
//! docs/output-json.md; field names are a contract with users' scripts.

use std::io::{self, Write};

use serde_json::{json, Map, Value};

pub use super::rows::distribution_json;
use super::{utc, IntervalReport, Reporter, StageSummary, SummaryReport};
use fixscope_model::source::Counter;
use fixscope_orders::correlate::Stage;
use fixscope_orders::slowest::SlowOrder;

/// Writes JSON lines to any `Write`.
pub struct JsonReporter<W: Write> {
    out: W,
    /// One interval line, reused.
    buf: Vec<u8>,
}

impl<W: Write> JsonReporter<W> {
    pub fn new(out: W) -> Self {
        JsonReporter {
            out,
            buf: Vec::new(),
        }
    }

    pub fn into_inner(self) -> W {
        self.out
    }

    fn line(&mut self, v: &Value) -> io::Result<()> {
        serde_json::to_writer(&mut self.out, v)?;
        self.out.write_all(b"\n")?;
        self.out.flush()
    }
}

fn counter_map(counters: &[Counter]) -> Map<String, Value> {
    counters
        .iter()
        .map(|(k, v)| (k.clone(), Value::from(*v)))
        .collect()
}

fn stages_json(stages: &[StageSummary]) -> Value {
    stages
        .iter()
        .map(|s| distribution_json(("stage", s.stage.name()), &s.dist))
        .collect()
}

/// One slow order as the schema's object: self-contained (session names and addresses
/// inline), times both in the source's clock and as UTC.
pub fn slow_order_json(o: &SlowOrder, unix_offset_ns: i64) -> Value {
    let conn = o.connection;
    let mut v = json!({
        "stage": o.stage.name(),
        "latency_ns": o.latency_ns,
        "key": o.key,
        "msg_type": o.request_type.msg_type(),
        "response_msg_type": o.response_msg_type,
        "exec_type": o.exec_type.map(String::from),
        "ord_status": o.ord_status.map(String::from),
        "session": o.session,
        "sender_comp_id": o.sender_comp_id,
        "target_comp_id": o.target_comp_id,
        "client": conn.map(|c| c.client.to_string()),
        "server": conn.map(|c| c.server.to_string()),
        "request_ns": o.request_ts_ns,
        "request_time": utc(o.request_ts_ns, unix_offset_ns),
        "response_ns": o.response_ts_ns,
        "late": o.late,
    });
    if let (Some(b), Value::Object(m)) = (o.breakdown, &mut v) {
        // `--breakdown` only: each stage's ns, or null when it was not measured.
        let stages: Map<String, Value> = Stage::BREAKDOWN
            .iter()
            .map(|&s| {
                (
                    s.name().to_string(),
                    b.get(s).map_or(Value::Null, Value::from),
                )
            })
            .collect();
        m.insert("breakdown".into(), Value::Object(stages));
    }
    v
}

/// [`slowest_json`] plus the breakdown stages' lists (`--breakdown`; none without it).
fn slowest_all_json<'a>(
    core: &[&[SlowOrder]; 4],
    breakdown: impl Iterator<Item = (Stage, &'a [SlowOrder])>,
    unix_offset_ns: i64,
) -> Value {
    let mut v = slowest_json(core, unix_offset_ns);
    if let Value::Object(m) = &mut v {
        for (stage, list) in breakdown {
            let list: Vec<Value> = list
                .iter()
                .map(|o| slow_order_json(o, unix_offset_ns))
                .collect();
            m.insert(stage.name().to_string(), Value::Array(list));
        }
    }
    v
}

/// The slowest orders per stage: `{"first_response": [...], "ack": [...], ...}`.
pub fn slowest_json(slowest: &[&[SlowOrder]; 4], unix_offset_ns: i64) -> Value {
    Stage::ALL
        .iter()
        .map(|s| {
            let list: Vec<Value> = slowest[s.index()]
                .iter()
                .map(|o| slow_order_json(o, unix_offset_ns))
                .collect();
            (s.name().to_string(), Value::Array(list))
        })
        .collect::<Map<String, Value>>()
        .into()
}

impl<W: Write> Reporter for JsonReporter<W> {
    fn interval(&mut self, r: &IntervalReport<'_>) -> io::Result<()> {
        // Written straight from the report by `line` (no `Value` tree: building one was most
        // of a report's cost at `-r 1`, issue #22); a test checks the bytes are those of
        // the `Value` path (`interval_value`), field for field.
        self.buf.clear();
        super::json_line::interval(&mut self.buf, r);
        self.buf.push(b'\n');
        self.out.write_all(&self.buf)?;
        self.out.flush()
    }

    fn summary(&mut self, r: &SummaryReport<'_>) -> io::Result<()> {
        let by_type: Vec<Value> = r
            .by_request_type
            .iter()
            .map(|(t, stages)| json!({"msg_type": t.msg_type(), "stages": stages_json(stages)}))
            .collect();
        let layer = r.figures.session_layer_figures(r.span.end_ns);
        let sessions: Vec<Value> = r
            .sessions
            .iter()
            .map(|s| {
                let mut v = json!({
                    "session": s.id,
                    "client": s.client,
                    "server": s.server,
                    "sender_comp_id": s.sender_comp_id,
                    "target_comp_id": s.target_comp_id,
                    "begin_string": s.begin_string,
                    "requests": s.requests,
                    "responses": s.responses,
                    "first_response": distribution_json(("stage", "first_response"), &s.first_response),
                });
                if let (Some(tls), Value::Object(m)) = (s.tls, &mut v) {
                    // Over TLS only: a plaintext session's object is as it always was.
                    m.insert("tls_version".into(), tls.version.into());
                    m.insert("tls_cipher_suite".into(), tls.cipher_suite.into());
                }
                if let (false, Value::Object(m)) = (s.breakdown.is_empty(), &mut v) {
                    m.insert("breakdown".into(), stages_json(&s.breakdown));
                }
                if let (Some(row), Value::Object(m)) = (layer.as_ref().and_then(|l| l.session(s.id)), &mut v) {
                    m.insert("session_layer".into(), super::session::session_health_json(row));
                }
                v
            })
            .collect();
        let (start, end) = r.times_utc().unzip();
        let v = json!({
            "type": "summary",
            "start": start,
            "end": end,
            "duration_s": r.duration_ns as f64 / 1e9,
            "complete": r.incomplete.is_none(),
            "incomplete_reason": r.incomplete,
            "stages": r.all_stages().map(|s| distribution_json(("stage", s.stage.name()), &s.dist)).collect::<Vec<_>>(),
            "by_msg_type": by_type,
            "sessions": sessions,
            "untracked_sessions": r.untracked_sessions,
            "counters": r.counters,
            "source": counter_map(r.source),
            "slowest": slowest_all_json(
                &r.slowest,
                r.breakdown.iter().map(|s| (s.stage, r.slowest_of(s.stage))),
                r.span.unix_offset_ns,
            ),
        });
        let mut v = v;
        if let Value::Object(m) = &mut v {
            if let Some(layer) = &layer {
                for (k, field) in super::session::summary_fields(layer) {
                    m.insert(k.into(), field);
                }
            }
            if let Some(by) = r.figures.by() {
                m.insert("by".into(), super::by::by_json(by));
            }
            if let Some(undecrypted) = &r.tls_undecrypted {
                let list: Vec<Value> = undecrypted
                    .iter()
                    .map(|(conn, why)| json!({"connection": conn, "reason": why}))
                    .collect();
                m.insert("tls_undecrypted".into(), Value::Array(list));
            }
            if let Some(links) = r.figures.links {
                m.insert("links".into(), links_json(links));
            }
            if !r.feeds.is_empty() {
                m.insert("feeds".into(), super::feeds::feeds_json(&r.feeds));
            }
            if let Some(clock) = r.figures.clock {
                let medians = super::points::one_way_medians(m.get("stages"));
                if let Some(slowest) = m.get_mut("slowest") {
                    super::points::annotate_slowest(slowest, clock, medians);
                }
                if let Some(Value::Array(stages)) = m.get_mut("stages") {
                    super::points::annotate_stages(stages, clock);
                }
                m.insert("clock".into(), super::points::clock_json(clock));
            }
        }
        self.line(&with_timestamp_source(v, &r.span))
    }
}

/// `--leg`: linked parents per rule, and by their number of children.
fn links_json(links: &fixscope_hops::LinkFigures) -> Value {
    let rules: serde_json::Map<String, Value> = links
        .rules
        .iter()
        .map(|(r, n)| (r.clone(), (*n).into()))
        .collect();
    let fanout: serde_json::Map<String, Value> = links
        .children_per_parent
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(i, &n)| ((i + 1).to_string(), n.into()))
        .collect();
    json!({
        "rules": rules,
        "children_per_parent": fanout,
        "where_time_went": links.bands,
        "slowest": links.slowest,
    })
}

/// `timestamp_source` (`live --tap`: who stamped the packets) on a report that has one.
fn with_timestamp_source(mut v: Value, span: &super::TimeSpan) -> Value {
    if let (Some(name), Value::Object(m)) = (span.timestamp_source, &mut v) {
        m.insert("timestamp_source".into(), name.into());
    }
    v
}

/// An interval line as a `Value` — the reference the hand-written writer
/// (`report::json_line`) is tested against, byte for byte.
#[cfg(test)]
pub(crate) fn interval_value(r: &IntervalReport<'_>) -> Value {
    use super::rows::some_if;
    use fixscope_orders::recorder::PERCENTILES;
    let stages: Vec<Value> = r
        .all_stages()
        .map(|s| {
            let mut m = Map::new();
            m.insert("stage".into(), s.stage.name().into());
            m.insert("count".into(), s.count.into());
            m.insert("rate_per_s".into(), json!(s.rate_per_s));
            m.insert("min_ns".into(), some_if(s.count, s.min_ns.into()));
            m.insert("mean_ns".into(), some_if(s.count, json!(s.mean_ns)));
            m.insert("max_ns".into(), some_if(s.count, s.max_ns.into()));
            for ((_, _, field), v) in PERCENTILES.iter().zip(s.percentiles_ns) {
                m.insert((*field).into(), v.map_or(Value::Null, Value::from));
            }
            m.insert("over_range".into(), s.over_range.into());
            Value::Object(m)
        })
        .collect();
    let mut v = json!({
        "type": "interval",
        "start_ns": r.start_ns,
        "end_ns": r.end_ns,
        "start": r.span.start_utc(),
        "end": r.span.end_utc(),
        "duration_s": r.span.seconds(),
        "stages": stages,
        "counters": r.counters,
        "delta": counter_map(&r.delta.list()),
        "source": counter_map(r.source),
        "slowest": slowest_all_json(
            &r.slowest,
            r.breakdown.iter().map(|s| (s.stage, r.slowest_of(s.stage))),
            r.span.unix_offset_ns,
        ),
    });
    if let Value::Object(m) = &mut v {
        for (k, field) in super::session::interval_fields(r) {
            m.insert(k.into(), field);
        }
    }
    with_timestamp_source(v, &r.span)
}
