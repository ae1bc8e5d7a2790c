//! #48: what a service manager and logrotate do to a running `fixscope live`.
//! SIGHUP after logrotate renamed `--hlog` and `--json-file`: the run goes on in new files
//! at the same paths, every interval in exactly one of them; SIGTERM then ends it with
//! everything detached and both logs complete. Needs root (BPF on lo).

mod support;
#[allow(unused_imports)]
mod support_live;

use std::path::Path;
use std::time::Duration;

use fixscope_testkit::{require_root, serial};
use serde_json::Value;
use support_live::*;

/// The `#fixscope-interval` lines' (start_ns, end_ns) of an interval log.
fn hlog_intervals(path: &Path) -> Vec<(u64, u64)> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("#fixscope-interval "))
        .map(|j| {
            let v: Value = serde_json::from_str(j).unwrap();
            (
                v["start_ns"].as_u64().unwrap(),
                v["end_ns"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Each interval starts where the one before ended: none lost, none twice.
fn assert_contiguous(what: &str, spans: &[(u64, u64)]) {
    for w in spans.windows(2) {
        assert_eq!(w[1].0, w[0].1, "{what}: a gap or an overlap between {w:?}");
    }
}

#[test]
fn sighup_after_a_rename_continues_the_logs_in_new_files_without_losing_an_interval() {
    let test = "sighup_after_a_rename_continues_the_logs_in_new_files_without_losing_an_interval";
    require_root(test);
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let (hlog, json) = (dir.path().join("live.hlog"), dir.path().join("live.jsonl"));
    let (hlog_old, json_old) = (
        dir.path().join("live.hlog.1"),
        dir.path().join("live.jsonl.1"),
    );
    let mut exchange = start_exchange(None, "127.0.0.1:0", &dir.path().join("ex.csv"), &[]);
    let (hlog_s, json_s) = (hlog.to_str().unwrap(), json.to_str().unwrap());
    let mut live = start_live(
        None,
        "lo",
        exchange.addr.port(),
        &[
            "--json",
            "-r",
            "0.2",
            "--hlog",
            hlog_s,
            "--json-file",
            json_s,
        ],
    );
    let mut client = spawn_client(None, &exchange, &["--rate", "1000", "--count", "2500"]);
    std::thread::sleep(Duration::from_millis(1100));
    // As logrotate does without copytruncate: rename, then signal.
    std::fs::rename(&hlog, &hlog_old).unwrap();
    std::fs::rename(&json, &json_old).unwrap();
    live.proc.signal(libc::SIGHUP);
    live.proc
        .wait_for_stderr("SIGHUP: --hlog continues in a new", Duration::from_secs(5));
    live.proc.wait_for_stderr(
        "SIGHUP: --json-file continues in a new",
        Duration::from_secs(5),
    );
    let c = client.finish(Duration::from_secs(20));
    assert!(c.status.success(), "client: {}", c.stderr);
    let f = stop_live_proc(&mut live.proc, libc::SIGTERM);
    exchange.proc.signal(libc::SIGTERM);
    exchange.proc.finish(Duration::from_secs(10));
    // Stopped: nothing of it is left in the kernel.
    for id in &live.prog_ids {
        assert!(!bpf_prog_exists(*id), "BPF program {id} outlived the run");
    }
    let tc = fixscope_testkit::tc::tc_filter_show("lo");
    assert!(
        !tc.contains("fixscope"),
        "a tc filter outlived the run: {tc}"
    );

    let (stdout_intervals, summary) = parse_report(&f.stdout);
    assert_eq!(stage_count(&summary, "first_response"), 2500, "{summary}");

    // The interval log: two logs, the first without the summary, contiguous across them.
    let (old, new) = (hlog_intervals(&hlog_old), hlog_intervals(&hlog));
    assert!(old.len() >= 3 && new.len() >= 3, "old {old:?}\nnew {new:?}");
    let mut both = old.clone();
    both.extend(&new);
    assert_contiguous("--hlog", &both);
    let stdout_spans: Vec<(u64, u64)> = stdout_intervals
        .iter()
        .map(|i| {
            (
                i["start_ns"].as_u64().unwrap(),
                i["end_ns"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        both.len(),
        stdout_spans.len(),
        "every interval stdout had, once"
    );
    let new_text = std::fs::read_to_string(&hlog).unwrap();
    assert!(new_text.contains("#[StartTime: ") && new_text.contains("#fixscope-continued "));
    assert!(!std::fs::read_to_string(&hlog_old)
        .unwrap()
        .contains("#fixscope-summary"));
    assert!(
        new_text.contains("#fixscope-summary "),
        "the summary ends the new log"
    );
    // Read together, the two files are the run: `fixscope report` gives its counts.
    let out = support::fixscope(&["report", "--json", hlog_old.to_str().unwrap(), hlog_s]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stage_count(&report, "first_response"), 2500, "{report}");
    assert_eq!(
        report["counters"]["requests"],
        summary["counters"]["requests"]
    );

    // The JSON lines file: the same intervals, split at the same place, summary last.
    let old_lines = std::fs::read_to_string(&json_old).unwrap();
    let (new_intervals, file_summary) = parse_report(&std::fs::read_to_string(&json).unwrap());
    let old_intervals: Vec<Value> = old_lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(old_intervals.iter().all(|l| l["type"] == "interval"));
    let spans: Vec<(u64, u64)> = old_intervals
        .iter()
        .chain(&new_intervals)
        .map(|i| {
            (
                i["start_ns"].as_u64().unwrap(),
                i["end_ns"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        spans, stdout_spans,
        "--json-file's intervals are stdout's, once each"
    );
    assert_eq!(file_summary, summary);
}

fn stage_count(summary: &Value, stage: &str) -> u64 {
    summary["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stage"] == stage)
        .unwrap_or_else(|| panic!("no {stage} in {summary}"))["count"]
        .as_u64()
        .unwrap()
}
