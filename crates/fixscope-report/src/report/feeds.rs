//! Market-data feeds (`--md`): what the summary says of each — per feed (one group:port)
//! its own counts and gaps, per A/B pair the arbitration — in no protocol's words (the
//! counters come named by their protocol crate). JSON `feeds`, and a text block.

use std::io::{self, Write};

use serde::Serialize;

use fixscope_model::source::Counter;

/// One `--md` entry: a feed, or an A/B pair of feeds carrying the same stream.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FeedSummary {
    /// As given: `GROUP:PORT[,GROUP:PORT]`.
    pub name: String,
    pub protocol: String,
    /// A, then B.
    pub legs: Vec<FeedLeg>,
    /// An A/B pair's arbitration (`None` for a single feed).
    pub arbitration: Option<Arbitration>,
}

/// One feed's health.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FeedLeg {
    pub address: String,
    /// What every protocol counts, in its own sequence numbers.
    pub packets: u64,
    pub messages: u64,
    pub gaps: u64,
    /// What the gaps lost, in `lost_unit`s: the unit the protocol numbers (ITCH's
    /// MoldUDP64 numbers messages, MDP 3.0 packets).
    pub lost: u64,
    pub lost_unit: String,
    pub duplicate_packets: u64,
    pub recovered_packets: u64,
    pub peak_messages_per_ms: u64,
    /// All its protocol's counters, by their names.
    #[serde(serialize_with = "counter_map")]
    pub counters: Vec<Counter>,
    /// Messages per second over the feed's first to last packet (`None`: one packet).
    pub message_rate_per_s: Option<f64>,
    /// The gaps still open at the end (never filled by a later copy): the first ones.
    pub open_gaps: Vec<GapSummary>,
    /// How late its packets came against the sender's clock (`None`: no sender time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay: Option<FeedDelay>,
}

/// How late a feed's new packets came against the sender's own clock, given above the
/// minimum (`capture − sent − min`): the two clocks are not known to agree, and their
/// offset (constant over the capture) cancels there. The raw `capture − sent` only where the
/// sender's clock is absolute (MDP 3.0's UTC SendingTime), and it includes that offset.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct FeedDelay {
    /// New packets with the sender's time (copies, recoveries and duplicates are not).
    pub packets: u64,
    /// Packets more than ~2.1 s from the first's value (a clock step): not in the figures.
    pub out_of_range: u64,
    /// What the sender stamped: `SendingTime` (MDP 3.0), `timestamp` (ITCH, its first
    /// message's, ns since the venue's midnight).
    pub sender_clock: String,
    pub above_min_p50_ns: u64,
    pub above_min_p99_ns: u64,
    pub above_min_max_ns: u64,
    /// `capture − sent`, raw: includes the clocks' offset, which is not known here.
    pub raw_min_ns: Option<i64>,
    pub raw_p50_ns: Option<i64>,
    pub raw_max_ns: Option<i64>,
}

/// Sequence numbers a feed never delivered.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct GapSummary {
    /// The protocol's session, when it has one (MoldUDP64's).
    pub session: Option<String>,
    pub first: u64,
    pub last: u64,
    /// When the packet past the gap was captured.
    pub detected_ns: u64,
}

/// For each packet seen on both feeds, which came first and by how much; and what each
/// feed alone lost that the other covered.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Arbitration {
    /// Packets only one feed carried: what the other alone lost.
    pub only_a: u64,
    pub only_b: u64,
    /// All the protocol's arbitration counters, by their names.
    #[serde(serialize_with = "counter_map")]
    pub counters: Vec<Counter>,
    /// How much earlier A's copy was, over the packets A had first.
    pub a_first: Lead,
    /// How much earlier B's copy was, over the packets B had first.
    pub b_first: Lead,
}

/// A distribution of leads, ns (`None`s: no packet).
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Lead {
    pub count: u64,
    pub min_ns: Option<u64>,
    pub p50_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    pub max_ns: Option<u64>,
}

fn counter_map<S: serde::Serializer>(c: &[Counter], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(c.len()))?;
    for (k, v) in c {
        m.serialize_entry(k, v)?;
    }
    m.end()
}

/// The feeds as the JSON summary's `feeds`.
pub fn feeds_json(feeds: &[FeedSummary]) -> serde_json::Value {
    serde_json::to_value(feeds).unwrap_or(serde_json::Value::Null)
}

