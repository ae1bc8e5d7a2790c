//! `fixscope pcap` on two threads as one pipeline in two stages (issue #22): the default
//! below 4 cores and `--threads 2`.
//!
//! ```text
//!  stage A: calling thread                            stage B: fixscope-stage-b
//!  read in place (mmap), decode, connection   ──▶    field extraction, session layer,
//!  table, TCP reassembly, FIX framing        batches  correlation, statistics
//!  (a Pipeline in stage A: pipeline/forward.rs)
//!  the interval reports, the summary, output  ◀──    each interval handed over whole
//!  (pipeline/report_side.rs)                 (same    (recorders swapped, not copied),
//!                                            channel  the end's statistics
//!                                            as the
//!                                            emptied batches)
//! ```
//!
//! Cut after framing: the profile of one pipeline (BENCHMARKS.md §2d) puts about half the
//! work on each side, where sharding on two cores repeats the reading and decoding per
//! worker. Stage A hands stage B, in stream order, what the one pipeline does between the
//! two halves (`pipeline/forward.rs`: the clock for `-t`, each framed message, capture
//! holes, closed connections, interval ends with A's counters, the end); stage B makes
//! exactly the one pipeline's calls in exactly its order, so every figure is one
//! pipeline's, by construction. Stage B bounds the run, so it does not report: at each
//! interval's end it hands the interval over and goes on, and the reports are made on
//! stage A's thread, which has time to spare and owns the reporters — the one pipeline's
//! report code on the one pipeline's figures (`pipeline/report_side.rs`), so every output
//! is one pipeline's, byte for byte (tested in `tests/sharded.rs` on the testdata
//! captures, a many-connection capture, pcapng and stdin). The hand-overs come back with
//! the emptied batches, on one channel: stage A takes them as it sends each batch — no
//! thread is woken for a report, and nothing waits on two channels.
//!
//! Every input works: a legacy pcap file is read in place and its messages travel as
//! ranges of the mapping; pcapng, a pipe or stdin are read by the streaming reader and
//! their messages are copied into the batches. `--trace` and Prometheus stay on one
//! pipeline with its reading thread (`fixscope pcap` decides). What learns from stage B's
//! orders (`--records`: its record sink and message observer) is attached to stage B's
//! pipeline on its own thread by the caller's [`StageBSetup`].

use std::cell::Cell;
use std::io;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;

use crate::pcap::{read_capture_shared, CaptureStats, Flow};
use crate::pipeline::forward::{Back, EventBatch, Forwarder, BATCHES_IN_FLIGHT};
use crate::pipeline::handover::{IntervalToReport, StageEnd, ToReports, REPORTS_IN_FLIGHT};
use crate::pipeline::report_side::{ReportSide, ReportsChannel};
use crate::pipeline::{Pipeline, PipelineConfig};
use crate::ports::PortSet;
use crate::prefetch::merge::{MergedCaptures, Step};
use crate::report::Reporter;
use crate::segment::Segment;
use crate::shard::Outcome;
use crate::shutdown::Shutdown;

/// Attaches to stage B's pipeline, on stage B's thread, what learns from its orders
/// (`set_record_sink`, `set_message_observer`): they need not be `Send`, only this is.
pub type StageBSetup = Box<dyn FnOnce(&mut Pipeline) + Send>;

