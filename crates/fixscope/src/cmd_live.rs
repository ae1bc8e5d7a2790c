//! `fixscope live`: the pipeline fed from the kernel's TC hooks through the BPF ring.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use fixscope_core::report::Reporter;
use fixscope_core::source::Flow;
use fixscope_core::Pipeline;
use fixscope_live::{KernelCounters, LiveCapture, LiveConfig, LiveError};

use crate::cli::LiveArgs;
use crate::keys::{Key, KeyReader, HELP};
use crate::output;
use crate::trace::TraceFile;
use fixscope_sim::Shutdown;

/// How long one `poll` may wait for records before the loop looks at keys and signals.
const POLL_WAIT: Duration = Duration::from_millis(20);
/// How often kernel counters are read and the interface is checked.
const HOUSEKEEPING_EVERY: Duration = Duration::from_millis(200);

pub fn run(args: &LiveArgs) -> Result<ExitCode> {
    let config = args.live_config()?;
    let pipeline_config = args.analysis.pipeline_config()?;
    let stop = Shutdown::on_signals().context("cannot install signal handlers")?;
    let mut reporter = output::stdout_reporter(args.analysis.json);
    let mut pipeline = Pipeline::new(pipeline_config);
    let control = RunControl {
        duration: args.duration_s.map(Duration::from_secs_f64),
        verbose: args.analysis.verbose,
        trace: args.analysis.trace.clone(),
    };
    let outcome = run_with(
        &config,
        &mut pipeline,
        &control,
        &stop,
        reporter.as_mut(),
        &mut || {},
    )?;
    output::flush_stdout();
    Ok(outcome)
}

/// How long a live run lasts and what it writes besides the report.
pub struct RunControl {
    pub duration: Option<Duration>,
    pub verbose: bool,
    pub trace: Option<std::path::PathBuf>,
}

