//! Reading interval logs back: [`LogReader`] streams entries (a day of 1 s intervals holds a
//! million histograms: merge them as they come), [`read`] collects a whole log.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;

use super::format::{
    ByLine, Continued, Exact, IntervalFigures, LogHeader, RunSummary, BY_PREFIX, CONTINUED_PREFIX,
    HEADER_PREFIX, INTERVAL_PREFIX, LOG_VERSION, SUMMARY_PREFIX,
};
use fixscope_orders::recorder::LatencyRecorder;

/// Why a log cannot be read. The OS error is part of the text and not a `source` as
/// well: printed with its causes (`{:#}`) it would be said twice.
#[derive(Debug, thiserror::Error)]
pub enum HlogError {
    #[error("cannot read {}: {error}", path.display())]
    Io { path: PathBuf, error: io::Error },
    #[error("{path}:{line}: {what}")]
    Line {
        path: PathBuf,
        line: usize,
        what: String,
    },
    /// A compressed log (`.hlog.gz`): said with the way to read it.
    #[error("{} is {format}-compressed, not an HdrHistogram log: decompress it first, e.g. `{}`", path.display(), fixscope_capture::pcap::decompress_command(path, cat))]
    Compressed {
        path: PathBuf,
        format: &'static str,
        cat: &'static str,
    },
}

/// One histogram line.
#[derive(Clone, Debug)]
pub struct LogInterval {
    /// Line number in the file (from 1).
    pub line: usize,
    pub tag: Option<String>,
    /// The line's start timestamp as written (seconds since BaseTime, or since the epoch).
    pub timestamp_s: f64,
    /// The interval's start as UNIX seconds (Java's rule: BaseTime, else StartTime if the
    /// timestamps are more than a year before it, else absolute).
    pub start_unix_s: f64,
    /// Seconds from the log's StartTime (what HistogramLogProcessor's `-start/-end` compare).
    pub offset_s: f64,
    pub length_s: f64,
    /// `Interval_Max` as written (fixscope: ms).
    pub max: f64,
    /// The histogram as stored (values in ns; fixscope's above-range values at `exact.max_ns`).
    pub histogram: Histogram<u64>,
    /// fixscope's exact figures for this tag and interval, when the log has them.
    pub exact: Option<Exact>,
}

impl LogInterval {
    /// fixscope's view of the interval: exact count, sum, min and max, and the values above
    /// fixscope's range taken out of the histogram again. Without exact figures (a log
    /// another tool wrote) the histogram's own: count exact, sum/min/max at its precision.
    pub fn recorder(&self) -> Result<LatencyRecorder, String> {
        let h = &self.histogram;
        let Some(e) = self.exact else {
            let count = h.len();
            let sum = (h.mean() * count as f64).round() as u128;
            return LatencyRecorder::from_parts(h.clone(), count, sum, h.min_nz(), h.max())
                .ok_or_else(|| "inconsistent histogram".to_string());
        };
        if h.len() != e.count {
            return Err(format!(
                "the histogram holds {} values, its #fixscope-interval line says {}",
                h.len(),
                e.count
            ));
        }
        let mut in_range = Histogram::<u64>::new_with_bounds(1, e.range_ns.max(2), h.sigfig())
            .map_err(|err| format!("bad range {}: {err:?}", e.range_ns))?;
        if e.over_range > 0 {
            if h.count_at(e.max_ns) < e.over_range || e.max_ns <= e.range_ns {
                return Err(format!(
                    "{} values above range are not at the maximum {} ns",
                    e.over_range, e.max_ns
                ));
            }
            let mut rest = h.clone();
            rest.subtract(&single(e.max_ns, e.over_range, h)?)
                .map_err(|err| format!("{err:?}"))?;
            in_range
                .add(&rest)
                .map_err(|_| "values above range besides the maximum".to_string())?;
        } else {
            in_range
                .add(h)
                .map_err(|_| "values above the stated range".to_string())?;
        }
        LatencyRecorder::from_parts(in_range, e.count, e.sum_ns, e.min_ns, e.max_ns)
            .ok_or_else(|| "exact figures contradict the histogram".to_string())
    }
}

