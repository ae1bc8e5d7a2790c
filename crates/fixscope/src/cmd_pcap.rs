//! `fixscope pcap`: capture files through the one driver loop.

use std::cell::RefCell;
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::rc::Rc;
use std::time::Duration;

use anyhow::{Context, Result};
use fixscope_core::ports::PortSet;
use fixscope_core::prefetch::{CaptureFiles, CaptureSource, InlineCaptureSource};
use fixscope_core::segment::Segment;
use fixscope_core::shutdown::Shutdown;
use fixscope_core::source::{Counter, Flow, Polled, Source, SourceError};
use fixscope_core::Pipeline;
use tempfile::SpooledTempFile;

use crate::cli::PcapArgs;
use crate::driver::{drive, RunLimits};
use crate::output;
use crate::progress::ReadProgress;
use crate::records::RecordsFile;
use crate::say;
use crate::trace::TraceFile;

pub fn run(args: &PcapArgs) -> Result<ExitCode> {
    let config = args.analysis.pipeline_config()?;
    fixscope_core::wire_stamp::choose(args.wire_timestamps);
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
    let mut config = config;
    config.timestamp_source = wire_clock(&captures);
    config.tls_keys = crate::cli_tls::key_log(&args.tls_keylog, &captures)?;
    if config.tls_keys.is_some() {
        // The summary names the TLS connections no pipeline of the run could decrypt.
        config.tls_undecrypted = Some(Default::default());
    }
    let md = &args.market_data;
    if md.tick_link.is_some() && md.md.is_empty() {
        anyhow::bail!("--tick-link names a market-data feed's packets: give the feed with --md");
    }
    if !md.md.is_empty() {
        let (feeds, ticks) = read_feeds(&md.md, md.tick_link.as_deref(), &captures)?;
        config.feeds = std::sync::Arc::new(feeds);
        config.ticks = ticks.map(std::sync::Arc::new);
    }
    let config = crate::cli_protocol::checked(config)?;
    run_plan(args, captures, config)
}

fn run_plan(
    args: &PcapArgs,
    captures: Vec<PathBuf>,
    config: fixscope_core::PipelineConfig,
) -> Result<ExitCode> {
    // Ctrl-C ends the reading early with the summary of what was read.
    let stop = Shutdown::on_signals().context("cannot install signal handlers")?;
    match plan(args, &captures) {
        Plan::OneThread | Plan::ReadingThread => run_one(args, captures, config, &stop),
        Plan::TwoStage => two_stages_or_one(args, captures, config, &stop),
        Plan::Sharded(threads) => {
            match run_sharded(args, captures.clone(), config.clone(), threads, &stop)? {
                PlanEnd::Done(code) => Ok(code),
                PlanEnd::NeedsOnePipeline(why) if why.one_stage => {
                    one_stage_again(&why.why);
                    run_one(args, captures, config, &stop)
                }
                PlanEnd::NeedsOnePipeline(why) => {
                    say::info(format!(
                        "{}: a FIX session cannot be split across threads; analysing the \
                         capture again on one pipeline (in two stages)",
                        why.why
                    ));
                    two_stages_or_one(args, captures, config, &stop)
                }
            }
        }
    }
}

/// The two-stage plan; again on one pipeline in one stage when it met a binary order
/// session (recognised by its login), which two stages cannot read.
fn two_stages_or_one(
    args: &PcapArgs,
    captures: Vec<PathBuf>,
    config: fixscope_core::PipelineConfig,
    stop: &Shutdown,
) -> Result<ExitCode> {
    match run_two_stage(args, captures.clone(), config.clone(), stop)? {
        PlanEnd::Done(code) => Ok(code),
        PlanEnd::NeedsOnePipeline(why) => {
            one_stage_again(&why.why);
            run_one(args, captures, config, stop)
        }
    }
}

fn one_stage_again(why: &str) {
    say::info(format!(
        "{why}: a binary order session's logical session spans its connections; analysing \
         the capture again on one pipeline (name its port with --protocol to start there)"
    ));
}

