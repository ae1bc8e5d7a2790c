//! One comparison of two sides: point estimates, jointly resampled replicates, the
//! simultaneous band and a verdict per cell and percentile.

use super::band::{max_t_critical, std_dev, t_widened};
use super::data::{CellKey, Run};
use super::quantile::CellIndex;
use super::resample::{unit_weights, Resampler};
use super::verdict::{decide, orders_needed, Verdict};
use super::Settings;

/// Histogram precision (3 significant digits: buckets 1/1024 wide, ~0.1% in log): a
/// standard error never counts as smaller than half a bucket, or two runs landing in the
/// same bucket every time would look infinitely precise.
const MIN_LOG_SE: f64 = 0.0005;

/// One percentile of one cell.
#[derive(Clone, Debug, PartialEq)]
pub struct PercentileResult {
    /// The quantile as a fraction (0.999).
    pub q: f64,
    pub baseline_ns: Option<u64>,
    pub candidate_ns: Option<u64>,
    /// candidate / baseline.
    pub ratio: Option<f64>,
    /// The simultaneous band's bounds on the ratio.
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub verdict: Verdict,
    /// Inconclusive or insufficient: orders per side it would take (when a number can be
    /// given).
    pub orders_needed: Option<u64>,
    /// Why a cell is insufficient, in words.
    pub note: Option<String>,
}

/// One row: a stage of a group.
#[derive(Clone, Debug, PartialEq)]
pub struct CellResult {
    pub key: CellKey,
    pub baseline_count: u64,
    pub candidate_count: u64,
    pub percentiles: Vec<PercentileResult>,
}

/// Everything a comparison found.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub cells: Vec<CellResult>,
    /// The band's critical value (standard errors), after t-widening.
    pub critical: f64,
    /// Degrees of freedom of the t-widening (`None`: enough blocks, none applied).
    pub t_df: Option<f64>,
    /// Cells × percentiles judged (not insufficient): the family the band covers.
    pub judged: usize,
    /// Blocks per side (all runs).
    pub blocks: [usize; 2],
}

impl Table {
    /// The worst verdict that matters to a gate: worse, then inconclusive or
    /// insufficient, then better, then same.
    pub fn verdict(&self) -> Verdict {
        let all = || {
            self.cells
                .iter()
                .flat_map(|c| &c.percentiles)
                .map(|p| p.verdict)
        };
        if all().any(|v| v == Verdict::Worse) {
            Verdict::Worse
        } else if all().any(|v| v == Verdict::Inconclusive) {
            Verdict::Inconclusive
        } else if all().any(|v| v == Verdict::Insufficient) {
            Verdict::Insufficient
        } else if all().any(|v| v == Verdict::Better) {
            Verdict::Better
        } else {
            Verdict::Same
        }
    }

    pub fn count(&self, v: Verdict) -> usize {
        self.cells
            .iter()
            .flat_map(|c| &c.percentiles)
            .filter(|p| p.verdict == v)
            .count()
    }
}

/// A side indexed for resampling: its runs' block counts and each cell's index.
struct SideIndex {
    run_blocks: Vec<usize>,
    cells: Vec<Option<CellIndex>>,
    counts: Vec<u64>,
}

impl SideIndex {
    fn new(runs: &[Run], keys: &[CellKey]) -> Self {
        let run_blocks = runs.iter().map(Run::blocks).collect();
        let mut cells = Vec::with_capacity(keys.len());
        let mut counts = Vec::with_capacity(keys.len());
        for key in keys {
            let count: u64 = runs.iter().map(|r| r.count(key)).sum();
            counts.push(count);
            if count == 0 {
                cells.push(None);
                continue;
            }
            let blocks = Run::side_blocks(runs, key);
            cells.push(Some(CellIndex::new(blocks.iter().copied())));
        }
        SideIndex {
            run_blocks,
            cells,
            counts,
        }
    }

