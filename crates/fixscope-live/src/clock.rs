//! The live timebase: `bpf_ktime_get_ns()` is CLOCK_MONOTONIC, so "now" is that clock, and
//! UNIX time is monotonic time plus an offset, measured again whenever asked (the wall clock
//! can be stepped while the monotonic clock goes on).

use rustix::time::{clock_gettime, ClockId, Timespec};

fn ns(t: Timespec) -> i128 {
    i128::from(t.tv_sec) * 1_000_000_000 + i128::from(t.tv_nsec)
}

/// CLOCK_MONOTONIC now, in nanoseconds: the clock of the kernel's record timestamps.
pub(crate) fn monotonic_ns() -> u64 {
    u64::try_from(ns(clock_gettime(ClockId::Monotonic))).unwrap_or(0)
}

/// CLOCK_REALTIME − CLOCK_MONOTONIC in nanoseconds: add it to a kernel timestamp to get UNIX
/// time. Of a few (monotonic, realtime, monotonic) reads, the one with the smallest gap
/// between its two monotonic reads is the least disturbed (an interrupt or preemption in
/// between only widens the gap); its realtime read is taken to lie at the gap's middle.
pub(crate) fn unix_offset_ns() -> i64 {
    const TRIES: usize = 7;
    let mut best: Option<(i128, i128)> = None; // (gap, offset)
    for _ in 0..TRIES {
        let before = ns(clock_gettime(ClockId::Monotonic));
        let real = ns(clock_gettime(ClockId::Realtime));
        let after = ns(clock_gettime(ClockId::Monotonic));
        let gap = after - before;
        let offset = real - (before + gap / 2);
        match best {
            Some((g, _)) if g <= gap => {}
            _ => best = Some((gap, offset)),
        }
    }
    best.map_or(0, |(_, offset)| {
        i64::try_from(offset).unwrap_or(if offset > 0 { i64::MAX } else { i64::MIN })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offset_maps_monotonic_time_to_unix_time() {
        let offset = unix_offset_ns();
        let mono = monotonic_ns();
        let unix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_nanos() as i128;
        let mapped = i128::from(mono) + i128::from(offset);
        // The two reads above are microseconds apart; allow 50 ms for a descheduled thread.
        assert!(
            (mapped - unix).abs() < 50_000_000,
            "monotonic {mono} + offset {offset} = {mapped}, UNIX time {unix}"
        );
        assert!(monotonic_ns() >= mono, "monotonic");
    }
}
