//! The one loop every source runs through (capture files, the live ring, later a
//! mirror-port capture): segments into the pipeline, interval reports as the source's clock
//! passes their ends, keys while a live source runs in a terminal, and the final summary.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use fixscope_core::report::Reporter;
use fixscope_core::shutdown::Shutdown;
use fixscope_core::source::{Captured, Flow, Polled, Source, SourceError};
use fixscope_core::Pipeline;

use crate::keys::{Key, KeyReader, HELP};
use crate::say;
use crate::tui::{Tui, View};

/// How long one poll of a live source may wait before the loop looks at the clock, keys
/// and signals.
const POLL_WAIT: Duration = Duration::from_millis(20);
/// The longest a live interval line's source counters (kernel records, drops, …) may lag the
/// interval's end: re-read at least this often (at most 20 map reads a second more).
const SOURCE_COUNTERS_MAX_AGE: Duration = Duration::from_millis(50);

/// A change of the UNIX offset (CLOCK_REALTIME − the source's clock) smaller than this is the
/// measurement's own jitter (its two monotonic reads bracket the realtime read within about a
/// microsecond), not a step or a slew of the wall clock worth relabelling reports for.
const WALL_CLOCK_MOVE_NS: u64 = 20_000;

/// Reports label times in UNIX time as it is now: a wall clock stepped (NTP, PTP, an RTC
/// sync) or slewed since the last interval moves the offset the next reports use. Latencies
/// never depend on it (both ends are the kernel's monotonic timestamps).
fn follow_wall_clock(source: &dyn Source, pipeline: &mut Pipeline) {
    let now = source.unix_offset_ns();
    let before = pipeline.unix_offset_ns();
    if now.abs_diff(before) > WALL_CLOCK_MOVE_NS {
        if now.abs_diff(before) > 1_000_000 {
            say::warn(format!(
                "the wall clock moved by {:+.3} ms against the capture's clock; reports from now on use the new UNIX time",
                (now as f64 - before as f64) / 1e6
            ));
        }
        pipeline.set_unix_offset_ns(now);
    }
}
/// After a stop, the most a live source's backlog is drained for. A consumer that kept up
/// empties its rings in milliseconds; one that fell behind (a full 64 MiB of rings is about
/// 10^6 messages, a quarter of a second of work) still finishes well inside this. What is
/// left after it is counted by the source (`unread_records_at_exit`), never dropped
/// silently.
pub const MAX_DRAIN: Duration = Duration::from_secs(5);

/// What ends a run besides the source itself.
pub struct RunLimits<'a> {
    pub stop: &'a Shutdown,
    /// Stop after this long (live `--duration`).
    pub duration: Option<Duration>,
    /// After a stop, how long a live source's backlog may be drained ([`MAX_DRAIN`]).
    pub max_drain: Duration,
}

/// Runs `source` to its end (or a stop), then prints the summary. A source that fails
/// after delivering segments still gets its summary (what was analysed), then the error
/// and a failing exit code; one that fails before delivering anything gets only the error.
pub fn drive(
    source: &mut dyn Source,
    pipeline: &mut Pipeline,
    reporter: &mut dyn Reporter,
    limits: &RunLimits<'_>,
) -> Result<ExitCode> {
    drive_with(source, pipeline, reporter, limits, None)
}

