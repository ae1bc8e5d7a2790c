//! Human-readable reports. By default the brief report of [`super::text_brief`] (one
//! line per interval, a summary in one screen); with `--full` ([`TextOptions::full`]) the
//! full one written here: every stage per interval, the cumulative table, the per-type and
//! per-session breakdowns, the session layer, every stage's slowest orders, every counter
//! and an ASCII histogram.

use std::io::{self, Write};

use hdrhistogram::Histogram;

pub use super::rows::percentile_text;
use super::rows::{write_stage_header, write_stage_row};
use super::text_brief::{self, Paint};
pub use super::text_parts::{
    session_columns, session_tls_column, SESSION_HEADER, SESSION_TLS_HEADER,
};
use super::text_parts::{write_accounting, write_run_line, write_session_rows, write_slowest_rows};
use super::{
    human_ns, Counters, IntervalReport, Reporter, SessionSummary, StageSummary, SummaryReport,
};
use fixscope_figures::stats::Distribution;
use fixscope_model::source::Counter;
use fixscope_orders::correlate::Stage;
use fixscope_orders::slowest::SlowOrder;

/// How much the text report shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TextOptions {
    /// `--full`: the full report (every stage per interval, every stage's slowest orders,
    /// every counter, the session layer's table, the histogram).
    pub full: bool,
    /// `--counters all`: every counter in the brief summary too.
    pub all_counters: bool,
    /// Alarms in red (stdout is a terminal and `NO_COLOR` is not set).
    pub color: bool,
}

/// Writes text reports to any `Write`.
pub struct TextReporter<W: Write> {
    out: W,
    options: TextOptions,
    /// Which stage the ASCII histogram shows.
    histogram_stage: Stage,
    histogram_rows: usize,
    /// The source's counters at the last interval: the brief line says the interval's own.
    previous_source: Vec<Counter>,
}

impl<W: Write> TextReporter<W> {
    /// The brief report (the default).
    pub fn new(out: W) -> Self {
        Self::with_options(out, TextOptions::default())
    }

