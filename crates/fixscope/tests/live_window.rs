//! The window a live run reports (issue 36 items 6 and 7): the capture's own, from attach
//! to detach — not its first to its last message — and `fixscope report` on the run's
//! HdrHistogram log prints that same window. The truth is the test's own clock around the
//! run (the process started before the attach; the capture ran for `--duration`) and the
//! simulator's order count.
//!
//! Needs root (BPF on lo).

mod support;
#[allow(unused_imports)]
mod support_live;

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fixscope_testkit::{require_root, serial};
use serde_json::Value;
use support_live::*;

/// `--duration` of the runs: long enough to hold a quiet second before and after the orders.
const DURATION_S: f64 = 3.0;
/// Orders the client sends, starting a second after the attach.
const ORDERS: u64 = 200;

fn unix_ns_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_nanos() as u64
}

fn unix_ns_of(iso: &Value) -> u64 {
    let s = iso.as_str().unwrap_or_else(|| panic!("not a time: {iso}"));
    humantime::parse_rfc3339(s)
        .unwrap_or_else(|e| panic!("{s}: {e}"))
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_nanos() as u64
}

/// What the test saw around one run.
struct Run {
    summary: Value,
    intervals: Vec<Value>,
    /// UNIX ns: before `fixscope live` was started; once it said it was attached; once it
    /// had exited.
    spawned_ns: u64,
    attached_ns: u64,
    exited_ns: u64,
}

/// `fixscope live --duration 3 --json -r 1 EXTRA` on lo, with a quiet second after the
/// attach, ORDERS orders, then quiet until `--duration` ends the run.
fn live_run(dir: &Path, extra: &[&str]) -> Run {
    let exchange = start_exchange(None, "127.0.0.1:0", &dir.join("exchange.csv"), &[]);
    let duration = DURATION_S.to_string();
    let mut args = vec!["--json", "-r", "1", "--duration", &duration];
    args.extend_from_slice(extra);
    let spawned_ns = unix_ns_now();
    let mut live = start_live(None, "lo", exchange.addr.port(), &args);
    let attached_ns = unix_ns_now();
    std::thread::sleep(Duration::from_secs(1));
    let count = ORDERS.to_string();
    run_client(
        None,
        &exchange,
        &["--rate", "1000", "--count", &count],
        Duration::from_secs(20),
    );
    let f = live.proc.finish(Duration::from_secs(20));
    let exited_ns = unix_ns_now();
    assert_eq!(f.status.code(), Some(0), "fixscope live: {}", f.stderr);
    let (intervals, summary) = parse_report(&f.stdout);
    let first = stage(&summary, "first_response");
    assert_eq!(first["count"], ORDERS, "every order is in: {summary}");
    Run {
        summary,
        intervals,
        spawned_ns,
        attached_ns,
        exited_ns,
    }
}

/// Item 6: the summary's window is the capture's — it begins at the attach (after the
/// process started, before it said it was attached, a second before the first order) and
/// lasts `--duration` (the time from attach to detach), ending before the process exited.
#[test]
fn a_live_summary_covers_the_capture_from_attach_to_detach() {
    let test = "a_live_summary_covers_the_capture_from_attach_to_detach";
    require_root(test);
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let r = live_run(dir.path(), &[]);
    let start = unix_ns_of(&r.summary["start"]);
    let end = unix_ns_of(&r.summary["end"]);
    // The UNIX offset of the kernel's clock is measured to a few µs: 2 ms of slack.
    let eps = 2_000_000;
    assert!(
        r.spawned_ns <= start + eps && start <= r.attached_ns + eps,
        "the window starts at the attach: {} not in [{}, {}]",
        r.summary["start"],
        r.spawned_ns,
        r.attached_ns
    );
    assert!(
        end <= r.exited_ns + eps,
        "ends at the detach, before the exit"
    );
    let duration_s = r.summary["duration_s"].as_f64().expect("duration_s");
    assert_eq!(duration_s, (end - start) as f64 / 1e9, "{}", r.summary);
    // `--duration` runs the capture that long (from the driver's start, just after the
    // attach); the stop's detach takes a little more.
    assert!(
        (DURATION_S..DURATION_S + 0.5).contains(&duration_s),
        "--duration {DURATION_S} but a window of {duration_s} s: {}",
        r.summary
    );
    // The intervals tile the same window.
    let first = r.intervals.first().expect("intervals");
    let last = r.intervals.last().expect("intervals");
    assert_eq!(first["start"], r.summary["start"], "the first interval");
    assert_eq!(last["end"], r.summary["end"], "the last interval");
}

/// Item 7: `fixscope report` on the run's log prints the window the run printed.
#[test]
fn report_on_a_live_hlog_prints_the_run_s_window() {
    let test = "report_on_a_live_hlog_prints_the_run_s_window";
    require_root(test);
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("live.hlog");
    let log_s = log.to_str().unwrap().to_string();
    let r = live_run(dir.path(), &["--hlog", &log_s]);
    let out = support::fixscope(&["report", "--json", &log_s]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let window = |v: &Value| {
        (
            v["start"].clone(),
            v["end"].clone(),
            v["duration_s"].clone(),
        )
    };
    assert_eq!(
        window(&report),
        window(&r.summary),
        "(start, end, duration_s): report vs the run"
    );
    assert_eq!(stage(&report, "first_response")["count"], ORDERS);
    // And the text: the same window line as the run would print (one source of figures).
    let text = support::fixscope(&["report", &log_s]);
    let text = String::from_utf8_lossy(&text.stdout);
    let secs = format!("{:.3}", r.summary["duration_s"].as_f64().unwrap());
    assert!(
        text.contains(&secs),
        "the text window says {secs} s:\n{text}"
    );
}
