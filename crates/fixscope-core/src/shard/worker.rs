//! A worker: reads every capture itself, decides the run's clock as one pipeline does, and
//! analyses the segments of its own connections on its `Pipeline`, handing its intervals to
//! the merger.
//!
//! There is no reader thread: each worker reads and decodes every packet (the page cache
//! serves the N reads of one file), so nothing serial sits between the disk and the
//! pipelines and no segment is copied or handed between threads. Every worker sees every
//! segment in file order, so each takes the same clock decisions ([`RunClock`]: interval
//! ends, idle sweeps, the run's index of each segment) without being told; it feeds its
//! pipeline only the segments whose shard key it owns.

use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::{shard_of, WorkerEnd, WorkerShare};
use crate::pcap::{read_capture_progress, CaptureError, CaptureStats, Flow};
use crate::pipeline::interval_clock::IntervalClock;
use crate::pipeline::{Pipeline, PipelineConfig};
use crate::ports::PortSet;
use crate::prefetch::merge::{MergedCaptures, Step};
use crate::shutdown::Shutdown;

/// Messages a worker may be ahead of the merger (interval shares, file ends).
const AHEAD: usize = 8;
/// The one pipeline sweeps idle connections when its clock has moved this far since the
/// last sweep (`Pipeline::on_segment`).
const SWEEP_EVERY_NS: u64 = 1_000_000_000;
/// How often (in segments) the workers look at the stop flag, all at the same segments.
const STOP_CHECK: u64 = 1024;

/// What a worker sends the merger, in the run's order.
pub(crate) enum FromWorker {
    /// Interval `[start_ns, end_ns)` ended: the worker's share of it.
    Interval {
        start_ns: u64,
        end_ns: u64,
        share: Box<WorkerShare>,
    },
    /// A file was read to its end (worker 0 only; `-v` and the progress bar).
    FileDone { index: usize, stats: CaptureStats },
    /// Everything was read (or `end.error` stopped the reading, or a stop): the last
    /// share and the worker's sessions.
    End {
        end: End,
        share: Box<WorkerShare>,
        sessions: Box<WorkerEnd>,
    },
}

/// How the reading ended: the same in every worker (the merger takes worker 0's).
pub(crate) struct End {
    pub(crate) stats: CaptureStats,
    pub(crate) error: Option<CaptureError>,
    pub(crate) first_ts_ns: Option<u64>,
    pub(crate) now_ns: u64,
    pub(crate) interval_start_ns: Option<u64>,
    pub(crate) segments: u64,
    /// A stop (Ctrl-C) ended the reading before the end of the captures.
    pub(crate) stopped: bool,
}

/// What the merger needs of the running workers.
pub(crate) struct WorkerOutputs {
    pub(crate) outputs: Vec<Receiver<FromWorker>>,
    /// Emptied shares, back to each worker.
    pub(crate) spares: Vec<Sender<Box<WorkerShare>>>,
}

/// What each worker reads.
pub(crate) struct Inputs {
    pub(crate) captures: Vec<PathBuf>,
    pub(crate) ports: PortSet,
    pub(crate) config: PipelineConfig,
    pub(crate) stop: Shutdown,
}

/// Starts `n` workers, each reading all of `inputs` and analysing its shard.
pub(crate) fn start(
    n: usize,
    inputs: Inputs,
) -> std::io::Result<(WorkerOutputs, Vec<JoinHandle<()>>)> {
    let inputs = Arc::new(inputs);
    let stop = Arc::new(StopPoint::new(n, inputs.stop.clone()));
    let mut outputs = WorkerOutputs {
        outputs: Vec::new(),
        spares: Vec::new(),
    };
    let mut handles = Vec::new();
    for me in 0..n {
        let (out_tx, out_rx) = mpsc::sync_channel::<FromWorker>(AHEAD);
        let (spare_tx, spare_rx) = mpsc::channel::<Box<WorkerShare>>();
        let inputs = Arc::clone(&inputs);
        let stop = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name(format!("fixscope-w{me}"))
            .spawn(move || {
                let mut worker = Worker {
                    me,
                    n,
                    // Built on its thread: a pipeline may hold callbacks that stay there.
                    pipeline: Pipeline::new(inputs.config.clone()).into_shard_worker(),
                    clock: RunClock::new(inputs.config.interval_ns),
                    out: out_tx,
                    spares: spare_rx,
                    stop,
                    gone: false,
                };
                worker.run(&inputs.captures, &inputs.ports);
            })?;
        outputs.outputs.push(out_rx);
        outputs.spares.push(spare_tx);
        handles.push(handle);
    }
    Ok((outputs, handles))
}

