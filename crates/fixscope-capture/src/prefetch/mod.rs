//! Reading captures on a second thread while the pipeline runs on the calling one.
//!
//! Offline analysis is one sequential stream (the pipeline must see segments in file
//! order), but reading and decoding the file is a quarter of the work: done by a reader
//! thread into batches of owned segments, it overlaps with reassembly, framing and
//! correlation, and `fixscope pcap` finishes in roughly the pipeline's time alone. Batches
//! are recycled through a return channel, so the steady state allocates nothing; the queue
//! between the threads is bounded, so memory stays flat however large the capture.
//!
//! Several files are one timeline: [`merge`] reads each on a reader thread of its own and
//! merges their segments by time (as `mergecap` merges records).
//!
//! [`CaptureSource`] is that reader behind the [`Source`] seam (pull: one batch per poll);
//! [`read_captures_in_background`] drives it with callbacks. Since captures are read in
//! place, `fixscope pcap` uses it only where the pipeline itself must stay whole on one
//! thread (`--trace`, Prometheus); its default on 2–3 cores is `fixscope_core::twostage`, which
//! splits the pipeline instead of the reading.

pub(crate) mod batch;
mod inline;
pub mod merge;
#[cfg(test)]
mod tests;

pub use inline::InlineCaptureSource;

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::thread::JoinHandle;
use std::time::Duration;

use batch::SegmentBatch;

pub use crate::pcap::Flow;
use crate::pcap::{read_capture_progress, read_capture_until, CaptureError, CaptureStats};
use fixscope_model::ports::PortSet;
use fixscope_model::segment::Segment;
use fixscope_model::source::{counters_of, Counter, Polled, Source, SourceError};

/// Segments per batch: big enough that the channel hand-off is noise (~1 µs per batch),
/// small enough that the pipeline starts at once.
const BATCH_SEGMENTS: usize = 1024;
/// Batches in flight (queued plus being filled/drained): bounds memory to a few MB.
const BATCHES_IN_FLIGHT: usize = 8;

/// What the reader thread sends, in file order.
enum Event {
    /// Segments, with the counters after the last of them.
    Batch(SegmentBatch),
    /// Every segment of `captures[index]` has been sent; `stats` so far (all files).
    FileDone { index: usize, stats: CaptureStats },
    /// Nothing more will come: every file was read, or `error` stopped the reading (after
    /// every segment before it was sent).
    End {
        stats: CaptureStats,
        error: Option<CaptureError>,
    },
}

/// A capture file read to its end, with the counters of everything read up to there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FinishedFile {
    pub path: PathBuf,
    pub stats: CaptureStats,
}

/// A [`Source`] of capture files: which files were read to their end, and the counters.
pub trait CaptureFiles: Source {
    /// The files read to their end since the last call, in order (for `-v` progress).
    fn finished_files(&mut self) -> Vec<FinishedFile>;
    /// The capture counters of everything handed out: final once a poll returned `Ended`
    /// (or the error).
    fn stats(&self) -> CaptureStats;
}

impl CaptureFiles for CaptureSource {
    fn finished_files(&mut self) -> Vec<FinishedFile> {
        CaptureSource::finished_files(self)
    }
    fn stats(&self) -> CaptureStats {
        CaptureSource::stats(self)
    }
}

/// Capture files as a [`Source`]: read and decoded in file order on a reader thread, handed
/// out one batch (up to 1024 segments) per [`poll`](Source::poll); several files as one
/// timeline, merged by time ([`merge`]). Timestamps are UNIX time; the clock moves only
/// with the packets.
pub struct CaptureSource {
    captures: Vec<PathBuf>,
    /// Batches from the reader, emptied batches back to it; `None` once closed.
    channels: Option<(Receiver<Event>, SyncSender<SegmentBatch>)>,
    reader: Option<JoinHandle<CaptureStats>>,
    /// A batch the consumer stopped in the middle of, and the next segment to hand.
    current: Option<(SegmentBatch, usize)>,
    /// The counters as of the last batch, file end or end received.
    stats: CaptureStats,
    finished: Vec<FinishedFile>,
    ended: bool,
    /// What the reader had read when it stopped: after an early stop, more than `stats`.
    reader_stats: Option<CaptureStats>,
    /// Several files: merged by time ([`merge`]), on reader threads of their own.
    merged: Option<merge::MergedSource>,
}

