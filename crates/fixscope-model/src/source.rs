//! The seam every source of segments plugs into.
//!
//! A capture file, the live eBPF ring, and later a mirror-port (AF_PACKET) capture all
//! produce the same thing: timestamped TCP [`Segment`]s, in the order the pipeline must see
//! them. The binary runs every source through one driver loop, which asks the source for
//! segments, for its clock (so quiet stretches still end intervals and raise timeouts) and
//! for its own counters (which reach every output beside the pipeline's).

use std::error::Error;
use std::time::Duration;

use crate::segment::Segment;
use crate::socket_event::{SocketEvent, TlsCallEvent};

/// Whether whoever receives segments wants more of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Stop,
}

/// What one [`Source::poll`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Polled {
    /// This many segments were handed over (0 when `wait` passed with nothing to hand).
    Segments(usize),
    /// The source has nothing more and never will (end of the capture files).
    Ended,
}

/// One thing a source hands over, in the order the pipeline must see it.
#[derive(Clone, Copy, Debug)]
pub enum Captured<'a, 'b> {
    Segment(&'a Segment<'b>),
    /// A socket call on a watched connection (live `--breakdown` only).
    Socket(&'a SocketEvent),
    /// An OpenSSL call's plaintext (live `--tls-uprobes` only).
    TlsCall(&'a TlsCallEvent<'b>),
}

/// A source's failure: the binary adds context and prints it once.
pub type SourceError = Box<dyn Error + Send + Sync + 'static>;

/// One counter of a source: its name in every output (JSON field, text row) and its value.
pub type Counter = (String, u64);

/// A source of timestamped TCP segments.
pub trait Source {
    /// Hands the segments available now to `on_segment`, in order, waiting at most `wait`
    /// for the first one. Stops early (returning what it handed) when `on_segment` says
    /// [`Flow::Stop`].
    fn poll(
        &mut self,
        wait: Duration,
        on_segment: &mut dyn FnMut(&Segment<'_>) -> Flow,
    ) -> Result<Polled, SourceError>;

    /// Like [`Source::poll`], but also hands over socket calls (`--breakdown`). Sources that
    /// see no socket calls keep this default, which hands over their segments.
    fn poll_captured(
        &mut self,
        wait: Duration,
        on_captured: &mut dyn FnMut(Captured<'_, '_>) -> Flow,
    ) -> Result<Polled, SourceError> {
        self.poll(wait, &mut |segment| on_captured(Captured::Segment(segment)))
    }

    /// The source's clock now, in the timebase of its segments' `ts_ns`. A live source
    /// tells it, so a quiet wire still ends intervals and exposes requests past `-t`; a
    /// capture's time moves only with its packets (`None`).
    fn now_ns(&self) -> Option<u64>;

    /// Nanoseconds to add to this source's timestamps to get UNIX time (UTC). Capture
    /// timestamps are UNIX time already (0); live ones are CLOCK_MONOTONIC, whose offset a
    /// live source measures at each call (the driver asks again at each interval: the wall
    /// clock may be stepped during a run).
    fn unix_offset_ns(&self) -> i64;

    /// Every counter of the source, for the summary (names defined once, by the source's
    /// counter struct).
    fn counters(&mut self) -> Vec<Counter>;

    /// The counters worth a place on every interval line (a subset of [`Source::counters`]).
    fn interval_counters(&mut self) -> Vec<Counter> {
        self.counters()
    }

    /// A live capture's own start, in the timebase of its segments' `ts_ns`: the instant its
    /// hooks were attached. The run's window (the summary's and the first interval's start)
    /// begins there, not at the first segment — a quiet second before the first message is
    /// part of what was watched. `None` (the default): a capture file's window is its
    /// packets'.
    fn capture_started_ns(&self) -> Option<u64> {
        None
    }

    /// A live capture's own end: the instant its hooks were detached (`None` until
    /// [`Source::stop_capture`] or [`Source::close`] detached them, and for capture files).
    /// The run's window ends there; a drain after it moves no clock past it.
    fn capture_stopped_ns(&self) -> Option<u64> {
        None
    }

    /// Stops taking in new data at a stop (signal, `--duration`, quit key) but keeps what
    /// was already taken readable, and says whether there may be such data: a live source
    /// detaches from the kernel and still holds its rings, which the driver then drains to
    /// the end, so nothing captured before the stop is missing from the summary. A capture
    /// file has nothing taken but unread (`false`, the default): a stop ends its reading.
    fn stop_capture(&mut self) -> Result<bool, SourceError> {
        Ok(false)
    }

    /// Stops capturing (live: detaches from the kernel, if [`Source::stop_capture`] did not)
    /// and makes the counters final. The driver has drained what was left before. A
    /// failure to clean up is reported, never ignored.
    fn close(&mut self) -> Result<(), SourceError> {
        Ok(())
    }
}

/// The counters of any struct of `u64` fields (and `bool` flags, as 0/1), named by its
/// serde field names: how a source defines its counters once for every output.
pub fn counters_of<T: serde::Serialize>(counters: &T) -> Vec<Counter> {
    match serde_json::to_value(counters) {
        Ok(serde_json::Value::Object(fields)) => fields
            .into_iter()
            .filter_map(|(name, v)| {
                let value = v.as_u64().or_else(|| v.as_bool().map(u64::from))?;
                Some((name, value))
            })
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize)]
    struct Example {
        packets: u64,
        decode_errors: u64,
        truncated_file: bool,
    }

    #[test]
    fn counters_are_named_by_their_fields_in_order() {
        let c = counters_of(&Example {
            packets: 7,
            decode_errors: 2,
            truncated_file: true,
        });
        assert_eq!(
            c,
            vec![
                ("packets".to_string(), 7),
                ("decode_errors".to_string(), 2),
                ("truncated_file".to_string(), 1)
            ]
        );
    }
}
