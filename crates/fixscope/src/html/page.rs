//! The report page: one self-contained HTML document (inline CSS, inline SVG charts, no
//! script or font from anywhere else), so it opens offline and can be mailed.
//!
//! Latencies are shown in microseconds with three decimals: readable, and exactly the
//! nanoseconds of the JSON summary. Every figure's cell carries `data-k` (its JSON path,
//! e.g. `stages.ack.p99_ns`) so tests can compare the page with the JSON of the same run.

use std::fmt::Write;

use fixscope_core::correlate::Stage;
use fixscope_core::report::{utc, SummaryReport};
use fixscope_core::slowest::SlowOrder;

use super::markup::{escape, stage_row, stage_table_head, us};
use super::meanings::meaning;
use super::RunInfo;

/// A markdown meaning with `code` spans as HTML.
fn md_inline(text: &str) -> String {
    let mut out = String::new();
    for (i, part) in escape(text).split('`').enumerate() {
        if i % 2 == 1 {
            let _ = write!(out, "<code>{part}</code>");
        } else {
            out.push_str(part);
        }
    }
    out
}

const STYLE: &str = "
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:13px;margin:8px 0}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:right;white-space:nowrap}
th{background:#f3f3f3}td.l,th.l{text-align:left}td.m{text-align:left;white-space:normal}
tr.warn td{background:#fff3e0}code{background:#f4f4f4;padding:0 2px}
.meta td{text-align:left;border:none;padding:1px 10px 1px 0}
.chart svg{max-width:100%;height:auto;border:1px solid #eee}
.note{color:#666;font-size:12px}
";

/// The whole document.
pub fn render(
    r: &SummaryReport<'_>,
    run: &RunInfo,
    percentile_svg: &str,
    over_time_svg: &str,
) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <title>fixscope report: {}</title><style>{STYLE}</style></head><body>\n",
        escape(&run.source)
    );
    let c = &r.counters;
    let (start, end) = r.times_utc().unwrap_or_else(|| {
        let none = "no packet of the watched ports".to_string();
        (none.clone(), none)
    });
    let _ = write!(
        h,
        "<h1>fixscope latency report</h1>\n<table class=\"meta\">\
         <tr><td>source</td><td data-k=\"source\">{}</td></tr>\
         <tr><td>command</td><td><code data-k=\"command\">{}</code></td></tr>\
         <tr><td>from</td><td data-k=\"start\">{}</td></tr>\
         <tr><td>to</td><td data-k=\"end\">{}</td></tr>\
         <tr><td>duration</td><td><span data-k=\"duration_s\">{:.3}</span> s</td></tr>\
         <tr><td>requests</td><td><span data-k=\"counters.requests\">{}</span>, matched \
         <span data-k=\"counters.matched\">{}</span>, never answered \
         <span data-k=\"counters.unanswered\">{}</span></td></tr></table>\n",
        escape(&run.source),
        escape(&run.command),
        start,
        end,
        r.duration_ns as f64 / 1e9,
        c.correlation.requests,
        c.correlation.matched,
        c.unanswered,
    );
    if let Some(why) = &r.incomplete {
        let _ = writeln!(
            h,
            "<p class=\"note\"><b>Incomplete:</b> <span data-k=\"incomplete_reason\">{}</span></p>",
            escape(why)
        );
    }
    if let Some(name) = r.span.timestamp_source {
        // Who stamped the packets (`live --tap`): runs stamped differently do not compare.
        let _ = writeln!(
            h,
            "<p class=\"note\">timestamps: <code data-k=\"timestamp_source\">{}</code> \
             (who stamped the packets, <code>--time-stamp-type</code>)</p>",
            escape(name)
        );
    }
    h.push_str("<h2>Latency by stage</h2>\n<p class=\"note\">Microseconds (exact to the nanosecond). \
        A percentile shown as &gt; range ranks among latencies above the histogram's range (<code>-x</code>): \
        its value is above it.</p>\n");
    stage_table_head(&mut h, "stage");
    for s in r.all_stages() {
        super::points::stage_row_of(&mut h, r.figures.clock, s.stage, &s.dist);
    }
    h.push_str("</table>\n");
    super::hops::hops(&mut h, r);
    super::points::clock(&mut h, r);
    super::feeds::feeds(&mut h, r);
    let _ = write!(
        h,
        "<h2>Charts</h2>\n<div class=\"chart\" id=\"percentiles\">{}</div>\n\
         <div class=\"chart\" id=\"over-time\">{}</div>\n",
        strip_xml_header(percentile_svg),
        strip_xml_header(over_time_svg)
    );
    if !r.by_request_type.is_empty() {
        h.push_str("<h2>By request type</h2>\n");
        stage_table_head(&mut h, "type / stage");
        for (t, stages) in &r.by_request_type {
            for s in stages.iter().filter(|s| s.dist.count > 0) {
                stage_row(
                    &mut h,
                    &format!("{} {}", t.msg_type(), s.stage.name()),
                    &format!("by_msg_type.{}.{}", t.msg_type(), s.stage.name()),
                    &s.dist,
                );
            }
        }
        h.push_str("</table>\n");
    }
    slowest(&mut h, &r.slowest, r.span.unix_offset_ns);
    sessions(&mut h, r);
    // The session layer (measured, or as a log held it) and `--by`.
    super::session_layer::section(&mut h, r);
    counters(&mut h, r);
    h.push_str(
        "<p class=\"note\">Written by fixscope; field meanings as in docs/output-json.md.</p>\n\
         <script>document.body.dataset.ready = \"1\";</script>\n</body></html>\n",
    );
    h
}

fn strip_xml_header(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg,
    }
}

fn slowest(h: &mut String, slowest: &[&[SlowOrder]; 4], unix_offset_ns: i64) {
    if slowest.iter().all(|l| l.is_empty()) {
        return;
    }
    h.push_str(
        "<h2>Slowest orders</h2>\n<table><tr><th class=\"l\">stage</th><th>#</th><th>latency µs</th>\
         <th class=\"l\">key</th><th>type</th><th>response</th><th>session</th>\
         <th class=\"l\">sender → target</th><th class=\"l\">client → server</th>\
         <th class=\"l\">request time (UTC)</th><th>late</th></tr>\n",
    );
    for o in slowest.iter().flat_map(|l| l.iter().enumerate()) {
        let (i, o) = o;
        let key = format!("slowest.{}.{i}", o.stage.name());
        let response = [
            Some(o.response_msg_type.clone()),
            o.exec_type.map(|c| format!("150={c}")),
            o.ord_status.map(|c| format!("39={c}")),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
        let addresses = o
            .connection
            .map_or("?".into(), |c| format!("{} → {}", c.client, c.server));
        let _ = writeln!(
            h,
            "<tr><td class=\"l\">{}</td><td>{}</td><td data-k=\"{key}.latency_ns\">{}</td>\
             <td class=\"l\" data-k=\"{key}.key\">{}</td><td>{}</td><td>{}</td><td data-k=\"{key}.session\">{}</td>\
             <td class=\"l\">{} → {}</td><td class=\"l\">{}</td><td class=\"l\" data-k=\"{key}.request_time\">{}</td><td>{}</td></tr>",
            o.stage.name(),
            i + 1,
            us(o.latency_ns),
            escape(&o.key),
            o.request_type.msg_type(),
            escape(&response),
            o.session,
            escape(&o.sender_comp_id),
            escape(&o.target_comp_id),
            escape(&addresses),
            utc(o.request_ts_ns, unix_offset_ns),
            if o.late { "late" } else { "" },
        );
        if let Some(b) = o.breakdown {
            // `--breakdown`: where the order's time went (— not measured).
            let parts: Vec<String> = Stage::BREAKDOWN
                .iter()
                .map(|&s| {
                    let v = b.get(s).map_or("—".to_string(), us);
                    format!(
                        "{} <span data-k=\"{key}.breakdown.{}\">{v}</span>",
                        s.name(),
                        s.name()
                    )
                })
                .collect();
            let _ = writeln!(
                h,
                "<tr><td></td><td></td><td class=\"l\" colspan=\"9\">{}</td></tr>",
                parts.join(" · ")
            );
        }
    }
    h.push_str("</table>\n");
}

fn sessions(h: &mut String, r: &SummaryReport<'_>) {
    if r.sessions.is_empty() {
        return;
    }
    // `--tls-keylog`: a TLS column when a session was carried over TLS.
    let tls = r.sessions.iter().any(|s| s.tls.is_some());
    h.push_str(
        "<h2>Sessions (first response)</h2>\n<table><tr><th>#</th><th class=\"l\">sender → target</th>\
         <th class=\"l\">client</th><th class=\"l\">server</th><th>requests</th><th>responses</th>\
         <th>p50 µs</th><th>p99 µs</th><th>max µs</th>",
    );
    h.push_str(if tls {
        "<th class=\"l\">TLS</th></tr>\n"
    } else {
        "</tr>\n"
    });
    for (i, s) in r.sessions.iter().enumerate() {
        let d = &s.first_response;
        let key = format!("sessions.{i}");
        let pct = |n: usize| match (d.count, d.percentiles_ns[n]) {
            (0, _) => "–".to_string(),
            (_, Some(v)) => us(v),
            (_, None) => format!("&gt; {}", us(d.range_ns)),
        };
        let tls_cell = match tls {
            true => format!(
                "<td class=\"l\">{}</td>",
                escape(&fixscope_core::report::text::session_tls_column(s))
            ),
            false => String::new(),
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"l\">{} → {}</td><td class=\"l\">{}</td><td class=\"l\">{}</td>\
             <td data-k=\"{key}.requests\">{}</td><td data-k=\"{key}.responses\">{}</td>\
             <td data-k=\"{key}.first_response.p50_ns\">{}</td><td data-k=\"{key}.first_response.p99_ns\">{}</td>\
             <td data-k=\"{key}.first_response.max_ns\">{}</td>{tls_cell}</tr>",
            s.id,
            escape(&s.sender_comp_id),
            escape(&s.target_comp_id),
            escape(&s.client),
            escape(&s.server),
            s.requests,
            s.responses,
            pct(0),
            pct(2),
            if d.count == 0 { "–".into() } else { us(d.max_ns) },
        );
    }
    if r.untracked_sessions > 0 {
        let _ = writeln!(
            h,
            "<tr><td class=\"l\" colspan=\"9\">+{} more sessions not broken down</td></tr>",
            r.untracked_sessions
        );
    }
    h.push_str("</table>\n");
}

/// Every counter; the alarms that are not zero in orange (one list for every output:
/// [`fixscope_core::report::counter_kinds`]).
fn counters(h: &mut String, r: &SummaryReport<'_>) {
    use fixscope_core::report::counter_kinds::is_alarm;
    h.push_str(
        "<h2>Counters</h2>\n<p class=\"note\">Rows in orange are non-zero counters that mean \
         something was missed or late.</p>\n<table><tr><th class=\"l\">counter</th><th>value</th>\
         <th class=\"l\">meaning</th></tr>\n",
    );
    let all = r.counters.list();
    for (group, list) in [("counters", &all[..]), ("source", r.source)] {
        for (name, v) in list {
            let warn = *v > 0 && is_alarm(name);
            let _ = writeln!(
                h,
                "<tr{}><td class=\"l\"><code>{}</code></td><td data-k=\"{group}.{}\">{v}</td><td class=\"m\">{}</td></tr>",
                if warn { " class=\"warn\"" } else { "" },
                escape(name),
                escape(name),
                meaning(name).map_or_else(String::new, md_inline),
            );
        }
    }
    h.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meanings_keep_their_code_spans() {
        assert_eq!(
            md_inline("after `-t` <x>"),
            "after <code>-t</code> &lt;x&gt;"
        );
    }
}
