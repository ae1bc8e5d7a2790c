//! A [`Reporter`] that keeps what the charts need from a run: each interval's p50/p99/max
//! per stage as it passes, and the cumulative curves at the summary.

use std::io;

use fixscope_core::report::{IntervalReport, Reporter, SummaryReport};

use super::model::{IntervalPoint, PlotData, StageSeries};

/// Index of p50 and p99 in [`fixscope_core::stats::PERCENTILES`].
pub(crate) const P50: usize = 0;
pub(crate) const P99: usize = 2;

/// Collects one run's [`PlotData`]. Memory grows by one small point per stage and interval
/// (a day of 1 s intervals: ~5 MB).
pub struct PlotCollector {
    pub data: PlotData,
}

impl PlotCollector {
    pub fn new(label: impl Into<String>) -> Self {
        PlotCollector {
            data: PlotData::new(label),
        }
    }
}

/// UNIX seconds of a source timestamp.
fn unix_s(ts_ns: u64, unix_offset_ns: i64) -> f64 {
    (i128::from(ts_ns) + i128::from(unix_offset_ns)) as f64 / 1e9
}

impl Reporter for PlotCollector {
    fn interval(&mut self, r: &IntervalReport<'_>) -> io::Result<()> {
        let start_unix_s = unix_s(r.start_ns, r.span.unix_offset_ns);
        let end_unix_s = unix_s(r.end_ns, r.span.unix_offset_ns);
        for s in r.all_stages() {
            let has = s.count > 0;
            self.data.stage_mut(s.stage).intervals.push(IntervalPoint {
                start_unix_s,
                end_unix_s,
                p50_ns: s.percentiles_ns[P50],
                p99_ns: s.percentiles_ns[P99],
                max_ns: has.then_some(s.max_ns),
            });
        }
        Ok(())
    }

    fn summary(&mut self, r: &SummaryReport<'_>) -> io::Result<()> {
        // A one-way stage is drawn nowhere: its figures come with the clock's uncertainty,
        // which a curve cannot show (the page's stage table has both).
        for s in r.all_stages().filter(|s| !s.stage.is_one_way()) {
            let (stage, d) = (s.stage, &s.dist);
            let intervals = std::mem::take(&mut self.data.stage_mut(stage).intervals);
            let mut series = StageSeries::curve_from_histogram(
                r.histogram(stage),
                d.count,
                d.min_ns,
                d.max_ns,
                d.over_range,
            );
            series.intervals = intervals;
            *self.data.stage_mut(stage) = series;
        }
        Ok(())
    }
}
