//! Latency by the orders' own fields (`--by 55`, `--by 55,1,100`): every stage's latency per
//! value of each tag (symbol, account, venue, CompIDs…).
//!
//! A request's value is read from the request (the response's, when the request lacks the
//! tag); its id travels with the pending request (two bytes per tag in the slot), so each
//! latency is recorded under the value its order had.
//!
//! **The busiest `--by-limit` values, memory bounded.** Each tag tracks *candidates*: the
//! first `--by-candidates` distinct values it sees (default `max(4N, N+64)`, at most
//! `MAX_BY_CANDIDATES`), each with its own histograms (2 significant digits); a value first
//! seen after that goes straight into `overflow` and is counted (`values_overflowed`, and
//! its requests per value, up to 65,536 values). Reports ([`TagGroups::ranked`]) name the N
//! candidates with the most requests and fold the other candidates' histograms into
//! `(other)` with the overflow — histograms add exactly, so `(other)` and every named row
//! are exact; only the *choice* of the N can miss a value that overflowed, and
//! [`Ranking::busiest_exact`] says whether it did (an overflowed value with more requests
//! than the N-th named one). A sharded run rebuilds the same candidates (the run's first
//! values, by the segment index each worker stamped), so its figures are one pipeline's.

use hashbrown::HashMap;

use crate::correlate::Stage;
use crate::recorder::LatencyRecorder;
use fixscope_model::order::Latency;

mod field;
mod logged;
mod ranking;
pub use field::ByField;
pub use logged::{stage_slot, LoggedRow, LoggedTag, RowKind};
pub use ranking::Ranking;

pub use fixscope_model::order::MAX_BY_TAGS;
/// The default `--by-limit`.
pub const DEFAULT_BY_LIMIT: usize = 100;
/// The largest `--by-limit` (ids are two bytes; each value costs ~100 KB of histograms).
pub const MAX_BY_LIMIT: usize = 10_000;
/// The most candidates a tag tracks with histograms (`--by-candidates`); ids are two bytes.
pub const MAX_BY_CANDIDATES: usize = 40_000;

pub use fixscope_model::order::{GroupId, Groups, NO_GROUP, NO_GROUPS, OTHER_GROUP};

/// Overflowed values whose requests are counted one by one (then only together, and the
/// choice of the busiest can no longer be proven).
const OVERFLOW_VALUES_COUNTED: usize = 1 << 16;
/// Significant digits of the per-value histograms.
const DIGITS: u8 = 2;

/// The default candidates for `--by-limit N`: `max(4N, N + 64)`, within the bounds.
pub fn default_candidates(limit: usize) -> usize {
    (4 * limit).max(limit + 64).min(MAX_BY_CANDIDATES)
}

/// `--by TAG[,TAG…]` (or a binary protocol's `--by NAME[,NAME…]`), `--by-limit N` and
/// `--by-candidates M`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupSpec {
    pub fields: Vec<ByField>,
    /// Values reported with rows of their own (the busiest).
    pub limit: usize,
    /// Values tracked with histograms of their own (the first seen), `>= limit`.
    pub candidates: usize,
}

impl GroupSpec {
    /// Parses `--by`'s comma-separated FIX tags, with the default candidates.
    pub fn parse(tags: &str, limit: usize) -> Result<Self, String> {
        let out = fixscope_fix::parse_tag_list(tags, MAX_BY_TAGS)?;
        Self::of_fields(out.into_iter().map(ByField::Tag).collect(), limit)
    }

    /// `--by`'s fields (tags and names, read by the caller), with the default candidates.
    pub fn of_fields(fields: Vec<ByField>, limit: usize) -> Result<Self, String> {
        if fields.is_empty() || fields.len() > MAX_BY_TAGS {
            return Err(format!("1 to {MAX_BY_TAGS} tags"));
        }
        if let Some(twice) = fields
            .iter()
            .enumerate()
            .find_map(|(i, f)| fields[..i].contains(f).then_some(f))
        {
            return Err(format!("{} appears twice", twice.heading()));
        }
        if limit == 0 || limit > MAX_BY_LIMIT {
            return Err(format!("--by-limit must be between 1 and {MAX_BY_LIMIT}"));
        }
        Ok(GroupSpec {
            fields,
            limit,
            candidates: default_candidates(limit),
        })
    }

