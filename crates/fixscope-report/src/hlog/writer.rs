//! [`HlogWriter`]: the interval log as a [`Reporter`].

use std::io::{self, Write};

use base64::Engine as _;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

use super::format::{
    java_date, stage_tag, type_tag, value_tag, ByLine, ByRow, Continued, Exact, IntervalFigures,
    LogHeader, RunSummary, SessionLine, SlowLine, BY_PREFIX, CONTINUED_PREFIX, FORMAT_VERSION,
    HEADER_PREFIX, INTERVAL_PREFIX, LEGEND, LOG_VERSION, MAX_VALUE_UNIT_RATIO, SUMMARY_PREFIX,
};
use crate::report::{IntervalReport, Reporter, SummaryReport, TimeSpan};
use fixscope_orders::correlate::{RequestType, Stage};
use fixscope_orders::recorder::LatencyRecorder;

/// Writes an HdrHistogram interval log: one line per interval and tag (see [`super`]).
///
/// The header is written with the first report, when the run's start time is known; every
/// interval is flushed, so a log of a run that was killed is readable up to its last interval.
pub struct HlogWriter<W: Write> {
    out: W,
    /// UNIX ns the interval timestamps count from (StartTime = BaseTime), in whole ms.
    base_ns: Option<u64>,
    /// The header as written (start, range), repeated at the top of a file switched to.
    header: Option<(Option<u64>, u64)>,
    /// The run's cumulative counters at the last interval written.
    last_counters: Option<crate::report::Counters>,
    serializer: V2DeflateSerializer,
    bytes: Vec<u8>,
    text: String,
}

impl<W: Write> HlogWriter<W> {
    pub fn new(out: W) -> Self {
        HlogWriter {
            out,
            base_ns: None,
            header: None,
            last_counters: None,
            serializer: V2DeflateSerializer::new(),
            bytes: Vec::new(),
            text: String::new(),
        }
    }

    pub fn into_inner(self) -> W {
        self.out
    }

    /// Goes on in `out` (SIGHUP after logrotate renamed the file): the old output is
    /// flushed and handed back, and `out` starts with the same header (StartTime and
    /// BaseTime too), so each file is a log of its own and `fixscope report OLD NEW` reads
    /// the two as one run. Call it between reports: an interval is never split.
    pub fn switch_to(&mut self, out: W) -> io::Result<W> {
        self.out.flush()?;
        let old = std::mem::replace(&mut self.out, out);
        if let Some((start, range)) = self.header {
            self.write_header(start, range)?;
            if let Some(counters) = self.last_counters {
                let line = json(&Continued { counters })?;
                writeln!(self.out, "{CONTINUED_PREFIX}{line}")?;
            }
            self.out.flush()?;
        }
        Ok(old)
    }

    /// The header lines, once; returns the base time.
    /// The log's header, before its first line; `start_unix_ns` None: the run saw nothing,
    /// and the log says no StartTime (never the epoch's).
    fn begin(&mut self, start_unix_ns: Option<u64>, range_ns: u64) -> io::Result<u64> {
        if let Some(base) = self.base_ns {
            return Ok(base);
        }
        let base = self.write_header(start_unix_ns, range_ns)?;
        self.header = Some((start_unix_ns, range_ns));
        self.base_ns = Some(base);
        Ok(base)
    }

    /// Writes the header lines; returns the base time they name.
    fn write_header(&mut self, start_unix_ns: Option<u64>, range_ns: u64) -> io::Result<u64> {
        let base = start_unix_ns.unwrap_or(0) / 1_000_000 * 1_000_000;
        let seconds = base as f64 / 1e9;
        let header = LogHeader {
            version: LOG_VERSION,
            tool: format!("fixscope {}", env!("CARGO_PKG_VERSION")),
            units: "ns".into(),
            range_ns,
        };
        writeln!(
            self.out,
            "#[fixscope interval log: latencies in ns; Tag=<stage> and Tag=<stage>.<MsgType>, untagged = first_response]"
        )?;
        writeln!(self.out, "{FORMAT_VERSION}")?;
        if start_unix_ns.is_some() {
            writeln!(
                self.out,
                "#[StartTime: {seconds:.3} (seconds since epoch), {}]",
                java_date(base / 1_000_000_000)
            )?;
            writeln!(self.out, "#[BaseTime: {seconds:.3} (seconds since epoch)]")?;
        }
        writeln!(self.out, "{HEADER_PREFIX}{}", json(&header)?)?;
        writeln!(self.out, "{LEGEND}")?;
        Ok(base)
    }

