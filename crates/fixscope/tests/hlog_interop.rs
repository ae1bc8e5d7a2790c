//! `--hlog`, `--hgrm` and `fixscope report` on captures: HdrHistogram's own Java reader and
//! `HistogramLogProcessor` and PyPI's `hdrhistogram` read fixscope's logs and find fixscope's
//! totals and percentiles; `fixscope report` gives back the run's summary exactly, and two
//! runs' logs merge into the union.
//!
//! Needs java and the readers scripts/install-deps.sh puts in target/interop.

mod support;
mod support_hlog;

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::*;
use support_hlog::*;

const STAGES: [&str; 4] = ["first_response", "ack", "fill", "ack_to_fill"];

/// A 2 s capture of 3 sessions × 400 orders, latencies 0.5–8 ms; IPv6 gives other flows.
fn capture(dir: &Path, name: &str, ipv6: bool, shift_ns: u64) -> PathBuf {
    let (mut packets, _) = build_scenario(&ScenarioSpec {
        orders_per_session: 400,
        granularity_ns: 100,
        ipv6,
        ..ScenarioSpec::default()
    });
    for p in &mut packets {
        p.ts_ns += shift_ns;
    }
    let path = dir.join(name);
    write_pcap(&path, &packets);
    path
}

/// `fixscope pcap … --json --hlog LOG` with `extra`: the summary.
fn pcap_with_log(captures: &[&Path], log: &Path, extra: &[&str]) -> Value {
    let log_s = log.display().to_string();
    let mut args = vec!["--hlog", &log_s, "-r", "0.1"];
    args.extend(extra);
    analyse(captures, &args).1
}

