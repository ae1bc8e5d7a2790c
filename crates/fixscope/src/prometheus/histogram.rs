//! One fixscope latency recorder (HDR histogram + exact count, sum and values above range)
//! as a Prometheus histogram with both classic and native buckets, mapped from the HDR
//! counts directly: no value is recorded twice.
//!
//! Where a value goes: an HDR bucket's count goes to the native / classic bucket holding
//! the HDR bucket's upper edge — the value fixscope's own percentiles report — so a count
//! is never put below the values it stands for (at most one native bucket above, when the
//! HDR bucket, 0.05–0.1% wide, straddles a native boundary). Values above `-x` are known
//! only to lie in `(range, max]`: they go to the bucket holding `max` (native) or the first
//! classic bound at or above `max` (else `+Inf`) — never into a bucket below them, so the
//! count equals fixscope's and the tail never looks better than it was.

use fixscope_core::stats::LatencyRecorder;

use super::exemplar::Exemplar;
use super::native::{self, Sparse};

/// A histogram ready to encode: values in seconds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HistogramData {
    pub count: u64,
    pub sum_s: f64,
    /// Per classic bound (the last one `+Inf`): counts, not cumulative.
    pub classic: Vec<u64>,
    pub zero_count: u64,
    pub native: Sparse,
    /// The slowest order of the latest interval that had one.
    pub exemplar: Option<Exemplar>,
}

/// Classic bucket bounds in seconds, ascending, finite (`+Inf` is implied), with each
/// bound's value in whole nanoseconds for exact comparison with HDR values.
#[derive(Clone, Debug, PartialEq)]
pub struct ClassicBounds {
    seconds: Vec<f64>,
    ns: Vec<u64>,
}

/// 1–2.5–5 per decade from 1 µs to 10 s: FIX gateways answer in µs, stuck ones in seconds.
pub const DEFAULT_CLASSIC_BOUNDS: &str =
    "0.000001,0.0000025,0.000005,0.00001,0.000025,0.00005,0.0001,0.00025,0.0005,0.001,0.0025,0.005,0.01,0.025,0.05,0.1,0.25,0.5,1,2.5,5,10";

impl ClassicBounds {
    /// Parses a comma-separated list of seconds (ascending, positive, finite, at most 100).
    pub fn parse(list: &str) -> Result<Self, String> {
        let mut seconds = Vec::new();
        for item in list.split(',') {
            let item = item.trim();
            let s: f64 = item
                .parse()
                .map_err(|_| format!("`{item}` is not a number of seconds"))?;
            if !(s.is_finite() && s > 0.0) {
                return Err(format!("bucket bound {item} must be positive and finite"));
            }
            if seconds.last().is_some_and(|&last| s <= last) {
                return Err(format!(
                    "bucket bounds must ascend: {item} after {}",
                    seconds[seconds.len() - 1]
                ));
            }
            seconds.push(s);
        }
        if seconds.len() > 100 {
            return Err(format!("{} bucket bounds; at most 100", seconds.len()));
        }
        // A bound holds every whole nanosecond at or below it (1e-6 s: 1000 ns exactly).
        let ns = seconds
            .iter()
            .map(|s| (s * 1e9 + 1e-6).floor() as u64)
            .collect();
        Ok(ClassicBounds { seconds, ns })
    }

    pub fn seconds(&self) -> &[f64] {
        &self.seconds
    }

    /// The index of the first bound at or above `ns` (`len()` for `+Inf`).
    fn index_of(&self, ns: u64) -> usize {
        self.ns.partition_point(|&b| b < ns)
    }
}

impl Default for ClassicBounds {
    fn default() -> Self {
        match ClassicBounds::parse(DEFAULT_CLASSIC_BOUNDS) {
            Ok(b) => b,
            Err(e) => unreachable!("the default bounds parse: {e}"),
        }
    }
}

/// Maps a recorder's counts to both kinds of buckets.
pub fn from_recorder(rec: &LatencyRecorder, bounds: &ClassicBounds) -> HistogramData {
    let mut classic = vec![0u64; bounds.ns.len() + 1];
    let mut zero_count = 0u64;
    // Keys come out ascending (HDR iterates in value order); equal keys are merged.
    let mut native: Vec<(i32, u64)> = Vec::new();
    let hist = rec.histogram();
    for v in hist.iter_recorded() {
        let n = v.count_since_last_iteration();
        let edge_ns = hist.highest_equivalent(v.value_iterated_to());
        classic[bounds.index_of(edge_ns)] += n;
        if v.value_iterated_to() == 0 {
            zero_count += n;
        } else {
            add_native(&mut native, native::key_of(edge_ns as f64 * 1e-9), n);
        }
    }
    let over = rec.over_range();
    if over > 0 {
        let max_ns = rec.max_ns();
        classic[bounds.index_of(max_ns)] += over;
        // The top in-range HDR bucket may reach past `max` (it ends past the range): then
        // the values above range share that bucket, which still lies above each of them.
        let key = native::key_of(max_ns as f64 * 1e-9);
        let key = native.last().map_or(key, |last| key.max(last.0));
        add_native(&mut native, key, over);
    }
    HistogramData {
        count: rec.count(),
        sum_s: rec.sum_ns() as f64 * 1e-9,
        classic,
        zero_count,
        native: Sparse::from_sorted(&native),
        exemplar: None,
    }
}

