//! `--leg`'s own lines in the text summary: the ledger, what linked the parents, and where
//! the time of the linked orders went (`docs/hops.md`).

use std::io::{self, Write};

use super::human_ns;
use fixscope_hops::LinkFigures;
use fixscope_model::counters::Counters;

pub fn write_links(
    out: &mut impl Write,
    links: &LinkFigures,
    counters: &Counters,
) -> io::Result<()> {
    let Some(c) = counters.hops else {
        return Ok(());
    };
    writeln!(out, "\nhops:")?;
    let pending = |n: u64| {
        if n > 0 {
            format!(" + pending {n}")
        } else {
            String::new()
        }
    };
    writeln!(
        out,
        "  parents {} = linked {} + unlinked {} + ambiguous {}{}",
        c.parents,
        c.linked,
        c.unlinked_parent,
        c.ambiguous,
        pending(c.parents_pending)
    )?;
    writeln!(
        out,
        "  children {} = linked {} + host's own {} + ambiguous {} + late {}{}",
        c.children,
        c.linked_children,
        c.unlinked_child,
        c.ambiguous_child,
        c.late_link,
        pending(c.children_pending)
    )?;
    let rules: Vec<String> = links
        .rules
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(r, n)| format!("{r} {n}"))
        .collect();
    let fanout: Vec<String> = links
        .children_per_parent
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(i, n)| format!("{}: {n}", i + 1))
        .collect();
    writeln!(
        out,
        "  linked by: {}; children per parent: {}",
        if rules.is_empty() {
            "none".into()
        } else {
            rules.join(", ")
        },
        if fanout.is_empty() {
            "-".into()
        } else {
            fanout.join(", ")
        }
    )?;
    if c.local_ack > 0 {
        writeln!(
            out,
            "  local_ack {}: answered by the router before the venue (their client_rtt is not the sum of their hops)",
            c.local_ack
        )?;
    }
    if links.bands.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "\nwhere the time went (linked orders; means per band of client_rtt, which add up):"
    )?;
    writeln!(
        out,
        "  {:<11} {:>8} {:>11} {:>11} {:>11} {:>11}",
        "client_rtt", "orders", "client_rtt", "hop_out", "venue_rtt", "hop_back"
    )?;
    for b in &links.bands {
        writeln!(
            out,
            "  {:<11} {:>8} {:>11} {:>11} {:>11} {:>11}",
            b.band,
            b.orders,
            human_ns(b.client_rtt_mean_ns),
            human_ns(b.hop_out_mean_ns),
            human_ns(b.venue_rtt_mean_ns),
            human_ns(b.hop_back_mean_ns)
        )?;
    }
    writeln!(out, "  slowest client orders:")?;
    for ch in links.slowest.iter().take(5) {
        writeln!(
            out,
            "  {:<20} {:<8} client_rtt {:>9} = hop_out {:>9} + venue_rtt {:>9} + hop_back {:>9}",
            ch.key,
            ch.rule,
            human_ns(ch.client_rtt_ns as f64),
            human_ns(ch.hop_out_ns as f64),
            human_ns(ch.venue_rtt_ns as f64),
            human_ns(ch.hop_back_ns as f64)
        )?;
    }
    Ok(())
}