/// `fixscope report ARGS --json`: the summary.
fn report_json(args: &[&str]) -> Value {
    let mut all = vec!["report", "--json"];
    all.extend(args);
    let out = fixscope(&all);
    assert!(
        out.status.success(),
        "fixscope report failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "one summary line: {text}");
    serde_json::from_str(lines[0]).unwrap()
}

/// A summary's slowest orders at `stage`, without the fields `drop`.
fn slow_orders(summary: &Value, stage: &str, drop: &[&str]) -> Vec<Value> {
    let list = summary["slowest"][stage]
        .as_array()
        .unwrap_or_else(|| panic!("no slowest.{stage} in {summary}"));
    list.iter()
        .map(|o| {
            let mut o = o.clone();
            for field in drop {
                o.as_object_mut().unwrap().remove(*field);
            }
            o
        })
        .collect()
}

fn check_readers(test: &str, log: &Path, summary: &Value) {
    let mut tags: Vec<String> = STAGES.iter().map(|s| s.to_string()).collect();
    tags.extend(STAGES.iter().map(|s| format!("{s}.D")));
    tags.push("-".into());
    let tag_refs: Vec<&str> = tags.iter().map(String::as_str).collect();
    let java = java_reads(test, log, &tag_refs);
    let python = python_reads(test, log, &tag_refs);
    assert_eq!(java.len(), tags.len());
    for (who, reads) in [("java", &java), ("python", &python)] {
        for read in reads {
            let (stage, stages) = match read.tag.as_str() {
                "-" => ("first_response", &summary["stages"]),
                t => match t.split_once('.') {
                    Some((s, "D")) => (s, &summary["by_msg_type"][0]["stages"]),
                    _ => (t, &summary["stages"]),
                },
            };
            assert!(read.lines > 5, "{who} {}: {} lines", read.tag, read.lines);
            assert_reader_agrees(who, read, stage_of(stages, stage));
        }
    }
    assert_eq!(summary["by_msg_type"][0]["msg_type"], "D");
    // HistogramLogProcessor itself: the untagged lines (its default) and a tag.
    let dir = tempfile::tempdir().unwrap();
    for tag in [None, Some("fill")] {
        let (total, max) = java_processor_total(test, log, tag, dir.path());
        let stage = stage_of(&summary["stages"], tag.unwrap_or("first_response"));
        assert_eq!(total, stage["count"].as_u64().unwrap(), "processor {tag:?}");
        assert!(same_bucket(max as u64, stage["max_ns"].as_u64().unwrap()));
    }
}

#[test]
fn java_and_python_read_the_pcap_log_and_find_fixscope_s_figures() {
    let test = "java_and_python_read_the_pcap_log_and_find_fixscope_s_figures";
    let dir = tempfile::tempdir().unwrap();
    let cap = capture(dir.path(), "a.pcap", false, 0);
    let log = dir.path().join("a.hlog");
    let summary = pcap_with_log(&[&cap], &log, &["--by", "49"]);
    assert_eq!(stage_of(&summary["stages"], "fill")["count"], 1200);
    check_readers(test, &log, &summary);
    check_by_readers(test, &log, &summary);
}

/// `--by` in the log (#21): each value's whole run per stage, tagged `STAGE.TAG=VALUE`, is
/// what the readers find for it — the summary's `by` row (count exact; min, max and
/// percentiles in the same bucket of the rows' 2-significant-digit histograms).
fn check_by_readers(test: &str, log: &Path, summary: &Value) {
    let rows = summary["by"].as_array().expect("a by list");
    assert_eq!(rows.len(), 3, "three senders: {rows:?}");
    let mut tags = Vec::new();
    for row in rows {
        for stage in STAGES {
            tags.push((
                format!(
                    "{stage}.{}={}",
                    row["tag"].as_str().unwrap(),
                    row["value"].as_str().unwrap()
                ),
                stage_of(&row["stages"], stage).clone(),
            ));
        }
    }
    let names: Vec<&str> = tags.iter().map(|(t, _)| t.as_str()).collect();
    let two_digits = |a: u64, b: u64| {
        let h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 2).unwrap();
        h.lowest_equivalent(a) == h.lowest_equivalent(b)
    };
    for (who, reads) in [
        ("java", java_reads(test, log, &names)),
        ("python", python_reads(test, log, &names)),
    ] {
        assert_eq!(reads.len(), tags.len(), "{who}");
        for (read, (tag, stage)) in reads.iter().zip(&tags) {
            assert_eq!(&read.tag, tag);
            assert_eq!(read.lines, 1, "{who} {tag}: one whole-run line");
            assert_eq!(read.count, stage["count"].as_u64().unwrap(), "{who} {tag}");
            assert!(read.count > 300, "{who} {tag}: {}", read.count);
            for (theirs, field) in [(read.min, "min_ns"), (read.max, "max_ns")]
                .into_iter()
                .chain(read.percentiles.iter().copied().zip(PERCENTILE_FIELDS))
            {
                let ours = stage[field].as_u64().unwrap();
                assert!(
                    two_digits(ours, theirs),
                    "{who} {tag}: {field} {theirs} vs fixscope {ours}"
                );
            }
        }
    }
}

#[test]
fn above_range_latencies_are_never_a_better_tail_for_the_readers() {
    let test = "above_range_latencies_are_never_a_better_tail_for_the_readers";
    let dir = tempfile::tempdir().unwrap();
    let cap = capture(dir.path(), "a.pcap", false, 0);
    let log = dir.path().join("a.hlog");
    // -x 3 ms: a good part of fill and ack latencies (up to ~8 ms) is above range.
    let summary = pcap_with_log(&[&cap], &log, &["-x", "3"]);
    let fill = stage_of(&summary["stages"], "fill");
    assert!(fill["over_range"].as_u64().unwrap() > 100, "{fill}");
    assert!(fill["p99_ns"].is_null(), "{fill}");
    check_readers(test, &log, &summary);
    // fixscope reads its own log back exactly, above-range values included.
    assert_eq!(report_json(&[log.to_str().unwrap()]), summary);
}

