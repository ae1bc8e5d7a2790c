//! The figures layer's unit: one latency distribution ([`LatencyRecorder`]) and what reports
//! read of it ([`Distribution`]). Every consumer of order events records into these; every
//! reporter reads them.
//!
//! Values above the histogram's range (`-x`) are never dropped and never clamped into its
//! top bucket: they are counted in `over_range`, their exact sum and maximum are kept, and
//! percentile ranks count them — a percentile whose rank falls among them is reported as
//! *above range* rather than as a value that would make the tail look better than it was.
//! Count, sum, min and max are exact; percentiles in range are the histogram's (within 0.1%).

use std::cell::OnceCell;

use hdrhistogram::Histogram;

use fixscope_model::sparse_hist::SparseHistogram;

/// Percentiles every summary reports: the quantile as a fraction (never `pct / 100.0`:
/// `99.9 / 100.0` is 0.9990000000000001 in f64, one rank too high whenever the count is a
/// multiple of 1000), the label people read, and the JSON field name.
pub const PERCENTILES: [(f64, &str, &str); 6] = [
    (0.5, "p50", "p50_ns"),
    (0.9, "p90", "p90_ns"),
    (0.99, "p99", "p99_ns"),
    (0.999, "p99.9", "p99_9_ns"),
    (0.9999, "p99.99", "p99_99_ns"),
    (0.99999, "p99.999", "p99_999_ns"),
];

/// Histogram precision of the main stage histograms.
pub const SIGNIFICANT_DIGITS: u8 = 3;
/// Per-session histograms are many; two digits keep each near 25 KB.
pub const SESSION_SIGNIFICANT_DIGITS: u8 = 2;
/// Sessions broken down individually; later ones are summed into the overall figures only.
pub const MAX_TRACKED_SESSIONS: usize = 4096;

/// One latency distribution.
///
/// The counts live in a [`SparseHistogram`], so resetting, merging and the percentiles cost
/// what the recorder holds, not the histogram's size (an interval report walks a few
/// hundred counts, not 25,000). Readers that need hdrhistogram's type (logs, plots,
/// Prometheus buckets) get it from [`LatencyRecorder::histogram`], built on first use and
/// kept until the next change: a run that never asks never builds one.
#[derive(Clone, Debug)]
pub struct LatencyRecorder {
    hist: SparseHistogram,
    count: u64,
    sum_ns: u128,
    min_ns: u64,
    max_ns: u64,
    over_range: u64,
    as_hdr: OnceCell<Histogram<u64>>,
}

/// Figures of one distribution, ready to report.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Distribution {
    pub count: u64,
    pub min_ns: u64,
    pub mean_ns: f64,
    pub max_ns: u64,
    /// Values at the percentiles of [`PERCENTILES`], in that order; `None` when the
    /// percentile's rank falls among the values above the histogram's range (or `count` is 0).
    pub percentiles_ns: [Option<u64>; 6],
    pub over_range: u64,
    /// The histogram's top (`-x`): a percentile reported `None` is above it.
    pub range_ns: u64,
}

