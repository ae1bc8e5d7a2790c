//! The reporters a run writes to, chosen from the flags in one place, and treating a closed
//! pipe as a normal end.
//!
//! stdout carries one format (`--format text|json`, `--json` for short); further
//! destinations (`--json-file FILE`; later an HdrHistogram log, Prometheus, a terminal UI)
//! are reporters added to the same [`Fanout`], so no command knows which outputs exist.

use std::fs::File;
use std::io::{self, BufWriter, Write};

use anyhow::{Context, Result};
use fixscope_core::report::json::JsonReporter;
use fixscope_core::report::text::TextReporter;
use fixscope_core::report::{Fanout, IntervalReport, Reporter, SummaryReport};

use crate::cli::{AnalysisArgs, Format};
use crate::prometheus::PrometheusReporter;
use crate::say;

/// Every reporter the flags ask for.
pub fn reporters(args: &AnalysisArgs) -> Result<Fanout> {
    let mut fanout = Fanout::new();
    for r in report_outputs(args)? {
        if args.interval_s == 0.0 {
            // `-r 0` with `--prometheus`: the pipeline still reports every second for the
            // metrics, but the user asked for no interval lines.
            fanout.add(Box::new(SummaryOnly(r)));
        } else {
            fanout.add(r);
        }
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

/// The reporters of text and JSON lines.
fn report_outputs(args: &AnalysisArgs) -> Result<Vec<Box<dyn Reporter>>> {
    let mut fanout: Vec<Box<dyn Reporter>> = Vec::new();
    let stdout = BufWriter::new(io::stdout());
    match args.stdout_format() {
        Format::Text => fanout.push(Box::new(TextReporter::new(stdout))),
        Format::Json => fanout.push(Box::new(JsonReporter::new(stdout))),
    }
    if let Some(path) = &args.json_file {
        let file = File::create(path)
            .with_context(|| format!("cannot create --json-file {}", path.display()))?;
        fanout.push(Box::new(JsonReporter::new(BufWriter::new(file))));
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