/// Opens the capture, calls `on_attached`, and runs until a signal, `q`, the duration, or
/// the interface going away; then detaches and prints the final report.
pub fn run_with(
    config: &LiveConfig,
    pipeline: &mut Pipeline,
    control: &RunControl,
    stop: &Shutdown,
    reporter: &mut dyn Reporter,
    on_attached: &mut dyn FnMut(),
) -> Result<ExitCode> {
    let trace = match &control.trace {
        Some(path) => Some(TraceFile::attach(path, pipeline)?),
        None => None,
    };
    let verbose = control.verbose;
    let mut capture = LiveCapture::open(config).map_err(explain)?;
    on_attached();
    eprintln!(
        "fixscope: watching {} port(s) {} as {} via {}; Ctrl-C to stop",
        config.iface,
        config.ports,
        config.role,
        capture.attach_kind()
    );
    if verbose {
        eprintln!(
            "fixscope: ifindex {}, ring {} MiB (wakeup at {} KiB queued), idle {:?}, cpu {:?}, priority {:?}",
            capture.ifindex(),
            config.ring_bytes >> 20,
            config.wakeup_threshold_bytes >> 10,
            config.idle,
            config.cpu,
            capture.priority()
        );
    }
    if let Some(why) = capture.priority_fallback() {
        eprintln!("fixscope: note: consumer runs at normal priority: {why}");
    }
    let mut keys = KeyReader::new();
    if keys.interactive() {
        eprintln!("fixscope: {HELP}");
    }
    let started = Instant::now();
    let deadline = control.duration.map(|d| started + d);
    let mut kernel = KernelCounters::default();
    let mut interval_source = interval_counters(&kernel);
    let mut last_housekeeping = Instant::now();
    let mut interface_gone: Option<LiveError> = None;
    let mut report_error: Option<std::io::Error> = None;
    loop {
        if stop.is_triggered() || deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        capture
            .poll(POLL_WAIT, &mut |segment| {
                if let Err(e) =
                    pipeline.report_due_intervals(segment.ts_ns, &interval_source, reporter)
                {
                    report_error.get_or_insert(e);
                }
                pipeline.on_segment(segment);
                Flow::Continue
            })
            .map_err(explain)?;
        if let Some(e) = report_error.take() {
            return Err(e.into());
        }
        if last_housekeeping.elapsed() >= HOUSEKEEPING_EVERY {
            last_housekeeping = Instant::now();
            kernel = capture.counters().map_err(explain)?;
            interval_source = interval_counters(&kernel);
            if let Err(e) = capture.check_interface() {
                interface_gone = Some(e);
                break;
            }
        }
        // CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns: intervals and packets compare directly.
        pipeline.advance_to(fixscope_sim::monotonic_ns(), &interval_source, reporter)?;
        match keys.poll() {
            Some(Key::Summary) => {
                let source = summary_counters(
                    &kernel,
                    capture.malformed_records(),
                    capture.consumer_raises(),
                );
                pipeline.summary_now(&source, reporter)?;
            }
            Some(Key::Reset) => {
                pipeline.reset_stats();
                eprintln!("fixscope: statistics reset");
            }
            Some(Key::Quit) => break,
            Some(Key::Help) => eprintln!("fixscope: {HELP}"),
            None => {}
        }
    }
    // Drain what is still in the ring, then detach before the final report.
    let drain_until = Instant::now() + Duration::from_millis(50);
    while interface_gone.is_none() && Instant::now() < drain_until {
        let n = capture
            .poll(Duration::ZERO, &mut |segment| {
                pipeline.on_segment(segment);
                Flow::Continue
            })
            .map_err(explain)?;
        if n == 0 {
            break;
        }
    }
    if let Ok(k) = capture.counters() {
        kernel = k;
    }
    let malformed = capture.malformed_records();
    let raises = capture.consumer_raises();
    drop(capture);
    drop(keys);
    let source = summary_counters(&kernel, malformed, raises);
    pipeline.finish(&source, reporter)?;
    if let Some(trace) = trace {
        trace.finish()?;
    }
    if kernel.ring_drops() > 0 {
        eprintln!(
            "fixscope: warning: the kernel dropped {} records because the ring was full (raise --ring-mb)",
            kernel.ring_drops()
        );
    }
    match interface_gone {
        Some(e) => {
            eprintln!("fixscope: error: {e}; stopped and detached");
            Ok(ExitCode::FAILURE)
        }
        None => Ok(ExitCode::SUCCESS),
    }
}

/// Adds what a user can do about the common failures.
fn explain(e: LiveError) -> anyhow::Error {
    let hint = match &e {
        LiveError::NoSuchInterface(_) => " (see `ip link` for the interfaces of this host)",
        LiveError::NoBtfOrBpf(_) => " (needs Linux 5.15+ with BPF ring buffers)",
        _ => return anyhow::Error::new(e), // keeps libbpf's error as the cause
    };
    anyhow::anyhow!("{e}{hint}")
}

/// Kernel counters shown on every interval line.
fn interval_counters(k: &KernelCounters) -> Vec<(&'static str, u64)> {
    vec![
        ("kernel_records", k.records),
        ("kernel_ring_drops", k.ring_drops()),
        ("kernel_cut_bytes", k.cut_bytes),
    ]
}

/// Every kernel counter, for the summary, and how often the yielding consumer had to be
/// raised to normal priority.
fn summary_counters(
    k: &KernelCounters,
    malformed_records: u64,
    consumer_raises: u64,
) -> Vec<(&'static str, u64)> {
    vec![
        ("kernel_hook_calls", k.hook_calls),
        ("kernel_requests_in_range", k.requests_in_range),
        ("kernel_responses_in_range", k.responses_in_range),
        ("kernel_payload_bytes", k.payload_bytes),
        ("kernel_records", k.records),
        ("kernel_ring_drops_request", k.ring_drops_request),
        ("kernel_ring_drops_response", k.ring_drops_response),
        ("kernel_dropped_bytes", k.dropped_bytes),
        ("kernel_cut_bytes", k.cut_bytes),
        ("kernel_wakeups", k.wakeups),
        ("kernel_load_errors", k.load_errors),
        ("malformed_records", malformed_records),
        ("consumer_raises", consumer_raises),
    ]
}
