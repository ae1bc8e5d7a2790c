//! Every pipeline counter, defined once.
//!
//! Each stage owns its counters as a `Serialize` struct where it increments them
//! (framing, reassembly, correlation); [`Counters`] composes them with what the pipeline
//! itself counts, flattened, so the serde field names are the names in every output — JSON
//! lines, the text report, and the docs (a test checks docs/output-json.md lists each one).

use serde::Serialize;

pub mod breakdown;
pub mod correlation;
pub mod framing;
pub mod hops;
pub mod ilink3;
pub mod itch;
pub mod mdp3;
pub mod ouch;
pub mod points;
pub mod reassembly;
pub mod session;
pub mod ticks;
pub mod tls;
pub use breakdown::BreakdownCounters;
pub use correlation::CorrelationCounters;
pub use framing::FramingCounters;
pub use hops::HopCounters;
pub use ilink3::Ilink3Counters;
pub use itch::ItchCounters;
pub use mdp3::Mdp3Counters;
pub use ouch::OuchCounters;
pub use points::PointCounters;
pub use reassembly::ReassemblyCounters;
pub use session::SessionCounters;
pub use ticks::TickCounters;
pub use tls::TlsCounters;

use crate::source::{counters_of, Counter};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
// Deserialize: `fixscope report` reads the counters back from HdrHistogram logs; a counter
// missing from an older log reads as 0.
#[serde(default)]
pub struct Counters {
    /// TCP segments of the watched ports fed to the pipeline.
    pub segments: u64,
    /// TCP connections (sessions) seen.
    pub connections: u64,
    /// Segments of no open connection that opened none: without SYN and payload (the
    /// trailing ACK/FIN/RST of a closed connection), or a closed connection's late
    /// retransmission.
    pub stray_segments: u64,
    /// Connections open at the time of the report.
    pub open_connections: u64,
    /// Connections forgotten because more than the limit were open at once.
    pub shed_connections: u64,
    #[serde(flatten)]
    pub framing: FramingCounters,
    #[serde(flatten)]
    pub correlation: CorrelationCounters,
    /// Requests never answered, for every reason: `unanswered_pending +
    /// unanswered_evicted + unanswered_closed + untracked_requests`; with `matched`, every
    /// request.
    pub unanswered: u64,
    /// Never answered (yet): still waiting for a first response at the time of the report.
    pub unanswered_pending: u64,
    /// Requests tracked at the time of the report (answered working orders included).
    pub pending: u64,
    #[serde(flatten)]
    pub reassembly: ReassemblyCounters,
    /// The FIX session layer's counters (both directions).
    #[serde(flatten)]
    pub session: SessionCounters,
    /// Latencies above the histogram range (`-x`), all stages.
    pub over_range: u64,
    /// The in-host breakdown's counters (`--breakdown` only: absent otherwise).
    #[serde(
        flatten,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::counters::breakdown::counters_if_present"
    )]
    pub breakdown: Option<BreakdownCounters>,
    /// The hop ledger (`--leg` only: absent otherwise).
    #[serde(
        flatten,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::counters::hops::counters_if_present"
    )]
    pub hops: Option<HopCounters>,
    /// The two-point ledger (`--point` only: absent otherwise).
    #[serde(
        flatten,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::counters::points::counters_if_present"
    )]
    pub points: Option<PointCounters>,
    /// TLS decryption (`--tls-keylog` only: absent otherwise).
    #[serde(
        flatten,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::counters::tls::counters_if_present"
    )]
    pub tls: Option<TlsCounters>,
    /// OUCH over SoupBinTCP (`--protocol PORTS=ouch42|ouch50` only: absent otherwise).
    #[serde(
        flatten,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::counters::ouch::counters_if_present"
    )]
    pub ouch: Option<OuchCounters>,
    /// CME iLink 3 (`--protocol PORTS=ilink3` only: absent otherwise).
    #[serde(
        flatten,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::counters::ilink3::counters_if_present"
    )]
    pub ilink3: Option<Ilink3Counters>,
    /// Tick-to-trade (`--tick-link` only: absent otherwise).
    #[serde(
        flatten,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::counters::ticks::counters_if_present"
    )]
    pub ticks: Option<TickCounters>,
}

