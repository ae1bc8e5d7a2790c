//! [`LiveSource`]: the live capture behind the core's [`Source`] seam — ring records as
//! segments, CLOCK_MONOTONIC as the clock, the kernel's and the consumer's counters, and
//! detaching on `close`.

use std::time::{Duration, Instant};

use fixscope_core::segment::Segment;
use fixscope_core::source::{counters_of, Captured, Counter, Flow, Polled, Source, SourceError};

use crate::breakdown::BreakdownCounters;
use crate::capture::LiveCapture;
use crate::clock;
use crate::config::LiveConfig;
use crate::counters::{KernelCounters, KernelIntervalCounters, LiveCounters};
use crate::tls_uprobe::TlsUprobeCounters;
use crate::LiveError;

/// Reading the kernel counters costs a lookup per CPU, and the interface check a syscall:
/// each happens at most this often.
pub const HOUSEKEEPING_EVERY: Duration = Duration::from_millis(200);

/// A live capture as a [`Source`].
///
/// `poll` fails with [`LiveError::InterfaceGone`] (and keeps failing) once the interface
/// disappeared; the driver then stops, `close`s, and still reports what it saw.
pub struct LiveSource {
    capture: LiveCapture,
    kernel: KernelCounters,
    /// `--breakdown`'s counters, read with the kernel's.
    breakdown: Option<BreakdownCounters>,
    /// `--tls-uprobes`' counters, read with the kernel's.
    tls_uprobes: Option<TlsUprobeCounters>,
    kernel_read_at: Option<Instant>,
    interface_checked_at: Option<Instant>,
    /// A failure found where it cannot be returned (reading counters), for the next `poll`
    /// or `close`.
    deferred: Option<LiveError>,
    /// The interface vanished: every later `poll` says so.
    gone: bool,
    /// Records left in the rings when the source was closed.
    unread_at_exit: u64,
}

impl LiveSource {
    /// Opens a [`LiveCapture`] for `cfg` (see [`LiveCapture::open`]).
    pub fn open(cfg: &LiveConfig) -> Result<LiveSource, LiveError> {
        Ok(LiveSource::new(LiveCapture::open(cfg)?))
    }

    /// Wraps an open capture.
    pub fn new(capture: LiveCapture) -> LiveSource {
        LiveSource {
            capture,
            kernel: KernelCounters::default(),
            breakdown: None,
            tls_uprobes: None,
            kernel_read_at: None,
            interface_checked_at: None,
            deferred: None,
            gone: false,
            unread_at_exit: 0,
        }
    }

    /// Records left in the rings after the final drain (known once closed).
    pub fn unread_records_at_exit(&self) -> u64 {
        self.unread_at_exit
    }

    /// The capture (attach kind, ifindex, consumer priority, ...).
    pub fn capture(&self) -> &LiveCapture {
        &self.capture
    }

    /// The kernel counters, at most [`HOUSEKEEPING_EVERY`] old (final after `close`).
    pub fn kernel_counters(&mut self) -> KernelCounters {
        self.refresh_counters(false);
        self.kernel
    }

    fn refresh_counters(&mut self, force: bool) {
        if !(force || due(self.kernel_read_at)) {
            return;
        }
        self.kernel_read_at = Some(Instant::now());
        match self.capture.counters() {
            Ok(k) => self.kernel = k,
            Err(e) => {
                self.deferred.get_or_insert(e);
            }
        }
        match self.capture.breakdown_counters() {
            Ok(b) => self.breakdown = b,
            Err(e) => {
                self.deferred.get_or_insert(e);
            }
        }
        match self.capture.tls_uprobe_counters() {
            Ok(t) => self.tls_uprobes = t,
            Err(e) => {
                self.deferred.get_or_insert(e);
            }
        }
    }

    fn check_interface(&mut self) -> Result<(), LiveError> {
        if !self.gone {
            if !due(self.interface_checked_at) {
                return Ok(());
            }
            self.interface_checked_at = Some(Instant::now());
        }
        let checked = self.capture.check_interface();
        self.gone = matches!(checked, Err(LiveError::InterfaceGone(_)));
        checked
    }
}

