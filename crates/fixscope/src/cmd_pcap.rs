//! `fixscope pcap`: the pipeline fed from capture files.

use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use fixscope_core::pcap::CaptureStats;
use fixscope_core::prefetch::{read_captures_in_background, Flow};
use fixscope_core::Pipeline;

use crate::cli::PcapArgs;
use crate::output;
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
    let mut reporter = output::stdout_reporter(args.analysis.json);
    // The captures are read and decoded on a second thread while the pipeline runs here.
    let mut report_error: Option<io::Error> = None;
    let stats = read_captures_in_background(
        &captures,
        &args.analysis.ports,
        |segment| {
            if let Err(e) = pipeline.report_due_intervals(segment.ts_ns, &[], reporter.as_mut()) {
                report_error = Some(e);
                return Flow::Stop;
            }
            pipeline.on_segment(segment);
            Flow::Continue
        },
        |path, stats| {
            if args.analysis.verbose {
                eprintln!(
                    "fixscope: read {}; so far {} packets, {} TCP segments in port range, {} decode errors",
                    path.display(),
                    stats.packets,
                    stats.segments_in_port_range,
                    stats.decode_errors
                );
            }
        },
    );
    if let Some(e) = report_error {
        return Err(e.into());
    }
    let stats = stats.map_err(anyhow::Error::new)?;
    let source = capture_counters(&stats);
    pipeline.finish(&source, reporter.as_mut())?;
    if let Some(trace) = trace {
        trace.finish()?;
    }
    if stats.truncated_file {
        eprintln!("fixscope: warning: a capture ended in the middle of a packet (truncated file); analysed up to there");
    }
    output::flush_stdout();
    Ok(ExitCode::SUCCESS)
}

/// The capture's own counters, for the report's `source` section.
fn capture_counters(s: &CaptureStats) -> Vec<fixscope_core::source::Counter> {
    [
        ("capture_packets", s.packets),
        ("capture_tcp_segments", s.tcp_segments),
        ("capture_segments_in_port_range", s.segments_in_port_range),
        ("capture_not_tcp", s.not_tcp),
        ("capture_ip_fragments", s.ip_fragments),
        ("capture_decode_errors", s.decode_errors),
        ("capture_truncated_segments", s.truncated_segments),
        (
            "capture_unsupported_link_packets",
            s.unsupported_link_packets,
        ),
    ]
    .map(|(k, v)| (k.to_string(), v))
    .to_vec()
}
