//! The FIX session layer in reports (#21): per session its counters, state, alarms and
//! message rate; the run's `test_request_rtt` stage, reject reasons by code and rates — as
//! text and as JSON (docs/output-json.md, "Session layer"), from [`SessionLayerFigures`]
//! (a run's, or a log's read back).

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde_json::{json, Map, Value};

use super::rows::distribution_json;
use super::session_figures::{SessionLayerFigures, SessionLayerRow};
use super::{human_ns, IntervalReport};
use fixscope_orders::microburst::RateFigures;

/// The name of the session layer's latency stage.
pub const TEST_REQUEST_RTT: &str = "test_request_rtt";

fn names(sender: &str, target: &str) -> String {
    if sender.is_empty() {
        "?".to_string()
    } else {
        format!("{sender}->{target}")
    }
}

fn age_json(age: Option<u64>) -> Value {
    age.map_or(Value::Null, Value::from)
}

/// One session's session-layer object (`sessions[].session_layer`).
pub fn session_health_json(h: &SessionLayerRow) -> Value {
    let [msg_c, msg_s] = h.last_message_age_ns;
    let [hb_c, hb_s] = h.last_heartbeat_age_ns;
    let mut m = match serde_json::to_value(h.counters) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    m.insert("logged_on".into(), h.logged_on.into());
    m.insert(
        "heart_bt_int_s".into(),
        h.heart_bt_int_s.map_or(Value::Null, Value::from),
    );
    m.insert(
        "last_message_age_ns".into(),
        json!({"client": age_json(msg_c), "server": age_json(msg_s)}),
    );
    m.insert(
        "last_heartbeat_age_ns".into(),
        json!({"client": age_json(hb_c), "server": age_json(hb_s)}),
    );
    m.insert("stale".into(), h.stale.into());
    m.insert(
        "test_request_unanswered".into(),
        h.test_request_unanswered.into(),
    );
    m.insert("connections".into(), h.connections.into());
    m.insert("resets".into(), h.resets.into());
    m.insert("rate".into(), json!(h.rate));
    Value::Object(m)
}

fn reasons_json(by_code: &BTreeMap<u32, u64>) -> Value {
    by_code
        .iter()
        .map(|(code, n)| (code.to_string(), Value::from(*n)))
        .collect::<Map<String, Value>>()
        .into()
}

/// The summary's session-layer fields: `session_stages`, `reject_reasons`, `rate`.
pub fn summary_fields(layer: &SessionLayerFigures) -> [(&'static str, Value); 3] {
    [
        (
            "session_stages",
            json!([distribution_json(
                ("stage", TEST_REQUEST_RTT),
                &layer.test_request_rtt
            )]),
        ),
        (
            "reject_reasons",
            json!({
                "session": reasons_json(&layer.session_reject_reasons),
                "business": reasons_json(&layer.business_reject_reasons),
                "without_reason": layer.rejects_without_reason,
            }),
        ),
        ("rate", json!(layer.rate)),
    ]
}

/// The interval's rate fields: `rate` (all sessions) and `session_rates` (sessions with
/// messages in the interval).
pub fn interval_fields(r: &IntervalReport<'_>) -> [(&'static str, Value); 2] {
    let sessions: Vec<Value> = r
        .figures
        .sessions()
        .iter()
        .filter(|s| s.health.rate.interval().messages > 0)
        .map(|s| {
            let RateFigures { messages, peak_1ms } = s.health.rate.interval();
            json!({"session": s.id, "messages": messages, "peak_1ms": peak_1ms})
        })
        .collect();
    [
        ("rate", json!(r.figures.layer().rate.interval())),
        ("session_rates", Value::Array(sessions)),
    ]
}

fn opt_age(age: Option<u64>) -> String {
    age.map_or("-".to_string(), |a| human_ns(a as f64))
}

