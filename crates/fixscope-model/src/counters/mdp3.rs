//! CME MDP 3.0 market data (`fixscope-mdp3`): an incremental channel's health (packets
//! by MsgSeqNum, epochs, per-instrument RptSeq, microbursts) and the A/B arbitration of
//! a redundant pair (docs/protocols.md, "CME MDP 3.0 over UDP multicast", has their
//! rules). Every datagram fed to a channel's tracker lands in exactly one of
//! `mdp3_new_packets`, `_duplicate_packets`, `_recovered_packets`,
//! `_previous_epoch_packets`, `_undecodable_packets` (their sum is `mdp3_packets`); every
//! message of a decoded packet in exactly one of `mdp3_new_messages`,
//! `_duplicate_messages`, `_recovered_messages`, `_previous_epoch_messages` (their sum is
//! `mdp3_messages`), and every fresh one (new or recovered) in exactly one of the
//! per-template counts or `mdp3_undecodable_messages`. `mdp3_peak_messages_per_ms` is a
//! maximum, not a count: merging keeps the larger.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Mdp3Counters {
    /// UDP datagrams fed to a channel's tracker, whatever they held.
    pub mdp3_packets: u64,
    /// Packets numbered at or past the MsgSeqNum expected next (or starting an epoch): first
    /// seen.
    pub mdp3_new_packets: u64,
    /// Packets whose MsgSeqNum was already processed in this epoch (the other feed's copy,
    /// when A and B are fed together; a repeat): discarded, as CME's arbitration rule says.
    pub mdp3_duplicate_packets: u64,
    /// Packets below the MsgSeqNum expected next that fill a gap: late (reordered) or
    /// recovered.
    pub mdp3_recovered_packets: u64,
    /// Packets of an earlier epoch arriving after a new one began (a SendingTime before the
    /// epoch's first packet's): not numbered against the new epoch.
    pub mdp3_previous_epoch_packets: u64,
    /// Datagrams that are no MDP 3.0 packet (shorter than the packet header, or messages
    /// whose MsgSizes do not fill the datagram exactly): rejected whole, their messages never
    /// counted (their MsgSeqNum shows as a gap).
    pub mdp3_undecodable_packets: u64,
    /// Messages in decoded packets.
    pub mdp3_messages: u64,
    /// Messages of new packets.
    pub mdp3_new_messages: u64,
    /// Messages of duplicate packets.
    pub mdp3_duplicate_messages: u64,
    /// Messages of recovered packets.
    pub mdp3_recovered_messages: u64,
    /// Messages of packets of an earlier epoch.
    pub mdp3_previous_epoch_messages: u64,
    /// Fresh (new or recovered) MDIncrementalRefreshBook46 messages.
    pub mdp3_book_messages: u64,
    /// Fresh MDIncrementalRefreshOrderBook47 messages.
    pub mdp3_order_book_messages: u64,
    /// Fresh MDIncrementalRefreshTradeSummary48 messages.
    pub mdp3_trade_summary_messages: u64,
    /// Fresh MDIncrementalRefreshVolume37 messages.
    pub mdp3_volume_messages: u64,
    /// Fresh SecurityStatus30 messages.
    pub mdp3_security_status_messages: u64,
    /// Fresh ChannelReset4 messages: each starts a new epoch of the channel.
    pub mdp3_channel_resets: u64,
    /// Fresh AdminHeartbeat12 messages.
    pub mdp3_heartbeats: u64,
    /// Fresh instrument definitions (MDInstrumentDefinitionFuture54 and the schema's other
    /// definition templates).
    pub mdp3_instrument_definitions: u64,
    /// Fresh SnapshotFullRefresh52 messages (a snapshot feed).
    pub mdp3_snapshot_messages: u64,
    /// Fresh messages of any other template, stepped over by MsgSize.
    pub mdp3_other_messages: u64,
    /// Fresh messages that do not decode (another schema id, a block or group past the
    /// message, entries too short for a field read): not read; their packet still counts.
    pub mdp3_undecodable_messages: u64,
    /// MsgSeqNum gaps: a packet numbered past the one expected next.
    pub mdp3_gaps: u64,
    /// The packets those gaps skipped, when they were found (recovery does not lower it:
    /// `mdp3_gap_packets - mdp3_recovered_packets` were never seen, unless gaps were
    /// forgotten).
    pub mdp3_gap_packets: u64,
    /// Open gaps dropped because more than the tracker's bound were open at once: a later
    /// copy of their packets counts as a duplicate.
    pub mdp3_gaps_forgotten: u64,
    /// Packets of gaps still open when a new epoch began: never to be recovered in their
    /// numbering.
    pub mdp3_gap_packets_abandoned: u64,
    /// New epochs after the first: a ChannelReset4, or MsgSeqNum starting again at 1 (CME's
    /// weekly reset); never a gap.
    pub mdp3_epochs: u64,
    /// Decoded packets whose SendingTime is unset (0 or all ones): no feed latency for them.
    pub mdp3_sending_time_absent: u64,
    /// Entries carrying an instrument's RptSeq in fresh messages.
    pub mdp3_rptseq_updates: u64,
    /// RptSeq gaps: an instrument's entry numbered past the RptSeq expected next of it
    /// (updates of that instrument lost).
    pub mdp3_rptseq_gaps: u64,
    /// The instrument updates those gaps skipped, when they were found.
    pub mdp3_rptseq_gap_updates: u64,
    /// Entries that filled an instrument's RptSeq gap (their packet arrived late).
    pub mdp3_rptseq_recovered_updates: u64,
    /// Entries numbered below the RptSeq expected of their instrument and in no gap: seen
    /// before.
    pub mdp3_rptseq_duplicate_updates: u64,
    /// Instruments (per epoch) whose RptSeq jumped at least once.
    pub mdp3_rptseq_gap_instruments: u64,
    /// Instruments dropped from the tracker's bound (least recently updated first): their
    /// next update starts their numbering again.
    pub mdp3_rptseq_instruments_forgotten: u64,
    /// Open RptSeq gaps of one instrument dropped past the tracker's bound (the lowest
    /// first): a later copy of their updates counts as a duplicate.
    pub mdp3_rptseq_gaps_forgotten: u64,
    /// The most messages (of every decoded packet) captured in one aligned 1 ms window: the
    /// channel's worst microburst. A maximum: merging keeps the larger.
    pub mdp3_peak_messages_per_ms: u64,
    /// Packets seen on both feeds of an A/B pair, first on A.
    pub mdp3_ab_first_a: u64,
    /// Packets seen on both feeds, first on B.
    pub mdp3_ab_first_b: u64,
    /// Packets seen on both feeds with the same capture time.
    pub mdp3_ab_same_time: u64,
    /// Packets seen only on A (B lost them; A covered for it).
    pub mdp3_ab_only_a: u64,
    /// Packets seen only on B (A lost them).
    pub mdp3_ab_only_b: u64,
    /// A packet seen twice on the same feed: not arbitrated again.
    pub mdp3_ab_same_feed_duplicates: u64,
    /// Packets numbered below the arbitration window (both feeds long past them): not
    /// arbitrated.
    pub mdp3_ab_late_packets: u64,
    /// New epochs of the pair's numbering (MsgSeqNum started again, with a later
    /// SendingTime): what waited was decided first.
    pub mdp3_ab_epochs: u64,
}

