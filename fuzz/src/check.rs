//! The checks every target that runs the pipeline shares.

use std::io;

use fixscope_core::correlate::CorrelatorLimits;
use fixscope_core::reassembly::ReassemblyLimits;
use fixscope_core::report::{IntervalReport, Reporter, SummaryReport};
use fixscope_core::{Pipeline, PipelineConfig};

/// A pipeline with small limits, so short inputs reach eviction, shedding and gaps.
pub(crate) fn small_pipeline() -> Pipeline {
    Pipeline::new(PipelineConfig {
        interval_ns: 1_000,
        correlation: CorrelatorLimits {
            max_pending: 16,
            ttl_ns: 5_000,
        },
        reassembly: ReassemblyLimits {
            max_buffered_bytes: 4096,
            max_buffered_segments: 8,
            hole_timeout_ns: 10_000,
        },
        max_connections: 8,
        ..PipelineConfig::default()
    })
}

/// A reporter that asserts the figures are self-consistent, whatever came in.
pub(crate) struct Consistent;

impl Reporter for Consistent {
    fn interval(&mut self, r: &IntervalReport<'_>) -> io::Result<()> {
        let c = &r.counters;
        assert!(c.correlation.late <= c.correlation.timed_out);
        Ok(())
    }

    fn summary(&mut self, r: &SummaryReport<'_>) -> io::Result<()> {
        for s in &r.stages {
            if s.dist.count > 0 {
                assert!(s.dist.min_ns <= s.dist.max_ns);
                // Percentiles rise; once one is above range, every later one is too.
                assert!(s
                    .dist
                    .percentiles_ns
                    .windows(2)
                    .all(|w| match (w[0], w[1]) {
                        (Some(a), Some(b)) => a <= b,
                        (None, b) => b.is_none(),
                        (Some(_), None) => true,
                    }));
            }
        }
        let c = &r.counters;
        // Every request is accounted for.
        assert_eq!(c.correlation.requests, c.correlation.matched + c.unanswered);
        assert!(c.correlation.late <= c.correlation.timed_out);
        assert!(c.framing.bad_checksum <= c.framing.messages);
        Ok(())
    }
}

/// Ends a run: the summary (checked by [`Consistent`]).
pub(crate) fn finish(mut p: Pipeline) {
    if let Err(e) = p.finish(&[], &mut Consistent) {
        panic!("a reporter that cannot fail failed: {e}");
    }
}
