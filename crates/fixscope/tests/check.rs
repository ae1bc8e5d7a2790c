//! `fixscope check` on this machine: every probe answered, the real programs loaded, and
//! what would run — in text and in JSON (whose field names are a contract,
//! docs/kernels.md). Needs root (the probes and loads call bpf()).

use std::process::Command;

use fixscope_testkit::{kernel_at_least, require_root, require_tool};
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

/// As nobody without capabilities (issue #36): a probe this process may not run says
/// `unknown (needs root)`, never `NO` for a feature the kernel has (libbpf's probes answer
/// no, or for helpers yes, when bpf() refuses them), and no attach mode is claimed
/// impossible for the kernel.
#[test]
fn check_without_privileges_says_needs_root_not_no() {
    require_root("check_without_privileges_says_needs_root_not_no");
    require_tool("check_without_privileges_says_needs_root_not_no", "setpriv");
    let as_root = Command::new(BIN)
        .args(["check", "--json"])
        .output()
        .expect("run fixscope check");
    let as_root: Value = serde_json::from_slice(&as_root.stdout).expect("one JSON object");
    let nobody = || {
        let mut cmd = Command::new("setpriv");
        cmd.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            BIN,
            "check",
        ]);
        cmd
    };
    let out = nobody()
        .arg("--json")
        .output()
        .expect("run check as nobody");
    assert_eq!(
        out.status.code(),
        Some(1),
        "nothing can be loaded as nobody"
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert!(v["privilege_problem"].is_string(), "{v}");
    let mut needs_root = Vec::new();
    for list in ["capture_features", "breakdown_features"] {
        for f in v[list].as_array().expect(list) {
            let id = f["id"].as_str().expect("id");
            let root = as_root[list]
                .as_array()
                .and_then(|a| a.iter().find(|r| r["id"] == id))
                .unwrap_or_else(|| panic!("{id} not probed as root"));
            let state = &f["present"]["state"];
            if root["present"]["state"] == "yes" {
                assert_ne!(state, "no", "{id} has it, says no as nobody: {f}");
            }
            if state == "unknown" && f["present"]["why"] == "needs root" {
                needs_root.push(id.to_string());
            } else {
                // What nobody may probe (BTF) it answers as root does.
                assert_eq!(f["present"], root["present"], "{id}");
            }
        }
    }
    // sched_cls needs CAP_BPF whatever kernel.unprivileged_bpf_disabled says.
    for id in [
        "prog_sched_cls",
        "helper_ringbuf_reserve",
        "tcx",
        "prog_tracing",
    ] {
        assert!(needs_root.iter().any(|n| n == id), "{id}: {v}");
    }

    let text = nobody().output().expect("run check as nobody");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("  unknown (needs root) BPF program type sched_cls"),
        "{text}"
    );
    assert!(!text.contains("\n  NO "), "{text}");
    assert!(!text.contains("\n  missing: "), "{text}");
    assert!(!text.contains("cannot run on this kernel"), "{text}");
    assert!(
        text.contains(
            "would run: attach mode unknown: the programs cannot be loaded without privileges"
        ),
        "{text}"
    );
}
