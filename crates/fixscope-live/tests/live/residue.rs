//! Nothing of ours stays attached: after drop, after a normal exit, after SIGTERM and after
//! SIGKILL of a process holding a capture (TCX links die with it; tc filters are removed by
//! `detach_leftovers`). Plus the error paths of `open`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fixscope_core::ports::PortSet;
use fixscope_live::{
    detach_leftovers, fixscope_links_on, fixscope_tc_filters_on, ifindex_of, AttachMode,
    LiveCapture, LiveConfig, LiveError,
};
use fixscope_testkit::tc::{has_clsact, tc_filter_show, ClsactCleanup};
use fixscope_testkit::{require_kernel, require_root, require_tool, serial};

use crate::common::example_bin;

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
    let shown = tc_filter_show("lo");
    assert!(
        !shown.contains("fxs_"),
        "tc still shows a fixscope filter: {shown}"
    );
}

#[test]
fn tcx_links_vanish_on_drop() {
    let _g = serial();
    require_root("tcx_links_vanish_on_drop");
    require_kernel("tcx_links_vanish_on_drop", 6, 6, "TCX links");
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
    let had_clsact = has_clsact("lo");
    let mut cfg = LiveConfig::new("lo", PortSet::single(47123));
    cfg.attach = AttachMode::TcFilter;
    let cap = LiveCapture::open(&cfg).expect("open");
    assert_eq!(cap.attach_kind(), "tc");
    assert_eq!(lo_filters(), 2);
    // A second tc-mode capture clashes on our handle/priority with a clear error.
    match LiveCapture::open(&cfg) {
        Err(LiveError::Attach { what, source }) => {
            assert!(what.contains("fixscope detach -i IFACE"), "{what}");
            assert_eq!(
                source.kind(),
                libbpf_rs::ErrorKind::AlreadyExists,
                "{source}"
            );
        }
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
    assert_eq!(has_clsact("lo"), had_clsact, "lo's clsact qdisc as before");
}

#[test]
fn tcx_links_die_with_the_process() {
    let _g = serial();
    require_root("tcx_links_die_with_the_process");
    require_kernel("tcx_links_die_with_the_process", 6, 6, "TCX links");
    let before = lo_links();

    // Normal exit (runs Drop).
    let mut child = spawn_holder("tcx", "1");
    let st = child.wait().expect("wait");
    assert!(st.success(), "{st}");
    assert_eq!(lo_links(), before, "links after normal exit");

    // SIGTERM and SIGKILL: the kernel drops the links with the process.
    for sig in [libc::SIGTERM, libc::SIGKILL] {
        let mut child = spawn_holder("tcx", "30");
        assert_eq!(lo_links(), before + 2);
        // SAFETY: signalling our own child by its pid.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);
        child.wait().expect("wait");
        wait_until("TCX links gone with the process", || lo_links() == before);
    }
}

#[test]
fn tc_filters_go_on_exit_and_outlive_sigkill_until_detach_leftovers() {
    let _g = serial();
    require_root("tc_filters_go_on_exit_and_outlive_sigkill_until_detach_leftovers");
    let had_clsact = has_clsact("lo");

    // Normal exit (runs Drop): filters gone, and the clsact qdisc if the holder made it.
    let mut child = spawn_holder("tc", "1");
    let st = child.wait().expect("wait");
    assert!(st.success(), "{st}");
    assert_eq!(lo_filters(), 0, "filters after normal exit");
    assert_eq!(
        has_clsact("lo"),
        had_clsact,
        "clsact qdisc after normal exit"
    );

    // SIGKILL leaves its filters; detach_leftovers removes them, and the clsact qdisc if
    // the killed process created it (its filters' handle says so).
    let _clean = ClsactCleanup::new("lo");
    let mut child = spawn_holder("tc", "30");
    assert_eq!(lo_filters(), 2);
    child.kill().expect("SIGKILL");
    child.wait().expect("wait");
    assert_eq!(lo_filters(), 2, "tc filters outlive a killed process");
    assert_eq!(detach_leftovers("lo").expect("detach_leftovers"), 2);
    assert_eq!(lo_filters(), 0);
    assert_eq!(detach_leftovers("lo").expect("idempotent"), 0);
    assert_tc_shows_nothing_of_ours();
    assert_eq!(
        has_clsact("lo"),
        had_clsact,
        "detach_leftovers removes the clsact qdisc only if the killed capture made it"
    );
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
    require_tool("missing_capabilities_give_not_privileged", "capsh");
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
