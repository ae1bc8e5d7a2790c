//! Several capture files as one timeline: their segments merged by timestamp, as
//! `mergecap` merges the files' records (issue #36). `fixscope pcap b.pcap a.pcap` gives
//! what `fixscope pcap a.pcap b.pcap` gives, and captures of one time span taken at two
//! places (two taps, the two members of a bond) are read as the one stream they were.
//!
//! A k-way merge: each file is read and decoded on a reader thread of its own (the
//! prefetcher's reader, [`super::read_all`], into owned batches), and the next segment
//! handed on is always the earliest of the files' next ones — equal times in the order the
//! files were given, as mergecap does. Within a file the order is the file's.
//!
//! Files are opened only when the merge reaches them: their first packet's timestamp is
//! read up front ([`crate::pcap::first_timestamp`]), and a file is opened once the merge's
//! next segment is not earlier than that. Consecutive captures (tcpdump `-C`/`-G`
//! rotations, `day-*.pcap`) are then read one after the other, a reader thread and a few
//! MB of batches at a time, however many files; only files that overlap in time are read
//! side by side. What cannot be placed up front (a pipe, a file whose first packet cannot
//! be read) is opened first, so its error, if any, comes first.
//!
//! One file is not merged: every caller reads it as before, in place (this costs a
//! reader thread per file and a copy of every segment, paid only with several files).
//! The merged order depends only on the segments' timestamps and the files' order, so
//! every worker of a sharded run, each merging on its own, sees the same stream.

use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::JoinHandle;

use super::batch::SegmentBatch;
use super::{read_all, Event, FinishedFile, BATCHES_IN_FLIGHT};
use crate::pcap::{first_timestamp, CaptureError, CaptureStats, Flow};
use fixscope_model::ports::PortSet;
use fixscope_model::segment::Segment;
use fixscope_model::shutdown::Shutdown;
use fixscope_model::source::Polled;

/// Where [`MergedCaptures::step`] stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The consumer said [`Flow::Stop`] after a segment; the next step goes on after it.
    Stopped,
    /// `captures[index]` was read to its end ([`MergedCaptures::stats`]: all files so far).
    FileDone(usize),
    /// Every file was read to its end.
    Ended,
}

/// Capture files read as one timeline, pulled a stretch at a time with
/// [`MergedCaptures::step`].
pub struct MergedCaptures {
    captures: Vec<PathBuf>,
    ports: PortSet,
    count_progress: bool,
    /// Files not opened yet, by (first packet's timestamp, index): the next one last.
    unopened: Vec<(u64, usize)>,
    /// Whether each file's first packet's time is known.
    placed: Vec<bool>,
    open: Vec<FileStream>,
    /// The counters of the files read to their end.
    closed: CaptureStats,
    /// Every file's counters as of its last batch received, with the merge's flags.
    stats: CaptureStats,
    /// The file of the last segment handed on.
    last_from: Option<usize>,
    /// The highest index of a placed file opened so far (a lower one opened later:
    /// reordered).
    highest_opened: Option<usize>,
    overlapping: Option<(u32, u32)>,
    reordered: bool,
    /// The most files open at once (tests: files are opened only when reached).
    pub(super) most_open: usize,
    ended: bool,
}

