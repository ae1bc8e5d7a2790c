//! Latency by the orders' own fields (`--by 55`, `--by 55,1,100`): every stage's latency per
//! value of each tag (symbol, account, venue, CompIDs…).
//!
//! A request's value is read from the request (the response's, when the request lacks the
//! tag); its id travels with the pending request (two bytes per tag in the slot), so each
//! latency is recorded under the value its order had. Memory is bounded: each tag keeps the
//! first `--by-limit` values it sees with their own histograms (2 significant digits); later
//! values are recorded together as `(other)`, and how many distinct values went there is
//! counted. Reports list values busiest first.

use std::collections::HashSet;

use hashbrown::HashMap;

use crate::correlate::{Latency, Stage};
use crate::stats::LatencyRecorder;

/// The most tags `--by` takes (their ids fill the spare bytes of a pending request's slot).
pub const MAX_BY_TAGS: usize = 3;
/// The default `--by-limit`.
pub const DEFAULT_BY_LIMIT: usize = 100;
/// The largest `--by-limit` (ids are two bytes; each value costs ~100 KB of histograms).
pub const MAX_BY_LIMIT: usize = 10_000;

/// A value id: an index into the tag's values, or one of these.
pub type GroupId = u16;
/// The tag was absent (from the request; the response is then asked).
pub const NO_GROUP: GroupId = u16::MAX;
/// Beyond `--by-limit`.
pub const OTHER_GROUP: GroupId = u16::MAX - 1;
/// One id per `--by` tag.
pub type Groups = [GroupId; MAX_BY_TAGS];
/// No `--by`, or none of its tags present.
pub const NO_GROUPS: Groups = [NO_GROUP; MAX_BY_TAGS];

/// Distinct `(other)` values counted exactly up to this many (then "at least").
const OTHER_VALUES_COUNTED: usize = 1 << 16;
/// Significant digits of the per-value histograms.
const DIGITS: u8 = 2;

/// `--by TAG[,TAG…]` and `--by-limit N`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupSpec {
    pub tags: Vec<u32>,
    pub limit: usize,
}

impl GroupSpec {
    /// Parses `--by`'s comma-separated tags.
    pub fn parse(tags: &str, limit: usize) -> Result<Self, String> {
        let out = crate::fix::parse_tag_list(tags, MAX_BY_TAGS)?;
        if limit == 0 || limit > MAX_BY_LIMIT {
            return Err(format!("--by-limit must be between 1 and {MAX_BY_LIMIT}"));
        }
        Ok(GroupSpec { tags: out, limit })
    }

