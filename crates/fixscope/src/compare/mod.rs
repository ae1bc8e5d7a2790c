//! `fixscope compare`'s inputs and outputs; the statistics are the `fixscope-compare` crate.
//!
//! | file | concern |
//! |---|---|
//! | `options.rs` | the flags validated into the statistics' settings and the grouping |
//! | `collect.rs` | a reporter that cuts a run into blocks of time (per cell histograms) |
//! | `input.rs` | a side's files read into runs: captures (the driver), `--hlog` logs |
//! | `text.rs` | the aligned table, the sides' context and the warnings |
//! | `json.rs` | the JSON object (docs/output-json.md, "compare") |
//! | `chart.rs` | both percentile curves with their confidence bands (SVG, HTML) |

pub mod chart;
pub mod collect;
pub mod input;
pub mod json;
pub mod options;
pub mod text;
