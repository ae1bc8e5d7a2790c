//! The `by` view (#21): `--by`'s values — each tag's busiest (`--by-limit`), `(other)` and
//! `(none)` — with every stage's cumulative figures, as the text report's `by tag` tables.
//! Rows are built once per summary.

use fixscope_core::correlate::Stage;
use fixscope_core::report::SummaryReport;
use fixscope_core::stats::Distribution;
use ratatui::layout::Rect;
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::stage_table::{stage_row, stage_table_wide};

/// One value's stage: `TAG=VALUE stage` and its figures.
pub type ByRow = (String, Distribution);

/// The rows of a summary (empty without `--by`), and the line under them (what `(other)`
/// holds).
pub fn rows(r: &SummaryReport<'_>) -> (Vec<ByRow>, Vec<String>) {
    let Some(by) = r.figures.by() else {
        return (Vec::new(), Vec::new());
    };
    let mut out = Vec::new();
    let mut notes = Vec::new();
    for t in &by.tags {
        let ranking = t.ranked();
        for e in ranking.iter() {
            for stage in Stage::ALL {
                if let Some(rec) = e.stage(stage).filter(|r| r.count() > 0) {
                    out.push((
                        format!("{}={} {}", t.field, e.value, stage.name()),
                        rec.distribution(),
                    ));
                }
            }
        }
        if ranking.other_values > 0 {
            notes.push(format!(
                "{}: (other) holds {} values beyond the {} busiest{}",
                t.field,
                ranking.other_values,
                by.spec.limit,
                if ranking.busiest_exact {
                    ""
                } else {
                    " (not provably the busiest: raise --by-candidates)"
                }
            ));
        }
    }
    (out, notes)
}

pub fn render(frame: &mut Frame<'_>, area: Rect, rows: &[ByRow], notes: &[String], on: bool) {
    if !on {
        frame.render_widget(
            Paragraph::new("no --by: run with --by TAG[,TAG...] (e.g. --by 55 for symbols)")
                .block(ratatui::widgets::Block::bordered().title(" by ")),
            area,
        );
        return;
    }
    let table_rows = rows
        .iter()
        .map(|(label, d)| stage_row(label.clone(), d))
        .collect();
    let mut title = format!(" by value (--by): {} rows ", rows.len());
    for n in notes {
        title.push_str(&format!("· {n} "));
    }
    frame.render_widget(stage_table_wide(table_rows, "value stage", title, 34), area);
}
