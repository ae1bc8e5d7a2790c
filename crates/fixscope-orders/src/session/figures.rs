//! The FIX session layer's figures as a summary shows them (#21): taken from a run's
//! statistics at the summary's end time, or read back from an HdrHistogram log's
//! `#fixscope-summary` line (`fixscope report`), which stores exactly these — so text,
//! JSON and HTML render the same figures either way.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::microburst::RateFigures;
use crate::recorder::Distribution;
use crate::session::health::SessionLayerStats;
use crate::session::table::SessionTable;
use crate::session::SessionCounters;

/// One session's session-layer figures at the summary's end.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionLayerRow {
    /// The session's id (as in `sessions[]`) and names.
    pub id: u64,
    pub sender_comp_id: String,
    pub target_comp_id: String,
    pub counters: SessionCounters,
    pub logged_on: bool,
    pub heart_bt_int_s: Option<u32>,
    /// [client, server]: time since each side's last message / Heartbeat (`None`: never).
    pub last_message_age_ns: [Option<u64>; 2],
    pub last_heartbeat_age_ns: [Option<u64>; 2],
    pub stale: bool,
    pub test_request_unanswered: bool,
    pub connections: u64,
    pub resets: u64,
    pub rate: RateFigures,
}

impl SessionLayerRow {
    /// The alarms raised, by their JSON names.
    pub fn alarm_names(&self) -> Vec<&'static str> {
        crate::session::SessionAlarms {
            stale: self.stale,
            test_request_unanswered: self.test_request_unanswered,
        }
        .names()
    }
}

/// The run's session-layer figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionLayerFigures {
    pub test_request_rtt: Distribution,
    pub session_reject_reasons: BTreeMap<u32, u64>,
    pub business_reject_reasons: BTreeMap<u32, u64>,
    pub rejects_without_reason: u64,
    pub rate: RateFigures,
    /// Every session of the per-session table, in its order.
    pub sessions: Vec<SessionLayerRow>,
}

impl SessionLayerFigures {
    /// A run's figures at `now_ns` (the summary's end).
    pub fn of(l: &SessionLayerStats, table: &SessionTable, now_ns: u64) -> Self {
        SessionLayerFigures {
            test_request_rtt: l.test_request_rtt.distribution(),
            session_reject_reasons: l.session_reject_reasons.clone(),
            business_reject_reasons: l.business_reject_reasons.clone(),
            rejects_without_reason: l.rejects_without_reason,
            rate: l.rate.run(),
            sessions: table
                .all()
                .iter()
                .map(|s| {
                    let h = &s.health;
                    let a = h.alarms(now_ns);
                    SessionLayerRow {
                        id: s.id,
                        sender_comp_id: s.sender_comp_id.clone(),
                        target_comp_id: s.target_comp_id.clone(),
                        counters: h.counters,
                        logged_on: h.logged_on,
                        heart_bt_int_s: h.heart_bt_int_s,
                        last_message_age_ns: h.last_message_age_ns(now_ns),
                        last_heartbeat_age_ns: h.last_heartbeat_age_ns(now_ns),
                        stale: a.stale,
                        test_request_unanswered: a.test_request_unanswered,
                        connections: h.connections,
                        resets: h.resets,
                        rate: h.rate.run(),
                    }
                })
                .collect(),
        }
    }

    /// The row of session `id`.
    pub fn session(&self, id: u64) -> Option<&SessionLayerRow> {
        // Ids are 1, 2, … in table order; a search only if that ever changes.
        let at = usize::try_from(id).ok()?.checked_sub(1)?;
        match self.sessions.get(at) {
            Some(s) if s.id == id => Some(s),
            _ => self.sessions.iter().find(|s| s.id == id),
        }
    }
}
