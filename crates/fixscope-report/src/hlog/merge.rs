//! Merging logs (several hosts, several days) per tag, optionally within a time window,
//! into the statistics a summary is built from (`fixscope report`).

use std::path::PathBuf;

use hdrhistogram::Histogram;
use serde_json::Value;

use super::format::{ByLine, IntervalFigures, RunSummary, SessionLine, TagKind};
use super::reader::{Entry, HlogError, LogReader};
use crate::report::{Counters, TimeSpan};
use fixscope_figures::stats::Stats;
use fixscope_model::source::Counter;
use fixscope_orders::correlate::{RequestType, Stage};
use fixscope_orders::recorder::LatencyRecorder;
use fixscope_orders::slowest::{SlowOrder, SlowestOrders};

/// Counters that say how things stand (not how many happened): a window takes their value
/// at its end instead of a difference.
const GAUGES: [&str; 3] = ["open_connections", "pending", "unanswered_pending"];

/// One end of a window, as HistogramLogProcessor's `-start/-end` (seconds from each log's
/// StartTime) or as a UNIX time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TimeBound {
    /// Seconds from the log's StartTime.
    Offset(f64),
    /// UNIX seconds.
    Unix(f64),
}

impl TimeBound {
    /// `90`, `1.5` (seconds from the start) or `2026-01-02T03:04:05Z` / `2026-01-02 03:04:05`
    /// (UTC).
    pub fn parse(s: &str) -> Result<TimeBound, String> {
        if let Ok(v) = s.parse::<f64>() {
            return if v.is_finite() && v >= 0.0 {
                Ok(TimeBound::Offset(v))
            } else {
                Err(format!("{s:?}: seconds from the start must be >= 0"))
            };
        }
        let t = humantime::parse_rfc3339_weak(s).map_err(|e| {
            format!("{s:?}: neither seconds from the start nor a UTC time like 2026-01-02T03:04:05Z ({e})")
        })?;
        let d = t
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|_| format!("{s:?}: before 1970"))?;
        Ok(TimeBound::Unix(d.as_secs_f64()))
    }

    /// The bound as UNIX seconds for a log starting at `start_time_s`.
    fn unix_s(self, start_time_s: f64) -> f64 {
        match self {
            TimeBound::Offset(o) => start_time_s + o,
            TimeBound::Unix(u) => u,
        }
    }
}

/// Which intervals count: those whose start lies in `[from, to]` (HistogramLogProcessor's
/// rule). Unbounded ends take everything.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Window {
    pub from: Option<TimeBound>,
    pub to: Option<TimeBound>,
}

impl Window {
    pub fn is_all(&self) -> bool {
        self.from.is_none() && self.to.is_none()
    }

    /// Whether an interval starting at `start_unix_s` counts, in a log whose StartTime is
    /// `log_start_s` (UNIX seconds).
    pub fn contains(&self, start_unix_s: f64, log_start_s: f64) -> bool {
        // Interval timestamps are written in ms: compare at that precision.
        let eps = 5e-4;
        self.from
            .is_none_or(|b| start_unix_s + eps >= b.unix_s(log_start_s))
            && self
                .to
                .is_none_or(|b| start_unix_s - eps <= b.unix_s(log_start_s))
    }
}

/// What the merged logs hold.
pub struct Merged {
    /// Cumulative recorders per stage and request type; no sessions.
    pub stats: Stats,
    /// The run's counters (summed over logs); `None` when a log has none (another tool's).
    pub counters: Option<Counters>,
    /// The source's counters: only when every log has a summary and no window is given.
    pub source: Vec<Counter>,
    /// The per-session table: only for one log with a summary and no window.
    pub sessions: Option<(Vec<SessionLine>, u64)>,
    /// UNIX ns from the earliest start to the latest end of what was merged.
    pub span: TimeSpan,
    /// Histogram lines merged (every tag).
    pub lines: u64,
    /// Histogram lines with a tag fixscope does not write, skipped.
    pub unknown_tags: u64,
    /// Logs whose last line was cut short (skipped).
    pub incomplete_last_lines: u64,
    /// Some lines had no exact figures (another tool's log): sum, min and max are the
    /// histogram's, within its precision.
    pub approximate: bool,
    /// Things a reader of the report should know (said on stderr by the CLI).
    pub notes: Vec<String>,
    /// No interval lies within the window (or the logs hold none): `span` holds no time.
    pub empty: bool,
    /// The earliest and latest interval starts of the logs, window or not (UNIX seconds):
    /// what a window that holds nothing missed.
    pub logs_starts: Option<(f64, f64)>,
    /// A run whose source was not read to its end (its summary says why): the first such.
    pub incomplete: Option<String>,
}

