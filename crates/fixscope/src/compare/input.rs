//! A side's files read into runs cut into blocks of time.
//!
//! - A capture runs through the one pipeline and driver (as `fixscope pcap`), with the
//!   interval set so the run makes [`Settings::target_blocks`] blocks: a quick first pass
//!   reads the capture's time span.
//! - An HdrHistogram log (`--hlog`) gives one block per interval it holds (fixscope's
//!   exact figures, values above `-x` as above range), merged into
//!   [`Settings::target_blocks`] when there are more.
//! - fixscope's JSON lines hold percentiles, not histograms: no interval can be
//!   recomputed from them, so they are refused with what to pass instead.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context, Result};
use fixscope_compare::{BlockHist, CellKey, Group, Run, Settings};
use fixscope_core::correlate::Stage;
use fixscope_core::hlog::{self, Entry, TagKind};
use fixscope_core::pcap::{read_capture, CaptureStats};
use fixscope_core::prefetch::CaptureSource;
use fixscope_core::shutdown::Shutdown;
use fixscope_core::Pipeline;

use super::collect::BlockCollector;
use super::options::GroupBy;
use crate::cli::AnalysisArgs;
use crate::driver::{drive, RunLimits, MAX_DRAIN};
use crate::plot::input::{detect, label, InputKind};

/// The shortest block of a capture: finer than this is noise in the timestamps.
const MIN_BLOCK_NS: u64 = 1_000_000;

/// Reads one file of a side.
pub fn read_run(
    path: &Path,
    analysis: Option<&AnalysisArgs>,
    by: Option<GroupBy>,
    s: &Settings,
    stop: &Shutdown,
) -> Result<Run> {
    let run = match detect(path)? {
        InputKind::Capture => {
            let analysis = analysis.with_context(|| {
                format!("{} is a capture: -p/--port is needed", path.display())
            })?;
            from_capture(path, analysis, by, s, stop)?
        }
        InputKind::HdrLog => {
            match by {
                Some(GroupBy::Session) => bail!(
                    "{}: HdrHistogram logs keep no per-session histograms; --by session needs captures",
                    path.display()
                ),
                Some(GroupBy::Tag(t)) => bail!(
                    "{}: HdrHistogram logs keep --by values for the whole run, not per interval, and a confidence band needs intervals; --by {t} needs captures",
                    path.display()
                ),
                _ => {}
            }
            from_hlog(path, by)?
        }
        InputKind::Json => bail!(
            "{}: fixscope's JSON lines carry percentiles, not histograms, and no confidence interval can be computed from percentiles; compare the capture itself, or a log written with --hlog FILE",
            path.display()
        ),
    };
    if run.cells.values().all(|l| l.iter().all(|b| b.count() == 0)) {
        bail!("{}: no latencies to compare", path.display());
    }
    Ok(run)
}