impl Counters {
    /// Every counter as (name, value), in output order.
    pub fn list(&self) -> Vec<Counter> {
        counters_of(self)
    }

    /// What changed since `earlier` (an interval's own counts), by name.
    pub fn since(&self, earlier: &Counters) -> Vec<Counter> {
        self.list()
            .into_iter()
            .zip(earlier.list())
            .map(|((name, now), (_, then))| (name, now.saturating_sub(then)))
            .collect()
    }
}

/// Field-wise arithmetic of counter structs whose fields are all counts: `merge_from`
/// (the counts of two parts of a run add up to the whole's: sharded pipelines, issue #22)
/// and `minus` (an interval's own counts). The field lists below must name every field:
/// `arithmetic_covers_every_field` fails for one left out.
macro_rules! count_fields {
    ($($t:ty { $($f:ident),* $(,)? })*) => {$(
        impl $t {
            /// Adds `other`'s counts.
            pub fn merge_from(&mut self, other: &Self) {
                $(self.$f += other.$f;)*
            }
            /// What each count added since `earlier`.
            pub fn minus(&self, earlier: &Self) -> Self {
                let mut d = *self;
                $(d.$f = self.$f.saturating_sub(earlier.$f);)*
                d
            }
        }
    )*};
}

count_fields! {
    OuchCounters {
        soupbin_login_requests, soupbin_logins, soupbin_login_rejects, soupbin_logouts,
        soupbin_end_of_session, soupbin_heartbeats, soupbin_debug_packets,
        soupbin_sequenced_packets, soupbin_replayed_packets, soupbin_recovered_packets,
        soupbin_sequence_gaps,
        soupbin_sequence_gap_packets, ouch_resent_requests, soupbin_before_login,
        soupbin_undecodable_packets, ouch_undecodable_messages, ouch_other_messages,
        soupbin_wrong_side_packets, ouch_unknown_order_responses, ouch_version_unread,
    }
    Ilink3Counters {
        ilink3_negotiate_requests, ilink3_negotiations, ilink3_negotiation_rejects,
        ilink3_establish_requests, ilink3_establishments, ilink3_establish_rejects,
        ilink3_terminates, ilink3_sequences, ilink3_retransmit_requests,
        ilink3_retransmissions, ilink3_retransmit_rejects, ilink3_not_applied,
        ilink3_business_messages, ilink3_replayed_messages, ilink3_recovered_messages,
        ilink3_sequence_gaps, ilink3_sequence_gap_messages, ilink3_requests,
        ilink3_resent_requests, ilink3_before_establish, ilink3_undecodable_messages,
        ilink3_other_messages, ilink3_wrong_side_messages, ilink3_unknown_order_responses,
        ilink3_business_rejects_unpaired,
    }
    FramingCounters {
        messages, bad_checksum, bad_body_length, skipped_bytes, gap_cut_messages,
        unnamed_protocol_connections,
    }
    ReassemblyCounters { retransmitted_bytes, out_of_order_segments, gaps, gap_bytes }
    TickCounters {
        ticks_orders, ticks_linked, ticks_no_sequence, ticks_not_in_feed, ticks_ambiguous,
        ticks_after_order,
    }
    CorrelationCounters {
        requests, responses, matched, late, timed_out, unanswered_evicted, unanswered_closed,
        untracked_requests, unmatched_responses, duplicate_requests, expired_after_response,
        evicted, missing_key, time_reversed, response_before_request,
        answered_after_capture_hole, unsolicited_reports,
    }
    BreakdownCounters {
        breakdown_calls, breakdown_calls_evicted, breakdown_orders, breakdown_missing,
        breakdown_negative, sched_delay_not_waiting,
    }
    HopCounters {
        parents, children, linked, linked_children, unlinked_parent, unlinked_child, ambiguous,
        ambiguous_child, late_link, local_ack, fanout_parents, hops_after_capture_hole, hops_time_reversed,
        tick_missing, parents_pending, children_pending,
    }
    PointCounters {
        points_orders_joined, points_orders_near_only, points_orders_far_only,
        points_orders_ambiguous, points_time_reversed, points_segments_matched,
        points_segments_unmatched, points_segments_repeated, points_one_way_unbounded,
        points_one_way_at_step,
    }
    SessionCounters {
        logons, logouts, heartbeats, test_requests, test_requests_unanswered, resend_requests,
        gap_fills, sequence_resets, possdup_requests, possdup_responses, session_rejects,
        business_rejects, order_rejects, cancel_rejects, sequence_gaps,
        sequence_skips_at_capture_holes,
    }
}

