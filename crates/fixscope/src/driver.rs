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
/// After a stop, how long the loop keeps draining what a live source still holds.
const DRAIN_FOR: Duration = Duration::from_millis(50);

/// What ends a run besides the source itself.
pub struct RunLimits<'a> {
    pub stop: &'a Shutdown,
    /// Stop after this long (live `--duration`).
    pub duration: Option<Duration>,
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
    let mut ended = false;
    let mut report_error: Option<std::io::Error> = None;
    let mut interval_source = Vec::new();
    loop {
        if limits.stop.is_triggered() || deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        // The source's counters for an interval line are read only when an interval may
        // end during this poll (a live source polls up to 1,000 times a second).
        // The clock is read BEFORE the poll drains the source: everything stamped before
        // this instant is then in the pipeline when the pipeline advances to it. Read after
        // the drain, a consumer descheduled between the two would raise `-t` alerts for
        // requests whose responses were waiting in the ring (wrong `timed_out`/`late`).
        let polled_at = source.now_ns();
        let due = polled_at.is_none_or(|now| pipeline.interval_due(now));
        if due {
            interval_source = source.interval_counters();
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
            Ok(Polled::Segments(n)) => delivered += n,
            Ok(Polled::Ended) => {
                ended = true;
                break;
            }
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
        if let Some(now_ns) = polled_at {
            if pipeline.interval_due(now_ns) {
                interval_source = source.interval_counters();
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
            Some(Key::Quit) => break,
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
    if !ended && failure.is_none() {
        drain(source, pipeline, &mut failure);
    }
    if delivered == 0 {
        if let Some(e) = failure {
            let _ = source.close();
            return Err(anyhow::anyhow!(e));
        }
    }
    // Stop capturing before the final report; a failed clean-up is said, never ignored.
    let close_error = source.close().err();
    pipeline.finish(&source.counters(), reporter)?;
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

/// Hands the pipeline what a stopped source still holds (a live ring's last records).
fn drain(source: &mut dyn Source, pipeline: &mut Pipeline, failure: &mut Option<SourceError>) {
    let until = Instant::now() + DRAIN_FOR;
    while Instant::now() < until {
        let polled = source.poll_captured(Duration::ZERO, &mut |captured| {
            match captured {
                Captured::Segment(segment) => pipeline.on_segment(segment),
                Captured::Socket(event) => pipeline.on_socket_event(event),
            }
            Flow::Continue
        });
        match polled {
            Ok(Polled::Segments(0)) | Ok(Polled::Ended) => return,
            Ok(Polled::Segments(_)) => {}
            Err(e) => {
                *failure = Some(e);
                return;
            }
        }
    }
}
