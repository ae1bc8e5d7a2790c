//! End-to-end tests of `fixscope live` against the built-in simulator and its ground truth.
//!
//! Every process is a child process of the real binary (`fixscope sim exchange`, `fixscope
//! sim client`, `fixscope live`), so signals, exit codes and kernel residue are real. The
//! exchange's truth file (CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns) and the client's
//! own truth file bracket every wire time: for each order
//!
//!   client write <= wire request <= exchange read  and  exchange write <= wire response <= client read
//!
//! so fixscope's latency of every order lies between the exchange's and the client's. The
//! tests check that order by order (joining `--trace` with the truth files on (client
//! address, ClOrdID)) and in aggregate (the summary's p50/p99/max), with stated tolerances
//! for how much the wire may exceed the exchange's own figure.
//!
//! Needs root (BPF, network namespaces): without it the tests fail loudly.

mod support;
mod support_live;

use std::time::{Duration, Instant};

use support_live::*;

/// Tolerances on loopback / veth, for the unoptimised binary `cargo test` builds, on a
/// 2-core VM where other work (compilers, other test suites) runs too. They bound the time
/// the kernel's TCP path and the simulator's own wake-up + parsing take between the wire
/// and the exchange's timestamps (the wire sees a request before the exchange's read()
/// returns, a response after its write() began).
///
/// Measured on this VM (debug build, 900-1200 orders per run at 1000-1500/s, 2-3 sessions):
/// - quiet machine: per-order excess p50 33-85 µs, p99 65 µs-1.0 ms, max 0.12-4.3 ms;
/// - load average 5 on the 2 cores (two rustc + tshark of other engineers): p50 89 µs,
///   but fixscope's p99 18.7 ms against the truth's 1.0 ms and a max excess of 20.8 ms: the
///   debug-build exchange is descheduled while requests wait in its socket.
///
/// So the median is bounded tightly (a wrong hook or a latency taken from the wrong segment
/// moves it), the tail only loosely (a response matched to a much later one, a timeout).
/// The precise checks are elsewhere and have no tolerance beyond clock slack: every
/// order's wire times lie inside [client write, exchange read] and [exchange write, client
/// read], and every reported quantile lies between the truth's and the client's.
const TOL: Tolerance = Tolerance {
    // Same clock; bpf_ktime_get_ns uses the NMI-safe fast accessor, allow 1 µs.
    eps_ns: 1_000,
    median_excess_ns: 400_000,
    p50_ns: 400_000,
    p99_ns: 40_000_000,
    max_ns: 100_000_000,
    emulated: false,
};

/// Under full CPU emulation (`make test-kernel` boots Debian's kernels in QEMU without KVM,
/// which sets `FIXSCOPE_TEST_EMULATED_CPU=1`), the kernel's TCP path between the wire and
/// the exchange's read takes milliseconds (median excess 2.4-6.1 ms measured on 6.1, 21.6 ms
/// with the host at load 10): only the loose bounds on the excess widen — to these floors,
/// or to the client's own round trip beyond the exchange measured in the same run where
/// that is more (see [`Tolerance::emulated`]) — and `-t` may pass for orders that really
/// were answered after it. The exact checks (every order's wire times inside the
/// applications' own, quantiles between the truth's and the client's, timed_out only for
/// orders answered after -t) stay as they are.
fn tolerance() -> Tolerance {
    if std::env::var_os("FIXSCOPE_TEST_EMULATED_CPU").is_some_and(|v| v == "1") {
        Tolerance {
            median_excess_ns: 20_000_000,
            p50_ns: 20_000_000,
            p99_ns: 400_000_000,
            max_ns: 1_000_000_000,
            emulated: true,
            ..TOL
        }
    } else {
        TOL
    }
}

/// What `--attach auto` picks on this kernel: TCX from Linux 6.6 on, tc filters before.
fn auto_attach_kind() -> &'static str {
    if kernel_at_least(6, 6) {
        "tcx"
    } else {
        "tc"
    }
}

fn lo_ifindex() -> u32 {
    fixscope_live::ifindex_of("lo").expect("lo")
}

