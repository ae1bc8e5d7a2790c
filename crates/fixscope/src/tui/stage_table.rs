//! The latency tables (one stage, or one value's stage, per row) the summary, histogram
//! and `by` views show, with figures formatted as in the text summary.
//!
//! Apart from the panels so the `by` view builds the same rows without depending on them.

use fixscope_core::report::human_ns;
use fixscope_core::report::text::percentile_text;
use fixscope_core::stats::{Distribution, PERCENTILES};
use ratatui::layout::Constraint;
use ratatui::text::Span;
use ratatui::widgets::{Block, Cell, Row, Table};

use super::style::{ALARM, HEADER};

/// A percentile cell: red when its rank is above the histogram's range.
fn percentile_cell(d: &Distribution, i: usize) -> Cell<'static> {
    percentile_text_cell(percentile_text(d, i))
}

/// A [`percentile_text`] cell: in alarm colour when above the histogram's range (`>…`).
pub(super) fn percentile_text_cell(text: String) -> Cell<'static> {
    if text.starts_with('>') {
        Cell::from(Span::styled(text, ALARM))
    } else {
        Cell::from(text)
    }
}

/// One latency row: `d` named `name` (count only when it has no data).
pub(super) fn stage_row(name: String, d: &Distribution) -> Row<'static> {
    let mut cells = vec![Cell::from(name), Cell::from(d.count.to_string())];
    if d.count == 0 {
        return Row::new(cells);
    }
    cells.push(Cell::from(human_ns(d.min_ns as f64)));
    cells.push(Cell::from(human_ns(d.mean_ns)));
    cells.extend((0..PERCENTILES.len()).map(|i| percentile_cell(d, i)));
    cells.push(Cell::from(human_ns(d.max_ns as f64)));
    Row::new(cells)
}

/// A latency table with one stage per row, its first column named `first`.
pub(super) fn stage_table<'a>(rows: Vec<Row<'a>>, first: &'a str, title: String) -> Table<'a> {
    stage_table_wide(rows, first, title, 18)
}

/// [`stage_table`] with a first column `first_width` wide.
pub(super) fn stage_table_wide<'a>(
    rows: Vec<Row<'a>>,
    first: &'a str,
    title: String,
    first_width: u16,
) -> Table<'a> {
    let mut header = vec![first, "count", "min", "mean"];
    header.extend(PERCENTILES.iter().map(|(_, label, _)| *label));
    header.push("max");
    let mut widths = vec![Constraint::Length(first_width), Constraint::Length(10)];
    widths.extend([Constraint::Length(9); 9]);
    Table::new(rows, widths)
        .header(Row::new(header).style(HEADER))
        .block(Block::bordered().title(title))
}