/// Whether a housekeeping step last done `at` is due again.
fn due(at: Option<Instant>) -> bool {
    match at {
        Some(t) => t.elapsed() >= HOUSEKEEPING_EVERY,
        None => true,
    }
}

impl Source for LiveSource {
    fn poll(
        &mut self,
        wait: Duration,
        on_segment: &mut dyn FnMut(&Segment<'_>) -> Flow,
    ) -> Result<Polled, SourceError> {
        if let Some(e) = self.deferred.take() {
            return Err(e.into());
        }
        self.check_interface()?;
        let n = self.capture.poll(wait, on_segment)?;
        Ok(Polled::Segments(n))
    }

    /// Socket calls first (`--breakdown`), then segments; see [`LiveCapture::poll_captured`].
    /// The count in `Polled::Segments` is of both.
    fn poll_captured(
        &mut self,
        wait: Duration,
        on_captured: &mut dyn FnMut(Captured<'_, '_>) -> Flow,
    ) -> Result<Polled, SourceError> {
        if let Some(e) = self.deferred.take() {
            return Err(e.into());
        }
        self.check_interface()?;
        let n = self.capture.poll_captured(wait, on_captured)?;
        Ok(Polled::Segments(n))
    }

    /// Not the wall clock: the time up to which the rings' records have been handed on
    /// (behind CLOCK_MONOTONIC by the merge's grace). The driver raises `-t` alerts up to
    /// this instant, so a response still held back never leaves its request timed out.
    fn now_ns(&self) -> Option<u64> {
        Some(self.capture.delivered_to_ns())
    }

    /// Measured at each call: the wall clock can be stepped (NTP, PTP, `hwclock --hctosys`)
    /// while the kernel's monotonic timestamps go on, and reports label their times in UNIX
    /// time as it is when they are made.
    fn unix_offset_ns(&self) -> i64 {
        clock::unix_offset_ns()
    }

    fn counters(&mut self) -> Vec<Counter> {
        self.refresh_counters(false);
        counters_of(&LiveCounters {
            kernel: self.kernel,
            malformed_records: self.capture.malformed_records(),
            late_records: self.capture.late_records(),
            unread_records_at_exit: self.unread_at_exit,
            consumer_raises: self.capture.consumer_raises(),
            breakdown: self.breakdown,
            tls_uprobes: self.tls_uprobes,
        })
    }

    fn interval_counters(&mut self) -> Vec<Counter> {
        self.refresh_counters(false);
        counters_of(&KernelIntervalCounters::from(&self.kernel))
    }

    fn capture_started_ns(&self) -> Option<u64> {
        Some(self.capture.attached_at_ns())
    }

    fn capture_stopped_ns(&self) -> Option<u64> {
        self.capture.detached_at_ns()
    }

    /// Detaches; the rings stay readable, and the driver drains them to the end.
    fn stop_capture(&mut self) -> Result<bool, SourceError> {
        self.capture.detach()?;
        Ok(true)
    }

    /// Detaches, then reads the counters one last time (so the summary's are final) and
    /// counts the records the drain left in the rings.
    fn close(&mut self) -> Result<(), SourceError> {
        let detached = self.capture.detach();
        self.refresh_counters(true);
        self.unread_at_exit = self.capture.unread_records();
        detached?;
        match self.deferred.take() {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_source_can_move_to_the_driver_thread() {
        fn send<T: Send>() {}
        send::<LiveSource>();
        send::<LiveError>();
    }

    #[test]
    fn housekeeping_is_due_first_then_every_period() {
        assert!(due(None));
        assert!(!due(Some(Instant::now())));
        let long_ago = Instant::now().checked_sub(HOUSEKEEPING_EVERY * 2);
        if let Some(t) = long_ago {
            assert!(due(Some(t)));
        }
    }
}
