//! A [`Reporter`] that cuts a run into blocks of time: each interval report becomes one
//! block holding, per cell (stage, and group with `--by`), the interval's histogram as
//! sparse bucket counts. The summary gives the run's context (orders, unanswered, …).
//!
//! Sessions and `--by TAG` values keep cumulative histograms only: a block is the
//! difference from the previous one. With `--by TAG` every value the pipeline tracks with
//! histograms of its own gets cells while the run goes; at the summary, the values beyond
//! the run's `--by-limit` busiest (the pipeline's own ranking) are added into `(other)`,
//! block by block, so the cells are what `fixscope pcap --by` reports.

use std::collections::{BTreeMap, HashMap};
use std::io;

use fixscope_compare::{BlockHist, CellKey, Group, Run};
use fixscope_core::correlate::{RequestType, Stage};
use fixscope_core::group::TagGroups;
use fixscope_core::report::{IntervalReport, Reporter, SummaryReport};
use fixscope_core::stats::LatencyRecorder;

use super::options::GroupBy;

pub struct BlockCollector {
    pub run: Run,
    by: Option<GroupBy>,
    /// Per session id, its cumulative first_response histogram at the last block
    /// (sessions keep only cumulative histograms: a block is the difference).
    sessions_before: HashMap<u64, BlockHist>,
    /// Per `--by TAG` value and stage, its cumulative histogram at the last block.
    values_before: HashMap<(String, Stage), BlockHist>,
}

impl BlockCollector {
    pub fn new(label: impl Into<String>, by: Option<GroupBy>) -> Self {
        BlockCollector {
            run: Run::new(label),
            by,
            sessions_before: HashMap::new(),
            values_before: HashMap::new(),
        }
    }
}

fn block_of(r: &LatencyRecorder) -> BlockHist {
    BlockHist::from_histogram(r.histogram(), r.over_range(), r.min_ns(), r.max_ns())
}

impl Reporter for BlockCollector {
    fn interval(&mut self, r: &IntervalReport<'_>) -> io::Result<()> {
        let mut cells: BTreeMap<CellKey, BlockHist> = BTreeMap::new();
        self.run.context.range_ns = Some(r.histogram(Stage::FirstResponse).high());
        for s in r.all_stages().filter(|s| s.count > 0) {
            let key = CellKey {
                group: Group::All,
                stage: s.stage,
            };
            let hist = BlockHist::from_histogram(
                r.histogram(s.stage),
                s.over_range,
                Some(s.min_ns),
                s.max_ns,
            );
            cells.insert(key, hist);
        }
        match self.by {
            None => {}
            Some(GroupBy::Type) => {
                for &stage in r.figures.shown_stages() {
                    for t in RequestType::ALL {
                        let rec = r.figures.interval_by_request_type(t, stage);
                        if rec.count() > 0 {
                            let key = CellKey {
                                group: Group::Type(t),
                                stage,
                            };
                            cells.insert(key, block_of(rec));
                        }
                    }
                }
            }
            Some(GroupBy::Session) => {
                for s in r.figures.sessions() {
                    let latency = r.figures.session_latency(s.id);
                    let Some(rec) = latency.and_then(|l| l.first_response_recorder()) else {
                        continue;
                    };
                    let now = block_of(rec);
                    let part = match self.sessions_before.get(&s.id) {
                        Some(before) => now.since(before),
                        None => now.since(&BlockHist::default()),
                    };
                    self.sessions_before.insert(s.id, now);
                    if part.count() == 0 {
                        continue;
                    }
                    // Connections differ between runs; the session's names do not (a
                    // reconnect of the same names adds to the same group).
                    let key = CellKey {
                        group: Group::Session(format!(
                            "{}->{}",
                            s.sender_comp_id, s.target_comp_id
                        )),
                        stage: Stage::FirstResponse,
                    };
                    cells.entry(key).or_default().add(&part);
                }
            }
            Some(GroupBy::Tag(tag)) => self.tag_blocks(r, tag, &mut cells),
        }
        self.run.push_block(cells);
        if self.run.block_s == 0.0 {
            self.run.block_s = r.span.seconds();
        }
        Ok(())
    }

    fn summary(&mut self, r: &SummaryReport<'_>) -> io::Result<()> {
        let c = &r.counters;
        let ctx = &mut self.run.context;
        ctx.requests = c.correlation.requests;
        ctx.unanswered = c.unanswered;
        ctx.timed_out = c.correlation.timed_out;
        ctx.late = c.correlation.late;
        ctx.duration_s = r.duration_ns as f64 / 1e9;
        if let Some(GroupBy::Tag(tag)) = self.by {
            self.fold_beyond_the_busiest(r, tag);
        }
        Ok(())
    }
}

/// The pipeline's groups of `--by TAG`.
fn tag_groups<'a>(figures: fixscope_core::figures::Figures<'a>, tag: u32) -> Option<&'a TagGroups> {
    figures
        .by()?
        .tags
        .iter()
        .find(|t| t.field.tag() == Some(tag))
}

impl BlockCollector {
    /// `--by TAG`: each tracked value's and the overflow's part of this block, per stage.
    fn tag_blocks(
        &mut self,
        r: &IntervalReport<'_>,
        tag: u32,
        cells: &mut BTreeMap<CellKey, BlockHist>,
    ) {
        let Some(t) = tag_groups(r.figures, tag) else {
            return;
        };
        let entries = t.entries.iter().chain([&t.overflow, &t.none]);
        for e in entries {
            for stage in Stage::ALL {
                let Some(rec) = e.stage(stage).filter(|r| r.count() > 0) else {
                    continue;
                };
                let key = (e.value.clone(), stage);
                let before = self.values_before.get(&key);
                if before.is_some_and(|b| b.count() == rec.count()) {
                    continue;
                }
                let now = block_of(rec);
                let part = now.since(before.unwrap_or(&BlockHist::default()));
                self.values_before.insert(key, now);
                if part.count() > 0 {
                    let key = CellKey {
                        group: Group::Tag {
                            tag,
                            value: e.value.clone(),
                        },
                        stage,
                    };
                    cells.entry(key).or_default().add(&part);
                }
            }
        }
    }

    /// `--by TAG`, at the end: the cells of values beyond the run's busiest join
    /// `(other)`'s, block by block.
    fn fold_beyond_the_busiest(&mut self, r: &SummaryReport<'_>, tag: u32) {
        let Some(t) = tag_groups(r.figures, tag) else {
            return;
        };
        let ranking = t.ranked();
        let kept: std::collections::HashSet<&str> =
            ranking.iter().map(|e| e.value.as_str()).collect();
        let folded: Vec<CellKey> = self
            .run
            .cells
            .keys()
            .filter(
                |k| matches!(&k.group, Group::Tag { value, .. } if !kept.contains(value.as_str())),
            )
            .cloned()
            .collect();
        for key in folded {
            let Some(blocks) = self.run.cells.remove(&key) else {
                continue;
            };
            let other = CellKey {
                group: Group::Tag {
                    tag,
                    value: ranking.other.value.clone(),
                },
                stage: key.stage,
            };
            let n = blocks.len();
            let list = self.run.cells.entry(other).or_default();
            list.resize(n, BlockHist::default());
            for (mine, theirs) in list.iter_mut().zip(&blocks) {
                mine.add(theirs);
            }
        }
    }
}
