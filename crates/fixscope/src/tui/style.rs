//! The styles the panels share: how an alarm and a table header look.

use ratatui::style::{Color, Modifier, Style};

/// A figure that means data is missing or wrong: white on red, bold.
pub const ALARM: Style = Style::new()
    .fg(Color::White)
    .bg(Color::Red)
    .add_modifier(Modifier::BOLD);
/// A table's header row.
pub const HEADER: Style = Style::new().add_modifier(Modifier::BOLD);
