//! The page's hop section (`--leg`): where the time of the linked orders went, per band of
//! `client_rtt`, and the slowest linked orders with their hops (`links` in the JSON).

use std::fmt::Write;

use fixscope_core::report::SummaryReport;

use super::markup::{escape, us};

/// Mean nanoseconds as microseconds with three decimals (as every figure of the page).
fn us_mean(ns: f64) -> String {
    format!("{:.3}", ns / 1000.0)
}

pub fn hops(h: &mut String, r: &SummaryReport<'_>) {
    let (Some(links), Some(c)) = (r.figures.links, r.counters.hops) else {
        return;
    };
    let _ = write!(
        h,
        "<h2>Hops (<code>--leg</code>)</h2>\n<p>parents <span data-k=\"counters.parents\">{}</span> = \
         linked <span data-k=\"counters.linked\">{}</span> + unlinked \
         <span data-k=\"counters.unlinked_parent\">{}</span> + ambiguous \
         <span data-k=\"counters.ambiguous\">{}</span>; children \
         <span data-k=\"counters.children\">{}</span>; local_ack \
         <span data-k=\"counters.local_ack\">{}</span></p>\n",
        c.parents, c.linked, c.unlinked_parent, c.ambiguous, c.children, c.local_ack
    );
    if links.bands.is_empty() {
        return;
    }
    h.push_str(
        "<p class=\"note\">Where the time went: per band of client_rtt, the mean of each hop \
         of the linked orders whose hops add up (µs; the means add up, percentiles would \
         not).</p>\n<table><tr><th class=\"l\">client_rtt band</th><th>orders</th>\
         <th>client_rtt</th><th>hop_out</th><th>venue_rtt</th><th>hop_back</th></tr>\n",
    );
    for (i, b) in links.bands.iter().enumerate() {
        let k = format!("links.where_time_went.{i}");
        let _ = writeln!(
            h,
            "<tr><td class=\"l\">{}</td><td data-k=\"{k}.orders\">{}</td>\
             <td data-k=\"{k}.client_rtt_mean_ns\">{}</td><td data-k=\"{k}.hop_out_mean_ns\">{}</td>\
             <td data-k=\"{k}.venue_rtt_mean_ns\">{}</td><td data-k=\"{k}.hop_back_mean_ns\">{}</td></tr>",
            b.band,
            b.orders,
            us_mean(b.client_rtt_mean_ns),
            us_mean(b.hop_out_mean_ns),
            us_mean(b.venue_rtt_mean_ns),
            us_mean(b.hop_back_mean_ns)
        );
    }
    h.push_str(
        "</table>\n<table><tr><th class=\"l\">slowest client order</th><th class=\"l\">linked by</th>\
         <th>client_rtt</th><th>hop_out</th><th>venue_rtt</th><th>hop_back</th></tr>\n",
    );
    for (i, ch) in links.slowest.iter().enumerate() {
        let k = format!("links.slowest.{i}");
        let _ = writeln!(
            h,
            "<tr><td class=\"l\" data-k=\"{k}.key\">{}</td><td class=\"l\">{}</td>\
             <td data-k=\"{k}.client_rtt_ns\">{}</td><td data-k=\"{k}.hop_out_ns\">{}</td>\
             <td data-k=\"{k}.venue_rtt_ns\">{}</td><td data-k=\"{k}.hop_back_ns\">{}</td></tr>",
            escape(&ch.key),
            escape(&ch.rule),
            us(ch.client_rtt_ns),
            us(ch.hop_out_ns),
            us(ch.venue_rtt_ns),
            us(ch.hop_back_ns)
        );
    }
    h.push_str("</table>\n");
}