/// `--md`: the feeds' health, from a reading of the captures' datagrams of its own; with
/// `--tick-link`, the linked feed's ticks and the rule.
fn read_feeds(
    specs: &[fixscope_core::feeds::MdSpec],
    tick_link: Option<&str>,
    captures: &[PathBuf],
) -> Result<(
    Vec<fixscope_core::report::feeds::FeedSummary>,
    Option<fixscope_core::ticks::TickLinker>,
)> {
    fixscope_core::feeds::check_distinct(specs).map_err(anyhow::Error::msg)?;
    if captures.iter().any(|p| p.as_os_str() == "/dev/stdin") {
        anyhow::bail!("--md reads the captures twice: give files, not stdin");
    }
    let link = tick_link.map(|l| tick_rule(l, specs)).transpose()?;
    let (feeds, table) =
        fixscope_core::feeds::read_feeds_and_ticks(captures, specs, link.map(|(_, i)| i))?;
    let linker = link
        .zip(table)
        .map(|((rule, i), table)| fixscope_core::ticks::TickLinker {
            rule,
            feed: specs[i].name.clone(),
            table,
        });
    Ok((feeds, linker))
}

/// `--tick-link RULE[@FEED]`: the rule, and the index of the `--md` feed it reads (the
/// only one, or the one named as given to `--md`).
fn tick_rule(
    link: &str,
    specs: &[fixscope_core::feeds::MdSpec],
) -> Result<(fixscope_core::ticks::TickRule, usize)> {
    let (rule, feed) = match link.split_once('@') {
        Some((rule, feed)) => (rule, Some(feed)),
        None => (link, None),
    };
    let rule = rule
        .parse()
        .map_err(|e| anyhow::anyhow!("--tick-link: {e}"))?;
    let names = || {
        specs
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let index = match feed {
        Some(f) => specs.iter().position(|s| s.name == f).ok_or_else(|| {
            anyhow::anyhow!(
                "--tick-link: no --md feed is named {f:?} (the feeds: {})",
                names()
            )
        })?,
        None if specs.len() == 1 => 0,
        None => anyhow::bail!(
            "--tick-link: several --md feeds ({}): name the one the orders' sequence numbers \
             are of, after @",
            names()
        ),
    };
    Ok((rule, index))
}

/// The hardware clock the captures' frames carry, named for every report of the run
/// (`metawatch (device 7)`): read from the first capture's first packets before the run
/// (not from a pipe, which is read once). Leaked: one short name per process.
pub(crate) fn wire_clock(captures: &[PathBuf]) -> Option<&'static str> {
    let (kind, device) = fixscope_core::pcap::wire_clock(captures.first()?)?;
    let name = fixscope_core::wire_stamp::clock_name(kind, device);
    Some(Box::leak(name.into_boxed_str()))
}

/// How `fixscope pcap` spreads its work over threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plan {
    /// `--threads 1`, or the default on one core: everything on the calling thread.
    OneThread,
    /// One pipeline with a reading thread: `--trace` and Prometheus, which observe the
    /// pipeline itself at every message and interval.
    ReadingThread,
    /// One pipeline in two stages on two threads (`fixscope_core::twostage`): the default
    /// on 2 and 3 cores, `--threads 2`, and any capture that can be read only once.
    TwoStage,
    /// Connections sharded across this many worker pipelines (`fixscope_core::shard`):
    /// the default from [`MIN_CORES_TO_SHARD`] cores, `--threads 3` and more.
    Sharded(usize),
}

