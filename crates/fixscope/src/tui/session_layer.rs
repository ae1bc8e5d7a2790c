//! The Sessions view's lower half (#21): each session's FIX session layer — state, alarms
//! (red), HeartBtInt, last message age per side, counters, messages and 1 ms peak — and
//! `--by`'s busiest values' first-response figures. Rows are formatted once per summary.

use fixscope_core::correlate::Stage;
use fixscope_core::report::text::percentile_text;
use fixscope_core::report::{human_ns, SummaryReport};
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::widgets::{Block, Row, Table};
use ratatui::Frame;

/// The session-layer table's columns.
pub const HEADER: [&str; 11] = [
    "#",
    "sender->target",
    "state",
    "alarms",
    "hb",
    "last msg c/s",
    "logon/out",
    "hb/testreq",
    "resend/gapfill/reset",
    "possdup r/a  rej s/b/o/c  gaps",
    "msgs  peak/ms",
];

/// One session's row, and whether it is in alarm.
#[derive(Clone, Debug, PartialEq)]
pub struct LayerRow {
    pub cells: [String; 11],
    pub alarm: bool,
}

fn age(a: Option<u64>) -> String {
    a.map_or("-".into(), |a| human_ns(a as f64))
}

/// The rows of a summary's sessions.
pub fn rows(r: &SummaryReport<'_>) -> Vec<LayerRow> {
    let now_ns = r.span.end_ns;
    r.figures
        .sessions()
        .iter()
        .map(|s| {
            let h = &s.health;
            let c = &h.counters;
            let a = h.alarms(now_ns);
            let alarms = a.names();
            let [mc, ms] = h.last_message_age_ns(now_ns);
            let rate = h.rate.run();
            LayerRow {
                alarm: !alarms.is_empty(),
                cells: [
                    s.id.to_string(),
                    if s.sender_comp_id.is_empty() {
                        "?".into()
                    } else {
                        format!("{}->{}", s.sender_comp_id, s.target_comp_id)
                    },
                    if h.logged_on { "on" } else { "out" }.into(),
                    if alarms.is_empty() {
                        "-".into()
                    } else {
                        alarms.join(",")
                    },
                    h.heart_bt_int_s.map_or("-".into(), |s| format!("{s}s")),
                    format!("{}/{}", age(mc), age(ms)),
                    format!("{}/{}", c.logons, c.logouts),
                    format!("{}/{}", c.heartbeats, c.test_requests),
                    format!(
                        "{}/{}/{}",
                        c.resend_requests, c.gap_fills, c.sequence_resets
                    ),
                    format!(
                        "{}/{}  {}/{}/{}/{}  {}",
                        c.possdup_requests,
                        c.possdup_responses,
                        c.session_rejects,
                        c.business_rejects,
                        c.order_rejects,
                        c.cancel_rejects,
                        c.sequence_gaps
                    ),
                    format!("{}  {}", rate.messages, rate.peak_1ms),
                ],
            }
        })
        .collect()
}

/// `--by`'s values as rows: tag, value, count, p50, p99, max of first_response.
pub fn by_rows(r: &SummaryReport<'_>) -> Vec<[String; 6]> {
    let Some(by) = r.figures.by() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for t in &by.tags {
        for e in t.ranked().iter() {
            let d = e
                .stage(Stage::FirstResponse)
                .map(|r| r.distribution())
                .unwrap_or_default();
            out.push([
                t.field.to_string(),
                e.value.clone(),
                d.count.to_string(),
                percentile_text(&d, 0),
                percentile_text(&d, 2),
                if d.count == 0 {
                    "-".into()
                } else {
                    human_ns(d.max_ns as f64)
                },
            ]);
        }
    }
    out
}

pub fn render(frame: &mut Frame<'_>, area: Rect, layer: &[LayerRow], by: &[[String; 6]]) {
    let header_style = Style::new().add_modifier(Modifier::BOLD);
    let rows: Vec<Row<'_>> = layer
        .iter()
        .map(|r| {
            let row = Row::new(r.cells.clone());
            if r.alarm {
                row.style(Style::new().fg(Color::Red))
            } else {
                row
            }
        })
        .chain(by.iter().map(|b| {
            Row::new([
                String::new(),
                format!("--by {} = {}", b[0], b[1]),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                format!("n {}", b[2]),
                format!("p50 {}", b[3]),
                format!("p99 {}", b[4]),
                format!("max {}", b[5]),
                String::new(),
            ])
        }))
        .collect();
    let widths = [
        Constraint::Length(5),
        Constraint::Length(24),
        Constraint::Length(5),
        Constraint::Length(12),
        Constraint::Length(5),
        Constraint::Length(19),
        Constraint::Length(9),
        Constraint::Length(11),
        Constraint::Length(20),
        Constraint::Length(30),
        Constraint::Length(14),
    ];
    frame.render_widget(
        Table::new(rows, widths)
            .header(Row::new(HEADER).style(header_style))
            .block(Block::bordered().title(" session layer (FIX) and --by (first_response) ")),
        area,
    );
}
