//! The FIX session layer and `--by` in Prometheus (#21): the `test_request_rtt` histogram,
//! reject reasons by code, the message rate's 1 ms peak, how many sessions are logged on /
//! stale / waiting on a TestRequest; per session (`--prometheus-sessions N`) each one's
//! state, alarms, last-message ages, session-layer counters and rate; per `--by` value
//! (`--prometheus-by`, opt-in: labels from the wire) every stage's latency.

use fixscope_core::correlate::Stage;
use fixscope_core::figures::Figures;

use super::histogram::{from_recorder, ClassicBounds};
use super::model::{Family, Kind, Sample, Value};

fn family(
    name: &str,
    help: &str,
    unit: Option<&'static str>,
    kind: Kind,
    samples: Vec<Sample>,
) -> Family {
    Family {
        name: name.into(),
        help: help.into(),
        unit,
        kind,
        samples,
    }
}

fn sample(labels: Vec<(&'static str, String)>, value: Value) -> Sample {
    Sample { labels, value }
}

/// The run's session-layer families (always exported).
pub fn totals(stats: Figures<'_>, now_ns: u64, bounds: &ClassicBounds) -> Vec<Family> {
    let layer = stats.layer();
    let mut reasons = Vec::new();
    for (kind, by_code) in [
        ("session", &layer.session_reject_reasons),
        ("business", &layer.business_reject_reasons),
    ] {
        for (code, n) in by_code {
            reasons.push(sample(
                vec![("kind", kind.into()), ("code", code.to_string())],
                Value::Int(*n),
            ));
        }
    }
    let (mut on, mut stale, mut waiting) = (0, 0, 0);
    for s in stats.sessions() {
        let a = s.health.alarms(now_ns);
        on += u64::from(s.health.logged_on);
        stale += u64::from(a.stale);
        waiting += u64::from(a.test_request_unanswered);
    }
    let mut out = vec![
        family(
            "fixscope_reject_reasons",
            "Session Rejects (kind=session, SessionRejectReason 373) and BusinessMessageRejects (kind=business, BusinessRejectReason 380) by reason code",
            None,
            Kind::Counter,
            reasons,
        ),
        family(
            "fixscope_messages_peak_1ms",
            "The most FIX messages (all sessions, both directions) in any 1 ms window of the latest interval",
            None,
            Kind::Gauge,
            vec![sample(vec![], Value::Int(layer.rate.interval().peak_1ms))],
        ),
        family(
            "fixscope_sessions_logged_on",
            "Sessions logged on (Logon seen both ways, no Logout or close since)",
            None,
            Kind::Gauge,
            vec![sample(vec![], Value::Int(on))],
        ),
        family(
            "fixscope_sessions_stale",
            "Alarm: logged-on sessions with a side silent for more than 2x HeartBtInt",
            None,
            Kind::Gauge,
            vec![sample(vec![], Value::Int(stale))],
        ),
        family(
            "fixscope_sessions_test_request_unanswered",
            "Alarm: sessions with a TestRequest unanswered for more than HeartBtInt (30 s if unknown or 0)",
            None,
            Kind::Gauge,
            vec![sample(vec![], Value::Int(waiting))],
        ),
    ];
    if layer.test_request_rtt.count() > 0 {
        out.push(family(
            "fixscope_test_request_rtt_seconds",
            "TestRequest to the Heartbeat answering it (first in, first out per session and side)",
            Some("seconds"),
            Kind::Histogram,
            vec![sample(
                vec![],
                Value::Histogram(Box::new(from_recorder(&layer.test_request_rtt, bounds))),
            )],
        ));
    }
    out
}

/// Per-session families for the first `n` sessions.
pub fn per_session(stats: Figures<'_>, n: usize, now_ns: u64) -> Vec<Family> {
    let mut logged_on = Vec::new();
    let mut stale = Vec::new();
    let mut waiting = Vec::new();
    let mut age = Vec::new();
    let mut events = Vec::new();
    let mut messages = Vec::new();
    let mut peak = Vec::new();
    for s in stats.sessions().iter().take(n) {
        let labels = vec![
            ("session", s.id.to_string()),
            ("sender_comp_id", s.sender_comp_id.clone()),
            ("target_comp_id", s.target_comp_id.clone()),
        ];
        let h = &s.health;
        let a = h.alarms(now_ns);
        logged_on.push(sample(labels.clone(), Value::Int(h.logged_on.into())));
        stale.push(sample(labels.clone(), Value::Int(a.stale.into())));
        waiting.push(sample(
            labels.clone(),
            Value::Int(a.test_request_unanswered.into()),
        ));
        for (side, a) in ["client", "server"]
            .into_iter()
            .zip(h.last_message_age_ns(now_ns))
        {
            if let Some(ns) = a {
                let mut l = labels.clone();
                l.push(("side", side.into()));
                age.push(sample(l, Value::Float(ns as f64 * 1e-9)));
            }
        }
        for (name, v) in fixscope_core::source::counters_of(&h.counters) {
            let mut l = labels.clone();
            l.push(("event", name));
            events.push(sample(l, Value::Int(v)));
        }
        messages.push(sample(labels.clone(), Value::Int(h.rate.run().messages)));
        peak.push(sample(labels, Value::Int(h.rate.interval().peak_1ms)));
    }
    vec![
        family("fixscope_session_logged_on", "1 when the session is logged on", None, Kind::Gauge, logged_on),
        family("fixscope_session_stale", "Alarm: the session is logged on and a side was silent for more than 2x HeartBtInt", None, Kind::Gauge, stale),
        family("fixscope_session_test_request_unanswered", "Alarm: a TestRequest of the session unanswered for more than HeartBtInt", None, Kind::Gauge, waiting),
        family("fixscope_session_last_message_age_seconds", "Time since each side of the session last sent a message (any type)", Some("seconds"), Kind::Gauge, age),
        family("fixscope_session_layer_events", "The session's session-layer counters (event: logons, logouts, heartbeats, test_requests, test_requests_unanswered, resend_requests, gap_fills, sequence_resets, possdup_requests, possdup_responses, session_rejects, business_rejects, order_rejects, cancel_rejects, sequence_gaps, sequence_skips_at_capture_holes)", None, Kind::Counter, events),
        family("fixscope_session_messages", "FIX messages of the session, both directions", None, Kind::Counter, messages),
        family("fixscope_session_messages_peak_1ms", "The most messages of the session in any 1 ms window of the latest interval", None, Kind::Gauge, peak),
    ]
}

/// `--by` latency per tag, value and stage (`--prometheus-by`).
pub fn by(stats: Figures<'_>, bounds: &ClassicBounds) -> Vec<Family> {
    let Some(by) = stats.by() else {
        return Vec::new();
    };
    let mut samples = Vec::new();
    for t in &by.tags {
        for e in t.ranked().iter() {
            for &stage in &Stage::ALL {
                if let Some(rec) = e.stage(stage).filter(|r| r.count() > 0) {
                    samples.push(sample(
                        vec![
                            ("tag", t.field.to_string()),
                            ("value", e.value.clone()),
                            ("stage", stage.name().into()),
                        ],
                        Value::Histogram(Box::new(from_recorder(rec, bounds))),
                    ));
                }
            }
        }
    }
    vec![family(
        "fixscope_by_latency_seconds",
        "Latency by stage and the value of a --by tag of the orders (the --by-limit busiest values so far; the rest as (other), which loses counts when a value enters the busiest)",
        Some("seconds"),
        Kind::Histogram,
        samples,
    )]
}