    /// One histogram line: `[Tag=t,]start,length,max_ms,base64`.
    fn histogram_line(
        &mut self,
        tag: Option<&str>,
        start_s: f64,
        length_s: f64,
        hist: &Histogram<u64>,
    ) -> io::Result<()> {
        self.bytes.clear();
        self.text.clear();
        self.serializer
            .serialize(hist, &mut self.bytes)
            .map_err(|e| io::Error::other(format!("cannot encode a histogram: {e:?}")))?;
        base64::engine::general_purpose::STANDARD.encode_string(&self.bytes, &mut self.text);
        if let Some(tag) = tag {
            write!(self.out, "Tag={tag},")?;
        }
        writeln!(
            self.out,
            "{start_s:.3},{length_s:.3},{:.3},{}",
            hist.max() as f64 / MAX_VALUE_UNIT_RATIO,
            self.text
        )
    }
}

impl<W: Write> HlogWriter<W> {
    /// `--by`: per tag, the `#fixscope-by` line and each reported row's whole-run histogram
    /// per stage with data.
    fn by_lines(
        &mut self,
        by: &fixscope_orders::group::GroupStats,
        start_s: f64,
        length_s: f64,
    ) -> io::Result<()> {
        for t in &by.tags {
            let ranking = t.ranked();
            let mut line = ByLine {
                tag: t.field.tag().unwrap_or(0),
                field: t.field.name().map(str::to_string),
                limit: by.spec.limit,
                candidates: by.spec.candidates,
                other_values: ranking.other_values,
                values_overflowed: ranking.values_overflowed,
                busiest_exact: ranking.busiest_exact,
                rows: Vec::new(),
            };
            let mut hists = Vec::new();
            for e in ranking.iter() {
                let kind = if std::ptr::eq(e, &ranking.other) {
                    "other"
                } else if std::ptr::eq(e, ranking.none) {
                    "none"
                } else {
                    "named"
                };
                let mut row = ByRow {
                    value: e.value.clone(),
                    kind: kind.into(),
                    requests: e.requests,
                    stages: Vec::new(),
                };
                for stage in Stage::ALL {
                    if let Some(rec) = e.stage(stage).filter(|r| r.count() > 0) {
                        let tag = value_tag(stage, &t.field, &e.value);
                        row.stages.push((tag.clone(), exact_of(rec)));
                        hists.push((tag, rec));
                    }
                }
                line.rows.push(row);
            }
            writeln!(self.out, "{BY_PREFIX}{}", json(&line)?)?;
            for (tag, rec) in hists {
                let hist = log_histogram(rec)?;
                self.histogram_line(Some(&tag), start_s, length_s, &hist)?;
            }
        }
        Ok(())
    }
}

fn json<T: serde::Serialize>(v: &T) -> io::Result<String> {
    serde_json::to_string(v).map_err(io::Error::other)
}

fn unix_ns(ts_ns: u64, span: &TimeSpan) -> u64 {
    u64::try_from(i128::from(ts_ns) + i128::from(span.unix_offset_ns)).unwrap_or(0)
}

/// A recorder's exact figures.
pub(crate) fn exact_of(r: &LatencyRecorder) -> Exact {
    Exact {
        count: r.count(),
        sum_ns: r.sum_ns(),
        min_ns: r.min_ns().unwrap_or(0),
        max_ns: r.max_ns(),
        over_range: r.over_range(),
        range_ns: r.histogram().high(),
    }
}

/// The histogram a log line carries: the values in range, and those above it at the exact
/// maximum (never lower than any of them). Borrowed when nothing is above range.
pub(crate) fn log_histogram(
    r: &LatencyRecorder,
) -> io::Result<std::borrow::Cow<'_, Histogram<u64>>> {
    let hist = r.histogram();
    if r.over_range() == 0 {
        return Ok(std::borrow::Cow::Borrowed(hist));
    }
    let bad = |e: String| io::Error::other(format!("cannot build a log histogram: {e}"));
    let mut wide = Histogram::<u64>::new_with_bounds(1, r.max_ns().max(2), hist.sigfig())
        .map_err(|e| bad(format!("{e:?}")))?;
    wide.add(hist).map_err(|e| bad(format!("{e:?}")))?;
    wide.record_n(r.max_ns(), r.over_range())
        .map_err(|e| bad(format!("{e:?}")))?;
    Ok(std::borrow::Cow::Owned(wide))
}

