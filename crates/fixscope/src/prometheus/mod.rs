//! Prometheus: `--prometheus [ADDR:]PORT` serves `/metrics` (native + classic histograms,
//! counters, exemplars) from its own thread; `--prometheus-textfile FILE` writes the final
//! metrics for node_exporter's textfile collector.
//!
//! The pipeline thread builds a [`model::Snapshot`] from fixscope's cumulative statistics
//! at each interval report (`-r`, so metrics are as fresh as the interval) and at the
//! summary, and publishes it with a pointer swap; scrapes encode the latest snapshot on
//! the HTTP thread. Metric names and labels: docs/prometheus.md.

pub mod collect;
pub mod exemplar;
pub mod help;
pub mod histogram;
pub mod model;
pub mod native;
pub mod negotiate;
pub mod proto;
pub mod server;
pub mod text;
pub mod textfile;

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use fixscope_core::report::{IntervalReport, Reporter, SummaryReport, TimeSpan};

use collect::{Collector, Inputs, Settings};
use server::Published;

/// The port examples and docs use (any free port works; pass `ADDR:PORT` to bind beyond
/// loopback).
pub const SUGGESTED_PORT: u16 = 9874;

/// The Prometheus outputs of a run.
pub struct PrometheusReporter {
    collector: Collector,
    published: Option<Arc<Published>>,
    textfile: Option<PathBuf>,
}

impl PrometheusReporter {
    /// Serves `/metrics` on `listen` (when given) and writes `textfile` at the summary (when
    /// given). Returns the reporter and the bound address.
    pub fn start(
        settings: Settings,
        listen: Option<SocketAddr>,
        textfile: Option<PathBuf>,
    ) -> io::Result<(Self, Option<SocketAddr>)> {
        let (published, bound) = match listen {
            Some(addr) => {
                let published = Arc::new(Published::default());
                let bound = server::serve(addr, Arc::clone(&published))?;
                (Some(published), Some(bound))
            }
            None => (None, None),
        };
        let reporter = PrometheusReporter {
            collector: Collector::new(settings),
            published,
            textfile,
        };
        Ok((reporter, bound))
    }

    /// The exemplar integration point: the slowest order of an interval for `stage` and
    /// `request_type` becomes that series' exemplar (ClOrdID/key and session).
    pub fn note_slowest(
        &mut self,
        stage: fixscope_core::correlate::Stage,
        request_type: fixscope_core::correlate::RequestType,
        latency_ns: u64,
        key: &[u8],
        session: u64,
        request_unix_ns: Option<u64>,
    ) {
        let e = exemplar::order_exemplar(latency_ns, key, session, request_unix_ns);
        self.collector.set_exemplar(stage, request_type, e);
    }
}

fn unix_s(span: &TimeSpan) -> f64 {
    (i128::from(span.end_ns) + i128::from(span.unix_offset_ns)) as f64 * 1e-9
}

impl Reporter for PrometheusReporter {
    fn interval(&mut self, r: &IntervalReport<'_>) -> io::Result<()> {
        let Some(published) = &self.published else {
            return Ok(());
        };
        let snapshot = self.collector.snapshot(&Inputs {
            stats: r.stats,
            counters: &r.counters,
            source: r.source,
            at_unix_s: unix_s(&r.span),
        });
        published.publish(snapshot);
        Ok(())
    }

    fn summary(&mut self, r: &SummaryReport<'_>) -> io::Result<()> {
        let snapshot = self.collector.snapshot(&Inputs {
            stats: r.stats,
            counters: &r.counters,
            source: r.source,
            at_unix_s: unix_s(&r.span),
        });
        if let Some(path) = &self.textfile {
            textfile::write(path, &snapshot).map_err(|e| io::Error::other(format!("{e:#}")))?;
        }
        if let Some(published) = &self.published {
            published.publish(snapshot);
        }
        Ok(())
    }
}
