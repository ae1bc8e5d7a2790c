//! `fixscope demo` end to end (root, lo): what it says about the difference between the
//! wire's figures and the exchange's own ground truth comes from its own figures — the
//! truth table it prints (the simulator's clock) and its in-host breakdown — never from a
//! fixed sentence (issue 36 item 14).

mod support;

use fixscope_testkit::{require_root, serial};

/// A `human_ns` figure ("514.0us", "1.20ms", "830ns", ">10.0s") in ns; above range is
/// the largest.
fn ns_of(text: &str) -> f64 {
    if text.starts_with('>') {
        return f64::INFINITY;
    }
    for (unit, scale) in [
        ("ns", 1.0),
        ("us", 1e3),
        ("µs", 1e3),
        ("ms", 1e6),
        ("s", 1e9),
    ] {
        if let Some(v) = text.strip_suffix(unit) {
            if let Ok(v) = v.parse::<f64>() {
                return v * scale;
            }
        }
    }
    panic!("not a figure: {text:?}")
}

/// The fields of the summary table's row of `stage` (it starts the line; the slowest
/// orders' breakdown lines are indented): name count min mean p50 p90 p99 ...
fn summary_row<'a>(out: &'a str, stage: &str) -> Vec<&'a str> {
    out.lines()
        .filter(|l| l.starts_with(&format!("{stage} ")))
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .rfind(|f| f.len() >= 7 && f[1].parse::<u64>().is_ok())
        .unwrap_or_else(|| panic!("no {stage} row in:\n{out}"))
}

#[test]
fn the_demo_explains_its_gap_with_its_own_breakdown_figures() {
    let test = "the_demo_explains_its_gap_with_its_own_breakdown_figures";
    require_root(test);
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("demo.html");
    let out = support::fixscope(&[
        "demo",
        "--duration",
        "2",
        "--rate",
        "2000",
        "--sessions",
        "2",
        "--html",
        html.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{stdout}");

    // One screen and a bit (#35): the answer first — fixscope beside the truth —, then the
    // brief summary, then the HTML report's path.
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines.len() < 60, "{} lines:\n{stdout}", lines.len());
    let position = |what: &str, f: &dyn Fn(&str) -> bool| {
        lines
            .iter()
            .position(|l| f(l))
            .unwrap_or_else(|| panic!("no {what}:\n{stdout}"))
    };
    let truth_at = position("truth table", &|l| l.contains("exchange (truth)"));
    let summary_at = position("summary", &|l| l.starts_with("=== fixscope summary"));
    let html_at = position("HTML path", &|l| l.starts_with("HTML report"));
    assert!(truth_at < summary_at && summary_at < html_at, "{stdout}");
    assert!(
        !stdout.contains("histogram ("),
        "the brief summary: {stdout}"
    );
    let client = lines[truth_at + 2].split_whitespace().collect::<Vec<_>>();
    assert_eq!(
        client[..3],
        ["client", "(its", "socket)"],
        "the client's own round trips under fixscope's: {stdout}"
    );
    // The truth table: `ack exchange (truth) N p50 p99 max`, then `fixscope (wire) N p50 p99 max`.
    let at = lines
        .iter()
        .position(|l| l.starts_with("ack ") && l.contains("exchange (truth)"))
        .unwrap_or_else(|| panic!("no truth table:\n{stdout}"));
    let truth: Vec<&str> = lines[at].split_whitespace().collect();
    let wire: Vec<&str> = lines[at + 1].split_whitespace().collect();
    let (truth_p99, wire_p99) = (truth[truth.len() - 2], wire[wire.len() - 2]);

    // The breakdown rows of the summary: name count min mean p50 p90 p99 ...
    let mut stages: Vec<(&str, &str)> = ["wire_to_read", "write_to_wire"]
        .into_iter()
        .map(|s| (s, summary_row(&stdout, s)[6]))
        .collect();
    assert!(
        stages.iter().all(|(_, p99)| *p99 != "-"),
        "the demo's breakdown measured both stages: {stages:?}\n{stdout}"
    );
    stages.sort_by(|a, b| ns_of(b.1).total_cmp(&ns_of(a.1)));

    let says = lines
        .iter()
        .find(|l| l.starts_with("fixscope sees the request"))
        .unwrap_or_else(|| panic!("no explanation:\n{stdout}"));
    assert!(
        says.contains(&format!("ack p99 {wire_p99} vs {truth_p99}")),
        "the gap is the table's ({wire_p99} vs {truth_p99}): {says}"
    );
    for (stage, p99) in &stages {
        assert!(
            says.contains(&format!("{stage} p99 {p99}")),
            "{stage}'s p99 as the breakdown shows it ({p99}): {says}"
        );
    }
    assert!(
        says.contains(&format!("lies mostly in {}", stages[0].0)),
        "names the stage with the largest p99 ({stages:?}): {says}"
    );
}