/// The tags of one report, with their recorders: stages with data, then stage and request
/// type with data. Not the one-way stages (`--point`): a one-way figure exists only with
/// its clock's uncertainty, which a histogram log cannot carry (the summary has both).
fn tagged<'a>(
    stage: impl Fn(Stage) -> &'a LatencyRecorder,
    by_type: impl Fn(RequestType, Stage) -> &'a LatencyRecorder,
) -> Vec<(String, &'a LatencyRecorder)> {
    let logged = || Stage::EVERY.into_iter().filter(|s| !s.is_one_way());
    let mut tags: Vec<(String, &LatencyRecorder)> = logged()
        .map(|s| (stage_tag(s).to_string(), stage(s)))
        .filter(|(_, r)| r.count() > 0)
        .collect();
    for s in logged() {
        for t in RequestType::ALL {
            let r = by_type(t, s);
            if r.count() > 0 {
                tags.push((type_tag(s, t), r));
            }
        }
    }
    tags
}

impl<W: Write> Reporter for HlogWriter<W> {
    fn interval(&mut self, r: &IntervalReport<'_>) -> io::Result<()> {
        let stats = r.figures;
        let start_ns = unix_ns(r.span.start_ns, &r.span);
        let end_ns = unix_ns(r.span.end_ns, &r.span).max(start_ns);
        let first = stats.interval(Stage::FirstResponse);
        let base = self.begin(Some(start_ns), first.histogram().high())?;
        let tags = tagged(
            |s| stats.interval(s),
            |t, s| stats.interval_by_request_type(t, s),
        );
        let figures = IntervalFigures {
            start_ns,
            end_ns,
            counters: r.counters,
            tags: tags
                .iter()
                .map(|(t, rec)| (t.clone(), exact_of(rec)))
                .collect(),
            unix_offset_ns: r.span.unix_offset_ns,
            slowest_n: stats.slowest_capacity(),
            slowest: r
                .slowest
                .iter()
                .flat_map(|l| l.iter())
                .map(SlowLine::from)
                .collect(),
        };
        writeln!(self.out, "{INTERVAL_PREFIX}{}", json(&figures)?)?;
        self.last_counters = Some(r.counters);
        let start_s = start_ns.saturating_sub(base) as f64 / 1e9;
        let length_s = (end_ns - start_ns) as f64 / 1e9;
        for (tag, rec) in &tags {
            let hist = log_histogram(rec)?;
            self.histogram_line(Some(tag), start_s, length_s, &hist)?;
        }
        // Untagged, every interval (empty ones too): what tools without a tag filter show.
        let hist = log_histogram(first)?;
        self.histogram_line(None, start_s, length_s, &hist)?;
        self.out.flush()
    }

    fn summary(&mut self, r: &SummaryReport<'_>) -> io::Result<()> {
        let start_ns = unix_ns(r.span.start_ns, &r.span);
        let end_ns = unix_ns(r.span.end_ns, &r.span);
        let base = self.begin(
            (!r.nothing_seen).then_some(start_ns),
            r.stages[0].dist.range_ns,
        )?;
        if let Some(by) = r.figures.by() {
            let start_s = start_ns.saturating_sub(base) as f64 / 1e9;
            let length_s = end_ns.saturating_sub(start_ns) as f64 / 1e9;
            self.by_lines(by, start_s, length_s)?;
        }
        let summary = RunSummary {
            start_ns,
            end_ns,
            counters: r.counters,
            source: r.source.to_vec(),
            sessions: r.sessions.iter().map(SessionLine::from).collect(),
            untracked_sessions: r.untracked_sessions,
            stage_counts: r.stages.map(|s| s.dist.count),
            session_layer: r.figures.session_layer_figures(r.span.end_ns).map(Box::new),
            incomplete: r.incomplete.clone(),
        };
        writeln!(self.out, "{SUMMARY_PREFIX}{}", json(&summary)?)?;
        self.out.flush()
    }
}
