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

/// Pipeline counters that mean figures are missing or late: highlighted when not zero.
pub const ALARM_COUNTERS: [&str; 11] = [
    "timed_out",
    "late",
    "unmatched_responses",
    "tcp_gaps",
    "over_range",
    "unanswered_evicted",
    "shed_connections",
    "bad_checksum",
    "bad_body_length",
    "time_reversed",
    "response_before_request",
];

/// Source counters worth an alarm when not zero (the kernel dropping records loses data).
pub fn is_source_alarm(name: &str) -> bool {
    name.contains("drop") || name.contains("malformed") || name.contains("load_errors")
}
