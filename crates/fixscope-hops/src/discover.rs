//! `--link discover`: which tag of a child holds which tag of its parent, found from the
//! traffic (no vendor documents this; routers differ).
//!
//! Every parent's field values are indexed for `--link-window`; each of the first
//! [`DISCOVER_CHILDREN`] children looks its own values up. A pair (child tag, parent tag)
//! **hits** a child when some parent in the window has the child's value in that tag, and
//! is **unique** for it when exactly one parent has. A rule that links is one that is
//! unique for (nearly) every child: a side or a symbol hits every child and is unique for
//! none. The `hops` rule (115 + last 630 = 49 + 34) is tried the same way.

use std::collections::{HashMap, VecDeque};
use std::fmt::Write;

use super::rules::LinkRule;
use fixscope_fix::message::Fields;

/// Children read at most.
pub const DISCOVER_CHILDREN: u64 = 10_000;
/// A rule is proposed when it links at least this share of the children.
pub const ADOPT_RATE: f64 = 0.99;
/// A value held by more parents in the window than this is no id.
const MAX_HOLDERS: usize = 8;

/// Header and session tags, and an order's terms (side, symbol, quantities, prices,
/// times, instructions): never its link, however often a child copies them.
fn skipped(tag: u32) -> bool {
    matches!(
        tag,
        8 | 9
            | 10
            | 34
            | 35
            | 43
            | 49
            | 50
            | 52
            | 56
            | 57
            | 97
            | 115
            | 122
            | 128
            | 627
            | 628
            | 629
            | 630
            | 1
            | 6
            | 14
            | 15
            | 18
            | 21
            | 22
            | 31
            | 32
            | 38
            | 40
            | 44
            | 48
            | 54
            | 55
            | 59
            | 60
            | 99
            | 100
            | 110
            | 111
            | 126
            | 152
            | 167
            | 200
            | 207
            | 210
            | 211
            | 336
            | 386
            | 388
            | 432
            | 460
            | 1138
    )
}

/// Parents whose values are kept to judge whether a tag is an id (distinct per parent).
const DISTINCT_SAMPLE: u64 = 50_000;

struct Parent {
    ts_ns: u64,
    id: u64,
    /// (tag, value) of its body, for unindexing.
    values: Vec<(u32, Vec<u8>)>,
}

/// A candidate rule's score.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Score {
    pub hits: u64,
    pub unique: u64,
}

#[derive(Default)]
pub struct Discovery {
    window_ns: u64,
    parents: VecDeque<Parent>,
    next_id: u64,
    /// value → (parent id, tag) of the parents in the window holding it.
    by_value: HashMap<Vec<u8>, Vec<(u64, u32)>>,
    pub children: u64,
    pub parents_seen: u64,
    pub scores: HashMap<LinkRule, Score>,
    /// Per parent tag: the parents having it and its distinct values (an id's are all
    /// distinct), over the first [`DISTINCT_SAMPLE`] parents.
    values_of: HashMap<u32, (u64, std::collections::HashSet<Vec<u8>>)>,
}

impl Discovery {
    pub fn new(window_ns: u64) -> Self {
        Discovery {
            window_ns,
            ..Discovery::default()
        }
    }

    fn expire(&mut self, now_ns: u64) {
        while let Some(p) = self.parents.front() {
            if now_ns.saturating_sub(p.ts_ns) <= self.window_ns {
                break;
            }
            let p = self.parents.pop_front().expect("front exists");
            for (tag, value) in p.values {
                if let Some(h) = self.by_value.get_mut(&value) {
                    h.retain(|&(id, t)| !(id == p.id && t == tag));
                    if h.is_empty() {
                        self.by_value.remove(&value);
                    }
                }
            }
        }
    }

    pub fn parent(&mut self, msg: &[u8], ts_ns: u64) {
        self.expire(ts_ns);
        self.parents_seen += 1;
        let id = self.next_id;
        self.next_id += 1;
        let mut values = Vec::new();
        let mut hops = Vec::new();
        if LinkRule::Hops.parent_value(msg, &mut hops) {
            values.push((0, hops));
        }
        for (tag, value) in Fields::new(msg) {
            if !skipped(tag) && !value.is_empty() {
                values.push((tag, value.to_vec()));
            }
        }
        if self.parents_seen <= DISTINCT_SAMPLE {
            for (tag, value) in &values {
                let (n, distinct) = self.values_of.entry(*tag).or_default();
                *n += 1;
                distinct.insert(value.clone());
            }
        }
        for (tag, value) in &values {
            let holders = self.by_value.entry(value.clone()).or_default();
            if holders.len() <= MAX_HOLDERS {
                holders.push((id, *tag));
            }
        }
        self.parents.push_back(Parent { ts_ns, id, values });
    }