/// The first and last timestamps of the watched ports' segments (the first pass).
fn capture_span_ns(path: &Path, analysis: &AnalysisArgs) -> Result<Option<(u64, u64)>> {
    let mut stats = CaptureStats::default();
    let mut span: Option<(u64, u64)> = None;
    read_capture(path, &analysis.ports, &mut stats, |seg| {
        let t = seg.ts_ns;
        span = Some(span.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
    })
    .map_err(|e| anyhow!("{e}"))?;
    Ok(span)
}

fn from_capture(
    path: &Path,
    analysis: &AnalysisArgs,
    by: Option<GroupBy>,
    s: &Settings,
    stop: &Shutdown,
) -> Result<Run> {
    let Some((first, last)) = capture_span_ns(path, analysis)? else {
        bail!("{}: no TCP segment of the watched ports", path.display());
    };
    // target_blocks intervals cover the span (one more nanosecond so the last timestamp
    // falls inside the last of them).
    let interval_ns = ((last - first) / s.target_blocks as u64 + 1).max(MIN_BLOCK_NS);
    let mut config = analysis.pipeline_config()?;
    config.interval_ns = interval_ns;
    let mut pipeline = Pipeline::new(config);
    let mut source = CaptureSource::new(vec![path.to_path_buf()], analysis.ports.clone())
        .context("cannot start the capture reader")?;
    let mut collector = BlockCollector::new(label(path), by);
    let limits = RunLimits {
        stop,
        duration: None,
        max_drain: MAX_DRAIN,
    };
    let code = drive(&mut source, &mut pipeline, &mut collector, &limits)
        .with_context(|| format!("analysing {}", path.display()))?;
    if code != ExitCode::SUCCESS {
        bail!(
            "{}: the capture could not be read to its end",
            path.display()
        );
    }
    collector.run.block_s = interval_ns as f64 / 1e9;
    Ok(collector.run)
}

/// One block per interval of the log: a `#fixscope-interval` line starts one (fixscope's
/// logs); another tool's log starts one at each new start time.
fn from_hlog(path: &Path, by: Option<GroupBy>) -> Result<Run> {
    let reader = hlog::LogReader::open(path)?;
    let mut run = Run::new(label(path));
    let mut block: BTreeMap<CellKey, BlockHist> = BTreeMap::new();
    // The untagged lines, per block: first_response for logs without that tag.
    let mut untagged: Vec<BlockHist> = Vec::new();
    let mut untagged_now = BlockHist::default();
    let mut tagged_first_response = false;
    let mut named = false;
    let mut started = false;
    let mut last_start_s: Option<f64> = None;
    let (mut first_s, mut last_end_s) = (f64::INFINITY, f64::NEG_INFINITY);
    let mut lengths = Vec::new();
    let mut summary = None;
    let flush = |block: &mut BTreeMap<CellKey, BlockHist>,
                 untagged_now: &mut BlockHist,
                 run: &mut Run,
                 untagged: &mut Vec<BlockHist>| {
        run.push_block(std::mem::take(block));
        untagged.push(std::mem::take(untagged_now));
    };
    for entry in reader {
        match entry? {
            Entry::Figures(f) => {
                if started {
                    flush(&mut block, &mut untagged_now, &mut run, &mut untagged);
                }
                named = true;
                started = true;
                first_s = first_s.min(f.start_ns as f64 / 1e9);
                last_end_s = last_end_s.max(f.end_ns as f64 / 1e9);
                lengths.push(f.end_ns.saturating_sub(f.start_ns) as f64 / 1e9);
                summary = Some(f.counters);
            }
            Entry::Interval(i) => {
                if !named && last_start_s != Some(i.start_unix_s) {
                    if started {
                        flush(&mut block, &mut untagged_now, &mut run, &mut untagged);
                    }
                    started = true;
                    last_start_s = Some(i.start_unix_s);
                    first_s = first_s.min(i.start_unix_s);
                    last_end_s = last_end_s.max(i.start_unix_s + i.length_s);
                    lengths.push(i.length_s);
                }
                let rec = i
                    .recorder()
                    .map_err(|what| anyhow!("{}:{}: {what}", path.display(), i.line))?;
                run.context.range_ns = Some(
                    run.context
                        .range_ns
                        .map_or(rec.range_ns(), |r| r.min(rec.range_ns())),
                );
                let hist = BlockHist::from_histogram(
                    rec.histogram(),
                    rec.over_range(),
                    rec.min_ns(),
                    rec.max_ns(),
                );
                let group = match TagKind::parse(i.tag.as_deref()) {
                    Some(TagKind::Stage(stage)) => {
                        tagged_first_response |= stage == Stage::FirstResponse;
                        Some((Group::All, stage))
                    }
                    Some(TagKind::ByType(stage, t)) if by == Some(GroupBy::Type) => {
                        Some((Group::Type(t), stage))
                    }
                    Some(TagKind::Untagged) => {
                        untagged_now.add(&hist);
                        None
                    }
                    _ => None,
                };
                if let Some((group, stage)) = group {
                    block
                        .entry(CellKey { group, stage })
                        .or_default()
                        .add(&hist);
                }
            }
            Entry::Summary(s) => summary = Some(s.counters),
            _ => {}
        }
    }
    if started {
        flush(&mut block, &mut untagged_now, &mut run, &mut untagged);
    }
    if !tagged_first_response && untagged.iter().any(|b| b.count() > 0) {
        let key = CellKey {
            group: Group::All,
            stage: Stage::FirstResponse,
        };
        run.cells.insert(key, untagged);
    }
    if let Some(c) = summary {
        run.context.requests = c.correlation.requests;
        run.context.unanswered = c.unanswered;
        run.context.timed_out = c.correlation.timed_out;
        run.context.late = c.correlation.late;
    }
    if first_s.is_finite() && last_end_s > first_s {
        run.context.duration_s = last_end_s - first_s;
    }
    lengths.sort_by(f64::total_cmp);
    run.block_s = lengths.get(lengths.len() / 2).copied().unwrap_or(0.0);
    Ok(run)
}