/// Adds `n` at `key` (the last key or a higher one).
fn add_native(native: &mut Vec<(i32, u64)>, key: i32, n: u64) {
    match native.last_mut() {
        Some(last) if last.0 == key => last.1 += n,
        _ => native.push((key, n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds(list: &str) -> ClassicBounds {
        ClassicBounds::parse(list).expect("bounds")
    }

    fn native_total(h: &HistogramData) -> u64 {
        h.zero_count + h.native.buckets().iter().map(|b| b.1).sum::<u64>()
    }

    /// The keys of the native buckets holding any value, in order.
    fn occupied_keys(h: &HistogramData) -> Vec<i32> {
        h.native
            .buckets()
            .iter()
            .filter(|b| b.1 > 0)
            .map(|b| b.0)
            .collect()
    }

    #[test]
    fn counts_are_conserved_and_values_land_at_or_just_above_their_bucket() {
        let mut rec = LatencyRecorder::new(10_000_000_000, 3);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut values = Vec::new();
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = 1 + x % 50_000_000;
            values.push(v);
            rec.record(v);
        }
        let h = from_recorder(&rec, &ClassicBounds::default());
        assert_eq!(h.count, 20_000);
        assert_eq!(native_total(&h), 20_000);
        assert_eq!(h.classic.iter().sum::<u64>(), 20_000);
        assert!((h.sum_s - values.iter().sum::<u64>() as f64 * 1e-9).abs() < 1e-6);
        // Each value's own native bucket or the next one holds it, never a lower one.
        let keys: Vec<i32> = occupied_keys(&h);
        for &v in &values {
            let own = native::key_of(v as f64 * 1e-9);
            let edge = native::key_of(rec.histogram().highest_equivalent(v) as f64 * 1e-9);
            assert!(edge == own || edge == own + 1, "{v}: {own} vs {edge}");
            assert!(keys.contains(&edge), "{v} has no bucket {edge}");
        }
    }

    #[test]
    fn small_values_land_exactly() {
        // Below 2048 ns the HDR histogram is exact: every value is in its own bucket.
        let mut rec = LatencyRecorder::new(1_000_000_000, 3);
        for v in [0u64, 1, 7, 999, 1000, 1001, 2047] {
            rec.record(v);
        }
        let h = from_recorder(&rec, &bounds("0.000001,0.000002"));
        assert_eq!(h.zero_count, 1);
        let mut expected: Vec<i32> = [1u64, 7, 999, 1000, 1001, 2047]
            .iter()
            .map(|&v| native::key_of(v as f64 * 1e-9))
            .collect();
        // 999..=1001 ns share one 0.27% bucket.
        expected.dedup();
        let got: Vec<i32> = occupied_keys(&h);
        assert_eq!(got, expected);
        // le=1µs holds 0..=1000 (inclusive bound), le=2µs 1001, +Inf 2047.
        assert_eq!(h.classic, vec![5, 1, 1]);
    }

    #[test]
    fn values_above_range_are_counted_above_range_never_below() {
        let mut rec = LatencyRecorder::new(1_000_000, 3); // -x 1 ms
        for _ in 0..10 {
            rec.record(500_000);
        }
        rec.record(3_000_000);
        rec.record(7_000_000);
        let h = from_recorder(&rec, &bounds("0.001,0.005"));
        assert_eq!(h.count, 12);
        assert_eq!(native_total(&h), 12);
        // Classic: 10 at le=1ms; the two above range go where max (7 ms) fits: +Inf.
        assert_eq!(h.classic, vec![10, 0, 2]);
        let top = *h.native.buckets().last().expect("buckets");
        assert_eq!(top, (native::key_of(0.007), 2));
        assert!(native::upper_bound(top.0 - 1) > rec.histogram().high() as f64 * 1e-9);
        // With a classic bound above max they land there, still above range.
        let h = from_recorder(&rec, &bounds("0.001,0.01"));
        assert_eq!(h.classic, vec![10, 2, 0]);
    }

    #[test]
    fn bounds_are_validated() {
        assert!(ClassicBounds::parse("0.001,0.0005").is_err());
        assert!(ClassicBounds::parse("0,1").is_err());
        assert!(ClassicBounds::parse("x").is_err());
        assert!(ClassicBounds::parse("inf").is_err());
        assert_eq!(bounds("0.000001").ns, vec![1000]);
        assert_eq!(ClassicBounds::default().seconds().len(), 22);
    }
}