impl CaptureSource {
    /// Starts reading `captures`, keeping TCP segments to or from `ports`: one file in
    /// order, several as one timeline (their segments merged by time: [`merge`]). Fails
    /// only when no thread can be started; a file that cannot be read is an error from
    /// [`CaptureSource::poll_capture`] once the segments before its damage were handed out.
    pub fn new(captures: Vec<PathBuf>, ports: PortSet) -> std::io::Result<CaptureSource> {
        if captures.len() > 1 {
            let merged =
                merge::MergedSource::new(captures.clone(), ports, Some(BATCH_SEGMENTS), false);
            return Ok(CaptureSource {
                captures,
                channels: None,
                reader: None,
                current: None,
                stats: CaptureStats::default(),
                finished: Vec::new(),
                ended: false,
                reader_stats: None,
                merged: Some(merged),
            });
        }
        let (full_tx, full_rx) = mpsc::sync_channel::<Event>(BATCHES_IN_FLIGHT);
        let (empty_tx, empty_rx) = mpsc::sync_channel::<SegmentBatch>(BATCHES_IN_FLIGHT);
        let files = captures.clone();
        let reader = std::thread::Builder::new()
            .name("fixscope-reader".into())
            .spawn(move || read_all(&files, &ports, true, full_tx, empty_rx))?;
        Ok(CaptureSource {
            captures,
            channels: Some((full_rx, empty_tx)),
            reader: Some(reader),
            current: None,
            stats: CaptureStats::default(),
            finished: Vec::new(),
            ended: false,
            reader_stats: None,
            merged: None,
        })
    }

