//! Quantiles of a weighted sum of block histograms, without building the sum.
//!
//! A resample gives each block a whole-number weight; the resampled histogram is the sum of
//! the blocks' histograms times their weights. Each block keeps its cumulative counts over
//! the cell's distinct bucket values, so the count at or below a value is a weighted sum
//! over blocks, and a quantile is a binary search over values: O(blocks × log(values)) per
//! quantile instead of O(values) to add histograms up.
//!
//! Ranks are counted exactly as [`fixscope_core::stats::quantile_with_over_range`] counts them, so
//! with every weight 1 the result is, value for value, the percentile `report` prints.

use super::data::BlockHist;

/// One cell of one side, indexed for resampling: blocks of every run, one after another.
pub struct CellIndex {
    /// Distinct bucket values over all blocks, ascending.
    values: Vec<u64>,
    /// Per block, the cumulative count at each value (`values.len()` each), flattened.
    cumulative: Vec<u64>,
    /// Per block, the values above range.
    over_range: Vec<u64>,
    min_ns: u64,
    max_ns: u64,
}

impl CellIndex {
    /// Indexes `blocks` (of every run of a side, in the side's global block order).
    pub fn new<'a>(blocks: impl IntoIterator<Item = &'a BlockHist> + Clone) -> Self {
        let mut values: Vec<u64> = blocks
            .clone()
            .into_iter()
            .flat_map(|b| b.buckets.iter().map(|&(v, _)| v))
            .collect();
        values.sort_unstable();
        values.dedup();
        let mut cumulative = Vec::new();
        let mut over_range = Vec::new();
        let (mut min_ns, mut max_ns) = (u64::MAX, 0);
        for b in blocks {
            let mut running = 0;
            let mut next = b.buckets.iter().peekable();
            for &v in &values {
                while let Some(&&(bv, c)) = next.peek() {
                    if bv > v {
                        break;
                    }
                    running += c;
                    next.next();
                }
                cumulative.push(running);
            }
            over_range.push(b.over_range);
            if let Some(m) = b.min_ns {
                min_ns = min_ns.min(m);
            }
            max_ns = max_ns.max(b.max_ns);
        }
        CellIndex {
            values,
            cumulative,
            over_range,
            min_ns,
            max_ns,
        }
    }

    fn in_range(&self, block: usize) -> u64 {
        let n = self.values.len();
        if n == 0 {
            0
        } else {
            self.cumulative[block * n + n - 1]
        }
    }

    /// Latencies in the weighted sum.
    pub fn total(&self, weights: &[(usize, u64)]) -> u64 {
        weights
            .iter()
            .map(|&(b, w)| w * (self.in_range(b) + self.over_range[b]))
            .sum()
    }

    /// The largest latency (exact), the stand-in for a resampled quantile above range.
    pub fn max_ns(&self) -> u64 {
        self.max_ns
    }

    /// The value at quantile `q` of the weighted sum of blocks (`(block, weight)` pairs,
    /// weights > 0); `None` when empty or when the rank falls above the histogram's range.
    pub fn quantile(&self, weights: &[(usize, u64)], q: f64) -> Option<u64> {
        let total = self.total(weights);
        if total == 0 {
            return None;
        }
        let rank = ((q.min(1.0) * total as f64).ceil() as u64).max(1);
        let n = self.values.len();
        let at = |k: usize| -> u64 {
            weights
                .iter()
                .map(|&(b, w)| w * self.cumulative[b * n + k])
                .sum()
        };
        if n == 0 || at(n - 1) < rank {
            return None;
        }
        // Smallest k with at(k) >= rank.
        let (mut lo, mut hi) = (0usize, n - 1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if at(mid) >= rank {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        Some(self.values[lo].clamp(self.min_ns, self.max_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fixscope_core::stats::LatencyRecorder;

    #[test]
    fn unit_weights_give_reports_percentiles_exactly() {
        // Three blocks of a recorder with values above range: the sum of the blocks'
        // quantiles at weight 1 must be the recorder's, rank for rank.
        let mut whole = LatencyRecorder::new(1_000_000, 3);
        let mut blocks = Vec::new();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..3 {
            let mut r = LatencyRecorder::new(1_000_000, 3);
            for _ in 0..997 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let v = 100 + x % 1_200_000;
                r.record(v);
                whole.record(v);
            }
            blocks.push(BlockHist::from_histogram(
                r.histogram(),
                r.over_range(),
                r.min_ns(),
                r.max_ns(),
            ));
        }
        let index = CellIndex::new(blocks.iter());
        let ones: Vec<(usize, u64)> = (0..3).map(|b| (b, 1)).collect();
        for q in [0.0, 0.1, 0.5, 0.8, 0.83, 0.9, 0.99, 0.999] {
            assert_eq!(
                index.quantile(&ones, q),
                whole.value_at_quantile(q),
                "quantile {q}"
            );
        }
        assert!(whole.over_range() > 0, "the test covers values above range");
    }

    #[test]
    fn weights_count_blocks_that_many_times() {
        let a = BlockHist::from_values(&[10, 20, 30]);
        let b = BlockHist::from_values(&[100, 200, 300]);
        let index = CellIndex::new([&a, &b]);
        // Block b three times: 3 of 12 values are a's, so p25 is 30 and p26 is 100.
        let w = [(0, 1), (1, 3)];
        assert_eq!(index.total(&w), 12);
        assert_eq!(index.quantile(&w, 0.25), Some(30));
        assert_eq!(index.quantile(&w, 0.26), Some(100));
        assert_eq!(index.quantile(&w, 1.0), Some(300));
        assert_eq!(index.quantile(&[(0, 2)], 0.5), Some(20));
        assert_eq!(index.quantile(&[], 0.5), None);
    }
}
