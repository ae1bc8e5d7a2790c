//! The counters that matter: which ones are alarms when not zero, and how the status line
//! shows them. Both the status line (`view`) and the counters panel (`panels`) use them.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Span;

/// A counter that matters: red and bold when it is not zero.
pub fn alarm(name: &str, value: u64) -> Vec<Span<'static>> {
    let style = if value > 0 {
        Style::default()
            .fg(Color::White)
            .bg(Color::Red)
            .add_modifier(Modifier::BOLD)
    } else {
        Style::default().fg(Color::Green)
    };
    vec![
        Span::raw(format!("{name} ")),
        Span::styled(value.to_string(), style),
        Span::raw("  "),
    ]
}

/// Whether a non-zero counter is an alarm: one list for every output
/// ([`fixscope_core::report::counter_kinds`]).
pub use fixscope_core::report::counter_kinds::is_alarm;
