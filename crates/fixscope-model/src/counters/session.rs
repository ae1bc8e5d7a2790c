//! The session layer's counters (the names are the JSON's, the text's and Prometheus's).

use serde::Serialize;

/// Session-layer messages and events, both directions (docs/output-json.md has each).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
// Deserialize: `fixscope report` reads counters back from HdrHistogram logs; a counter
// missing from an older log reads as 0.
#[serde(default)]
pub struct SessionCounters {
    /// Logon (35=A).
    pub logons: u64,
    /// Logout (35=5).
    pub logouts: u64,
    /// Heartbeat (35=0), with or without TestReqID.
    pub heartbeats: u64,
    /// TestRequest (35=1).
    pub test_requests: u64,
    /// TestRequests whose connection ended (close, reset, forgotten, or the session's next
    /// connection bound) before a Heartbeat with their TestReqID (112) came back on it.
    pub test_requests_unanswered: u64,
    /// ResendRequest (35=2).
    pub resend_requests: u64,
    /// SequenceReset in its GapFill form (35=4, 123=Y).
    pub gap_fills: u64,
    /// SequenceReset in its Reset form (35=4, 123 absent or N): a new epoch.
    pub sequence_resets: u64,
    /// Requests (D/F/G) replayed: PossDup (43=Y) under a MsgSeqNum already seen, or
    /// PossResend (97=Y) of a ClOrdID already seen. Not requests.
    pub possdup_requests: u64,
    /// Responses (8/9) and rejects (3/j) replayed the same way. Not responses.
    pub possdup_responses: u64,
    /// Session-level Reject (35=3).
    pub session_rejects: u64,
    /// BusinessMessageReject (35=j).
    pub business_rejects: u64,
    /// ExecutionReports rejecting an order (35=8, 150=8).
    pub order_rejects: u64,
    /// OrderCancelReject (35=9).
    pub cancel_rejects: u64,
    /// MsgSeqNum (34) jumping past the next expected number with no GapFill covering the
    /// skipped numbers (holes in the capture are not counted here: `tcp_gaps`).
    pub sequence_gaps: u64,
    /// MsgSeqNum jumps right after a hole in the capture: the missing numbers were on the
    /// wire but not captured (`tcp_gaps`), so they are no FIX sequence gap.
    pub sequence_skips_at_capture_holes: u64,
}

// `merge_from` and `minus`: `crate::counters`'s `count_fields!` (every field listed).

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_two_halves_equals_the_whole() {
        let names = crate::source::counters_of(&SessionCounters::default());
        assert_eq!(names.len(), 16);
        // Each counter a different value, so a field merged into the wrong one shows.
        let mut whole = SessionCounters::default();
        let (mut a, mut b) = (SessionCounters::default(), SessionCounters::default());
        let json = |v: &SessionCounters| serde_json::to_value(v).unwrap();
        let mut wv = json(&whole);
        let mut av = json(&a);
        let mut bv = json(&b);
        for (i, (name, _)) in names.iter().enumerate() {
            let (x, y) = (i as u64 + 1, 100 * (i as u64 + 1));
            av[name] = x.into();
            bv[name] = y.into();
            wv[name] = (x + y).into();
        }
        a = serde_json::from_value(av).unwrap();
        b = serde_json::from_value(bv).unwrap();
        whole = serde_json::from_value(wv).unwrap();
        let mut merged = a;
        merged.merge_from(&b);
        assert_eq!(merged, whole);
    }
}