/// The session layer in the brief summary: one line (messages, peak rate, TestRequest
/// round trip, the sessions with alarms), and the reject reasons when there are any.
pub fn write_brief(out: &mut impl Write, l: &SessionLayerFigures) -> io::Result<()> {
    let mut line = format!(
        "session layer: {} messages, peak {} in 1 ms",
        l.rate.messages, l.rate.peak_1ms
    );
    let rtt = &l.test_request_rtt;
    if rtt.count > 0 {
        line.push_str(&format!(
            "; {TEST_REQUEST_RTT} n={} p50 {} p99 {}",
            rtt.count,
            super::rows::percentile_text(rtt, 0),
            super::rows::percentile_text(rtt, 2)
        ));
    }
    const SHOWN: usize = 5;
    let alarmed: Vec<String> = l
        .sessions
        .iter()
        .filter_map(|s| {
            let alarms = s.alarm_names();
            (!alarms.is_empty()).then(|| {
                let who = names(&s.sender_comp_id, &s.target_comp_id);
                format!("#{} {who} {}", s.id, alarms.join(","))
            })
        })
        .collect();
    if !alarmed.is_empty() {
        let more = match alarmed.len().saturating_sub(SHOWN) {
            0 => String::new(),
            n => format!(" (+{n} more)"),
        };
        line.push_str(&format!(
            "; alarms: {}{more}",
            alarmed[..alarmed.len().min(SHOWN)].join(", ")
        ));
    }
    writeln!(out, "{line} (per session: --full)")?;
    write_reject_reasons(out, l)
}

/// Reject reasons by code, when there were rejects.
fn write_reject_reasons(out: &mut impl Write, l: &SessionLayerFigures) -> io::Result<()> {
    if !l.session_reject_reasons.is_empty() || !l.business_reject_reasons.is_empty() {
        let list = |m: &BTreeMap<u32, u64>| {
            m.iter()
                .map(|(c, n)| format!("{c}:{n}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        writeln!(
            out,
            "  reject reasons (code:count): session (373) [{}]  business (380) [{}]  without a reason {}",
            list(&l.session_reject_reasons),
            list(&l.business_reject_reasons),
            l.rejects_without_reason
        )?;
    }
    Ok(())
}

/// The summary's session-layer section in text.
pub fn write_summary(out: &mut impl Write, l: &SessionLayerFigures) -> io::Result<()> {
    let rtt = &l.test_request_rtt;
    writeln!(
        out,
        "\nsession layer: {} messages, peak {} in 1 ms",
        l.rate.messages, l.rate.peak_1ms
    )?;
    if rtt.count > 0 {
        super::rows::write_stage_header(out, "stage")?;
        super::rows::write_stage_row(out, TEST_REQUEST_RTT, rtt)?;
    }
    write_reject_reasons(out, l)?;
    if l.sessions.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "  {:>4} {:<24} {:<10} {:>4} {:>19} {:>19} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>7} {:>11} {:>15} {:>6} {:>9} {:>8}  alarms",
        "#", "sender->target", "state", "hb", "last msg cli/srv", "last hb cli/srv", "logon", "logout",
        "hbeat", "testrq", "resend", "gapfil", "seqrst", "possdup r/a", "rej s/b/o/c", "seqgap", "messages", "peak/ms"
    )?;
    for s in &l.sessions {
        let c = &s.counters;
        let [mc, ms] = s.last_message_age_ns;
        let [hc, hs] = s.last_heartbeat_age_ns;
        let alarms = s.alarm_names();
        writeln!(
            out,
            "  {:>4} {:<24} {:<10} {:>4} {:>19} {:>19} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>7} {:>11} {:>15} {:>6} {:>9} {:>8}  {}",
            s.id,
            names(&s.sender_comp_id, &s.target_comp_id),
            if s.logged_on { "logged-on" } else { "logged-out" },
            s.heart_bt_int_s.map_or("-".to_string(), |s| format!("{s}s")),
            format!("{}/{}", opt_age(mc), opt_age(ms)),
            format!("{}/{}", opt_age(hc), opt_age(hs)),
            c.logons,
            c.logouts,
            c.heartbeats,
            c.test_requests,
            c.resend_requests,
            c.gap_fills,
            c.sequence_resets,
            format!("{}/{}", c.possdup_requests, c.possdup_responses),
            format!(
                "{}/{}/{}/{}",
                c.session_rejects, c.business_rejects, c.order_rejects, c.cancel_rejects
            ),
            c.sequence_gaps,
            s.rate.messages,
            s.rate.peak_1ms,
            if alarms.is_empty() { "-".to_string() } else { alarms.join(",") },
        )?;
    }
    Ok(())
}
