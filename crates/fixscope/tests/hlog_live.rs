//! `fixscope live --hlog` against the simulator on lo: `fixscope report` reads the log back
//! and prints the live run's summary exactly; HdrHistogram's Java reader and PyPI's
//! hdrhistogram find the same counts and percentiles.
//!
//! Needs root (BPF) and the readers scripts/install-deps.sh installs.

mod support;
mod support_hlog;
#[allow(unused_imports)]
mod support_live;

use fixscope_testkit::{require_root, serial};
use serde_json::Value;
use support_hlog::*;
use support_live::*;

#[test]
fn report_reads_back_the_live_summary_exactly() {
    let test = "report_reads_back_the_live_summary_exactly";
    require_root(test);
    // The readers first: a missing one fails before the run.
    java_jar(test);
    python(test);
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("live.hlog");
    let log_s = log.to_str().unwrap().to_string();
    let r = run_scenario(&RunSpec {
        label: "hlog",
        exchange_args: &[
            "--ack-delay",
            "uniform:50us-300us",
            "--fill-delay",
            "fixed:100us",
        ],
        client_args: &["--sessions", "2", "--rate", "2000", "--count", "2000"],
        live_args: &["--hlog", &log_s, "-r", "0.25"],
        ..RunSpec::default()
    });
    let first = stage_of(&r.summary["stages"], "first_response");
    assert_eq!(first["count"], 2000, "{}", r.summary);
    let slowest = r.summary["slowest"]["first_response"].as_array().unwrap();
    assert_eq!(slowest.len(), 10, "the log must carry them: {}", r.summary);

    let out = support::fixscope(&["report", "--json", &log_s]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report, r.summary,
        "fixscope report of the live log vs the live summary (the session layer too, #21)"
    );

    for (who, reads) in [
        (
            "java",
            java_reads(test, &log, &["first_response", "fill", "-"]),
        ),
        (
            "python",
            python_reads(test, &log, &["first_response", "fill", "-"]),
        ),
    ] {
        for read in &reads {
            let stage = if read.tag == "-" {
                "first_response"
            } else {
                &read.tag
            };
            assert_reader_agrees(who, read, stage_of(&r.summary["stages"], stage));
        }
    }
}
