//! The interval clock: when an interval report is due, in the source's time (a capture's
//! packets, a live source's clock). The first time it is asked starts the first interval.

/// Interval boundaries every `interval_ns` (0: no interval reports).
#[derive(Clone, Copy, Debug)]
pub(crate) struct IntervalClock {
    interval_ns: u64,
    /// The current interval's start (`None`: no interval started).
    start_ns: Option<u64>,
}

impl IntervalClock {
    pub(crate) fn new(interval_ns: u64) -> Self {
        IntervalClock {
            interval_ns,
            start_ns: None,
        }
    }

    /// Whether an interval ends at or before `now_ns` (so a driver fetches its source's
    /// counters only then).
    #[inline]
    pub(crate) fn due(&self, now_ns: u64) -> bool {
        self.interval_ns > 0
            && self
                .start_ns
                .is_none_or(|start| now_ns >= start + self.interval_ns)
    }

    /// The interval that `now_ns` ends, if any (the first call starts the first interval
    /// at `now_ns`); the next interval starts then. Quiet stretches produce no flood of
    /// empty lines: the next interval is the one holding `now_ns`.
    pub(crate) fn next_due(&mut self, now_ns: u64) -> Option<(u64, u64)> {
        if self.interval_ns == 0 {
            return None;
        }
        let start = *self.start_ns.get_or_insert(now_ns);
        let end = start + self.interval_ns;
        if now_ns < end {
            return None;
        }
        let skipped = (now_ns - end) / self.interval_ns;
        self.start_ns = Some(end + skipped * self.interval_ns);
        Some((start, end))
    }

    /// Starts the first interval at `ts_ns` unless one has started (a live capture's
    /// attach time, before its first segment).
    pub(crate) fn start_at(&mut self, ts_ns: u64) {
        if self.interval_ns > 0 {
            self.start_ns.get_or_insert(ts_ns);
        }
    }

    /// The current interval's start (`None`: none started).
    pub(crate) fn start_ns(&self) -> Option<u64> {
        self.start_ns
    }

    /// Takes another clock's start (stage B at the end: stage A's interval clock).
    pub(crate) fn set_start_ns(&mut self, start_ns: Option<u64>) {
        self.start_ns = start_ns;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_start_at_the_first_time_and_skip_quiet_stretches() {
        let mut c = IntervalClock::new(10);
        assert!(
            c.due(5),
            "the first call is due: it starts the first interval"
        );
        assert_eq!(c.next_due(5), None);
        assert!(!c.due(14));
        assert_eq!(c.next_due(15), Some((5, 15)));
        // 37 is three intervals later: one report, and the next interval holds 37.
        assert_eq!(c.next_due(37), Some((15, 25)));
        assert_eq!(c.start_ns(), Some(35));
        assert_eq!(IntervalClock::new(0).next_due(1_000), None);
        assert!(!IntervalClock::new(0).due(1_000));
    }
}
