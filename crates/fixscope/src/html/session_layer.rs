//! The page's session-layer section (#21): each session's state, alarms and session-layer
//! counters, the `test_request_rtt` stage, message rates, and `--by`'s tables. Every figure
//! cell carries its JSON path (`data-k`), as the rest of the page.

use std::fmt::Write;

use fixscope_core::correlate::Stage;
use fixscope_core::report::session_figures::SessionLayerFigures;
use fixscope_core::report::SummaryReport;
use fixscope_core::stats::Distribution;

use super::markup::{escape, stage_row, stage_table_head};

/// The counters shown per session, in order.
const COLUMNS: [&str; 15] = [
    "logons",
    "logouts",
    "heartbeats",
    "test_requests",
    "test_requests_unanswered",
    "resend_requests",
    "gap_fills",
    "sequence_resets",
    "possdup_requests",
    "possdup_responses",
    "session_rejects",
    "business_rejects",
    "order_rejects",
    "cancel_rejects",
    "sequence_gaps",
];

pub fn section(h: &mut String, r: &SummaryReport<'_>) {
    if let Some(layer) = r.figures.session_layer_figures(r.span.end_ns) {
        layer_section(h, &layer);
    }
    by_section(h, r);
}

/// The session layer: the run's rate and `test_request_rtt`, then a row per session.
fn layer_section(h: &mut String, layer: &SessionLayerFigures) {
    let rate = layer.rate;
    let _ = writeln!(
        h,
        "<h2>Session layer</h2>\n<p>messages <span data-k=\"rate.messages\">{}</span>, \
         peak in 1 ms <span data-k=\"rate.peak_1ms\">{}</span></p>",
        rate.messages, rate.peak_1ms
    );
    stage_table_head(h, "stage");
    stage_row(
        h,
        "test_request_rtt",
        "session_stages.0",
        &layer.test_request_rtt,
    );
    h.push_str("</table>\n");
    if !layer.sessions.is_empty() {
        h.push_str("<table><tr><th>#</th><th class=\"l\">sender → target</th><th class=\"l\">state</th><th class=\"l\">alarms</th><th>HeartBtInt s</th><th>connections</th>");
        for c in COLUMNS {
            let _ = write!(h, "<th>{}</th>", c.replace('_', " "));
        }
        h.push_str("<th>messages</th><th>peak / 1 ms</th></tr>\n");
        for (i, s) in layer.sessions.iter().enumerate() {
            let key = format!("sessions.{i}.session_layer");
            let alarms = s.alarm_names();
            let warn = if alarms.is_empty() {
                ""
            } else {
                " class=\"warn\""
            };
            let _ = write!(
                h,
                "<tr{warn}><td>{}</td><td class=\"l\">{} → {}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td data-k=\"{key}.connections\">{}</td>",
                s.id,
                escape(&s.sender_comp_id),
                escape(&s.target_comp_id),
                if s.logged_on { "logged on" } else { "logged out" },
                if alarms.is_empty() { "–".to_string() } else { alarms.join(", ") },
                s.heart_bt_int_s.map_or("–".to_string(), |s| s.to_string()),
                s.connections,
            );
            let counters = fixscope_core::source::counters_of(&s.counters);
            for c in COLUMNS {
                let v = counters.iter().find(|(n, _)| n == c).map_or(0, |x| x.1);
                let _ = write!(h, "<td data-k=\"{key}.{c}\">{v}</td>");
            }
            let run = s.rate;
            let _ = writeln!(
                h,
                "<td data-k=\"{key}.rate.messages\">{}</td><td data-k=\"{key}.rate.peak_1ms\">{}</td></tr>",
                run.messages, run.peak_1ms
            );
        }
        h.push_str("</table>\n");
    }
}

/// `--by`'s tables.
fn by_section(h: &mut String, r: &SummaryReport<'_>) {
    let stats = r.figures;
    if let Some(by) = stats.by() {
        let mut i = 0;
        for t in &by.tags {
            let _ = writeln!(h, "<h2>By {} (--by)</h2>", t.field.heading());
            stage_table_head(h, "value / stage");
            for e in t.ranked().iter() {
                for (j, &stage) in Stage::ALL.iter().enumerate() {
                    let d = e
                        .stage(stage)
                        .map_or_else(Distribution::default, |r| r.distribution());
                    if d.count > 0 {
                        let label = format!("{} {}", e.value, stage.name());
                        stage_row(h, &label, &format!("by.{i}.stages.{j}"), &d);
                    }
                }
                i += 1;
            }
            h.push_str("</table>\n");
        }
    }
}