/// A histogram like `like` holding `n` times `value`.
fn single(value: u64, n: u64, like: &Histogram<u64>) -> Result<Histogram<u64>, String> {
    let mut h = Histogram::<u64>::new_from(like);
    h.record_n(value, n).map_err(|e| format!("{e:?}"))?;
    Ok(h)
}

/// One meaningful line of a log.
#[derive(Clone, Debug)]
pub enum Entry {
    StartTime(f64),
    BaseTime(f64),
    /// `#fixscope-log`: the writer and its range.
    Header(LogHeader),
    /// `#fixscope-interval`: the exact figures and counters of the histogram lines after it.
    Figures(IntervalFigures),
    Interval(LogInterval),
    /// `#fixscope-summary`: the run's summary (the last one is the final).
    Summary(RunSummary),
    /// `#fixscope-by`: a `--by` tag's rows and the exact figures of the lines after it.
    By(ByLine),
    /// `#fixscope-continued`: this log continues a run's log from a file before it.
    Continued(Continued),
}

/// Streams the entries of one log. Comments and the legend are skipped; a malformed line
/// is an error naming the file and line, except a last line without its newline (a writer
/// killed mid-line), which is counted in [`LogReader::incomplete_last_line`] and skipped.
pub struct LogReader<R: BufRead> {
    input: R,
    path: PathBuf,
    line_no: usize,
    buf: String,
    start_time_s: Option<f64>,
    base_time_s: Option<f64>,
    figures: Option<IntervalFigures>,
    /// The exact figures of the last `#fixscope-by` line's histogram lines, by tag.
    by_exact: Vec<(String, Exact)>,
    deserializer: Deserializer,
    bytes: Vec<u8>,
    incomplete_last_line: bool,
    failed: bool,
}

impl LogReader<BufReader<File>> {
    pub fn open(path: &Path) -> Result<Self, HlogError> {
        let io = |error| HlogError::Io {
            path: path.to_path_buf(),
            error,
        };
        let mut input = BufReader::new(File::open(path).map_err(io)?);
        // The first bytes, left in the buffer for the reader.
        let head = input.fill_buf().map_err(io)?;
        if let Some((format, cat)) = fixscope_capture::pcap::compression(head) {
            return Err(HlogError::Compressed {
                path: path.to_path_buf(),
                format,
                cat,
            });
        }
        Ok(LogReader::new(input, path))
    }
}

impl<R: BufRead> LogReader<R> {
    /// `path` names the input in errors.
    pub fn new(input: R, path: &Path) -> Self {
        LogReader {
            input,
            path: path.to_path_buf(),
            line_no: 0,
            buf: String::new(),
            start_time_s: None,
            base_time_s: None,
            figures: None,
            by_exact: Vec::new(),
            deserializer: Deserializer::new(),
            bytes: Vec::new(),
            incomplete_last_line: false,
            failed: false,
        }
    }

    /// The log's StartTime (Java's rule: the header's, else the first interval's).
    pub fn start_time_s(&self) -> Option<f64> {
        self.start_time_s
    }

    /// The number of the line read last (from 1).
    pub fn line(&self) -> usize {
        self.line_no
    }

    /// Whether the last line had no newline and did not parse (skipped).
    pub fn incomplete_last_line(&self) -> bool {
        self.incomplete_last_line
    }

    fn error(&mut self, what: impl Into<String>) -> HlogError {
        self.failed = true;
        HlogError::Line {
            path: self.path.clone(),
            line: self.line_no,
            what: what.into(),
        }
    }

