//! The reporters a run writes to, chosen from the flags in one place, and treating a closed
//! pipe as a normal end.
//!
//! stdout carries one format (`--format text|json`, `--json` for short); further
//! destinations (`--json-file FILE`; later an HdrHistogram log, Prometheus, a terminal UI)
//! are reporters added to the same [`Fanout`], so no command knows which outputs exist.

use std::fs::File;
use std::io::{self, BufWriter, Write};

use anyhow::{bail, Context, Result};
use fixscope_core::hlog::{HgrmWriter, HlogWriter};
use fixscope_core::report::json::JsonReporter;
use fixscope_core::report::text::{TextOptions, TextReporter};
use fixscope_core::report::{Fanout, IntervalReport, Reporter, SummaryReport};

use crate::cli::{AnalysisArgs, Format};
use crate::html::{HtmlReporter, RunInfo};
use crate::plot::model::IntervalPoint;
use crate::prometheus::PrometheusReporter;
use crate::reopen::ReopenOnHangup;
use crate::say;

/// Every reporter the flags ask for.
pub fn reporters(args: &AnalysisArgs) -> Result<Fanout> {
    reporters_with(args, |stdout| stdout)
}

/// [`reporters`], with the stdout reporter handed to `wrap` first (the terminal UI holds it
/// back while it owns the screen).
pub fn reporters_with(
    args: &AnalysisArgs,
    wrap: impl FnOnce(Box<dyn Reporter>) -> Box<dyn Reporter>,
) -> Result<Fanout> {
    reporters_into(args, Box::new(BufWriter::new(io::stdout())), wrap)
}

/// [`reporters_with`], the stdout reporter writing into `stdout` instead (a sharded
/// `fixscope pcap` holds its stdout back until the run is known not to need one pipeline).
pub fn reporters_into(
    args: &AnalysisArgs,
    stdout: Box<dyn Write>,
    wrap: impl FnOnce(Box<dyn Reporter>) -> Box<dyn Reporter>,
) -> Result<Fanout> {
    let mut fanout = Fanout::new();
    // `-r 0` with `--prometheus`: the pipeline still reports every second for the metrics,
    // but the user asked for no interval lines.
    let summary_only = args.interval_s == 0.0 && args.prometheus.is_some();
    let mut add = |r: Box<dyn Reporter>| {
        if summary_only {
            fanout.add(Box::new(SummaryOnly(r)));
        } else {
            fanout.add(r);
        }
    };
    let stdout: Box<dyn Reporter> = match args.stdout_format() {
        Format::Text => Box::new(TextReporter::with_options(
            stdout,
            args.text.options(stdout_wants_color()),
        )),
        Format::Json => Box::new(JsonReporter::new(stdout)),
    };
    add(wrap(stdout));
    if args.by.is_some() {
        add(Box::<crate::by_warning::ByTagsNeverCarried>::default());
    }
    if let Some(path) = &args.json_file {
        let file = File::create(path)
            .with_context(|| format!("cannot create --json-file {}", path.display()))?;
        // SIGHUP (logrotate) reopens it: see reopen.rs.
        let seen = ReopenOnHangup::new(
            JsonReporter::new(BufWriter::new(file.try_clone()?)),
            &file,
            path,
            "--json-file",
        )?;
        add(Box::new(seen));
    }
    if let Some(path) = &args.html {
        // Fail before the run when the file cannot be written, not at its end.
        File::create(path).with_context(|| format!("cannot create --html {}", path.display()))?;
        add(Box::new(HtmlReporter::new(
            path.clone(),
            RunInfo::of_this_process(),
        )));
    }
    if let Some(path) = &args.hlog {
        if args.interval_s <= 0.0 {
            bail!("--hlog writes one histogram per interval: it needs -r/--interval above 0");
        }
        let file = File::create(path)
            .with_context(|| format!("cannot create --hlog {}", path.display()))?;
        let seen = ReopenOnHangup::new(
            HlogWriter::new(BufWriter::new(file.try_clone()?)),
            &file,
            path,
            "--hlog",
        )?;
        add(Box::new(seen));
    }
    if let Some(path) = &args.hgrm {
        // Created now so a bad path fails before the run, written at the summary.
        File::create(path).with_context(|| format!("cannot create --hgrm {}", path.display()))?;
        add(Box::new(HgrmWriter::new(path)));
    }
    if args.prometheus.is_some() || args.prometheus_textfile.is_some() {
        let (reporter, bound) = PrometheusReporter::start(
            args.prometheus_settings()?,
            args.prometheus_listen()?,
            args.prometheus_textfile.clone(),
        )
        .with_context(|| {
            format!(
                "cannot serve Prometheus metrics on {}",
                args.prometheus.as_deref().unwrap_or_default()
            )
        })?;
        if let Some(addr) = bound {
            say::info(format!("Prometheus metrics on http://{addr}/metrics"));
        }
        fanout.add(Box::new(reporter));
    }
    Ok(fanout)
}

/// Whether the text report may colour its alarms: stdout is a terminal, and neither
/// `NO_COLOR` (no-color.org) nor `TERM=dumb` says otherwise.
pub fn stdout_wants_color() -> bool {
    use std::io::IsTerminal;
    io::stdout().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::env::var_os("TERM").is_none_or(|t| t != "dumb")
}

/// Passes summaries only.
struct SummaryOnly(Box<dyn Reporter>);

impl Reporter for SummaryOnly {
    fn interval(&mut self, _: &IntervalReport<'_>) -> io::Result<()> {
        Ok(())
    }
    fn summary(&mut self, report: &SummaryReport<'_>) -> io::Result<()> {
        self.0.summary(report)
    }
}

/// The reporters of `fixscope report`: stdout, `--json-file`, and `--html` with the
/// latency-over-time series read from the logs (`intervals`).
pub fn report_reporters(
    format: Format,
    text: TextOptions,
    json_file: Option<&std::path::Path>,
    html: Option<(
        &std::path::Path,
        [Vec<IntervalPoint>; fixscope_core::correlate::Stage::COUNT],
    )>,
) -> Result<Fanout> {
    let mut fanout = Fanout::new();
    let stdout = BufWriter::new(io::stdout());
    match format {
        Format::Text => fanout.add(Box::new(TextReporter::with_options(stdout, text))),
        Format::Json => fanout.add(Box::new(JsonReporter::new(stdout))),
    }
    if let Some(path) = json_file {
        let file = File::create(path)
            .with_context(|| format!("cannot create --json-file {}", path.display()))?;
        fanout.add(Box::new(JsonReporter::new(BufWriter::new(file))));
    }
    if let Some((path, intervals)) = html {
        File::create(path).with_context(|| format!("cannot create --html {}", path.display()))?;
        fanout.add(Box::new(
            HtmlReporter::new(path.to_path_buf(), RunInfo::of_this_process())
                .with_intervals(intervals),
        ));
    }
    Ok(fanout)
}

/// `fixscope pcap big.pcap | head` must end quietly, not with an error.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// Flushes stdout, ignoring a closed pipe.
pub fn flush_stdout() {
    let _ = io::stdout().flush();
}
