//! Inputs of `fixscope plot`, each read into a [`PlotData`]: a capture (run through the
//! pipeline), fixscope's JSON lines (`--json`, `--json-file`), an HdrHistogram interval log
//! (`--hlog`, or another tool's). The kind is told from the file's first bytes, not its name.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use anyhow::{bail, Context, Result};
use fixscope_core::correlate::Stage;
use fixscope_core::prefetch::CaptureSource;
use fixscope_core::shutdown::Shutdown;
use fixscope_core::stats::PERCENTILES;
use fixscope_core::Pipeline;
use serde_json::Value;

use fixscope_core::hlog;

use super::collect::{PlotCollector, P50, P99};
use super::model::{IntervalPoint, PlotData, StageSeries};
use crate::cli::AnalysisArgs;
use crate::driver::{drive, RunLimits};
use crate::say;

/// What an input file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    Capture,
    Json,
    HdrLog,
}

/// Tells the kind from the first bytes: pcap/pcapng magic, a JSON object, or an
/// HdrHistogram log's `#[` header / `Tag=` / number lines.
pub fn detect(path: &Path) -> Result<InputKind> {
    let mut head = [0u8; 4];
    let mut f = File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let n = f
        .read(&mut head)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let head = &head[..n];
    const MAGICS: [[u8; 4]; 5] = [
        [0xd4, 0xc3, 0xb2, 0xa1],
        [0xa1, 0xb2, 0xc3, 0xd4],
        [0x4d, 0x3c, 0xb2, 0xa1],
        [0xa1, 0xb2, 0x3c, 0x4d],
        [0x0a, 0x0d, 0x0d, 0x0a],
    ];
    if MAGICS.iter().any(|m| m == head) {
        return Ok(InputKind::Capture);
    }
    if let Some((format, cat)) = fixscope_core::pcap::compression(head) {
        bail!(
            "{} is {format}-compressed: decompress it first, e.g. `{}`",
            path.display(),
            fixscope_core::pcap::decompress_command(path, cat)
        );
    }
    match head.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => Ok(InputKind::Json),
        Some(b'#') | Some(b'T') | Some(b'0'..=b'9') => Ok(InputKind::HdrLog),
        _ => bail!(
            "{}: neither a capture (pcap/pcapng), fixscope's JSON lines nor an HdrHistogram log",
            path.display()
        ),
    }
}