    /// The protocol fields' names, by position (`None` at a FIX tag's).
    pub fn names(&self) -> impl Iterator<Item = Option<&str>> + '_ {
        self.fields.iter().map(ByField::name)
    }

    /// `--by-candidates M`: between the limit and [`MAX_BY_CANDIDATES`].
    pub fn with_candidates(mut self, candidates: usize) -> Result<Self, String> {
        if candidates < self.limit || candidates > MAX_BY_CANDIDATES {
            return Err(format!(
                "--by-candidates must be between --by-limit ({}) and {MAX_BY_CANDIDATES}",
                self.limit
            ));
        }
        self.candidates = candidates;
        Ok(self)
    }

    /// Reads the `--by` tags' values from a FIX message (a full walk: only with `--by`);
    /// a protocol field's position stays empty.
    pub fn values<'m>(&self, message: &'m [u8]) -> [&'m [u8]; MAX_BY_TAGS] {
        let mut values: [&[u8]; MAX_BY_TAGS] = [&[]; MAX_BY_TAGS];
        let wanted = self.fields.iter().filter(|f| f.tag().is_some()).count();
        if wanted == 0 {
            return values;
        }
        let mut found = 0;
        for (t, value) in fixscope_fix::message::Fields::body(message) {
            if let Some(i) = self.fields.iter().position(|k| k.tag() == Some(t)) {
                if values[i].is_empty() && !value.is_empty() {
                    values[i] = value;
                    found += 1;
                    if found == wanted {
                        break;
                    }
                }
            }
        }
        values
    }
}

/// One value's figures.
#[derive(Clone, Debug)]
pub struct GroupEntry {
    pub value: String,
    /// Requests with this value (replays excluded).
    pub requests: u64,
    /// A worker of a sharded run: the run's index of the segment at which the value was
    /// first seen (the merger keeps the run's first candidates, as one pipeline).
    first_seen: u64,
    /// Per stage of [`Stage::ALL`]; allocated with the first latency.
    stages: Option<Box<[LatencyRecorder; 4]>>,
}

impl GroupEntry {
    fn new(value: String) -> Self {
        GroupEntry {
            value,
            requests: 0,
            first_seen: 0,
            stages: None,
        }
    }

    fn record(&mut self, stage: Stage, ns: u64, highest_ns: u64) {
        let Some(i) = Stage::ALL.iter().position(|&s| s == stage) else {
            return;
        };
        self.stages.get_or_insert_with(|| {
            Box::new(std::array::from_fn(|_| {
                LatencyRecorder::new(highest_ns, DIGITS)
            }))
        })[i]
            .record(ns);
    }

    /// The stage's recorder (`None` before its first latency).
    pub fn stage(&self, stage: Stage) -> Option<&LatencyRecorder> {
        let i = Stage::ALL.iter().position(|&s| s == stage)?;
        self.stages.as_ref().map(|s| &s[i])
    }

    /// Latencies recorded (first_response's count).
    pub fn count(&self) -> u64 {
        self.stage(Stage::FirstResponse)
            .map_or(0, LatencyRecorder::count)
    }

    /// Whether the row has anything to show.
    pub fn is_empty(&self) -> bool {
        self.requests == 0 && self.stages.is_none()
    }

    fn merge_from(&mut self, other: &GroupEntry) {
        self.requests += other.requests;
        if let Some(theirs) = &other.stages {
            match &mut self.stages {
                Some(mine) => {
                    for (m, t) in mine.iter_mut().zip(theirs.iter()) {
                        m.merge(t);
                    }
                }
                None => self.stages = Some(theirs.clone()),
            }
        }
    }
}

