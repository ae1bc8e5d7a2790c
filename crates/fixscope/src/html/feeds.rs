//! The page's market-data part (`--md`): per feed its packets, gaps and what they lost,
//! duplicates, recoveries, the delay against the sender's clock above its fastest packet;
//! per A/B pair who came first and what one feed alone carried (`feeds` in the JSON).

use std::fmt::Write;

use fixscope_core::report::feeds::{FeedLeg, FeedSummary, Lead};
use fixscope_core::report::SummaryReport;

use super::markup::{escape, us};

/// The feeds' section, when the run had `--md`.
pub fn feeds(h: &mut String, r: &SummaryReport<'_>) {
    if r.feeds.is_empty() {
        return;
    }
    h.push_str(
        "<h2>Market data feeds (<code>--md</code>)</h2>\n<p class=\"note\">Counted by each \
         protocol's own sequence numbers. Delay: capture time − the sender's stamp, above the \
         feed's fastest packet (the two clocks' offset cancels; it is not known here).</p>\n\
         <table><tr><th class=\"l\">feed</th><th>packets</th><th>messages</th><th>gaps</th>\
         <th>lost</th><th>duplicate packets</th><th>recovered</th><th>peak messages/ms</th>\
         <th>delay p50 µs</th><th>p99 µs</th><th>max µs</th></tr>\n",
    );
    for (i, f) in r.feeds.iter().enumerate() {
        for (j, (leg, name)) in f.legs.iter().zip(["A", "B"]).enumerate() {
            leg_row(h, &format!("feeds.{i}.legs.{j}"), f, name, leg);
        }
    }
    h.push_str("</table>\n");
    let pairs: Vec<(usize, &FeedSummary)> = r
        .feeds
        .iter()
        .enumerate()
        .filter(|(_, f)| f.arbitration.is_some())
        .collect();
    if pairs.is_empty() {
        return;
    }
    h.push_str(
        "<table><tr><th class=\"l\">A/B pair</th><th>first</th><th>packets</th>\
         <th>lead min µs</th><th>p50 µs</th><th>p99 µs</th><th>max µs</th>\
         <th>only on this feed</th></tr>\n",
    );
    for (i, f) in pairs {
        let Some(a) = &f.arbitration else {
            continue;
        };
        let k = format!("feeds.{i}.arbitration");
        lead_row(
            h,
            f,
            "A",
            &format!("{k}.a_first"),
            &a.a_first,
            &format!("{k}.only_a"),
            a.only_a,
        );
        lead_row(
            h,
            f,
            "B",
            &format!("{k}.b_first"),
            &a.b_first,
            &format!("{k}.only_b"),
            a.only_b,
        );
    }
    h.push_str("</table>\n");
}

fn leg_row(h: &mut String, k: &str, f: &FeedSummary, name: &str, leg: &FeedLeg) {
    let delay = |field: &str, v: Option<u64>| match v {
        Some(v) => format!("<td data-k=\"{k}.delay.{field}\">{}</td>", us(v)),
        None => "<td>–</td>".into(),
    };
    let d = leg.delay.as_ref();
    let _ = writeln!(
        h,
        "<tr{}><td class=\"l\">{} {name} {} ({})</td><td data-k=\"{k}.packets\">{}</td>\
         <td data-k=\"{k}.messages\">{}</td><td data-k=\"{k}.gaps\">{}</td>\
         <td data-k=\"{k}.lost\">{}</td><td data-k=\"{k}.duplicate_packets\">{}</td>\
         <td data-k=\"{k}.recovered_packets\">{}</td>\
         <td data-k=\"{k}.peak_messages_per_ms\">{}</td>{}{}{}</tr>",
        if leg.lost > 0 { " class=\"warn\"" } else { "" },
        escape(&f.name),
        escape(&leg.address),
        escape(&leg.lost_unit),
        leg.packets,
        leg.messages,
        leg.gaps,
        leg.lost,
        leg.duplicate_packets,
        leg.recovered_packets,
        leg.peak_messages_per_ms,
        delay("above_min_p50_ns", d.map(|d| d.above_min_p50_ns)),
        delay("above_min_p99_ns", d.map(|d| d.above_min_p99_ns)),
        delay("above_min_max_ns", d.map(|d| d.above_min_max_ns)),
    );
}

fn lead_row(
    h: &mut String,
    f: &FeedSummary,
    feed: &str,
    k: &str,
    lead: &Lead,
    only_k: &str,
    only: u64,
) {
    let cell = |field: &str, v: Option<u64>| match v {
        Some(v) => format!("<td data-k=\"{k}.{field}\">{}</td>", us(v)),
        None => "<td>–</td>".into(),
    };
    let _ = writeln!(
        h,
        "<tr><td class=\"l\">{}</td><td>{feed}</td><td data-k=\"{k}.count\">{}</td>{}{}{}{}\
         <td data-k=\"{only_k}\">{only}</td></tr>",
        escape(&f.name),
        lead.count,
        cell("min_ns", lead.min_ns),
        cell("p50_ns", lead.p50_ns),
        cell("p99_ns", lead.p99_ns),
        cell("max_ns", lead.max_ns),
    );
}
