//! An A/B pair's leads: for each packet seen on both feeds, how much earlier the first copy
//! was, in a histogram per feed that came first.

use hdrhistogram::Histogram;

use crate::report::feeds::Lead;

pub(super) struct Leads {
    /// A first, B first.
    by_first: [Histogram<u64>; 2],
}

impl Leads {
    pub(super) fn new() -> Self {
        // 1 ns to an hour at 3 significant digits.
        let h = || Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("bounds");
        Leads {
            by_first: [h(), h()],
        }
    }

    /// A packet seen on both: B's capture time minus A's (positive: A first; 0: neither).
    pub(super) fn record(&mut self, b_minus_a_ns: i64) {
        let i = match b_minus_a_ns {
            d if d > 0 => 0,
            d if d < 0 => 1,
            _ => return,
        };
        self.by_first[i].saturating_record(b_minus_a_ns.unsigned_abs());
    }

    pub(super) fn a_first(&self) -> Lead {
        lead_of(&self.by_first[0])
    }

    pub(super) fn b_first(&self) -> Lead {
        lead_of(&self.by_first[1])
    }
}

fn lead_of(h: &Histogram<u64>) -> Lead {
    let n = h.len();
    let some = |v: u64| (n > 0).then_some(v);
    Lead {
        count: n,
        min_ns: some(h.min()),
        p50_ns: some(h.value_at_quantile(0.5)),
        p99_ns: some(h.value_at_quantile(0.99)),
        max_ns: some(h.max()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_lead_goes_to_the_feed_that_came_first() {
        let mut l = Leads::new();
        for d in [1_500, 1_500, -700, 0] {
            l.record(d);
        }
        assert_eq!((l.a_first().count, l.a_first().p50_ns), (2, Some(1_500)));
        assert_eq!((l.b_first().count, l.b_first().max_ns), (1, Some(700)));
        assert_eq!(Leads::new().a_first().min_ns, None);
    }
}
