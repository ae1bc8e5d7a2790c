//! The latencies of one `-r 1` interval of `scripts/bench-offline.sh`'s capture: 674
//! orders at each of four stages, 15–475 µs, in random order (a fixed xorshift sequence,
//! the same every run).

/// Orders per interval.
const ORDERS: usize = 674;

/// `ORDERS` latencies per stage, interleaved stage by stage (`i % stages`).
pub fn interval_latencies(stages: usize) -> Vec<u64> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..ORDERS * stages)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            15_000 + x % 460_000
        })
        .collect()
}
