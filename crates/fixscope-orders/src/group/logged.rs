//! `--by` groups rebuilt from what an HdrHistogram log holds (`fixscope report`): the rows
//! the run reported — its busiest values, `(other)`, `(none)` — with their whole-run
//! histograms and the `(other)` row's figures as the run gave them, so a report reads back
//! the run's `by` exactly.

use super::{GroupEntry, GroupSpec, GroupStats, TagGroups, DIGITS};
use crate::correlate::Stage;
use crate::recorder::LatencyRecorder;

/// Which row of the run's report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowKind {
    Named,
    Other,
    None,
}

/// One row read back.
#[derive(Debug)]
pub struct LoggedRow {
    pub value: String,
    pub kind: RowKind,
    pub requests: u64,
    /// Per stage of [`Stage::ALL`], those with latencies.
    pub stages: [Option<LatencyRecorder>; 4],
}

/// One tag read back.
#[derive(Debug)]
pub struct LoggedTag {
    pub field: super::ByField,
    pub limit: usize,
    pub candidates: usize,
    pub other_values: u64,
    pub values_overflowed: u64,
    pub busiest_exact: bool,
    pub rows: Vec<LoggedRow>,
}

/// The `(other)` row's figures as the run reported them (its candidates are gone).
#[derive(Clone, Copy, Debug)]
pub(super) struct LoggedOther {
    pub other_values: u64,
    pub values_overflowed: u64,
    pub busiest_exact: bool,
}

fn entry(row: LoggedRow, highest_ns: u64) -> GroupEntry {
    let mut e = GroupEntry::new(row.value);
    e.requests = row.requests;
    if row.stages.iter().any(Option::is_some) {
        // As the run allocated them: all four with the first latency.
        e.stages =
            Some(Box::new(row.stages.map(|r| {
                r.unwrap_or_else(|| LatencyRecorder::new(highest_ns, DIGITS))
            })));
    }
    e
}

impl GroupStats {
    /// The groups of a log's `#fixscope-by` lines; `highest_ns` is the run's range (`-x`).
    pub fn from_log(tags: Vec<LoggedTag>, highest_ns: u64) -> Option<GroupStats> {
        let first = tags.first()?;
        let spec = GroupSpec {
            fields: tags.iter().map(|t| t.field.clone()).collect(),
            limit: first.limit,
            candidates: first.candidates,
        };
        let mut stats = GroupStats::new(spec, highest_ns);
        for (mine, logged) in stats.tags.iter_mut().zip(tags) {
            *mine = TagGroups::new(logged.field.clone(), &stats.spec);
            mine.logged = Some(LoggedOther {
                other_values: logged.other_values,
                values_overflowed: logged.values_overflowed,
                busiest_exact: logged.busiest_exact,
            });
            for row in logged.rows {
                let kind = row.kind;
                let e = entry(row, highest_ns);
                match kind {
                    RowKind::Named => mine.entries.push(e),
                    RowKind::Other => mine.overflow = e,
                    RowKind::None => mine.none = e,
                }
            }
        }
        Some(stats)
    }
}

/// [`Stage::ALL`]'s index of a stage (`None` for the breakdown stages).
pub fn stage_slot(stage: Stage) -> Option<usize> {
    Stage::ALL.iter().position(|&s| s == stage)
}
