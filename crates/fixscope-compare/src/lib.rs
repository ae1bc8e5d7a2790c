//! The statistics of `fixscope compare`: did latency change between two sets of runs, with confidence
//! intervals that hold for the whole table (docs/compare.md explains the method).
//!
//! | file | concern |
//! |---|---|
//! | `data.rs` | runs, blocks of time, cells (stage × group), sparse block histograms |
//! | `quantile.rs` | quantiles of a weighted sum of block histograms (the resampled run) |
//! | `resample.rs` | the portable generator and the runs-then-blocks weights |
//! | `band.rs` | the max-T simultaneous band and its t-widening |
//! | `verdict.rs` | worse / better / same / inconclusive, and the orders a cell would need |
//! | `table.rs` | one comparison: point estimates, replicates, intervals, verdicts |
//! | `curve.rs` | a side's percentile curve with its band (pictures) |
//! | `diagnose.rs` | block length (variance when blocks double), drift within a run, load |

mod band;
mod curve;
mod data;
mod diagnose;
mod quantile;
mod resample;
mod table;
mod verdict;

pub use curve::{curve, CurvePoint};
pub use data::{BlockHist, CellKey, Group, Run, RunContext};
pub use diagnose::{compare, BlockCheck, Comparison, SideNotes};
pub use resample::DEFAULT_SEED;
pub use table::{CellResult, PercentileResult, Table};
pub use verdict::Verdict;

/// The percentiles compared unless `--percentiles` says otherwise.
pub const DEFAULT_PERCENTILES: [f64; 4] = [0.5, 0.9, 0.99, 0.999];

/// How a comparison is made.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// Quantiles as fractions (0.5, 0.999), ascending.
    pub percentiles: Vec<f64>,
    /// Confidence of the simultaneous band over the whole table (0.99).
    pub confidence: f64,
    /// Smallest relative change that matters (0.05).
    pub threshold: f64,
    /// Bootstrap replicates.
    pub resamples: usize,
    pub seed: u64,
    /// Fewer orders than this beyond a percentile on a side: `insufficient`.
    pub min_tail: u64,
    /// Fewer blocks than this on a side: every cell `insufficient`.
    pub min_blocks: usize,
    /// Runs with more blocks are cut into this many (consecutive blocks merged); below it
    /// the critical value is t-widened.
    pub target_blocks: usize,
    /// Check the block length and drift (off for the checks' own comparisons).
    pub diagnose: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            percentiles: DEFAULT_PERCENTILES.to_vec(),
            confidence: 0.99,
            threshold: 0.05,
            resamples: 2000,
            seed: DEFAULT_SEED,
            min_tail: 10,
            min_blocks: 20,
            target_blocks: 50,
            diagnose: true,
        }
    }
}

#[cfg(test)]
mod tests;