/// `fixscope pcap` on one pipeline: with its reading thread (`--trace`, Prometheus), or
/// on the calling thread alone ([`Plan::OneThread`]).
pub(crate) fn run_one(
    args: &PcapArgs,
    captures: Vec<PathBuf>,
    config: fixscope_core::PipelineConfig,
    stop: &Shutdown,
) -> Result<ExitCode> {
    let config = crate::link_discovery::adopt(config, &captures, &args.analysis.ports, stop)?;
    let mut pipeline = Pipeline::new(config);
    let trace = match &args.analysis.trace {
        Some(path) => Some(TraceFile::attach(path, &mut pipeline)?),
        None => None,
    };
    let records = RecordsFile::attach(&args.analysis.records, &mut pipeline, false)?;
    let discover = args.analysis.legs.discover();
    let mut reporters = if discover {
        fixscope_core::report::Fanout::new()
    } else {
        output::reporters(&args.analysis)?
    };
    let progress = ReadProgress::start(&captures, args.analysis.verbose);
    let ports = args.analysis.ports.clone();
    let files = captures.clone();
    let capture: Box<dyn CaptureFiles> = if plan(args, &captures) == Plan::OneThread {
        Box::new(InlineCaptureSource::new(captures, ports, stop.clone()))
    } else {
        Box::new(CaptureSource::new(captures, ports).context("cannot start the capture reader")?)
    };
    let mut source = WithProgress {
        capture,
        verbose: args.analysis.verbose,
        progress,
    };
    let limits = RunLimits {
        stop,
        duration: None,
        max_drain: crate::driver::MAX_DRAIN,
    };
    let code = drive(&mut source, &mut pipeline, &mut reporters, &limits)?;
    // The bar goes before anything more is said on stderr.
    source.progress = None;
    if let Some(trace) = trace {
        trace.finish()?;
    }
    if let Some(records) = records {
        records.finish()?;
    }
    say_capture_notes(&files, &args.analysis.ports, &source.capture.stats());
    if let Some(d) = pipeline.hops().and_then(|h| h.discovery.as_ref()) {
        print!("{}", d.report());
    }
    output::flush_stdout();
    Ok(code)
}

/// What the reading of the captures leaves to say, after the summary: a file cut short,
/// files merged because they overlap in time or were given out of time order.
fn say_capture_notes(
    files: &[PathBuf],
    ports: &PortSet,
    stats: &fixscope_core::pcap::CaptureStats,
) {
    if stats.segments_in_port_range == 0 {
        say::warn(nothing_watched(ports, stats));
    }
    if stats.truncated_file {
        say::warn(
            "a capture ended in the middle of a packet (truncated file); analysed up to there",
        );
    }
    if stats.guessed_acceptors > 0 {
        say::warn(format!(
            "{} FIX connection{} between two watched ports: neither a TCP handshake nor an \
             order or execution report told which end is the acceptor, the end with the \
             lower port was taken (watch only the acceptors' ports with -p to be sure)",
            stats.guessed_acceptors,
            if stats.guessed_acceptors == 1 {
                ""
            } else {
                "s"
            }
        ));
    }
    say_wire_clock_notes(&stats.trailers);
    let name = |i: u32| {
        files
            .get(i as usize)
            .map_or_else(String::new, |p| p.display().to_string())
    };
    if let Some((a, b)) = stats.overlapping_files {
        say::info(format!(
            "{} and {} overlap in time: their packets were merged by timestamp (as mergecap \
             merges them), the captures read as one timeline",
            name(a),
            name(b)
        ));
    } else if stats.reordered_files {
        say::info(
            "the captures were not given in time order: they were read in time order (the \
             first packet of each)",
        );
    }
}

