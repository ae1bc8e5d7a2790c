//! The correlator's counters (`fixscope_core::correlate`): every request in exactly one of them.

use serde::Serialize;

/// Correlation counters (docs/output-json.md has their meaning; the names are the JSON's).
///
/// Every request is accounted for: `requests = matched + response_before_request +
/// answered_after_capture_hole + unanswered_pending + unanswered_evicted + unanswered_closed + untracked_requests` (the
/// pending count is the table's, see `Correlator::unanswered_pending`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
// Deserialize: `fixscope report` reads the counters back from HdrHistogram logs; a counter
// missing from an older log reads as 0.
#[serde(default)]
pub struct CorrelationCounters {
    pub requests: u64,
    pub responses: u64,
    /// Requests that got a first response, however late.
    pub matched: u64,
    /// Matched requests whose first response came after `-t` (they were counted
    /// `timed_out` first; their true latency is recorded).
    pub late: u64,
    /// Requests with no response within `-t`, counted when `-t` passes.
    pub timed_out: u64,
    /// Never answered: evicted unanswered because `-m` requests were tracked.
    pub unanswered_evicted: u64,
    /// Never answered: their connection closed (FIN both ways, RST, idle, shed) first.
    pub unanswered_closed: u64,
    /// Never answered: not tracked at all (no key tag, or the key was already pending).
    pub untracked_requests: u64,
    /// Responses with no tracked request of that key on that session.
    pub unmatched_responses: u64,
    /// Requests whose key was already pending on the session (the first one is kept).
    pub duplicate_requests: u64,
    /// Answered requests that stopped being tracked before a terminal status (evicted, or
    /// their connection closed): working orders whose later fills cannot be matched.
    pub expired_after_response: u64,
    /// Tracked requests evicted (oldest first) because `-m` were tracked, answered or not.
    pub evicted: u64,
    /// Requests or responses without the key tag(s).
    pub missing_key: u64,
    /// Stage latencies not recorded because the later event carries an earlier timestamp
    /// (captures merged from interfaces or taps whose clocks disagree): never recorded as
    /// 0, which would be a wrong number.
    pub time_reversed: u64,
    /// Orders whose request the capture showed after one of its responses (host stamps
    /// that reorder: the correlator's reorder window). Counted once per order; they record
    /// no latency, none of their responses is unmatched and they never time out.
    pub response_before_request: u64,
    /// Orders still waiting for their first response when the capture lost part of their
    /// session's responses (a TCP hole given up): it may have been lost there, so the one
    /// seen after is no first response to measure. Counted once per order when answered,
    /// never `matched`; none of its later stages is recorded and it never raises
    /// `timed_out` (the wait may have ended unseen).
    pub answered_after_capture_hole: u64,
    /// Execution reports that answer no request by FIX's own fields, whether or not their
    /// order is tracked: ExecTransType 1/2/3 (FIX 4.0-4.2 busts, corrections, statuses),
    /// ExecType 3, B, D, G, H or I (done for day, calculated, restated, trade corrections
    /// and busts, status reports answering 35=H/AF), and expiries (ExecType C) of orders no
    /// longer tracked. No latency, never an alarm.
    pub unsolicited_reports: u64,
}
