//! [`TapSource`]: the mirror-port capture as the core's [`Source`].
//!
//! Each poll reads every interface without blocking (sleeping in `poll(2)` on their
//! descriptors while the wire is quiet), collects the frames in the [`Merge`], and hands
//! on those stamped before the watermark through the core's frame classifier (decode,
//! tunnels, direction from the ports, a mirror's second copies) — the same one
//! `fixscope pcap` uses, so a capture recorded on the same mirror gives the same figures.
//!
//! Clock: with host or synchronised adapter time stamps the watermark is CLOCK_REALTIME
//! minus the grace (a frame stamped earlier has reached the ring by then), and `now_ns`
//! says it, so a quiet wire still ends intervals and raises `-t` alerts. With
//! `adapter_unsynced` the NIC's clock is not the host's: the watermark is the newest
//! frame's time minus the grace (all of it once the wire has been quiet for the grace),
//! and time moves with the packets.

use std::time::{Duration, Instant};

use fixscope_core::classify::{CaptureStats, FrameClassifier};
use fixscope_core::source::{counters_of, Counter, Flow, Polled, Source, SourceError};
use fixscope_core::Segment;

use crate::capture::InterfaceCapture;
use crate::config::TapConfig;
use crate::counters::TapCounters;
use crate::error::TapError;
use crate::merge::Merge;

/// Frames read from one interface per poll at most, so a flooded mirror still lets the
/// loop look at its clock, keys and signals.
const READ_BATCH: usize = 8192;
/// The longest the merge waits for frames of other interfaces or CPUs, however late some
/// came (as the live source's merge).
const MAX_GRACE: Duration = Duration::from_millis(250);
/// Counters (a `getsockopt` per interface) are read at most this often.
const STATS_EVERY: Duration = Duration::from_millis(200);

pub struct TapSource {
    config: TapConfig,
    captures: Vec<InterfaceCapture>,
    classifier: FrameClassifier,
    capture_stats: CaptureStats,
    merge: Merge,
    counters: TapCounters,
    stats_read_at: Option<Instant>,
    /// How long frames are held for others stamped before them: the configured grace,
    /// grown to twice the lateness of any late frame.
    grace: Duration,
    /// Everything stamped up to here has been handed on (the clock told the driver).
    delivered_to: u64,
    /// The newest timestamp read (for `adapter_unsynced`).
    newest_ts: u64,
    last_frame_at: Instant,
    stopped: bool,
}

impl TapSource {
    /// Opens every interface (all or none: an error names the one that failed).
    pub fn open(config: &TapConfig) -> Result<Self, TapError> {
        if config.ifaces.is_empty() {
            return Err(TapError::NoInterface);
        }
        let mut captures: Vec<InterfaceCapture> = Vec::new();
        for name in &config.ifaces {
            if captures.iter().any(|c| c.name() == name) {
                return Err(TapError::DuplicateInterface(name.clone()));
            }
            captures.push(InterfaceCapture::open(name, config)?);
        }
        Ok(TapSource {
            config: config.clone(),
            captures,
            classifier: FrameClassifier::new(config.ports.clone()),
            capture_stats: CaptureStats::default(),
            merge: Merge::default(),
            counters: TapCounters::default(),
            stats_read_at: None,
            grace: config.grace,
            delivered_to: 0,
            newest_ts: 0,
            last_frame_at: Instant::now(),
            stopped: false,
        })
    }

    pub fn config(&self) -> &TapConfig {
        &self.config
    }

    /// The counters of the capture itself (drops: the summary warns about them).
    pub fn tap_counters(&mut self) -> TapCounters {
        self.refresh_counters(true);
        self.counters
    }

    /// Reads every interface once; returns how many frames came.
    fn read_all(&mut self) -> Result<usize, TapError> {
        let mut n = 0;
        let merge = &mut self.merge;
        let mut newest = self.newest_ts;
        for capture in &mut self.captures {
            let link = capture.link();
            n += capture.read(READ_BATCH, &mut |ts_ns, frame| {
                newest = newest.max(ts_ns);
                merge.push(ts_ns, link, frame);
            })?;
        }
        self.newest_ts = newest;
        if n > 0 {
            self.last_frame_at = Instant::now();
        }
        Ok(n)
    }