/// What the tap's clock says beside the capture host's: a 37 s lead is TAI against UTC; and
/// frames the tap did not stamp were timed by the host, whose clock is another.
fn say_wire_clock_notes(t: &fixscope_core::wire_stamp::TrailerCounters) {
    let mode = fixscope_core::wire_stamp::chosen();
    if mode.needs_keyframes() && t.keyframes == 0 {
        say::warn(format!(
            "--wire-timestamps {}: no keyframe in the captures (IPv4 protocol 253{}): its \
             ticks cannot be read, every frame was timed by the capture host; a capture \
             filter must keep the keyframes (docs/tap.md)",
            mode.name(),
            if mode == fixscope_core::wire_stamp::WireStampMode::Fusion {
                " or EtherType 0x88B5"
            } else {
                ""
            }
        ));
    }
    let (Some((kind, _)), Some(ahead_ns)) = (t.first, t.first_offset_ns) else {
        return;
    };
    if t.tai_against_utc() {
        say::info(format!(
            "the tap's clock ({}) runs 37 s ahead of the capture host's: it stamps TAI, the \
             host UTC (a Cisco 3550-T does unless a UTC offset is configured); latencies are \
             the tap's, times of day TAI",
            kind.name()
        ));
    }
    if t.trailer_missing > 0 {
        say::warn(format!(
            "{} frames carried no {} stamp and were timed by the capture host, whose clock \
             the tap's ran {:.3} ms ahead of at the first stamp: an order timed by both \
             clocks is off by as much (trailer_missing)",
            t.trailer_missing,
            kind.name(),
            ahead_ns as f64 / 1e6
        ));
    }
}

/// The plan for `--threads` (else the cores): see [`Plan`]. `--trace` and Prometheus
/// need the one pipeline's messages or per-session figures at every interval; a capture
/// that can be read only once (stdin, a pipe) cannot be sharded (every worker reads every
/// file, and a run that needs one pipeline reads it again).
fn plan(args: &PcapArgs, captures: &[PathBuf]) -> Plan {
    let a = &args.analysis;
    if args.threads == Some(1) {
        return Plan::OneThread;
    }
    let asked = args.threads.is_some();
    if a.trace.is_some()
        || !a.legs.legs.is_empty()
        || args.points.given()
        || a.prometheus.is_some()
        || a.prometheus_textfile.is_some()
        || a.protocol
            .protocol
            .iter()
            .any(|p| p.name != fixscope_core::protocol::ProtocolName::Fix)
    {
        if asked {
            say::info(
                "--trace, --leg, --point, a binary --protocol and Prometheus run on one \
                 pipeline: --threads ignored",
            );
        }
        return Plan::ReadingThread;
    }
    let threads = match args.threads {
        Some(n) => n,
        None => default_threads(),
    };
    let records = a.records.records.is_some() || a.records.clickhouse.is_some();
    if records && threads > 2 {
        // Shards would each write their own files: one correlator's rows, in one order.
        if asked {
            say::info("--records runs on one pipeline in two stages: --threads ignored");
        }
        return Plan::TwoStage;
    }
    match threads {
        1 => Plan::OneThread,
        0 | 2 => Plan::TwoStage,
        n => {
            let rereadable = fixscope_core::twostage::rereadable(captures);
            if rereadable {
                Plan::Sharded(n)
            } else {
                if asked {
                    say::info(
                        "a capture on stdin or a pipe is read once: one pipeline in two \
                         stages, --threads ignored",
                    );
                }
                Plan::TwoStage
            }
        }
    }
}

/// Cores from which the default shards: one worker pipeline per core. Below, one
/// pipeline in two stages keeps two cores busy, and N workers would each decode every
/// packet (BENCHMARKS.md §2c–§2e: on 2 vCPUs two workers cost 1.45x the CPU of one
/// pipeline and are no faster; per-thread CPU predicts ~1.4x at 4 cores, ~1.6x at 5+).
const MIN_CORES_TO_SHARD: usize = 4;

/// The default `--threads`: one thread on one core, two stages on 2 and 3 cores, one
/// worker pipeline per core from [`MIN_CORES_TO_SHARD`].
fn default_threads() -> usize {
    match std::thread::available_parallelism().map_or(1, |n| n.get()) {
        1 => 1,
        cores if cores < MIN_CORES_TO_SHARD => 2,
        cores => cores,
    }
}

