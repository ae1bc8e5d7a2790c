//! What reports show of a `--by` tag: the `--by-limit` busiest candidates by requests, then
//! `(other)` — the remaining candidates' histograms added to the overflow's, exactly — and
//! `(none)`. Built per report (a few merges per folded value), never on the hot path.

use super::{GroupEntry, TagGroups};

/// One tag's rows, busiest first.
#[derive(Debug)]
pub struct Ranking<'a> {
    /// The busiest candidates: most requests first, then most latencies, then by value.
    pub named: Vec<&'a GroupEntry>,
    /// Everything else with the tag: candidates beyond the limit and the overflow.
    pub other: GroupEntry,
    /// Orders without the tag.
    pub none: &'a GroupEntry,
    /// Distinct values in `(other)` (a lower bound past 65,536 overflowed values).
    pub other_values: u64,
    /// Of those, first seen after the candidates were full (no histograms of their own).
    pub values_overflowed: u64,
    /// Whether `named` are provably the busiest values: no overflowed value had more
    /// requests than the least busy named one (false when overflowed values were too many
    /// to count one by one).
    pub busiest_exact: bool,
}

impl<'a> Ranking<'a> {
    pub(super) fn of(t: &'a TagGroups) -> Self {
        let mut all: Vec<&GroupEntry> = t.entries.iter().collect();
        all.sort_by(|a, b| {
            (b.requests, b.count())
                .cmp(&(a.requests, a.count()))
                .then_with(|| a.value.cmp(&b.value))
        });
        let folded = all.split_off(t.limit.min(all.len()));
        let mut other = t.overflow.clone();
        for e in &folded {
            other.merge_from(e);
        }
        let least_named = all.last().map_or(0, |e| e.requests);
        let most_overflowed = t.overflow_requests.values().copied().max().unwrap_or(0);
        let mut r = Ranking {
            named: all,
            other,
            none: &t.none,
            other_values: folded.len() as u64 + t.values_overflowed(),
            values_overflowed: t.values_overflowed(),
            busiest_exact: !t.overflow_uncounted && most_overflowed <= least_named,
        };
        if let Some(l) = t.logged {
            // Read back from a log: the run's own figures (its candidates are not there).
            r.other_values = l.other_values;
            r.values_overflowed = l.values_overflowed;
            r.busiest_exact = l.busiest_exact;
        }
        r
    }

    /// The rows in report order: the named values, then `(other)` and `(none)` when they
    /// hold anything.
    pub fn iter(&self) -> impl Iterator<Item = &GroupEntry> + '_ {
        self.named.iter().copied().chain(
            [&self.other, self.none]
                .into_iter()
                .filter(|e| !e.is_empty()),
        )
    }
}
