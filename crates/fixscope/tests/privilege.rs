//! Least privilege, end to end: `-Z USER` drops the user and every capability the run no
//! longer needs and keeps measuring; a non-root process with only the documented
//! capabilities measures; a missing capability is named.
//!
//! Each test runs the exchange and fixscope in a network namespace of its own (veth to a
//! second one for the client), so other tests' traffic on lo cannot disturb the counts.
//! The kernel is asked what each thread holds (/proc/PID/task/*/status) while fixscope
//! runs, after the drop.
//!
//! Needs root (BPF, namespaces) and setpriv: without them the tests fail loudly.

mod support;
// Not every helper is used here.
#[allow(unused_imports)]
mod support_live;

use std::time::Duration;

use support::counter;
use support_live::*;

const CAP_NET_ADMIN: u64 = 1 << 12;

/// One thread's ids and capability sets, from /proc/PID/task/TID/status.
#[derive(Debug)]
struct ThreadCreds {
    uids: Vec<u32>,
    gids: Vec<u32>,
    groups: Vec<u32>,
    cap_eff: u64,
    cap_prm: u64,
    cap_bnd: u64,
    cap_amb: u64,
    no_new_privs: bool,
}

fn parse_creds(status: &str) -> ThreadCreds {
    let field = |name: &str| -> &str {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .unwrap_or_else(|| panic!("no {name} in {status}"))
            .trim()
    };
    let ids = |name: &str| -> Vec<u32> {
        field(name)
            .split_whitespace()
            .map(|v| v.parse().expect("id"))
            .collect()
    };
    let hex = |name: &str| u64::from_str_radix(field(name), 16).expect("hex");
    ThreadCreds {
        uids: ids("Uid:"),
        gids: ids("Gid:"),
        groups: ids("Groups:"),
        cap_eff: hex("CapEff:"),
        cap_prm: hex("CapPrm:"),
        cap_bnd: hex("CapBnd:"),
        cap_amb: hex("CapAmb:"),
        no_new_privs: field("NoNewPrivs:") == "1",
    }
}

/// Every thread of `pid`, the main thread first.
fn threads_of(pid: u32) -> Vec<ThreadCreds> {
    let main = parse_creds(
        &std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status of fixscope"),
    );
    let mut all = vec![main];
    for entry in std::fs::read_dir(format!("/proc/{pid}/task")).expect("tasks") {
        let path = entry.expect("task").path();
        if path.file_name().and_then(|n| n.to_str()) == Some(&pid.to_string()) {
            continue;
        }
        if let Ok(s) = std::fs::read_to_string(path.join("status")) {
            all.push(parse_creds(&s));
        }
    }
    all
}

/// What one measured run gave.
struct Measured {
    threads: Vec<ThreadCreds>,
    stderr: String,
    summary: serde_json::Value,
    orders: u64,
}

/// Exchange + fixscope in namespace A (fixscope started by `wrapper` + the binary, on A's
/// veth end), the client in B; the creds of every fixscope thread are read once it has
/// attached (and dropped, with -Z) and before any order flows. Checks every order is
/// matched and nothing is left attached in A.
fn measure(tag: u8, wrapper: &[&str], live_args: &[&str]) -> Measured {
    let net = NetnsPair::create(tag);
    let ifindex = net.ifindex_a();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut exchange = start_exchange_in_a(&net, dir.path(), &["--ack-delay", "fixed:30us"]);
    let port = exchange.addr.port().to_string();
    let mut cmd = std::process::Command::new("ip");
    cmd.args(["netns", "exec", &net.ns_a])
        .args(wrapper)
        .arg(BIN)
        .args(["live", "-i", &net.veth_a, "-p", &port, "--json", "-r", "0"])
        .args(live_args);
    let mut live = Proc::spawn("fixscope live", cmd);
    live.wait_for_stderr("fixscope: watching", Duration::from_secs(15));
    let prog_ids = bpf_prog_ids_of(live.pid());
    assert_eq!(
        prog_ids.len(),
        2,
        "ingress and egress programs: {prog_ids:?}"
    );
    let threads = threads_of(live.pid());

    run_client(
        Some(&net.ns_b),
        &exchange,
        &["--sessions", "2", "--rate", "1000", "--count", "600"],
        Duration::from_secs(25),
    );
    let l = stop_live_proc(&mut live, libc::SIGTERM);
    exchange.proc.signal(libc::SIGTERM);
    let e = exchange.proc.finish(Duration::from_secs(10));
    assert!(e.status.success(), "exchange: {}", e.stderr);
    let truth = fixscope_sim::truth::read_truth(dir.path().join("exchange.csv")).expect("truth");

    let (_, summary) = parse_report(&l.stdout);
    let orders = truth.len() as u64;
    assert_eq!(orders, 600, "the exchange saw every order");
    assert_eq!(
        counter(&summary, "requests"),
        orders,
        "{}",
        summary["counters"]
    );
    assert_eq!(
        counter(&summary, "matched"),
        orders,
        "{}",
        summary["counters"]
    );
    assert_eq!(counter(&summary, "timed_out"), 0);
    assert_eq!(source(&summary, "kernel_ring_drops_request"), 0);
    assert_eq!(source(&summary, "kernel_ring_drops_response"), 0);
    assert_nothing_left(&prog_ids, None, ifindex);
    let shown = run(
        "ip",
        &[
            "netns",
            "exec",
            &net.ns_a,
            "tc",
            "filter",
            "show",
            "dev",
            &net.veth_a,
            "ingress",
        ],
    );
    assert!(!shown.contains("fxs_"), "a filter is left:\n{shown}");
    Measured {
        threads,
        stderr: l.stderr,
        summary,
        orders,
    }
}