/// One `--by` tag's (or field's) values.
#[derive(Clone, Debug)]
pub struct TagGroups {
    pub field: ByField,
    /// `--by-limit`: rows of their own in reports.
    limit: usize,
    /// `--by-candidates`: values tracked with histograms.
    capacity: usize,
    ids: HashMap<Box<[u8]>, GroupId>,
    /// The candidates, in the order first seen.
    pub entries: Vec<GroupEntry>,
    /// Values first seen after the candidates were full, together.
    pub overflow: GroupEntry,
    /// Orders without the tag in request or response.
    pub none: GroupEntry,
    /// Requests per overflowed value (up to [`OVERFLOW_VALUES_COUNTED`] values).
    overflow_requests: HashMap<Box<[u8]>, u64>,
    /// An overflowed value was not counted one by one (more than 65,536 of them).
    overflow_uncounted: bool,
    /// A sharded run's worker: the run's index of the segment being fed.
    segment_index: u64,
    /// Rebuilt from a log: the `(other)` row's figures as the run reported them.
    logged: Option<logged::LoggedOther>,
}

impl TagGroups {
    fn new(field: ByField, spec: &GroupSpec) -> Self {
        TagGroups {
            field,
            limit: spec.limit,
            capacity: spec.candidates.clamp(spec.limit, MAX_BY_CANDIDATES),
            ids: HashMap::new(),
            entries: Vec::new(),
            overflow: GroupEntry::new("(other)".into()),
            none: GroupEntry::new("(none)".into()),
            overflow_requests: HashMap::new(),
            overflow_uncounted: false,
            segment_index: 0,
            logged: None,
        }
    }

    /// The value's id, making it a candidate while there is room.
    fn id(&mut self, value: &[u8]) -> GroupId {
        if value.is_empty() {
            return NO_GROUP;
        }
        if let Some(&id) = self.ids.get(value) {
            return id;
        }
        if self.entries.len() < self.capacity {
            let id = self.entries.len() as GroupId;
            let mut entry = GroupEntry::new(String::from_utf8_lossy(value).into_owned());
            entry.first_seen = self.segment_index;
            self.entries.push(entry);
            self.ids.insert(value.into(), id);
            return id;
        }
        self.count_overflow(value, 0);
        OTHER_GROUP
    }

    /// Adds `requests` to an overflowed value's count (registering it with 0).
    fn count_overflow(&mut self, value: &[u8], requests: u64) {
        if let Some(n) = self.overflow_requests.get_mut(value) {
            *n += requests;
        } else if self.overflow_requests.len() < OVERFLOW_VALUES_COUNTED {
            self.overflow_requests.insert(value.into(), requests);
        } else {
            self.overflow_uncounted = true;
        }
    }

    fn entry_mut(&mut self, id: GroupId) -> &mut GroupEntry {
        match id {
            NO_GROUP => &mut self.none,
            OTHER_GROUP => &mut self.overflow,
            i => &mut self.entries[i as usize],
        }
    }

    /// Takes a worker's (or another shard's) value with its figures: a candidate while
    /// there is room, else into the overflow with its requests counted.
    fn adopt(&mut self, e: &GroupEntry) {
        let id = self.id(e.value.as_bytes());
        if id == OTHER_GROUP {
            self.count_overflow(e.value.as_bytes(), e.requests);
        }
        self.entry_mut(id).merge_from(e);
    }

    /// Adds another side's overflow and `(none)`.
    fn merge_rest(&mut self, theirs: &TagGroups) {
        self.overflow.merge_from(&theirs.overflow);
        self.none.merge_from(&theirs.none);
        for (v, &n) in &theirs.overflow_requests {
            self.count_overflow(v, n);
        }
        self.overflow_uncounted |= theirs.overflow_uncounted;
    }

    /// Requests were seen but none carried the tag (in request or response): every order
    /// is in `(none)` — usually a mistyped tag (`--by 9999`).
    pub fn never_carried(&self) -> bool {
        self.entries.is_empty() && self.overflow.is_empty() && !self.none.is_empty()
    }