/// One tag's accumulation over logs; the range is settled at the end (the smallest of the
/// logs', so nothing counts as in range that some log had counted above it).
struct Acc {
    hist: Option<Histogram<u64>>,
    count: u64,
    sum_ns: u128,
    min_ns: u64,
    max_ns: u64,
    over_range: u64,
}

impl Acc {
    fn new() -> Self {
        Acc {
            hist: None,
            count: 0,
            sum_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            over_range: 0,
        }
    }

    fn add(&mut self, r: &LatencyRecorder, range_min: &mut u64) -> Result<(), String> {
        if r.count() == 0 {
            return Ok(());
        }
        *range_min = (*range_min).min(r.histogram().high());
        let hist = match &mut self.hist {
            Some(h) => h,
            None => {
                let mut h = Histogram::new_from(r.histogram());
                h.auto(true);
                self.hist.insert(h)
            }
        };
        hist.add(r.histogram()).map_err(|e| format!("{e:?}"))?;
        self.count += r.count();
        self.sum_ns += r.sum_ns();
        self.min_ns = self.min_ns.min(r.min_ns().unwrap_or(u64::MAX));
        self.max_ns = self.max_ns.max(r.max_ns());
        self.over_range += r.over_range();
        Ok(())
    }

    /// Adds another accumulation (the untagged lines of a log).
    fn merge(&mut self, other: Acc) -> Result<(), String> {
        let Some(h) = other.hist else {
            return Ok(());
        };
        match &mut self.hist {
            Some(mine) => mine.add(&h).map_err(|e| format!("{e:?}"))?,
            None => self.hist = Some(h),
        }
        self.count += other.count;
        self.sum_ns += other.sum_ns;
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
        self.over_range += other.over_range;
        Ok(())
    }

    /// The recorder at range `range_ns`: values above it become `over_range`.
    fn finish(self, range_ns: u64) -> Result<LatencyRecorder, String> {
        let mut in_range = LatencyRecorder::new(range_ns, 3).histogram().clone();
        if let Some(h) = &self.hist {
            for v in h.iter_recorded() {
                let value = h.lowest_equivalent(v.value_iterated_to());
                let n = v.count_at_value();
                // Above the range: stays counted (count - histogram = over_range).
                if value <= range_ns {
                    in_range.record_n(value, n).map_err(|e| format!("{e:?}"))?;
                }
            }
        }
        LatencyRecorder::from_parts(in_range, self.count, self.sum_ns, self.min_ns, self.max_ns)
            .ok_or_else(|| "merged figures do not add up".to_string())
    }
}

/// The slowest orders of the merged intervals: the top N of their union (a run's slowest
/// are the slowest of its intervals'). Times are kept as UNIX ns while merging (logs of
/// different hosts have different clocks) and put back on the logs' clock at the end when
/// they all share one, so one log read back gives the run's figures exactly.
struct SlowAcc {
    /// `fixscope report --slowest N`; else N is the largest the logs kept.
    fixed: Option<usize>,
    top: SlowestOrders,
    /// The clock offset of every interval merged, while they agree.
    offset: Option<i64>,
    mixed_clocks: bool,
    /// The largest N the logs kept.
    logs_n: usize,
}

impl SlowAcc {
    fn new(fixed: Option<usize>) -> Self {
        SlowAcc {
            fixed,
            top: SlowestOrders::new(fixed.unwrap_or(0)),
            offset: None,
            mixed_clocks: false,
            logs_n: 0,
        }
    }

    /// The orders of one `#fixscope-interval` line within the window.
    fn add(&mut self, f: &IntervalFigures) -> Result<(), String> {
        match self.offset {
            None => self.offset = Some(f.unix_offset_ns),
            Some(o) if o != f.unix_offset_ns => self.mixed_clocks = true,
            Some(_) => {}
        }
        self.logs_n = self.logs_n.max(f.slowest_n);
        if self.fixed.is_none() && f.slowest_n > self.top.capacity() {
            self.top = rebuilt(&mut self.top, f.slowest_n, |o| Some(o.clone()));
        }
        for line in &f.slowest {
            let mut o = line.to_order()?;
            o.request_ts_ns =
                shift(o.request_ts_ns, f.unix_offset_ns).ok_or("slow order before 1970")?;
            o.response_ts_ns =
                shift(o.response_ts_ns, f.unix_offset_ns).ok_or("slow order before 1970")?;
            self.top.offer_order(&o);
        }
        Ok(())
    }

