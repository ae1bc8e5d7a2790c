//! The panels of each view: the cumulative table, the per-interval charts, the histogram,
//! the sessions, the slowest orders and the counters. Figures are formatted as in the text
//! summary (`human_ns`, `-` without data, `>X` for a percentile above the range `-x`).

use fixscope_core::correlate::Stage;
use fixscope_core::report::text::{
    session_columns, session_tls_column, SESSION_HEADER, SESSION_TLS_HEADER,
};
use fixscope_core::report::{human_ns, StageSummary};
use fixscope_core::stats::PERCENTILES;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Cell, Chart, Dataset, GraphType, Paragraph, Row, Table};
use ratatui::Frame;

use super::alarms::is_alarm;
use super::model::{IntervalPoint, Model, StagePoint, CHART_PERCENTILES};
use super::slowest::SlowRow;
use super::stage_table::{percentile_text_cell, stage_row, stage_table};
use super::style::{ALARM, HEADER};

/// Colours of p50, p99, p99.9 and max in the charts.
const LINE_COLOURS: [Color; 4] = [Color::Green, Color::Yellow, Color::Magenta, Color::Red];

pub(super) fn waiting(frame: &mut Frame<'_>, area: Rect, title: &str, what: &str) {
    frame.render_widget(
        Paragraph::new(what.to_string()).block(Block::bordered().title(format!(" {title} "))),
        area,
    );
}

/// The cumulative table and the first-response chart.
pub fn summary(frame: &mut Frame<'_>, area: Rect, model: &Model) {
    let [table, chart] = Layout::vertical([Constraint::Length(8), Constraint::Min(6)]).areas(area);
    match &model.summary {
        None => waiting(frame, table, "cumulative", "waiting for the first summary"),
        Some(s) => {
            let mut title = format!(
                " cumulative: {} .. {} ({:.3}s) ",
                s.span.start_utc(),
                s.span.end_utc(),
                s.duration_ns as f64 / 1e9
            );
            let over: Vec<String> = s
                .stages
                .iter()
                .filter(|st| st.dist.over_range > 0)
                .map(|st| format!("{} {}", st.stage.name(), st.dist.over_range))
                .collect();
            if !over.is_empty() {
                title.push_str(&format!(
                    "- above the histogram range of {} (raise -x): {} ",
                    human_ns(s.stages[0].dist.range_ns as f64),
                    over.join(", ")
                ));
            }
            let rows = s
                .stages
                .iter()
                .chain(&s.breakdown)
                .map(|st: &StageSummary| stage_row(st.stage.name().to_string(), &st.dist))
                .collect();
            frame.render_widget(stage_table(rows, "stage", title), table);
        }
    }
    stage_chart(frame, chart, model, Stage::FirstResponse);
}

