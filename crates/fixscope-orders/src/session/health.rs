//! What reports show of the session layer: per session its counters, state and alarms;
//! for the run the `test_request_rtt` stage, reject reasons by code and message rates.
//! Everything here is mergeable (shards of one run: [`SessionHealth::merge_from`],
//! [`SessionLayerStats::merge_from`]).

use std::collections::BTreeMap;

use crate::microburst::MessageRate;
use crate::recorder::LatencyRecorder;
use fixscope_model::counters::SessionCounters;
use fixscope_model::segment::Direction;

/// With HeartBtInt unknown or 0 (no heartbeats), a TestRequest unanswered this long raises
/// the alarm.
pub const DEFAULT_TEST_REQUEST_PATIENCE_NS: u64 = 30_000_000_000;

/// One session's health, as reports show it.
#[derive(Clone, Debug, Default)]
pub struct SessionHealth {
    pub counters: SessionCounters,
    /// Logon seen both ways and no Logout or close since.
    pub logged_on: bool,
    logon_seen: [bool; 2],
    /// HeartBtInt (108) of the latest Logon, seconds (0: no heartbeats).
    pub heart_bt_int_s: Option<u32>,
    /// Last message sent by each side: [client (request direction), server].
    pub last_message_ns: [Option<u64>; 2],
    /// Last Heartbeat sent by each side.
    pub last_heartbeat_ns: [Option<u64>; 2],
    /// When the oldest TestRequest still unanswered was sent (either side).
    pub oldest_unanswered_test_request_ns: Option<u64>,
    /// TCP connections the session ran on.
    pub connections: u64,
    /// Epochs begun after the first (Logon 141=Y, SequenceReset-Reset).
    pub resets: u64,
    /// Messages and 1 ms peaks (both directions).
    pub rate: MessageRate,
}

/// A session's alarms at a given time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionAlarms {
    /// Logged on, heartbeats on, and one side silent for more than 2× HeartBtInt (any
    /// message proves a side alive, not only heartbeats).
    pub stale: bool,
    /// A TestRequest unanswered for more than HeartBtInt (30 s when unknown or 0).
    pub test_request_unanswered: bool,
}

impl SessionAlarms {
    /// The alarms raised, by their JSON names.
    pub fn names(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.stale {
            v.push("stale");
        }
        if self.test_request_unanswered {
            v.push("test_request_unanswered");
        }
        v
    }
}

pub(super) fn side(direction: Direction) -> usize {
    match direction {
        Direction::Request => 0,
        Direction::Response => 1,
    }
}

impl SessionHealth {
    pub(super) fn logon(&mut self, direction: Direction, heart_bt_int_s: Option<u32>) {
        self.logon_seen[side(direction)] = true;
        if heart_bt_int_s.is_some() {
            self.heart_bt_int_s = heart_bt_int_s;
        }
        self.logged_on = self.logon_seen == [true, true];
    }

    pub(super) fn logged_out(&mut self) {
        self.logged_on = false;
        self.logon_seen = [false, false];
    }

    /// Age of each side's last message at `now_ns` (`None`: never seen).
    pub fn last_message_age_ns(&self, now_ns: u64) -> [Option<u64>; 2] {
        self.last_message_ns
            .map(|t| t.map(|t| now_ns.saturating_sub(t)))
    }

    /// Age of each side's last Heartbeat at `now_ns`.
    pub fn last_heartbeat_age_ns(&self, now_ns: u64) -> [Option<u64>; 2] {
        self.last_heartbeat_ns
            .map(|t| t.map(|t| now_ns.saturating_sub(t)))
    }

    pub fn alarms(&self, now_ns: u64) -> SessionAlarms {
        let interval_ns = self.heart_bt_int_s.map(|s| u64::from(s) * 1_000_000_000);
        let stale = match interval_ns {
            Some(i) if i > 0 && self.logged_on => self
                .last_message_age_ns(now_ns)
                .iter()
                .any(|age| age.is_some_and(|a| a > 2 * i)),
            _ => false,
        };
        let patience = interval_ns
            .filter(|&i| i > 0)
            .unwrap_or(DEFAULT_TEST_REQUEST_PATIENCE_NS);
        let test_request_unanswered = self
            .oldest_unanswered_test_request_ns
            .is_some_and(|t| now_ns.saturating_sub(t) > patience);
        SessionAlarms {
            stale,
            test_request_unanswered,
        }
    }

    /// Adds another shard's view of the same session (counts add; the later state wins).
    pub fn merge_from(&mut self, other: &Self) {
        self.counters.merge_from(&other.counters);
        self.rate.merge_from(&other.rate);
        self.connections += other.connections;
        self.resets += other.resets;
        let later = |a: Option<u64>, b: Option<u64>| a.max(b);
        let other_is_later = later(other.last_message_ns[0], other.last_message_ns[1])
            > later(self.last_message_ns[0], self.last_message_ns[1]);
        for i in 0..2 {
            self.last_message_ns[i] = later(self.last_message_ns[i], other.last_message_ns[i]);
            self.last_heartbeat_ns[i] =
                later(self.last_heartbeat_ns[i], other.last_heartbeat_ns[i]);
        }
        if other_is_later {
            self.logged_on = other.logged_on;
            self.logon_seen = other.logon_seen;
            self.heart_bt_int_s = other.heart_bt_int_s.or(self.heart_bt_int_s);
            self.oldest_unanswered_test_request_ns = other.oldest_unanswered_test_request_ns;
        }
    }
}

