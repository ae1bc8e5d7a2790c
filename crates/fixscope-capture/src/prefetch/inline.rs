//! Capture files read on the calling thread: `fixscope pcap --threads 1`, everything on one
//! thread (no reading thread), so "from the second core" is measured against a run that
//! really uses one. Several files are the exception: merged by time, each is read on a
//! reader thread of its own ([`super::merge`]).

use std::path::PathBuf;
use std::time::Duration;

use super::merge::MergedSource;
use super::{CaptureFiles, FinishedFile};
use crate::pcap::{read_capture_until, CaptureError, CaptureStats, Flow};
use fixscope_model::ports::PortSet;
use fixscope_model::segment::Segment;
use fixscope_model::shutdown::Shutdown;
use fixscope_model::source::{counters_of, Counter, Polled, Source, SourceError};

/// Capture files as a [`Source`], read in place on the calling thread: one file per
/// [`poll`](Source::poll) (so the caller sees [`CaptureFiles::finished_files`] before any
/// segment of the next file). The same segments, in the same order, with the same counters
/// and errors as [`super::CaptureSource`]. A file cannot be resumed in the middle: a
/// consumer's `Flow::Stop` or a triggered `stop` (Ctrl-C, checked at every segment) ends
/// the reading there.
pub struct InlineCaptureSource {
    captures: Vec<PathBuf>,
    ports: PortSet,
    stop: Shutdown,
    next_file: usize,
    stats: CaptureStats,
    finished: Vec<FinishedFile>,
    /// A file's error, returned by the poll after the one that handed its good segments
    /// (a driver counts a poll that fails as delivering nothing).
    error: Option<CaptureError>,
    ended: bool,
    /// Several files: merged by time ([`super::merge`]), each read on a reader thread of
    /// its own (the calling thread merges and analyses).
    merged: Option<MergedSource>,
}

impl InlineCaptureSource {
    pub fn new(captures: Vec<PathBuf>, ports: PortSet, stop: Shutdown) -> Self {
        let merged = (captures.len() > 1)
            .then(|| MergedSource::new(captures.clone(), ports.clone(), None, true));
        InlineCaptureSource {
            merged,
            captures,
            ports,
            stop,
            next_file: 0,
            stats: CaptureStats::default(),
            finished: Vec::new(),
            error: None,
            ended: false,
        }
    }
}

impl Source for InlineCaptureSource {
    fn poll(
        &mut self,
        _wait: Duration,
        on_segment: &mut dyn FnMut(&Segment<'_>) -> Flow,
    ) -> Result<Polled, SourceError> {
        if let Some(merged) = &mut self.merged {
            let polled = merged.poll(Some(&self.stop), on_segment);
            self.stats = merged.stats();
            self.finished.extend(merged.finished_files());
            return Ok(polled?);
        }
        if let Some(e) = self.error.take() {
            self.ended = true;
            return Err(e.into());
        }
        if self.ended || self.next_file >= self.captures.len() {
            self.ended = true;
            return Ok(Polled::Ended);
        }
        let path = &self.captures[self.next_file];
        let mut handed = 0usize;
        let mut stopped = false;
        let stop = &self.stop;
        let result = read_capture_until(path, &self.ports, &mut self.stats, |segment| {
            if stop.is_triggered() {
                stopped = true;
                return Flow::Stop;
            }
            handed += 1;
            let flow = on_segment(segment);
            stopped |= flow == Flow::Stop;
            flow
        });
        if let Err(e) = result {
            if handed == 0 {
                self.ended = true;
                return Err(e.into());
            }
            self.error = Some(e);
            return Ok(Polled::Segments(handed));
        }
        if stopped {
            self.ended = true;
        } else {
            self.finished.push(FinishedFile {
                path: path.clone(),
                stats: self.stats,
            });
            self.next_file += 1;
        }
        Ok(Polled::Segments(handed))
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

    /// None, as [`super::CaptureSource`]: the summary has them all.
    fn interval_counters(&mut self) -> Vec<Counter> {
        Vec::new()
    }

    fn close(&mut self) -> Result<(), SourceError> {
        self.ended = true;
        if let Some(merged) = &mut self.merged {
            merged.close();
            self.stats = merged.stats();
        }
        Ok(())
    }
}

impl CaptureFiles for InlineCaptureSource {
    fn finished_files(&mut self) -> Vec<FinishedFile> {
        std::mem::take(&mut self.finished)
    }

    fn stats(&self) -> CaptureStats {
        self.stats
    }
}