/// [`drive`], with the terminal UI (`--tui`) in place of the key reader when given: it
/// takes the screen for the loop, passes SPACE/`r`/quit back here, and gives the screen
/// back before the final summary is printed.
pub fn drive_with(
    source: &mut dyn Source,
    pipeline: &mut Pipeline,
    reporter: &mut dyn Reporter,
    limits: &RunLimits<'_>,
    mut tui: Option<&mut Tui>,
) -> Result<ExitCode> {
    pipeline.set_unix_offset_ns(source.unix_offset_ns());
    // A live capture's window is its own, attach to detach (#36): not its first message to
    // its last, and not the drain after the detach.
    if let Some(started) = source.capture_started_ns() {
        pipeline.start_window_at(started);
    }
    let mut stopped_at: Option<u64> = None;
    let live = source.now_ns().is_some();
    let mut keys = if live && tui.is_none() {
        KeyReader::new()
    } else {
        KeyReader::disabled()
    };
    if keys.interactive() {
        say::info(HELP);
    }
    if let Some(tui) = tui.as_deref_mut() {
        tui.enter().context("cannot start the terminal UI")?;
    }
    let deadline = limits.duration.map(|d| Instant::now() + d);
    let mut delivered = 0usize;
    let mut failure: Option<SourceError> = None;
    let mut report_error: Option<std::io::Error> = None;
    let mut interval_source = Vec::new();
    let mut source_counters_read_at: Option<Instant> = None;
    // Set at a stop when the source still holds captured data: the loop then runs on,
    // without taking in anything new, until the source is empty or this instant.
    let mut draining_until: Option<Instant> = None;
    let mut quit = false;
    // A capture file's reading ended by a stop before the source's end.
    let mut stopped_early = false;
    loop {
        let stop =
            quit || limits.stop.is_triggered() || deadline.is_some_and(|d| Instant::now() >= d);
        if stop && draining_until.is_none() {
            match source.stop_capture() {
                Ok(true) => {
                    draining_until = Some(Instant::now() + limits.max_drain);
                    stopped_at = source.capture_stopped_ns();
                }
                Ok(false) => {
                    stopped_early = !live;
                    break;
                }
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        if draining_until.is_some_and(|until| Instant::now() >= until) {
            break;
        }
        // The source's counters for an interval line are read only when an interval may
        // end during this poll (a live source polls up to 1,000 times a second).
        // The clock is read BEFORE the poll drains the source: everything stamped before
        // this instant is then in the pipeline when the pipeline advances to it. Read after
        // the drain, a consumer descheduled between the two would raise `-t` alerts for
        // requests whose responses were waiting in the ring (wrong `timed_out`/`late`).
        // Once detached, the clock stops at the detach: the drain only hands on what was
        // captured before it.
        let polled_at = source
            .now_ns()
            .map(|now| stopped_at.map_or(now, |stop| now.min(stop)));
        let due = polled_at.is_none_or(|now| pipeline.interval_due(now));
        // A poll that runs across an interval's end (a busy or descheduled consumer) ends
        // that interval from inside the poll, with the counters read before the poll: never
        // let them be older than SOURCE_COUNTERS_MAX_AGE (they once stayed at the start's
        // zeros through four one-second intervals under load).
        let stale = source_counters_read_at.is_none_or(|t| t.elapsed() >= SOURCE_COUNTERS_MAX_AGE);
        if due || stale {
            interval_source = source.interval_counters();
            source_counters_read_at = Some(Instant::now());
        }
        if due {
            follow_wall_clock(source, pipeline);
        }
        let polled = source.poll_captured(POLL_WAIT, &mut |captured| {
            let segment = match captured {
                Captured::Segment(segment) => segment,
                // Socket calls (`--breakdown`) are placed by sequence number, not time:
                // they neither end intervals nor move the clock of reports.
                Captured::Socket(event) => {
                    pipeline.on_socket_event(event);
                    return Flow::Continue;
                }
                // An OpenSSL call's plaintext (`--tls-uprobes`): timed by its records.
                Captured::TlsCall(event) => {
                    pipeline.on_tls_call(event);
                    return Flow::Continue;
                }
            };
            if pipeline.interval_due(segment.ts_ns) {
                if let Err(e) =
                    pipeline.report_due_intervals(segment.ts_ns, &interval_source, reporter)
                {
                    report_error = Some(e);
                    return Flow::Stop;
                }
            }
            pipeline.on_segment(segment);
            Flow::Continue
        });
        if let Some(e) = report_error.take() {
            return Err(e.into());
        }
        match polled {
            // Nothing within a poll's wait once nothing new comes in: the backlog is done.
            Ok(Polled::Segments(0)) if draining_until.is_some() => break,
            Ok(Polled::Segments(n)) => delivered += n,
            Ok(Polled::Ended) => break,
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
        if let Some(now_ns) = polled_at {
            if pipeline.interval_due(now_ns) {
                interval_source = source.interval_counters();
                source_counters_read_at = Some(Instant::now());
            }
            // A quiet wire still ends intervals and raises `-t` alerts.
            pipeline.advance_to(now_ns, &interval_source, reporter)?;
        }
        let key = match tui.as_deref_mut() {
            Some(tui) => tui.poll_key()?,
            None => keys.poll(),
        };
        match key {
            Some(Key::Summary) => {
                pipeline.summary_now(&source.counters(), reporter)?;
                if let Some(tui) = tui.as_deref_mut() {
                    tui.show(View::Summary);
                    tui.note(format!("summary at {}", now_utc()));
                }
            }
            Some(Key::Reset) => {
                pipeline.reset_stats();
                match tui.as_deref_mut() {
                    Some(tui) => {
                        tui.note(format!("statistics reset at {}", now_utc()));
                        tui.refresh_summary(|r| pipeline.summary_now(&source.counters(), r))?;
                    }
                    None => say::info("statistics reset"),
                }
            }
            Some(Key::Quit) => quit = true,
            Some(Key::Help) => say::info(HELP),
            // The UI's own keys; nothing in line mode.
            Some(Key::NextView | Key::PreviousView) | None => {}
        }
        if let Some(tui) = tui.as_deref_mut() {
            if tui.summary_due() {
                tui.refresh_summary(|r| pipeline.summary_now(&source.counters(), r))?;
            }
            tui.tick()?;
        }
    }
    drop(keys);
    // The screen goes before the final summary, which is printed as without the UI.
    if let Some(tui) = tui {
        tui.leave();
    }
    if delivered == 0 {
        if let Some(e) = failure {
            let _ = source.close();
            return Err(anyhow::anyhow!(e));
        }
    }
    // Stop capturing before the final report; a failed clean-up is said, never ignored.
    let close_error = source.close().err();
    if let Some(stopped) = source.capture_stopped_ns() {
        // The capture's end: intervals up to the detach, and requests unanswered by then.
        let counters = source.interval_counters();
        pipeline.advance_to(stopped, &counters, reporter)?;
    }
    // The summary of a source not read to its end says why (a damaged capture, a stop).
    let incomplete = fixscope_core::pcap::incomplete_reason(
        failure.as_ref().map(|e| e as &dyn std::fmt::Display),
        stopped_early,
    );
    pipeline.finish_incomplete(&source.counters(), incomplete.as_deref(), reporter)?;
    let mut code = ExitCode::SUCCESS;
    if let Some(e) = failure {
        say::error(format!("{e}; stopped"));
        code = ExitCode::FAILURE;
    }
    if let Some(e) = close_error {
        say::error(format!("cleaning up: {e}"));
        code = ExitCode::FAILURE;
    }
    Ok(code)
}

/// The wall clock as ISO-8601 UTC to the second, for what the UI says a key did.
fn now_utc() -> String {
    let unix_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    fixscope_core::clock::iso8601_utc(unix_ns, fixscope_core::clock::Precision::Seconds).to_string()
}

#[cfg(test)]
mod tests {
    //! The stop: a live source's backlog reaches the summary; a capture file stops at once;
    //! a backlog that never ends is cut off by `max_drain`.
    use super::*;
    use fixscope_core::report::{IntervalReport, SummaryReport};
    use fixscope_core::source::Counter;
    use fixscope_core::{Direction, Endpoint, FlowKey, PipelineConfig, Segment, TcpFlags};
    use fixscope_testkit::fix::fix_message;

    /// A source of orders (request + ack per order) handed a few segments per poll, as a
    /// live capture hands its rings' records; `live` says whether a stop leaves a backlog
    /// to drain. `orders: None` never runs dry.
    struct Backlog {
        live: bool,
        orders: Option<usize>,
        next: usize,
        per_poll: usize,
        stop_calls: usize,
        ts: u64,
        unix_offset_ns: i64,
    }

    impl Backlog {
        fn new(live: bool, orders: Option<usize>) -> Self {
            Backlog {
                live,
                orders,
                next: 0,
                per_poll: 3,
                stop_calls: 0,
                ts: 1_000_000,
                unix_offset_ns: 0,
            }
        }
    }

    fn endpoint(addr: &str, port: u16) -> Endpoint {
        Endpoint {
            addr: addr.parse().expect("address"),
            port,
        }
    }

    /// Segment `i`: even ones the request of order i/2, odd ones its ack. The ClOrdID has a
    /// fixed width, so each direction's messages have one length and sequence numbers
    /// follow from `i`.
    fn message(i: usize) -> Vec<u8> {
        let id = format!("ORD{:08}", i / 2);
        if i.is_multiple_of(2) {
            fix_message(
                "FIX.4.4",
                &[(35, "D"), (49, "C"), (56, "X"), (11, &id), (55, "A")],
            )
        } else {
            fix_message(
                "FIX.4.4",
                &[(35, "8"), (49, "X"), (56, "C"), (11, &id), (150, "0")],
            )
        }
    }

    impl Source for Backlog {
        fn poll(
            &mut self,
            _wait: Duration,
            on_segment: &mut dyn FnMut(&Segment<'_>) -> Flow,
        ) -> Result<Polled, SourceError> {
            let client = endpoint("10.0.0.1", 40000);
            let server = endpoint("10.0.0.2", 9000);
            let mut handed = 0;
            while handed < self.per_poll {
                if self.orders.is_some_and(|n| self.next >= 2 * n) {
                    break;
                }
                let i = self.next;
                let payload = message(i);
                let (flow, direction, seq) = if i.is_multiple_of(2) {
                    (
                        FlowKey {
                            src: client,
                            dst: server,
                        },
                        Direction::Request,
                        1_000 + (i / 2 * payload.len()) as u32,
                    )
                } else {
                    (
                        FlowKey {
                            src: server,
                            dst: client,
                        },
                        Direction::Response,
                        5_000 + (i / 2 * payload.len()) as u32,
                    )
                };
                self.ts += 10_000;
                let seg = Segment {
                    ts_ns: self.ts,
                    flow,
                    direction,
                    seq,
                    ack: 0,
                    flags: TcpFlags(TcpFlags::PSH),
                    payload: &payload,
                    missing_tail: 0,
                };
                on_segment(&seg);
                self.next += 1;
                handed += 1;
            }
            Ok(Polled::Segments(handed))
        }
        fn now_ns(&self) -> Option<u64> {
            self.live.then_some(self.ts)
        }
        fn unix_offset_ns(&self) -> i64 {
            self.unix_offset_ns
        }
        fn counters(&mut self) -> Vec<Counter> {
            Vec::new()
        }
        fn stop_capture(&mut self) -> Result<bool, SourceError> {
            self.stop_calls += 1;
            Ok(self.live)
        }
    }

    #[derive(Default)]
    struct Summary(Option<(u64, u64)>, Option<String>);

    impl Reporter for Summary {
        fn interval(&mut self, _: &IntervalReport<'_>) -> std::io::Result<()> {
            Ok(())
        }
        fn summary(&mut self, r: &SummaryReport<'_>) -> std::io::Result<()> {
            self.0 = Some((
                r.counters.correlation.requests,
                r.counters.correlation.matched,
            ));
            self.1 = r.incomplete.clone();
            Ok(())
        }
    }

    /// Drives `source` with the stop already raised; (requests, matched) of the summary,
    /// and why it is incomplete.
    fn drive_stopped(source: &mut Backlog, max_drain: Duration) -> ((u64, u64), Option<String>) {
        let stop = Shutdown::new();
        stop.trigger();
        let limits = RunLimits {
            stop: &stop,
            duration: None,
            max_drain,
        };
        let mut pipeline = Pipeline::new(PipelineConfig::default());
        let mut summary = Summary::default();
        drive(source, &mut pipeline, &mut summary, &limits).expect("drive");
        (summary.0.expect("a summary"), summary.1)
    }

    #[test]
    fn reports_follow_a_stepped_wall_clock_but_not_the_measurements_jitter() {
        let mut source = Backlog::new(true, Some(1));
        let mut pipeline = Pipeline::new(PipelineConfig::default());
        source.unix_offset_ns = 1_700_000_000_000_000_000;
        follow_wall_clock(&source, &mut pipeline);
        assert_eq!(pipeline.unix_offset_ns(), 1_700_000_000_000_000_000);
        // A re-measurement a few microseconds off is the measurement, not the clock.
        source.unix_offset_ns += 3_000;
        follow_wall_clock(&source, &mut pipeline);
        assert_eq!(pipeline.unix_offset_ns(), 1_700_000_000_000_000_000);
        // A 70 ms step (the guest's `hwclock --hctosys`), backwards too: followed.
        source.unix_offset_ns += 70_000_000;
        follow_wall_clock(&source, &mut pipeline);
        assert_eq!(pipeline.unix_offset_ns(), 1_700_000_000_070_003_000);
        source.unix_offset_ns -= 90_000_000;
        follow_wall_clock(&source, &mut pipeline);
        assert_eq!(pipeline.unix_offset_ns(), 1_699_999_999_980_003_000);
    }

    #[test]
    fn a_stop_drains_everything_a_live_source_captured_before_it() {
        let mut source = Backlog::new(true, Some(500));
        let ((requests, matched), incomplete) = drive_stopped(&mut source, MAX_DRAIN);
        assert_eq!(incomplete, None, "a live run's stop is its end");
        assert_eq!(source.stop_calls, 1, "the capture is stopped once");
        assert_eq!(
            requests, 500,
            "every request captured before the stop is counted"
        );
        assert_eq!(matched, 500);
    }

    #[test]
    fn a_stop_ends_a_capture_file_at_once() {
        let mut source = Backlog::new(false, Some(500));
        let ((requests, _), incomplete) = drive_stopped(&mut source, MAX_DRAIN);
        assert_eq!(source.stop_calls, 1);
        assert_eq!(requests, 0, "nothing is read from a file after the stop");
        // Issue #36: the summary says the captures were not read to their end.
        assert!(
            incomplete.is_some_and(|why| why.contains("stopped")),
            "a capture's summary after a stop is incomplete"
        );
    }

    #[test]
    fn a_backlog_that_never_ends_is_cut_off_after_max_drain() {
        let mut source = Backlog::new(true, None);
        let started = Instant::now();
        let ((requests, _), _) = drive_stopped(&mut source, Duration::from_millis(100));
        assert_eq!(source.stop_calls, 1);
        assert!(requests > 0, "the drain ran");
        // Generous: the point is that it ends, not how fast.
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the drain is bounded"
        );
    }
}
