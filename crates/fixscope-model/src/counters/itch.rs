//! Nasdaq TotalView-ITCH 5.0 over MoldUDP64 (`fixscope-itch`): a market-data feed's health
//! (MoldUDP64 packets and sequence numbers, per feed), its ITCH messages, and the A/B
//! arbitration of a redundant pair (docs/protocols.md, "Nasdaq TotalView-ITCH 5.0 over
//! MoldUDP64", has their rules). Every datagram fed to a feed lands in exactly one of
//! `moldudp64_new_packets`, `_duplicate_packets`, `_recovered_packets`, `_heartbeats`,
//! `_end_of_session`, `_requests`, `_undecodable_packets` (their sum is
//! `moldudp64_packets`); every message of a decoded packet in exactly one of
//! `moldudp64_new_messages`, `_duplicate_messages`, `_recovered_messages` (their sum is
//! `moldudp64_messages`). `moldudp64_peak_messages_per_ms` is a maximum, not a count:
//! merging keeps the larger.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ItchCounters {
    /// UDP datagrams fed to a feed's tracker, whatever they held.
    pub moldudp64_packets: u64,
    /// Downstream packets carrying at least one message past the next sequence number
    /// expected of their session (any overlap with what was seen counts in
    /// `moldudp64_duplicate_messages`).
    pub moldudp64_new_packets: u64,
    /// Downstream packets whose messages were all seen before on this feed (a
    /// retransmission, a duplicated datagram): nothing new.
    pub moldudp64_duplicate_packets: u64,
    /// Downstream packets at or below the next expected sequence number carrying at
    /// least one message a gap had skipped: late (reordered) or retransmitted.
    pub moldudp64_recovered_packets: u64,
    /// Heartbeats (message count 0); one numbered past the next expected sequence number
    /// also opens a gap.
    pub moldudp64_heartbeats: u64,
    /// End of Session packets (message count 0xFFFF).
    pub moldudp64_end_of_session: u64,
    /// Request Packets (a listener asking the re-request server for retransmission).
    pub moldudp64_requests: u64,
    /// Datagrams that are no MoldUDP64 packet (truncated, a block past the datagram, a
    /// count that disagrees with the blocks, trailing bytes): rejected whole, their
    /// messages never counted (their sequence numbers show as a gap).
    pub moldudp64_undecodable_packets: u64,
    /// Messages in decoded downstream packets.
    pub moldudp64_messages: u64,
    /// Messages past the next expected sequence number of their session: first seen.
    pub moldudp64_new_messages: u64,
    /// Messages seen before on this feed.
    pub moldudp64_duplicate_messages: u64,
    /// Messages a gap had skipped, seen later (reordered or retransmitted).
    pub moldudp64_recovered_messages: u64,
    /// Sequence gaps: a packet (or heartbeat, end of session) of a session numbered past
    /// the next expected sequence number.
    pub moldudp64_gaps: u64,
    /// The messages those gaps skipped, when they were found (recovery does not lower it:
    /// `moldudp64_gap_messages - moldudp64_recovered_messages` were never seen, unless
    /// gaps were forgotten).
    pub moldudp64_gap_messages: u64,
    /// Open gaps dropped because more than the tracker's bound were open at once: a later
    /// copy of their messages counts as a duplicate.
    pub moldudp64_gaps_forgotten: u64,
    /// A packet of another MoldUDP64 session than the feed's last: a new epoch of
    /// numbering (never a gap).
    pub moldudp64_session_changes: u64,
    /// The most messages (of every decoded packet) captured in one aligned 1 ms window:
    /// the feed's worst microburst. A maximum: merging keeps the larger.
    pub moldudp64_peak_messages_per_ms: u64,
    /// ITCH 5.0 messages decoded (of a known type and its exact size).
    pub itch_messages: u64,
    /// ITCH messages of a known type whose block length is not the type's size, or
    /// empty blocks: not read.
    pub itch_undecodable_messages: u64,
    /// ITCH messages of a type ITCH 5.0 does not define: not read.
    pub itch_unknown_types: u64,
    /// Packets seen on both feeds of an A/B pair, first on A.
    pub ab_first_a: u64,
    /// Packets seen on both feeds, first on B.
    pub ab_first_b: u64,
    /// Packets seen on both feeds with the same capture time.
    pub ab_same_time: u64,
    /// Packets seen only on A (B lost them; A covered for it).
    pub ab_only_a: u64,
    /// Packets seen only on B (A lost them).
    pub ab_only_b: u64,
    /// The messages of the packets seen only on A.
    pub ab_only_a_messages: u64,
    /// The messages of the packets seen only on B.
    pub ab_only_b_messages: u64,
    /// A packet seen twice on the same feed (a retransmission, a duplicated datagram):
    /// not arbitrated again.
    pub ab_same_feed_duplicates: u64,
    /// Packets numbered below the arbitration window (both feeds long past them): not
    /// arbitrated.
    pub ab_late_packets: u64,
}

impl ItchCounters {
    /// Adds `other`'s counts (the peak: the larger of the two).
    pub fn merge_from(&mut self, other: &Self) {
        let peak = self
            .moldudp64_peak_messages_per_ms
            .max(other.moldudp64_peak_messages_per_ms);
        let mut fields = self.fields_mut();
        for (mine, theirs) in fields.iter_mut().zip(other.fields()) {
            **mine += theirs;
        }
        self.moldudp64_peak_messages_per_ms = peak;
    }

