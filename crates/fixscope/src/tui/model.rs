//! What the terminal UI shows, taken from the reports: the recent intervals (for the charts
//! and rates), the last cumulative summary (tables, histogram, sessions), the latest
//! counters. Only the reporter side writes it; the views only read it.

use std::collections::VecDeque;

use fixscope_core::correlate::{RequestType, Stage};
use fixscope_core::report::{
    Counters, IntervalReport, SessionSummary, StageSummary, SummaryReport, TimeSpan,
};
use fixscope_core::source::Counter;
use fixscope_core::stats::Distribution;
use hdrhistogram::Histogram;

use super::slowest::SlowRow;

/// Intervals kept for the charts (5 minutes at the default `-r 1`).
pub const HISTORY: usize = 300;
/// Rows of the latency histogram (log-spaced between min and max, as in the text summary).
pub const HISTOGRAM_ROWS: usize = 16;
/// The quantiles drawn over time, as indexes into [`PERCENTILES`]: p50, p99, p99.9.
pub const CHART_PERCENTILES: [usize; 3] = [0, 2, 3];

/// One stage over one interval.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StagePoint {
    pub count: u64,
    /// p50, p99, p99.9 ([`CHART_PERCENTILES`]); `None` when the rank is above the
    /// histogram's range (shown `>range`, never as a smaller value) or there is no data.
    pub percentiles_ns: [Option<u64>; 3],
    pub max_ns: u64,
    /// The histogram's top (`-x`).
    pub range_ns: u64,
}

/// One interval's figures.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct IntervalPoint {
    pub span: TimeSpan,
    pub stages: [StagePoint; 4],
    /// Requests and FIX messages seen during the interval.
    pub requests: u64,
    pub messages: u64,
}

impl IntervalPoint {
    pub fn order_rate(&self) -> f64 {
        per_second(self.requests, self.span.seconds())
    }

    pub fn message_rate(&self) -> f64 {
        per_second(self.messages, self.span.seconds())
    }
}

fn per_second(n: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        n as f64 / seconds
    } else {
        0.0
    }
}

/// One row of the latency histogram: values in `[lo_ns, hi_ns)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HistogramRow {
    pub lo_ns: f64,
    pub hi_ns: f64,
    pub count: u64,
}

/// A stage's histogram as rows, plus what lies above its range (never hidden).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HistogramRows {
    pub rows: Vec<HistogramRow>,
    pub over_range: u64,
    pub range_ns: u64,
}

/// The last cumulative summary.
#[derive(Clone, Debug)]
pub struct SummaryFigures {
    pub span: TimeSpan,
    pub duration_ns: u64,
    pub stages: [StageSummary; 4],
    /// The breakdown stages (`--breakdown`; empty without it).
    pub breakdown: Vec<StageSummary>,
    pub by_request_type: Vec<(RequestType, [StageSummary; 4])>,
    pub sessions: Vec<SessionSummary>,
    pub untracked_sessions: u64,
    pub source: Vec<Counter>,
    pub histograms: [HistogramRows; 4],
    /// The session layer per session, and `--by`'s values (#21).
    pub session_layer: Vec<super::session_layer::LayerRow>,
    pub by: Vec<[String; 6]>,
    /// The `by` view: every stage of `--by`'s values, what `(other)` holds, and whether
    /// `--by` was given.
    pub by_values: Vec<super::by::ByRow>,
    pub by_notes: Vec<String>,
    pub by_on: bool,
}

/// Everything the views read.
#[derive(Default)]
pub struct Model {
    /// What is watched (interface, ports, role, attach kind).
    pub title: String,
    /// The most recent intervals, oldest first, at most [`HISTORY`].
    pub history: VecDeque<IntervalPoint>,
    /// The latest counters (from the newest report of either kind).
    pub counters: Counters,
    /// The source counters of the latest interval line (e.g. kernel ring drops).
    pub interval_source: Vec<Counter>,
    pub summary: Option<SummaryFigures>,
    /// The run's slowest orders (`--slowest`), slowest first within each stage, from the
    /// latest cumulative summary (computed every second).
    pub slowest: Vec<SlowRow>,
}

impl Model {
    pub fn new(title: impl Into<String>) -> Self {
        Model {
            title: title.into(),
            ..Model::default()
        }
    }

