//! What one side of a session really put on the wire, counted as it is written: the ground
//! truth of fixscope's session-layer counters (logons, heartbeats, replays, gaps, rejects…).
//!
//! The counting follows the sender's own knowledge, not a parse of the capture: a replay
//! (43=Y) is a *seen* replay when its MsgSeqNum was written before, and a *first sighting*
//! when the original was queued while disconnected and never written; a MsgSeqNum gap is a
//! new (non-PossDup) message written past the highest number written so far.

use std::collections::{BTreeMap, BTreeSet};

use fixscope_core::fix::message::Fields;
use fixscope_core::fix::tag;
use fixscope_core::session::SessionCounters;
use serde::Serialize;

/// One side's wire truth for one session.
#[derive(Clone, Debug, Default, Serialize)]
pub struct WireTruth {
    /// The counters fixscope reports, for the messages this side wrote.
    pub sent: SessionCounters,
    /// SessionRejectReason (373) of the session Rejects written, by code.
    pub session_reject_reasons: BTreeMap<u64, u64>,
    /// BusinessRejectReason (380) of the BusinessMessageRejects written, by code.
    pub business_reject_reasons: BTreeMap<u64, u64>,
    /// TestRequests this side answered: when the request was read and when its Heartbeat
    /// was encoded (CLOCK_MONOTONIC, ns).
    pub test_request_answers: Vec<TestRequestAnswer>,
    /// Off unless a truth file is asked for: counting parses every message written.
    #[serde(skip)]
    pub enabled: bool,
    /// Highest MsgSeqNum written in this epoch (0: none yet).
    #[serde(skip)]
    written_max: u64,
    /// MsgSeqNums given to messages that were queued while disconnected and not written yet.
    #[serde(skip)]
    unsent: BTreeSet<u64>,
}

#[derive(Clone, Copy, Debug, Serialize)]
pub struct TestRequestAnswer {
    pub request_ns: u64,
    pub answer_ns: u64,
}

/// What the classifier needs from a message.
#[derive(Default)]
struct Facts<'a> {
    msg_type: &'a [u8],
    seq: u64,
    poss_dup: bool,
    poss_resend: bool,
    gap_fill: bool,
    new_seq_no: u64,
    exec_type: &'a [u8],
    reason: Option<u64>,
}

fn facts(msg: &[u8]) -> Facts<'_> {
    let mut f = Facts::default();
    for (t, v) in Fields::new(msg) {
        match t {
            tag::MSG_TYPE => f.msg_type = v,
            tag::MSG_SEQ_NUM => f.seq = crate::uint_field::parse_uint(v).unwrap_or(0),
            43 => f.poss_dup = v == b"Y",
            97 => f.poss_resend = v == b"Y",
            123 => f.gap_fill = v == b"Y",
            36 => f.new_seq_no = crate::uint_field::parse_uint(v).unwrap_or(0),
            tag::EXEC_TYPE => f.exec_type = v,
            373 | 380 => f.reason = crate::uint_field::parse_uint(v),
            _ => {}
        }
    }
    f
}

impl WireTruth {
    /// A new epoch (Logon 141=Y): numbering restarts at 1.
    pub fn reset_epoch(&mut self, next_seq: u64) {
        self.written_max = next_seq.saturating_sub(1);
        self.unsent.clear();
    }

    /// `seq` was given to a message queued while disconnected (not on the wire).
    pub fn queued(&mut self, seq: u64) {
        if self.enabled {
            self.unsent.insert(seq);
        }
    }

    pub fn answered_test_request(&mut self, request_ns: u64, answer_ns: u64) {
        if !self.enabled {
            return;
        }
        self.test_request_answers.push(TestRequestAnswer {
            request_ns,
            answer_ns,
        });
    }