fn assert_dropped_to_nobody(m: &Measured, kept: u64) {
    let main = &m.threads[0];
    if !m
        .stderr
        .contains("with -Z the consumer runs at normal priority")
    {
        // The yielding consumer's guard thread runs beside the main one.
        assert!(m.threads.len() >= 2, "the guard thread: {:?}", m.threads);
    }
    assert_eq!(
        main.cap_bnd, kept,
        "bounding set of the main thread: {main:?}"
    );
    assert!(main.no_new_privs, "{main:?}");
    for t in &m.threads {
        assert_eq!(t.uids, vec![65534; 4], "uid of every thread: {t:?}");
        assert_eq!(t.gids, vec![65534; 4], "gid of every thread: {t:?}");
        assert!(t.groups.iter().all(|&g| g == 65534), "{t:?}");
        assert_eq!(t.cap_amb, 0, "{t:?}");
    }
    assert_eq!((main.cap_eff, main.cap_prm), (kept, kept), "{main:?}");
    for t in &m.threads[1..] {
        assert_eq!(
            (t.cap_eff, t.cap_prm),
            (0, 0),
            "other threads hold nothing: {t:?}"
        );
    }
    assert!(
        m.stderr
            .contains("running as user nobody (uid 65534, gid 65534) from now on"),
        "{}",
        m.stderr
    );
    assert!(m.orders > 0 && counter(&m.summary, "matched") == m.orders);
}

/// `-Z nobody` with TCX links: no capability is left at all (closing the links detaches),
/// and every order sent after the drop is matched.
#[test]
fn relinquish_with_tcx_keeps_no_capability_and_measures() {
    require_root("relinquish_with_tcx_keeps_no_capability_and_measures");
    require_kernel(
        "relinquish_with_tcx_keeps_no_capability_and_measures",
        6,
        6,
        "TCX links",
    );
    let _g = serial();
    let m = measure(31, &[], &["--attach", "tcx", "-Z", "nobody"]);
    assert_dropped_to_nobody(&m, 0);
    assert!(m.stderr.contains("capabilities kept: none"), "{}", m.stderr);
}

/// `-Z nobody` with clsact filters: CAP_NET_ADMIN alone stays (on the thread that
/// detaches), and is enough to remove the filters at exit.
#[test]
fn relinquish_with_tc_filters_keeps_only_net_admin_and_detaches() {
    require_root("relinquish_with_tc_filters_keeps_only_net_admin_and_detaches");
    let _g = serial();
    let m = measure(32, &[], &["--attach", "tc", "-Z", "nobody"]);
    assert_dropped_to_nobody(&m, CAP_NET_ADMIN);
    assert!(
        m.stderr
            .contains("capabilities kept: CAP_NET_ADMIN (to remove the tc filters at exit)"),
        "{}",
        m.stderr
    );
}