impl MergedCaptures {
    /// Reads `captures` (two or more) as one timeline, keeping TCP segments to or from
    /// `ports`; `count_progress`: the bytes read count in [`crate::pcap::bytes_read`].
    /// Reads each file's first packet header now; opens nothing yet.
    pub fn new(captures: Vec<PathBuf>, ports: PortSet, count_progress: bool) -> Self {
        let starts: Vec<Option<u64>> = captures.iter().map(|p| first_timestamp(p)).collect();
        let mut unopened: Vec<(u64, usize)> = starts
            .iter()
            .zip(&captures)
            .enumerate()
            .map(|(index, (start, path))| {
                let key = match start {
                    Some(ts) => *ts,
                    // A file without a packet to place, or damaged before its first: it
                    // has no segment to give; last, so its error, if any, ends the
                    // reading after the others were read (as it would given last).
                    None if is_regular_file(path) => u64::MAX,
                    // A pipe, read once: its times are known only as it is read.
                    None => 0,
                };
                (key, index)
            })
            .collect();
        unopened.sort_unstable_by(|a, b| b.cmp(a));
        MergedCaptures {
            captures,
            ports,
            count_progress,
            unopened,
            placed: starts.iter().map(Option::is_some).collect(),
            open: Vec::new(),
            closed: CaptureStats::default(),
            stats: CaptureStats::default(),
            last_from: None,
            highest_opened: None,
            overlapping: None,
            reordered: false,
            most_open: 0,
            ended: false,
        }
    }

    /// The counters of everything read so far (final once a step returned
    /// [`Step::Ended`] or the error), with the merge's flags
    /// ([`CaptureStats::overlapping_files`], [`CaptureStats::reordered_files`]).
    pub fn stats(&self) -> CaptureStats {
        self.stats
    }