/// Scenario 1: four delay distributions of the exchange, each with a fill delay, measured
/// on lo as the acceptor; every order of the truth file matched and bracketed.
#[test]
fn loopback_delay_distributions_match_truth_order_by_order() {
    require_root("loopback_delay_distributions_match_truth_order_by_order");
    let _g = serial();
    let started = Instant::now();
    for (ack, fill) in [
        ("fixed:200us", "fixed:100us"),
        ("uniform:50us-300us", "uniform:20us-100us"),
        ("lognormal:100us,0.5", "uniform:20us-100us"),
        ("bimodal:50us,2ms,0.05", "fixed:300us"),
    ] {
        let r = run_scenario(&RunSpec {
            label: ack,
            exchange_args: &["--ack-delay", ack, "--fill-delay", fill],
            client_args: &["--sessions", "2", "--rate", "1000", "--count", "1000"],
            ..RunSpec::default()
        });
        let m = check_against_truth(&r, &tolerance());
        eprintln!("{}", describe(ack, &m));
        assert_eq!(r.truth.len(), 1000);
        assert!(
            r.truth.iter().all(|t| t.fill_ns.is_some()),
            "every order filled"
        );
        assert!(
            r.live_stderr
                .contains(&format!("as server via {}", auto_attach_kind())),
            "attached with {} as the acceptor: {}",
            auto_attach_kind(),
            r.live_stderr
        );
        assert!(!r.intervals.is_empty(), "interval reports every second");
        // The exchange's configured delay is a floor for both the truth and fixscope.
        let floor = match ack {
            "fixed:200us" => 200_000,
            "uniform:50us-300us" | "bimodal:50us,2ms,0.05" => 50_000,
            _ => 0,
        };
        assert!(m.truth_ack[0] >= floor && m.wire_ack[0] >= floor, "{m:?}");
        assert_nothing_left(&r.prog_ids, Some("lo"), lo_ifindex());
    }
    eprintln!("delay distributions: {:?}", started.elapsed());
}

/// Scenarios 2 and 5: the initiator's side (`--role client`, requests leave towards the
/// port) on 127.0.0.1, then IPv6 on ::1 as acceptor and as initiator.
#[test]
fn client_role_and_ipv6_match_truth() {
    require_root("client_role_and_ipv6_match_truth");
    let _g = serial();
    for (label, listen, role) in [
        ("ipv4 role client", "127.0.0.1:0", "client"),
        ("ipv6 ::1 role server", "[::1]:0", "server"),
        ("ipv6 ::1 role client", "[::1]:0", "client"),
    ] {
        let r = run_scenario(&RunSpec {
            label,
            listen,
            exchange_args: &[
                "--ack-delay",
                "uniform:50us-150us",
                "--fill-delay",
                "fixed:50us",
            ],
            client_args: &["--sessions", "3", "--rate", "1500", "--count", "900"],
            live_args: &["--role", role],
            ..RunSpec::default()
        });
        let m = check_against_truth(&r, &tolerance());
        eprintln!("{}", describe(label, &m));
        assert!(
            r.live_stderr.contains(&format!("as {role} via")),
            "{}",
            r.live_stderr
        );
        let sessions = r.summary["sessions"].as_array().unwrap();
        assert_eq!(sessions.len(), 3);
        for s in sessions {
            let server = s["server"].as_str().unwrap();
            assert_eq!(server, r.exchange_addr.to_string(), "{s}");
            assert!(
                s["sender_comp_id"].as_str().unwrap().starts_with("CLIENT"),
                "{s}"
            );
            assert_eq!(s["target_comp_id"], "EXCH");
            assert_eq!(s["requests"], 300);
        }
        if listen.starts_with('[') {
            assert!(r.truth.iter().all(|t| t.session.starts_with("[::1]:")));
        }
        assert_nothing_left(&r.prog_ids, Some("lo"), lo_ifindex());
    }
}

/// Scenario 3: orders written in two write() calls split inside the ClOrdID, several
/// sessions sharing the same ClOrdIDs, FIX.4.2 and FIXT.1.1, a D/F/G mix (with a fill delay
/// so that cancels and replaces find live orders).
#[test]
fn split_writes_colliding_clordids_fix42_fixt_and_dfg_mix() {
    require_root("split_writes_colliding_clordids_fix42_fixt_and_dfg_mix");
    let _g = serial();
    for begin in ["FIX.4.2", "FIXT.1.1"] {
        let r = run_scenario(&RunSpec {
            label: begin,
            exchange_args: &[
                "--ack-delay",
                "uniform:30us-120us",
                "--fill-delay",
                "uniform:2ms-6ms",
            ],
            client_args: &[
                "--sessions",
                "3",
                "--rate",
                "1200",
                "--count",
                "1200",
                "--split-clordid",
                "--clordid-prefix",
                "SAME",
                "--mix",
                "D=80,F=10,G=10",
                "--begin-string",
                begin,
            ],
            ..RunSpec::default()
        });
        let m = check_against_truth(&r, &tolerance());
        eprintln!("{}", describe(begin, &m));
        let count = |t: &str| r.truth.iter().filter(|x| x.msg_type == t).count();
        let (d, f, g) = (count("D"), count("F"), count("G"));
        eprintln!("[{begin}] truth: {d} D, {f} F, {g} G");
        assert_eq!(d + f + g, r.truth.len());
        assert!(
            f >= 30 && g >= 30,
            "the mix produced cancels and replaces: {d}/{f}/{g}"
        );
        // Colliding ClOrdIDs: the same id on several sessions, each matched on its own.
        let mut ids: Vec<&str> = r.truth.iter().map(|t| t.clordid.as_str()).collect();
        assert!(ids.iter().all(|i| i.starts_with("SAME")), "{:?}", &ids[..3]);
        ids.sort_unstable();
        ids.dedup();
        assert!(
            ids.len() * 2 <= r.truth.len(),
            "ClOrdIDs collide across sessions ({} distinct of {})",
            ids.len(),
            r.truth.len()
        );
        // Per request type: fixscope's first-response count per type = the truth's.
        let by_type = r.summary["by_msg_type"].as_array().unwrap();
        for (t, want) in [("D", d), ("F", f), ("G", g)] {
            let entry = by_type
                .iter()
                .find(|x| x["msg_type"] == t)
                .unwrap_or_else(|| panic!("[{begin}] no by_msg_type entry for {t}"));
            let first = entry["stages"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["stage"] == "first_response")
                .unwrap();
            assert_eq!(
                first["count"].as_u64().unwrap(),
                want as u64,
                "[{begin}] {t}"
            );
        }
        let sessions = r.summary["sessions"].as_array().unwrap();
        assert_eq!(sessions.len(), 3);
        // Splitting really happened: more request segments than requests.
        assert!(
            r.summary["counters"]["segments"].as_u64().unwrap() > r.truth.len() as u64,
            "{}",
            r.summary["counters"]
        );
        assert_nothing_left(&r.prog_ids, Some("lo"), lo_ifindex());
    }
}

