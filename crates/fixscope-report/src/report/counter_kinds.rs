//! Which counters a person must see, decided once for every output that highlights them
//! (the text summary, the HTML report, the terminal UI): **alarms** mean figures are
//! missing, late or wrong-looking; **notable** ones say something unusual happened that
//! explains a figure; the rest measure volume (segments, messages, kernel records) and
//! are shown only when asked (`--counters all`, `--full`, JSON, HTML).
//!
//! Counters are named by their output names (the pipeline's in [`fixscope_model::counters`], the
//! sources' by their prefix), so a counter added later is volume until it is listed here.

/// What a counter tells a person when it is not zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterKind {
    /// Figures are missing or late: shown first (in red on a terminal).
    Alarm,
    /// Something unusual that explains a figure: shown when not zero.
    Notable,
    /// How much was seen: shown only when every counter is asked for.
    Volume,
}

/// Pipeline counters that mean figures are missing or late.
pub const ALARM_COUNTERS: &[&str] = &[
    "timed_out",
    "late",
    "unmatched_responses",
    "unanswered",
    "unanswered_evicted",
    "response_before_request",
    "answered_after_capture_hole",
    "tcp_gaps",
    "time_reversed",
    "over_range",
    "shed_connections",
    "bad_checksum",
    "bad_body_length",
    "ambiguous",
    "late_link",
    "hops_after_capture_hole",
    "hops_time_reversed",
    "points_orders_ambiguous",
    "points_time_reversed",
    "points_one_way_unbounded",
    "test_requests_unanswered",
    // A TLS session not decrypted: its orders are not measured.
    "tls_no_key",
    "tls_no_handshake",
    "tls_unsupported",
    "tls_auth_failed",
    // --tls-uprobes: plaintext not placed on its records, a session whose calls never
    // came, calls that disagree with the decryption of the same packets.
    "tls_uprobe_unmapped",
    "tls_uprobe_silent",
    "tls_uprobe_disagreed",
    // A binary protocol's session on a port read as FIX: its orders are not measured.
    "unnamed_protocol_connections",
    // OUCH: packets or messages that did not decode (their orders are missing).
    "soupbin_undecodable_packets",
    "ouch_undecodable_messages",
    // OUCH recognised by its login, its version never shown: its orders not measured.
    "ouch_version_unread",
    // --tick-link: an order before the packet it names.
    "ticks_after_order",
    // iLink 3: messages that did not decode, a BusinessReject naming no request seen.
    "ilink3_undecodable_messages",
    "ilink3_business_rejects_unpaired",
];

/// Counters worth a line when not zero, without being alarms.
pub const NOTABLE_COUNTERS: &[&str] = &[
    // --tls-uprobes: calls on memory BIOs (no connection to tie them to; a silent
    // connection is the alarm), a check against the decryption that compared nothing.
    "tls_uprobe_memory_bio",
    "tls_uprobe_unchecked",
    // --tick-link: orders the rule could not link.
    "ticks_no_sequence",
    "ticks_not_in_feed",
    "ticks_ambiguous",
    // OUCH's session layer: replays (never counted twice), gaps, resends, strays.
    "soupbin_login_rejects",
    "soupbin_replayed_packets",
    "soupbin_recovered_packets",
    "soupbin_sequence_gaps",
    "soupbin_sequence_gap_packets",
    "ouch_resent_requests",
    "soupbin_before_login",
    "soupbin_wrong_side_packets",
    "ouch_unknown_order_responses",
    // iLink 3's session layer (FIXP): rejects, replays, gaps, resends, strays.
    "ilink3_negotiation_rejects",
    "ilink3_establish_rejects",
    "ilink3_retransmit_rejects",
    "ilink3_not_applied",
    "ilink3_replayed_messages",
    "ilink3_recovered_messages",
    "ilink3_sequence_gaps",
    "ilink3_sequence_gap_messages",
    "ilink3_resent_requests",
    "ilink3_before_establish",
    "ilink3_wrong_side_messages",
    "ilink3_unknown_order_responses",
    "unanswered_closed",
    "untracked_requests",
    "duplicate_requests",
    "expired_after_response",
    "evicted",
    "missing_key",
    "unsolicited_reports",
    "tls_resyncs",
    "skipped_bytes",
    "gap_cut_messages",
    "retransmitted_bytes",
    "out_of_order_segments",
    "tcp_gap_bytes",
    "sequence_gaps",
    "sequence_skips_at_capture_holes",
    "resend_requests",
    "sequence_resets",
    "possdup_requests",
    "possdup_responses",
    "session_rejects",
    "business_rejects",
    "order_rejects",
    "cancel_rejects",
    "breakdown_missing",
    "breakdown_negative",
    "capture_ip_fragments",
    "capture_mirror_duplicates",
    "capture_unsupported_link_packets",
    "capture_unknown_interface_packets",
    "late_records",
    "tap_late_frames",
    "trailer_missing",
    "trailer_fcs_mismatch",
    "unlinked_parent",
    "unlinked_child",
    "local_ack",
    "tick_missing",
    "points_orders_near_only",
    "points_orders_far_only",
    "points_segments_unmatched",
    "points_one_way_at_step",
];