impl Mdp3Counters {
    /// Adds `other`'s counts (the peak: the larger of the two).
    pub fn merge_from(&mut self, other: &Self) {
        let peak = self
            .mdp3_peak_messages_per_ms
            .max(other.mdp3_peak_messages_per_ms);
        let mut fields = self.fields_mut();
        for (mine, theirs) in fields.iter_mut().zip(other.fields()) {
            **mine += theirs;
        }
        self.mdp3_peak_messages_per_ms = peak;
    }

    /// What each count added since `earlier` (the peak: as now, a maximum has no
    /// difference).
    pub fn minus(&self, earlier: &Self) -> Self {
        let mut d = *self;
        for (mine, then) in d.fields_mut().iter_mut().zip(earlier.fields()) {
            **mine = mine.saturating_sub(then);
        }
        d.mdp3_peak_messages_per_ms = self.mdp3_peak_messages_per_ms;
        d
    }

    fn fields(&self) -> [u64; 45] {
        let mut c = *self;
        c.fields_mut().map(|f| *f)
    }

    /// Every field, in declaration order (destructured, so a field added to the struct
    /// and not here does not compile).
    fn fields_mut(&mut self) -> [&mut u64; 45] {
        let Mdp3Counters {
            mdp3_packets,
            mdp3_new_packets,
            mdp3_duplicate_packets,
            mdp3_recovered_packets,
            mdp3_previous_epoch_packets,
            mdp3_undecodable_packets,
            mdp3_messages,
            mdp3_new_messages,
            mdp3_duplicate_messages,
            mdp3_recovered_messages,
            mdp3_previous_epoch_messages,
            mdp3_book_messages,
            mdp3_order_book_messages,
            mdp3_trade_summary_messages,
            mdp3_volume_messages,
            mdp3_security_status_messages,
            mdp3_channel_resets,
            mdp3_heartbeats,
            mdp3_instrument_definitions,
            mdp3_snapshot_messages,
            mdp3_other_messages,
            mdp3_undecodable_messages,
            mdp3_gaps,
            mdp3_gap_packets,
            mdp3_gaps_forgotten,
            mdp3_gap_packets_abandoned,
            mdp3_epochs,
            mdp3_sending_time_absent,
            mdp3_rptseq_updates,
            mdp3_rptseq_gaps,
            mdp3_rptseq_gap_updates,
            mdp3_rptseq_recovered_updates,
            mdp3_rptseq_duplicate_updates,
            mdp3_rptseq_gap_instruments,
            mdp3_rptseq_instruments_forgotten,
            mdp3_rptseq_gaps_forgotten,
            mdp3_peak_messages_per_ms,
            mdp3_ab_first_a,
            mdp3_ab_first_b,
            mdp3_ab_same_time,
            mdp3_ab_only_a,
            mdp3_ab_only_b,
            mdp3_ab_same_feed_duplicates,
            mdp3_ab_late_packets,
            mdp3_ab_epochs,
        } = self;
        [
            mdp3_packets,
            mdp3_new_packets,
            mdp3_duplicate_packets,
            mdp3_recovered_packets,
            mdp3_previous_epoch_packets,
            mdp3_undecodable_packets,
            mdp3_messages,
            mdp3_new_messages,
            mdp3_duplicate_messages,
            mdp3_recovered_messages,
            mdp3_previous_epoch_messages,
            mdp3_book_messages,
            mdp3_order_book_messages,
            mdp3_trade_summary_messages,
            mdp3_volume_messages,
            mdp3_security_status_messages,
            mdp3_channel_resets,
            mdp3_heartbeats,
            mdp3_instrument_definitions,
            mdp3_snapshot_messages,
            mdp3_other_messages,
            mdp3_undecodable_messages,
            mdp3_gaps,
            mdp3_gap_packets,
            mdp3_gaps_forgotten,
            mdp3_gap_packets_abandoned,
            mdp3_epochs,
            mdp3_sending_time_absent,
            mdp3_rptseq_updates,
            mdp3_rptseq_gaps,
            mdp3_rptseq_gap_updates,
            mdp3_rptseq_recovered_updates,
            mdp3_rptseq_duplicate_updates,
            mdp3_rptseq_gap_instruments,
            mdp3_rptseq_instruments_forgotten,
            mdp3_rptseq_gaps_forgotten,
            mdp3_peak_messages_per_ms,
            mdp3_ab_first_a,
            mdp3_ab_first_b,
            mdp3_ab_same_time,
            mdp3_ab_only_a,
            mdp3_ab_only_b,
            mdp3_ab_same_feed_duplicates,
            mdp3_ab_late_packets,
            mdp3_ab_epochs,
        ]
    }
}

