//! `fixscope pcap` on two threads as one pipeline in two stages (issue #22): the default
//! below 4 cores and `--threads 2`.
//!
//! ```text
//!  stage A: reading thread                           stage B: calling thread
//!  read in place (mmap), decode, connection   ──▶   field extraction, session layer,
//!  table, TCP reassembly, FIX framing               correlation, statistics, interval
//!  (a Pipeline in stage A: pipeline/forward.rs)     reports, output (a Pipeline in stage B)
//! ```
//!
//! Cut after framing: the profile of one pipeline (BENCHMARKS.md §2d) puts about half the
//! work on each side, where sharding on two cores repeats the reading and decoding per
//! worker. Stage A hands stage B, in stream order, what the one pipeline does between the
//! two halves (`pipeline/forward.rs`: the clock for `-t`, each framed message, capture
//! holes, closed connections, interval ends with A's counters, the end); stage B makes
//! exactly the one pipeline's calls in exactly its order, so every output is one
//! pipeline's, byte for byte, by construction (tested in `tests/sharded.rs` on the
//! testdata captures, a many-connection capture, pcapng and stdin).
//!
//! Every input works: a legacy pcap file is read in place and its messages travel as
//! ranges of the mapping; pcapng, a pipe or stdin are read by the streaming reader and
//! their messages are copied into the batches. `--trace` and Prometheus stay on one
//! pipeline with its reading thread (`fixscope pcap` decides).

use std::cell::Cell;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;

use crate::pcap::{read_capture_shared, CaptureStats, Flow};
use crate::pipeline::forward::{EventBatch, Forwarder, BATCHES_IN_FLIGHT};
use crate::pipeline::{Pipeline, PipelineConfig, StageEnd};
use crate::ports::PortSet;
use crate::report::Reporter;
use crate::shard::Outcome;
use crate::shutdown::Shutdown;

/// Analyses `captures` in two stages and reports through `reporter` (on the calling
/// thread): every interval, then the summary — the bytes one pipeline would report, and
/// the end the driver would make (a file's error after the summary of what came before
/// it; no summary when nothing was read). `stop` ends the reading early at a segment
/// (the summary covers what was read); `on_file_done` hears of each file read to its end.
pub fn run(
    captures: Vec<PathBuf>,
    ports: PortSet,
    config: PipelineConfig,
    reporter: &mut dyn Reporter,
    stop: &Shutdown,
    on_file_done: &mut dyn FnMut(usize, &CaptureStats),
) -> std::io::Result<Outcome> {
    let (full_tx, full_rx) = mpsc::sync_channel::<EventBatch>(BATCHES_IN_FLIGHT);
    let (empty_tx, empty_rx) = mpsc::sync_channel::<EventBatch>(BATCHES_IN_FLIGHT);
    let stage_a = {
        let (config, stop) = (config.clone(), stop.clone());
        std::thread::Builder::new()
            .name("fixscope-stage-a".into())
            .spawn(move || {
                let forwarder = Forwarder::new(full_tx, empty_rx);
                let pipeline = Pipeline::new(config).into_stage_a(forwarder);
                run_stage_a(pipeline, &captures, &ports, &stop);
            })?
    };
    let mut pipeline = Pipeline::new(config).into_stage_b();
    let result = run_stage_b(&mut pipeline, &full_rx, &empty_tx, reporter, on_file_done);
    // On an early return (a reporter failed) stage A's next send fails and it stops.
    drop(full_rx);
    drop(empty_tx);
    if let Err(panic) = stage_a.join() {
        std::panic::resume_unwind(panic);
    }
    let end = result?.ok_or_else(|| std::io::Error::other("stage A ended without its end"))?;
    Ok(Outcome {
        stats: end.stats,
        segments: end.segments,
        error: end.error,
    })
}

/// Stage B: applies stage A's batches until the end (`None`: stage A is gone without
/// one — it panicked), handing each emptied batch back.
fn run_stage_b(
    pipeline: &mut Pipeline,
    full: &mpsc::Receiver<EventBatch>,
    empty: &mpsc::SyncSender<EventBatch>,
    reporter: &mut dyn Reporter,
    on_file_done: &mut dyn FnMut(usize, &CaptureStats),
) -> std::io::Result<Option<StageEnd>> {
    loop {
        let Ok(mut batch) = full.recv() else {
            return Ok(None);
        };
        if let Some(end) = pipeline.apply(&mut batch, reporter, on_file_done)? {
            return Ok(Some(end));
        }
        batch.clear();
        // Stage A may have ended; then nobody needs the batch.
        let _ = empty.try_send(batch);
    }
}

/// Stage A: every file in order (as `InlineCaptureSource` and the driver read them: the
/// interval check before each segment, a stop checked at every segment, the first file's
/// error ends the reading), then the end.
fn run_stage_a(mut pipeline: Pipeline, captures: &[PathBuf], ports: &PortSet, stop: &Shutdown) {
    let mut stats = CaptureStats::default();
    let mut segments = 0u64;
    let mut error = None;
    for (index, path) in captures.iter().enumerate() {
        pipeline.forwarder().set_map(None);
        let new_map = Cell::new(None);
        let mut stopped = false;
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
                if stop.is_triggered() || pipeline.forwarder().gone() {
                    stopped = true;
                    return Flow::Stop;
                }
                segments += 1;
                pipeline.stage_a_due_intervals(segment.ts_ns);
                pipeline.on_segment(segment);
                Flow::Continue
            },
        );
        if let Err(e) = result {
            error = Some(e);
            break;
        }
        if stopped {
            break;
        }
        pipeline.forwarder().file_done(index, stats);
    }
    pipeline.stage_a_finish(stats, error, segments);
}