/// The legend's name of an input: its file name.
pub fn label(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Runs a capture through the pipeline with `analysis`'s settings (ports, key, -x, -r).
pub fn from_capture(path: &Path, analysis: &AnalysisArgs, stop: &Shutdown) -> Result<PlotData> {
    let config = analysis.pipeline_config()?;
    let mut pipeline = Pipeline::new(config);
    let mut source = CaptureSource::new(vec![path.to_path_buf()], analysis.ports.clone())
        .context("cannot start the capture reader")?;
    let mut collector = PlotCollector::new(label(path));
    let limits = RunLimits {
        stop,
        duration: None,
        max_drain: crate::driver::MAX_DRAIN,
    };
    let code = drive(&mut source, &mut pipeline, &mut collector, &limits)
        .with_context(|| format!("analysing {}", path.display()))?;
    if code != std::process::ExitCode::SUCCESS {
        bail!(
            "{}: the capture could not be read to its end",
            path.display()
        );
    }
    Ok(collector.data)
}

/// Reads fixscope's JSON lines: the interval lines give the series over time, the last
/// summary line the percentile curves (its p50 … p99.999, from its min).
pub fn from_json(path: &Path) -> Result<PlotData> {
    let file = File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut data = PlotData::new(label(path));
    let mut summary: Option<Value> = None;
    for (n, line) in BufReader::new(file).lines().enumerate() {
        let line = line.with_context(|| format!("cannot read {}", path.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(&line)
            .with_context(|| format!("{} line {}: not JSON", path.display(), n + 1))?;
        match v["type"].as_str() {
            Some("interval") => add_interval(&mut data, &v)
                .with_context(|| format!("{} line {}", path.display(), n + 1))?,
            Some("summary") => summary = Some(v),
            _ => {}
        }
    }
    let Some(summary) = summary else {
        bail!(
            "{}: no summary line (is it fixscope's JSON output?)",
            path.display()
        );
    };
    for stage in Stage::EVERY {
        // The breakdown, hop and tick stages are there only for `--breakdown`, `--leg` and
        // `--tick-link` runs;
        // a one-way stage is drawn nowhere (its figures come with an uncertainty a curve
        // cannot show).
        if (optional(stage) && stage_object(&summary, stage).is_err()) || stage.is_one_way() {
            continue;
        }
        let o = stage_object(&summary, stage)
            .with_context(|| format!("{}: summary", path.display()))?;
        let count = o["count"].as_u64().unwrap_or(0);
        let s = data.stage_mut(stage);
        s.count = count;
        s.max_ns = o["max_ns"].as_u64();
        s.over_range = o["over_range"].as_u64().unwrap_or(0);
        if count == 0 {
            continue;
        }
        let first = o["min_ns"].as_u64().map(|v| (0.0, v));
        let rest = PERCENTILES
            .iter()
            .map_while(|(q, _, field)| o[*field].as_u64().map(|v| (*q, v)));
        s.percentiles = first.into_iter().chain(rest).collect();
    }
    Ok(data)
}

fn stage_object(v: &Value, stage: Stage) -> Result<&Value> {
    v["stages"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["stage"] == stage.name()))
        .with_context(|| format!("no stage {}", stage.name()))
}

/// UNIX seconds of an ISO-8601 time in the JSON (`start`, `end`).
fn unix_s(v: &Value) -> Result<f64> {
    let text = v.as_str().context("a time is missing")?;
    let t = humantime::parse_rfc3339(text).with_context(|| format!("bad time {text}"))?;
    let d = t
        .duration_since(std::time::UNIX_EPOCH)
        .with_context(|| format!("time before 1970: {text}"))?;
    Ok(d.as_secs_f64())
}

/// A stage a run's JSON has only when it measured it (`--breakdown`, `--leg`, `--point`).
fn optional(stage: Stage) -> bool {
    Stage::BREAKDOWN.contains(&stage)
        || Stage::HOPS.contains(&stage)
        || Stage::TICKS.contains(&stage)
        || Stage::POINTS.contains(&stage)
}

fn add_interval(data: &mut PlotData, v: &Value) -> Result<()> {
    let start_unix_s = unix_s(&v["start"])?;
    let end_unix_s = unix_s(&v["end"])?;
    for stage in Stage::EVERY {
        if optional(stage) && stage_object(v, stage).is_err() {
            continue;
        }
        let o = stage_object(v, stage)?;
        data.stage_mut(stage).intervals.push(IntervalPoint {
            start_unix_s,
            end_unix_s,
            p50_ns: o["p50_ns"].as_u64(),
            p99_ns: o["p99_ns"].as_u64(),
            max_ns: o["max_ns"].as_u64(),
        });
    }
    Ok(())
}

/// Reads an HdrHistogram interval log (fixscope's `--hlog`, or another tool's): per stage
/// tag, the percentile curve of all its intervals merged, and each interval's p50, p99 and
/// max. fixscope's logs give the exact figures of their `#fixscope-interval` lines (values
/// above `-x` are above range, as in the run); another tool's log its histograms as they are
/// (its untagged lines are first_response unless it has that tag).
pub fn from_hdr_log(path: &Path) -> Result<PlotData> {
    let merged = hlog::merge(&[path.to_path_buf()], &hlog::Window::default())?;
    for note in &merged.notes {
        say::warn(note);
    }
    if merged.approximate {
        say::warn(format!(
            "{}: no #fixscope lines (another tool wrote it): min and max are the histograms', within their precision",
            path.display()
        ));
    }
    let mut data = PlotData::new(label(path));
    for stage in Stage::EVERY {
        let r = merged.stats.cumulative(stage);
        *data.stage_mut(stage) = StageSeries::curve_from_histogram(
            r.histogram(),
            r.count(),
            r.min_ns().unwrap_or(0),
            r.max_ns(),
            r.over_range(),
        );
    }
    let intervals = hdr_log_intervals(path, &hlog::Window::default())?;
    for (stage, points) in Stage::EVERY.into_iter().zip(intervals) {
        data.stage_mut(stage).intervals = points;
    }
    Ok(data)
}

/// Each interval's point per stage, of the intervals starting within `window`. A fixscope
/// log names every interval (its `#fixscope-interval` line, exact times), so a stage without
/// data in one gets an empty point as from a capture; another tool's log gets a point per
/// histogram line.
pub fn hdr_log_intervals(
    path: &Path,
    window: &hlog::Window,
) -> Result<[Vec<IntervalPoint>; Stage::COUNT]> {
    let mut stages: [Vec<IntervalPoint>; Stage::COUNT] = Default::default();
    let mut untagged: Vec<IntervalPoint> = Vec::new();
    let mut tagged_first_response = false;
    let mut named = false;
    // Whether the interval the last #fixscope-interval line named lies in the window.
    let mut named_in = true;
    let mut reader = hlog::LogReader::open(path)?;
    while let Some(entry) = reader.next() {
        let entry = entry?;
        let log_start = |at: f64| reader.start_time_s().unwrap_or(at);
        match entry {
            hlog::Entry::Figures(f) => {
                named = true;
                let start_s = f.start_ns as f64 / 1e9;
                named_in = window.contains(start_s, log_start(start_s));
                if !named_in {
                    continue;
                }
                let empty = IntervalPoint {
                    start_unix_s: f.start_ns as f64 / 1e9,
                    end_unix_s: f.end_ns as f64 / 1e9,
                    p50_ns: None,
                    p99_ns: None,
                    max_ns: None,
                };
                for list in stages.iter_mut().chain(std::iter::once(&mut untagged)) {
                    list.push(empty);
                }
            }
            hlog::Entry::Interval(i) => {
                let inside = if named {
                    named_in
                } else {
                    window.contains(i.start_unix_s, log_start(i.start_unix_s))
                };
                if !inside {
                    continue;
                }
                let list = match hlog::TagKind::parse(i.tag.as_deref()) {
                    Some(hlog::TagKind::Stage(s)) => {
                        tagged_first_response |= s == Stage::FirstResponse;
                        &mut stages[s.index()]
                    }
                    Some(hlog::TagKind::Untagged) => &mut untagged,
                    // Per request type, a `--by` value's whole run, or a tag fixscope does
                    // not write (counted by merge).
                    Some(hlog::TagKind::ByType(..) | hlog::TagKind::ByValue(..)) | None => continue,
                };
                let d = i
                    .recorder()
                    .map_err(|what| anyhow::anyhow!("{}:{}: {what}", path.display(), i.line))?
                    .distribution();
                let (start_unix_s, end_unix_s) = match (named, list.last()) {
                    (true, Some(p)) => (p.start_unix_s, p.end_unix_s),
                    _ => (i.start_unix_s, i.start_unix_s + i.length_s),
                };
                let point = IntervalPoint {
                    start_unix_s,
                    end_unix_s,
                    p50_ns: d.percentiles_ns[P50],
                    p99_ns: d.percentiles_ns[P99],
                    max_ns: (d.count > 0).then_some(d.max_ns),
                };
                match list.last_mut() {
                    // The point its #fixscope-interval line made.
                    Some(last) if named => *last = point,
                    _ => list.push(point),
                }
            }
            _ => {}
        }
    }
    if !tagged_first_response {
        stages[Stage::FirstResponse.index()] = untagged;
    }
    Ok(stages)
}