/// Scenario 4: a veth pair between two namespaces made by the test; exchange and fixscope
/// in A (fixscope on A's veth end), the client in B.
#[test]
fn veth_between_namespaces_matches_truth() {
    require_root("veth_between_namespaces_matches_truth");
    let _g = serial();
    let net = NetnsPair::create(1);
    let ifindex = net.ifindex_a();
    let listen = format!("{}:0", net.ip_a);
    let r = run_scenario(&RunSpec {
        label: "veth",
        listen: &listen,
        iface: &net.veth_a,
        exchange_netns: Some(&net.ns_a),
        live_netns: Some(&net.ns_a),
        client_netns: Some(&net.ns_b),
        exchange_args: &[
            "--ack-delay",
            "lognormal:80us,0.4",
            "--fill-delay",
            "uniform:20us-60us",
        ],
        client_args: &["--sessions", "2", "--rate", "1000", "--count", "1000"],
        ..RunSpec::default()
    });
    let m = check_against_truth(&r, &tolerance());
    eprintln!("{}", describe("veth", &m));
    assert!(r
        .truth
        .iter()
        .all(|t| t.session.starts_with(&format!("{}:", net.ip_b))));
    assert!(r.live_stderr.contains(&net.veth_a), "{}", r.live_stderr);
    assert_nothing_left(&r.prog_ids, None, ifindex);
    let names = net.names().to_vec();
    drop(net);
    assert!(!Netns::any_listed(&names), "namespaces left: {names:?}");
}

/// Scenario 6 with TCX links (Linux >= 6.6).
#[test]
fn lifecycle_leaves_nothing_attached_tcx() {
    require_root("lifecycle_leaves_nothing_attached_tcx");
    require_kernel("lifecycle_leaves_nothing_attached_tcx", 6, 6, "TCX links");
    let _g = serial();
    lifecycle_leaves_nothing_attached("tcx");
}

/// Scenario 6 with `--attach tc` (clsact filters, any kernel).
#[test]
fn lifecycle_leaves_nothing_attached_tc() {
    require_root("lifecycle_leaves_nothing_attached_tc");
    let _g = serial();
    lifecycle_leaves_nothing_attached("tc");
}