/// `setpriv` as nobody with only the documented capabilities, as ambient ones.
fn as_nobody_with(caps: &str) -> Vec<String> {
    let mut v = vec![
        "setpriv".to_string(),
        "--reuid=65534".into(),
        "--regid=65534".into(),
        "--clear-groups".into(),
    ];
    if !caps.is_empty() {
        v.push(format!("--inh-caps={caps}"));
        v.push(format!("--ambient-caps={caps}"));
    }
    v
}

/// Not root, only CAP_BPF + CAP_PERFMON + CAP_NET_ADMIN + CAP_SYS_NICE: measures every
/// order, with the yielding consumer (no "normal priority" note).
#[test]
fn non_root_with_the_documented_capabilities_measures() {
    require_root("non_root_with_the_documented_capabilities_measures");
    require_tool(
        "non_root_with_the_documented_capabilities_measures",
        "setpriv",
    );
    let _g = serial();
    let wrapper = as_nobody_with("+bpf,+perfmon,+net_admin,+sys_nice");
    let wrapper: Vec<&str> = wrapper.iter().map(String::as_str).collect();
    let m = measure(33, &wrapper, &[]);
    assert_eq!(m.threads[0].uids, vec![65534; 4], "{:?}", m.threads[0]);
    assert!(!m.stderr.contains("normal priority"), "{}", m.stderr);
}

/// Each documented capability missing in turn: loading/attaching ones stop the run with a
/// message naming the capability; a missing CAP_SYS_NICE only keeps the consumer at
/// normal priority, said so by name.
#[test]
fn a_missing_capability_is_named() {
    require_root("a_missing_capability_is_named");
    require_tool("a_missing_capability_is_named", "setpriv");
    let _g = serial();
    let ns = Netns::create(&[format!("fxs-{}-caps", std::process::id())]);
    let all = ["bpf", "perfmon", "net_admin", "sys_nice"];
    for missing in all {
        let caps: Vec<String> = all
            .iter()
            .filter(|c| **c != missing)
            .map(|c| format!("+{c}"))
            .collect();
        let mut cmd = std::process::Command::new("ip");
        cmd.args(["netns", "exec", &ns.0[0]])
            .args(as_nobody_with(&caps.join(",")))
            .args([
                BIN,
                "live",
                "-i",
                "lo",
                "-p",
                "9",
                "--duration",
                "0.5",
                "--json",
            ]);
        let out = cmd.output().expect("setpriv fixscope");
        let err = String::from_utf8_lossy(&out.stderr);
        let name = format!("CAP_{}", missing.to_uppercase());
        assert!(!err.contains("panicked"), "{err}");
        if missing == "sys_nice" {
            assert_eq!(out.status.code(), Some(0), "{err}");
            assert!(
                err.contains("consumer runs at normal priority") && err.contains(&name),
                "without {name}: {err}"
            );
        } else {
            assert_eq!(out.status.code(), Some(1), "without {name}: {err}");
            let line = err
                .lines()
                .find(|l| l.contains("error"))
                .unwrap_or_default();
            assert!(
                line.starts_with("fixscope: error: not privileged") && line.contains(&name),
                "without {name}, one line naming it: {err}"
            );
            assert!(out.stdout.is_empty(), "no report");
        }
    }
    let shown = run(
        "ip",
        &[
            "netns", "exec", &ns.0[0], "tc", "filter", "show", "dev", "lo", "ingress",
        ],
    );
    assert!(!shown.contains("fxs_"), "{shown}");
}

/// `-Z` with a user that does not exist or is root fails before anything is attached.
#[test]
fn relinquish_to_no_such_user_or_root_is_refused() {
    require_root("relinquish_to_no_such_user_or_root_is_refused");
    let _g = serial();
    let ns = Netns::create(&[format!("fxs-{}-zusr", std::process::id())]);
    for (user, want) in [
        ("no-such-user-fxs", "no such user: no-such-user-fxs"),
        ("root", "that is root, which keeps every privilege"),
    ] {
        let out = fixscope_cmd(
            Some(&ns.0[0]),
            &[
                "live",
                "-i",
                "lo",
                "-p",
                "9",
                "--duration",
                "0.5",
                "-Z",
                user,
            ],
        )
        .output()
        .expect("fixscope");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "-Z {user}: {err}");
        assert!(err.contains(want), "-Z {user}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let shown = run(
        "ip",
        &[
            "netns", "exec", &ns.0[0], "tc", "filter", "show", "dev", "lo", "ingress",
        ],
    );
    assert!(!shown.contains("fxs_"), "{shown}");
}
