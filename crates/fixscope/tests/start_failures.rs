//! #48: a service that cannot start says why in one line on stderr (the journal's one
//! entry), never a libbpf dump: a wrong interface, a missing capability with and without
//! `--breakdown`, `--tap` without CAP_NET_RAW. Run as nobody through setpriv with some
//! capabilities only. Needs root (to hand capabilities out) and setpriv.

use std::process::Command;

use fixscope_testkit::{require_root, require_tool};

const BIN: &str = env!("CARGO_BIN_EXE_fixscope");

/// Runs fixscope (as nobody with only `caps`, when given): it must fail with exit 1 and
/// exactly one stderr line, which is returned.
fn one_line_failure(caps: Option<&str>, args: &[&str]) -> String {
    let mut cmd = match caps {
        Some(caps) => {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
            c.args([
                format!("--inh-caps=-all,{caps}"),
                format!("--ambient-caps={caps}"),
            ]);
            c.arg(BIN);
            c
        }
        None => Command::new(BIN),
    };
    let out = cmd.args(args).output().expect("run fixscope");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{args:?} with {caps:?}: {err}");
    assert!(out.stdout.is_empty(), "no report: {args:?}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line, {args:?} with {caps:?}:\n{err}");
    assert!(lines[0].starts_with("fixscope: error: "), "{err}");
    for noise in ["libbpf", "verifier", "panicked"] {
        assert!(!err.contains(noise), "{noise} in {err}");
    }
    lines[0].to_string()
}

#[test]
fn a_wrong_interface_is_one_line() {
    // As root: the interface is the only thing wrong.
    require_root("a_wrong_interface_is_one_line");
    for extra in [&[][..], &["--tap"], &["--breakdown"]] {
        let mut args = vec!["live", "-i", "fxs-no-such-if", "-p", "9", "--duration", "1"];
        args.extend_from_slice(extra);
        let line = one_line_failure(None, &args);
        assert!(line.contains("fxs-no-such-if"), "{line}");
        assert!(line.contains("ip link"), "says where to look: {line}");
    }
}

#[test]
fn a_missing_capability_is_one_line_naming_it() {
    let test = "a_missing_capability_is_one_line_naming_it";
    require_root(test);
    require_tool(test, "setpriv");
    for (caps, extra, name) in [
        ("+bpf,+net_admin", &[][..], "CAP_PERFMON"),
        ("+bpf,+net_admin", &["--breakdown"][..], "CAP_PERFMON"),
        ("+perfmon,+net_admin", &["--breakdown"][..], "CAP_BPF"),
        ("+bpf,+perfmon", &[][..], "CAP_NET_ADMIN"),
    ] {
        let mut args = vec!["live", "-i", "lo", "-p", "9", "--duration", "1"];
        args.extend_from_slice(extra);
        let line = one_line_failure(Some(caps), &args);
        assert!(
            line.starts_with("fixscope: error: not privileged") && line.contains(name),
            "with {caps} {extra:?}: {line}"
        );
    }
    // --tap reads a packet socket: CAP_NET_RAW, nothing of BPF.
    let line = one_line_failure(
        Some("+bpf,+perfmon,+net_admin"),
        &["live", "--tap", "-i", "lo", "-p", "9", "--duration", "1"],
    );
    assert!(line.contains("CAP_NET_RAW"), "{line}");
}
