//! The screens of the terminal UI: which one is shown, and the frame around them (tabs,
//! status, counters that matter, footer, help). The panels themselves are in `panels`.

use std::time::Duration;

use fixscope_core::report::human_ns;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Tabs, Wrap};
use ratatui::Frame;

use super::alarms::{alarm, is_alarm};
use super::model::Model;
use super::panels;

/// The views TAB cycles through.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum View {
    #[default]
    Summary,
    Stages,
    Histogram,
    Sessions,
    /// `--by`'s values (#21).
    By,
    Slowest,
    Counters,
}

impl View {
    pub const ALL: [View; 7] = [
        View::Summary,
        View::Stages,
        View::Histogram,
        View::Sessions,
        View::By,
        View::Slowest,
        View::Counters,
    ];

    pub fn title(self) -> &'static str {
        match self {
            View::Summary => "summary",
            View::Stages => "stages",
            View::Histogram => "histogram",
            View::Sessions => "sessions",
            View::By => "by",
            View::Slowest => "slowest",
            View::Counters => "counters",
        }
    }

    fn index(self) -> usize {
        View::ALL.iter().position(|&v| v == self).unwrap_or(0)
    }

    pub fn next(self) -> View {
        View::ALL[(self.index() + 1) % View::ALL.len()]
    }

    pub fn previous(self) -> View {
        View::ALL[(self.index() + View::ALL.len() - 1) % View::ALL.len()]
    }
}

/// What the user chose to see, and what the screen says about itself.
#[derive(Debug, Default)]
pub struct Ui {
    pub view: View,
    pub help: bool,
    /// The last thing a key did (e.g. "statistics reset at ...").
    pub note: Option<String>,
    /// The CPU time the last redraw and the last cumulative summary took from the loop
    /// (shown, so the UI's price is never a guess).
    pub draw_cost: Duration,
    pub summary_cost: Duration,
}

/// The keys, as the help screen and the footer list them.
pub const HELP_LINES: [(&str, &str); 5] = [
    ("SPACE", "cumulative summary now (also to --json-file)"),
    ("r", "reset the statistics"),
    ("TAB / shift-TAB", "next / previous view"),
    ("?", "this help (any key closes it)"),
    ("q / ESC / Ctrl-C", "quit (the final summary is printed)"),
];

/// Draws the whole screen.
pub fn render(frame: &mut Frame<'_>, model: &Model, ui: &Ui) {
    let [tabs, status, body, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(3),
        Constraint::Min(5),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    render_tabs(frame, tabs, ui);
    render_status(frame, status, model);
    match ui.view {
        View::Summary => panels::summary(frame, body, model),
        View::Stages => panels::stages(frame, body, model),
        View::Histogram => panels::histogram(frame, body, model),
        View::Sessions => panels::sessions(frame, body, model),
        View::By => match &model.summary {
            Some(s) => super::by::render(frame, body, &s.by_values, &s.by_notes, s.by_on),
            None => panels::waiting(frame, body, "by", "waiting for the first summary"),
        },
        View::Slowest => panels::slowest(frame, body, &model.slowest),
        View::Counters => panels::counters(frame, body, model),
    }
    render_footer(frame, footer, ui);
    if ui.help {
        render_help(frame, body);
    }
}

fn render_tabs(frame: &mut Frame<'_>, area: Rect, ui: &Ui) {
    let [name, tabs] =
        Layout::horizontal([Constraint::Length(10), Constraint::Min(10)]).areas(area);
    frame.render_widget(
        Paragraph::new(Span::styled(
            "fixscope",
            Style::default().add_modifier(Modifier::BOLD),
        )),
        name,
    );
    let titles = View::ALL.map(View::title);
    frame.render_widget(
        Tabs::new(titles)
            .select(ui.view.index())
            .highlight_style(
                Style::default()
                    .fg(Color::Black)
                    .bg(Color::Cyan)
                    .add_modifier(Modifier::BOLD),
            )
            .divider("|"),
        tabs,
    );
}

fn render_status(frame: &mut Frame<'_>, area: Rect, model: &Model) {
    let c = &model.counters;
    let k = &c.correlation;
    let mut first = vec![Span::styled(
        model.title.clone(),
        Style::default().add_modifier(Modifier::BOLD),
    )];
    match model.latest() {
        Some(p) => first.push(Span::raw(format!(
            "  at {}  orders {:.0}/s  messages {:.0}/s",
            p.span.end_utc(),
            p.order_rate(),
            p.message_rate()
        ))),
        None => first.push(Span::raw("  waiting for the first interval")),
    }
    let mut second = vec![Span::raw(format!(
        "requests {}  matched {}  unanswered {}  ",
        k.requests, k.matched, c.unanswered_pending
    ))];
    for (name, v) in [
        ("timed out", k.timed_out),
        ("late", k.late),
        ("unmatched", k.unmatched_responses),
        ("gaps", c.reassembly.gaps),
        ("over range", c.over_range),
    ] {
        second.extend(alarm(name, v));
    }
    let mut third = Vec::new();
    for (name, v) in &model.interval_source {
        if is_alarm(name) {
            third.extend(alarm(name, *v));
        } else {
            third.push(Span::raw(format!("{name} {v}  ")));
        }
    }
    frame.render_widget(
        Paragraph::new(vec![
            Line::from(first),
            Line::from(second),
            Line::from(third),
        ]),
        area,
    );
}

fn render_footer(frame: &mut Frame<'_>, area: Rect, ui: &Ui) {
    let mut spans = vec![Span::styled(
        "SPACE summary  r reset  TAB view  ? help  q quit",
        Style::default().fg(Color::Cyan),
    )];
    if let Some(note) = &ui.note {
        spans.push(Span::raw("  | "));
        spans.push(Span::styled(
            note.clone(),
            Style::default().add_modifier(Modifier::BOLD),
        ));
    }
    spans.push(Span::styled(
        format!(
            "  | cpu: draw {}  summary {}",
            human_ns(ui.draw_cost.as_nanos() as f64),
            human_ns(ui.summary_cost.as_nanos() as f64)
        ),
        Style::default().fg(Color::DarkGray),
    ));
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn render_help(frame: &mut Frame<'_>, body: Rect) {
    let width = body.width.min(76);
    let height = body.height.min(14);
    let area = Rect {
        x: body.x + (body.width - width) / 2,
        y: body.y + (body.height - height) / 2,
        width,
        height,
    };
    let mut lines: Vec<Line<'_>> = HELP_LINES
        .iter()
        .map(|(k, what)| {
            Line::from(vec![
                Span::styled(
                    format!("{k:>16}  "),
                    Style::default().add_modifier(Modifier::BOLD),
                ),
                Span::raw(*what),
            ])
        })
        .collect();
    lines.push(Line::raw(""));
    lines.push(Line::raw(
        "A percentile shown >X lies above the histogram's range (-x): its value is \
         unknown but at least X. Counters in red are not zero.",
    ));
    frame.render_widget(Clear, area);
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(Block::bordered().title(" help ")),
        area,
    );
}