/// Scenario 6: nothing attached is left after a `--duration` exit, after SIGTERM (exit 0,
/// final summary) and after SIGKILL. With tc filters the clsact qdisc goes too if fixscope
/// created it; SIGKILL leaves the filters, which `fixscope detach -i lo` removes (the qdisc
/// stays then: nothing tells who created it).
fn lifecycle_leaves_nothing_attached(attach: &str) {
    let had_clsact = has_clsact("lo");
    let port = free_port();
    let attach_args = ["--attach", attach, "--json", "-r", "0.2"];
    // 1. --duration: stops by itself.
    let t0 = Instant::now();
    let mut args = attach_args.to_vec();
    args.extend(["--duration", "1"]);
    let mut live = start_live(None, "lo", port, &args);
    assert!(
        live.watching
            .ends_with(&format!("via {attach}; Ctrl-C to stop")),
        "{}",
        live.watching
    );
    assert_eq!(
        fixscope_on_lo(attach, &live.prog_ids),
        2,
        "{attach}: attached twice"
    );
    let f = live.proc.finish(Duration::from_secs(10));
    assert_eq!(
        f.status.code(),
        Some(0),
        "{attach} --duration: {}",
        f.stderr
    );
    let elapsed = t0.elapsed();
    // Under QEMU's TCG start-up (probes, loads) and the stop's drain run 10-50x slower
    // (9.5 s once on 7.3 with the host busy): there the bound only catches a hang.
    let limit = if std::env::var_os("FIXSCOPE_TEST_EMULATED_CPU").is_some_and(|v| v == "1") {
        Duration::from_secs(30)
    } else {
        Duration::from_secs(6)
    };
    assert!(elapsed < limit, "{attach}: --duration 1 took {elapsed:?}");
    let (intervals, summary) = parse_report(&f.stdout);
    // Intervals are wall time live (the summary's duration_s is the span of the traffic
    // seen, 0 here): 1 s in intervals of 0.2 s.
    let covered: f64 = intervals
        .iter()
        .map(|i| i["duration_s"].as_f64().unwrap())
        .sum();
    assert!(
        (0.7..=1.5).contains(&covered),
        "{attach}: intervals cover {covered} s"
    );
    assert_eq!(summary["counters"]["requests"], 0);
    assert_nothing_left(&live.prog_ids, Some("lo"), lo_ifindex());
    assert_eq!(
        has_clsact("lo"),
        had_clsact,
        "{attach}: lo's clsact as before"
    );

    // 2. SIGTERM: exit code 0 and a final summary.
    let mut live = start_live(None, "lo", port, &attach_args);
    std::thread::sleep(Duration::from_millis(300));
    live.proc.signal(libc::SIGTERM);
    let f = live.proc.finish(Duration::from_secs(5));
    assert_eq!(f.status.code(), Some(0), "{attach} SIGTERM: {}", f.stderr);
    let (_, summary) = parse_report(&f.stdout);
    assert_eq!(summary["counters"]["requests"], 0);
    assert!(summary["source"]["kernel_hook_calls"].is_u64(), "{summary}");
    assert!(!f.stderr.contains("panicked"), "{}", f.stderr);
    assert_nothing_left(&live.prog_ids, Some("lo"), lo_ifindex());
    assert_eq!(
        has_clsact("lo"),
        had_clsact,
        "{attach}: lo's clsact as before"
    );

    // 3. SIGKILL: no cleanup code runs.
    let _clean = ClsactCleanup::new("lo");
    let mut live = start_live(None, "lo", port, &attach_args);
    live.proc.signal(libc::SIGKILL);
    let f = live.proc.finish(Duration::from_secs(5));
    assert_eq!(f.status.code(), None, "killed by a signal");
    if attach == "tcx" {
        // TCX links die with the process that holds them.
        assert_nothing_left(&live.prog_ids, Some("lo"), lo_ifindex());
    } else {
        // tc filters outlive it ...
        std::thread::sleep(Duration::from_millis(200));
        let ours = fixscope_live::fixscope_tc_filters_on("lo").expect("filter query");
        assert_eq!(
            ours.iter()
                .filter(|x| live.prog_ids.contains(&x.prog_id))
                .count(),
            2,
            "tc filters outlive a SIGKILLed fixscope: {ours:?}"
        );
        let shown = tc_filter_show("lo");
        assert!(
            shown.contains("fxs_ingress") && shown.contains("fxs_egress"),
            "`tc filter show dev lo` lists them:\n{shown}"
        );
        // ... until `fixscope detach -i lo`, which is idempotent.
        let out = fixscope_cmd(None, &["detach", "-i", "lo"])
            .output()
            .expect("detach");
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "detach: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            said.contains("removed 2 fixscope tc filter(s) from lo"),
            "{said}"
        );
        assert_nothing_left(&live.prog_ids, Some("lo"), lo_ifindex());
        assert!(
            !tc_filter_show("lo").contains("fxs_"),
            "{}",
            tc_filter_show("lo")
        );
        // The killed run's filters said whether it created the clsact qdisc (#36 item 12).
        assert_eq!(
            has_clsact("lo"),
            had_clsact,
            "{attach}: `fixscope detach` leaves lo's clsact as before the run"
        );
        let out = fixscope_cmd(None, &["detach", "-i", "lo"])
            .output()
            .expect("detach");
        assert!(out.status.success());
        assert!(String::from_utf8_lossy(&out.stdout).contains("removed 0"));
    }
}

/// How many of `prog_ids` lo runs right now (TCX links or tc filters).
fn fixscope_on_lo(attach: &str, prog_ids: &[u32]) -> usize {
    if attach == "tcx" {
        fixscope_live::fixscope_links_on(lo_ifindex())
            .expect("links")
            .iter()
            .filter(|l| prog_ids.contains(&l.prog_id))
            .count()
    } else {
        fixscope_live::fixscope_tc_filters_on("lo")
            .expect("filters")
            .iter()
            .filter(|f| prog_ids.contains(&f.prog_id))
            .count()
    }
}

