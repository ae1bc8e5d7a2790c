//! Native (sparse, exponential) histogram buckets: index arithmetic and the span/delta
//! encoding Prometheus reads.
//!
//! Schema 8 is the finest Prometheus accepts: bucket `k` holds values in
//! `(2^((k-1)/256), 2^(k/256)]`, so a bucket is 0.27% wide and a quantile read from it is
//! within ~0.14% (half a bucket) — about fixscope's own 0.1% (3 significant digits).

/// Buckets per power of two is `2^SCHEMA`.
pub const SCHEMA: i32 = 8;
const PER_OCTAVE: f64 = (1 << SCHEMA) as f64;
/// The zero bucket's half-width: client_golang's default (2^-128), so sums across hosts
/// and with other exporters never have to widen it. Only a latency of exactly 0 lands in it.
pub const ZERO_THRESHOLD: f64 = 2.938_735_877_055_719e-39;

/// The inclusive upper bound of bucket `key`.
pub fn upper_bound(key: i32) -> f64 {
    (f64::from(key) / PER_OCTAVE).exp2()
}

/// The bucket holding `v` (> 0): the smallest `key` with `v <= upper_bound(key)`.
pub fn key_of(v: f64) -> i32 {
    let mut key = (v.log2() * PER_OCTAVE).ceil() as i32;
    // log2 may be off by an ulp right at a boundary: settle it against the bounds.
    while upper_bound(key) < v {
        key += 1;
    }
    while upper_bound(key - 1) >= v {
        key -= 1;
    }
    key
}

/// One side of a native histogram as Prometheus encodes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sparse {
    /// (offset, length): the first offset is the first key, later ones the gap since the
    /// previous span.
    pub spans: Vec<(i32, u32)>,
    /// Each bucket's count minus the previous bucket's (the first: minus 0).
    pub deltas: Vec<i64>,
}

/// Gaps of at most this many empty buckets are filled with zeros rather than a new span
/// (client_golang does the same: a span costs more bytes than two zero deltas).
const MAX_FILLED_GAP: i32 = 2;

impl Sparse {
    /// Encodes `(key, count)` pairs sorted by key with no key twice.
    pub fn from_sorted(buckets: &[(i32, u64)]) -> Self {
        let mut out = Sparse::default();
        let mut previous_count: i64 = 0;
        let mut next_key: Option<i32> = None;
        for &(key, count) in buckets {
            if count == 0 {
                continue;
            }
            match next_key {
                Some(next) if key - next <= MAX_FILLED_GAP => {
                    for _ in next..key {
                        out.deltas.push(-previous_count);
                        previous_count = 0;
                    }
                    if let Some(span) = out.spans.last_mut() {
                        span.1 += (key - next) as u32 + 1;
                    }
                }
                Some(next) => out.spans.push((key - next, 1)),
                None => out.spans.push((key, 1)),
            }
            let count = i64::try_from(count).unwrap_or(i64::MAX);
            out.deltas.push(count - previous_count);
            previous_count = count;
            next_key = Some(key + 1);
        }
        out
    }

    /// Back to `(key, count)` pairs (zeros of filled gaps included).
    #[cfg(test)]
    pub fn buckets(&self) -> Vec<(i32, u64)> {
        let mut out = Vec::new();
        let mut key = 0i32;
        let mut count = 0i64;
        let mut deltas = self.deltas.iter();
        for (i, &(offset, length)) in self.spans.iter().enumerate() {
            key = if i == 0 { offset } else { key + offset };
            for _ in 0..length {
                count += deltas.next().copied().unwrap_or(0);
                out.push((key, count as u64));
                key += 1;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_lands_in_the_bucket_that_contains_it() {
        for v in [1e-9, 2.5e-6, 1e-3, 0.5, 1.0, 2.0, 3.7, 9.99, 10.0, 123.456] {
            let k = key_of(v);
            assert!(upper_bound(k - 1) < v && v <= upper_bound(k), "{v} in {k}");
        }
        // Exact powers of two are upper bounds (inclusive): 1.0 is the top of bucket 0.
        assert_eq!(key_of(1.0), 0);
        assert_eq!(key_of(2.0), 256);
        assert_eq!(key_of(0.5), -256);
    }

    #[test]
    fn buckets_are_0_27_percent_wide() {
        let width = upper_bound(1) / upper_bound(0) - 1.0;
        assert!((width - 0.002711).abs() < 1e-5, "{width}");
    }

    #[test]
    fn spans_and_deltas_round_trip() {
        let buckets = [(-5, 3), (-4, 1), (-1, 2), (10, 7), (11, 7)];
        let s = Sparse::from_sorted(&buckets);
        // -5,-4 then a gap of 2 filled with zeros, then a new span at 10.
        assert_eq!(s.spans, vec![(-5, 5), (10, 2)]);
        assert_eq!(s.deltas, vec![3, -2, -1, 0, 2, 5, 0]);
        let back: Vec<_> = s.buckets().into_iter().filter(|b| b.1 > 0).collect();
        assert_eq!(back, buckets);
        assert_eq!(Sparse::from_sorted(&[]), Sparse::default());
    }
}
