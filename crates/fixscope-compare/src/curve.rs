//! One side's percentile curve with a pointwise confidence band, for the pictures: the
//! same blocks and resampling as the comparison, the band from the replicates' quantiles.

use super::data::{CellKey, Run};
use super::quantile::CellIndex;
use super::resample::{unit_weights, Resampler};
use super::Settings;

/// A point of a curve: the quantile, its value and the band around it (ns).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CurvePoint {
    pub q: f64,
    pub value_ns: u64,
    pub low_ns: u64,
    pub high_ns: u64,
}

/// The curve of `key` over `runs` at the quantiles `qs` that have `min_tail` orders
/// beyond them; the band at `s.confidence`, point by point.
pub fn curve(runs: &[Run], key: &CellKey, qs: &[f64], s: &Settings) -> Vec<CurvePoint> {
    let runs: Vec<Run> = runs
        .iter()
        .map(|r| r.with_at_most_blocks(s.target_blocks))
        .collect();
    let run_blocks: Vec<usize> = runs.iter().map(Run::blocks).collect();
    let blocks = Run::side_blocks(&runs, key);
    let index = CellIndex::new(blocks.iter().copied());
    let unit = unit_weights(blocks.len());
    let count = index.total(&unit);
    let qs: Vec<f64> = qs
        .iter()
        .copied()
        .filter(|q| count as f64 * (1.0 - q) >= s.min_tail as f64)
        .collect();
    let mut rng = Resampler::new(s.seed);
    let (mut w, mut scratch) = (Vec::new(), Vec::new());
    let resamples = s.resamples.min(500);
    let mut reps = vec![Vec::with_capacity(resamples); qs.len()];
    for _ in 0..resamples {
        rng.side_weights(&run_blocks, &mut w, &mut scratch);
        for (i, &q) in qs.iter().enumerate() {
            reps[i].push(index.quantile(&w, q).unwrap_or(index.max_ns()));
        }
    }
    let tail = (1.0 - s.confidence) / 2.0;
    qs.iter()
        .zip(reps.iter_mut())
        .filter_map(|(&q, r)| {
            let value_ns = index.quantile(&unit, q)?;
            r.sort_unstable();
            let at = |f: f64| r[((f * r.len() as f64) as usize).min(r.len() - 1)];
            Some(CurvePoint {
                q,
                value_ns,
                low_ns: at(tail),
                high_ns: at(1.0 - tail),
            })
        })
        .collect()
}
