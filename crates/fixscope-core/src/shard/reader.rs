//! The reader of a sharded run: reads and decodes the captures in file order, runs the
//! run's clock (interval ends, idle sweeps) exactly as the one pipeline and its driver
//! do, and routes each segment to the worker owning its connection.

use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::JoinHandle;

use super::shard_of;
use super::worker::{ShardBatch, ToWorker, WorkerInputs};
use crate::pcap::{read_capture_counted, CaptureError, CaptureStats, Flow};
use crate::pipeline::PipelineConfig;
use crate::ports::PortSet;
use crate::segment::Segment;
use crate::shutdown::Shutdown;

/// Segments per batch sent to a worker.
const BATCH_SEGMENTS: usize = 1024;
/// The one pipeline sweeps idle connections when its clock has moved this far since the
/// last sweep (`Pipeline::on_segment`).
const SWEEP_EVERY_NS: u64 = 1_000_000_000;
/// How often (in segments) the reader looks at the stop flag.
const STOP_CHECK: u64 = 1024;

/// What the reader tells the merger, in the run's order.
pub(crate) enum ToMerger {
    /// Interval `[start_ns, end_ns)` ended: every worker has been told (in its stream).
    Interval { start_ns: u64, end_ns: u64 },
    /// A file was read to its end (`-v`).
    FileDone { index: usize, stats: CaptureStats },
    /// Everything was read (or `error` stopped the reading, or a stop): every worker has
    /// been told to finish.
    End(End),
}

pub(crate) struct End {
    pub(crate) stats: CaptureStats,
    pub(crate) error: Option<CaptureError>,
    pub(crate) first_ts_ns: Option<u64>,
    pub(crate) now_ns: u64,
    pub(crate) interval_start_ns: Option<u64>,
    pub(crate) segments: u64,
}

pub(crate) struct Reader {
    pub(crate) events: Receiver<ToMerger>,
    pub(crate) handle: JoinHandle<()>,
}

pub(crate) fn start(
    captures: Vec<PathBuf>,
    ports: PortSet,
    config: PipelineConfig,
    workers: WorkerInputs,
    stop: Shutdown,
) -> std::io::Result<Reader> {
    let (tx, rx) = mpsc::sync_channel::<ToMerger>(64);
    let handle = std::thread::Builder::new()
        .name("fixscope-reader".into())
        .spawn(move || {
            let mut router = Router::new(config.interval_ns, workers, tx);
            router.read(&captures, &ports, &stop);
        })?;
    Ok(Reader { events: rx, handle })
}

/// The run's clock and the routing of segments.
struct Router {
    interval_ns: u64,
    workers: WorkerInputs,
    merger: SyncSender<ToMerger>,
    /// The batch being filled per worker.
    batches: Vec<Option<ShardBatch>>,
    /// Batches allocated so far (they come back through `workers.empties`).
    allocated: usize,
    now_ns: u64,
    first_ts_ns: Option<u64>,
    interval_start_ns: Option<u64>,
    last_sweep_ns: u64,
    segments: u64,
    /// The merger (or a worker) is gone: stop reading.
    gone: bool,
}

impl Router {
    fn new(interval_ns: u64, workers: WorkerInputs, merger: SyncSender<ToMerger>) -> Self {
        let n = workers.inputs.len();
        Router {
            interval_ns,
            batches: (0..n).map(|_| None).collect(),
            allocated: 0,
            workers,
            merger,
            now_ns: 0,
            first_ts_ns: None,
            interval_start_ns: None,
            last_sweep_ns: 0,
            segments: 0,
            gone: false,
        }
    }

    fn read(&mut self, captures: &[PathBuf], ports: &PortSet, stop: &Shutdown) {
        let mut stats = CaptureStats::default();
        let mut error = None;
        for (index, path) in captures.iter().enumerate() {
            let result = read_capture_counted(path, ports, &mut stats, |segment, _| {
                self.on_segment(segment);
                let stopped = self.segments.is_multiple_of(STOP_CHECK) && stop.is_triggered();
                if self.gone || stopped {
                    Flow::Stop
                } else {
                    Flow::Continue
                }
            });
            if let Err(e) = result {
                error = Some(e);
                break;
            }
            if self.gone || stop.is_triggered() {
                break;
            }
            if self
                .merger
                .send(ToMerger::FileDone { index, stats })
                .is_err()
            {
                return;
            }
        }
        self.flush_all();
        let now_ns = self.now_ns;
        self.broadcast(|| ToWorker::Finish { now_ns });
        let _ = self.merger.send(ToMerger::End(End {
            stats,
            error,
            first_ts_ns: self.first_ts_ns,
            now_ns: self.now_ns,
            interval_start_ns: self.interval_start_ns,
            segments: self.segments,
        }));
    }

    /// The driver's and `Pipeline::on_segment`'s clock decisions, in their order: the
    /// interval ends before the segment that ends it is fed; the sweep after it.
    fn on_segment(&mut self, seg: &Segment<'_>) {
        let ts = seg.ts_ns;
        if self.interval_ns > 0 {
            // Pipeline::interval_due + report_due_intervals, with the segment's time.
            let start = *self.interval_start_ns.get_or_insert(ts);
            let end = start + self.interval_ns;
            if ts >= end {
                self.flush_all();
                let now_ns = self.now_ns;
                self.broadcast(|| ToWorker::Interval { now_ns });
                self.gone |= self
                    .merger
                    .send(ToMerger::Interval {
                        start_ns: start,
                        end_ns: end,
                    })
                    .is_err();
                let skipped = (ts - end) / self.interval_ns;
                self.interval_start_ns = Some(end + skipped * self.interval_ns);
            }
        }
        let index = self.segments;
        self.segments += 1;
        self.now_ns = self.now_ns.max(ts);
        self.first_ts_ns.get_or_insert(ts);
        let w = shard_of(&seg.connection(), self.batches.len());
        if self.batches[w].is_none() {
            self.batches[w] = Some(self.next_batch());
        }
        if let Some(batch) = self.batches[w].as_mut() {
            batch.segments.push(seg);
            batch.clock.push((self.now_ns, index));
            if batch.len() == BATCH_SEGMENTS {
                self.flush(w);
            }
        }
        if self.now_ns.saturating_sub(self.last_sweep_ns) > SWEEP_EVERY_NS {
            self.last_sweep_ns = self.now_ns;
            self.flush_all();
            let now_ns = self.now_ns;
            self.broadcast(|| ToWorker::Sweep { now_ns, index });
        }
    }

    /// An emptied batch back from a worker, or a new one while fewer than
    /// `4 x workers` exist.
    fn next_batch(&mut self) -> ShardBatch {
        if let Ok(b) = self.workers.empties.try_recv() {
            return b;
        }
        if self.allocated < 4 * self.batches.len() + 8 {
            self.allocated += 1;
            return ShardBatch::with_capacity(BATCH_SEGMENTS);
        }
        self.workers
            .empties
            .recv()
            .unwrap_or_else(|_| ShardBatch::with_capacity(BATCH_SEGMENTS))
    }

    fn flush(&mut self, w: usize) {
        match self.batches[w].take() {
            Some(full) if full.len() > 0 => {
                self.gone |= self.workers.inputs[w].send(ToWorker::Batch(full)).is_err();
            }
            empty => self.batches[w] = empty,
        }
    }

    fn flush_all(&mut self) {
        for w in 0..self.batches.len() {
            self.flush(w);
        }
    }

    fn broadcast(&mut self, msg: impl Fn() -> ToWorker) {
        for input in &self.workers.inputs {
            self.gone |= input.send(msg()).is_err();
        }
    }
}