/// The kind of the counter named `name` (a pipeline or a source counter).
pub fn counter_kind(name: &str) -> CounterKind {
    if ALARM_COUNTERS.contains(&name) || is_source_alarm(name) {
        CounterKind::Alarm
    } else if NOTABLE_COUNTERS.contains(&name) {
        CounterKind::Notable
    } else {
        CounterKind::Volume
    }
}

/// Counters that are levels, not counts: they go down as well as up (what is pending at
/// the time of a report), so an interval's difference of them is no event.
pub const LEVELS: &[&str] = &[
    "unanswered",
    "unanswered_pending",
    "pending",
    "open_connections",
];

/// Whether `name` is a level (see [`LEVELS`]).
pub fn is_level(name: &str) -> bool {
    LEVELS.contains(&name)
}

/// Whether a non-zero `name` is an alarm.
pub fn is_alarm(name: &str) -> bool {
    counter_kind(name) == CounterKind::Alarm
}

/// Source counters that lose data: the kernel's or the capture's drops, records it could
/// not read, captures cut short or unreadable.
fn is_source_alarm(name: &str) -> bool {
    const LOSS: [&str; 10] = [
        "drop",
        "copy_failed",
        "clickhouse_failed",
        "malformed",
        "load_errors",
        "unread_records",
        "capture_truncated",
        "capture_decode_errors",
        "capture_bad_timestamps",
        "kernel_cut_bytes",
    ];
    LOSS.iter().any(|part| name.contains(part))
}

#[cfg(test)]
mod tests {
    use super::*;
    use fixscope_model::counters::Counters;

    #[test]
    fn every_listed_pipeline_counter_exists() {
        let names: Vec<String> = Counters {
            hops: Some(fixscope_hops::HopCounters::default()),
            points: Some(fixscope_orders::points::PointCounters::default()),
            tls: Some(fixscope_model::counters::TlsCounters::default()),
            ouch: Some(fixscope_model::counters::OuchCounters::default()),
            ilink3: Some(fixscope_model::counters::Ilink3Counters::default()),
            ticks: Some(fixscope_model::counters::TickCounters::default()),
            ..Counters::default()
        }
        .list()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
        // Source counters are named by their sources' crates; the pipeline's must exist.
        for name in ALARM_COUNTERS.iter().chain(NOTABLE_COUNTERS) {
            let source = [
                "capture_",
                "late_records",
                "tap_",
                "breakdown_",
                "trailer_",
                "tls_uprobe_memory_bio",
            ]
            .iter()
            .any(|p| name.starts_with(p));
            assert!(
                source || names.iter().any(|n| n == name),
                "{name} is not a counter"
            );
        }
    }

    #[test]
    fn kinds_of_pipeline_and_source_counters() {
        assert_eq!(counter_kind("timed_out"), CounterKind::Alarm);
        assert_eq!(
            counter_kind("kernel_ring_drops_request"),
            CounterKind::Alarm
        );
        assert_eq!(counter_kind("tap_interface_drops"), CounterKind::Alarm);
        assert_eq!(counter_kind("capture_truncated_files"), CounterKind::Alarm);
        assert_eq!(counter_kind("sequence_gaps"), CounterKind::Notable);
        assert_eq!(counter_kind("segments"), CounterKind::Volume);
        assert_eq!(counter_kind("kernel_records"), CounterKind::Volume);
        assert!(!is_alarm("capture_packets"));
    }
}
