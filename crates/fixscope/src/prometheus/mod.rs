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
pub mod session_layer;
pub mod text;
pub mod textfile;

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use fixscope_core::correlate::RequestType;
use fixscope_core::report::{IntervalReport, Reporter, SummaryReport, TimeSpan};
use fixscope_core::slowest::SlowOrder;

use collect::{Collector, Inputs, Settings};
use server::Published;

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
}

impl PrometheusReporter {
    /// Each series' exemplar becomes the interval's slowest order of its stage and request
    /// type (lists are slowest first; `--slowest 0` keeps none). A quiet interval keeps the
    /// previous exemplar.
    fn take_exemplars<'a>(
        &mut self,
        slowest: impl IntoIterator<Item = &'a [SlowOrder]>,
        unix_offset_ns: i64,
    ) {
        for list in slowest {
            for t in RequestType::ALL {
                if let Some(o) = list.iter().find(|o| o.request_type == t) {
                    let unix_ns =
                        u64::try_from(i128::from(o.request_ts_ns) + i128::from(unix_offset_ns))
                            .ok();
                    let e = exemplar::order_exemplar(o.latency_ns, &o.key, o.session, unix_ns);
                    self.collector.set_exemplar(o.stage, t, e);
                }
            }
        }
    }
}

fn unix_s(span: &TimeSpan) -> f64 {
    (i128::from(span.end_ns) + i128::from(span.unix_offset_ns)) as f64 * 1e-9
}

impl Reporter for PrometheusReporter {
    fn interval(&mut self, r: &IntervalReport<'_>) -> io::Result<()> {
        if self.published.is_none() {
            return Ok(());
        }
        let breakdown = r.breakdown.iter().map(|s| r.slowest_of(s.stage));
        self.take_exemplars(
            r.slowest.into_iter().chain(breakdown),
            r.span.unix_offset_ns,
        );
        let snapshot = self.collector.snapshot(&Inputs {
            stats: r.figures,
            counters: &r.counters,
            source: r.source,
            at_unix_s: unix_s(&r.span),
            timestamp_source: r.span.timestamp_source,
            now_ns: r.span.end_ns,
        });
        if let Some(published) = &self.published {
            published.publish(snapshot);
        }
        Ok(())
    }

    fn summary(&mut self, r: &SummaryReport<'_>) -> io::Result<()> {
        let snapshot = self.collector.snapshot(&Inputs {
            stats: r.figures,
            counters: &r.counters,
            source: r.source,
            at_unix_s: unix_s(&r.span),
            timestamp_source: r.span.timestamp_source,
            now_ns: r.span.end_ns,
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
