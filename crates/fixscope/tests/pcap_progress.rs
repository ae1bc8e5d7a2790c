//! The progress bar of `fixscope pcap` (issue #22): drawn on stderr when stderr is a
//! terminal (here a pty from util-linux `script`) and stdout goes to a file; never a byte
//! of it in a pipe (the sharded tests check stderr stays empty).

use std::process::Command;

#[test]
fn a_terminal_on_stderr_gets_a_bar_with_bytes_and_files() {
    fixscope_testkit::require_tool(
        "a_terminal_on_stderr_gets_a_bar_with_bytes_and_files",
        "script",
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.json");
    let typescript = dir.path().join("typescript");
    let cap = fixscope_testkit::test_data("captures/sim/sim_orders.pcap");
    // One thread, two stages (`--threads 2`, the default on 2-3 cores), sharded, default.
    for threads in ["--threads 1", "--threads 2", "--threads 3", ""] {
        let cmd = format!(
            "{} pcap {} -p 19478 --json {threads} > {}",
            env!("CARGO_BIN_EXE_fixscope"),
            cap.display(),
            out.display()
        );
        let status = Command::new("script")
            .args(["-qec", &cmd])
            .arg(&typescript)
            .stdout(std::process::Stdio::null())
            .status()
            .expect("script");
        assert!(status.success());
        let tty = String::from_utf8_lossy(&std::fs::read(&typescript).unwrap()).into_owned();
        // 535,955 bytes: the bar's total, and the files counter.
        assert!(tty.contains("KiB") && tty.contains("files "), "{tty:?}");
        let json = std::fs::read_to_string(&out).unwrap();
        assert!(json
            .lines()
            .last()
            .unwrap()
            .contains("\"type\":\"summary\""));
        assert!(!json.contains("files "), "the bar is not in the reports");
    }
}