/// Analyses `captures` in two stages and reports through `reporter` (on the calling
/// thread): every interval, then the summary — the bytes one pipeline would report, and
/// the end the driver would make (a file's error after the summary of what came before
/// it; no summary when nothing was read). `stop` ends the reading early at a segment
/// (the summary covers what was read); `on_file_done` hears of each file read to its end.
pub fn run(
    captures: Vec<PathBuf>,
    ports: PortSet,
    config: PipelineConfig,
    stage_b_setup: Option<StageBSetup>,
    reporter: &mut dyn Reporter,
    stop: &Shutdown,
    on_file_done: &mut dyn FnMut(usize, &CaptureStats),
) -> io::Result<Outcome> {
    let (full_tx, full_rx) = mpsc::sync_channel::<EventBatch>(BATCHES_IN_FLIGHT);
    let (back_tx, back_rx) = mpsc::sync_channel::<Back>(BATCHES_IN_FLIGHT + REPORTS_IN_FLIGHT);
    let (spares_tx, spares_rx) = mpsc::sync_channel::<Box<IntervalToReport>>(REPORTS_IN_FLIGHT);
    let stage_b = {
        let config = config.clone();
        std::thread::Builder::new()
            .name("fixscope-stage-b".into())
            .spawn(move || {
                let mut pipeline = Pipeline::new(config).into_stage_b();
                if let Some(setup) = stage_b_setup {
                    setup(&mut pipeline);
                }
                let mut out = ReportsChannel {
                    back: back_tx,
                    spares: spares_rx,
                };
                run_stage_b(&mut pipeline, &full_rx, &mut out);
            })?
    };
    let mut reports = Reports {
        side: ReportSide::new(&config),
        spares: spares_tx,
        reporter,
        on_file_done,
        rereadable: rereadable(&captures),
    };
    let mut stage_a = Pipeline::new(config).into_stage_a(Forwarder::new(full_tx, back_rx));
    let result = run_stage_a(&mut stage_a, &captures, &ports, stop, &mut reports);
    // On an early return (a reporter failed) stage B's next send fails and it stops.
    drop(stage_a);
    if let Err(panic) = stage_b.join() {
        std::panic::resume_unwind(panic);
    }
    let end = result?;
    Ok(Outcome {
        stats: end.stats,
        segments: end.segments,
        error: end.error,
    })
}

/// Whether every capture is a regular file, which can be read again (a pipe or stdin is
/// read once): the plans that may stop and begin again on one pipeline ask.
pub fn rereadable(captures: &[PathBuf]) -> bool {
    captures
        .iter()
        .all(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file()))
}

/// The reporting side, on stage A's thread (the calling thread, which owns the
/// reporters): stage A has time to spare where stage B bounds the run, and it takes what
/// stage B hands over at each batch it sends — no thread is woken per interval.
struct Reports<'r> {
    side: ReportSide,
    /// Emptied hand-overs go back to stage B on this.
    spares: mpsc::SyncSender<Box<IntervalToReport>>,
    reporter: &'r mut dyn Reporter,
    on_file_done: &'r mut dyn FnMut(usize, &CaptureStats),
    /// Every capture is a file that can be read again (not a pipe or stdin).
    rereadable: bool,
}

impl Reports<'_> {
    /// Reports what stage B handed over; `Some` at the end.
    fn take(&mut self, report: ToReports) -> io::Result<Option<StageEnd>> {
        match report {
            ToReports::Interval(mut handover) => {
                self.side.interval(&mut handover, self.reporter)?;
                // Stage B may have ended; then nobody needs it back.
                let _ = self.spares.try_send(handover);
            }
            ToReports::FileDone(index, stats) => (self.on_file_done)(index, &stats),
            ToReports::End(end) => return self.side.end(*end, self.reporter).map(Some),
        }
        Ok(None)
    }
}

/// Stage B: applies stage A's batches until the end (or until stage A's thread is gone),
/// handing each emptied batch back.
fn run_stage_b(
    pipeline: &mut Pipeline,
    full: &mpsc::Receiver<EventBatch>,
    out: &mut ReportsChannel,
) {
    while let Ok(mut batch) = full.recv() {
        if pipeline.apply(&mut batch, out).is_break() {
            return;
        }
        batch.clear();
        if !out.give_back(batch) {
            return;
        }
    }
}