/// `fixscope pcap` as one pipeline in two stages (`fixscope_core::twostage`): the same
/// output and the same end as the driver's (summary, then a file's error).
/// `fixscope pcap` in two stages (`fixscope_core::twostage`). Files' stdout is held back
/// until the end, as the sharded plan's: a run that meets a binary order session is
/// analysed again on one pipeline and must not have printed anything.
fn run_two_stage(
    args: &PcapArgs,
    captures: Vec<PathBuf>,
    config: fixscope_core::PipelineConfig,
    stop: &Shutdown,
) -> Result<PlanEnd> {
    let spool = fixscope_core::twostage::rereadable(&captures).then(Spool::default);
    let mut reporters = match &spool {
        Some(spool) => output::reporters_into(&args.analysis, Box::new(spool.clone()), |r| r)?,
        None => output::reporters(&args.analysis)?,
    };
    // `--records`: the writer starts here (a directory it cannot use is said before
    // anything is read) and its sink goes to stage B, which has the orders.
    let (records, stage_b_setup) = match RecordsFile::start(&args.analysis.records, false)? {
        Some((file, to_attach)) => {
            let setup: fixscope_core::twostage::StageBSetup = Box::new(move |pipeline| {
                to_attach.attach(pipeline);
            });
            (Some(file), Some(setup))
        }
        None => (None, None),
    };
    let progress = ReadProgress::start(&captures, args.analysis.verbose);
    let mut on_file_done = file_done_notice(&captures, args.analysis.verbose, &progress);
    let outcome = fixscope_core::twostage::run(
        captures.clone(),
        args.analysis.ports.clone(),
        config,
        stage_b_setup,
        &mut reporters,
        stop,
        &mut on_file_done,
    );
    // The bar goes before anything more is said on stderr.
    drop(on_file_done);
    drop(progress);
    let outcome = match outcome {
        Err(e) => match fixscope_core::shard::NeedsOnePipeline::is(&e) {
            Some(why) => return Ok(PlanEnd::NeedsOnePipeline(why.clone())),
            None => {
                drop(reporters);
                if let Some(spool) = &spool {
                    spool.copy_to_stdout()?;
                }
                return Err(e.into());
            }
        },
        Ok(outcome) => outcome,
    };
    drop(reporters);
    if let Some(spool) = &spool {
        spool.copy_to_stdout()?;
    }
    if let Some(records) = records {
        records.finish()?;
    }
    Ok(PlanEnd::Done(end_of_run(
        &captures,
        &args.analysis.ports,
        outcome,
    )?))
}

/// What a run with threads says as each file is read to its end: the progress bar's
/// count, and with `-v` the counters so far.
fn file_done_notice<'a>(
    files: &'a [PathBuf],
    verbose: bool,
    progress: &'a Option<ReadProgress>,
) -> impl FnMut(usize, &fixscope_core::pcap::CaptureStats) + 'a {
    move |index, s| {
        if let Some(p) = progress {
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
    }
}

/// The end of a run with threads, as the one pipeline ends one (`run_one`, in its
/// order): a file's error after the summary (failing), or alone when nothing was read;
/// then a truncated file said.
fn end_of_run(
    files: &[PathBuf],
    ports: &PortSet,
    outcome: fixscope_core::shard::Outcome,
) -> Result<ExitCode> {
    let mut code = ExitCode::SUCCESS;
    if let Some(e) = outcome.error {
        let e = SourceError::from(e);
        if outcome.segments == 0 {
            return Err(anyhow::anyhow!(e));
        }
        say::error(format!("{e}; stopped"));
        code = ExitCode::FAILURE;
    }
    say_capture_notes(files, ports, &outcome.stats);
    output::flush_stdout();
    Ok(code)
}