    /// Distinct values that overflowed (exact up to 65,536, then a lower bound).
    pub fn values_overflowed(&self) -> u64 {
        self.overflow_requests.len() as u64
    }

    /// What reports show: the `--by-limit` busiest values, then `(other)` and `(none)`.
    pub fn ranked(&self) -> Ranking<'_> {
        Ranking::of(self)
    }
}

/// Latency by value, for every `--by` tag.
#[derive(Clone, Debug)]
pub struct GroupStats {
    pub spec: GroupSpec,
    pub tags: Vec<TagGroups>,
    highest_ns: u64,
}

impl GroupStats {
    pub fn new(spec: GroupSpec, highest_ns: u64) -> Self {
        GroupStats {
            tags: spec
                .fields
                .iter()
                .map(|f| TagGroups::new(f.clone(), &spec))
                .collect(),
            spec,
            highest_ns,
        }
    }

    /// The ids of a request's values (counting the request under each).
    pub fn request(&mut self, values: &[&[u8]; MAX_BY_TAGS]) -> Groups {
        let mut groups = NO_GROUPS;
        for (i, g) in self.tags.iter_mut().enumerate() {
            groups[i] = g.id(values[i]);
            match groups[i] {
                NO_GROUP => {}
                OTHER_GROUP => {
                    g.overflow.requests += 1;
                    g.count_overflow(values[i], 1);
                }
                id => g.entries[id as usize].requests += 1,
            }
        }
        groups
    }

    /// Whether any of the order's ids is missing (the response is then read for it).
    pub fn needs_response_values(groups: &Groups, tags: usize) -> bool {
        groups[..tags].contains(&NO_GROUP)
    }

    /// Fills ids the request lacked from a response's values.
    pub fn complete(&mut self, groups: &mut Groups, values: &[&[u8]; MAX_BY_TAGS]) {
        for (i, g) in self.tags.iter_mut().enumerate() {
            if groups[i] == NO_GROUP {
                groups[i] = g.id(values[i]);
            }
        }
    }

    /// Records one latency under its order's values.
    pub fn record(&mut self, latency: &Latency, groups: &Groups) {
        let highest_ns = self.highest_ns;
        for (i, g) in self.tags.iter_mut().enumerate() {
            g.entry_mut(groups[i])
                .record(latency.stage, latency.ns, highest_ns);
        }
    }

    /// A sharded run's worker: the run's index of the segment being fed (values first seen
    /// now are stamped with it).
    pub fn set_segment_index(&mut self, index: u64) {
        for t in &mut self.tags {
            t.segment_index = index;
        }
    }

    /// Adds every worker's figures of a sharded run as one pipeline would have recorded
    /// them: each tag's values are taken in the order the run first saw them (the segment
    /// index each worker stamped), so the candidates are the run's first `--by-candidates`
    /// (a value among the run's first M is among its worker's first M, which the worker
    /// kept); the others join the overflow, their requests counted.
    pub fn merge_workers(&mut self, workers: &[GroupStats]) {
        for (t, mine) in self.tags.iter_mut().enumerate() {
            let mut order: Vec<&GroupEntry> = workers
                .iter()
                .flat_map(|w| w.tags.get(t))
                .flat_map(|g| g.entries.iter())
                .collect();
            // Stable: one segment is one worker's, whose values keep their order.
            order.sort_by_key(|e| e.first_seen);
            for e in order {
                mine.adopt(e);
            }
        }
        for w in workers {
            for (mine, theirs) in self.tags.iter_mut().zip(&w.tags) {
                mine.merge_rest(theirs);
            }
        }
    }

