//! Inputs of `fixscope plot`, each read into a [`PlotData`]: a capture (run through the
//! pipeline), fixscope's JSON lines (`--json`, `--json-file`). The kind is told from the
//! file's first bytes, not its name.

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

use super::collect::PlotCollector;
use super::model::{IntervalPoint, PlotData};
use crate::cli::AnalysisArgs;
use crate::driver::{drive, RunLimits};

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
    for stage in Stage::ALL {
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

fn add_interval(data: &mut PlotData, v: &Value) -> Result<()> {
    let start_unix_s = unix_s(&v["start"])?;
    let end_unix_s = unix_s(&v["end"])?;
    for stage in Stage::ALL {
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

/// An HdrHistogram log's adapter goes here: one `StageSeries::curve_from_histogram` per
/// tag (stage) from the summed histograms, one [`IntervalPoint`] per interval histogram.
pub fn from_hdr_log(path: &Path) -> Result<PlotData> {
    bail!(
        "{}: HdrHistogram logs cannot be plotted by this build yet (plot the capture or the --json output)",
        path.display()
    )
}