    /// Sleeps until an interface has frames, at most `wait`.
    fn wait_readable(&self, wait: Duration) {
        let mut fds: Vec<libc::pollfd> = self
            .captures
            .iter()
            .map(|c| libc::pollfd {
                fd: c.fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let ms = i32::try_from(wait.as_millis()).unwrap_or(i32::MAX);
        // SAFETY: `fds` is a valid array of `fds.len()` pollfd structs for the call.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    }

    /// Up to where frames may be handed on now.
    fn watermark(&self) -> u64 {
        if self.stopped {
            return u64::MAX;
        }
        let grace = self.grace.as_nanos() as u64;
        if self.config.timestamps.on_host_clock() {
            fixscope_core::clock::realtime_ns().saturating_sub(grace)
        } else if self.last_frame_at.elapsed() >= self.grace {
            self.newest_ts
        } else {
            self.newest_ts.saturating_sub(grace)
        }
    }

    fn refresh_counters(&mut self, now: bool) {
        let due = now
            || self
                .stats_read_at
                .is_none_or(|t| t.elapsed() >= STATS_EVERY);
        if !due {
            return;
        }
        self.stats_read_at = Some(Instant::now());
        let mut c = TapCounters {
            late_frames: self.merge.late_frames,
            ..TapCounters::default()
        };
        for capture in &mut self.captures {
            // A failed read keeps the last figures; the next poll reports the failure.
            if let Ok(t) = capture.totals() {
                c.received += t.received;
                c.drops += t.dropped;
                c.interface_drops += t.if_dropped;
            } else {
                return;
            }
        }
        self.counters = c;
    }
}

impl Source for TapSource {
    fn poll(
        &mut self,
        wait: Duration,
        on_segment: &mut dyn FnMut(&Segment<'_>) -> Flow,
    ) -> Result<Polled, SourceError> {
        if !self.stopped {
            let mut read = self.read_all()?;
            if read == 0 && self.merge.is_empty() {
                self.wait_readable(wait);
                read = self.read_all()?;
            } else if read == 0 {
                // Frames are held for the grace: sleep until the oldest may go, or new
                // frames come.
                self.wait_readable(wait.min(Duration::from_millis(1)));
                read = self.read_all()?;
            }
            if read > 0 {
                self.merge.sort();
            }
        }
        let watermark = self.watermark();
        let classifier = &mut self.classifier;
        let stats = &mut self.capture_stats;
        let mut handed = 0usize;
        // Segments the classifier held (a connection between two watched ports whose
        // acceptor was not yet known) go on first, in order.
        let released = |classifier: &mut FrameClassifier,
                        stats: &mut CaptureStats,
                        handed: &mut usize,
                        on_segment: &mut dyn FnMut(&Segment<'_>) -> Flow| {
            let mut go_on = true;
            classifier.take_released(stats, &mut |segment, _| {
                *handed += 1;
                go_on = on_segment(segment) == Flow::Continue;
                go_on
            });
            go_on
        };
        self.merge.release(watermark, &mut |ts_ns, link, frame| {
            let segment = classifier.classify(link, ts_ns, frame, stats);
            if classifier.has_released() && !released(classifier, stats, &mut handed, on_segment) {
                return false;
            }
            match segment {
                Some(segment) => {
                    handed += 1;
                    on_segment(&segment) == Flow::Continue
                }
                None => true,
            }
        });
        if self.stopped && watermark == u64::MAX {
            // Everything captured is in: what is still held goes on.
            classifier.finish(stats);
            released(classifier, stats, &mut handed, on_segment);
        }
        if watermark != u64::MAX {
            self.delivered_to = self.delivered_to.max(watermark);
        }
        self.counters.late_frames = self.merge.late_frames;
        let wanted = Duration::from_nanos(self.merge.max_lateness_ns.saturating_mul(2));
        if wanted > self.grace {
            self.grace = wanted.min(MAX_GRACE);
        }
        Ok(Polled::Segments(handed))
    }

    fn now_ns(&self) -> Option<u64> {
        Some(self.delivered_to)
    }

    fn unix_offset_ns(&self) -> i64 {
        // Host and synchronised adapter stamps are UNIX time; an unsynchronised NIC's are
        // its own (documented: times of day are then the NIC's).
        0
    }

    fn counters(&mut self) -> Vec<Counter> {
        self.refresh_counters(false);
        let mut all = counters_of(&self.capture_stats);
        all.extend(counters_of(&self.counters));
        all
    }

    fn interval_counters(&mut self) -> Vec<Counter> {
        self.refresh_counters(false);
        let mut c = counters_of(&self.counters);
        c.push((
            "capture_mirror_duplicates".to_string(),
            self.capture_stats.mirror_duplicates,
        ));
        c
    }

    fn stop_capture(&mut self) -> Result<bool, SourceError> {
        if !self.stopped {
            // What the kernel captured before the stop is taken in, then nothing more.
            for _ in 0..64 {
                if self.read_all()? == 0 {
                    break;
                }
            }
            self.merge.sort();
            self.refresh_counters(true);
            self.stopped = true;
        }
        Ok(true)
    }

    fn close(&mut self) -> Result<(), SourceError> {
        if !self.stopped {
            self.refresh_counters(true);
            self.stopped = true;
        }
        Ok(())
    }
}
