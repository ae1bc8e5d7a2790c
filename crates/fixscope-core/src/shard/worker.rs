//! A worker: one `Pipeline` over the connections of its shard, fed by the reader, handing
//! its intervals to the merger.

use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::thread::JoinHandle;

use super::WorkerShare;
use crate::pipeline::{Pipeline, PipelineConfig};
use crate::prefetch::batch::SegmentBatch;

/// Batches (and ticks) queued per worker: bounds memory; the reader waits beyond it.
const QUEUE: usize = 8;
/// Interval shares a worker may be ahead of the merger.
const SHARES_AHEAD: usize = 4;

/// Segments of one worker, each with the run's clock and its index in the run.
#[derive(Default)]
pub(crate) struct ShardBatch {
    pub(crate) segments: SegmentBatch,
    /// Per segment: (the run's clock after it, its index in the run).
    pub(crate) clock: Vec<(u64, u64)>,
}

impl ShardBatch {
    pub(crate) fn with_capacity(segments: usize) -> Self {
        ShardBatch {
            segments: SegmentBatch::with_capacity(segments, segments * 512),
            clock: Vec::with_capacity(segments),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.clock.len()
    }

    fn clear(&mut self) {
        self.segments.clear();
        self.clock.clear();
    }
}

/// What the reader sends a worker, in the run's order.
pub(crate) enum ToWorker {
    Batch(ShardBatch),
    /// An interval ends: hand it over (the run's clock just before the segment that
    /// ended it).
    Interval {
        now_ns: u64,
    },
    /// The one pipeline would sweep idle connections now, after segment `index` of the
    /// run (what the sweep frames and binds comes after it, in the merger's order too).
    Sweep {
        now_ns: u64,
        index: u64,
    },
    /// The end of the run: flush, hand over the last share, then the sessions.
    Finish {
        now_ns: u64,
    },
}

/// What a worker sends the merger.
pub(crate) enum FromWorker {
    Share(Box<WorkerShare>),
    Sessions(Box<super::WorkerEnd>),
}

/// The channels of the running workers.
pub(crate) struct Workers {
    pub(crate) inputs: Vec<SyncSender<ToWorker>>,
    /// Emptied batches, back to the reader.
    pub(crate) empties: Receiver<ShardBatch>,
    pub(crate) outputs: Vec<Receiver<FromWorker>>,
    /// Emptied shares, back to each worker.
    pub(crate) spares: Vec<Sender<Box<WorkerShare>>>,
    pub(crate) handles: Vec<JoinHandle<()>>,
}

/// What the reader needs of the workers.
pub(crate) struct WorkerInputs {
    pub(crate) inputs: Vec<SyncSender<ToWorker>>,
    pub(crate) empties: Receiver<ShardBatch>,
}

/// What the merger needs of the workers.
pub(crate) struct WorkerOutputs {
    pub(crate) outputs: Vec<Receiver<FromWorker>>,
    pub(crate) spares: Vec<Sender<Box<WorkerShare>>>,
}

impl Workers {
    pub(crate) fn split(self) -> (WorkerInputs, WorkerOutputs, Vec<JoinHandle<()>>) {
        (
            WorkerInputs {
                inputs: self.inputs,
                empties: self.empties,
            },
            WorkerOutputs {
                outputs: self.outputs,
                spares: self.spares,
            },
            self.handles,
        )
    }
}

/// Starts `n` workers, each with a pipeline of `config`.
pub(crate) fn start(n: usize, config: &PipelineConfig) -> std::io::Result<Workers> {
    let (empty_tx, empty_rx) = mpsc::channel::<ShardBatch>();
    let mut w = Workers {
        inputs: Vec::new(),
        empties: empty_rx,
        outputs: Vec::new(),
        spares: Vec::new(),
        handles: Vec::new(),
    };
    for i in 0..n {
        let (in_tx, in_rx) = mpsc::sync_channel::<ToWorker>(QUEUE);
        let (out_tx, out_rx) = mpsc::sync_channel::<FromWorker>(SHARES_AHEAD);
        let (spare_tx, spare_rx) = mpsc::channel::<Box<WorkerShare>>();
        let config = config.clone();
        let empties = empty_tx.clone();
        let handle = std::thread::Builder::new()
            .name(format!("fixscope-w{i}"))
            .spawn(move || {
                // Built on its thread: a pipeline may hold callbacks that stay there.
                let highest_ns = config.highest_ns;
                let pipeline = Pipeline::new(config).into_shard_worker();
                work(pipeline, highest_ns, in_rx, out_tx, spare_rx, empties)
            })?;
        w.inputs.push(in_tx);
        w.outputs.push(out_rx);
        w.spares.push(spare_tx);
        w.handles.push(handle);
    }
    Ok(w)
}

/// The worker's loop; returns when the run ends or the merger is gone.
fn work(
    mut pipeline: Pipeline,
    highest_ns: u64,
    input: Receiver<ToWorker>,
    output: SyncSender<FromWorker>,
    spares: Receiver<Box<WorkerShare>>,
    empties: Sender<ShardBatch>,
) {
    let hand_over = |pipeline: &mut Pipeline| {
        let mut share = spares
            .try_recv()
            .unwrap_or_else(|_| Box::new(WorkerShare::new(highest_ns)));
        pipeline.shard_take_interval(&mut share);
        output.send(FromWorker::Share(share)).is_ok()
    };
    while let Ok(msg) = input.recv() {
        match msg {
            ToWorker::Batch(mut batch) => {
                for i in 0..batch.len() {
                    let (now_ns, index) = batch.clock[i];
                    pipeline.shard_segment(&batch.segments.segment(i), now_ns, index);
                }
                batch.clear();
                // The reader may be gone (stopped); then nobody needs the batch.
                let _ = empties.send(batch);
            }
            ToWorker::Interval { now_ns } => {
                pipeline.shard_tick(now_ns);
                if !hand_over(&mut pipeline) {
                    return;
                }
            }
            ToWorker::Sweep { now_ns, index } => pipeline.shard_sweep(now_ns, index),
            ToWorker::Finish { now_ns } => {
                pipeline.shard_finish(now_ns);
                if hand_over(&mut pipeline) {
                    let _ = output.send(FromWorker::Sessions(Box::new(
                        pipeline.shard_take_sessions(),
                    )));
                }
                return;
            }
        }
    }
}