    /// Hands segments to `on_segment` in time order (with the counters so far) until it
    /// says stop, a file ends or every file has. A file that cannot be read is the `Err`,
    /// after every segment of every file earlier than its damage; then the reading is
    /// over (later steps return [`Step::Ended`]).
    pub fn step(
        &mut self,
        on_segment: &mut dyn FnMut(&Segment<'_>, &CaptureStats) -> Flow,
    ) -> Result<Step, CaptureError> {
        if self.ended {
            return Ok(Step::Ended);
        }
        loop {
            // Every open file's next segment at hand, or the file's end.
            let mut received = false;
            for k in 0..self.open.len() {
                match self.open[k].next_at_hand() {
                    Ok(Some(fresh)) => received |= fresh,
                    Ok(None) => {
                        let done = self.open.remove(k);
                        let index = done.index;
                        self.closed.add(&done.close());
                        self.refresh_stats();
                        return Ok(Step::FileDone(index));
                    }
                    Err(e) => {
                        self.end();
                        return Err(e);
                    }
                }
            }
            if received {
                self.refresh_stats();
            }
            let first = self
                .open
                .iter()
                .enumerate()
                .map(|(k, f)| (f.next_ts(), f.index, k))
                .min();
            // The next file begins no later than the open files' next segment: open it.
            if let Some(&(starts, index)) = self.unopened.last() {
                if first.is_none_or(|(ts, _, _)| starts <= ts) {
                    self.unopened.pop();
                    self.open_file(index)?;
                    continue;
                }
            }
            let Some((_, from, k)) = first else {
                self.end();
                return Ok(Step::Ended);
            };
            // Hand this file's segments while they come first: before every other open
            // file's next one (equal times: the file given first) and the next file's start.
            let others = self
                .open
                .iter()
                .filter(|f| f.index != from)
                .map(|f| (f.next_ts(), f.index))
                .min();
            let opens_at = self.unopened.last().map(|&(ts, _)| ts);
            if let Some(last) = self.last_from {
                if last != from && self.open.iter().any(|f| f.index == last) {
                    // A switch to another file while the last one goes on: they interleave.
                    self.overlapping
                        .get_or_insert((last.min(from) as u32, last.max(from) as u32));
                    self.stats.overlapping_files = self.overlapping;
                }
            }
            self.last_from = Some(from);
            let file = &mut self.open[k];
            while file.next < file.batch.len() {
                let segment = file.batch.segment(file.next);
                if others.is_some_and(|o| (segment.ts_ns, from) > o)
                    || opens_at.is_some_and(|t| segment.ts_ns >= t)
                {
                    break;
                }
                file.next += 1;
                if on_segment(&segment, &self.stats) == Flow::Stop {
                    return Ok(Step::Stopped);
                }
            }
        }
    }

    fn open_file(&mut self, index: usize) -> Result<(), CaptureError> {
        if self.placed[index] {
            if self.highest_opened.is_some_and(|h| h > index) {
                self.reordered = true;
            }
            self.highest_opened = self.highest_opened.max(Some(index));
        }
        self.most_open = self.most_open.max(self.open.len() + 1);
        let path = self.captures[index].clone();
        match FileStream::start(index, path.clone(), &self.ports, self.count_progress) {
            Ok(file) => {
                self.open.push(file);
                Ok(())
            }
            Err(source) => {
                self.end();
                Err(CaptureError::Read {
                    path,
                    error: source,
                })
            }
        }
    }

    fn refresh_stats(&mut self) {
        let mut stats = self.closed;
        for f in &self.open {
            stats.add(&f.stats);
        }
        stats.overlapping_files = self.overlapping;
        stats.reordered_files = self.reordered;
        self.stats = stats;
    }

    /// Stops every reader (the counters stay those of what was received).
    fn end(&mut self) {
        self.ended = true;
        self.unopened.clear();
        for f in std::mem::take(&mut self.open) {
            let stats = f.close();
            self.closed.add(&stats);
        }
        self.refresh_stats();
    }
}

impl Drop for MergedCaptures {
    fn drop(&mut self) {
        for f in std::mem::take(&mut self.open) {
            if std::thread::panicking() {
                // Unwinding already: stop the reader, pass on nothing.
                drop(f);
            } else {
                f.close();
            }
        }
    }
}

fn is_regular_file(path: &std::path::Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

/// One file of the merge, read on its own reader thread.
struct FileStream {
    index: usize,
    events: Receiver<Event>,
    empties: SyncSender<SegmentBatch>,
    reader: JoinHandle<CaptureStats>,
    /// The batch being handed on, and its next segment.
    batch: SegmentBatch,
    next: usize,
    /// The file's counters as of its last batch (or its end) received.
    stats: CaptureStats,
}

impl FileStream {
    fn start(
        index: usize,
        path: PathBuf,
        ports: &PortSet,
        count_progress: bool,
    ) -> std::io::Result<FileStream> {
        let (full_tx, full_rx) = mpsc::sync_channel::<Event>(BATCHES_IN_FLIGHT);
        let (empty_tx, empty_rx) = mpsc::sync_channel::<SegmentBatch>(BATCHES_IN_FLIGHT);
        let ports = ports.clone();
        let reader = std::thread::Builder::new()
            .name(format!("fixscope-read{index}"))
            .spawn(move || read_all(&[path], &ports, count_progress, full_tx, empty_rx))?;
        Ok(FileStream {
            index,
            events: full_rx,
            empties: empty_tx,
            reader,
            batch: SegmentBatch::default(),
            next: 0,
            stats: CaptureStats::default(),
        })
    }

    /// The timestamp of the next segment ([`FileStream::next_at_hand`] said there is one).
    fn next_ts(&self) -> u64 {
        self.batch.segment(self.next).ts_ns
    }

    /// Makes the file's next segment ready: `Some(a batch was received)`, `None` when the
    /// file was read to its end, the file's error when it could not be.
    fn next_at_hand(&mut self) -> Result<Option<bool>, CaptureError> {
        let mut received = false;
        while self.next >= self.batch.len() {
            match self.events.recv() {
                Ok(Event::Batch(batch)) => {
                    self.stats = batch.stats;
                    received = true;
                    let mut emptied = std::mem::replace(&mut self.batch, batch);
                    self.next = 0;
                    if emptied.is_allocated() {
                        emptied.clear();
                        // The reader may have finished; then nobody needs it.
                        let _ = self.empties.try_send(emptied);
                    }
                }
                Ok(Event::FileDone { stats, .. }) => {
                    self.stats = stats;
                    return Ok(None);
                }
                Ok(Event::End { stats, error }) => {
                    self.stats = stats;
                    return match error {
                        Some(e) => Err(e),
                        None => Ok(None),
                    };
                }
                // The reader is gone without its end: it panicked (close passes it on).
                Err(_) => return Ok(None),
            }
        }
        Ok(Some(received))
    }

    /// Stops the reader (dropping the channels makes its next send fail) and waits for
    /// it; a panic in it is passed on. Returns the file's counters as received.
    fn close(self) -> CaptureStats {
        let FileStream {
            events,
            empties,
            reader,
            stats,
            ..
        } = self;
        drop(events);
        drop(empties);
        if let Err(panic) = reader.join() {
            std::panic::resume_unwind(panic);
        }
        stats
    }
}

/// Several files behind [`super::CaptureSource`] and [`super::InlineCaptureSource`]: the
/// merge polled as they poll a single file.
pub struct MergedSource {
    merged: MergedCaptures,
    finished: Vec<FinishedFile>,
    /// A file's error, returned by the poll after the one that handed the segments before
    /// it (a driver counts a poll that fails as delivering nothing).
    error: Option<CaptureError>,
    ended: bool,
    /// Segments handed per poll at most (then it pauses), so the caller looks at its clock
    /// and signals between them; `None`: no limit.
    per_poll: Option<usize>,
    /// `--threads 1`'s rule: a consumer's stop ends the reading (as it does a single file
    /// read in place), rather than pausing it.
    stop_ends: bool,
}

impl MergedSource {
    pub fn new(
        captures: Vec<PathBuf>,
        ports: PortSet,
        per_poll: Option<usize>,
        stop_ends: bool,
    ) -> Self {
        MergedSource {
            merged: MergedCaptures::new(captures, ports, true),
            finished: Vec::new(),
            error: None,
            ended: false,
            per_poll,
            stop_ends,
        }
    }

    /// Hands segments until the consumer says stop, `stop` is triggered (that segment is
    /// not handed; the reading ends), a file ends (see [`MergedSource::finished_files`]),
    /// or `per_poll` were handed.
    pub fn poll(
        &mut self,
        stop: Option<&Shutdown>,
        on_segment: &mut dyn FnMut(&Segment<'_>) -> Flow,
    ) -> Result<Polled, CaptureError> {
        if let Some(e) = self.error.take() {
            self.ended = true;
            return Err(e);
        }
        if self.ended {
            return Ok(Polled::Ended);
        }
        let mut handed = 0usize;
        let mut signalled = false;
        let mut consumer_stopped = false;
        let per_poll = self.per_poll.unwrap_or(usize::MAX);
        let step = self.merged.step(&mut |segment, _| {
            if stop.is_some_and(Shutdown::is_triggered) {
                signalled = true;
                return Flow::Stop;
            }
            handed += 1;
            let flow = on_segment(segment);
            consumer_stopped |= flow == Flow::Stop;
            if flow == Flow::Stop || handed >= per_poll {
                Flow::Stop
            } else {
                Flow::Continue
            }
        });
        match step {
            Ok(Step::Stopped) => {
                if signalled || (consumer_stopped && self.stop_ends) {
                    self.ended = true;
                }
            }
            Ok(Step::FileDone(index)) => self.finished.push(FinishedFile {
                path: self.merged.captures[index].clone(),
                stats: self.merged.stats(),
            }),
            Ok(Step::Ended) => {
                self.ended = true;
                if handed == 0 {
                    return Ok(Polled::Ended);
                }
            }
            Err(e) => {
                if handed == 0 {
                    self.ended = true;
                    return Err(e);
                }
                self.error = Some(e);
            }
        }
        Ok(Polled::Segments(handed))
    }

    pub fn finished_files(&mut self) -> Vec<FinishedFile> {
        std::mem::take(&mut self.finished)
    }

    pub fn stats(&self) -> CaptureStats {
        self.merged.stats()
    }

    /// Stops reading (every reader thread is stopped and joined).
    pub fn close(&mut self) {
        self.ended = true;
        self.merged.end();
    }
}
