//! `fixscope pcap`: capture files through the one driver loop.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use fixscope_core::prefetch::CaptureSource;
use fixscope_core::segment::Segment;
use fixscope_core::shutdown::Shutdown;
use fixscope_core::source::{Counter, Flow, Polled, Source, SourceError};
use fixscope_core::Pipeline;

use crate::cli::PcapArgs;
use crate::driver::{drive, RunLimits};
use crate::output;
use crate::progress::ReadProgress;
use crate::say;
use crate::trace::TraceFile;

pub fn run(args: &PcapArgs) -> Result<ExitCode> {
    let config = args.analysis.pipeline_config()?;
    // `-` reads a capture streamed on stdin (`tcpdump -w - | fixscope pcap - -p 9878`).
    let captures: Vec<PathBuf> = args
        .captures
        .iter()
        .map(|p| {
            if p.as_os_str() == "-" {
                PathBuf::from("/dev/stdin")
            } else {
                p.clone()
            }
        })
        .collect();
    for path in &captures {
        // Fail before printing anything when a file cannot even be opened.
        std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    }
    let threads = worker_threads(args);
    if threads > 1 {
        return run_sharded(args, captures, config, threads);
    }
    let mut pipeline = Pipeline::new(config);
    let trace = match &args.analysis.trace {
        Some(path) => Some(TraceFile::attach(path, &mut pipeline)?),
        None => None,
    };
    let mut reporters = output::reporters(&args.analysis)?;
    // Ctrl-C ends the reading early with the summary of what was read.
    let stop = Shutdown::on_signals().context("cannot install signal handlers")?;
    let progress = ReadProgress::start(&captures, args.analysis.verbose);
    let mut source = WithProgress {
        capture: CaptureSource::new(captures, args.analysis.ports.clone())
            .context("cannot start the capture reader")?,
        verbose: args.analysis.verbose,
        progress,
    };
    let limits = RunLimits {
        stop: &stop,
        duration: None,
        max_drain: crate::driver::MAX_DRAIN,
    };
    let code = drive(&mut source, &mut pipeline, &mut reporters, &limits)?;
    // The bar goes before anything more is said on stderr.
    source.progress = None;
    if let Some(trace) = trace {
        trace.finish()?;
    }
    if source.capture.stats().truncated_file {
        say::warn(
            "a capture ended in the middle of a packet (truncated file); analysed up to there",
        );
    }
    output::flush_stdout();
    Ok(code)
}

/// How many worker pipelines: `--threads`, else one per core but the reader's; one when an output
/// needs the pipeline's messages or per-session figures at every interval (`--trace`,
/// Prometheus).
fn worker_threads(args: &PcapArgs) -> usize {
    let a = &args.analysis;
    if a.trace.is_some() || a.prometheus.is_some() || a.prometheus_textfile.is_some() {
        if args.threads.is_some_and(|n| n > 1) {
            say::info("--trace and Prometheus run on one pipeline: --threads ignored");
        }
        return 1;
    }
    args.threads.unwrap_or_else(default_workers)
}

/// One pipeline unless `--threads N` asks for more. Sharding is opt-in for now: a FIX
/// session that fails over to another client address (valid input) stops a sharded run
/// with an error, and a default run must never fail on valid input; and its gain is bound
/// by the one reader (~2x on many cores, none on 2 vCPUs: BENCHMARKS.md §2b).
fn default_workers() -> usize {
    1
}

/// `fixscope pcap` on `threads` worker pipelines (`fixscope_core::shard`): the same output
/// as one pipeline's, and the same end as the driver's (summary, then a file's error).
fn run_sharded(
    args: &PcapArgs,
    captures: Vec<PathBuf>,
    config: fixscope_core::PipelineConfig,
    threads: usize,
) -> Result<ExitCode> {
    let mut reporters = output::reporters(&args.analysis)?;
    let stop = Shutdown::on_signals().context("cannot install signal handlers")?;
    let verbose = args.analysis.verbose;
    let files = captures.clone();
    let progress = ReadProgress::start(&captures, verbose);
    let mut on_file_done = |index: usize, s: &fixscope_core::pcap::CaptureStats| {
        if let Some(p) = &progress {
            p.file_done();
        }
        if verbose {
            say::info(format!(
                "read {}; so far {} packets, {} TCP segments in port range, {} decode errors",
                files[index].display(),
                s.packets,
                s.segments_in_port_range,
                s.decode_errors
            ));
        }
    };
    let outcome = fixscope_core::shard::run(
        captures,
        args.analysis.ports.clone(),
        config,
        threads,
        &mut reporters,
        &stop,
        &mut on_file_done,
    )?;
    drop(progress);
    if outcome.stats.truncated_file {
        say::warn(
            "a capture ended in the middle of a packet (truncated file); analysed up to there",
        );
    }
    let mut code = ExitCode::SUCCESS;
    if let Some(e) = outcome.error {
        let e = SourceError::from(e);
        if outcome.segments == 0 {
            return Err(anyhow::anyhow!(e));
        }
        say::error(format!("{e}; stopped"));
        code = ExitCode::FAILURE;
    }
    output::flush_stdout();
    Ok(code)
}

/// The capture source, saying which files it has read when `-v` asks.
struct WithProgress {
    capture: CaptureSource,
    verbose: bool,
    /// The progress bar (a terminal on stderr only).
    progress: Option<ReadProgress>,
}

impl Source for WithProgress {
    fn poll(
        &mut self,
        wait: Duration,
        on_segment: &mut dyn FnMut(&Segment<'_>) -> Flow,
    ) -> Result<Polled, SourceError> {
        let polled = self.capture.poll(wait, on_segment);
        for file in self.capture.finished_files() {
            if let Some(p) = &self.progress {
                p.file_done();
            }
            if self.verbose {
                let s = &file.stats;
                say::info(format!(
                    "read {}; so far {} packets, {} TCP segments in port range, {} decode errors",
                    file.path.display(),
                    s.packets,
                    s.segments_in_port_range,
                    s.decode_errors
                ));
            }
        }
        polled
    }

    fn now_ns(&self) -> Option<u64> {
        self.capture.now_ns()
    }

    fn unix_offset_ns(&self) -> i64 {
        self.capture.unix_offset_ns()
    }

    fn counters(&mut self) -> Vec<Counter> {
        self.capture.counters()
    }

    fn interval_counters(&mut self) -> Vec<Counter> {
        self.capture.interval_counters()
    }

    fn close(&mut self) -> Result<(), SourceError> {
        self.capture.close()
    }
}