/// The session layer's figures for the whole run.
#[derive(Clone, Debug)]
pub struct SessionLayerStats {
    /// TestRequest (last byte) → the Heartbeat answering it (first byte): the other side's
    /// Heartbeat with its TestReqID on its connection (first in, first out among equal ids).
    pub test_request_rtt: LatencyRecorder,
    /// Session Rejects by SessionRejectReason (373; absent: no key).
    pub session_reject_reasons: BTreeMap<u32, u64>,
    /// BusinessMessageRejects by BusinessRejectReason (380).
    pub business_reject_reasons: BTreeMap<u32, u64>,
    /// Rejects without a reason code.
    pub rejects_without_reason: u64,
    /// Heartbeats stamped before the TestRequest they answer (clocks of merged captures
    /// disagree): not recorded, never as 0.
    pub test_request_rtt_time_reversed: u64,
    /// All messages of the run (every session, both directions).
    pub rate: MessageRate,
}

impl SessionLayerStats {
    pub fn new(highest_ns: u64) -> Self {
        SessionLayerStats {
            test_request_rtt: LatencyRecorder::new(highest_ns, 3),
            session_reject_reasons: BTreeMap::new(),
            business_reject_reasons: BTreeMap::new(),
            rejects_without_reason: 0,
            test_request_rtt_time_reversed: 0,
            rate: MessageRate::default(),
        }
    }

    /// Adds another shard's figures. The total rate's 1 ms peak is then the larger shard's:
    /// a merger wanting the exact total peak feeds the merged message times to one
    /// [`crate::microburst::MicroburstTracker`].
    pub fn merge_from(&mut self, other: &Self) {
        self.test_request_rtt.merge(&other.test_request_rtt);
        for (mine, theirs) in [
            (
                &mut self.session_reject_reasons,
                &other.session_reject_reasons,
            ),
            (
                &mut self.business_reject_reasons,
                &other.business_reject_reasons,
            ),
        ] {
            for (code, n) in theirs {
                *mine.entry(*code).or_default() += n;
            }
        }
        self.rejects_without_reason += other.rejects_without_reason;
        self.test_request_rtt_time_reversed += other.test_request_rtt_time_reversed;
        self.rate.merge_from(&other.rate);
    }

    /// Clears what the live `r` key clears.
    pub fn reset(&mut self) {
        self.test_request_rtt.reset();
        self.session_reject_reasons.clear();
        self.business_reject_reasons.clear();
        self.rejects_without_reason = 0;
        self.test_request_rtt_time_reversed = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_and_unanswered_test_request_alarms() {
        let s = 1_000_000_000;
        let mut h = SessionHealth::default();
        h.logon(Direction::Request, Some(30));
        h.logon(Direction::Response, Some(30));
        assert!(h.logged_on);
        h.last_message_ns = [Some(100 * s), Some(100 * s)];
        assert_eq!(
            h.alarms(160 * s),
            SessionAlarms::default(),
            "2× HeartBtInt exactly"
        );
        assert!(h.alarms(161 * s).stale);
        h.oldest_unanswered_test_request_ns = Some(100 * s);
        assert!(!h.alarms(130 * s).test_request_unanswered);
        assert!(h.alarms(131 * s).test_request_unanswered);
        // HeartBtInt 0: no heartbeats, never stale.
        h.heart_bt_int_s = Some(0);
        assert!(!h.alarms(1000 * s).stale);
        h.logged_out();
        h.heart_bt_int_s = Some(30);
        assert!(!h.alarms(1000 * s).stale, "logged out is not stale");
    }

    #[test]
    fn merging_two_halves_equals_the_whole() {
        let mut whole = SessionLayerStats::new(1_000_000_000);
        let mut halves = [
            SessionLayerStats::new(1_000_000_000),
            SessionLayerStats::new(1_000_000_000),
        ];
        for i in 0..100u64 {
            let half = &mut halves[(i % 2) as usize];
            for s in [&mut whole, half] {
                s.test_request_rtt.record(1_000 + i * 7);
                *s.session_reject_reasons.entry((i % 3) as u32).or_default() += 1;
                *s.business_reject_reasons.entry((i % 5) as u32).or_default() += 1;
                s.rejects_without_reason += i % 2;
                s.rate.observe(i * 10_000_000);
            }
        }
        let [mut a, b] = halves;
        a.merge_from(&b);
        assert_eq!(
            a.test_request_rtt.distribution(),
            whole.test_request_rtt.distribution()
        );
        assert_eq!(a.session_reject_reasons, whole.session_reject_reasons);
        assert_eq!(a.business_reject_reasons, whole.business_reject_reasons);
        assert_eq!(a.rejects_without_reason, whole.rejects_without_reason);
        assert_eq!(a.rate.run(), whole.rate.run());
    }
}
