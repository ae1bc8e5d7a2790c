//! Nothing of ours stays attached: after drop, after a normal exit, after SIGTERM and after
//! SIGKILL of a process holding a capture (TCX links die with it; tc filters are removed by
//! `detach_leftovers`). Plus the error paths of `open`.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use fixscope_core::ports::PortSet;
use fixscope_live::{
    detach_leftovers, fixscope_links_on, fixscope_tc_filters_on, ifindex_of, AttachMode,
    LiveCapture, LiveConfig, LiveError,
};

const PORT: &str = "47123";

fn lo_links() -> usize {
    fixscope_links_on(ifindex_of("lo").expect("lo"))
        .expect("link query")
        .len()
}

fn lo_filters() -> usize {
    fixscope_tc_filters_on("lo").expect("filter query").len()
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts hold_attached and waits for its "ATTACHED <kind>" line.
fn spawn_holder(mode: &str, secs: &str) -> Child {
    let mut child = Command::new(example_bin("hold_attached"))
        .args(["lo", PORT, mode, secs])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn hold_attached");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).expect("read");
    let want = if mode == "tc" {
        "ATTACHED tc "
    } else {
        "ATTACHED tcx "
    };
    if !line.starts_with(want) {
        let _ = child.kill();
        let _ = child.wait();
        panic!("hold_attached said {line:?}");
    }
    child
}

fn assert_tc_shows_nothing_of_ours() {
    for dir in ["ingress", "egress"] {
        let out = Command::new("tc")
            .args(["filter", "show", "dev", "lo", dir])
            .output();
        if let Ok(out) = out {
            let s = String::from_utf8_lossy(&out.stdout);
            assert!(!s.contains("fxs_"), "tc still shows a fixscope filter: {s}");
        }
    }
}

#[test]
fn tcx_links_vanish_on_drop() {
    let _g = serial();
    require_root("tcx_links_vanish_on_drop");
    let before = lo_links();
    let mut cfg = LiveConfig::new("lo", PortSet::single(47123));
    cfg.attach = AttachMode::Tcx;
    let cap = LiveCapture::open(&cfg).expect("open");
    let ours = fixscope_links_on(cap.ifindex()).expect("links");
    assert_eq!(ours.len(), before + 2, "{ours:?}");
    let dirs: Vec<_> = ours.iter().map(|l| l.direction).collect();
    assert!(dirs.contains(&"ingress") && dirs.contains(&"egress"));
    let ids: Vec<u32> = cap
        .program_stats()
        .expect("stats")
        .iter()
        .map(|p| p.id)
        .collect();
    assert!(ours.iter().all(|l| ids.contains(&l.prog_id)));
    cap.check_interface().expect("lo is there");
    drop(cap);
    wait_until("links gone after drop", || lo_links() == before);
}

#[test]
fn tc_filters_vanish_on_drop() {
    let _g = serial();
    require_root("tc_filters_vanish_on_drop");
    let _clean = ClsactCleanup::new("lo");
    let mut cfg = LiveConfig::new("lo", PortSet::single(47123));
    cfg.attach = AttachMode::TcFilter;
    let cap = LiveCapture::open(&cfg).expect("open");
    assert_eq!(cap.attach_kind(), "tc");
    assert_eq!(lo_filters(), 2);
    // A second tc-mode capture clashes on our handle/priority with a clear error.
    match LiveCapture::open(&cfg) {
        Err(LiveError::Attach(msg)) => assert!(msg.contains("detach_leftovers"), "{msg}"),
        Err(e) => panic!("expected Attach error, got {e}"),
        Ok(_) => panic!("second tc capture must not attach"),
    }
    assert_eq!(
        lo_filters(),
        2,
        "the failed open left the first capture alone"
    );
    drop(cap);
    assert_eq!(lo_filters(), 0);
    assert_tc_shows_nothing_of_ours();
}

#[test]
fn nothing_left_after_normal_exit_sigterm_and_sigkill() {
    let _g = serial();
    require_root("nothing_left_after_normal_exit_sigterm_and_sigkill");
    let _clean = ClsactCleanup::new("lo");
    let before = lo_links();

    // Normal exit (runs Drop), both attach kinds.
    for mode in ["tcx", "tc"] {
        let mut child = spawn_holder(mode, "1");
        let st = child.wait().expect("wait");
        assert!(st.success(), "{mode}: {st}");
        assert_eq!(lo_links(), before, "{mode}: links after normal exit");
        assert_eq!(lo_filters(), 0, "{mode}: filters after normal exit");
    }

    // SIGTERM and SIGKILL of a TCX holder: the kernel drops the links with the process.
    for sig in [libc::SIGTERM, libc::SIGKILL] {
        let mut child = spawn_holder("tcx", "30");
        assert_eq!(lo_links(), before + 2);
        // SAFETY: signalling our own child by its pid.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);
        child.wait().expect("wait");
        wait_until("TCX links gone with the process", || lo_links() == before);
    }

    // SIGKILL of a tc-filter holder leaves its filters; detach_leftovers removes them.
    let mut child = spawn_holder("tc", "30");
    assert_eq!(lo_filters(), 2);
    child.kill().expect("SIGKILL");
    child.wait().expect("wait");
    assert_eq!(lo_filters(), 2, "tc filters outlive a killed process");
    assert_eq!(detach_leftovers("lo").expect("detach_leftovers"), 2);
    assert_eq!(lo_filters(), 0);
    assert_eq!(detach_leftovers("lo").expect("idempotent"), 0);
    assert_tc_shows_nothing_of_ours();
    assert_eq!(lo_links(), before);
}

#[test]
fn unknown_interface_is_reported() {
    let _g = serial();
    require_root("unknown_interface_is_reported");
    let cfg = LiveConfig::new("fxs-nope0", PortSet::single(9878));
    match LiveCapture::open(&cfg) {
        Err(LiveError::NoSuchInterface(name)) => assert_eq!(name, "fxs-nope0"),
        Err(e) => panic!("expected NoSuchInterface, got {e}"),
        Ok(_) => panic!("opened a capture on a missing interface"),
    }
    assert!(matches!(
        detach_leftovers("fxs-nope0"),
        Err(LiveError::NoSuchInterface(_))
    ));
}

#[test]
fn too_many_port_ranges_is_a_config_error() {
    let _g = serial();
    require_root("too_many_port_ranges_is_a_config_error");
    let ports: PortSet = "1,2,3,4,5,6,7,8,9".parse().expect("ports");
    let cfg = LiveConfig::new("lo", ports);
    assert!(matches!(LiveCapture::open(&cfg), Err(LiveError::Config(_))));
}

#[test]
fn missing_capabilities_give_not_privileged() {
    let _g = serial();
    require_root("missing_capabilities_give_not_privileged");
    if Command::new("capsh").arg("--help").output().is_err() {
        eprintln!("!!!!!!!! SKIPPED: capsh not installed (package libcap2-bin) !!!!!!!!");
        return;
    }
    let bin = example_bin("hold_attached");
    let out = Command::new("capsh")
        .args(["--drop=cap_bpf,cap_sys_admin,cap_net_admin", "--", "-c"])
        .arg(format!("exec {} lo {PORT} auto 1", bin.display()))
        .output()
        .expect("capsh");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(3),
        "exit code for NotPrivileged; stderr: {err}"
    );
    assert!(
        err.contains("CAP_BPF") && err.contains("CAP_NET_ADMIN"),
        "{err}"
    );
    assert_eq!(lo_filters(), 0);
}
