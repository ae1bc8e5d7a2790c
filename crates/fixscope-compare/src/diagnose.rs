//! A comparison with its checks: blocks cut to length and their length checked (does the
//! variance still grow when blocks double?), drift within each run, and whether the two
//! sides ran under the same load.

use super::data::{CellKey, Group, Run, RunContext};
use super::table::{analyse, percentile_label, side_log_se, Table};
use super::verdict::Verdict;
use super::Settings;

/// Variance of a side's log quantiles when its blocks double in length, over as they are.
/// Near 1: blocks are long enough to hold the dependence between orders; well above 1:
/// latency is correlated over longer spans than a block.
const GROWTH_LIMIT: f64 = 1.5;
/// Order rates differing by more than this share: load may explain a latency change.
const RATE_DIFFERENCE: f64 = 0.10;
/// Unanswered shares differing by more than this (absolute): a side lost more orders.
const UNANSWERED_DIFFERENCE: f64 = 0.005;

/// What the block-length check found on a side.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockCheck {
    /// Median over cells of var(doubled blocks) / var(blocks).
    pub variance_growth: f64,
    /// The blocks were doubled because of it.
    pub doubled: bool,
}

/// A side's context for the reader.
#[derive(Clone, Debug, PartialEq)]
pub struct SideNotes {
    pub runs: usize,
    pub labels: Vec<String>,
    /// Blocks over all runs (after cutting and the block check).
    pub blocks: usize,
    /// A block's length in seconds (of the first run).
    pub block_s: f64,
    pub block_check: Option<BlockCheck>,
    /// The runs' figures added up (durations too).
    pub context: RunContext,
}

/// A comparison and its checks.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    pub table: Table,
    pub settings: Settings,
    pub sides: [SideNotes; 2],
    /// Warnings for the reader (drift, load, block length, one run per side).
    pub warnings: Vec<String>,
}

impl Comparison {
    pub fn verdict(&self) -> Verdict {
        self.table.verdict()
    }
}

/// Compares `baseline` with `candidate`: each run cut into at most `target_blocks` blocks,
/// checked, then [`analyse`]d over every cell either side has.
pub fn compare(baseline: &[Run], candidate: &[Run], s: &Settings) -> Comparison {
    let mut keys: Vec<CellKey> = baseline
        .iter()
        .chain(candidate)
        .flat_map(|r| r.cells.keys().cloned())
        .collect();
    keys.sort();
    keys.dedup();
    let mut warnings = Vec::new();
    let mut prepared = [cut(baseline, s), cut(candidate, s)];
    let mut checks = [None, None];
    if s.diagnose {
        for (side, name) in ["baseline", "candidate"].iter().enumerate() {
            let (runs, check) = check_block_length(&prepared[side], &keys, s);
            if let Some(c) = &check {
                if c.doubled {
                    warnings.push(format!(
                        "{name}: the variance grows ×{:.2} when blocks double: latency is correlated over longer spans than a block, so blocks were doubled",
                        c.variance_growth
                    ));
                } else if c.variance_growth > GROWTH_LIMIT {
                    warnings.push(format!(
                        "{name}: the variance grows ×{:.2} when blocks double, and there are too few blocks to double them: the intervals may be too narrow (a longer run helps)",
                        c.variance_growth
                    ));
                }
            }
            prepared[side] = runs;
            checks[side] = check;
        }
        for (name, runs) in ["baseline", "candidate"].iter().zip(&prepared) {
            warnings.extend(drift(name, runs, &keys, s));
        }
    }
    let table = analyse(&prepared[0], &prepared[1], s, &keys);
    let sides = [0, 1].map(|i| notes(&prepared[i], checks[i].clone()));
    if s.diagnose {
        warnings.extend(load_warnings(&sides));
        if sides[0].runs == 1 || sides[1].runs == 1 {
            warnings.push(
                "one run on a side: the intervals hold the variation within a run, not from one run to the next (pass several runs per side to include it)"
                    .to_string(),
            );
        }
    }
    Comparison {
        table,
        settings: s.clone(),
        sides,
        warnings,
    }
}

fn cut(runs: &[Run], s: &Settings) -> Vec<Run> {
    runs.iter()
        .map(|r| r.with_at_most_blocks(s.target_blocks))
        .collect()
}

