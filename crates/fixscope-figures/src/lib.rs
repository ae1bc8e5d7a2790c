//! fixscope's figures: `stats` owns the consumers of order events and hands each interval's
//! and the run's figures over (`figures`), the one thing a reporter reads. Nothing here
//! formats: the reporters (fixscope-report) do.

pub mod figures;
pub mod stats;
