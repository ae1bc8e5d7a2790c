//! #48: the systemd units packages install (packaging/systemd) are valid and hardened:
//! `systemd-analyze verify` is clean (every command and `man:` page they name exists: the
//! binary under test, its generated pages) and `systemd-analyze security --offline`
//! rates each at most 3.0 ("OK"). The hardening must leave live capture working: that is
//! what a VM with real systemd checks (`make test-service`, not here).

use std::path::{Path, PathBuf};
use std::process::Command;

use fixscope_testkit::require_tool;

const UNITS: [&str; 2] = ["fixscope.service", "fixscope@.service"];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The units with /usr/bin/fixscope → the binary under test, in a fresh directory, and
/// the binary's manual pages beside them (DIR/man/man1).
fn units_for_this_binary() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for unit in UNITS {
        let text = std::fs::read_to_string(repo().join("packaging/systemd").join(unit)).unwrap();
        assert!(text.contains("/usr/bin/fixscope run --config"), "{unit}");
        let text = text.replace("/usr/bin/fixscope", env!("CARGO_BIN_EXE_fixscope"));
        std::fs::write(dir.path().join(unit), text).unwrap();
    }
    let man = dir.path().join("man/man1");
    let out = Command::new(env!("CARGO_BIN_EXE_fixscope"))
        .arg("manpages")
        .arg(&man)
        .output()
        .unwrap();
    assert!(out.status.success());
    dir
}

#[test]
fn systemd_analyze_verify_is_clean() {
    require_tool("systemd_analyze_verify_is_clean", "systemd-analyze");
    let dir = units_for_this_binary();
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .args(UNITS.map(|u| dir.path().join(u)))
        .env("MANPATH", dir.path().join("man"))
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && said.trim().is_empty(),
        "systemd-analyze verify:\n{said}"
    );
}

#[test]
fn systemd_analyze_security_rates_the_units_ok() {
    require_tool(
        "systemd_analyze_security_rates_the_units_ok",
        "systemd-analyze",
    );
    let dir = units_for_this_binary();
    for unit in UNITS {
        let out = Command::new("systemd-analyze")
            .args(["security", "--offline=true", "--threshold=30", "--no-pager"])
            .arg(dir.path().join(unit))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{unit} above the threshold:\n{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let level = text
            .lines()
            .find_map(|l| l.split("Overall exposure level for ").nth(1))
            .and_then(|rest| rest.split(": ").nth(1))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("no exposure level in:\n{text}"));
        assert!(level <= 3.0, "{unit}: exposure {level}:\n{text}");
        // What the capture needs, and only that.
        let unit_text = std::fs::read_to_string(dir.path().join(unit)).unwrap();
        for must in [
            "DynamicUser=yes",
            "NoNewPrivileges=yes",
            "ProtectSystem=strict",
            "CapabilityBoundingSet=CAP_BPF CAP_PERFMON CAP_NET_ADMIN\n",
            "AmbientCapabilities=CAP_BPF CAP_PERFMON CAP_NET_ADMIN\n",
            "LimitNICE=20",
            "LimitMEMLOCK=infinity",
            "Restart=on-failure",
            "ExecStartPre=",
        ] {
            assert!(unit_text.contains(must), "{unit} lacks {must}");
        }
    }
}
