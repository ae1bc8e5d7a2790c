//! What a comparison reads: per side, runs; per run, blocks of time; per block and cell (a
//! stage of a group), a sparse histogram of the latencies recorded in that block.
//!
//! Blocks keep bucket counts, never raw latencies: a run of millions of orders is a few
//! thousand (value, count) pairs per block, and resampling weighs those counts.

use std::collections::BTreeMap;
use std::fmt;

use hdrhistogram::Histogram;

use fixscope_core::correlate::{RequestType, Stage};

/// Which orders a cell covers: all of them, or one group of `--by`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Group {
    All,
    /// `--by type`: one request type (D, F, G).
    Type(RequestType),
    /// `--by session`: a session named by its SenderCompID->TargetCompID (connections
    /// differ between runs; the names do not).
    Session(String),
    /// `--by TAG`: the value of a FIX tag (for pipelines that keep per-tag histograms).
    Tag {
        tag: u32,
        value: String,
    },
}

impl fmt::Display for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Group::All => f.write_str("all"),
            Group::Type(t) => write!(f, "{}", t.msg_type()),
            Group::Session(s) => f.write_str(s),
            Group::Tag { tag, value } => write!(f, "{tag}={value}"),
        }
    }
}

/// One row of the comparison table: a stage of a group.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CellKey {
    pub group: Group,
    pub stage: Stage,
}

/// The latencies of one cell in one block: bucket values (a bucket's highest equivalent
/// value, as reports print) ascending with their counts, and how many were above range.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BlockHist {
    pub buckets: Vec<(u64, u64)>,
    pub over_range: u64,
    /// Exact extremes (`None` when empty): point estimates are clamped to them as
    /// reports clamp theirs.
    pub min_ns: Option<u64>,
    pub max_ns: u64,
}

impl BlockHist {
    /// The non-empty buckets of `hist` plus `over_range` values above it, with the exact
    /// `min_ns`/`max_ns` of everything (`None` min when empty).
    pub fn from_histogram(
        hist: &Histogram<u64>,
        over_range: u64,
        min_ns: Option<u64>,
        max_ns: u64,
    ) -> Self {
        let buckets = hist
            .iter_recorded()
            .map(|v| {
                (
                    hist.highest_equivalent(v.value_iterated_to()),
                    v.count_at_value(),
                )
            })
            .collect();
        BlockHist {
            buckets,
            over_range,
            min_ns,
            max_ns,
        }
    }

    /// From raw values (tests, simulations): each value its own bucket.
    pub fn from_values(values: &[u64]) -> Self {
        let mut m = BTreeMap::new();
        for &v in values {
            *m.entry(v).or_insert(0u64) += 1;
        }
        BlockHist {
            buckets: m.into_iter().collect(),
            over_range: 0,
            min_ns: values.iter().copied().min(),
            max_ns: values.iter().copied().max().unwrap_or(0),
        }
    }

    pub fn count(&self) -> u64 {
        self.buckets.iter().map(|b| b.1).sum::<u64>() + self.over_range
    }

    /// What `self` (a cumulative histogram) holds beyond `earlier` (the same one, earlier):
    /// one block's part. The exact extremes of the part are unknown: its buckets' values
    /// stand in.
    pub fn since(&self, earlier: &BlockHist) -> BlockHist {
        let before: BTreeMap<u64, u64> = earlier.buckets.iter().copied().collect();
        let buckets: Vec<(u64, u64)> = self
            .buckets
            .iter()
            .map(|&(v, c)| (v, c.saturating_sub(before.get(&v).copied().unwrap_or(0))))
            .filter(|&(_, c)| c > 0)
            .collect();
        BlockHist {
            min_ns: buckets.first().map(|b| b.0),
            max_ns: buckets.last().map_or(0, |b| b.0),
            over_range: self.over_range.saturating_sub(earlier.over_range),
            buckets,
        }
    }

    /// Adds `other`'s counts (merging blocks, or a delta of cumulative histograms).
    pub fn add(&mut self, other: &BlockHist) {
        if other.count() == 0 {
            return;
        }
        let mut m: BTreeMap<u64, u64> = self.buckets.iter().copied().collect();
        for &(v, c) in &other.buckets {
            *m.entry(v).or_insert(0) += c;
        }
        self.buckets = m.into_iter().collect();
        self.over_range += other.over_range;
        self.min_ns = match (self.min_ns, other.min_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.max_ns = self.max_ns.max(other.max_ns);
    }
}

/// What a side's report says about a run beyond its latencies (printed for context).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunContext {
    pub requests: u64,
    pub unanswered: u64,
    pub timed_out: u64,
    pub late: u64,
    pub duration_s: f64,
    /// The histogram's range (`-x`): a percentile whose rank falls above it has no value
    /// (`None`: not known).
    pub range_ns: Option<u64>,
}

impl RunContext {
    /// Orders per second over the run.
    pub fn order_rate(&self) -> f64 {
        if self.duration_s > 0.0 {
            self.requests as f64 / self.duration_s
        } else {
            0.0
        }
    }

    /// The share of requests never answered.
    pub fn unanswered_share(&self) -> f64 {
        if self.requests > 0 {
            self.unanswered as f64 / self.requests as f64
        } else {
            0.0
        }
    }
}