impl Counters {
    /// Adds `other`'s counts: the counters of pipelines that each saw part of the
    /// connections add up to one pipeline's that saw them all (every field is a count of
    /// something that happened on one connection, or a sum of such).
    pub fn merge_from(&mut self, other: &Counters) {
        self.segments += other.segments;
        self.connections += other.connections;
        self.stray_segments += other.stray_segments;
        self.open_connections += other.open_connections;
        self.shed_connections += other.shed_connections;
        self.framing.merge_from(&other.framing);
        self.correlation.merge_from(&other.correlation);
        self.unanswered += other.unanswered;
        self.unanswered_pending += other.unanswered_pending;
        self.pending += other.pending;
        self.reassembly.merge_from(&other.reassembly);
        self.session.merge_from(&other.session);
        self.over_range += other.over_range;
        match (&mut self.breakdown, &other.breakdown) {
            (Some(mine), Some(theirs)) => mine.merge_from(theirs),
            (mine @ None, Some(theirs)) => *mine = Some(*theirs),
            _ => {}
        }
        match (&mut self.hops, &other.hops) {
            (Some(mine), Some(theirs)) => mine.merge_from(theirs),
            (mine @ None, Some(theirs)) => *mine = Some(*theirs),
            _ => {}
        }
        match (&mut self.points, &other.points) {
            (Some(mine), Some(theirs)) => mine.merge_from(theirs),
            (mine @ None, Some(theirs)) => *mine = Some(*theirs),
            _ => {}
        }
        match (&mut self.tls, &other.tls) {
            (Some(mine), Some(theirs)) => mine.merge_from(theirs),
            (mine @ None, Some(theirs)) => *mine = Some(*theirs),
            _ => {}
        }
        match (&mut self.ouch, &other.ouch) {
            (Some(mine), Some(theirs)) => mine.merge_from(theirs),
            (mine @ None, Some(theirs)) => *mine = Some(*theirs),
            _ => {}
        }
        match (&mut self.ilink3, &other.ilink3) {
            (Some(mine), Some(theirs)) => mine.merge_from(theirs),
            (mine @ None, Some(theirs)) => *mine = Some(*theirs),
            _ => {}
        }
        match (&mut self.ticks, &other.ticks) {
            (Some(mine), Some(theirs)) => mine.merge_from(theirs),
            (mine @ None, Some(theirs)) => *mine = Some(*theirs),
            _ => {}
        }
    }