/// The text summary's feed block: per feed its packets, messages, gaps and duplicates, per
/// pair who came first.
pub fn write_feeds(out: &mut impl Write, feeds: &[FeedSummary]) -> io::Result<()> {
    if feeds.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nmarket data feeds:")?;
    for f in feeds {
        writeln!(out, "  {} ({})", f.name, f.protocol)?;
        for (leg, name) in f.legs.iter().zip(["A", "B"]) {
            writeln!(
                out,
                "    {name} {}: {} packets, {} messages, {} gaps ({} {} lost), {} duplicate \
                 packets, {} recovered, peak {} messages/ms",
                leg.address,
                leg.packets,
                leg.messages,
                leg.gaps,
                leg.lost,
                leg.lost_unit,
                leg.duplicate_packets,
                leg.recovered_packets,
                leg.peak_messages_per_ms,
            )?;
            if let Some(d) = &leg.delay {
                write_delay(out, d)?;
            }
            for g in &leg.open_gaps {
                let session = g
                    .session
                    .as_ref()
                    .map_or(String::new(), |s| format!("session {s} "));
                writeln!(
                    out,
                    "      gap: {session}{} {}..={}",
                    leg.lost_unit, g.first, g.last
                )?;
            }
        }
        if let Some(a) = &f.arbitration {
            writeln!(
                out,
                "    A/B: A first {} (p50 {}), B first {} (p50 {}); only on A {}, only on B {}",
                a.a_first.count,
                lead(a.a_first.p50_ns),
                a.b_first.count,
                lead(a.b_first.p50_ns),
                a.only_a,
                a.only_b,
            )?;
        }
    }
    Ok(())
}

/// A leg's delay line: above its minimum, then raw with what it includes.
fn write_delay(out: &mut impl Write, d: &FeedDelay) -> io::Result<()> {
    let us = |ns: i64| format!("{:.1}us", ns as f64 / 1e3);
    write!(
        out,
        "      delay vs its {} above the fastest packet: p50 {} p99 {} max {} ({} packets)",
        d.sender_clock,
        us(d.above_min_p50_ns as i64),
        us(d.above_min_p99_ns as i64),
        us(d.above_min_max_ns as i64),
        d.packets,
    )?;
    if let (Some(min), Some(p50)) = (d.raw_min_ns, d.raw_p50_ns) {
        write!(
            out,
            "; capture - {} min {} p50 {} (includes the clocks' offset, not known)",
            d.sender_clock,
            us(min),
            us(p50)
        )?;
    }
    if d.out_of_range > 0 {
        write!(out, "; {} packets out of range", d.out_of_range)?;
    }
    writeln!(out)
}

fn lead(ns: Option<u64>) -> String {
    ns.map_or("-".into(), |n| format!("{:.1}us", n as f64 / 1e3))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary() -> FeedSummary {
        let leg = |address: &str, gaps: u64| FeedLeg {
            address: address.into(),
            packets: 10,
            messages: 30,
            gaps,
            lost: 2 * gaps,
            lost_unit: "messages".into(),
            duplicate_packets: 0,
            recovered_packets: 0,
            peak_messages_per_ms: 4,
            counters: vec![
                ("moldudp64_packets".into(), 10),
                ("moldudp64_messages".into(), 30),
                ("moldudp64_gaps".into(), gaps),
                ("moldudp64_gap_messages".into(), 2 * gaps),
            ],
            message_rate_per_s: Some(3.0),
            open_gaps: vec![],
            delay: None,
        };
        FeedSummary {
            name: "233.54.12.1:26400,233.54.12.2:26400".into(),
            protocol: "itch50".into(),
            legs: vec![leg("233.54.12.1:26400", 1), leg("233.54.12.2:26400", 0)],
            arbitration: Some(Arbitration {
                only_a: 2,
                only_b: 0,
                counters: vec![("ab_only_a".into(), 2), ("ab_only_b".into(), 0)],
                a_first: Lead {
                    count: 7,
                    p50_ns: Some(1_500),
                    ..Lead::default()
                },
                b_first: Lead::default(),
            }),
        }
    }

    #[test]
    fn a_pair_reads_in_text_and_json_by_its_counters() {
        let mut out = Vec::new();
        write_feeds(&mut out, &[summary()]).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("A 233.54.12.1:26400: 10 packets, 30 messages, 1 gaps (2 messages lost)"),
            "{text}"
        );
        assert!(text.contains("A first 7 (p50 1.5us)"), "{text}");
        assert!(text.contains("only on A 2, only on B 0"), "{text}");
        let json = feeds_json(&[summary()]);
        assert_eq!(json[0]["legs"][0]["counters"]["moldudp64_gaps"], 1);
        assert_eq!(json[0]["arbitration"]["a_first"]["count"], 7);
        let mut none = Vec::new();
        write_feeds(&mut none, &[]).unwrap();
        assert!(none.is_empty());
    }
}
