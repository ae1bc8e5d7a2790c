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
    let mut pipeline = Pipeline::new(config);
    let trace = match &args.analysis.trace {
        Some(path) => Some(TraceFile::attach(path, &mut pipeline)?),
        None => None,
    };
    let mut reporters = output::reporters(&args.analysis)?;
    // Ctrl-C ends the reading early with the summary of what was read.
    let stop = Shutdown::on_signals().context("cannot install signal handlers")?;
    let mut source = WithProgress {
        capture: CaptureSource::new(captures, args.analysis.ports.clone())
            .context("cannot start the capture reader")?,
        verbose: args.analysis.verbose,
    };
    let limits = RunLimits {
        stop: &stop,
        duration: None,
        max_drain: crate::driver::MAX_DRAIN,
    };
    let code = drive(&mut source, &mut pipeline, &mut reporters, &limits)?;
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

/// The capture source, saying which files it has read when `-v` asks.
struct WithProgress {
    capture: CaptureSource,
    verbose: bool,
}

impl Source for WithProgress {
    fn poll(
        &mut self,
        wait: Duration,
        on_segment: &mut dyn FnMut(&Segment<'_>) -> Flow,
    ) -> Result<Polled, SourceError> {
        let polled = self.capture.poll(wait, on_segment);
        if self.verbose {
            for file in self.capture.finished_files() {
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