    /// The merged lists and the clock offset they (and the report's span) are in.
    fn finish(mut self, span_unix: (u64, u64)) -> (SlowestOrders, i64) {
        let back = |ts: u64, o: i64| shift(ts, o.checked_neg()?);
        let offset = match self.offset {
            Some(o) if !self.mixed_clocks => o,
            _ => 0,
        };
        let fits = |ts: u64| back(ts, offset).is_some();
        self.top.refresh();
        let all_fit = fits(span_unix.0)
            && fits(span_unix.1)
            && Stage::EVERY.iter().all(|&s| {
                self.top
                    .cumulative(s)
                    .iter()
                    .all(|o| fits(o.request_ts_ns) && fits(o.response_ts_ns))
            });
        let offset = if all_fit { offset } else { 0 };
        let cap = self.top.capacity();
        let top = rebuilt(&mut self.top, cap, |o| {
            let mut o = o.clone();
            o.request_ts_ns = back(o.request_ts_ns, offset)?;
            o.response_ts_ns = back(o.response_ts_ns, offset)?;
            Some(o)
        });
        (top, offset)
    }
}

/// `top`'s orders in a list of `cap`, each through `map`.
fn rebuilt(
    top: &mut SlowestOrders,
    cap: usize,
    map: impl Fn(&SlowOrder) -> Option<SlowOrder>,
) -> SlowestOrders {
    top.refresh();
    let mut out = SlowestOrders::new(cap);
    for stage in Stage::EVERY {
        for o in top.cumulative(stage).iter().filter_map(&map) {
            out.offer_order(&o);
        }
    }
    out
}

/// `ts + offset` as u64, `None` outside it.
fn shift(ts: u64, offset: i64) -> Option<u64> {
    u64::try_from(i128::from(ts) + i128::from(offset)).ok()
}

/// Per log: what its counters were before the window and at its end.
#[derive(Default)]
struct LogCounters {
    before: Option<Counters>,
    last_in: Option<Counters>,
}

/// Merges `paths` within `window`; the slowest orders as many as the logs kept.
pub fn merge(paths: &[PathBuf], window: &Window) -> Result<Merged, HlogError> {
    merge_with(paths, window, None)
}