    fn parse_line(&mut self, line: &str) -> Result<Option<Entry>, String> {
        if let Some(rest) = line.strip_prefix("#[StartTime: ") {
            return Ok(Some(Entry::StartTime(leading_seconds(rest)?)));
        }
        if let Some(rest) = line.strip_prefix("#[BaseTime: ") {
            return Ok(Some(Entry::BaseTime(leading_seconds(rest)?)));
        }
        if let Some(rest) = line.strip_prefix(HEADER_PREFIX) {
            let header: LogHeader =
                serde_json::from_str(rest).map_err(|e| format!("bad #fixscope-log line: {e}"))?;
            if header.version > LOG_VERSION {
                return Err(format!(
                    "written by a newer fixscope (log version {}, this one reads up to {LOG_VERSION})",
                    header.version
                ));
            }
            return Ok(Some(Entry::Header(header)));
        }
        if let Some(rest) = line.strip_prefix(INTERVAL_PREFIX) {
            let f: IntervalFigures = serde_json::from_str(rest)
                .map_err(|e| format!("bad #fixscope-interval line: {e}"))?;
            return Ok(Some(Entry::Figures(f)));
        }
        if let Some(rest) = line.strip_prefix(SUMMARY_PREFIX) {
            let s: RunSummary = serde_json::from_str(rest)
                .map_err(|e| format!("bad #fixscope-summary line: {e}"))?;
            return Ok(Some(Entry::Summary(s)));
        }
        if let Some(rest) = line.strip_prefix(CONTINUED_PREFIX) {
            let c: Continued = serde_json::from_str(rest)
                .map_err(|e| format!("bad #fixscope-continued line: {e}"))?;
            return Ok(Some(Entry::Continued(c)));
        }
        if let Some(rest) = line.strip_prefix(BY_PREFIX) {
            let b: ByLine =
                serde_json::from_str(rest).map_err(|e| format!("bad #fixscope-by line: {e}"))?;
            self.by_exact = b
                .rows
                .iter()
                .flat_map(|r| r.stages.iter().cloned())
                .collect();
            return Ok(Some(Entry::By(b)));
        }
        if line.starts_with('#') || line.starts_with("\"StartTimestamp\"") || line.is_empty() {
            return Ok(None);
        }
        self.histogram_line(line).map(|i| Some(Entry::Interval(i)))
    }

    fn histogram_line(&mut self, line: &str) -> Result<LogInterval, String> {
        let (tag, rest) = match line.strip_prefix("Tag=") {
            Some(rest) => {
                let (tag, rest) = rest.split_once(',').ok_or("a Tag= line without fields")?;
                if tag.is_empty() || tag.contains(' ') {
                    return Err(format!("bad tag {tag:?}"));
                }
                (Some(tag.to_string()), rest)
            }
            None => (None, line),
        };
        let mut fields = rest.splitn(4, ',');
        let mut number = |name: &str| -> Result<f64, String> {
            let field = fields.next().ok_or(format!("no {name} field"))?;
            field
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or(format!("bad {name} {field:?} (not a histogram line)"))
        };
        let timestamp_s = number("StartTimestamp")?;
        let length_s = number("Interval_Length")?;
        let max = number("Interval_Max")?;
        let encoded = fields.next().ok_or("no histogram field")?.trim();
        self.bytes.clear();
        base64::engine::general_purpose::STANDARD
            .decode_vec(encoded, &mut self.bytes)
            .map_err(|e| format!("bad base64 histogram: {e}"))?;
        let histogram: Histogram<u64> = self
            .deserializer
            .deserialize(&mut &self.bytes[..])
            .map_err(|e| format!("cannot decode the histogram (truncated?): {e:?}"))?;
        // Java's rules for StartTime and BaseTime (HistogramLogReader).
        let start_time_s = *self.start_time_s.get_or_insert(timestamp_s);
        let base_time_s = *self.base_time_s.get_or_insert(
            if timestamp_s < start_time_s - 365.0 * 24.0 * 3600.0 {
                start_time_s
            } else {
                0.0
            },
        );
        let start_unix_s = timestamp_s + base_time_s;
        let exact = match tag.as_deref().and_then(super::parse_value_tag) {
            // A `--by` value's line: its `#fixscope-by` line's figures.
            Some(_) => {
                let tag = tag.as_deref().unwrap_or_default();
                self.by_exact
                    .iter()
                    .find(|(t, _)| t == tag)
                    .map(|(_, e)| *e)
            }
            None => self.figures.as_ref().and_then(|f| {
                let tag = tag.as_deref().unwrap_or(super::stage_tag(
                    fixscope_orders::correlate::Stage::FirstResponse,
                ));
                f.tags.iter().find(|(t, _)| t == tag).map(|(_, e)| *e)
            }),
        };
        Ok(LogInterval {
            line: self.line_no,
            tag,
            timestamp_s,
            start_unix_s,
            offset_s: start_unix_s - start_time_s,
            length_s,
            max,
            histogram,
            exact,
        })
    }
}