    /// Adds another shard's figures: values are matched by name (ids differ per shard);
    /// a value new to this side beyond the candidates joins the overflow.
    pub fn merge_from(&mut self, other: &GroupStats) {
        for (mine, theirs) in self.tags.iter_mut().zip(&other.tags) {
            for e in &theirs.entries {
                mine.adopt(e);
            }
            mine.merge_rest(theirs);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::correlate::RequestType;

    fn latency(stage: Stage, ns: u64) -> Latency {
        Latency {
            stage,
            request_type: RequestType::NewOrder,
            session: 1,
            ns,
            late: false,
            request_ts_ns: 0,
            request_seq: 0,
            groups: NO_GROUPS,
        }
    }

    fn spec(limit: usize) -> GroupSpec {
        GroupSpec::parse("55,1", limit).unwrap()
    }

    fn rows(t: &TagGroups) -> Vec<(String, u64, u64)> {
        t.ranked()
            .iter()
            .map(|e| (e.value.clone(), e.requests, e.count()))
            .collect()
    }

    #[test]
    fn the_busiest_values_are_named_and_the_rest_is_other_exactly() {
        // limit 2, candidates 4: A..D are candidates, E and F overflow.
        let spec = GroupSpec::parse("55", 2)
            .unwrap()
            .with_candidates(4)
            .unwrap();
        let mut g = GroupStats::new(spec, 1_000_000_000);
        let mut ns = 0;
        let mut order = |g: &mut GroupStats, sym: &str, n: u64| {
            for _ in 0..n {
                ns += 1000;
                let ids = g.request(&[sym.as_bytes(), b"", b""]);
                g.record(&latency(Stage::FirstResponse, ns), &ids);
            }
        };
        for (sym, n) in [("A", 1), ("B", 5), ("C", 3), ("D", 2), ("E", 2), ("F", 1)] {
            order(&mut g, sym, n);
        }
        let t = &g.tags[0];
        assert_eq!(t.entries.len(), 4, "the candidates are the first four seen");
        assert_eq!(t.values_overflowed(), 2, "E and F");
        let r = t.ranked();
        assert_eq!(
            rows(t),
            vec![
                ("B".into(), 5, 5),
                ("C".into(), 3, 3),
                ("(other)".into(), 6, 6),
            ],
            "the busiest two by requests, not the first two seen; A+D+E+F in (other)"
        );
        assert_eq!((r.other_values, r.values_overflowed), (4, 2));
        assert!(r.busiest_exact, "no overflowed value beat C's 3 requests");
        // (other)'s histogram is the sum of its values': min A's first, max F's last.
        let d = r.other.stage(Stage::FirstResponse).unwrap().distribution();
        assert_eq!((d.count, d.min_ns), (6, 1000));
        assert!(d.max_ns >= 14_000, "{d:?}");

        // An overflowed value busier than the least busy named one: said, not hidden.
        order(&mut g, "E", 2);
        let r = g.tags[0].ranked();
        assert_eq!(r.named.len(), 2);
        assert!(
            !r.busiest_exact,
            "E's 4 requests beat C's 3 but E has no histogram"
        );
        assert!(GroupSpec::parse("1,2,3,4", 5).is_err());
        assert!(GroupSpec::parse("55", 0).is_err());
        assert!(GroupSpec::parse("55", 5)
            .unwrap()
            .with_candidates(4)
            .is_err());
        assert_eq!(default_candidates(100), 400);
        assert_eq!(default_candidates(2), 66);
    }

    #[test]
    fn ties_are_broken_by_value_and_none_is_kept_apart() {
        let spec = GroupSpec::parse("55", 2).unwrap();
        let mut g = GroupStats::new(spec, 1_000_000_000);
        for sym in ["Z", "Y", "X", ""] {
            let ids = g.request(&[sym.as_bytes(), b"", b""]);
            g.record(&latency(Stage::Ack, 5000), &ids);
        }
        assert_eq!(
            rows(&g.tags[0]),
            vec![
                ("X".into(), 1, 0),
                ("Y".into(), 1, 0),
                ("(other)".into(), 1, 0),
                ("(none)".into(), 0, 0),
            ]
        );
    }

    #[test]
    fn workers_merged_in_run_order_equal_one_pipeline() {
        // Values arriving across three "segments" fed to two workers; candidates 3.
        let spec = GroupSpec::parse("55", 2)
            .unwrap()
            .with_candidates(3)
            .unwrap();
        let feed: [(u64, usize, &str, u64); 7] = [
            (0, 0, "A", 1),
            (1, 1, "B", 4),
            (1, 1, "C", 2),
            (2, 0, "D", 9),
            (2, 0, "A", 3),
            (3, 1, "E", 1),
            (3, 1, "C", 1),
        ];
        let mut whole = GroupStats::new(spec.clone(), 1_000_000_000);
        let mut workers = [
            GroupStats::new(spec.clone(), 1_000_000_000),
            GroupStats::new(spec.clone(), 1_000_000_000),
        ];
        for &(segment, w, sym, n) in &feed {
            workers[w].set_segment_index(segment);
            for i in 0..n {
                for g in [&mut whole, &mut workers[w]] {
                    let ids = g.request(&[sym.as_bytes(), b"", b""]);
                    g.record(&latency(Stage::FirstResponse, 700 + i * 31), &ids);
                }
            }
        }
        let mut merged = GroupStats::new(spec, 1_000_000_000);
        merged.merge_workers(&workers);
        let figures = |g: &GroupStats| {
            let r = g.tags[0].ranked();
            let rows: Vec<_> = r
                .iter()
                .map(|e| {
                    let d = e.stage(Stage::FirstResponse).unwrap().distribution();
                    (e.value.clone(), e.requests, d.count, d.min_ns, d.max_ns)
                })
                .collect();
            (rows, r.other_values, r.values_overflowed, r.busiest_exact)
        };
        assert_eq!(figures(&merged), figures(&whole));
        // D overflowed (fourth value seen) with 9 requests: the choice is not provable.
        assert!(!figures(&whole).3);
        // A (1 + 3) ties B (4) and comes first by name; C (3) folds into (other) with D, E.
        let names: Vec<String> = figures(&whole).0.into_iter().map(|r| r.0).collect();
        assert_eq!(names, ["A", "B", "(other)"]);
    }

    #[test]
    fn merging_two_halves_equals_the_whole() {
        let mut whole = GroupStats::new(spec(3), 1_000_000_000);
        let mut halves = [
            GroupStats::new(spec(3), 1_000_000_000),
            GroupStats::new(spec(3), 1_000_000_000),
        ];
        let syms = ["X", "Y", "Z", "W", "V"];
        for i in 0..200u64 {
            // Each half sees the symbols in another order: ids differ, names match.
            let sym = syms[(i * 7 % 5) as usize];
            let acc = if i % 3 == 0 { "" } else { "ACC1" };
            for g in [&mut whole, &mut halves[(i % 2) as usize]] {
                let ids = g.request(&[sym.as_bytes(), acc.as_bytes(), b""]);
                g.record(&latency(Stage::Ack, 500 + i * 13), &ids);
            }
        }
        let [mut a, b] = halves;
        a.merge_from(&b);
        let figures = |g: &GroupStats| -> Vec<Vec<(String, u64, u64)>> {
            g.tags
                .iter()
                .map(|t| {
                    let mut v: Vec<(String, u64, u64)> = t
                        .ranked()
                        .iter()
                        .map(|e| {
                            let d = e
                                .stage(Stage::Ack)
                                .map(|r| r.distribution())
                                .unwrap_or_default();
                            (e.value.clone(), e.requests, d.count * 1_000_000 + d.max_ns)
                        })
                        .collect();
                    v.sort();
                    v
                })
                .collect()
        };
        // Within the limit the merge is exact; beyond it, which values are named depends on
        // arrival order, but the totals (named + other) are the same.
        let total = |g: &GroupStats| -> u64 { g.tags[0].ranked().iter().map(|e| e.requests).sum() };
        assert_eq!(total(&a), total(&whole));
        assert_eq!(
            figures(&a)[1],
            figures(&whole)[1],
            "the account tag: within the limit"
        );
    }
}