    pub fn on_interval(&mut self, r: &IntervalReport<'_>) {
        let stages = Stage::ALL.map(|stage| {
            let s = &r.stages[stage.index()];
            StagePoint {
                count: s.count,
                percentiles_ns: CHART_PERCENTILES.map(|i| s.percentiles_ns[i]),
                max_ns: s.max_ns,
                range_ns: r.figures.interval(stage).range_ns(),
            }
        });
        if self.history.len() == HISTORY {
            self.history.pop_front();
        }
        self.history.push_back(IntervalPoint {
            span: r.span,
            stages,
            requests: r.delta.correlation.requests,
            messages: r.delta.framing.messages,
        });
        self.counters = r.counters;
        self.interval_source = r.source.to_vec();
    }

    pub fn on_summary(&mut self, r: &SummaryReport<'_>) {
        self.counters = r.counters;
        self.slowest = r
            .slowest
            .iter()
            .flat_map(|list| list.iter())
            .map(|o| SlowRow::from((o, r.span.unix_offset_ns)))
            .collect();
        let (by_values, by_notes) = super::by::rows(r);
        self.summary = Some(SummaryFigures {
            by_values,
            by_notes,
            by_on: r.figures.by().is_some(),
            span: r.span,
            duration_ns: r.duration_ns,
            stages: r.stages,
            breakdown: r.breakdown.clone(),
            by_request_type: r.by_request_type.clone(),
            sessions: r.sessions.clone(),
            untracked_sessions: r.untracked_sessions,
            source: r.source.to_vec(),
            session_layer: super::session_layer::rows(r),
            by: super::session_layer::by_rows(r),
            histograms: Stage::ALL.map(|s| {
                histogram_rows(
                    r.histograms[s.index()],
                    &r.stages[s.index()].dist,
                    HISTOGRAM_ROWS,
                )
            }),
        });
    }

    pub fn latest(&self) -> Option<&IntervalPoint> {
        self.history.back()
    }
}

/// The in-range values of `hist` in `rows` log-spaced rows between the minimum and the
/// largest in-range value; the values above range are counted apart.
pub fn histogram_rows(hist: &Histogram<u64>, dist: &Distribution, rows: usize) -> HistogramRows {
    let range_ns = dist.range_ns;
    let over_range = dist.over_range;
    if hist.is_empty() || rows == 0 {
        return HistogramRows {
            rows: Vec::new(),
            over_range,
            range_ns,
        };
    }
    let lo = dist.min_ns.max(1) as f64;
    let top = dist.max_ns.min(hist.max()).max(dist.min_ns + 1) as f64;
    let ratio = (top / lo).powf(1.0 / rows as f64);
    let mut counts = vec![0u64; rows];
    for v in hist.iter_recorded() {
        let value = (v.value_iterated_to() as f64).clamp(lo, top);
        let row = ((value / lo).ln() / ratio.ln()).floor() as usize;
        counts[row.min(rows - 1)] += v.count_since_last_iteration();
    }
    let mut edge = lo;
    let rows = counts
        .into_iter()
        .map(|count| {
            let row = HistogramRow {
                lo_ns: edge,
                hi_ns: edge * ratio,
                count,
            };
            edge *= ratio;
            row
        })
        .collect();
    HistogramRows {
        rows,
        over_range,
        range_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fixscope_core::stats::{quantile_with_over_range, LatencyRecorder, PERCENTILES};

    /// The interval quantile (the core's `quantile_with_over_range`) follows the one
    /// definition (LatencyRecorder's) exactly, over values in and above range.
    #[test]
    fn interval_quantile_equals_the_recorders() {
        let range = 1_000_000;
        for n in [1u64, 7, 100, 1000, 1001, 5000] {
            let mut r = LatencyRecorder::new(range, 3);
            // A spread with 0.3% of the values above range.
            for i in 0..n {
                let v = if i % 331 == 330 {
                    range * 3 + i
                } else {
                    1_000 + (i * 7919) % 500_000
                };
                r.record(v);
            }
            let d = r.distribution();
            for (q, label, _) in PERCENTILES {
                assert_eq!(
                    quantile_with_over_range(r.histogram(), r.count(), d.min_ns, d.max_ns, q),
                    r.value_at_quantile(q),
                    "n={n} {label}"
                );
            }
        }
    }

    #[test]
    fn histogram_rows_keep_every_value() {
        let mut r = LatencyRecorder::new(1_000_000, 3);
        for v in [10_000u64, 20_000, 20_000, 900_000, 5_000_000] {
            r.record(v);
        }
        let h = histogram_rows(r.histogram(), &r.distribution(), 8);
        assert_eq!(h.rows.len(), 8);
        assert_eq!(h.rows.iter().map(|r| r.count).sum::<u64>(), 4);
        assert_eq!(h.over_range, 1);
        assert_eq!(h.rows[0].count, 1, "{h:?}");
    }
}
