//! `fixscope report`: HdrHistogram interval logs (`--hlog`) back into the summary report
//! live and pcap print — one log, or several (hosts, days) merged per tag, optionally within
//! `--from/--to`; `--html FILE` writes the page live and pcap write.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use fixscope_core::correlate::Stage;
use fixscope_core::hlog;
use fixscope_core::report::json::JsonReporter;
use fixscope_core::report::{Reporter, SummaryReport};

use crate::cli::{Format, ReportArgs};
use crate::output;
use crate::plot::input::hdr_log_intervals;
use crate::plot::model::IntervalPoint;
use crate::say;

pub fn run(args: &ReportArgs) -> Result<ExitCode> {
    let window = args.window()?;
    if let Some(n) = args.slowest.filter(|&n| n > crate::cli::MAX_SLOWEST) {
        bail!(
            "--slowest must be between 0 and {}, got {n}",
            crate::cli::MAX_SLOWEST
        );
    }
    let merged = hlog::merge_with(&args.logs, &window, args.slowest)?;
    for note in &merged.notes {
        say::warn(note);
    }
    if merged.unknown_tags > 0 {
        say::info(format!(
            "skipped {} histogram lines with tags fixscope does not write",
            merged.unknown_tags
        ));
    }
    if merged.approximate {
        say::warn(
            "some logs have no #fixscope lines (another tool wrote them): their sum, min and max are the histograms', within its precision",
        );
    }
    if merged.lines == 0 && window.is_all() {
        bail!("no histograms in the logs");
    }
    if merged.empty {
        // Nothing to report: a summary would have no time (never the epoch's).
        let covered = match merged.logs_starts {
            Some((first, last)) => format!(
                "; the logs' intervals start from {} to {}",
                utc_s(first),
                utc_s(last)
            ),
            None => String::new(),
        };
        bail!(
            "no interval of the logs starts within {}{covered}",
            args.window_flags()
        );
    }
    let counters = merged.counters.unwrap_or_default();
    if merged.counters.is_none() {
        say::warn(
            "the logs hold no fixscope counters (another tool wrote them): the counters are unknown (JSON: null), not 0",
        );
    }
    if !window.is_all() || args.logs.len() > 1 {
        say::info(
            "per-session table, session layer and source counters: only when one whole log is read",
        );
    }
    let mut summary = SummaryReport::new(&merged.stats, counters, &merged.source, merged.span);
    summary.incomplete = merged.incomplete.clone();
    if let Some((sessions, untracked)) = &merged.sessions {
        summary.sessions = sessions.iter().map(hlog::SessionLine::summary).collect();
        fixscope_core::report::mark_shared_comp_ids(&mut summary.sessions);
        summary.untracked_sessions = *untracked;
    }
    let format = args.stdout_format();
    if merged.counters.is_some() {
        let html = match &args.html {
            Some(path) => Some((path.as_path(), intervals(&args.logs, &window)?)),
            None => None,
        };
        let mut reporters = output::report_reporters(
            format,
            args.text.options(output::stdout_wants_color()),
            args.json_file.as_deref(),
            html,
        )?;
        reporters.summary(&summary)?;
    } else {
        if let Some(path) = &args.html {
            bail!(
                "--html {}: the logs hold no fixscope counters (another tool wrote them), and the page has no way to show them as unknown",
                path.display()
            );
        }
        // Unknown counters are null in JSON, never a measured-looking 0.
        let mut json = JsonReporter::new(Vec::new());
        json.summary(&summary)?;
        let mut v: serde_json::Value = serde_json::from_slice(&json.into_inner())?;
        v["counters"] = serde_json::Value::Null;
        match format {
            Format::Json => println!("{v}"),
            Format::Text => output::report_reporters(
                format,
                args.text.options(output::stdout_wants_color()),
                None,
                None,
            )?
            .summary(&summary)?,
        }
        if let Some(path) = &args.json_file {
            std::fs::write(path, format!("{v}\n"))
                .with_context(|| format!("cannot write --json-file {}", path.display()))?;
        }
    }
    output::flush_stdout();
    Ok(ExitCode::SUCCESS)
}

/// UNIX seconds as ISO-8601 UTC to the millisecond (a log's interval starts are in ms).
fn utc_s(unix_s: f64) -> String {
    let ns = (unix_s.max(0.0) * 1e9) as u64;
    fixscope_core::clock::iso8601_utc(ns, fixscope_core::clock::Precision::Millis).to_string()
}

/// The latency-over-time series of the logs within `window`, per stage, in time order
/// (logs of several hosts interleave).
fn intervals(
    logs: &[PathBuf],
    window: &hlog::Window,
) -> Result<[Vec<IntervalPoint>; Stage::COUNT]> {
    let mut all: [Vec<IntervalPoint>; Stage::COUNT] = Default::default();
    for log in logs {
        for (mine, theirs) in all.iter_mut().zip(hdr_log_intervals(log, window)?) {
            mine.extend(theirs);
        }
    }
    for points in &mut all {
        points.sort_by(|a, b| a.start_unix_s.total_cmp(&b.start_unix_s));
    }
    Ok(all)
}