/// Reads [`Mdp3Counters`] flattened among others (an HdrHistogram log's counters): `None`
/// when the log has none of them (a run without MDP 3.0).
pub fn counters_if_present<'de, D>(d: D) -> Result<Option<Mdp3Counters>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    #[derive(Deserialize)]
    struct Maybe {
        mdp3_packets: Option<u64>,
        #[serde(flatten)]
        rest: serde_json::Map<String, serde_json::Value>,
    }
    let m = Maybe::deserialize(d)?;
    let Some(first) = m.mdp3_packets else {
        return Ok(None);
    };
    let mut all = m.rest;
    all.insert("mdp3_packets".into(), first.into());
    Ok(serde_json::from_value(serde_json::Value::Object(all)).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_adds_counts_and_keeps_the_larger_peak() {
        let mut a = Mdp3Counters {
            mdp3_packets: 3,
            mdp3_ab_late_packets: 1,
            mdp3_peak_messages_per_ms: 40,
            ..Default::default()
        };
        let b = Mdp3Counters {
            mdp3_packets: 2,
            mdp3_ab_late_packets: 5,
            mdp3_peak_messages_per_ms: 90,
            ..Default::default()
        };
        a.merge_from(&b);
        assert_eq!(a.mdp3_packets, 5);
        assert_eq!(a.mdp3_ab_late_packets, 6);
        assert_eq!(a.mdp3_peak_messages_per_ms, 90);
        let d = a.minus(&b);
        assert_eq!((d.mdp3_packets, d.mdp3_ab_late_packets), (3, 1));
        assert_eq!(d.mdp3_peak_messages_per_ms, 90);
    }

    #[test]
    fn every_field_is_in_the_arithmetic_and_read_back_from_json() {
        let mut c = Mdp3Counters::default();
        for (i, f) in c.fields_mut().into_iter().enumerate() {
            *f = i as u64 + 1;
        }
        let json = serde_json::to_value(c).expect("serialises");
        let names = json.as_object().expect("an object");
        assert_eq!(names.len(), 45);
        assert!(names.keys().all(|k| k.starts_with("mdp3_")));
        let mut doubled = c;
        doubled.merge_from(&c);
        let back = doubled.minus(&c);
        assert_eq!(
            Mdp3Counters {
                mdp3_peak_messages_per_ms: c.mdp3_peak_messages_per_ms,
                ..back
            },
            c
        );
        #[derive(Deserialize)]
        struct Log {
            #[serde(flatten, deserialize_with = "counters_if_present")]
            mdp3: Option<Mdp3Counters>,
        }
        let log: Log = serde_json::from_value(json).expect("reads");
        assert_eq!(log.mdp3, Some(c));
        let none: Log = serde_json::from_str(r#"{"segments": 1}"#).expect("reads");
        assert_eq!(none.mdp3, None);
    }
}