/// Scenario 7: the watched interface is deleted under a running fixscope (with traffic):
/// it stops by itself within seconds, says why, exits non-zero, still prints its final
/// report, and leaves nothing behind.
#[test]
fn interface_vanishing_mid_run_stops_cleanly() {
    require_root("interface_vanishing_mid_run_stops_cleanly");
    let _g = serial();
    let net = NetnsPair::create(2);
    let ifindex = net.ifindex_a();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut exchange = start_exchange_in_a(&net, dir.path(), &["--ack-delay", "fixed:50us"]);
    let mut live = start_live(
        Some(&net.ns_a),
        &net.veth_a,
        exchange.addr.port(),
        &["--json"],
    );
    let mut client = spawn_client(
        Some(&net.ns_b),
        &exchange,
        &["--rate", "500", "--duration", "20"],
    );
    // Let orders flow through the capture for a moment (bounded: 10 s).
    wait_until(
        "interval reports with requests",
        Duration::from_secs(10),
        || {
            live.proc
                .stdout()
                .lines()
                .any(|l| l.contains("\"interval\"") && !l.contains("\"requests\":0"))
        },
    );
    let t0 = Instant::now();
    run("ip", &["-n", &net.ns_a, "link", "del", &net.veth_a]);
    let f = live.proc.finish(Duration::from_secs(10));
    let took = t0.elapsed();
    eprintln!("fixscope live stopped {took:?} after the interface was deleted");
    assert!(
        took < Duration::from_secs(3),
        "stopped by itself within 3 s, took {took:?}"
    );
    assert!(!f.status.success(), "exit code non-zero: {}", f.status);
    assert_eq!(
        f.status.code(),
        Some(1),
        "an error exit, not a signal: {}",
        f.status
    );
    let msg = format!("network interface {} disappeared; stopped", net.veth_a);
    assert!(
        f.stderr.contains(&msg),
        "clear message on stderr:\n{}",
        f.stderr
    );
    assert!(!f.stderr.contains("panicked"), "{}", f.stderr);
    let (_, summary) = parse_report(&f.stdout);
    assert!(
        counter(&summary, "requests") > 0,
        "final report with the orders seen"
    );
    assert!(counter(&summary, "matched") > 0, "{}", summary["counters"]);
    assert_nothing_left(&live.prog_ids, None, ifindex);
    // The client lost its exchange: stop it and the exchange (by pid).
    client.signal(libc::SIGKILL);
    exchange.proc.signal(libc::SIGTERM);
    let _ = client.finish(Duration::from_secs(5));
    let _ = exchange.proc.finish(Duration::from_secs(10));
}

/// Scenario 8: bad input gives a short, clear error and a non-zero exit (never a panic),
/// and attaches nothing.
#[test]
fn bad_input_is_rejected_clearly() {
    require_root("bad_input_is_rejected_clearly");
    let _g = serial();
    let run = |cmd: &mut std::process::Command| {
        let out = cmd.output().expect("run fixscope");
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!err.contains("panicked"), "panic: {err}");
        assert!(
            out.stdout.is_empty(),
            "no report on bad input: {:?}",
            out.stdout
        );
        (out.status.code(), err)
    };
    let one_line = |err: &str| -> String {
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "one-line error, got:\n{err}");
        lines[0].to_string()
    };

    // Unknown interface: one line naming it.
    let (code, err) = run(&mut fixscope_cmd(
        None,
        &["live", "-i", "nosuchif0", "-p", "1"],
    ));
    assert_eq!(code, Some(1), "{err}");
    let line = one_line(&err);
    assert!(
        line.starts_with("fixscope: error: ") && line.contains("nosuchif0"),
        "{line}"
    );
    assert!(line.contains("no such network interface"), "{line}");

    // Flag values rejected before anything is loaded.
    for (args, want) in [
        (
            &["-p", "1", "--duration", "-1"][..],
            "--duration must be a positive number of seconds, got -1",
        ),
        (
            &["-p", "1", "--duration", "0"],
            "--duration must be a positive number",
        ),
        (
            &["-p", "1", "--ring-mb", "0"],
            "--ring-mb must be between 1 and 1024, got 0",
        ),
        (
            &["-p", "1", "-t", "0"],
            "-t/--timeout must be greater than 0 and at most 3600 seconds, got 0",
        ),
        (
            &["-p", "1", "--cpu", "4096"],
            "-c/--cpu 4096 does not exist",
        ),
    ] {
        let mut all = vec!["live", "-i", "lo"];
        all.extend_from_slice(args);
        let (code, err) = run(&mut fixscope_cmd(None, &all));
        assert_eq!(code, Some(1), "{args:?}: {err}");
        let line = one_line(&err);
        assert!(line.contains(want), "{args:?}: {line}");
    }
    // Port syntax is a usage error (clap, exit 2), naming the bad value.
    for (port, want) in [
        ("0", "'0' is not a port"),
        ("70000", "'70000' is not a port"),
        ("x", "--port"),
    ] {
        let (code, err) = run(&mut fixscope_cmd(None, &["live", "-i", "lo", "-p", port]));
        assert_eq!(code, Some(2), "-p {port}: {err}");
        let first = err.lines().next().unwrap_or_default();
        assert!(
            first.starts_with("error: ") && first.contains(want),
            "-p {port}: {err}"
        );
    }

    // Without privileges (uid/gid nobody, no capabilities): a clear message, exit 1.
    let before = fixscope_live::fixscope_links_on(lo_ifindex())
        .expect("links")
        .len();
    for sub in [
        &["live", "-i", "lo", "-p", "1", "--duration", "1"][..],
        &["detach", "-i", "lo"],
    ] {
        let mut cmd = std::process::Command::new("setpriv");
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
            .args(sub);
        let (code, err) = run(&mut cmd);
        assert_eq!(code, Some(1), "{sub:?} as nobody: {err}");
        let line = one_line(&err);
        assert!(
            line.starts_with("fixscope: error: not privileged") && line.contains("CAP_BPF"),
            "{sub:?}: {line}"
        );
    }
    let after = fixscope_live::fixscope_links_on(lo_ifindex())
        .expect("links")
        .len();
    assert!(after <= before, "nothing attached by the failed runs");
}