/// [`merge`], keeping `slowest` orders per stage when given (else the largest N of the logs).
pub fn merge_with(
    paths: &[PathBuf],
    window: &Window,
    slowest: Option<usize>,
) -> Result<Merged, HlogError> {
    let mut slow = SlowAcc::new(slowest);
    let mut stages: [Acc; Stage::COUNT] = std::array::from_fn(|_| Acc::new());
    let mut by_type: [[Acc; Stage::COUNT]; RequestType::COUNT] =
        std::array::from_fn(|_| std::array::from_fn(|_| Acc::new()));
    let mut range_min = u64::MAX;
    let mut header_range: Option<u64> = None;
    let mut counters: Option<Counters> = Some(Counters::default());
    let mut source: Option<Vec<Counter>> = Some(Vec::new());
    let mut summaries: Vec<RunSummary> = Vec::new();
    let mut span: Option<(u64, u64)> = None;
    // `--by` rows and their whole-run recorders by line tag (one log read whole only).
    let mut by_lines: Vec<ByLine> = Vec::new();
    let mut by_recs: Vec<(String, LatencyRecorder)> = Vec::new();
    // A log holds them at each summary (SPACE, periodic ones): the last summary's count.
    let mut by_of_an_earlier_summary = false;
    let widen = |span: &mut Option<(u64, u64)>, s: u64, e: u64| {
        *span = Some(span.map_or((s, e), |(a, b)| (a.min(s), b.max(e))));
    };
    let mut merged = Merged {
        stats: Stats::new(1),
        counters: None,
        source: Vec::new(),
        sessions: None,
        span: TimeSpan::default(),
        lines: 0,
        unknown_tags: 0,
        incomplete_last_lines: 0,
        approximate: false,
        notes: Vec::new(),
        empty: false,
        logs_starts: None,
        incomplete: None,
    };
    let seen_start = |logs_starts: &mut Option<(f64, f64)>, s: f64| {
        *logs_starts = Some(logs_starts.map_or((s, s), |(a, b)| (a.min(s), b.max(s))));
    };
    for path in paths {
        let mut reader = LogReader::open(path)?;
        let mut untagged = Acc::new();
        let mut tagged_first_response = false;
        let mut log_counters = LogCounters::default();
        let mut summary: Option<RunSummary> = None;
        let mut had_figures = false;
        let mut last_figures: Option<IntervalFigures> = None;
        // The span of this log's intervals in the window; a log read whole with a summary
        // spans the summary's window instead (the run's own, as it printed it: a live run's
        // is its capture's, which its intervals need not reach).
        let mut log_span: Option<(u64, u64)> = None;
        let line_error = |line: usize, what: String| HlogError::Line {
            path: path.clone(),
            line,
            what,
        };
        while let Some(entry) = reader.next() {
            match entry? {
                Entry::Header(h) => {
                    header_range = Some(header_range.map_or(h.range_ns, |r| r.min(h.range_ns)))
                }
                Entry::Figures(f) => {
                    had_figures = true;
                    let log_start = reader.start_time_s().unwrap_or(f.start_ns as f64 / 1e9);
                    let start_s = f.start_ns as f64 / 1e9;
                    seen_start(&mut merged.logs_starts, start_s);
                    if window.contains(start_s, log_start) {
                        log_counters.last_in = Some(f.counters);
                        widen(&mut log_span, f.start_ns, f.end_ns);
                        slow.add(&f).map_err(|w| line_error(reader.line(), w))?;
                    } else if log_counters.last_in.is_none()
                        && window.from.is_some_and(|b| start_s < b.unix_s(log_start))
                    {
                        log_counters.before = Some(f.counters);
                    }
                    last_figures = Some(f);
                }
                Entry::Summary(s) => {
                    summary = Some(s);
                    by_of_an_earlier_summary = true;
                }
                Entry::By(b) => {
                    if std::mem::take(&mut by_of_an_earlier_summary) {
                        by_lines.clear();
                        by_recs.clear();
                    }
                    by_lines.push(b);
                }
                Entry::StartTime(_) | Entry::BaseTime(_) => {}
                // The run's counters before this file (a log switched to at SIGHUP): they
                // are in the file before it.
                Entry::Continued(c) => log_counters.before = Some(c.counters),
                Entry::Interval(i)
                    if matches!(TagKind::parse(i.tag.as_deref()), Some(TagKind::ByValue(..))) =>
                {
                    // A `--by` value's whole run (not an interval: no window applies).
                    merged.lines += 1;
                    let r = i.recorder().map_err(|w| line_error(i.line, w))?;
                    by_recs.push((i.tag.unwrap_or_default(), r));
                }
                Entry::Interval(i) => {
                    let log_start = reader.start_time_s().unwrap_or(i.start_unix_s);
                    seen_start(&mut merged.logs_starts, i.start_unix_s);
                    if !window.contains(i.start_unix_s, log_start) {
                        continue;
                    }
                    let Some(kind) = TagKind::parse(i.tag.as_deref()) else {
                        merged.unknown_tags += 1;
                        continue;
                    };
                    if i.exact.is_none() && !i.histogram.is_empty() {
                        merged.approximate = true;
                    }
                    if last_figures.is_none() {
                        let s = (i.start_unix_s * 1e9) as u64;
                        widen(&mut log_span, s, s + (i.length_s * 1e9) as u64);
                    }
                    merged.lines += 1;
                    let r = i.recorder().map_err(|w| line_error(i.line, w))?;
                    let acc = match kind {
                        TagKind::Untagged => &mut untagged,
                        TagKind::Stage(s) => {
                            tagged_first_response |= s == Stage::FirstResponse;
                            &mut stages[s.index()]
                        }
                        TagKind::ByType(s, t) => &mut by_type[t.index()][s.index()],
                        TagKind::ByValue(..) => continue, // (above)
                    };
                    acc.add(&r, &mut range_min)
                        .map_err(|w| line_error(i.line, w))?;
                }
            }
        }
        if reader.incomplete_last_line() {
            merged.incomplete_last_lines += 1;
            merged.notes.push(format!(
                "{}: the last line was cut short (the writer was stopped mid-line); skipped",
                path.display()
            ));
        }
        // Tools without tags: the untagged lines are first_response.
        if !tagged_first_response {
            stages[Stage::FirstResponse.index()]
                .merge(untagged)
                .map_err(|w| line_error(0, w))?;
        }
        // Counters: the summary's when the whole log counts, else the window's difference.
        let log_total = match (&summary, window.is_all()) {
            (Some(s), true) => Some(window_counters(&s.counters, log_counters.before.as_ref())),
            _ => log_counters
                .last_in
                .map(|end| window_counters(&end, log_counters.before.as_ref())),
        };
        match (log_total, had_figures) {
            (Some(c), _) => {
                if let Some(total) = &mut counters {
                    *total = add_counters(total, &c);
                }
            }
            (None, true) => {} // nothing of this log in the window
            (None, false) => counters = None,
        }
        match (&summary, window.is_all()) {
            (Some(s), true) => {
                widen(&mut span, s.start_ns, s.end_ns);
                if let Some(src) = &mut source {
                    add_source(src, &s.source);
                }
            }
            _ => {
                if let Some((s, e)) = log_span {
                    widen(&mut span, s, e);
                }
                source = None;
            }
        }
        if let Some(s) = summary {
            if merged.incomplete.is_none() {
                merged.incomplete = s.incomplete.clone();
            }
            summaries.push(s);
        }
    }
    // The smallest range of all the logs (a value another log counted above its range
    // stays above range); a log of another tool states none: its histograms' own.
    let range_ns = match (header_range, range_min) {
        (Some(h), u64::MAX) => h,
        (Some(h), r) => h.min(r),
        (None, u64::MAX) => 10_000_000_000,
        (None, r) => r,
    };
    let finish = |acc: Acc| {
        acc.finish(range_ns).map_err(|what| HlogError::Line {
            path: paths.first().cloned().unwrap_or_default(),
            line: 0,
            what,
        })
    };
    let mut stage_recs = Vec::new();
    for acc in stages {
        stage_recs.push(finish(acc)?);
    }
    let mut type_recs = Vec::new();
    for per_type in by_type {
        let mut row = Vec::new();
        for acc in per_type {
            row.push(finish(acc)?);
        }
        type_recs.push(row);
    }
    let stage_recs: [LatencyRecorder; Stage::COUNT] = take_array(stage_recs);
    let type_recs: [[LatencyRecorder; Stage::COUNT]; RequestType::COUNT] =
        take_array(type_recs.into_iter().map(take_array).collect());
    if window.is_all() && summaries.len() == paths.len() {
        let expected = summaries.iter().fold([0u64; 4], |mut acc, s| {
            for (a, c) in acc.iter_mut().zip(s.stage_counts) {
                *a += c;
            }
            acc
        });
        for stage in Stage::ALL {
            let got = stage_recs[stage.index()].count();
            if got != expected[stage.index()] {
                merged.notes.push(format!(
                    "{}: the intervals hold {got} latencies, the runs' summaries {} (statistics reset with `r`, or a run without interval reports)",
                    stage.name(),
                    expected[stage.index()]
                ));
            }
        }
    }
    // The per-session table and the session layer: as the run reported them, for one log
    // read whole (a window or several runs have no such figures).
    let mut layer = None;
    if paths.len() == 1 && window.is_all() {
        merged.sessions = summaries.pop().map(|s| {
            layer = s.session_layer.map(|l| *l);
            (s.sessions, s.untracked_sessions)
        });
    }
    merged.empty = span.is_none();
    let (start_ns, end_ns) = span.unwrap_or((0, 0));
    if let Some(n) = slowest.filter(|&n| n > slow.logs_n && slow.logs_n > 0) {
        merged.notes.push(format!(
            "--slowest {n}: the logs kept {} per stage and interval; the list is the slowest of those, maybe not the run's {n} slowest",
            slow.logs_n
        ));
    }
    let (slowest, offset) = slow.finish((start_ns, end_ns));
    merged.stats = Stats::from_recorders(stage_recs, type_recs, slowest);
    merged.stats.logged_layer = layer;
    if !by_lines.is_empty() {
        if paths.len() == 1 && window.is_all() {
            merged.stats.set_by(by_groups(by_lines, by_recs, range_ns));
        } else {
            merged.notes.push(
                "--by: the logs hold each value's whole run, not its intervals: shown only when one log is read whole".into(),
            );
        }
    }
    merged.counters = counters;
    merged.source = source.unwrap_or_default();
    // The span on the slow orders' clock: the same UTC times, and `request_ns` as the run
    // reported it.
    let back = |ts: u64| {
        offset
            .checked_neg()
            .and_then(|o| shift(ts, o))
            .unwrap_or(ts)
    };
    merged.span = TimeSpan {
        start_ns: back(start_ns),
        end_ns: back(end_ns),
        unix_offset_ns: offset,
        timestamp_source: None,
    };
    Ok(merged)
}

