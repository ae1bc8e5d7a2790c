//! The text report a person reads in one screen (#35): one line per interval, and a summary
//! of the run line, the request accounting, the stage table, the tables that have more
//! than one row, the slowest first responses, and the counters that are not zero and
//! matter — alarms first. Everything else is one flag away (`--full`, `--counters all`)
//! or in the JSON, HTML and TUI, which keep every field.

use std::io::{self, Write};

use super::counter_kinds::{counter_kind, is_level, CounterKind};
use super::rows::{write_stage_header, write_stage_row};
use super::text_parts::{
    write_accounting, write_run_line, write_session_rows, write_slowest_orders,
};
use super::{human_ns, IntervalReport, SessionSummary, StageSummary, SummaryReport};
use fixscope_model::source::Counter;
use fixscope_orders::correlate::Stage;

/// Slowest orders the brief summary lists (of `first_response`).
pub const BRIEF_SLOWEST: usize = 5;
/// Sessions the brief summary lists (the slowest p99 first when there are more).
pub const BRIEF_SESSIONS: usize = 10;
/// Width the brief summary wraps its counter lines at.
const COUNTER_LINE_WIDTH: usize = 110;

/// How alarm values are marked: ANSI red on a terminal, plain in a file or pipe.
#[derive(Clone, Copy, Debug, Default)]
pub struct Paint {
    pub color: bool,
}