/// `1700000000.123 (seconds since epoch), …` → 1700000000.123
fn leading_seconds(rest: &str) -> Result<f64, String> {
    rest.split([' ', ']'])
        .next()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|v| v.is_finite())
        .ok_or_else(|| format!("bad time {rest:?}"))
}

impl<R: BufRead> Iterator for LogReader<R> {
    type Item = Result<Entry, HlogError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.failed {
                return None;
            }
            self.buf.clear();
            match self.input.read_line(&mut self.buf) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                    self.failed = true;
                    return Some(Err(HlogError::Line {
                        path: self.path.clone(),
                        line: self.line_no + 1,
                        what: "not text (is this an HdrHistogram log?)".to_string(),
                    }));
                }
                // The file, not a line of it (a directory, an I/O error).
                Err(error) => {
                    self.failed = true;
                    return Some(Err(HlogError::Io {
                        path: self.path.clone(),
                        error,
                    }));
                }
            }
            self.line_no += 1;
            let complete = self.buf.ends_with('\n');
            let line = std::mem::take(&mut self.buf);
            let parsed = self.parse_line(line.trim_end_matches(['\n', '\r']));
            self.buf = line;
            match parsed {
                Ok(None) => continue,
                Ok(Some(entry)) => {
                    match &entry {
                        Entry::StartTime(s) => self.start_time_s = Some(*s),
                        Entry::BaseTime(s) => self.base_time_s = Some(*s),
                        Entry::Figures(f) => self.figures = Some(f.clone()),
                        _ => {}
                    }
                    return Some(Ok(entry));
                }
                Err(_) if !complete => {
                    self.incomplete_last_line = true;
                    return None;
                }
                Err(what) => return Some(Err(self.error(what))),
            }
        }
    }
}

/// A whole log in memory.
#[derive(Clone, Debug, Default)]
pub struct HistogramLog {
    pub path: PathBuf,
    /// `#[StartTime]` (else the first interval's start), UNIX seconds.
    pub start_time_s: Option<f64>,
    /// `#[BaseTime]`, UNIX seconds, when the log has one.
    pub base_time_s: Option<f64>,
    pub header: Option<LogHeader>,
    /// Histogram lines in file order (every tag, and untagged).
    pub intervals: Vec<LogInterval>,
    /// `#fixscope-interval` lines in file order.
    pub figures: Vec<IntervalFigures>,
    /// The last `#fixscope-summary` line.
    pub summary: Option<RunSummary>,
    /// A last line cut short (the writer was killed) was skipped.
    pub incomplete_last_line: bool,
}

impl HistogramLog {
    /// Tags present, in order of first appearance (`None` = untagged).
    pub fn tags(&self) -> Vec<Option<&str>> {
        let mut tags: Vec<Option<&str>> = Vec::new();
        for i in &self.intervals {
            if !tags.contains(&i.tag.as_deref()) {
                tags.push(i.tag.as_deref());
            }
        }
        tags
    }

    /// The histogram lines of one tag (`None` = untagged), in order.
    pub fn tagged<'a>(&'a self, tag: Option<&'a str>) -> impl Iterator<Item = &'a LogInterval> {
        self.intervals
            .iter()
            .filter(move |i| i.tag.as_deref() == tag)
    }
}

/// Reads a whole log (for plots and tests; [`LogReader`] streams long ones).
pub fn read(path: &Path) -> Result<HistogramLog, HlogError> {
    let mut reader = LogReader::open(path)?;
    let mut log = HistogramLog {
        path: path.to_path_buf(),
        ..HistogramLog::default()
    };
    for entry in reader.by_ref() {
        match entry? {
            Entry::StartTime(s) => log.start_time_s = Some(s),
            Entry::BaseTime(s) => log.base_time_s = Some(s),
            Entry::Header(h) => log.header = Some(h),
            Entry::Figures(f) => log.figures.push(f),
            Entry::Interval(i) => log.intervals.push(i),
            Entry::Summary(s) => log.summary = Some(s),
            Entry::By(_) | Entry::Continued(_) => {}
        }
    }
    log.start_time_s = reader.start_time_s();
    log.incomplete_last_line = reader.incomplete_last_line();
    Ok(log)
}
