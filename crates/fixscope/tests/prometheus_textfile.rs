//! `fixscope pcap --prometheus-textfile FILE`: the final metrics in the text format
//! node_exporter's textfile collector reads, clean for `promtool check metrics`, with
//! counts equal to the JSON summary's — also when latencies lie above `-x`, which must be
//! counted above range, never in a bucket below it.

mod support;

use std::io::Write;
use std::process::{Command, Stdio};

use fixscope_testkit::require_tool;
use support::*;

/// The sample value of the line starting with `prefix` (name and labels).
fn sample(text: &str, prefix: &str) -> f64 {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no sample {prefix} in:\n{text}"))
}

#[test]
fn textfile_has_the_summary_counts_and_values_above_range_above_it() {
    let name = "textfile_has_the_summary_counts_and_values_above_range_above_it";
    require_tool(name, "promtool");
    let dir = tempfile::tempdir().expect("tempdir");
    let capture = dir.path().join("orders.pcap");
    let (packets, _) = build_scenario(&ScenarioSpec::default());
    write_pcap(&capture, &packets);
    // The range (-x) at the median: half the latencies lie above it.
    let (_, plain) = analyse(&[&capture], &[]);
    let p50_ns = stage(&plain, "first_response")["p50_ns"]
        .as_u64()
        .expect("p50");
    let x_ms = format!("{}", p50_ns as f64 / 1e6);
    let out = dir.path().join("fixscope.prom");
    let out_s = out.to_str().expect("utf-8");
    let (_, summary) = analyse(
        &[&capture],
        &[
            "-x",
            &x_ms,
            "--prometheus-textfile",
            out_s,
            "--prometheus-buckets",
            "0.000001,1000",
        ],
    );
    let text = std::fs::read_to_string(&out).expect("the textfile");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .expect("dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&out).expect("meta").permissions(),
    );
    assert_eq!(mode & 0o777, 0o644, "readable by node_exporter's user");

    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool");
    promtool
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write");
    let lint = promtool.wait_with_output().expect("promtool");
    let said =
        String::from_utf8_lossy(&lint.stdout).to_string() + &String::from_utf8_lossy(&lint.stderr);
    assert!(
        lint.status.success() && said.trim().is_empty(),
        "promtool: {said}"
    );

    let first = stage(&summary, "first_response");
    let count = first["count"].as_u64().expect("count") as f64;
    let over = first["over_range"].as_u64().expect("over_range") as f64;
    assert!(over > 0.0 && over < count, "some above range: {first}");
    let series = r#"{stage="first_response",msg_type="D""#;
    assert_eq!(
        sample(&text, &format!("fixscope_latency_seconds_count{series}")),
        count
    );
    assert_eq!(
        sample(
            &text,
            &format!(r#"fixscope_latency_seconds_bucket{series},le="+Inf"}}"#)
        ),
        count
    );
    // A bound far above every latency: everything (values above -x included) is at or below
    // it; a bound below -x holds only values in range.
    assert_eq!(
        sample(
            &text,
            &format!(r#"fixscope_latency_seconds_bucket{series},le="1000"}}"#)
        ),
        count
    );
    assert!(
        sample(
            &text,
            &format!(r#"fixscope_latency_seconds_bucket{series},le="0.000001"}}"#)
        ) <= count - over
    );
    assert_eq!(
        sample(&text, "fixscope_requests_total"),
        counter(&summary, "requests") as f64
    );
    assert_eq!(
        sample(&text, "fixscope_over_range_total"),
        counter(&summary, "over_range") as f64
    );
    let range_s = sample(&text, "fixscope_latency_range_seconds");
    assert!((range_s - first["range_ns"].as_u64().expect("range") as f64 * 1e-9).abs() < 1e-12);
}

/// `-r 0` asks for no interval lines; `--prometheus` still refreshes the metrics every
/// second underneath, and stdout keeps to the summary.
#[test]
fn interval_zero_with_prometheus_prints_no_interval_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    let capture = dir.path().join("orders.pcap");
    let (packets, _) = build_scenario(&ScenarioSpec::default());
    write_pcap(&capture, &packets);
    let (intervals, summary) = analyse(&[&capture], &["-r", "0", "--prometheus", "127.0.0.1:0"]);
    assert!(
        intervals.is_empty(),
        "{} interval lines with -r 0",
        intervals.len()
    );
    assert_eq!(counter(&summary, "requests"), 600);
    let (intervals, _) = analyse(&[&capture], &["-r", "0"]);
    assert!(intervals.is_empty());
}