impl Paint {
    fn alarm(self, text: &str) -> String {
        if self.color {
            format!("\x1b[1;31m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
}

/// One interval in one line: `first_response` in the seed tool's shape (count, rate,
/// MIN/AVG/MAX) with its p50 and p99, then the alarms the interval added (`name +N`).
/// `previous_source` holds the source's counters at the previous interval (kept by the
/// reporter) so the source's drops are said as the interval's own.
pub fn write_interval_line(
    out: &mut impl Write,
    r: &IntervalReport<'_>,
    previous_source: &[Counter],
    paint: Paint,
) -> io::Result<()> {
    let s = &r.stages[Stage::FirstResponse.index()];
    write!(out, "--- {} {:>8.3}s  ", r.span.end_utc(), r.span.seconds())?;
    if s.count == 0 {
        write!(out, "{:<14} {:>8}", s.stage.name(), "-")?;
    } else {
        write!(
            out,
            "{:<14} {:>8} {:>9.0}/s  MIN {:>8}  AVG {:>8}  MAX {:>8}  p50 {:>8}  p99 {:>8}",
            s.stage.name(),
            s.count,
            s.rate_per_s,
            human_ns(s.min_ns as f64),
            human_ns(s.mean_ns),
            human_ns(s.max_ns as f64),
            interval_percentile(s.percentiles_ns[0], s.count),
            interval_percentile(s.percentiles_ns[2], s.count),
        )?;
    }
    let source_delta = r.source.iter().map(|(name, now)| {
        let then = previous_source
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0, |(_, v)| *v);
        (name.clone(), now.saturating_sub(then))
    });
    let alarms: Vec<String> = r
        .delta
        .list()
        .into_iter()
        .chain(source_delta)
        .filter(|(name, v)| *v > 0 && counter_kind(name) == CounterKind::Alarm && !is_level(name))
        .map(|(name, v)| paint.alarm(&format!("{name} +{v}")))
        .collect();
    if !alarms.is_empty() {
        write!(out, "  {}", alarms.join("  "))?;
    }
    writeln!(out)
}

fn interval_percentile(v: Option<u64>, count: u64) -> String {
    match (count, v) {
        (0, _) => "-".into(),
        (_, Some(v)) => human_ns(v as f64),
        (_, None) => "over -x".into(),
    }
}

/// The summary in one screen.
pub fn write_summary(
    out: &mut impl Write,
    r: &SummaryReport<'_>,
    all_counters: bool,
    paint: Paint,
) -> io::Result<()> {
    write_run_line(out, r)?;
    write_accounting(out, &r.counters)?;
    if let Some(layer) = r.figures.session_layer_figures(r.span.end_ns) {
        super::session::write_brief(out, &layer)?;
    }
    let merged = ack_is_first_response(r);
    write_stage_header(out, "stage")?;
    for s in r.all_stages() {
        if !(merged && s.stage == Stage::Ack) {
            super::points::write_row(out, r.figures.clock, s.stage, &s.dist)?;
        }
    }
    if merged {
        writeln!(
            out,
            "(ack: the same figures as first_response — every order's first response was its ack)"
        )?;
    }
    if let Some(links) = r.figures.links {
        super::hops::write_links(out, links, &r.counters)?;
    }
    if let Some(clock) = r.figures.clock {
        super::points::write_clock(out, clock)?;
    }
    if r.by_request_type.len() > 1 {
        writeln!(out, "\nby request type:")?;
        write_stage_header(out, "type/stage")?;
        for (t, stages) in &r.by_request_type {
            let same = same_figures(
                &stages[Stage::FirstResponse.index()],
                &stages[Stage::Ack.index()],
            );
            for s in stages.iter().filter(|s| s.dist.count > 0) {
                if !(same && s.stage == Stage::Ack) {
                    write_stage_row(
                        out,
                        &format!("{} {}", t.msg_type(), s.stage.name()),
                        &s.dist,
                    )?;
                }
            }
        }
    }
    if r.sessions.len() > 1 || r.untracked_sessions > 0 {
        write_sessions(out, &r.sessions, r.untracked_sessions)?;
    }
    if let Some(by) = r.figures.by() {
        super::by::write_by(out, by)?;
    }
    super::feeds::write_feeds(out, &r.feeds)?;
    let slowest = r.slowest[Stage::FirstResponse.index()];
    if !slowest.is_empty() {
        let shown = slowest.len().min(BRIEF_SLOWEST);
        writeln!(
            out,
            "\nslowest first_response ({shown} of the run's slowest; every stage's: --full):"
        )?;
        write_slowest_orders(out, &slowest[..shown], r.span.unix_offset_ns)?;
    }
    write_counters(out, r, all_counters, paint)?;
    writeln!(
        out,
        "more: --full (every stage's slowest orders, every counter, the histogram), --counters all, --json, --html FILE"
    )?;
    out.flush()
}

/// Whether `ack` is `first_response` over again: the same distribution, histogram and
/// slowest orders — as when every order's first response was its ack.
fn ack_is_first_response(r: &SummaryReport<'_>) -> bool {
    let (f, a) = (Stage::FirstResponse.index(), Stage::Ack.index());
    same_figures(&r.stages[f], &r.stages[a])
        && r.histograms[f] == r.histograms[a]
        && r.slowest[f].len() == r.slowest[a].len()
        && r.slowest[f].iter().zip(r.slowest[a]).all(|(x, y)| {
            (x.key.as_str(), x.session, x.request_ts_ns, x.response_ts_ns)
                == (y.key.as_str(), y.session, y.request_ts_ns, y.response_ts_ns)
        })
}

fn same_figures(first: &StageSummary, ack: &StageSummary) -> bool {
    first.dist.count > 0 && first.dist == ack.dist
}

/// The per-session table, at most [`BRIEF_SESSIONS`] rows: the slowest p99 first when
/// there are more sessions than that.
fn write_sessions(
    out: &mut impl Write,
    sessions: &[SessionSummary],
    untracked: u64,
) -> io::Result<()> {
    let mut shown: Vec<&SessionSummary> = sessions.iter().collect();
    let capped = shown.len() > BRIEF_SESSIONS;
    if capped {
        // Unknown p99 (above -x) sorts first: it is the slowest.
        shown.sort_by_key(|s| {
            std::cmp::Reverse((
                s.first_response.count > 0 && s.first_response.percentiles_ns[2].is_none(),
                s.first_response.percentiles_ns[2],
            ))
        });
        shown.truncate(BRIEF_SESSIONS);
        writeln!(
            out,
            "\nsessions (first_response; the {BRIEF_SESSIONS} of {} with the slowest p99, all: --full):",
            sessions.len()
        )?;
    } else {
        writeln!(out, "\nsessions (first_response):")?;
    }
    write_session_rows(out, &shown, untracked)
}

/// Alarms (all of them, `none` when every one is 0), then the notable counters that are
/// not zero; `--counters all` adds the full list.
fn write_counters(
    out: &mut impl Write,
    r: &SummaryReport<'_>,
    all_counters: bool,
    paint: Paint,
) -> io::Result<()> {
    let all: Vec<Counter> = r
        .counters
        .list()
        .into_iter()
        .chain(r.source.iter().cloned())
        .collect();
    let of_kind = |kind: CounterKind| -> Vec<&Counter> {
        all.iter()
            .filter(|(name, v)| *v > 0 && counter_kind(name) == kind)
            .collect()
    };
    let alarms = of_kind(CounterKind::Alarm);
    writeln!(out)?;
    if alarms.is_empty() {
        writeln!(out, "alarms: none")?;
    } else {
        let items: Vec<String> = alarms
            .iter()
            .map(|(name, v)| paint.alarm(&format!("{name} {v}")))
            .collect();
        write_wrapped(out, "alarms:", &items)?;
    }
    let notable: Vec<String> = of_kind(CounterKind::Notable)
        .iter()
        .map(|(name, v)| format!("{name} {v}"))
        .collect();
    if !notable.is_empty() {
        write_wrapped(out, "notable:", &notable)?;
    }
    if all_counters {
        writeln!(out, "\ncounters:")?;
        for (name, v) in &all {
            writeln!(out, "  {name:<30} {v}")?;
        }
    }
    Ok(())
}

/// `label item  item  item`, wrapped so no line is much wider than a terminal; wrapped
/// lines are indented under the first item.
fn write_wrapped(out: &mut impl Write, label: &str, items: &[String]) -> io::Result<()> {
    let mut line = label.to_string();
    for (i, item) in items.iter().enumerate() {
        let mut sep = if i == 0 { " " } else { "  " };
        if i > 0 && visible_len(&line) + sep.len() + visible_len(item) > COUNTER_LINE_WIDTH {
            writeln!(out, "{line}")?;
            line = " ".repeat(label.len());
            sep = " ";
        }
        line.push_str(sep);
        line.push_str(item);
    }
    writeln!(out, "{line}")
}

/// Characters a terminal shows of `s` (ANSI colour codes take none).
fn visible_len(s: &str) -> usize {
    let mut n = 0;
    let mut in_escape = false;
    for c in s.chars() {
        match (in_escape, c) {
            (false, '\x1b') => in_escape = true,
            (true, 'm') => in_escape = false,
            (true, _) => {}
            (false, _) => n += 1,
        }
    }
    n
}