/// All four stages over time.
pub fn stages(frame: &mut Frame<'_>, area: Rect, model: &Model) {
    let [top, bottom] =
        Layout::vertical([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(area);
    let [a, b] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(top);
    let [c, d] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(bottom);
    for (stage, area) in Stage::ALL.into_iter().zip([a, b, c, d]) {
        stage_chart(frame, area, model, stage);
    }
}

/// A point's percentile as text: `>X` above range, `-` without data.
fn point_text(p: &StagePoint, v: Option<u64>) -> String {
    match (p.count, v) {
        (0, _) => "-".into(),
        (_, Some(v)) => human_ns(v as f64),
        (_, None) => format!(">{}", human_ns(p.range_ns as f64)),
    }
}

/// p50, p99, p99.9 and max of one stage per interval, on a log scale. A percentile above
/// the histogram's range is drawn at the range's top (the least it can be) and its value
/// reads `>X` in the title.
fn stage_chart(frame: &mut Frame<'_>, area: Rect, model: &Model, stage: Stage) {
    let i = stage.index();
    let Some(last) = model.latest() else {
        waiting(frame, area, stage.name(), "waiting for the first interval");
        return;
    };
    let lp = &last.stages[i];
    let mut title = vec![Span::styled(format!(" {} ", stage.name()), HEADER)];
    let labels = CHART_PERCENTILES.map(|p| PERCENTILES[p].1);
    for (k, label) in labels.iter().enumerate() {
        title.push(Span::styled(
            format!("{label} {} ", point_text(lp, lp.percentiles_ns[k])),
            Style::default().fg(LINE_COLOURS[k]),
        ));
    }
    title.push(Span::styled(
        format!(
            "max {} ",
            if lp.count == 0 {
                "-".to_string()
            } else {
                human_ns(lp.max_ns as f64)
            }
        ),
        Style::default().fg(LINE_COLOURS[3]),
    ));
    title.push(Span::raw(format!("n {} ", lp.count)));

    let end_ns = last.span.end_ns;
    let x_of = |p: &IntervalPoint| -(end_ns.saturating_sub(p.span.end_ns) as f64) / 1e9;
    let log = |ns: u64| (ns.max(1) as f64).log10();
    let mut series: [Vec<(f64, f64)>; 4] = Default::default();
    for p in &model.history {
        let s = &p.stages[i];
        if s.count == 0 {
            continue;
        }
        let x = x_of(p);
        for (k, v) in s.percentiles_ns.iter().enumerate() {
            series[k].push((x, log(v.unwrap_or(s.range_ns))));
        }
        series[3].push((x, log(s.max_ns)));
    }
    let (mut lo, mut hi) = (f64::MAX, f64::MIN);
    for &(_, y) in series.iter().flatten() {
        lo = lo.min(y);
        hi = hi.max(y);
    }
    if lo > hi {
        (lo, hi) = (3.0, 6.0);
    }
    let (lo, hi) = (lo.floor(), hi.ceil().max(lo.floor() + 1.0));
    let first_x = model.history.front().map_or(0.0, x_of).min(-1.0);
    let names = ["p50", "p99", "p99.9", "max"];
    let datasets = series
        .iter()
        .enumerate()
        .map(|(k, data)| {
            Dataset::default()
                .name(names[k])
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::default().fg(LINE_COLOURS[k]))
                .data(data)
        })
        .collect();
    let y_labels: Vec<String> = (lo as i32..=hi as i32)
        .map(|e| human_ns(10f64.powi(e)))
        .collect();
    let chart = Chart::new(datasets)
        .block(Block::bordered().title(Line::from(title)))
        .x_axis(
            Axis::default()
                .bounds([first_x, 0.0])
                .labels([format!("{first_x:.0}s"), "now".to_string()]),
        )
        .y_axis(Axis::default().bounds([lo, hi]).labels(y_labels));
    frame.render_widget(chart, area);
}

/// The first-response histogram (cumulative) and the table by request type.
pub fn histogram(frame: &mut Frame<'_>, area: Rect, model: &Model) {
    let Some(s) = &model.summary else {
        waiting(frame, area, "histogram", "waiting for the first summary");
        return;
    };
    let by_type_rows: Vec<Row<'_>> =
        s.by_request_type
            .iter()
            .flat_map(|(t, stages)| {
                stages.iter().filter(|st| st.dist.count > 0).map(move |st| {
                    stage_row(format!("{} {}", t.msg_type(), st.stage.name()), &st.dist)
                })
            })
            .collect();
    let type_height = (by_type_rows.len() as u16 + 3).min(area.height / 2);
    let [hist_area, type_area] =
        Layout::vertical([Constraint::Min(5), Constraint::Length(type_height)]).areas(area);
    let stage = Stage::FirstResponse;
    let h = &s.histograms[stage.index()];
    let total: u64 = h.rows.iter().map(|r| r.count).sum::<u64>() + h.over_range;
    let peak = h
        .rows
        .iter()
        .map(|r| r.count)
        .max()
        .unwrap_or(0)
        .max(h.over_range)
        .max(1);
    // Room for the edges, the counts and the share beside the bar.
    let bar_width = hist_area.width.saturating_sub(50).max(10) as u64;
    let bar = |count: u64| "#".repeat((count * bar_width).div_ceil(peak) as usize);
    let share = |count: u64| count as f64 * 100.0 / total.max(1) as f64;
    let mut lines: Vec<Line<'_>> = h
        .rows
        .iter()
        .map(|r| {
            Line::raw(format!(
                "{:>9} - {:>9} |{:<w$}| {:>10} {:>6.2}%",
                human_ns(r.lo_ns),
                human_ns(r.hi_ns),
                bar(r.count),
                r.count,
                share(r.count),
                w = bar_width as usize
            ))
        })
        .collect();
    if h.over_range > 0 {
        lines.push(Line::styled(
            format!(
                "{:>9}   {:>9} |{:<w$}| {:>10} {:>6.2}%",
                format!(">{}", human_ns(h.range_ns as f64)),
                "(-x)",
                bar(h.over_range),
                h.over_range,
                share(h.over_range),
                w = bar_width as usize
            ),
            ALARM,
        ));
    }
    if lines.is_empty() {
        lines.push(Line::raw("no latency recorded"));
    }
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(format!(
            " histogram ({}, cumulative, {total} values) ",
            stage.name()
        ))),
        hist_area,
    );
    frame.render_widget(
        stage_table(by_type_rows, "type stage", " by request type ".to_string()),
        type_area,
    );
}