/// The keyboard commands, typed into a real terminal (a tmux pane this test creates and
/// kills): `?` help, SPACE cumulative percentiles + histogram mid-run (`--full`), `r`
/// reset, `q` quit with the final report and exit code 0.
#[test]
fn keys_in_a_terminal_help_summary_reset_quit() {
    require_root("keys_in_a_terminal_help_summary_reset_quit");
    let _g = serial();
    require_tool("keys_in_a_terminal_help_summary_reset_quit", "tmux");
    let dir = tempfile::tempdir().unwrap();
    let truth = dir.path().join("truth.csv");
    let exchange = start_exchange(None, "127.0.0.1:0", &truth, &[]);
    let (out, err, rc) = (
        dir.path().join("out.txt"),
        dir.path().join("err.txt"),
        dir.path().join("rc.txt"),
    );
    let session = format!("fxs-keys-{}", std::process::id());
    let shell = format!(
        "{} live -i lo -p {} -r 0.5 --duration 60 --full >{} 2>{}; echo $? >{}",
        env!("CARGO_BIN_EXE_fixscope"),
        exchange.addr.port(),
        out.display(),
        err.display(),
        rc.display()
    );
    let _tmux = TmuxSession::start(session.clone(), 200, 50, &shell);
    let read = |p: &std::path::Path| std::fs::read_to_string(p).unwrap_or_default();
    let keys = |k: &str| run("tmux", &["send-keys", "-t", &session, "-l", k]);
    wait_until("fixscope attached", Duration::from_secs(15), || {
        read(&err).contains("fixscope: watching")
    });
    // Interactive: the key help is printed once at start.
    assert!(read(&err).contains("keys: SPACE"), "{}", read(&err));

    run_client(
        None,
        &exchange,
        &["--rate", "2000", "--count", "1000"],
        Duration::from_secs(30),
    );
    wait_until("the orders matched", Duration::from_secs(10), || {
        read(&out).contains("matched 1000")
    });

    keys("?");
    wait_until("help on '?'", Duration::from_secs(5), || {
        read(&err).matches("keys: SPACE").count() >= 2
    });
    keys(" ");
    wait_until("summary on SPACE", Duration::from_secs(5), || {
        read(&out).contains("histogram (first_response):")
    });
    let mid_run = read(&out);
    assert!(mid_run.contains("p99.999"), "{mid_run}");
    keys("r");
    wait_until("reset on 'r'", Duration::from_secs(5), || {
        read(&err).contains("statistics reset")
    });
    keys("q");
    wait_until("exit on 'q'", Duration::from_secs(10), || {
        !read(&rc).trim().is_empty()
    });
    assert_eq!(read(&rc).trim(), "0", "{}", read(&err));
    let all = read(&out);
    // The SPACE summary has a histogram; the final one, after the reset and with no orders
    // since, has none (it would with the reset ignored).
    assert_eq!(
        all.matches("histogram (first_response):").count(),
        1,
        "{all}"
    );
    let final_report = &all[mid_run.len()..];
    assert!(!final_report.is_empty(), "no final report after 'q'");
    drop(exchange);
}

