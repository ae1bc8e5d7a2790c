//! An HDR histogram whose work is proportional to what it holds.
//!
//! Same buckets as `hdrhistogram::Histogram::new_with_bounds(1, high, sigfig)` (index for
//! index, so a value lands in the same bucket and reports the same edge), plus a bitmap of
//! the 64-count blocks that may hold counts. Resetting, merging and walking for percentiles
//! visit only those blocks: an interval of a few hundred latencies costs a few hundred
//! steps, not the ~25,000 counts of a 10 s range at 3 digits (hdrhistogram's `reset`, `add`
//! and iterators walk or write them all — at 1 s intervals that was most of a report's
//! cost, issue #22). Hand-written for that one reason; anything that needs the crate's type
//! (serialisation, iterators) gets one from [`SparseHistogram::to_histogram`].

use hdrhistogram::Histogram;

/// Counts per block of the bitmap.
const BLOCK: usize = 64;

#[derive(Clone, Debug)]
pub struct SparseHistogram {
    counts: Box<[u64]>,
    /// Bit `b` of word `w`: block `w * 64 + b` (counts `(w * 64 + b) * 64 ..`) may be non-zero.
    blocks: Box<[u64]>,
    len: u64,
    high: u64,
    sigfig: u8,
    /// hdrhistogram's `sub_bucket_half_count_magnitude`, `sub_bucket_half_count`,
    /// `sub_bucket_mask` and `leading_zero_count_base` (unit magnitude 0: the lowest
    /// discernible value is 1).
    half_magnitude: u32,
    half_count: usize,
    sub_bucket_mask: u64,
    leading_zero_count_base: u32,
}

impl SparseHistogram {
    /// The buckets of `Histogram::new_with_bounds(1, high, sigfig)`; `high >= 2`, `sigfig`
    /// in 1..=5 (the caller's `fixscope_core::stats::LatencyRecorder::new` makes them so).
    pub fn new(high: u64, sigfig: u8) -> Self {
        let largest = 2 * 10u32.pow(u32::from(sigfig));
        let sub_bucket_count_magnitude = f64::from(largest).log2().ceil() as u32;
        let half_magnitude = sub_bucket_count_magnitude - 1;
        // hdrhistogram's `buckets_to_cover(high)` and `num_bins` (computed, not read from a
        // histogram built for it: that one allocates and zeroes ~200 KB).
        let mut smallest_untrackable = 1u64 << sub_bucket_count_magnitude;
        let mut buckets = 1u64;
        while smallest_untrackable <= high {
            if smallest_untrackable > u64::MAX / 2 {
                buckets += 1;
                break;
            }
            smallest_untrackable <<= 1;
            buckets += 1;
        }
        let counts = ((buckets + 1) << half_magnitude) as usize;
        let block_count = counts.div_ceil(BLOCK);
        SparseHistogram {
            counts: vec![0; counts].into_boxed_slice(),
            blocks: vec![0; block_count.div_ceil(64)].into_boxed_slice(),
            len: 0,
            high,
            sigfig,
            half_magnitude,
            half_count: 1 << half_magnitude,
            sub_bucket_mask: (1u64 << sub_bucket_count_magnitude) - 1,
            leading_zero_count_base: 64 - sub_bucket_count_magnitude,
        }
    }

    /// The top of the range given at construction.
    pub fn high(&self) -> u64 {
        self.high
    }