    /// Counts one message written to the wire (its whole encoding, 8= to 10=).
    pub fn written(&mut self, msg: &[u8]) {
        if !self.enabled {
            return;
        }
        let f = facts(msg);
        let c = &mut self.sent;
        if f.msg_type == b"4" {
            if f.gap_fill {
                c.gap_fills += 1;
                self.written_max = self.written_max.max(f.new_seq_no.saturating_sub(1));
            } else {
                c.sequence_resets += 1;
                self.reset_epoch(f.new_seq_no);
            }
            return;
        }
        let is_request = matches!(f.msg_type, b"D" | b"F" | b"G");
        let first_sighting = self.unsent.remove(&f.seq);
        if f.poss_dup && !first_sighting {
            // A replay of a message on the wire before.
            if is_request {
                c.possdup_requests += 1;
            } else if matches!(f.msg_type, b"8" | b"9" | b"3" | b"j") {
                c.possdup_responses += 1;
            }
            return;
        }
        if !f.poss_dup && self.written_max > 0 && f.seq > self.written_max + 1 {
            c.sequence_gaps += 1;
        }
        self.written_max = self.written_max.max(f.seq);
        if is_request && f.poss_resend {
            // Sent only while the original is outstanding (see the client): a replay.
            c.possdup_requests += 1;
            return;
        }
        match f.msg_type {
            b"A" => c.logons += 1,
            b"5" => c.logouts += 1,
            b"0" => c.heartbeats += 1,
            b"1" => c.test_requests += 1,
            b"2" => c.resend_requests += 1,
            b"3" => {
                c.session_rejects += 1;
                if let Some(r) = f.reason {
                    *self.session_reject_reasons.entry(r).or_default() += 1;
                }
            }
            b"j" => {
                c.business_rejects += 1;
                if let Some(r) = f.reason {
                    *self.business_reject_reasons.entry(r).or_default() += 1;
                }
            }
            b"8" if f.exec_type == b"8" => c.order_rejects += 1,
            b"9" => c.cancel_rejects += 1,
            _ => {}
        }
    }
}

/// One session's truth from one side, as written to `--session-truth`.
#[derive(Clone, Debug, Serialize)]
pub struct SessionTruthRecord<'a> {
    /// The initiator's (client's) SenderCompID and the acceptor's: fixscope's session key.
    pub client_comp_id: String,
    pub server_comp_id: String,
    /// "client" or "exchange": whose messages `truth` counts.
    pub side: &'static str,
    #[serde(flatten)]
    pub truth: &'a WireTruth,
}

/// Writes `--session-truth` (JSON: `{"sessions": [...]}`).
pub fn write_session_truth(
    path: &std::path::Path,
    records: &[SessionTruthRecord<'_>],
) -> anyhow::Result<()> {
    use anyhow::Context;
    let v = serde_json::json!({ "sessions": records });
    let text = serde_json::to_string_pretty(&v)?;
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(fields: &[(u32, &str)]) -> Vec<u8> {
        fixscope_testkit::fix::fix_message("FIX.4.4", fields)
    }

    #[test]
    fn replays_gaps_and_first_sightings() {
        let mut w = WireTruth {
            enabled: true,
            ..WireTruth::default()
        };
        w.written(&msg(&[(35, "A"), (34, "1"), (141, "Y")]));
        w.written(&msg(&[(35, "D"), (34, "2"), (11, "a")]));
        // 3 and 4 queued while disconnected; the Logon at 5 jumps: a gap.
        w.queued(3);
        w.queued(4);
        w.written(&msg(&[(35, "A"), (34, "5")]));
        // Replays: 2 was on the wire (a replay), 3 and 4 were not (first sightings).
        w.written(&msg(&[(35, "D"), (34, "2"), (43, "Y")]));
        w.written(&msg(&[(35, "D"), (34, "3"), (43, "Y")]));
        w.written(&msg(&[
            (35, "4"),
            (34, "4"),
            (43, "Y"),
            (123, "Y"),
            (36, "5"),
        ]));
        w.written(&msg(&[(35, "D"), (34, "6"), (97, "Y")]));
        w.written(&msg(&[(35, "3"), (34, "7"), (373, "5")]));
        let c = w.sent;
        assert_eq!(c.logons, 2);
        assert_eq!(c.sequence_gaps, 1);
        assert_eq!(c.possdup_requests, 2);
        assert_eq!(c.gap_fills, 1);
        assert_eq!(c.session_rejects, 1);
        assert_eq!(w.session_reject_reasons.get(&5), Some(&1));
        // A hard reset restarts the numbering: 1 after it is no gap.
        w.written(&msg(&[(35, "4"), (34, "8"), (36, "1")]));
        w.written(&msg(&[(35, "0"), (34, "1")]));
        assert_eq!(w.sent.sequence_resets, 1);
        assert_eq!(w.sent.sequence_gaps, 1);
    }
}