    /// [`Source::poll`] with the capture's own error type: hands the rest of a batch the
    /// consumer stopped in, or the next batch, waiting at most `wait` for it. A poll that
    /// meets the end of a file returns `Segments(0)` at once, so the caller can see
    /// [`CaptureSource::finished_files`] before any segment of the next file. A file that
    /// cannot be read is an `Err` (naming the file) after every segment before the damage;
    /// the polls after it return `Ended`. A file cut short is not an error:
    /// [`CaptureStats::truncated_file`] says so.
    pub fn poll_capture(
        &mut self,
        wait: Duration,
        on_segment: &mut dyn FnMut(&Segment<'_>) -> Flow,
    ) -> Result<Polled, CaptureError> {
        if let Some(merged) = &mut self.merged {
            let polled = merged.poll(None, on_segment);
            self.stats = merged.stats();
            self.finished.extend(merged.finished_files());
            return polled;
        }
        if let Some((batch, next)) = self.current.take() {
            return Ok(self.hand(batch, next, on_segment));
        }
        if self.ended {
            return Ok(Polled::Ended);
        }
        let Some((events, _)) = &self.channels else {
            self.ended = true;
            return Ok(Polled::Ended);
        };
        // (A wait too long for the clock waits forever.)
        match events.recv_timeout(wait) {
            Ok(Event::Batch(batch)) => {
                self.stats = batch.stats;
                Ok(self.hand(batch, 0, on_segment))
            }
            Ok(Event::FileDone { index, stats }) => {
                self.stats = stats;
                self.finished.push(FinishedFile {
                    path: self.captures[index].clone(),
                    stats,
                });
                Ok(Polled::Segments(0))
            }
            Ok(Event::End { stats, error }) => {
                self.stats = stats;
                self.stop_reader();
                match error {
                    Some(e) => Err(e),
                    None => Ok(Polled::Ended),
                }
            }
            Err(RecvTimeoutError::Timeout) => Ok(Polled::Segments(0)),
            // The reader is gone without saying it ended: it panicked (stop_reader passes
            // the panic on).
            Err(RecvTimeoutError::Disconnected) => {
                self.stop_reader();
                Ok(Polled::Ended)
            }
        }
    }

    /// The files read to their end since the last call, in order (for `-v` progress).
    pub fn finished_files(&mut self) -> Vec<FinishedFile> {
        std::mem::take(&mut self.finished)
    }

    /// The capture counters as of the last batch received (all of it, even segments the
    /// consumer has not taken yet): final once a poll returned `Ended` (or the error).
    pub fn stats(&self) -> CaptureStats {
        self.stats
    }

    /// Hands `batch` from segment `next` on until the consumer says stop.
    fn hand(
        &mut self,
        batch: SegmentBatch,
        mut next: usize,
        on_segment: &mut dyn FnMut(&Segment<'_>) -> Flow,
    ) -> Polled {
        let first = next;
        while next < batch.len() {
            let flow = on_segment(&batch.segment(next));
            next += 1;
            if flow == Flow::Stop {
                if next < batch.len() {
                    self.current = Some((batch, next));
                    return Polled::Segments(next - first);
                }
                break;
            }
        }
        self.recycle(batch);
        Polled::Segments(next - first)
    }

    fn recycle(&mut self, mut batch: SegmentBatch) {
        batch.clear();
        if let Some((_, empties)) = &self.channels {
            // The reader may have finished already; then nobody needs the batch.
            let _ = empties.try_send(batch);
        }
    }

    /// Ends the reader: dropping the channels makes its next send fail, so it stops at
    /// the next batch (or finishes, if it was done). A panic in it is passed on.
    fn stop_reader(&mut self) {
        self.ended = true;
        if let Some(merged) = &mut self.merged {
            merged.close();
            self.stats = merged.stats();
            self.reader_stats = Some(self.stats);
        }
        self.current = None;
        self.channels = None;
        if let Some(reader) = self.reader.take() {
            match reader.join() {
                Ok(stats) => self.reader_stats = Some(stats),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
    }
}

impl Source for CaptureSource {
    fn poll(
        &mut self,
        wait: Duration,
        on_segment: &mut dyn FnMut(&Segment<'_>) -> Flow,
    ) -> Result<Polled, SourceError> {
        Ok(self.poll_capture(wait, on_segment)?)
    }

    fn now_ns(&self) -> Option<u64> {
        None
    }

    fn unix_offset_ns(&self) -> i64 {
        0
    }

    fn counters(&mut self) -> Vec<Counter> {
        counters_of(&self.stats)
    }

    /// None: the reader runs up to a few batches ahead of the pipeline, so its counters at
    /// an interval's end would not be that interval's. The summary has them all.
    fn interval_counters(&mut self) -> Vec<Counter> {
        Vec::new()
    }

    fn close(&mut self) -> Result<(), SourceError> {
        self.stop_reader();
        Ok(())
    }
}

/// Reads `captures` on a reader thread (several: merged by time, [`merge`]) and calls
/// `on_segment` for every segment in range, in order, on the calling thread;
/// `on_file_done` after the last segment of each file, with the capture counters so far.
/// Returns the counters of everything read, or the first file's error after every segment
/// before the error was delivered — for one file, or files in time order, exactly what
/// [`crate::pcap::read_capture`] called file by file would do.
pub fn read_captures_in_background(
    captures: &[PathBuf],
    ports: &PortSet,
    mut on_segment: impl FnMut(&Segment<'_>) -> Flow,
    mut on_file_done: impl FnMut(&Path, &CaptureStats),
) -> Result<CaptureStats, CaptureError> {
    let Ok(mut source) = CaptureSource::new(captures.to_vec(), ports.clone()) else {
        // No thread to be had (resource limits): the same work, on this thread.
        return read_in_place(captures, ports, &mut on_segment, &mut on_file_done);
    };
    loop {
        let mut stopped = false;
        let polled = source.poll_capture(Duration::MAX, &mut |segment| {
            let flow = on_segment(segment);
            stopped = flow == Flow::Stop;
            flow
        })?;
        for file in source.finished_files() {
            on_file_done(&file.path, &file.stats);
        }
        if stopped || polled == Polled::Ended {
            break;
        }
    }
    source.stop_reader();
    Ok(source.reader_stats.unwrap_or(source.stats))
}

/// The single-threaded equivalent of [`read_captures_in_background`].
fn read_in_place(
    captures: &[PathBuf],
    ports: &PortSet,
    on_segment: &mut impl FnMut(&Segment<'_>) -> Flow,
    on_file_done: &mut impl FnMut(&Path, &CaptureStats),
) -> Result<CaptureStats, CaptureError> {
    let mut stats = CaptureStats::default();
    let mut stopped = false;
    for path in captures {
        read_capture_until(path, ports, &mut stats, |segment| {
            let flow = on_segment(segment);
            stopped = flow == Flow::Stop;
            flow
        })?;
        if stopped {
            break;
        }
        on_file_done(path, &stats);
    }
    Ok(stats)
}

/// The reader thread: fills batches and sends them, then the end; stops early when the
/// consumer is gone. Returns the counters of what it read. `count_progress`: its bytes
/// count in [`crate::pcap::bytes_read`] (of several threads reading one file, one does).
fn read_all(
    captures: &[PathBuf],
    ports: &PortSet,
    count_progress: bool,
    full_tx: SyncSender<Event>,
    empty_rx: Receiver<SegmentBatch>,
) -> CaptureStats {
    let mut stats = CaptureStats::default();
    let mut spare_batches = 0;
    let mut next_batch = || match empty_rx.try_recv() {
        Ok(batch) => batch,
        // Allocate only until BATCHES_IN_FLIGHT exist; then wait for one to come back.
        Err(_) if spare_batches < BATCHES_IN_FLIGHT => {
            spare_batches += 1;
            SegmentBatch::with_capacity(BATCH_SEGMENTS, BATCH_SEGMENTS * 512)
        }
        Err(_) => empty_rx.recv().unwrap_or_default(),
    };
    let mut batch = next_batch();
    let mut consumer_gone = false;
    let mut error = None;
    for (index, path) in captures.iter().enumerate() {
        let result = read_capture_progress(
            path,
            ports,
            &mut stats,
            count_progress,
            |segment, so_far| {
                batch.push(segment);
                if batch.len() == BATCH_SEGMENTS {
                    batch.stats = *so_far;
                    let full = std::mem::replace(&mut batch, next_batch());
                    consumer_gone = full_tx.send(Event::Batch(full)).is_err();
                }
                if consumer_gone {
                    Flow::Stop
                } else {
                    Flow::Continue
                }
            },
        );
        // Deliver what was read before an error (or the end of the file) first.
        if !batch.is_empty() && !consumer_gone {
            batch.stats = stats;
            let full = std::mem::replace(&mut batch, next_batch());
            consumer_gone = full_tx.send(Event::Batch(full)).is_err();
        }
        if let Err(e) = result {
            error = Some(e);
            break;
        }
        if consumer_gone || full_tx.send(Event::FileDone { index, stats }).is_err() {
            return stats;
        }
    }
    // The consumer may be gone; then nobody needs to know.
    let _ = full_tx.send(Event::End { stats, error });
    stats
}