/// The `--by` groups of one log: its `#fixscope-by` rows with their recorders.
fn by_groups(
    lines: Vec<ByLine>,
    mut recs: Vec<(String, LatencyRecorder)>,
    range_ns: u64,
) -> Option<fixscope_orders::group::GroupStats> {
    use fixscope_orders::group::{stage_slot, LoggedRow, LoggedTag, RowKind};
    let tags = lines
        .into_iter()
        .map(|l| LoggedTag {
            field: l
                .field
                .map_or(fixscope_orders::group::ByField::Tag(l.tag), |n| {
                    fixscope_orders::group::ByField::Named(n)
                }),
            limit: l.limit,
            candidates: l.candidates,
            other_values: l.other_values,
            values_overflowed: l.values_overflowed,
            busiest_exact: l.busiest_exact,
            rows: l
                .rows
                .into_iter()
                .map(|row| {
                    let mut stages: [Option<LatencyRecorder>; 4] = Default::default();
                    for (tag, _) in &row.stages {
                        let slot = super::parse_value_tag(tag).and_then(|(s, _, _)| stage_slot(s));
                        let at = recs.iter().position(|(t, _)| t == tag);
                        if let (Some(slot), Some(at)) = (slot, at) {
                            stages[slot] = Some(recs.swap_remove(at).1);
                        }
                    }
                    LoggedRow {
                        value: row.value,
                        kind: match row.kind.as_str() {
                            "other" => RowKind::Other,
                            "none" => RowKind::None,
                            _ => RowKind::Named,
                        },
                        requests: row.requests,
                        stages,
                    }
                })
                .collect(),
        })
        .collect();
    fixscope_orders::group::GroupStats::from_log(tags, range_ns)
}