impl LatencyRecorder {
    pub fn new(highest_ns: u64, significant_digits: u8) -> Self {
        // 1 ns resolution at the bottom. The bounds are made valid here (high >= 2 x low,
        // 1..=5 digits), so construction cannot fail and no error path is needed.
        let digits = significant_digits.clamp(1, 5);
        LatencyRecorder {
            hist: SparseHistogram::new(highest_ns.max(2), digits),
            count: 0,
            sum_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            over_range: 0,
            as_hdr: OnceCell::new(),
        }
    }

    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.count += 1;
        self.sum_ns += ns as u128;
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
        if ns > self.hist.high() {
            self.over_range += 1;
        } else {
            self.hist.record(ns);
        }
        if self.as_hdr.get().is_some() {
            self.as_hdr.take();
        }
    }

    /// Empties it; costs what it held.
    pub fn reset(&mut self) {
        if self.count == 0 {
            return;
        }
        self.hist.reset();
        self.count = 0;
        self.sum_ns = 0;
        self.min_ns = u64::MAX;
        self.max_ns = 0;
        self.over_range = 0;
        self.as_hdr.take();
    }

    /// Adds everything `other` recorded (same bounds: both come from one [`Stats`]); costs
    /// what `other` holds. Merging the recorders of two halves of a run gives exactly the
    /// recorder of the whole.
    pub fn merge(&mut self, other: &LatencyRecorder) {
        if other.count == 0 {
            return;
        }
        self.hist.merge_from(&other.hist);
        self.count += other.count;
        self.sum_ns += other.sum_ns;
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
        self.over_range += other.over_range;
        self.as_hdr.take();
    }

    /// [`LatencyRecorder::merge`] under the name every mergeable part of a run uses.
    pub fn merge_from(&mut self, other: &LatencyRecorder) {
        self.merge(other);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// The histogram of the values in range (`count() - over_range()` of them), as
    /// hdrhistogram's type: built on the first call after a change.
    pub fn histogram(&self) -> &Histogram<u64> {
        self.as_hdr.get_or_init(|| self.hist.to_histogram())
    }

    /// Values above the histogram's range.
    pub fn over_range(&self) -> u64 {
        self.over_range
    }

    /// The top of the histogram's range (`-x`).
    pub fn range_ns(&self) -> u64 {
        self.hist.high()
    }

    /// The value at quantile `q` of everything recorded, over-range values included in the
    /// ranks; `None` when that rank is above the histogram's range.
    pub fn value_at_quantile(&self, q: f64) -> Option<u64> {
        self.values_at_quantiles([q])[0]
    }

    /// [`LatencyRecorder::value_at_quantile`] of ascending quantiles, in one walk.
    pub fn values_at_quantiles<const N: usize>(&self, qs: [f64; N]) -> [Option<u64>; N] {
        let mut out = [None; N];
        if self.count == 0 {
            return out;
        }
        let ranks = qs.map(|q| rank_of(q, self.count));
        // Ranks beyond the histogram's values fall among those above range: None.
        let in_range = ranks.iter().take_while(|&&r| r <= self.hist.len()).count();
        let mut values = [0u64; N];
        self.hist
            .values_at_ranks(&ranks[..in_range], &mut values[..in_range]);
        for i in 0..in_range {
            // The histogram reports a bucket's upper edge; never beyond the true extremes.
            out[i] = Some(values[i].clamp(self.min_ns, self.max_ns));
        }
        out
    }

    pub fn distribution(&self) -> Distribution {
        let range_ns = self.hist.high();
        if self.count == 0 {
            return Distribution {
                range_ns,
                ..Distribution::default()
            };
        }
        Distribution {
            count: self.count,
            min_ns: self.min_ns,
            mean_ns: self.sum_ns as f64 / self.count as f64,
            max_ns: self.max_ns,
            percentiles_ns: self.values_at_quantiles(PERCENTILES.map(|(q, _, _)| q)),
            over_range: self.over_range,
            range_ns,
        }
    }
}

/// The rank (1-based) of quantile `q` among `count` values, as hdrhistogram computes it.
fn rank_of(q: f64, count: u64) -> u64 {
    ((q.min(1.0) * count as f64).ceil() as u64).max(1)
}

/// The value at quantile `q` of `count` values of which `hist` holds those in range (the
/// rest were above it), clamped to the exact `[min_ns, max_ns]`; `None` when the rank
/// falls above the range (or `count` is 0). For readers that hold a histogram and its
/// exact figures apart from a [`LatencyRecorder`] (reports, plots).
pub fn quantile_with_over_range(
    hist: &Histogram<u64>,
    count: u64,
    min_ns: u64,
    max_ns: u64,
    q: f64,
) -> Option<u64> {
    if count == 0 {
        return None;
    }
    // The rank as hdrhistogram computes it (so in-range results are identical to its
    // value_at_quantile), but over every value, not just those in the histogram.
    let rank = ((q.min(1.0) * count as f64).ceil() as u64).max(1);
    if rank > hist.len() {
        return None;
    }
    let mut seen = 0u64;
    let value = hist.iter_recorded().find_map(|v| {
        seen += v.count_since_last_iteration();
        (seen >= rank).then(|| hist.highest_equivalent(v.value_iterated_to()))
    })?;
    // The histogram reports a bucket's upper edge; never beyond the true extremes.
    Some(value.clamp(min_ns, max_ns))
}