#[test]
fn report_gives_back_the_summary_exactly_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let cap = capture(dir.path(), "a.pcap", false, 0);
    let log = dir.path().join("a.hlog");
    // With `--by` (#21): the log keeps each value's figures, and the report gives them back.
    let summary = pcap_with_log(&[&cap], &log, &["--by", "49,55"]);
    let log_s = log.to_str().unwrap();
    assert_eq!(slow_orders(&summary, "fill", &[]).len(), 10, "{summary}");
    assert_eq!(summary["by"].as_array().map(Vec::len), Some(4), "{summary}");
    // The session layer (#21) too: the log's summary line holds it.
    assert!(summary["session_stages"].is_array(), "{summary}");
    assert!(
        summary["sessions"][0]["session_layer"]["logons"].is_u64(),
        "{summary}"
    );
    assert_eq!(report_json(&[log_s]), summary);
    // The text report is the one pcap prints (after its interval lines).
    let pcap_text = fixscope(&[
        "pcap",
        cap.to_str().unwrap(),
        "-p",
        "9878",
        "-r",
        "0",
        "--by",
        "49,55",
    ]);
    let report_text = fixscope(&["report", log_s]);
    assert!(report_text.status.success());
    let summary_part = |out: &[u8]| {
        let s = String::from_utf8_lossy(out).into_owned();
        let at = s.find("=== fixscope summary").expect("a summary");
        s[at..].to_string()
    };
    assert_eq!(
        summary_part(&report_text.stdout),
        summary_part(&pcap_text.stdout)
    );
}