/// What a run that found no segment of the watched ports says: what the captures held
/// instead (the busiest TCP ports, where the acceptor's port usually is).
fn nothing_watched(ports: &PortSet, stats: &fixscope_core::pcap::CaptureStats) -> String {
    let head = format!("no TCP segment of the watched ports (-p {ports}): no order was analysed");
    if stats.packets == 0 {
        return format!("{head}; the capture holds no packet");
    }
    if stats.tcp_segments == 0 {
        return format!(
            "{head}; the capture holds no TCP segment ({} packets: {} not TCP, {} IP fragments, \
             {} undecodable)",
            stats.packets, stats.not_tcp, stats.ip_fragments, stats.decode_errors
        );
    }
    let busiest: Vec<String> = stats
        .busiest_ports
        .ports()
        .map(|(port, n)| format!("{port} ({n})"))
        .collect();
    format!(
        "{head}; the {} TCP segments read are all on other ports, the busiest (segments to or \
         from each): {} — the acceptor's port is usually among them",
        stats.tcp_segments,
        busiest.join(", ")
    )
}

enum PlanEnd {
    Done(ExitCode),
    /// The input needs one pipeline (why); nothing was written to stdout.
    NeedsOnePipeline(fixscope_core::shard::NeedsOnePipeline),
}

/// `fixscope pcap` on `threads` worker pipelines (`fixscope_core::shard`): the same output
/// as one pipeline's, and the same end as the driver's (summary, then a file's error).
/// Stdout is held back in a temporary file until the end — a run that turns out to need
/// one pipeline (a FIX session failing over to another address) must not have printed
/// anything — then copied out; `--json-file`, `--hlog`, `--html` and `--hgrm` are
/// created again by the one-pipeline run.
fn run_sharded(
    args: &PcapArgs,
    captures: Vec<PathBuf>,
    config: fixscope_core::PipelineConfig,
    threads: usize,
    stop: &Shutdown,
) -> Result<PlanEnd> {
    let spool = Spool::default();
    let mut reporters = output::reporters_into(&args.analysis, Box::new(spool.clone()), |r| r)?;
    let files = captures.clone();
    let progress = ReadProgress::start(&captures, args.analysis.verbose);
    let mut on_file_done = file_done_notice(&files, args.analysis.verbose, &progress);
    let outcome = fixscope_core::shard::run(
        captures,
        args.analysis.ports.clone(),
        config,
        threads,
        &mut reporters,
        stop,
        &mut on_file_done,
    );
    drop(on_file_done);
    drop(progress);
    let outcome = match outcome {
        Err(e) => match fixscope_core::shard::NeedsOnePipeline::is(&e) {
            Some(why) => return Ok(PlanEnd::NeedsOnePipeline(why.clone())),
            None => {
                drop(reporters);
                spool.copy_to_stdout()?;
                return Err(e.into());
            }
        },
        Ok(outcome) => outcome,
    };
    drop(reporters);
    spool.copy_to_stdout()?;
    Ok(PlanEnd::Done(end_of_run(
        &files,
        &args.analysis.ports,
        outcome,
    )?))
}

/// Stdout held back: in memory up to 64 MiB (a day of JSON interval lines), then in a
/// temporary file.
#[derive(Clone)]
struct Spool(Rc<RefCell<BufWriter<SpooledTempFile>>>);

impl Default for Spool {
    fn default() -> Self {
        Spool(Rc::new(RefCell::new(BufWriter::new(SpooledTempFile::new(
            64 << 20,
        )))))
    }
}

impl Write for Spool {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.borrow_mut().flush()
    }
}

impl Spool {
    /// Copies what was written to stdout (the reporters are done with it).
    fn copy_to_stdout(&self) -> Result<()> {
        let mut spool = self.0.borrow_mut();
        spool
            .flush()
            .context("cannot hold stdout back in a temporary file")?;
        let file = spool.get_mut();
        file.seek(SeekFrom::Start(0))
            .context("cannot read back stdout")?;
        let mut out = io::stdout().lock();
        io::copy(file, &mut out).context("cannot write to stdout")?;
        out.flush().context("cannot write to stdout")?;
        Ok(())
    }
}

/// The capture source, saying which files it has read when `-v` asks.
struct WithProgress {
    capture: Box<dyn CaptureFiles>,
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