    /// What each count added since `earlier` (the peak: as now, a maximum has no
    /// difference).
    pub fn minus(&self, earlier: &Self) -> Self {
        let mut d = *self;
        for (mine, then) in d.fields_mut().iter_mut().zip(earlier.fields()) {
            **mine = mine.saturating_sub(then);
        }
        d.moldudp64_peak_messages_per_ms = self.moldudp64_peak_messages_per_ms;
        d
    }

    fn fields(&self) -> [u64; 29] {
        let mut c = *self;
        c.fields_mut().map(|f| *f)
    }

    /// Every field, in declaration order (destructured, so a field added to the struct
    /// and not here does not compile).
    fn fields_mut(&mut self) -> [&mut u64; 29] {
        let ItchCounters {
            moldudp64_packets,
            moldudp64_new_packets,
            moldudp64_duplicate_packets,
            moldudp64_recovered_packets,
            moldudp64_heartbeats,
            moldudp64_end_of_session,
            moldudp64_requests,
            moldudp64_undecodable_packets,
            moldudp64_messages,
            moldudp64_new_messages,
            moldudp64_duplicate_messages,
            moldudp64_recovered_messages,
            moldudp64_gaps,
            moldudp64_gap_messages,
            moldudp64_gaps_forgotten,
            moldudp64_session_changes,
            moldudp64_peak_messages_per_ms,
            itch_messages,
            itch_undecodable_messages,
            itch_unknown_types,
            ab_first_a,
            ab_first_b,
            ab_same_time,
            ab_only_a,
            ab_only_b,
            ab_only_a_messages,
            ab_only_b_messages,
            ab_same_feed_duplicates,
            ab_late_packets,
        } = self;
        [
            moldudp64_packets,
            moldudp64_new_packets,
            moldudp64_duplicate_packets,
            moldudp64_recovered_packets,
            moldudp64_heartbeats,
            moldudp64_end_of_session,
            moldudp64_requests,
            moldudp64_undecodable_packets,
            moldudp64_messages,
            moldudp64_new_messages,
            moldudp64_duplicate_messages,
            moldudp64_recovered_messages,
            moldudp64_gaps,
            moldudp64_gap_messages,
            moldudp64_gaps_forgotten,
            moldudp64_session_changes,
            moldudp64_peak_messages_per_ms,
            itch_messages,
            itch_undecodable_messages,
            itch_unknown_types,
            ab_first_a,
            ab_first_b,
            ab_same_time,
            ab_only_a,
            ab_only_b,
            ab_only_a_messages,
            ab_only_b_messages,
            ab_same_feed_duplicates,
            ab_late_packets,
        ]
    }
}

/// Reads [`ItchCounters`] flattened among others (an HdrHistogram log's counters): `None`
/// when the log has none of them (a run without ITCH).
pub fn counters_if_present<'de, D>(d: D) -> Result<Option<ItchCounters>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    #[derive(Deserialize)]
    struct Maybe {
        moldudp64_packets: Option<u64>,
        #[serde(flatten)]
        rest: serde_json::Map<String, serde_json::Value>,
    }
    let m = Maybe::deserialize(d)?;
    let Some(first) = m.moldudp64_packets else {
        return Ok(None);
    };
    let mut all = m.rest;
    all.insert("moldudp64_packets".into(), first.into());
    Ok(serde_json::from_value(serde_json::Value::Object(all)).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_adds_counts_and_keeps_the_larger_peak() {
        let mut a = ItchCounters {
            moldudp64_packets: 3,
            ab_late_packets: 1,
            moldudp64_peak_messages_per_ms: 40,
            ..Default::default()
        };
        let b = ItchCounters {
            moldudp64_packets: 2,
            ab_late_packets: 5,
            moldudp64_peak_messages_per_ms: 90,
            ..Default::default()
        };
        a.merge_from(&b);
        assert_eq!(a.moldudp64_packets, 5);
        assert_eq!(a.ab_late_packets, 6);
        assert_eq!(a.moldudp64_peak_messages_per_ms, 90);
        let d = a.minus(&b);
        assert_eq!((d.moldudp64_packets, d.ab_late_packets), (3, 1));
        assert_eq!(d.moldudp64_peak_messages_per_ms, 90);
    }

    #[test]
    fn every_field_is_in_the_arithmetic_and_read_back_from_json() {
        let mut c = ItchCounters::default();
        for (i, f) in c.fields_mut().into_iter().enumerate() {
            *f = i as u64 + 1;
        }
        let json = serde_json::to_value(c).expect("serialises");
        assert_eq!(json.as_object().map(|o| o.len()), Some(29));
        let mut doubled = c;
        doubled.merge_from(&c);
        assert_eq!(doubled.minus(&c).fields()[..16], c.fields()[..16]);
        #[derive(Deserialize)]
        struct Log {
            #[serde(flatten, deserialize_with = "counters_if_present")]
            itch: Option<ItchCounters>,
        }
        let log: Log = serde_json::from_value(json).expect("reads");
        assert_eq!(log.itch, Some(c));
        let none: Log = serde_json::from_str(r#"{"segments": 1}"#).expect("reads");
        assert_eq!(none.itch, None);
    }
}