    /// Reads the `--by` tags' values from a message (a full walk: only with `--by`).
    pub fn values<'m>(&self, message: &'m [u8]) -> [&'m [u8]; MAX_BY_TAGS] {
        let mut values: [&[u8]; MAX_BY_TAGS] = [&[]; MAX_BY_TAGS];
        let mut found = 0;
        for (t, value) in crate::fix::message::Fields::body(message) {
            if let Some(i) = self.tags.iter().position(|&k| k == t) {
                if values[i].is_empty() && !value.is_empty() {
                    values[i] = value;
                    found += 1;
                    if found == self.tags.len() {
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
    /// first seen (the merger keeps the run's first `--by-limit` values, as one pipeline).
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

/// One `--by` tag's values.
#[derive(Clone, Debug)]
pub struct TagGroups {
    pub tag: u32,
    ids: HashMap<Box<[u8]>, GroupId>,
    pub entries: Vec<GroupEntry>,
    /// Values beyond the limit, together.
    pub other: GroupEntry,
    /// Orders without the tag in request or response.
    pub none: GroupEntry,
    other_seen: HashSet<Box<[u8]>>,
    /// Distinct values recorded as `(other)` (exact up to 65,536, then a lower bound).
    pub other_values: u64,
    /// A sharded run's worker: the run's index of the segment being fed.
    segment_index: u64,
}

impl TagGroups {
    fn new(tag: u32) -> Self {
        TagGroups {
            tag,
            ids: HashMap::new(),
            entries: Vec::new(),
            other: GroupEntry::new("(other)".into()),
            none: GroupEntry::new("(none)".into()),
            other_seen: HashSet::new(),
            other_values: 0,
            segment_index: 0,
        }
    }

    fn id(&mut self, value: &[u8], limit: usize) -> GroupId {
        if value.is_empty() {
            return NO_GROUP;
        }
        if let Some(&id) = self.ids.get(value) {
            return id;
        }
        if self.entries.len() < limit {
            let id = self.entries.len() as GroupId;
            let mut entry = GroupEntry::new(String::from_utf8_lossy(value).into_owned());
            entry.first_seen = self.segment_index;
            self.entries.push(entry);
            self.ids.insert(value.into(), id);
            return id;
        }
        if self.other_seen.len() < OTHER_VALUES_COUNTED && self.other_seen.insert(value.into()) {
            self.other_values += 1;
        }
        OTHER_GROUP
    }

    fn entry_mut(&mut self, id: GroupId) -> &mut GroupEntry {
        match id {
            NO_GROUP => &mut self.none,
            OTHER_GROUP => &mut self.other,
            i => &mut self.entries[i as usize],
        }
    }

    /// Values busiest first (by latencies recorded, then requests), then `(other)` and
    /// `(none)` when they hold anything.
    pub fn ranked(&self) -> Vec<&GroupEntry> {
        let mut v: Vec<&GroupEntry> = self.entries.iter().collect();
        v.sort_by(|a, b| {
            (b.count(), b.requests)
                .cmp(&(a.count(), a.requests))
                .then_with(|| a.value.cmp(&b.value))
        });
        for extra in [&self.other, &self.none] {
            if extra.requests > 0 || extra.count() > 0 {
                v.push(extra);
            }
        }
        v
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
            tags: spec.tags.iter().map(|&t| TagGroups::new(t)).collect(),
            spec,
            highest_ns,
        }
    }

    /// The ids of a request's values (counting the request under each).
    pub fn request(&mut self, values: &[&[u8]; MAX_BY_TAGS]) -> Groups {
        let mut groups = NO_GROUPS;
        let limit = self.spec.limit;
        for (i, g) in self.tags.iter_mut().enumerate() {
            groups[i] = g.id(values[i], limit);
            if groups[i] != NO_GROUP {
                g.entry_mut(groups[i]).requests += 1;
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
        let limit = self.spec.limit;
        for (i, g) in self.tags.iter_mut().enumerate() {
            if groups[i] == NO_GROUP {
                groups[i] = g.id(values[i], limit);
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
    /// index each worker stamped), so the values with rows of their own are the run's first
    /// `--by-limit` (a value among the run's first N is among its worker's first N, which
    /// the worker kept); the others join `(other)`.
    pub fn merge_workers(&mut self, workers: &[GroupStats]) {
        let limit = self.spec.limit;
        for (t, mine) in self.tags.iter_mut().enumerate() {
            let mut order: Vec<&GroupEntry> = workers
                .iter()
                .flat_map(|w| w.tags.get(t))
                .flat_map(|g| g.entries.iter())
                .collect();
            // Stable: one segment is one worker's, whose values keep their order.
            order.sort_by_key(|e| e.first_seen);
            for e in order {
                let id = mine.id(e.value.as_bytes(), limit);
                mine.entry_mut(id).merge_from(e);
            }
        }
        for w in workers {
            for (mine, theirs) in self.tags.iter_mut().zip(&w.tags) {
                mine.other.merge_from(&theirs.other);
                mine.none.merge_from(&theirs.none);
                for v in &theirs.other_seen {
                    if mine.other_seen.len() < OTHER_VALUES_COUNTED
                        && mine.other_seen.insert(v.clone())
                    {
                        mine.other_values += 1;
                    }
                }
            }
        }
    }

    /// Adds another shard's figures: values are matched by name (ids differ per shard);
    /// a value new to this side beyond the limit joins `(other)`.
    pub fn merge_from(&mut self, other: &GroupStats) {
        let limit = self.spec.limit;
        for (mine, theirs) in self.tags.iter_mut().zip(&other.tags) {
            for e in &theirs.entries {
                let id = mine.id(e.value.as_bytes(), limit);
                // `id` counted nothing; the entry's own counts come with it.
                mine.entry_mut(id).merge_from(e);
            }
            mine.other.merge_from(&theirs.other);
            mine.none.merge_from(&theirs.none);
            for v in &theirs.other_seen {
                if mine.other_seen.len() < OTHER_VALUES_COUNTED && mine.other_seen.insert(v.clone())
                {
                    mine.other_values += 1;
                }
            }
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

    #[test]
    fn values_beyond_the_limit_go_to_other_and_are_counted() {
        let mut g = GroupStats::new(spec(2), 1_000_000_000);
        for (i, sym) in ["A", "B", "C", "A", "D", "C"].iter().enumerate() {
            let ids = g.request(&[sym.as_bytes(), b"ACC", b""]);
            g.record(&latency(Stage::FirstResponse, 1000 * (i as u64 + 1)), &ids);
        }
        let t = &g.tags[0];
        assert_eq!(t.entries.len(), 2);
        assert_eq!(t.other_values, 2, "C and D");
        let ranked: Vec<(&str, u64)> = t
            .ranked()
            .iter()
            .map(|e| (e.value.as_str(), e.count()))
            .collect();
        assert_eq!(ranked, vec![("A", 2), ("B", 1), ("(other)", 3)]);
        assert_eq!(g.tags[1].entries[0].count(), 6, "one account");
        assert!(GroupSpec::parse("1,2,3,4", 5).is_err());
        assert!(GroupSpec::parse("55", 0).is_err());
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
