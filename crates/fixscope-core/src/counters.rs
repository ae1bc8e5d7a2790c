//! Every pipeline counter, defined once.
//!
//! Each stage owns its counters as a `Serialize` struct where it increments them
//! (framing, reassembly, correlation); [`Counters`] composes them with what the pipeline
//! itself counts, flattened, so the serde field names are the names in every output — JSON
//! lines, the text report, and the docs (a test checks docs/output-json.md lists each one).

use serde::Serialize;

use crate::breakdown::BreakdownCounters;
use crate::correlate::CorrelationCounters;
use crate::fix::framing::FramingCounters;
use crate::reassembly::ReassemblyCounters;
use crate::session::SessionCounters;
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
        deserialize_with = "crate::breakdown::counters_if_present"
    )]
    pub breakdown: Option<BreakdownCounters>,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_counter_is_in_the_json_docs() {
        let doc = include_str!("../../../docs/output-json.md");
        let mut names = Counters {
            breakdown: Some(BreakdownCounters::default()),
            ..Counters::default()
        }
        .list();
        assert!(names.len() >= 30, "{} counters", names.len());
        // The capture source's counters too (the live crate checks the kernel's).
        names.extend(counters_of(&crate::pcap::CaptureStats::default()));
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
