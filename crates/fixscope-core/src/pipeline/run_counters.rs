//! The pipeline's counters as a run reports them: its own, stage A's in a two-stage run
//! (`Upstream`), and the record sink's.

use fixscope_protocol::ProtocolName;
use std::borrow::Cow;

use super::forward::Upstream;
use super::Pipeline;
use crate::report::Counters;
use crate::source::Counter;

impl Pipeline {
    /// The record sink's counters (rows it lost), when records are on.
    pub(super) fn record_counters(&self) -> Vec<Counter> {
        self.record_sink
            .as_ref()
            .map_or_else(Vec::new, |sink| sink.counters())
    }

    /// The source's counters and, with records, the record sink's (rows it lost).
    pub(super) fn with_record_counters<'c>(&self, source: &'c [Counter]) -> Cow<'c, [Counter]> {
        if self.record_sink.is_none() {
            return Cow::Borrowed(source);
        }
        let mut all = source.to_vec();
        all.extend(self.record_counters());
        Cow::Owned(all)
    }

    /// The counters of what stage A of a two-stage run does: segments, connections,
    /// reassembly, framing.
    pub(super) fn upstream_counters(&self) -> Upstream {
        Upstream {
            segments: self.segments,
            connections: self.connections_opened,
            stray_segments: self.stray_segments,
            open_connections: self.connections.len() as u64,
            shed_connections: self.shed_connections,
            framing: self.framing,
            reassembly: self.reassembly,
            tls: self.config.tls_keys.is_some().then_some(self.tls),
        }
    }

    /// The binary order protocols' counters (`--protocol`): the ended connections' and the
    /// open ones'; each protocol's `None` when no port is named for it and no connection
    /// was recognised as its by its login.
    fn binary_counters(
        &self,
    ) -> (
        Option<crate::counters::OuchCounters>,
        Option<crate::counters::Ilink3Counters>,
    ) {
        let names = self.config.protocols.names();
        let mut all = self.binary.ended;
        for c in self.connections.values() {
            if let Some(b) = &c.binary {
                b.add_counters(&mut all);
            }
        }
        let named = |p: &[ProtocolName]| names.iter().any(|n| p.contains(n));
        let ouch =
            named(&[ProtocolName::Ouch42, ProtocolName::Ouch50]) || self.binary.recognised_ouch;
        let ilink3 = named(&[ProtocolName::Ilink3]) || self.binary.recognised_ilink3;
        (ouch.then_some(all.ouch), ilink3.then_some(all.ilink3))
    }

    /// A snapshot of every pipeline counter.
    pub fn counters(&self) -> Counters {
        let correlation = self.correlator.counters;
        let unanswered_pending = self.correlator.unanswered_pending() as u64;
        let upstream = self.upstream.unwrap_or_else(|| self.upstream_counters());
        let (ouch, ilink3) = self.binary_counters();
        Counters {
            segments: upstream.segments,
            connections: upstream.connections,
            stray_segments: upstream.stray_segments,
            open_connections: upstream.open_connections,
            shed_connections: upstream.shed_connections,
            framing: upstream.framing,
            correlation,
            unanswered: unanswered_pending
                + correlation.unanswered_evicted
                + correlation.unanswered_closed
                + correlation.untracked_requests,
            unanswered_pending,
            pending: self.correlator.pending() as u64,
            reassembly: upstream.reassembly,
            over_range: self.stats.over_range(),
            breakdown: self.breakdown.as_ref().map(|b| b.counters),
            hops: self.hops.as_ref().map(|h| h.counters),
            points: self.points.as_ref().map(|p| p.counters),
            session: self.session_layer.counters,
            tls: upstream.tls,
            ouch,
            ilink3,
            ticks: self.stats.tick_counters(),
        }
    }
}