    fn total_blocks(&self) -> usize {
        self.run_blocks.iter().sum()
    }
}

/// Compares `baseline` with `candidate` (runs already cut into blocks).
pub fn analyse(baseline: &[Run], candidate: &[Run], s: &Settings, keys: &[CellKey]) -> Table {
    let sides = [
        SideIndex::new(baseline, keys),
        SideIndex::new(candidate, keys),
    ];
    let blocks = [sides[0].total_blocks(), sides[1].total_blocks()];
    let unit = [unit_weights(blocks[0]), unit_weights(blocks[1])];
    let threshold_log = (1.0 + s.threshold).ln();

    // Point estimates, and which cells can be judged.
    let mut cells: Vec<CellResult> = Vec::with_capacity(keys.len());
    // (cell, percentile, point log ratio) of the judged ones.
    let mut judged: Vec<(usize, usize, f64)> = Vec::new();
    for (c, key) in keys.iter().enumerate() {
        let counts = [sides[0].counts[c], sides[1].counts[c]];
        let mut percentiles = Vec::with_capacity(s.percentiles.len());
        for (pi, &q) in s.percentiles.iter().enumerate() {
            let point = |side: usize| {
                sides[side].cells[c]
                    .as_ref()
                    .and_then(|ix| ix.quantile(&unit[side], q))
            };
            let (b, k) = (point(0), point(1));
            let needed_for_tail = (s.min_tail as f64 / (1.0 - q).max(1e-12)).ceil() as u64;
            let note = if blocks[0] < s.min_blocks || blocks[1] < s.min_blocks {
                Some(format!(
                    "{} and {} blocks of time: at least {} per side are needed (a longer run, or a shorter -r for --hlog logs)",
                    blocks[0], blocks[1], s.min_blocks
                ))
            } else if counts[0] == 0 || counts[1] == 0 {
                Some(format!(
                    "no latency on the {} side",
                    if counts[0] == 0 {
                        "baseline"
                    } else {
                        "candidate"
                    }
                ))
            } else if counts[0].min(counts[1]) < needed_for_tail {
                Some(format!(
                    "fewer than {} orders beyond p{} on a side",
                    s.min_tail,
                    percentile_label(q)
                ))
            } else if b.is_none() || k.is_none() {
                Some("above the histogram's range (-x) on a side".to_string())
            } else {
                None
            };
            let ratio = match (b, k) {
                (Some(b), Some(k)) if b > 0 => Some(k as f64 / b as f64),
                _ => None,
            };
            let verdict = if note.is_some() || ratio.is_none() {
                Verdict::Insufficient
            } else {
                judged.push((c, pi, ratio.unwrap_or(1.0).ln()));
                // Decided once the band is known.
                Verdict::Inconclusive
            };
            let orders_needed = (verdict == Verdict::Insufficient
                && counts[0].min(counts[1]) < needed_for_tail)
                .then_some(needed_for_tail);
            percentiles.push(PercentileResult {
                q,
                baseline_ns: b,
                candidate_ns: k,
                ratio,
                ci_low: None,
                ci_high: None,
                verdict,
                orders_needed,
                note: note.or_else(|| ratio.is_none().then(|| "a zero baseline".to_string())),
            });
        }
        cells.push(CellResult {
            key: key.clone(),
            baseline_count: counts[0],
            candidate_count: counts[1],
            percentiles,
        });
    }

    // Replicates: one set of block weights per side and replicate, shared by every cell.
    let n = judged.len();
    let mut replicates = vec![0.0f64; n * s.resamples];
    if n > 0 {
        let mut rng = Resampler::new(s.seed);
        let (mut w, mut scratch) = ([Vec::new(), Vec::new()], Vec::new());
        let mut qs: Vec<[Option<u64>; 2]> = vec![[None, None]; n];
        for r in 0..s.resamples {
            for side in 0..2 {
                rng.side_weights(&sides[side].run_blocks, &mut w[side], &mut scratch);
            }
            for (j, &(c, pi, _)) in judged.iter().enumerate() {
                let q = s.percentiles[pi];
                for side in 0..2 {
                    let ix = sides[side].cells[c]
                        .as_ref()
                        .expect("judged cells have data");
                    // A resample whose rank lands above range: the largest latency stands in.
                    qs[j][side] = Some(ix.quantile(&w[side], q).unwrap_or(ix.max_ns()));
                }
            }
            for (j, pair) in qs.iter().enumerate() {
                let (b, k) = (pair[0].unwrap_or(1).max(1), pair[1].unwrap_or(1).max(1));
                replicates[j * s.resamples + r] = (k as f64 / b as f64).ln();
            }
        }
    }
    let se: Vec<f64> = (0..n)
        .map(|j| std_dev(&replicates[j * s.resamples..(j + 1) * s.resamples]).max(MIN_LOG_SE))
        .collect();
    let mut maxima: Vec<f64> = (0..s.resamples)
        .map(|r| {
            (0..n)
                .map(|j| (replicates[j * s.resamples + r] - judged[j].2).abs() / se[j])
                .fold(0.0, f64::max)
        })
        .collect();
    let raw = if n > 0 {
        max_t_critical(&mut maxima, s.confidence)
    } else {
        f64::INFINITY
    };
    let min_blocks = blocks[0].min(blocks[1]);
    let t_df = (min_blocks < s.target_blocks).then(|| (min_blocks as f64 - 1.0).max(1.0));
    let critical = t_df.map_or(raw, |df| t_widened(raw, df));

    for (j, &(c, pi, est)) in judged.iter().enumerate() {
        let half = critical * se[j];
        let (low, high) = (est - half, est + half);
        let cell = &mut cells[c];
        let orders = cell.baseline_count.min(cell.candidate_count);
        let p = &mut cell.percentiles[pi];
        p.ci_low = Some(low.exp());
        p.ci_high = Some(high.exp());
        p.verdict = decide(est, low, high, threshold_log);
        p.orders_needed = (p.verdict == Verdict::Inconclusive)
            .then(|| orders_needed(est, half, threshold_log, orders))
            .flatten();
    }
    Table {
        cells,
        critical,
        t_df,
        judged: n,
        blocks,
    }
}

