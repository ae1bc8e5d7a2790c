//! Pictures of latency: the percentile distribution and latency over time, for
//! `fixscope plot` and the HTML report.
//!
//! | file | concern |
//! |---|---|
//! | `model.rs` | [`PlotData`]: what a chart draws, whatever the input |
//! | `collect.rs` | a reporter that fills a `PlotData` from a run |
//! | `input.rs` | the inputs of `fixscope plot` (capture, JSON lines, HdrHistogram log) |
//! | `draw.rs` | the two charts with `plotters`, on SVG or PNG, with an embedded font |

pub mod collect;
pub mod draw;
pub mod input;
pub mod model;

pub use model::PlotData;