struct Worker {
    me: usize,
    n: usize,
    pipeline: Pipeline,
    clock: RunClock,
    out: SyncSender<FromWorker>,
    spares: Receiver<Box<WorkerShare>>,
    stop: Arc<StopPoint>,
    /// The merger is gone (it stopped: a failed reporter, a split session): stop reading.
    gone: bool,
}

impl Worker {
    fn run(&mut self, captures: &[PathBuf], ports: &PortSet) {
        let read = if captures.len() > 1 {
            self.read_merged(captures, ports)
        } else {
            self.read_in_order(captures, ports)
        };
        // None: the merger is gone.
        let Some((stats, error)) = read else {
            return;
        };
        let now_ns = self.clock.now_ns;
        self.pipeline.shard_finish(now_ns);
        let share = self.take_share();
        let sessions = Box::new(self.pipeline.shard_take_sessions());
        let end = End {
            stats,
            error,
            first_ts_ns: self.clock.first_ts_ns,
            now_ns,
            interval_start_ns: self.clock.interval.start_ns(),
            segments: self.clock.segments,
            stopped: self.stop.stopped_at(self.clock.segments),
        };
        // The merger may be gone; then nobody needs it.
        let _ = self.out.send(FromWorker::End {
            end,
            share,
            sessions,
        });
    }

    /// Reads the files one after the other (one file: in place). `None` when the merger
    /// is gone.
    fn read_in_order(
        &mut self,
        captures: &[PathBuf],
        ports: &PortSet,
    ) -> Option<(CaptureStats, Option<CaptureError>)> {
        let mut stats = CaptureStats::default();
        for (index, path) in captures.iter().enumerate() {
            // One worker counts the bytes for the progress bar.
            let result = read_capture_progress(path, ports, &mut stats, self.me == 0, |seg, _| {
                self.on_segment(seg);
                self.flow()
            });
            if let Err(e) = result {
                return Some((stats, Some(e)));
            }
            if self.gone || self.stop.stopped_at(self.clock.segments) {
                break;
            }
            if !self.file_done(index, stats) {
                return None;
            }
        }
        Some((stats, None))
    }