/// `0.999` → `99.9`, `0.5` → `50`.
pub fn percentile_label(q: f64) -> String {
    let pct = (q * 100.0 * 1e6).round() / 1e6;
    let s = format!("{pct}");
    s
}

/// One side's bootstrap standard error of the log quantile, per `(cell, q)` given (cells
/// without `min_tail` orders beyond `q` are left out): for the block-length check.
pub fn side_log_se(runs: &[Run], keys: &[CellKey], s: &Settings) -> Vec<f64> {
    let side = SideIndex::new(runs, keys);
    let mut targets = Vec::new();
    for (c, key) in keys.iter().enumerate() {
        let _ = key;
        for &q in &s.percentiles {
            if side.cells[c].is_some() && (side.counts[c] as f64) * (1.0 - q) >= s.min_tail as f64 {
                targets.push((c, q));
            }
        }
    }
    let mut rng = Resampler::new(s.seed);
    let (mut w, mut scratch) = (Vec::new(), Vec::new());
    let mut reps = vec![Vec::with_capacity(s.resamples); targets.len()];
    for _ in 0..s.resamples {
        rng.side_weights(&side.run_blocks, &mut w, &mut scratch);
        for (t, &(c, q)) in targets.iter().enumerate() {
            let ix = side.cells[c].as_ref().expect("targets have data");
            let v = ix.quantile(&w, q).unwrap_or(ix.max_ns()).max(1);
            reps[t].push((v as f64).ln());
        }
    }
    reps.iter().map(|r| std_dev(r).max(MIN_LOG_SE)).collect()
}
