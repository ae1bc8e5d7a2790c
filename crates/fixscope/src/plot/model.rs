//! What a chart draws, whatever it was read from: a capture run through the pipeline,
//! fixscope's JSON lines, or an HdrHistogram log. Each input becomes one
//! [`PlotData`]; an adapter for a new input only has to fill it.

use fixscope_core::correlate::Stage;
use fixscope_core::stats::quantile_with_over_range;
use hdrhistogram::Histogram;

/// The percentile axis ends here (99.999%): `-log10(1 - q)` = 5.
pub const MAX_NINES: f64 = 5.0;
/// Points sampled along the percentile axis for a histogram's curve.
const CURVE_POINTS: usize = 250;

/// One input's figures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlotData {
    /// What the legend calls it (the file name).
    pub label: String,
    /// Per stage, indexed by [`Stage::index`].
    pub stages: [StageSeries; Stage::COUNT],
}

/// One stage of one input.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StageSeries {
    /// The distribution: (quantile in [0, 1), latency ns), quantile ascending. It ends
    /// where the ranks go above the histogram's range (`-x`): no point is made up there.
    pub percentiles: Vec<(f64, u64)>,
    /// Latencies in the distribution (0: the stage is not drawn).
    pub count: u64,
    pub max_ns: Option<u64>,
    /// Latencies above the histogram's range (the curve stops before their ranks).
    pub over_range: u64,
    /// The interval series, in time order.
    pub intervals: Vec<IntervalPoint>,
}

/// One interval of one stage.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IntervalPoint {
    /// The interval's start and end, UNIX seconds.
    pub start_unix_s: f64,
    pub end_unix_s: f64,
    pub p50_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    pub max_ns: Option<u64>,
}

impl PlotData {
    pub fn new(label: impl Into<String>) -> Self {
        PlotData {
            label: label.into(),
            stages: Default::default(),
        }
    }

    pub fn stage(&self, stage: Stage) -> &StageSeries {
        &self.stages[stage.index()]
    }

    pub fn stage_mut(&mut self, stage: Stage) -> &mut StageSeries {
        &mut self.stages[stage.index()]
    }

    /// Whether anything can be drawn from it.
    pub fn is_empty(&self) -> bool {
        self.stages
            .iter()
            .all(|s| s.count == 0 && s.intervals.iter().all(|p| p.max_ns.is_none()))
    }
}

impl StageSeries {
    /// The percentile curve of a histogram holding `count - over_range` of `count`
    /// latencies (the rest above its range), with the exact `min_ns`/`max_ns`: sampled
    /// evenly on the 1/(1-p) axis up to 99.999%, as percentiles are ranked everywhere in
    /// fixscope ([`quantile_with_over_range`]).
    pub fn curve_from_histogram(
        hist: &Histogram<u64>,
        count: u64,
        min_ns: u64,
        max_ns: u64,
        over_range: u64,
    ) -> Self {
        let percentiles = (0..=CURVE_POINTS)
            .map(|i| 1.0 - 10f64.powf(-MAX_NINES * i as f64 / CURVE_POINTS as f64))
            .map_while(|q| quantile_with_over_range(hist, count, min_ns, max_ns, q).map(|v| (q, v)))
            .collect();
        StageSeries {
            percentiles,
            count,
            max_ns: (count > 0).then_some(max_ns),
            over_range,
            intervals: Vec::new(),
        }
    }
}

/// A quantile's place on the percentile axis: the number of nines, `-log10(1 - q)`
/// (0 for p0, 2 for p99, 5 for p99.999), capped at [`MAX_NINES`].
pub fn nines(q: f64) -> f64 {
    if q >= 1.0 {
        return MAX_NINES;
    }
    (-(1.0 - q).log10()).clamp(0.0, MAX_NINES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_curve_stops_where_ranks_go_above_range() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 1_000_000, 3).unwrap();
        for v in 1..=999u64 {
            h.record(v * 100).unwrap();
        }
        // 1000 latencies: 999 in range, one above (rank 1000 = p99.9 and up).
        let s = StageSeries::curve_from_histogram(&h, 1000, 100, 5_000_000, 1);
        let (last_q, last_v) = *s.percentiles.last().unwrap();
        assert!(
            last_q < 0.999 + 1e-12,
            "stops before the over-range rank: {last_q}"
        );
        assert!(last_v <= 99_900 + 100);
        assert!(s
            .percentiles
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
        assert_eq!(s.max_ns, Some(5_000_000));
        let all_in = StageSeries::curve_from_histogram(&h, 999, 100, 99_900, 0);
        assert_eq!(all_in.percentiles.len(), CURVE_POINTS + 1);
        assert!((nines(all_in.percentiles.last().unwrap().0) - MAX_NINES).abs() < 1e-9);
    }

    #[test]
    fn nines_axis() {
        assert_eq!(nines(0.0), 0.0);
        assert!((nines(0.99) - 2.0).abs() < 1e-9);
        assert!((nines(0.99999) - 5.0).abs() < 1e-6);
        assert_eq!(nines(1.0), MAX_NINES);
    }
}