/// The median, over the cells of all orders, of the variance growth when blocks double;
/// the runs with doubled blocks when it exceeds [`GROWTH_LIMIT`] and every run keeps
/// `min_blocks`.
fn check_block_length(
    runs: &[Run],
    keys: &[CellKey],
    s: &Settings,
) -> (Vec<Run>, Option<BlockCheck>) {
    let all: Vec<CellKey> = keys
        .iter()
        .filter(|k| k.group == Group::All)
        .cloned()
        .collect();
    let doubled: Vec<Run> = runs.iter().map(|r| r.coarsened(2)).collect();
    let total: usize = doubled.iter().map(Run::blocks).sum();
    // Too few blocks to say anything about doubling them.
    if total < 10 {
        return (runs.to_vec(), None);
    }
    let quick = Settings {
        resamples: s.resamples.min(400),
        ..s.clone()
    };
    let before = side_log_se(runs, &all, &quick);
    let after = side_log_se(&doubled, &all, &quick);
    let mut ratios: Vec<f64> = before
        .iter()
        .zip(&after)
        .map(|(b, a)| (a / b).powi(2))
        .collect();
    if ratios.is_empty() {
        return (runs.to_vec(), None);
    }
    ratios.sort_by(f64::total_cmp);
    let growth = ratios[ratios.len() / 2];
    let can_double = doubled.iter().map(Run::blocks).sum::<usize>() >= s.min_blocks;
    let doubled_now = growth > GROWTH_LIMIT && can_double;
    let check = BlockCheck {
        variance_growth: growth,
        doubled: doubled_now,
    };
    (
        if doubled_now { doubled } else { runs.to_vec() },
        Some(check),
    )
}

/// Runs whose second half differs from their first (all orders, every stage): the block
/// bootstrap assumes latency is steady within a run.
fn drift(name: &str, runs: &[Run], keys: &[CellKey], s: &Settings) -> Vec<String> {
    let all: Vec<CellKey> = keys
        .iter()
        .filter(|k| k.group == Group::All)
        .cloned()
        .collect();
    let quick = Settings {
        resamples: s.resamples.min(500),
        min_blocks: s.min_blocks / 2,
        diagnose: false,
        ..s.clone()
    };
    let mut out = Vec::new();
    for run in runs {
        let half = run.blocks() / 2;
        if half < quick.min_blocks {
            continue;
        }
        let t = analyse(
            &[run.slice(0..half)],
            &[run.slice(half..2 * half)],
            &quick,
            &all,
        );
        let moved: Vec<String> = t
            .cells
            .iter()
            .flat_map(|c| {
                c.percentiles
                    .iter()
                    .filter(|p| matches!(p.verdict, Verdict::Worse | Verdict::Better))
                    .map(move |p| {
                        format!(
                            "{} p{} ×{:.2}",
                            c.key.stage.name(),
                            percentile_label(p.q),
                            p.ratio.unwrap_or(1.0)
                        )
                    })
            })
            .collect();
        if !moved.is_empty() {
            out.push(format!(
                "{name} {}: latency drifts within the run (second half vs first: {}): a comparison assumes each run is steady",
                run.label,
                moved.join(", ")
            ));
        }
    }
    out
}

fn notes(runs: &[Run], block_check: Option<BlockCheck>) -> SideNotes {
    let mut context = RunContext::default();
    for r in runs {
        context.requests += r.context.requests;
        context.unanswered += r.context.unanswered;
        context.timed_out += r.context.timed_out;
        context.late += r.context.late;
        context.duration_s += r.context.duration_s;
        // A rank above any run's range is above the smallest of them.
        context.range_ns = match (context.range_ns, r.context.range_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
    SideNotes {
        runs: runs.len(),
        labels: runs.iter().map(|r| r.label.clone()).collect(),
        blocks: runs.iter().map(Run::blocks).sum(),
        block_s: runs.first().map_or(0.0, |r| r.block_s),
        block_check,
        context,
    }
}

fn load_warnings(sides: &[SideNotes; 2]) -> Vec<String> {
    let mut out = Vec::new();
    let (a, b) = (&sides[0].context, &sides[1].context);
    let (ra, rb) = (a.order_rate(), b.order_rate());
    if ra > 0.0 && rb > 0.0 && (rb / ra - 1.0).abs() > RATE_DIFFERENCE {
        out.push(format!(
            "the order rates differ ({ra:.0}/s baseline, {rb:.0}/s candidate): load changes latency, so a difference may be the load's"
        ));
    }
    let (ua, ub) = (a.unanswered_share(), b.unanswered_share());
    if (ua - ub).abs() > UNANSWERED_DIFFERENCE {
        out.push(format!(
            "the unanswered shares differ ({:.2}% baseline, {:.2}% candidate): orders missing from one side's latencies bias the comparison",
            ua * 100.0,
            ub * 100.0
        ));
    }
    out
}