    pub fn with_options(out: W, options: TextOptions) -> Self {
        TextReporter {
            out,
            options,
            histogram_stage: Stage::FirstResponse,
            histogram_rows: 20,
            previous_source: Vec::new(),
        }
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

impl<W: Write> Reporter for TextReporter<W> {
    fn interval(&mut self, r: &IntervalReport<'_>) -> io::Result<()> {
        if !self.options.full {
            let paint = Paint {
                color: self.options.color,
            };
            text_brief::write_interval_line(&mut self.out, r, &self.previous_source, paint)?;
            self.previous_source = r.source.to_vec();
            return self.out.flush();
        }
        let c = &r.counters;
        writeln!(
            self.out,
            "--- {} {:>8.3}s  msgs {}  req {}  resp {}  matched {}  unmatched {}  unanswered {}  timed-out {} (+{})  late {} (+{})  gaps {}  peak/1ms {}",
            r.span.end_utc(),
            r.span.seconds(),
            c.framing.messages,
            c.correlation.requests,
            c.correlation.responses,
            c.correlation.matched,
            c.correlation.unmatched_responses,
            c.unanswered_pending,
            c.correlation.timed_out,
            r.delta.correlation.timed_out,
            c.correlation.late,
            r.delta.correlation.late,
            c.reassembly.gaps,
            r.figures.layer().rate.interval().peak_1ms,
        )?;
        if let Some(name) = r.span.timestamp_source {
            writeln!(self.out, "    timestamps {name}")?;
        }
        if !r.source.is_empty() {
            let parts: Vec<String> = r.source.iter().map(|(k, v)| format!("{k} {v}")).collect();
            writeln!(self.out, "    {}", parts.join("  "))?;
        }
        for s in r.all_stages() {
            if s.count == 0 {
                writeln!(self.out, "  {:<15} {:>9}", s.stage.name(), "-")?;
                continue;
            }
            writeln!(
                self.out,
                "  {:<15} {:>9} {:>11.0}/s  MIN {:>9}  AVG {:>9}  MAX {:>9}",
                s.stage.name(),
                s.count,
                s.rate_per_s,
                human_ns(s.min_ns as f64),
                human_ns(s.mean_ns),
                human_ns(s.max_ns as f64),
            )?;
        }
        self.out.flush()
    }

    fn summary(&mut self, r: &SummaryReport<'_>) -> io::Result<()> {
        if !self.options.full {
            let paint = Paint {
                color: self.options.color,
            };
            return text_brief::write_summary(&mut self.out, r, self.options.all_counters, paint);
        }
        let out = &mut self.out;
        write_run_line(out, r)?;
        write_accounting(out, &r.counters)?;
        write_stage_header(out, "stage")?;
        for s in r.all_stages() {
            super::points::write_row(out, r.figures.clock, s.stage, &s.dist)?;
        }
        if let Some(links) = r.figures.links {
            super::hops::write_links(out, links, &r.counters)?;
        }
        if let Some(clock) = r.figures.clock {
            super::points::write_clock(out, clock)?;
        }
        if !r.by_request_type.is_empty() {
            writeln!(out, "\nby request type:")?;
            write_stage_header(out, "type/stage")?;
            for (t, stages) in &r.by_request_type {
                for s in stages.iter().filter(|s| s.dist.count > 0) {
                    write_stage_row(
                        out,
                        &format!("{} {}", t.msg_type(), s.stage.name()),
                        &s.dist,
                    )?;
                }
            }
        }
        if !r.sessions.is_empty() {
            writeln!(out, "\nsessions (first_response):")?;
            let all: Vec<&SessionSummary> = r.sessions.iter().collect();
            write_session_rows(out, &all, r.untracked_sessions)?;
        }
        if let Some(by) = r.figures.by() {
            super::by::write_by(out, by)?;
        }
        if let Some(layer) = r.figures.session_layer_figures(r.span.end_ns) {
            super::session::write_summary(out, &layer)?;
        }
        super::feeds::write_feeds(out, &r.feeds)?;
        write_slowest(out, &r.slowest, r.span.unix_offset_ns)?;
        write_counters(out, &r.counters, r.source)?;
        let stage = self.histogram_stage;
        let dist = &r.stages[stage.index()].dist;
        if dist.count > 0 {
            writeln!(out, "\nhistogram ({}):", stage.name())?;
            write_ascii_histogram(out, r.histograms[stage.index()], dist, self.histogram_rows)?;
        }
        if let Some(clock) = r.figures.clock {
            // The one-way stages' histograms, each value ± the clock's uncertainty.
            for stage in [Stage::OneWayFwd, Stage::OneWayRev] {
                let recorder = r.figures.cumulative(stage);
                let dist = recorder.distribution();
                if dist.count == 0 {
                    continue;
                }
                let points = clock.points_of(stage).unwrap_or_default().join("→");
                let u = human_ns(clock.uncertainty(stage).unwrap_or(0) as f64);
                if clock.withheld(stage, dist.percentiles_ns[0]).is_some() {
                    writeln!(
                        out,
                        "\nhistogram ({} {points}): withheld (±{u})",
                        stage.name()
                    )?;
                    continue;
                }
                writeln!(
                    out,
                    "\nhistogram ({} {points}, every value ±{u}):",
                    stage.name()
                )?;
                write_ascii_histogram(out, recorder.histogram(), &dist, self.histogram_rows)?;
            }
        }
        out.flush()
    }
}

/// The slowest orders per stage, with what an engineer needs to find them in engine logs.
fn write_slowest(
    out: &mut impl Write,
    slowest: &[&[SlowOrder]; 4],
    unix_offset_ns: i64,
) -> io::Result<()> {
    if slowest.iter().all(|l| l.is_empty()) {
        return Ok(());
    }
    writeln!(out, "\nslowest orders:")?;
    let all: Vec<&SlowOrder> = slowest.iter().flat_map(|l| l.iter()).collect();
    write_slowest_rows(out, &all, unix_offset_ns)
}

fn write_counters(out: &mut impl Write, c: &Counters, source: &[Counter]) -> io::Result<()> {
    writeln!(out, "\ncounters:")?;
    for (name, v) in c.list().iter().chain(source) {
        writeln!(out, "  {name:<30} {v}")?;
    }
    Ok(())
}

/// Draws the distribution as log-spaced rows between min and max.
fn write_ascii_histogram(
    out: &mut impl Write,
    hist: &Histogram<u64>,
    dist: &Distribution,
    rows: usize,
) -> io::Result<()> {
    const WIDTH: u64 = 50;
    let lo = (dist.min_ns.max(1)) as f64;
    let hi = (dist.max_ns.max(dist.min_ns + 1)) as f64;
    let ratio = (hi / lo).powf(1.0 / rows as f64);
    let mut counts = vec![0u64; rows];
    for v in hist.iter_recorded() {
        let value = (v.value_iterated_to() as f64).clamp(lo, hi);
        let row = ((value / lo).ln() / ratio.ln()).floor() as usize;
        counts[row.min(rows - 1)] += v.count_since_last_iteration();
    }
    let total: u64 = counts.iter().sum::<u64>().max(1);
    let peak = counts.iter().copied().max().unwrap_or(1).max(1);
    let mut edge = lo;
    for count in counts {
        let next = edge * ratio;
        let bar = (count * WIDTH).div_ceil(peak) as usize;
        writeln!(
            out,
            "  {:>9} - {:>9} |{:<50}| {:>10} {:>6.2}%",
            human_ns(edge),
            human_ns(next),
            "#".repeat(bar),
            count,
            count as f64 * 100.0 / total as f64
        )?;
        edge = next;
    }
    Ok(())
}

/// Summary of one stage as `count min/mean/p50/p99/max`, for compact displays.
pub fn stage_line(s: &StageSummary) -> String {
    let d = &s.dist;
    if d.count == 0 {
        return format!("{}: -", s.stage.name());
    }
    format!(
        "{}: n={} min={} avg={} p50={} p99={} max={}",
        s.stage.name(),
        d.count,
        human_ns(d.min_ns as f64),
        human_ns(d.mean_ns),
        percentile_text(d, 0),
        percentile_text(d, 2),
        human_ns(d.max_ns as f64)
    )
}