    /// What each counter added since `earlier` (an interval's own counts), without
    /// building the name list [`Counters::since`] does.
    pub fn minus(&self, earlier: &Counters) -> Counters {
        Counters {
            segments: self.segments.saturating_sub(earlier.segments),
            connections: self.connections.saturating_sub(earlier.connections),
            stray_segments: self.stray_segments.saturating_sub(earlier.stray_segments),
            open_connections: self
                .open_connections
                .saturating_sub(earlier.open_connections),
            shed_connections: self
                .shed_connections
                .saturating_sub(earlier.shed_connections),
            framing: self.framing.minus(&earlier.framing),
            correlation: self.correlation.minus(&earlier.correlation),
            unanswered: self.unanswered.saturating_sub(earlier.unanswered),
            unanswered_pending: self
                .unanswered_pending
                .saturating_sub(earlier.unanswered_pending),
            pending: self.pending.saturating_sub(earlier.pending),
            reassembly: self.reassembly.minus(&earlier.reassembly),
            session: self.session.minus(&earlier.session),
            over_range: self.over_range.saturating_sub(earlier.over_range),
            breakdown: match (&self.breakdown, &earlier.breakdown) {
                (Some(now), Some(then)) => Some(now.minus(then)),
                (now, _) => *now,
            },
            hops: match (&self.hops, &earlier.hops) {
                (Some(now), Some(then)) => Some(now.minus(then)),
                (now, _) => *now,
            },
            points: match (&self.points, &earlier.points) {
                (Some(now), Some(then)) => Some(now.minus(then)),
                (now, _) => *now,
            },
            tls: match (&self.tls, &earlier.tls) {
                (Some(now), Some(then)) => Some(now.minus(then)),
                (now, _) => *now,
            },
            ouch: match (&self.ouch, &earlier.ouch) {
                (Some(now), Some(then)) => Some(now.minus(then)),
                (now, _) => *now,
            },
            ilink3: match (&self.ilink3, &earlier.ilink3) {
                (Some(now), Some(then)) => Some(now.minus(then)),
                (now, _) => *now,
            },
            ticks: match (&self.ticks, &earlier.ticks) {
                (Some(now), Some(then)) => Some(now.minus(then)),
                (now, _) => *now,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_counter_is_in_the_json_docs() {
        let doc = include_str!("../../../../docs/output-json.md");
        let names = Counters {
            breakdown: Some(BreakdownCounters::default()),
            hops: Some(HopCounters::default()),
            points: Some(PointCounters::default()),
            tls: Some(TlsCounters::default()),
            ouch: Some(OuchCounters::default()),
            ilink3: Some(Ilink3Counters::default()),
            ticks: Some(TickCounters::default()),
            ..Counters::default()
        }
        .list();
        assert!(names.len() >= 30, "{} counters", names.len());
        let missing: Vec<_> = names
            .iter()
            .map(|(n, _)| n)
            .filter(|n| !doc.contains(&format!("`{n}`")))
            .collect();
        assert!(
            missing.is_empty(),
            "counters not documented in docs/output-json.md: {missing:?}"
        );
    }

    #[test]
    fn names_are_unique_and_deltas_line_up() {
        let mut a = Counters::default();
        a.correlation.timed_out = 5;
        a.reassembly.gaps = 2;
        let mut b = a;
        b.correlation.timed_out = 12;
        let delta = b.since(&a);
        let get = |name: &str| delta.iter().find(|(n, _)| n == name).map(|c| c.1);
        assert_eq!(get("timed_out"), Some(7));
        assert_eq!(get("tcp_gaps"), Some(0));
        let mut names: Vec<_> = a.list().into_iter().map(|c| c.0).collect();
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n, "a counter name appears twice");
    }

    /// Counters with every field set to a distinct value (by name, through serde, so a
    /// field added later is set too).
    fn distinct(offset: u64) -> Counters {
        let names = Counters {
            breakdown: Some(BreakdownCounters::default()),
            hops: Some(HopCounters::default()),
            points: Some(PointCounters::default()),
            tls: Some(TlsCounters::default()),
            ouch: Some(OuchCounters::default()),
            ilink3: Some(Ilink3Counters::default()),
            ..Counters::default()
        }
        .list();
        let map: serde_json::Map<String, serde_json::Value> = names
            .iter()
            .enumerate()
            .map(|(i, (n, _))| (n.clone(), (offset + 10 * i as u64 + 1).into()))
            .collect();
        let c: Counters = serde_json::from_value(map.into()).expect("counters from names");
        assert!(c.list().iter().all(|(_, v)| *v > 0), "every field set");
        c
    }

    #[test]
    fn arithmetic_covers_every_field() {
        let (a, b) = (distinct(0), distinct(1_000));
        let mut sum = a;
        sum.merge_from(&b);
        let delta = b.minus(&a);
        for (((name, s), (_, x)), ((_, y), (_, d))) in sum
            .list()
            .into_iter()
            .zip(a.list())
            .zip(b.list().into_iter().zip(delta.list()))
        {
            assert_eq!(s, x + y, "merge_from misses {name}");
            assert_eq!(d, y - x, "minus misses {name}");
        }
        assert_eq!(delta.list(), b.since(&a));
    }
}
#[cfg(test)]
mod breakdown_serde {
    use super::*;
    #[test]
    fn breakdown_counters_round_trip_through_json() {
        let c = Counters {
            breakdown: Some(BreakdownCounters {
                breakdown_orders: 3,
                ..BreakdownCounters::default()
            }),
            ..Counters::default()
        };
        let back: Counters = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back, c);
        let plain: Counters =
            serde_json::from_str(&serde_json::to_string(&Counters::default()).unwrap()).unwrap();
        assert_eq!(plain.breakdown, None);
    }
}