#[test]
fn report_merges_two_runs_into_the_union() {
    let dir = tempfile::tempdir().unwrap();
    let a = capture(dir.path(), "a.pcap", false, 0);
    // Another host a minute later (other flows).
    let b = capture(dir.path(), "b.pcap", true, 60_000_000_000);
    let (la, lb) = (dir.path().join("a.hlog"), dir.path().join("b.hlog"));
    // With `--by` and the session layer in both logs: they are each run's whole, so a merge
    // leaves them out (and says so) rather than showing one run's as the union's.
    pcap_with_log(&[&a], &la, &["--by", "49"]);
    pcap_with_log(&[&b], &lb, &["--by", "49"]);
    let both = analyse(&[&a, &b], &[]).1;
    let merged = report_json(&[la.to_str().unwrap(), lb.to_str().unwrap()]);
    for field in ["by", "session_stages", "reject_reasons", "rate"] {
        assert!(merged.get(field).is_none(), "{field} in a merge: {merged}");
    }
    let out = fixscope(&["report", la.to_str().unwrap(), lb.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--by: the logs hold each value's whole run"),
        "{stderr}"
    );
    for stage in STAGES {
        let (m, u) = (
            stage_of(&merged["stages"], stage),
            stage_of(&both["stages"], stage),
        );
        assert_eq!(m, u, "{stage}: merged logs vs one pcap run over both");
    }
    for name in ["requests", "matched", "messages", "timed_out"] {
        assert_eq!(merged["counters"][name], both["counters"][name], "{name}");
    }
    assert_eq!(merged["start"], both["start"]);
    assert_eq!(merged["end"], both["end"]);
    assert_eq!(
        merged["sessions"],
        serde_json::json!([]),
        "no sessions in a merge"
    );
    // The slowest orders of the union (session ids are per run: compare what names them).
    for stage in STAGES {
        let (m, u) = (
            slow_orders(&merged, stage, &["session"]),
            slow_orders(&both, stage, &["session"]),
        );
        assert_eq!(m.len(), 10, "{stage}: --slowest's default");
        assert_eq!(
            m, u,
            "{stage}: slowest of the merged logs vs one run over both"
        );
    }
    // --slowest on report: fewer, or none.
    let three = report_json(&[la.to_str().unwrap(), lb.to_str().unwrap(), "--slowest", "3"]);
    let none = report_json(&[la.to_str().unwrap(), "--slowest", "0"]);
    for stage in STAGES {
        assert_eq!(
            slow_orders(&three, stage, &[]),
            slow_orders(&merged, stage, &[])[..3]
        );
        assert_eq!(slow_orders(&none, stage, &[]), Vec::<Value>::new());
    }

    // --from/--to: the second log only (UTC), then the first's first second (seconds).
    let only_b = report_json(&[
        la.to_str().unwrap(),
        lb.to_str().unwrap(),
        "--from",
        "2023-11-14T22:14:00Z",
    ]);
    let b_alone = report_json(&[lb.to_str().unwrap()]);
    assert_eq!(only_b["stages"], b_alone["stages"]);
    let first_second = report_json(&[la.to_str().unwrap(), "--from", "0", "--to", "0.95"]);
    let count = stage_of(&first_second["stages"], "first_response")["count"]
        .as_u64()
        .unwrap();
    assert!(count > 0 && count < 1200, "{count}");
}

#[test]
fn hgrm_files_are_the_cumulative_distribution_per_stage() {
    let dir = tempfile::tempdir().unwrap();
    let cap = capture(dir.path(), "a.pcap", false, 0);
    let hgrm = dir.path().join("run.hgrm");
    let summary = analyse(&[&cap], &["--hgrm", hgrm.to_str().unwrap()]).1;
    for (stage, file) in [("first_response", "run.hgrm"), ("fill", "run.fill.hgrm")] {
        let text = std::fs::read_to_string(dir.path().join(file)).unwrap();
        let s = stage_of(&summary["stages"], stage);
        assert!(text.starts_with(&format!(
            "#[fixscope {stage} latency: values in microseconds"
        )));
        let total = text.lines().find(|l| l.starts_with("#[Max")).unwrap();
        assert!(
            total.ends_with(&format!(
                "Total count    = {:>12}]",
                s["count"].as_u64().unwrap()
            )),
            "{total}"
        );
        // The 100% line is the maximum (µs, 3 decimals), as HdrHistogram prints it.
        let last = text.lines().rfind(|l| !l.starts_with('#')).unwrap();
        let max_us: f64 = last.split_whitespace().next().unwrap().parse().unwrap();
        assert!(same_bucket(
            (max_us * 1000.0).round() as u64,
            s["max_ns"].as_u64().unwrap()
        ));
    }
}

#[test]
fn bad_report_input_fails_with_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.hlog");
    let cap = capture(dir.path(), "a.pcap", false, 0);
    std::fs::write(
        &bad,
        "#[StartTime: 1.0 (seconds since epoch)]\nnot,a,histogram,line\n",
    )
    .unwrap();
    let good = dir.path().join("good.hlog");
    pcap_with_log(&[&cap], &good, &[]);
    let good = good.to_str().unwrap();
    for (args, expect) in [
        // Issue #36: an empty window is refused, never a summary dated 1970.
        (
            vec!["report", good, "--from", "5", "--to", "2"],
            "--from 5 --to 2 is an empty window",
        ),
        (
            vec!["report", good, "--from", "100", "--to", "200"],
            "no interval of the logs starts within --from 100 --to 200; the logs' intervals \
             start from 2023-11-14T22:13:20.000Z",
        ),
        (
            vec!["report", bad.to_str().unwrap()],
            "bad.hlog:2: bad StartTimestamp",
        ),
        (
            vec!["report", "/nonexistent.hlog"],
            "cannot read /nonexistent.hlog",
        ),
        (
            vec!["report", bad.to_str().unwrap(), "--from", "yesterday"],
            "--from \"yesterday\"",
        ),
        (
            vec![
                "pcap",
                cap.to_str().unwrap(),
                "-p",
                "1",
                "--hlog",
                "x.hlog",
                "-r",
                "0",
            ],
            "needs -r/--interval above 0",
        ),
    ] {
        let out = fixscope(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(err.contains(expect), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout");
    }
}
