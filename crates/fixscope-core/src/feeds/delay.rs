//! How late a feed's packets came against the sender's own clock: MDP 3.0's packet
//! SendingTime (UTC, ns since the epoch), ITCH 5.0's message timestamps (ns since the
//! venue's midnight). The sender's clock and the capture's are not known to agree here, so
//! the figure is given **above its minimum** — `(capture − sent) − min(capture − sent)` over
//! the feed's new packets: the clocks' offset, the venue's time zone and the fastest path
//! cancel (if the offset is constant over the capture: a drift shows as delay). MDP 3.0's
//! raw `capture − SendingTime` is given too, named as including the offset. Exact: every
//! packet's value is kept (4 bytes each) and sorted at the end.

use crate::report::feeds::FeedDelay;

/// The values of one leg, relative to its first packet's.
#[derive(Default)]
pub(super) struct DelayCollector {
    first: Option<i64>,
    deltas: Vec<i32>,
    /// Packets more than ~2.1 s from the first's value (a clock step, a day change):
    /// counted, not in the figures.
    out_of_range: u64,
}

impl DelayCollector {
    /// A new packet captured at `capture_ns` whose sender stamped it `sent_ns`.
    #[inline]
    pub(super) fn record(&mut self, capture_ns: u64, sent_ns: u64) {
        let raw = (i128::from(capture_ns) - i128::from(sent_ns))
            .clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
        let first = *self.first.get_or_insert(raw);
        match i32::try_from(i128::from(raw) - i128::from(first)) {
            Ok(d) => self.deltas.push(d),
            Err(_) => self.out_of_range += 1,
        }
    }

    /// The figures (`None`: no packet had the sender's time); `raw`: the sender's clock is
    /// absolute (MDP 3.0's UTC SendingTime), so the raw values mean something too.
    pub(super) fn summary(&mut self, sender_clock: &str, raw: bool) -> Option<FeedDelay> {
        let first = self.first?;
        self.deltas.sort_unstable();
        let n = self.deltas.len();
        let at = |q: f64| -> i64 {
            // The nearest-rank quantile.
            let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
            i64::from(self.deltas[rank - 1])
        };
        let min = i64::from(*self.deltas.first()?);
        let above = |q: f64| (at(q) - min) as u64;
        Some(FeedDelay {
            packets: n as u64,
            out_of_range: self.out_of_range,
            sender_clock: sender_clock.into(),
            above_min_p50_ns: above(0.5),
            above_min_p99_ns: above(0.99),
            above_min_max_ns: above(1.0),
            raw_min_ns: raw.then_some(first + min),
            raw_p50_ns: raw.then(|| first + at(0.5)),
            raw_max_ns: raw.then(|| first + at(1.0)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_figures_are_above_the_minimum_whatever_the_offset() {
        let mut c = DelayCollector::default();
        // A sender 3 s ahead of the capture's clock: raw values are negative.
        for (i, extra) in [50u64, 10, 30, 20, 40].iter().enumerate() {
            let sent = 1_000_000_000_000 + i as u64 * 1_000;
            c.record(sent - 3_000_000_000 + 100 + extra, sent);
        }
        let d = c.summary("SendingTime", true).unwrap();
        assert_eq!(d.packets, 5);
        assert_eq!((d.above_min_p50_ns, d.above_min_max_ns), (20, 40));
        assert_eq!(d.raw_min_ns, Some(-3_000_000_000 + 110));
        assert_eq!(d.raw_max_ns, Some(-3_000_000_000 + 150));
        let mut none = DelayCollector::default();
        assert!(none.summary("x", false).is_none());
    }

    #[test]
    fn a_value_far_from_the_first_is_counted_apart() {
        let mut c = DelayCollector::default();
        c.record(10_000_000_000, 1_000);
        c.record(20_000_000_000, 1_000);
        let d = c.summary("timestamp", false).unwrap();
        assert_eq!((d.packets, d.out_of_range), (1, 1));
        assert_eq!(d.raw_p50_ns, None);
    }
}
