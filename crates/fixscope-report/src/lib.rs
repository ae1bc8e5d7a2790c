//! fixscope's reporters: `report` writes a run's figures as text and JSON (one interval, the
//! run's summary, the session table, points and hops), `hlog` as HdrHistogram interval logs
//! and reads them back (`fixscope report`, merges). They read figures only
//! (fixscope-figures), never the pipeline.

pub mod hlog;
pub mod report;