    /// Reads several files as one timeline, merged by time the same way in every worker
    /// (`crate::prefetch::merge`). `None` when the merger is gone.
    fn read_merged(
        &mut self,
        captures: &[PathBuf],
        ports: &PortSet,
    ) -> Option<(CaptureStats, Option<CaptureError>)> {
        let mut merged = MergedCaptures::new(captures.to_vec(), ports.clone(), self.me == 0);
        let mut error = None;
        loop {
            let step = merged.step(&mut |seg, _| {
                self.on_segment(seg);
                self.flow()
            });
            match step {
                Ok(Step::FileDone(index)) => {
                    if self.gone || self.stop.stopped_at(self.clock.segments) {
                        break;
                    }
                    if !self.file_done(index, merged.stats()) {
                        return None;
                    }
                }
                Ok(Step::Stopped | Step::Ended) => break,
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
        Some((merged.stats(), error))
    }

    /// After a segment: read on?
    #[inline]
    fn flow(&self) -> Flow {
        if self.gone || self.stop.reached(self.me, self.clock.segments) {
            Flow::Stop
        } else {
            Flow::Continue
        }
    }

    /// Worker 0 tells the merger a file was read to its end; `false`: the merger is gone.
    fn file_done(&mut self, index: usize, stats: CaptureStats) -> bool {
        self.me != 0 || self.out.send(FromWorker::FileDone { index, stats }).is_ok()
    }

    /// The driver's and `Pipeline::on_segment`'s clock decisions, in their order: the
    /// interval ends before the segment that ends it is fed; the sweep after it.
    #[inline]
    fn on_segment(&mut self, seg: &crate::segment::Segment<'_>) {
        if let Some((start_ns, end_ns, now_ns)) = self.clock.interval_due(seg.ts_ns) {
            self.pipeline.shard_tick(now_ns);
            let share = self.take_share();
            self.gone |= self
                .out
                .send(FromWorker::Interval {
                    start_ns,
                    end_ns,
                    share,
                })
                .is_err();
        }
        let index = self.clock.on_segment(seg.ts_ns);
        if shard_of(&seg.connection(), self.n) == self.me {
            self.pipeline.shard_segment(seg, self.clock.now_ns, index);
        }
        if let Some(now_ns) = self.clock.sweep_due() {
            self.pipeline.shard_sweep(now_ns, index);
        }
    }

    fn take_share(&mut self) -> Box<WorkerShare> {
        let mut share = self
            .spares
            .try_recv()
            .unwrap_or_else(|_| Box::new(WorkerShare::new(self.pipeline.stats())));
        self.pipeline.shard_take_interval(&mut share);
        share
    }
}

/// The run's clock as one pipeline and its driver keep it, from the timestamps of every
/// segment in file order: every worker keeps its own and they agree.
pub(crate) struct RunClock {
    /// The one pipeline's interval clock, kept by every worker.
    interval: IntervalClock,
    /// The latest timestamp of all segments so far.
    pub(crate) now_ns: u64,
    pub(crate) first_ts_ns: Option<u64>,
    last_sweep_ns: u64,
    /// Segments seen (the next segment's index in the run).
    pub(crate) segments: u64,
}

impl RunClock {
    pub(crate) fn new(interval_ns: u64) -> Self {
        RunClock {
            interval: IntervalClock::new(interval_ns),
            now_ns: 0,
            first_ts_ns: None,
            last_sweep_ns: 0,
            segments: 0,
        }
    }

    /// `Pipeline::interval_due` and `report_due_intervals` with a segment at `ts`, before
    /// it is fed: the interval `[start, end)` that ended, with the clock just before it.
    #[inline]
    pub(crate) fn interval_due(&mut self, ts: u64) -> Option<(u64, u64, u64)> {
        let now_ns = self.now_ns;
        self.interval
            .next_due(ts)
            .map(|(start, end)| (start, end, now_ns))
    }

    /// The segment at `ts` is fed: its index in the run.
    #[inline]
    pub(crate) fn on_segment(&mut self, ts: u64) -> u64 {
        let index = self.segments;
        self.segments += 1;
        self.now_ns = self.now_ns.max(ts);
        self.first_ts_ns.get_or_insert(ts);
        index
    }

    /// After the segment: one pipeline sweeps idle connections now (at this clock).
    #[inline]
    pub(crate) fn sweep_due(&mut self) -> Option<u64> {
        if self.now_ns.saturating_sub(self.last_sweep_ns) > SWEEP_EVERY_NS {
            self.last_sweep_ns = self.now_ns;
            Some(self.now_ns)
        } else {
            None
        }
    }
}

/// Ctrl-C in a sharded run: every worker must stop after the same segment, or the merged
/// figures would mix two cut-off points. Workers publish their progress every
/// [`STOP_CHECK`] segments under one lock (a few thousand times a run); the first to see
/// the flag sets the stop one check beyond the furthest worker, a point none has passed
/// and each reaches (every worker checks at every multiple of `STOP_CHECK`).
struct StopPoint {
    flag: Shutdown,
    state: Mutex<StopState>,
}

struct StopState {
    /// Each worker's segments at its last check.
    positions: Vec<u64>,
    stop_at: Option<u64>,
}

impl StopPoint {
    fn new(workers: usize, flag: Shutdown) -> Self {
        StopPoint {
            flag,
            state: Mutex::new(StopState {
                positions: vec![0; workers],
                stop_at: None,
            }),
        }
    }

    /// After a segment (`segments` seen so far): stop reading now?
    #[inline]
    fn reached(&self, worker: usize, segments: u64) -> bool {
        if !segments.is_multiple_of(STOP_CHECK) {
            return false;
        }
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.positions[worker] = segments;
        if s.stop_at.is_none() && self.flag.is_triggered() {
            let furthest = s.positions.iter().copied().max().unwrap_or(segments);
            s.stop_at = Some(furthest + STOP_CHECK);
        }
        s.stop_at.is_some_and(|at| segments >= at)
    }

    /// Did the reading stop at `segments` (after a file that ended there)?
    fn stopped_at(&self, segments: u64) -> bool {
        let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.stop_at.is_some_and(|at| segments >= at)
    }
}