impl LatencyRecorder {
    /// Exact sum of everything recorded.
    pub fn sum_ns(&self) -> u128 {
        self.sum_ns
    }

    /// Exact smallest value recorded (`None` when empty).
    pub fn min_ns(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min_ns)
    }

    /// Exact largest value recorded (0 when empty).
    pub fn max_ns(&self) -> u64 {
        self.max_ns
    }

    /// A recorder holding what a log stored: `hist` has the values in range (its `high()` is
    /// the range) and `count - hist.len()` more were above it. `None` when the parts do not
    /// add up (the count is below what the histogram holds, or min/max contradict it).
    pub fn from_parts(
        hist: Histogram<u64>,
        count: u64,
        sum_ns: u128,
        min_ns: u64,
        max_ns: u64,
    ) -> Option<Self> {
        let over_range = count.checked_sub(hist.len())?;
        if count > 0 && (min_ns > max_ns || (over_range > 0 && max_ns <= hist.high())) {
            return None;
        }
        Some(LatencyRecorder {
            hist: SparseHistogram::from_histogram(&hist),
            as_hdr: OnceCell::from(hist),
            count,
            sum_ns,
            min_ns: if count == 0 { u64::MAX } else { min_ns },
            max_ns: if count == 0 { 0 } else { max_ns },
            over_range,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_count_min_mean_max_and_percentiles() {
        let mut r = LatencyRecorder::new(1_000_000_000, 3);
        for v in 1..=1000u64 {
            r.record(v * 1000);
        }
        let d = r.distribution();
        assert_eq!(d.count, 1000);
        assert_eq!(d.min_ns, 1000);
        assert_eq!(d.max_ns, 1_000_000);
        assert!((d.mean_ns - 500_500.0).abs() < 1e-6);
        let p50 = d.percentiles_ns[0].unwrap() as f64;
        assert!((p50 - 500_000.0).abs() / 500_000.0 < 0.001, "p50 {p50}");
        let p99 = d.percentiles_ns[2].unwrap() as f64;
        assert!((p99 - 990_000.0).abs() / 990_000.0 < 0.001, "p99 {p99}");
        assert_eq!(d.over_range, 0);
    }

    #[test]
    fn values_above_range_are_counted_and_never_clamped_into_the_top_bucket() {
        let mut r = LatencyRecorder::new(1_000_000, 3);
        for _ in 0..98 {
            r.record(10);
        }
        r.record(500_000);
        r.record(5_000_000);
        let d = r.distribution();
        assert_eq!(d.count, 100);
        assert_eq!(d.over_range, 1);
        assert_eq!(d.max_ns, 5_000_000);
        assert_eq!(d.range_ns, r.histogram().high());
        assert_eq!(
            r.histogram().len(),
            99,
            "nothing above range in the histogram"
        );
        // p50, p90: in range; p99 is the 99th value (500 µs); p99.9 and up rank among the
        // value above range: reported as such, not as the top bucket's 1 ms.
        assert_eq!(d.percentiles_ns[0], Some(10));
        let p99 = d.percentiles_ns[2].unwrap();
        assert!((500_000..=500_500).contains(&p99), "p99 {p99}");
        assert_eq!(d.percentiles_ns[3..], [None, None, None]);
        assert!((d.mean_ns - (98.0 * 10.0 + 500_000.0 + 5_000_000.0) / 100.0).abs() < 1e-6);
    }

    #[test]
    fn in_range_percentiles_are_exactly_hdrhistograms() {
        let mut r = LatencyRecorder::new(10_000_000_000, 3);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            r.record(1_000 + x % 50_000_000);
        }
        for (q, _, _) in PERCENTILES {
            let ours = r.value_at_quantile(q).unwrap();
            let theirs = r
                .histogram()
                .value_at_quantile(q)
                .clamp(r.distribution().min_ns, r.distribution().max_ns);
            assert_eq!(ours, theirs, "quantile {q}");
        }
    }
}
