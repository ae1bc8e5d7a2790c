//! `fixscope check` on this machine: every probe answered, the real programs loaded, and
//! what would run — in text and in JSON (whose field names are a contract,
//! docs/kernels.md). Needs root (the probes and loads call bpf()).

use std::process::Command;

use fixscope_testkit::{kernel_at_least, require_root};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_fixscope");

#[test]
fn check_reports_probes_loads_and_what_would_run() {
    require_root("check_reports_probes_loads_and_what_would_run");
    let out = Command::new(BIN)
        .args(["check", "--json"])
        .output()
        .expect("run fixscope check");
    assert_eq!(
        out.status.code(),
        Some(0),
        "live capture runs here: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert!(v["privilege_problem"].is_null(), "{v}");
    let features = v["capture_features"].as_array().expect("capture_features");
    for id in [
        "prog_sched_cls",
        "map_ringbuf",
        "map_array_of_maps",
        "map_percpu_array",
        "helper_ringbuf_reserve",
        "tcx",
        "memcg_accounting",
    ] {
        let f = features
            .iter()
            .find(|f| f["id"] == id)
            .unwrap_or_else(|| panic!("no probe {id}: {v}"));
        assert!(f["since"].as_str().is_some_and(|s| s.contains('.')), "{f}");
        assert!(f["present"]["state"].is_string(), "{f}");
    }
    let tcx = features.iter().find(|f| f["id"] == "tcx").expect("tcx");
    // The development host's kernel is vanilla: TCX iff upstream >= 6.6 (the probe's truth).
    let want = if kernel_at_least(6, 6) { "yes" } else { "no" };
    assert_eq!(tcx["present"]["state"], want, "{tcx}");
    assert_eq!(
        v["attach_mode"],
        if want == "yes" { "tcx" } else { "tc" },
        "{v}"
    );
    let loads = v["loads"].as_array().expect("loads");
    let tc = &loads[0];
    assert_eq!(tc["loaded"], true, "{tc}");
    let names: Vec<&str> = tc["programs"]
        .as_array()
        .expect("programs")
        .iter()
        .map(|p| p["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, fixscope_live::PROGRAM_NAMES);
    assert!(
        v["breakdown_hooks"].is_string() || v["breakdown_error"].is_string(),
        "{v}"
    );
    assert!(v["breakdown_features"]
        .as_array()
        .is_some_and(|a| a.len() >= 5));

    let text = Command::new(BIN).arg("check").output().expect("text");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("BPF map type ringbuf"), "{text}");
    assert!(text.contains("Linux >= 5.8"), "{text}");
    assert!(text.contains("would run: attach mode"), "{text}");
    assert!(text.contains("loading the real programs"), "{text}");
}