fn take_array<T, const N: usize>(v: Vec<T>) -> [T; N] {
    match v.try_into() {
        Ok(a) => a,
        Err(_) => unreachable!("built with exactly {N} elements"),
    }
}

fn as_map(c: &Counters) -> serde_json::Map<String, Value> {
    match serde_json::to_value(c) {
        Ok(Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    }
}

fn from_map(m: serde_json::Map<String, Value>) -> Counters {
    let mut c: Counters = serde_json::from_value(Value::Object(m)).unwrap_or_default();
    // The identity every report keeps: every request is matched or unanswered.
    c.unanswered = c.unanswered_pending
        + c.correlation.unanswered_evicted
        + c.correlation.unanswered_closed
        + c.correlation.untracked_requests;
    c
}

/// What happened in a window: `end - before`, gauges at `end`.
fn window_counters(end: &Counters, before: Option<&Counters>) -> Counters {
    let Some(before) = before else {
        return *end;
    };
    let b = as_map(before);
    let m = as_map(end)
        .into_iter()
        .map(|(k, v)| {
            let e = v.as_u64().unwrap_or(0);
            let d = if GAUGES.contains(&k.as_str()) {
                e
            } else {
                e.saturating_sub(b.get(&k).and_then(Value::as_u64).unwrap_or(0))
            };
            (k, Value::from(d))
        })
        .collect();
    from_map(m)
}

fn add_counters(a: &Counters, b: &Counters) -> Counters {
    let mut m = as_map(a);
    // The union of names: a counter only one side has (`--breakdown`'s) is kept.
    for (k, v) in as_map(b) {
        let s = m.get(&k).and_then(Value::as_u64).unwrap_or(0) + v.as_u64().unwrap_or(0);
        m.insert(k, Value::from(s));
    }
    from_map(m)
}

fn add_source(total: &mut Vec<Counter>, more: &[(String, u64)]) {
    for (name, v) in more {
        match total.iter_mut().find(|(n, _)| n == name) {
            Some(c) => c.1 += v,
            None => total.push((name.clone(), *v)),
        }
    }
}