/// One run (a capture or a log): its blocks of time in order, per cell.
#[derive(Clone, Debug, Default)]
pub struct Run {
    /// What the user passed (a file name).
    pub label: String,
    /// Per cell, one [`BlockHist`] per block (empty where the cell had no latency), all of
    /// length [`Run::blocks`].
    pub cells: BTreeMap<CellKey, Vec<BlockHist>>,
    /// The blocks' length in seconds (the last may be shorter).
    pub block_s: f64,
    pub context: RunContext,
    blocks: usize,
}

impl Run {
    pub fn new(label: impl Into<String>) -> Self {
        Run {
            label: label.into(),
            ..Run::default()
        }
    }

    pub fn blocks(&self) -> usize {
        self.blocks
    }

    /// Appends a block: `cells` holds the cells with latencies in it.
    pub fn push_block(&mut self, cells: impl IntoIterator<Item = (CellKey, BlockHist)>) {
        let n = self.blocks;
        for (key, hist) in cells {
            let list = self.cells.entry(key).or_default();
            list.resize(n, BlockHist::default());
            list.push(hist);
        }
        self.blocks += 1;
        for list in self.cells.values_mut() {
            list.resize(self.blocks, BlockHist::default());
        }
    }

    /// The same run with every `factor` consecutive blocks merged into one (the last block
    /// takes what is left).
    pub fn coarsened(&self, factor: usize) -> Run {
        let factor = factor.max(1);
        let bounds: Vec<usize> = (0..self.blocks.div_ceil(factor))
            .map(|i| i * factor)
            .chain(std::iter::once(self.blocks))
            .collect();
        let mut run = self.regrouped(&bounds);
        run.block_s = self.block_s * factor as f64;
        run
    }

    /// Merges consecutive blocks into `target` of near-equal lengths when there are more.
    pub fn with_at_most_blocks(&self, target: usize) -> Run {
        if self.blocks <= target || target == 0 {
            return self.clone();
        }
        let bounds: Vec<usize> = (0..=target).map(|i| i * self.blocks / target).collect();
        let mut run = self.regrouped(&bounds);
        run.block_s = self.block_s * self.blocks as f64 / target as f64;
        run
    }

    /// Blocks `bounds[i]..bounds[i + 1]` merged into block `i`.
    fn regrouped(&self, bounds: &[usize]) -> Run {
        let cells = self
            .cells
            .iter()
            .map(|(k, list)| {
                let merged = bounds
                    .windows(2)
                    .map(|w| {
                        let mut h = BlockHist::default();
                        for b in &list[w[0]..w[1]] {
                            h.add(b);
                        }
                        h
                    })
                    .collect();
                (k.clone(), merged)
            })
            .collect();
        self.with_cells(cells, bounds.len() - 1)
    }

    /// This run's label, block length and context with other blocks.
    fn with_cells(&self, cells: BTreeMap<CellKey, Vec<BlockHist>>, blocks: usize) -> Run {
        Run {
            label: self.label.clone(),
            cells,
            block_s: self.block_s,
            context: self.context.clone(),
            blocks,
        }
    }

    /// Blocks `range` only (a half of the run, for the drift check).
    pub fn slice(&self, range: std::ops::Range<usize>) -> Run {
        let cells = self
            .cells
            .iter()
            .map(|(k, list)| (k.clone(), list[range.clone()].to_vec()))
            .collect();
        self.with_cells(cells, range.len())
    }

    /// A cell's blocks over `runs`, one run after another (a run without the cell gives
    /// empty blocks, so block numbers stay those of the side).
    pub fn side_blocks<'a>(runs: &'a [Run], key: &CellKey) -> Vec<&'a BlockHist> {
        static EMPTY: BlockHist = BlockHist {
            buckets: Vec::new(),
            over_range: 0,
            min_ns: None,
            max_ns: 0,
        };
        runs.iter()
            .flat_map(|r| match r.cells.get(key) {
                Some(list) => list.iter().collect::<Vec<_>>(),
                None => vec![&EMPTY; r.blocks()],
            })
            .collect()
    }

    /// All latencies of a cell (count), over every block.
    pub fn count(&self, key: &CellKey) -> u64 {
        self.cells
            .get(key)
            .map_or(0, |l| l.iter().map(BlockHist::count).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_of(blocks: usize) -> Run {
        let mut r = Run::new("r");
        r.block_s = 1.0;
        let key = CellKey {
            group: Group::All,
            stage: Stage::Ack,
        };
        for b in 0..blocks {
            r.push_block([(key.clone(), BlockHist::from_values(&[b as u64 + 1]))]);
        }
        r
    }

    #[test]
    fn cutting_keeps_every_latency_and_evens_the_blocks() {
        let r = run_of(61).with_at_most_blocks(50);
        assert_eq!(r.blocks(), 50);
        let list = r.cells.values().next().unwrap();
        assert_eq!(list.iter().map(BlockHist::count).sum::<u64>(), 61);
        assert!(list.iter().all(|b| (1..=2).contains(&b.count())));
        let d = run_of(5).coarsened(2);
        assert_eq!(d.blocks(), 3);
        assert_eq!(d.block_s, 2.0);
        assert_eq!(d.cells.values().next().unwrap()[2].buckets, vec![(5, 1)]);
    }
}