    pub fn child(&mut self, msg: &[u8], ts_ns: u64) {
        self.expire(ts_ns);
        if self.children >= DISCOVER_CHILDREN {
            return;
        }
        self.children += 1;
        let mut seen: HashMap<LinkRule, usize> = HashMap::new();
        let mut count = |rule: LinkRule, holders: &[(u64, u32)], parent_tag: u32| {
            let n = holders.iter().filter(|&&(_, t)| t == parent_tag).count();
            if n > 0 {
                let e = seen.entry(rule).or_default();
                *e = (*e).max(if holders.len() > MAX_HOLDERS {
                    usize::MAX
                } else {
                    n
                });
            }
        };
        let mut hops = Vec::new();
        if LinkRule::Hops.child_value(msg, &mut hops) {
            if let Some(h) = self.by_value.get(&hops) {
                count(LinkRule::Hops, h, 0);
            }
        }
        for (tag, value) in Fields::new(msg) {
            if skipped(tag) || value.is_empty() {
                continue;
            }
            let Some(holders) = self.by_value.get(value) else {
                continue;
            };
            let mut parent_tags: Vec<u32> = holders
                .iter()
                .map(|&(_, t)| t)
                .filter(|&t| t != 0)
                .collect();
            parent_tags.sort_unstable();
            parent_tags.dedup();
            for pt in parent_tags {
                let rule = if tag == 11 && pt == 11 {
                    LinkRule::SameId
                } else {
                    LinkRule::Tags {
                        child: tag,
                        parent: pt,
                    }
                };
                count(rule, holders, pt);
            }
        }
        for (rule, n) in seen {
            let s = self.scores.entry(rule).or_default();
            s.hits += 1;
            s.unique += u64::from(n == 1);
        }
    }

    /// The share of parents whose value of the rule's parent tag no other parent had.
    pub fn distinct(&self, rule: LinkRule) -> f64 {
        let tag = match rule {
            LinkRule::Hops => 0,
            LinkRule::SameId => 11,
            LinkRule::Tags { parent, .. } => parent,
            LinkRule::Chain => return 0.0,
        };
        match self.values_of.get(&tag) {
            Some((n, d)) if *n > 0 => d.len() as f64 / *n as f64,
            _ => 0.0,
        }
    }

    /// The rules that link nearly every child, by ids distinct per parent, best first.
    pub fn proposed(&self) -> Vec<LinkRule> {
        let mut rules: Vec<(LinkRule, Score)> = self
            .scores
            .iter()
            .filter(|(_, s)| {
                self.children > 0 && s.unique as f64 >= ADOPT_RATE * self.children as f64
            })
            .filter(|(&r, _)| self.distinct(r) >= ADOPT_RATE)
            .map(|(&r, &s)| (r, s))
            .collect();
        rules.sort_by_key(|&(r, s)| (std::cmp::Reverse(s.unique), rank(r)));
        rules.into_iter().map(|(r, _)| r).collect()
    }

    /// The report `--link discover` prints.
    pub fn report(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "link discovery: {} parents, {} children read (window {} ms)",
            self.parents_seen,
            self.children,
            self.window_ns as f64 / 1e6
        );
        let mut rows: Vec<(&LinkRule, &Score)> = self.scores.iter().collect();
        rows.sort_by_key(|&(r, s)| {
            (
                std::cmp::Reverse(s.unique),
                std::cmp::Reverse(s.hits),
                rank(*r),
            )
        });
        let _ = writeln!(
            out,
            "{:<14} {:>9} {:>11} {:>16}",
            "rule", "hit rate", "uniqueness", "distinct parent"
        );
        for (rule, s) in rows.iter().take(12) {
            let _ = writeln!(
                out,
                "{:<14} {:>8.2}% {:>10.2}% {:>15.2}%",
                rule.to_string(),
                pct(s.hits, self.children),
                pct(s.unique, s.hits),
                100.0 * self.distinct(**rule)
            );
        }
        match self.proposed().first() {
            Some(rule) => {
                let _ = writeln!(out, "suggested: --link {rule}");
            }
            None => {
                let _ = writeln!(
                    out,
                    "no rule links {:.0}% of the children: they do not name their parents (the router makes its own ids and no tag carries the parent's); fixscope will not guess",
                    ADOPT_RATE * 100.0
                );
            }
        }
        out
    }
}

/// Rules a router is known to use come first among equals.
fn rank(rule: LinkRule) -> u8 {
    match rule {
        LinkRule::Hops => 0,
        LinkRule::SameId => 1,
        LinkRule::Tags {
            child: 526,
            parent: 11,
        } => 2,
        LinkRule::Tags { .. } | LinkRule::Chain => 3,
    }
}

fn pct(n: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        100.0 * n as f64 / of as f64
    }
}