/// The per-session table (first response), in session order.
pub fn sessions(frame: &mut Frame<'_>, area: Rect, model: &Model) {
    let Some(s) = &model.summary else {
        waiting(frame, area, "sessions", "waiting for the first summary");
        return;
    };
    // `--tls-keylog`: a TLS column when a session was carried over TLS.
    let tls = s.sessions.iter().any(|s| s.tls.is_some());
    let rows: Vec<Row<'_>> = s
        .sessions
        .iter()
        .map(|session| {
            let cells = session_columns(session)
                .into_iter()
                .enumerate()
                .map(|(i, text)| match i {
                    5 | 6 => percentile_text_cell(text),
                    _ => Cell::from(text),
                });
            let tls_cell = tls.then(|| Cell::from(session_tls_column(session)));
            Row::new(cells.chain(tls_cell))
        })
        .collect();
    let mut title = format!(" sessions (first_response): {} ", s.sessions.len());
    if s.untracked_sessions > 0 {
        title.push_str(&format!(
            "(+{} more not broken down) ",
            s.untracked_sessions
        ));
    }
    let mut widths = vec![
        Constraint::Length(5),
        Constraint::Length(24),
        Constraint::Length(44),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Length(9),
    ];
    let mut header: Vec<&str> = SESSION_HEADER.to_vec();
    if tls {
        widths.push(Constraint::Length(36));
        header.push(SESSION_TLS_HEADER);
    }
    let header = Row::new(header).style(HEADER);
    let [top, bottom] =
        Layout::vertical([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(area);
    frame.render_widget(
        Table::new(rows, widths)
            .header(header)
            .block(Block::bordered().title(title)),
        top,
    );
    super::session_layer::render(frame, bottom, &s.session_layer, &s.by);
}

/// The slowest orders, as given (slowest first within each stage).
pub fn slowest(frame: &mut Frame<'_>, area: Rect, rows: &[SlowRow]) {
    let header = Row::new([
        "stage",
        "latency",
        "key",
        "sender->target",
        "client -> server",
        "request (UTC)",
        "response",
    ])
    .style(HEADER);
    let widths = [
        Constraint::Length(15),
        Constraint::Length(10),
        Constraint::Length(26),
        Constraint::Length(22),
        Constraint::Length(40),
        Constraint::Length(31),
        Constraint::Min(10),
    ];
    let block = Block::bordered().title(" slowest orders ");
    if rows.is_empty() {
        frame.render_widget(
            Paragraph::new("no slow orders recorded yet").block(block),
            area,
        );
        return;
    }
    let body: Vec<Row<'_>> = rows
        .iter()
        .map(|r| {
            Row::new(vec![
                Cell::from(r.stage.name()),
                Cell::from(human_ns(r.latency_ns as f64)),
                Cell::from(r.key.clone()),
                Cell::from(r.session.clone()),
                Cell::from(r.addresses.clone()),
                Cell::from(r.request_utc.clone()),
                Cell::from(r.response.clone()),
            ])
        })
        .collect();
    frame.render_widget(Table::new(body, widths).header(header).block(block), area);
}

/// Every counter, pipeline and source; those that matter are red when not zero.
pub fn counters(frame: &mut Frame<'_>, area: Rect, model: &Model) {
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(area);
    let row = |name: &str, v: u64, alarm: bool| {
        let value = if alarm && v > 0 {
            Cell::from(Span::styled(v.to_string(), ALARM))
        } else {
            Cell::from(v.to_string())
        };
        Row::new(vec![Cell::from(name.to_string()), value])
    };
    let pipeline: Vec<Row<'_>> = model
        .counters
        .list()
        .iter()
        .map(|(n, v)| row(n, *v, is_alarm(n)))
        .collect();
    let source = model
        .summary
        .as_ref()
        .map_or(&model.interval_source, |s| &s.source);
    let source: Vec<Row<'_>> = source
        .iter()
        .map(|(n, v)| row(n, *v, is_alarm(n)))
        .collect();
    let widths = [Constraint::Length(32), Constraint::Min(12)];
    frame.render_widget(
        Table::new(pipeline, widths).block(Block::bordered().title(" pipeline counters ")),
        left,
    );
    frame.render_widget(
        Table::new(source, widths).block(Block::bordered().title(" source counters ")),
        right,
    );
}