/// Stage A: every file in order (as `InlineCaptureSource` and the driver read them: the
/// interval check before each segment, a stop checked at every segment, the first file's
/// error ends the reading; several files merged by time), then the end; the reports stage
/// B hands back are made between segments, and after the end until stage B's end.
fn run_stage_a(
    pipeline: &mut Pipeline,
    captures: &[PathBuf],
    ports: &PortSet,
    stop: &Shutdown,
    reports: &mut Reports<'_>,
) -> io::Result<StageEnd> {
    let mut stats = CaptureStats::default();
    let mut segments = 0u64;
    let mut error = None;
    let mut report_error = None;
    // The reading ended at a stop (Ctrl-C) before the end of the captures.
    let mut stopped = false;
    if captures.len() > 1 {
        // Merged: the segments are copies (no mapping to refer to).
        pipeline.forwarder().set_map(None);
        let mut merged = MergedCaptures::new(captures.to_vec(), ports.clone(), true);
        loop {
            let step = merged.step(&mut |segment, _| {
                stage_a_segment(
                    pipeline,
                    segment,
                    stop,
                    reports,
                    &mut report_error,
                    &mut segments,
                )
            });
            if let Some(e) = report_error {
                return Err(e);
            }
            match step {
                Ok(Step::FileDone(index)) => pipeline.forwarder().file_done(index, merged.stats()),
                Ok(Step::Stopped) => {
                    stopped = true;
                    break;
                }
                Ok(Step::Ended) => break,
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
        stats = merged.stats();
    } else {
        for (index, path) in captures.iter().enumerate() {
            pipeline.forwarder().set_map(None);
            let new_map = Cell::new(None);
            let result = read_capture_shared(
                path,
                ports,
                &mut stats,
                true,
                |map| new_map.set(Some(Arc::clone(map))),
                |segment, _| {
                    if let Some(map) = new_map.take() {
                        pipeline.forwarder().set_map(Some(map));
                    }
                    let flow = stage_a_segment(
                        pipeline,
                        segment,
                        stop,
                        reports,
                        &mut report_error,
                        &mut segments,
                    );
                    stopped = flow == Flow::Stop;
                    flow
                },
            );
            if let Some(e) = report_error {
                return Err(e);
            }
            if let Err(e) = result {
                error = Some(e);
                break;
            }
            if stopped {
                break;
            }
            pipeline.forwarder().file_done(index, stats);
        }
    }
    pipeline.stage_a_finish(stats, error, segments, stopped && stop.is_triggered());
    while let Some(report) = pipeline.forwarder().wait_report() {
        if let Some(end) = reports.take(report)? {
            return Ok(end);
        }
    }
    Err(io::Error::other("stage B ended without its end"))
}

/// One segment in stage A: the reports stage B handed back first, then a stop (the
/// segment is not fed), else the interval check and the segment.
#[inline]
fn stage_a_segment(
    pipeline: &mut Pipeline,
    segment: &Segment<'_>,
    stop: &Shutdown,
    reports: &mut Reports<'_>,
    report_error: &mut Option<io::Error>,
    segments: &mut u64,
) -> Flow {
    while report_error.is_none() {
        let Some(report) = pipeline.forwarder().next_report() else {
            break;
        };
        *report_error = reports.take(report).err();
    }
    if stop.is_triggered() || pipeline.forwarder().gone() || report_error.is_some() {
        return Flow::Stop;
    }
    *segments += 1;
    pipeline.stage_a_due_intervals(segment.ts_ns);
    pipeline.on_segment(segment);
    if let Some(why) = pipeline.binary_needs_one_pipeline() {
        return needs_one_pipeline(why, reports, report_error);
    }
    Flow::Continue
}

/// Stage A met a binary order session, which the two stages cannot read: files are read
/// again on one pipeline (the caller, on [`crate::shard::NeedsOnePipeline`]); what can be
/// read only once goes on, the session counted `unnamed_protocol_connections`.
#[cold]
fn needs_one_pipeline(
    why: &str,
    reports: &Reports<'_>,
    report_error: &mut Option<io::Error>,
) -> Flow {
    if !reports.rereadable {
        return Flow::Continue;
    }
    *report_error = Some(crate::shard::NeedsOnePipeline::one_stage(why.to_string()));
    Flow::Stop
}
