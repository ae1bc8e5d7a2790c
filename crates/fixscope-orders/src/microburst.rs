//! Message rates and microbursts: the count per interval and the peak number of messages in
//! any 1 ms window — what a per-second rate hides.

use std::collections::VecDeque;

use serde::Serialize;

/// The sliding window: a burst is the most messages within any 1 ms.
pub const WINDOW_NS: u64 = 1_000_000;

/// The peak count of messages in any window of [`WINDOW_NS`] (exact: every window ending at
/// a message is looked at, and the largest count of a window is always reached by one
/// ending at a message). Fed a nondecreasing stream of timestamps; holds only the last
/// window's timestamps.
#[derive(Clone, Debug, Default)]
pub struct MicroburstTracker {
    window: VecDeque<u64>,
    /// The latest timestamp fed (a late one is taken as this: the stream stays ordered).
    last_ns: u64,
    interval_peak: u64,
    run_peak: u64,
}

impl MicroburstTracker {
    /// One message at `ts_ns`. Timestamps must not go back; one that does (bytes held
    /// behind a capture hole keep their own, earlier, time) is counted at the latest time
    /// seen, which can only make a window fuller, never emptier than the wire's.
    #[inline]
    pub fn observe(&mut self, ts_ns: u64) {
        let ts = ts_ns.max(self.last_ns);
        self.last_ns = ts;
        // The window is (ts - 1 ms, ts]: a message exactly 1 ms earlier is out.
        while self.window.front().is_some_and(|&t| t + WINDOW_NS <= ts) {
            self.window.pop_front();
        }
        self.window.push_back(ts);
        let n = self.window.len() as u64;
        self.interval_peak = self.interval_peak.max(n);
        self.run_peak = self.run_peak.max(n);
    }

    /// The interval's peak (windows ending in it; a window may start in the interval
    /// before), and a new interval begins.
    pub fn take_interval_peak(&mut self) -> u64 {
        std::mem::take(&mut self.interval_peak)
    }

    /// The current interval's peak so far.
    pub fn interval_peak(&self) -> u64 {
        self.interval_peak
    }

    /// The run's peak.
    pub fn run_peak(&self) -> u64 {
        self.run_peak
    }

    /// Timestamps held (at most the messages of the last 1 ms).
    pub fn held(&self) -> usize {
        self.window.len()
    }
}

/// Messages of one stream (a session, or all): count and 1 ms peak, per interval and for the
/// run.
#[derive(Clone, Debug, Default)]
pub struct MessageRate {
    burst: MicroburstTracker,
    interval_messages: u64,
    messages: u64,
}

/// A [`MessageRate`]'s figures, as reports show them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct RateFigures {
    /// Messages (both directions).
    pub messages: u64,
    /// The most messages in any 1 ms window.
    pub peak_1ms: u64,
}

impl MessageRate {
    #[inline]
    pub fn observe(&mut self, ts_ns: u64) {
        self.burst.observe(ts_ns);
        self.interval_messages += 1;
        self.messages += 1;
    }

    /// A rate whose current interval shows `figures` (and nothing else): a two-stage
    /// run's reporting side shows the rates stage B measured.
    pub fn showing_interval(figures: RateFigures) -> Self {
        MessageRate {
            burst: MicroburstTracker {
                interval_peak: figures.peak_1ms,
                ..MicroburstTracker::default()
            },
            interval_messages: figures.messages,
            messages: 0,
        }
    }

    /// The current interval's figures.
    pub fn interval(&self) -> RateFigures {
        RateFigures {
            messages: self.interval_messages,
            peak_1ms: self.burst.interval_peak(),
        }
    }

    /// The run's figures.
    pub fn run(&self) -> RateFigures {
        RateFigures {
            messages: self.messages,
            peak_1ms: self.burst.run_peak(),
        }
    }

    /// A new interval begins.
    pub fn reset_interval(&mut self) {
        self.interval_messages = 0;
        self.burst.take_interval_peak();
    }

    /// Adds another shard's figures of a *different* stream (sessions are never split
    /// across shards): counts add; a peak is the larger one, exact for one session — the
    /// total over sessions of several shards needs their merged timestamps fed to one
    /// tracker instead.
    pub fn merge_from(&mut self, other: &Self) {
        self.messages += other.messages;
        self.interval_messages += other.interval_messages;
        self.burst.interval_peak = self.burst.interval_peak.max(other.burst.interval_peak);
        self.burst.run_peak = self.burst.run_peak.max(other.burst.run_peak);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The peak by brute force: for every message, how many fall in (t - 1 ms, t].
    fn brute_peak(ts: &[u64]) -> u64 {
        ts.iter()
            .map(|&t| ts.iter().filter(|&&u| u <= t && u + WINDOW_NS > t).count() as u64)
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn the_peak_is_exact_against_brute_force() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut ts = Vec::new();
        let mut t = 0u64;
        for _ in 0..3000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Bursts: mostly 1–20 µs apart, sometimes a 3 ms pause; equal times too.
            t += match x % 10 {
                0 => 3_000_000,
                1 => 0,
                _ => x % 20_000,
            };
            ts.push(t);
        }
        let mut m = MicroburstTracker::default();
        let brute = brute_peak(&ts);
        assert!(brute > 5, "the stream has bursts: {brute}");
        for &t in &ts {
            m.observe(t);
            assert!(m.held() as u64 <= brute, "memory: the last 1 ms only");
        }
        assert_eq!(m.run_peak(), brute);
        // A window boundary: exactly 1 ms apart is two windows.
        let mut m = MicroburstTracker::default();
        m.observe(0);
        m.observe(WINDOW_NS - 1);
        assert_eq!(m.run_peak(), 2);
        m.observe(2 * WINDOW_NS - 1);
        assert_eq!(
            (m.run_peak(), m.held()),
            (2, 1),
            "0 and 1 ms - 1 ns are out"
        );
    }

    #[test]
    fn interval_peaks_are_the_windows_ending_in_the_interval() {
        let mut m = MicroburstTracker::default();
        for t in [0, 10, 20] {
            m.observe(t);
        }
        assert_eq!(m.take_interval_peak(), 3);
        // The next interval's first window still holds the three before it.
        m.observe(30);
        assert_eq!(m.take_interval_peak(), 4);
        m.observe(5 * WINDOW_NS);
        assert_eq!(m.take_interval_peak(), 1);
        assert_eq!(m.run_peak(), 4);
    }

    #[test]
    fn merging_two_sessions_rates_adds_counts_and_keeps_each_peak() {
        let (mut a, mut b, mut whole_a) = (MessageRate::default(), MessageRate::default(), 0);
        for t in [0, 1, 2] {
            a.observe(t);
            whole_a += 1;
        }
        b.observe(5);
        a.merge_from(&b);
        assert_eq!(
            a.run(),
            RateFigures {
                messages: whole_a + 1,
                peak_1ms: 3
            }
        );
        assert_eq!(a.interval().messages, 4);
    }
}