    /// Values recorded.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn index_for(&self, value: u64) -> usize {
        let bucket = self.leading_zero_count_base - (value | self.sub_bucket_mask).leading_zeros();
        let sub_bucket = (value >> bucket) as usize;
        ((bucket as usize + 1) << self.half_magnitude) + sub_bucket - self.half_count
    }

    /// The bucket of `index` and the lowest value it holds.
    #[inline]
    fn bucket_and_lowest(&self, index: usize) -> (u32, u64) {
        let bucket = (index >> self.half_magnitude) as isize - 1;
        let mut sub_bucket = (index & (self.half_count - 1)) + self.half_count;
        if bucket < 0 {
            sub_bucket -= self.half_count;
            return (0, sub_bucket as u64);
        }
        (bucket as u32, (sub_bucket as u64) << bucket)
    }

    /// The lowest value counted at `index` (hdrhistogram's `value_for`).
    #[inline]
    pub fn lowest_at(&self, index: usize) -> u64 {
        self.bucket_and_lowest(index).1
    }

    /// The highest value counted at `index` (what hdrhistogram reports for a percentile).
    #[inline]
    pub fn highest_at(&self, index: usize) -> u64 {
        let (bucket, lowest) = self.bucket_and_lowest(index);
        lowest + (1u64 << bucket) - 1
    }

    /// Records `value` (at most [`SparseHistogram::high`]: the caller counts larger ones
    /// apart; one above it is clamped to the top bucket rather than lost).
    #[inline]
    pub fn record(&mut self, value: u64) {
        let i = self.index_for(value.min(self.high));
        self.counts[i] += 1;
        let block = i / BLOCK;
        self.blocks[block / 64] |= 1 << (block % 64);
        self.len += 1;
    }

    /// Calls `f(block)` for every block that may hold counts, in order.
    #[inline]
    fn for_each_block(blocks: &[u64], mut f: impl FnMut(usize)) {
        for (w, &word) in blocks.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let b = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                f(w * 64 + b);
            }
        }
    }

    fn block_range(&self, block: usize) -> std::ops::Range<usize> {
        block * BLOCK..((block + 1) * BLOCK).min(self.counts.len())
    }

    /// Empties it, touching only the blocks that held counts.
    pub fn reset(&mut self) {
        if self.len == 0 {
            return;
        }
        let SparseHistogram { counts, blocks, .. } = self;
        Self::for_each_block(blocks, |block| {
            let end = ((block + 1) * BLOCK).min(counts.len());
            counts[block * BLOCK..end].fill(0);
        });
        blocks.fill(0);
        self.len = 0;
    }

    /// Adds everything `other` holds (same range and precision), visiting only its blocks.
    pub fn merge_from(&mut self, other: &SparseHistogram) {
        debug_assert_eq!(
            (self.high, self.sigfig),
            (other.high, other.sigfig),
            "merging histograms of different ranges"
        );
        if other.len == 0 {
            return;
        }
        Self::for_each_block(&other.blocks, |block| {
            let r = other.block_range(block);
            for (mine, theirs) in self.counts[r.clone()].iter_mut().zip(&other.counts[r]) {
                *mine += *theirs;
            }
        });
        for (mine, theirs) in self.blocks.iter_mut().zip(other.blocks.iter()) {
            *mine |= *theirs;
        }
        self.len += other.len;
    }

    /// Calls `f(index, count)` for every non-zero count, lowest values first.
    pub fn for_each_count(&self, mut f: impl FnMut(usize, u64)) {
        Self::for_each_block(&self.blocks, |block| {
            for i in self.block_range(block) {
                let c = self.counts[i];
                if c != 0 {
                    f(i, c);
                }
            }
        });
    }

    /// The highest value of the bucket holding the `rank`-th smallest value (1-based), for
    /// every rank of `ranks` (ascending, each in `1..=len`), in one walk over the blocks.
    /// `out[k]` gets the value of `ranks[k]`.
    pub fn values_at_ranks(&self, ranks: &[u64], out: &mut [u64]) {
        let n = ranks.len().min(out.len());
        let mut next = 0;
        let mut seen = 0u64;
        if n == 0 {
            return;
        }
        'walk: for (w, &word) in self.blocks.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let b = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let r = self.block_range(w * 64 + b);
                let block_sum: u64 = self.counts[r.clone()].iter().sum();
                if seen + block_sum < ranks[next] {
                    seen += block_sum;
                    continue;
                }
                for i in r {
                    seen += self.counts[i];
                    while next < n && seen >= ranks[next] {
                        out[next] = self.highest_at(i);
                        next += 1;
                    }
                    if next == n {
                        break 'walk;
                    }
                }
            }
        }
    }

    /// The same counts as hdrhistogram's type (serialisation, iterators, plots).
    pub fn to_histogram(&self) -> Histogram<u64> {
        let mut h = match Histogram::new_with_bounds(1, self.high, self.sigfig) {
            Ok(h) => h,
            Err(e) => unreachable!("bounds valid at construction: {e:?}"),
        };
        self.for_each_count(|i, c| {
            // Cannot fail: every index holds values in range.
            let _ = h.record_n(self.lowest_at(i), c);
        });
        h
    }

    /// The counts of an hdrhistogram of the same range and precision.
    pub fn from_histogram(h: &Histogram<u64>) -> Self {
        let mut s = SparseHistogram::new(h.high().max(2), h.sigfig().clamp(1, 5));
        for v in h.iter_recorded() {
            let i = s.index_for(v.value_iterated_to().min(s.high));
            let c = v.count_at_value();
            s.counts[i] += c;
            let block = i / BLOCK;
            s.blocks[block / 64] |= 1 << (block % 64);
            s.len += c;
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xorshift(x: &mut u64) -> u64 {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    }

    #[test]
    fn buckets_are_hdrhistograms_index_for_index() {
        for (high, digits) in [(10_000_000_000u64, 3u8), (60_000_000_000, 2), (1_000, 3)] {
            let s = SparseHistogram::new(high, digits);
            let h = Histogram::<u64>::new_with_bounds(1, high, digits).unwrap();
            assert_eq!(s.counts.len(), h.distinct_values());
            let mut x = 0x2545_f491_4f6c_dd1du64;
            let values = (0..2_000u64)
                .chain((0..20_000).map(|_| xorshift(&mut x) % (high + 1)))
                .chain([high]);
            for v in values {
                let i = s.index_for(v);
                assert_eq!(s.lowest_at(i), h.lowest_equivalent(v), "value {v}");
                assert_eq!(s.highest_at(i), h.highest_equivalent(v), "value {v}");
            }
        }
    }

    #[test]
    fn percentile_walk_and_conversion_match_hdrhistogram() {
        let mut s = SparseHistogram::new(10_000_000_000, 3);
        let mut h = Histogram::<u64>::new_with_bounds(1, 10_000_000_000, 3).unwrap();
        let mut x = 7u64;
        for _ in 0..50_000 {
            let v = 1_000 + xorshift(&mut x) % 80_000_000;
            s.record(v);
            h.record(v).unwrap();
        }
        let qs = [0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999, 1.0];
        let ranks = qs.map(|q| ((q * 50_000f64).ceil() as u64).max(1));
        let mut ours = [0; 7];
        s.values_at_ranks(&ranks, &mut ours);
        for (q, v) in qs.iter().zip(ours) {
            assert_eq!(v, h.value_at_quantile(*q), "quantile {q}");
        }
        assert_eq!(s.to_histogram(), h);
        let back = SparseHistogram::from_histogram(&h);
        let mut again = [0; 7];
        back.values_at_ranks(&ranks, &mut again);
        assert_eq!(again, ours);
        assert_eq!(back.len(), 50_000);
    }

    #[test]
    fn merging_halves_equals_the_whole_and_reset_empties() {
        let mut whole = SparseHistogram::new(1_000_000_000, 3);
        let mut a = whole.clone();
        let mut b = whole.clone();
        let mut x = 99u64;
        for n in 0..10_000 {
            let v = xorshift(&mut x) % 1_000_000_000;
            whole.record(v);
            if n % 3 == 0 { &mut a } else { &mut b }.record(v);
        }
        a.merge_from(&b);
        assert_eq!(a.counts, whole.counts);
        assert_eq!(a.blocks, whole.blocks);
        assert_eq!(a.len(), whole.len());
        a.reset();
        assert!(a.counts.iter().all(|&c| c == 0));
        assert!(a.blocks.iter().all(|&w| w == 0));
        assert_eq!(a.len(), 0);
        a.record(5);
        let mut v = [0];
        a.values_at_ranks(&[1], &mut v);
        assert_eq!(v, [5]);
    }
}