/// Busy threads at normal priority on every CPU, so that a SCHED_IDLE consumer gets no
/// CPU of its own; they stop when dropped (and after 60 s whatever happens).
struct CpuHogs {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl CpuHogs {
    fn start() -> CpuHogs {
        use std::sync::atomic::{AtomicBool, Ordering};
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let n = std::thread::available_parallelism().map_or(2, |n| n.get());
        let threads = (0..n)
            .map(|_| {
                let stop = std::sync::Arc::clone(&stop);
                std::thread::spawn(move || {
                    let until = Instant::now() + Duration::from_secs(60);
                    while !stop.load(Ordering::Relaxed) && Instant::now() < until {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        CpuHogs { stop, threads }
    }
}

impl Drop for CpuHogs {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The scheduling policy of process `pid`'s main thread (where `fixscope live` polls).
fn policy_of(pid: u32) -> libc::c_int {
    fixscope_live::thread_policy(pid as i32).expect("sched_getscheduler")
}

/// `--priority yield` (default) runs the consumer as SCHED_IDLE; `--priority normal`, and a
/// ring too small for yielding safely (with a note saying so), as SCHED_OTHER.
#[test]
fn consumer_priority_follows_the_flag() {
    require_root("consumer_priority_follows_the_flag");
    let _g = serial();
    let port = free_port();
    for (extra, want, note) in [
        (&[][..], libc::SCHED_IDLE, false),
        (&["--priority", "normal"][..], libc::SCHED_OTHER, false),
        (&["--ring-mb", "8"][..], libc::SCHED_OTHER, true),
    ] {
        let mut live = start_live(None, "lo", port, extra);
        let pid = live.proc.pid();
        wait_until(
            &format!("policy {want} with {extra:?}"),
            Duration::from_secs(5),
            || policy_of(pid) == want,
        );
        live.proc.signal(libc::SIGTERM);
        let f = live.proc.finish(Duration::from_secs(10));
        assert_eq!(f.status.code(), Some(0), "{extra:?}: {}", f.stderr);
        assert_eq!(
            f.stderr.contains("consumer runs at normal priority"),
            note,
            "{extra:?}: {}",
            f.stderr
        );
    }
}

/// A host whose CPUs are all busy at normal priority starves a SCHED_IDLE consumer: the
/// guard must raise it so that nothing is lost, every order is matched, and signals are
/// still answered promptly.
#[test]
fn yielding_consumer_on_a_saturated_host_loses_nothing() {
    require_root("yielding_consumer_on_a_saturated_host_loses_nothing");
    let _g = serial();
    let hogs = CpuHogs::start();
    let orders = 4000u64;
    let r = run_scenario(&RunSpec {
        label: "saturated host",
        exchange_args: &["--ack-delay", "fixed:20us", "--fill-delay", "fixed:10us"],
        client_args: &["--sessions", "2", "--rate", "2000", "--count", "4000"],
        // The hogs starve the simulator too (its answers took > 0.5 s at times, with TCP
        // retransmissions on lo): those are real latencies, not timeouts to count.
        live_args: &["-t", "30"],
        ..RunSpec::default()
    });
    let s = &r.summary;
    for (name, want) in [
        ("requests", orders),
        ("matched", orders),
        ("unmatched_responses", 0),
        ("timed_out", 0),
        ("tcp_gaps", 0),
    ] {
        assert_eq!(counter(s, name), want, "counter {name}: {}", s["counters"]);
    }
    for name in ["kernel_ring_drops_request", "kernel_ring_drops_response"] {
        assert_eq!(source(s, name), 0, "{name}: {}", s["source"]);
    }
    assert!(
        source(s, "consumer_raises") >= 1,
        "a starved SCHED_IDLE consumer must have been raised: {}",
        s["source"]
    );

    // Idle and starved: SIGTERM must still end the run promptly (the guard raises an
    // overdue consumer within MAX_LAG + GUARD_PERIOD; SCHED_IDLE alone can wait seconds).
    let mut live = start_live(None, "lo", free_port(), &["--json"]);
    std::thread::sleep(Duration::from_millis(500));
    let t0 = Instant::now();
    live.proc.signal(libc::SIGTERM);
    let f = live.proc.finish(Duration::from_secs(10));
    let took = t0.elapsed();
    drop(hogs);
    assert_eq!(f.status.code(), Some(0), "{}", f.stderr);
    assert!(
        took < Duration::from_secs(2),
        "SIGTERM answered after {took:?} on a saturated host"
    );
    let (_, summary) = parse_report(&f.stdout);
    assert_eq!(
        source(&summary, "kernel_records"),
        0,
        "{}",
        summary["source"]
    );
}

/// `-c N` names a CPU of the host, even one outside the affinity mask fixscope was started
/// with (`taskset -c 0 fixscope live -c 1` is how the split layout of BENCHMARKS.md §4c
/// runs): the consumer thread is pinned there and the run ends normally.
#[test]
fn cpu_flag_accepts_a_host_cpu_outside_the_start_mask() {
    require_root("cpu_flag_accepts_a_host_cpu_outside_the_start_mask");
    let _g = serial();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        panic!(
            "\n\n!!!!!!!! cpu_flag_accepts_a_host_cpu_outside_the_start_mask NEEDS 2 CPUS \
             (this host has {cpus}) !!!!!!!!\n"
        );
    }
    let port = free_port().to_string();
    let mut cmd = std::process::Command::new("taskset");
    cmd.args(["-c", "0", BIN, "live", "-i", "lo", "-p", &port])
        .args(["-c", "1", "--duration", "0.5", "--json"]);
    let out = cmd.output().expect("run taskset (util-linux)");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("fixscope: watching lo"), "{err}");
}

/// No slow order vanishes from the percentiles: the exchange holds 1% of the orders for
/// 2 s (`--stall 1%:2s`) while `fixscope live` runs with default flags (`-t 0.5`, `-x
/// 10000`). Every held order is in the count, the percentiles and the max, counted
/// `timed_out` when 0.5 s passed and `late` when answered; nothing unmatched.
#[test]
fn orders_answered_seconds_late_are_in_the_percentiles_and_the_max() {
    require_root("orders_answered_seconds_late_are_in_the_percentiles_and_the_max");
    let _g = serial();
    let r = run_scenario(&RunSpec {
        label: "stall",
        exchange_args: &["--stall", "1%:2s"],
        client_args: &["--sessions", "2", "--rate", "1000", "--count", "2000"],
        ..RunSpec::default()
    });
    assert_eq!(r.truth.len(), 2000, "the exchange saw every order");
    let hold_ns =
        |t: &fixscope_sim::truth::TruthRecord| t.ack_ns.expect("every order acked") - t.request_ns;
    let held = r
        .truth
        .iter()
        .filter(|t| hold_ns(t) >= 2_000_000_000)
        .count();
    assert_eq!(held, 20, "1% of 2,000 orders held for 2 s");
    let longest_hold = r.truth.iter().map(hold_ns).max().unwrap_or(0);

    let first = stage(&r.summary, "first_response");
    assert_eq!(first["count"].as_u64(), Some(2000), "every order measured");
    let max = first["max_ns"].as_u64().expect("max");
    // The wire sees the request before the exchange reads it and the ack after it is
    // written: the max is the longest hold plus the kernel's path, never less.
    assert!(
        max >= longest_hold && max - longest_hold < 5_000_000,
        "max {max} ns vs longest hold {longest_hold} ns"
    );
    // 20 of 2,000 are held: p99.9 (the 1,998th value) is a held order's.
    let p999 = first["p99_9_ns"].as_u64().expect("p99.9 in range");
    assert!(p999 >= 2_000_000_000, "p99.9 {p999}");
    let ack = stage(&r.summary, "ack");
    assert_eq!(ack["count"].as_u64(), Some(2000));
    assert!(ack["max_ns"].as_u64() >= Some(longest_hold));

    assert_eq!(counter(&r.summary, "matched"), 2000);
    assert_eq!(
        counter(&r.summary, "timed_out"),
        20,
        "each held order past -t"
    );
    assert_eq!(counter(&r.summary, "late"), 20, "and answered after it");
    assert_eq!(counter(&r.summary, "unanswered"), 0);
    assert_eq!(counter(&r.summary, "unmatched_responses"), 0);
    // The alert reached the interval lines while the orders were held, not at the end.
    let alerted_early = r.intervals.iter().any(|i| {
        i["delta"]["timed_out"].as_u64().unwrap_or(0) > 0
            && i["counters"]["late"].as_u64() < Some(20)
    });
    assert!(
        alerted_early,
        "timed_out shown in an interval before the answers"
    );
    // Every interval line but the last partial one (the summary follows it) carries the
    // kernel's counters, rising as records arrive.
    let (_, full) = r.intervals.split_last().expect("intervals");
    let records: Vec<u64> = full
        .iter()
        .map(|i| {
            i["source"]["kernel_records"]
                .as_u64()
                .expect("kernel_records")
        })
        .collect();
    assert!(
        records.windows(2).all(|w| w[0] <= w[1]) && records.last() > Some(&0),
        "{records:?}"
    );
}

/// A consumer far behind at the stop — here fixscope is frozen (SIGSTOP) while all the
/// orders go by and stopped while frozen — still reports every order it captured: after a
/// stop it detaches and drains its rings to the end, where it used to drain for 50 ms and
/// silently leave the rest out of the summary (up to 4% of the requests in §4b's runs).
#[test]
fn a_stop_while_far_behind_still_reports_every_captured_order() {
    require_root("a_stop_while_far_behind_still_reports_every_captured_order");
    let _g = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut exchange = start_exchange(None, "127.0.0.1:0", &dir.path().join("ex.csv"), &[]);
    // Rings large enough for the whole backlog (fixscope reads none of it before the stop).
    let mut live = start_live(
        None,
        "lo",
        exchange.addr.port(),
        &["--json", "-r", "0", "--ring-mb", "256"],
    );
    let orders = 100_000u64;
    live.proc.signal(libc::SIGSTOP);
    run_client(
        None,
        &exchange,
        &["--sessions", "2", "--rate", "50000", "--count", "100000"],
        Duration::from_secs(60),
    );
    // The stop is pending while fixscope is frozen with every order still in its rings.
    live.proc.signal(libc::SIGINT);
    live.proc.signal(libc::SIGCONT);
    let f = live.proc.finish(Duration::from_secs(30));
    exchange.proc.signal(libc::SIGINT);
    exchange.proc.finish(Duration::from_secs(10));
    assert_eq!(f.status.code(), Some(0), "{}", f.stderr);
    let (_, s) = parse_report(&f.stdout);
    for name in ["kernel_ring_drops_request", "kernel_ring_drops_response"] {
        assert_eq!(source(&s, name), 0, "{name}: {}", s["source"]);
    }
    assert_eq!(source(&s, "unread_records_at_exit"), 0, "{}", s["source"]);
    for (name, want) in [("requests", orders), ("matched", orders), ("tcp_gaps", 0)] {
        assert_eq!(counter(&s, name), want, "counter {name}: {}", s["counters"]);
    }
}
