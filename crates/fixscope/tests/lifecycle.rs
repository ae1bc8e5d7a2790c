//! Faults and lifecycle of `fixscope live`, each in network namespaces the test creates
//! (veth between A, where the exchange and fixscope run, and B, the client), so nothing
//! else on the host is touched and nothing else disturbs the counts:
//!
//! - beside someone else's tc filter and TCX program: everyone keeps working, fixscope's
//!   counts are exact, theirs keep counting, and fixscope leaves their hook, filter and
//!   link alone — also `fixscope detach` after a SIGKILL, which removes only ours;
//! - SIGINT (the existing tests cover SIGTERM, SIGKILL and --duration on lo): exit 0, a
//!   summary, nothing left (program ids freed, no link, no filter, nothing in /sys/fs/bpf);
//! - two fixscope instances on one interface: with TCX both measure every order; with tc
//!   filters the second is refused clearly and the first measures on;
//! - ring overflow (a 1 MiB ring and the consumer stopped by SIGSTOP while orders flow):
//!   drops counted and warned about, the traffic untouched (the simulator's own counts),
//!   every latency fixscope reports still inside the applications' own timestamps (none
//!   made from a half-lost message), and the orders after the overflow all matched.
//!
//! Needs root (BPF, namespaces) and clang: without them the tests fail loudly.

mod support;
// Not every helper is used here.
#[allow(unused_imports)]
mod support_live;

use std::collections::HashMap;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::mpsc;
use std::time::Duration;

use libbpf_rs::{libbpf_sys, AsRawLibbpf, Link, MapCore, MapFlags, ObjectBuilder, TcHookBuilder};
use support::counter;
use support_live::*;

/// Clock slack between the wire and the applications' timestamps (one clock).
const EPS_NS: u64 = 1_000;

/// Orders from a client in B to the exchange in A; waits for the client to finish.
fn send_orders(net: &NetnsPair, exchange: &Exchange, args: &[&str], truth: Option<&Path>) {
    let mut all = args.to_vec();
    let truth_s;
    if let Some(t) = truth {
        truth_s = t.to_str().expect("utf-8").to_string();
        all.extend(["--truth", &truth_s]);
    }
    run_client(Some(&net.ns_b), exchange, &all, Duration::from_secs(30));
}

/// Stops a live fixscope with `sig` (after it caught up) and returns its summary.
fn stop_live(live: &mut Live, sig: libc::c_int) -> (serde_json::Value, String) {
    let f = stop_live_proc(&mut live.proc, sig);
    (parse_report(&f.stdout).1, f.stderr)
}

fn assert_exact(summary: &serde_json::Value, orders: u64, what: &str) {
    for (name, want) in [
        ("requests", orders),
        ("matched", orders),
        ("timed_out", 0),
        ("tcp_gaps", 0),
        ("unmatched_responses", 0),
    ] {
        assert_eq!(
            counter(summary, name),
            want,
            "{what}: {name}: {}",
            summary["counters"]
        );
    }
    for name in ["kernel_ring_drops_request", "kernel_ring_drops_response"] {
        assert_eq!(source(summary, name), 0, "{what}: {name}");
    }
}

fn in_ns(ns: &str, cmd: &[&str]) -> String {
    let mut all = vec!["netns", "exec", ns];
    all.extend_from_slice(cmd);
    run("ip", &all)
}

fn tc_filters(ns: &str, dev: &str) -> String {
    in_ns(ns, &["tc", "filter", "show", "dev", dev, "ingress"])
        + &in_ns(ns, &["tc", "filter", "show", "dev", dev, "egress"])
}

/// What /sys/fs/bpf holds (fixscope pins nothing; a pin would outlive it).
fn bpffs_entries() -> Vec<String> {
    std::fs::read_dir("/sys/fs/bpf")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

// ---- Someone else's programs ------------------------------------------------------

enum Ask {
    Counts(mpsc::Sender<(u64, u64)>),
    Stop,
}

/// Someone else's tc filter (handle 1, priority 1, on a clsact qdisc it creates) and TCX
/// program on an interface in a namespace, counting ingress packets to the port; held by a
/// thread of this test in that namespace.
struct Neighbour {
    ask: mpsc::Sender<Ask>,
    thread: Option<std::thread::JoinHandle<()>>,
}

fn compile_neighbour(dir: &Path, port: u16) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lifecycle_bpf/other_user.bpf.c");
    let obj = dir.join("other_user.bpf.o");
    let multiarch = format!("-I/usr/include/{}-linux-gnu", std::env::consts::ARCH);
    run(
        "clang",
        &[
            "-g",
            "-O2",
            "-target",
            "bpf",
            "-mcpu=v3",
            &multiarch,
            &format!("-DPORT={port}"),
            "-c",
            src.to_str().expect("utf-8"),
            "-o",
            obj.to_str().expect("utf-8"),
        ],
    );
    obj
}

impl Neighbour {
    fn attach(ns: &str, dev: &str, obj: &Path) -> Neighbour {
        let (ask, asks) = mpsc::channel::<Ask>();
        let (ready_tx, ready) = mpsc::channel::<Result<(), String>>();
        let (ns, dev, obj) = (ns.to_string(), dev.to_string(), obj.to_path_buf());
        let thread = std::thread::spawn(move || {
            let attached = (|| -> Result<_, String> {
                fixscope_testkit::enter_netns(&ns).map_err(|e| e.to_string())?;
                let ifindex = fixscope_live::ifindex_of(&dev).map_err(|e| e.to_string())?;
                let object = ObjectBuilder::default()
                    .open_file(&obj)
                    .and_then(|o| o.load())
                    .map_err(|e| format!("loading {obj:?}: {e}"))?;
                let prog = |name: &str| {
                    object
                        .progs()
                        .find(|p| p.name() == name)
                        .ok_or_else(|| format!("no program {name}"))
                };
                let tc = prog("other_tc")?;
                let mut hook = TcHookBuilder::new(tc.as_fd())
                    .ifindex(ifindex as i32)
                    .replace(false)
                    .handle(1)
                    .priority(1)
                    .hook(libbpf_rs::TC_INGRESS);
                hook.create().map_err(|e| format!("clsact: {e}"))?;
                hook.attach().map_err(|e| format!("tc filter: {e}"))?;
                let tcx = prog("other_tcx")?;
                let opts = libbpf_sys::bpf_tcx_opts {
                    sz: size_of::<libbpf_sys::bpf_tcx_opts>() as libbpf_sys::size_t,
                    ..Default::default()
                };
                // SAFETY: the program is loaded and outlives the call; opts is sized.
                let ptr = unsafe {
                    libbpf_sys::bpf_program__attach_tcx(
                        tcx.as_libbpf_object().as_ptr(),
                        ifindex as i32,
                        &opts,
                    )
                };
                let link = NonNull::new(ptr)
                    .map(|p| {
                        // SAFETY: a non-NULL result is a link we now own.
                        unsafe { Link::from_ptr(p) }
                    })
                    .ok_or_else(|| format!("TCX attach: {}", std::io::Error::last_os_error()))?;
                Ok((object, hook, link))
            })();
            let (object, mut hook, link) = match attached {
                Ok(a) => {
                    ready_tx.send(Ok(())).expect("ready");
                    a
                }
                Err(e) => {
                    ready_tx.send(Err(e)).expect("ready");
                    return;
                }
            };
            let bss = object
                .maps()
                .find(|m| m.name().to_string_lossy().ends_with(".bss"))
                .expect("the .bss map");
            for a in asks {
                match a {
                    Ask::Counts(reply) => {
                        let v = bss
                            .lookup(&0u32.to_ne_bytes(), MapFlags::ANY)
                            .expect("lookup")
                            .expect("a value");
                        let at = |i: usize| u64::from_ne_bytes(v[i..i + 8].try_into().unwrap());
                        let _ = reply.send((at(0), at(8)));
                    }
                    Ask::Stop => break,
                }
            }
            drop(link);
            let _ = hook.detach();
        });
        ready
            .recv_timeout(Duration::from_secs(20))
            .expect("the neighbour thread answers")
            .unwrap_or_else(|e| panic!("someone else's programs: {e}"));
        Neighbour {
            ask,
            thread: Some(thread),
        }
    }

    /// (tc filter hits, TCX program hits) so far.
    fn counts(&self) -> (u64, u64) {
        let (tx, rx) = mpsc::channel();
        self.ask.send(Ask::Counts(tx)).expect("neighbour");
        rx.recv_timeout(Duration::from_secs(5)).expect("counts")
    }
}

impl Drop for Neighbour {
    fn drop(&mut self) {
        let _ = self.ask.send(Ask::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// fixscope with TCX, then with tc filters, beside someone else's tc filter and TCX
/// program on the same hook: every order matched, their counters advance by the same
/// amount (both see every packet), and after fixscope leaves — by SIGTERM, or by SIGKILL
/// and `fixscope detach` — their filter, qdisc and link are still there and counting.
#[test]
fn beside_someone_elses_tc_filter_and_tcx_program() {
    require_root("beside_someone_elses_tc_filter_and_tcx_program");
    require_tool("beside_someone_elses_tc_filter_and_tcx_program", "clang");
    let _g = serial();
    let net = NetnsPair::create(41);
    let ifindex = net.ifindex_a();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut exchange = start_exchange_in_a(&net, dir.path(), &["--ack-delay", "fixed:30us"]);
    let port = exchange.addr.port();
    let obj = compile_neighbour(dir.path(), port);
    let neighbour = Neighbour::attach(&net.ns_a, &net.veth_a, &obj);
    let theirs = tc_filters(&net.ns_a, &net.veth_a);
    assert!(theirs.contains("other_tc"), "{theirs}");

    let orders = 400u64;
    let count = orders.to_string();
    let client = ["--sessions", "2", "--rate", "2000", "--count", &count];
    for attach in ["tcx", "tc"] {
        let before = neighbour.counts();
        let mut live = start_live(
            Some(&net.ns_a),
            &net.veth_a,
            port,
            &["--json", "-r", "0", "--attach", attach],
        );
        send_orders(&net, &exchange, &client, None);
        let (summary, _) = stop_live(&mut live, libc::SIGTERM);
        assert_exact(&summary, orders, attach);
        assert_nothing_left(&live.prog_ids, None, ifindex);
        let after = neighbour.counts();
        let (tc_hits, tcx_hits) = (after.0 - before.0, after.1 - before.1);
        // Orders are batched into segments, so fewer packets than orders; the same
        // packets through every program on the hook.
        let ours = source(&summary, "kernel_requests_in_range");
        assert!(
            tc_hits >= orders / 4 && tc_hits == tcx_hits && tcx_hits == ours,
            "{attach}: packets to the port: {tc_hits} (their tc), {tcx_hits} (their tcx), \
             {ours} (fixscope)"
        );
        let shown = tc_filters(&net.ns_a, &net.veth_a);
        assert!(
            shown.contains("other_tc") && !shown.contains("fxs_"),
            "{attach}: {shown}"
        );
    }

    // SIGKILL with tc filters: ours stay until `fixscope detach`, which leaves theirs.
    let mut live = start_live(
        Some(&net.ns_a),
        &net.veth_a,
        port,
        &["--json", "--attach", "tc"],
    );
    live.proc.signal(libc::SIGKILL);
    let _ = live.proc.finish(Duration::from_secs(5));
    let shown = tc_filters(&net.ns_a, &net.veth_a);
    assert!(
        shown.contains("fxs_ingress") && shown.contains("other_tc"),
        "{shown}"
    );
    let said = in_ns(&net.ns_a, &[BIN, "detach", "-i", &net.veth_a]);
    assert!(said.contains("removed 2 fixscope tc filter(s)"), "{said}");
    let shown = tc_filters(&net.ns_a, &net.veth_a);
    assert!(
        shown.contains("other_tc") && !shown.contains("fxs_"),
        "{shown}"
    );
    let before = neighbour.counts();
    send_orders(&net, &exchange, &["--rate", "1000", "--count", "100"], None);
    let after = neighbour.counts();
    assert!(
        after.0 - before.0 >= 25 && after.1 - before.1 == after.0 - before.0,
        "their programs still count after fixscope left: {before:?} -> {after:?}"
    );
    drop(neighbour);
    exchange.proc.signal(libc::SIGTERM);
    let _ = exchange.proc.finish(Duration::from_secs(10));
}

/// SIGINT (Ctrl-C) mid-traffic, with TCX and with tc filters: exit 0, a summary with the
/// orders seen, and nothing left — program ids freed, no link, no filter, no qdisc we
/// created, nothing pinned in /sys/fs/bpf.
#[test]
fn sigint_mid_traffic_leaves_nothing() {
    require_root("sigint_mid_traffic_leaves_nothing");
    let _g = serial();
    let net = NetnsPair::create(42);
    let ifindex = net.ifindex_a();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut exchange = start_exchange_in_a(&net, dir.path(), &[]);
    let pinned_before = bpffs_entries();
    for attach in ["tcx", "tc"] {
        let mut live = start_live(
            Some(&net.ns_a),
            &net.veth_a,
            exchange.addr.port(),
            &["--json", "-r", "0", "--attach", attach],
        );
        let mut client = spawn_client(
            Some(&net.ns_b),
            &exchange,
            &["--rate", "1000", "--duration", "10"],
        );
        // Let orders flow through the capture for a moment.
        std::thread::sleep(Duration::from_millis(800));
        let (summary, _) = stop_live(&mut live, libc::SIGINT);
        assert!(
            counter(&summary, "requests") > 0,
            "{attach}: {}",
            summary["counters"]
        );
        assert_nothing_left(&live.prog_ids, None, ifindex);
        let shown = tc_filters(&net.ns_a, &net.veth_a);
        assert!(!shown.contains("fxs_"), "{attach}: {shown}");
        let qdiscs = in_ns(&net.ns_a, &["tc", "qdisc", "show", "dev", &net.veth_a]);
        assert!(
            !qdiscs.contains("clsact"),
            "{attach}: the qdisc we created stays: {qdiscs}"
        );
        assert_eq!(
            bpffs_entries(),
            pinned_before,
            "{attach}: /sys/fs/bpf changed"
        );
        client.signal(libc::SIGKILL);
        let _ = client.finish(Duration::from_secs(5));
    }
    exchange.proc.signal(libc::SIGTERM);
    let _ = exchange.proc.finish(Duration::from_secs(10));
}

/// Two fixscope instances on one interface. TCX: both measure every order. tc filters:
/// the second is refused with a message saying why (one fixscope filter per hook), and
/// the first measures every order on.
#[test]
fn two_instances_on_one_interface() {
    require_root("two_instances_on_one_interface");
    let _g = serial();
    let net = NetnsPair::create(43);
    let ifindex = net.ifindex_a();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut exchange = start_exchange_in_a(&net, dir.path(), &["--ack-delay", "fixed:30us"]);
    let port = exchange.addr.port();
    let orders = 400u64;
    let count = orders.to_string();
    let client = ["--sessions", "2", "--rate", "2000", "--count", &count];
    let args = ["--json", "-r", "0", "--attach", "tcx"];

    let mut first = start_live(Some(&net.ns_a), &net.veth_a, port, &args);
    let mut second = start_live(Some(&net.ns_a), &net.veth_a, port, &args);
    send_orders(&net, &exchange, &client, None);
    let (s1, _) = stop_live(&mut first, libc::SIGTERM);
    let (s2, _) = stop_live(&mut second, libc::SIGTERM);
    assert_exact(&s1, orders, "first tcx instance");
    assert_exact(&s2, orders, "second tcx instance");
    assert_nothing_left(&first.prog_ids, None, ifindex);
    assert_nothing_left(&second.prog_ids, None, ifindex);

    let tc = ["--json", "-r", "0", "--attach", "tc"];
    let mut first = start_live(Some(&net.ns_a), &net.veth_a, port, &tc);
    let port_s = port.to_string();
    let out = fixscope_cmd(
        Some(&net.ns_a),
        &[
            "live",
            "-i",
            &net.veth_a,
            "-p",
            &port_s,
            "--attach",
            "tc",
            "--duration",
            "1",
        ],
    )
    .output()
    .expect("second fixscope");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("a fixscope filter is already there"),
        "the second tc instance says why: {err}"
    );
    send_orders(&net, &exchange, &client, None);
    let (s1, _) = stop_live(&mut first, libc::SIGTERM);
    assert_exact(
        &s1,
        orders,
        "the first tc instance after the second was refused",
    );
    assert_nothing_left(&first.prog_ids, None, ifindex);
    assert!(!tc_filters(&net.ns_a, &net.veth_a).contains("fxs_"));
    exchange.proc.signal(libc::SIGTERM);
    let _ = exchange.proc.finish(Duration::from_secs(10));
}

/// A 1 MiB ring, and the consumer stopped (SIGSTOP) for a second while orders flow: the
/// kernel drops records and counts them; the traffic is untouched (the client got every
/// answer); every latency fixscope reports lies inside the applications' own timestamps
/// (so none was made from a half-lost message); and the orders sent after the consumer
/// came back are all matched.
#[test]
fn ring_overflow_counts_drops_leaves_traffic_alone_and_resyncs() {
    require_root("ring_overflow_counts_drops_leaves_traffic_alone_and_resyncs");
    let _g = serial();
    let net = NetnsPair::create(44);
    let dir = tempfile::tempdir().expect("tempdir");
    let (ex_truth, cl_truth, trace) = (
        dir.path().join("exchange.csv"),
        dir.path().join("client.csv"),
        dir.path().join("trace.csv"),
    );
    let mut exchange = start_exchange(
        Some(&net.ns_a),
        &format!("{}:0", net.ip_a),
        &ex_truth,
        &["--ack-delay", "fixed:30us", "--fill-delay", "fixed:20us"],
    );
    let trace_s = trace.to_str().expect("utf-8").to_string();
    let mut live = start_live(
        Some(&net.ns_a),
        &net.veth_a,
        exchange.addr.port(),
        &[
            "--json",
            "-r",
            "0",
            "--ring-mb",
            "1",
            "--priority",
            "normal",
            "--trace",
            &trace_s,
        ],
    );
    let cl_truth_s = cl_truth.to_str().expect("utf-8").to_string();
    let mut client = spawn_client(
        Some(&net.ns_b),
        &exchange,
        &[
            "--sessions",
            "2",
            "--rate",
            "5000",
            "--duration",
            "4",
            "--truth",
            &cl_truth_s,
        ],
    );
    std::thread::sleep(Duration::from_millis(1000));
    live.proc.signal(libc::SIGSTOP);
    std::thread::sleep(Duration::from_millis(1200));
    let resumed_ns = fixscope_live_clock_ns();
    live.proc.signal(libc::SIGCONT);
    let c = client.finish(Duration::from_secs(30));
    assert!(c.status.success(), "client: {}", c.stderr);
    let (summary, stderr) = stop_live(&mut live, libc::SIGTERM);
    exchange.proc.signal(libc::SIGTERM);
    let e = exchange.proc.finish(Duration::from_secs(10));
    assert!(e.status.success(), "{}", e.stderr);

    let drops = source(&summary, "kernel_ring_drops_request")
        + source(&summary, "kernel_ring_drops_response");
    assert!(
        drops > 0,
        "a stopped consumer must overflow a 1 MiB ring: {}",
        summary["source"]
    );
    assert!(stderr.contains("the kernel dropped"), "warned: {stderr}");

    // The traffic is untouched: every order answered, as both applications saw it.
    let truth = fixscope_sim::truth::read_truth(&ex_truth).expect("exchange truth");
    let client_truth = fixscope_sim::truth::read_client_truth(&cl_truth).expect("client truth");
    assert!(truth.len() > 10_000, "orders sent: {}", truth.len());
    assert_eq!(truth.len(), client_truth.len());
    assert!(truth
        .iter()
        .all(|t| t.ack_ns.is_some() && t.fill_ns.is_some()));
    assert!(client_truth
        .iter()
        .all(|c| c.first_ns.is_some() && c.fill_ns.is_some()));

    // Every latency fixscope reports lies inside the applications' timestamps.
    let sessions: HashMap<u64, String> = summary["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|x| {
            (
                x["session"].as_u64().expect("id"),
                x["client"].as_str().expect("client").to_string(),
            )
        })
        .collect();
    let ex: HashMap<(&str, &str), _> = truth
        .iter()
        .map(|t| ((t.session.as_str(), t.clordid.as_str()), t))
        .collect();
    let cl: HashMap<(&str, &str), _> = client_truth
        .iter()
        .map(|c| ((c.session.as_str(), c.clordid.as_str()), c))
        .collect();
    let mut req: HashMap<(String, String), u64> = HashMap::new();
    let mut first: HashMap<(String, String), u64> = HashMap::new();
    for t in read_trace(&trace) {
        let k = (sessions[&t.session].clone(), t.key.clone());
        if t.request {
            req.insert(k, t.ts_ns);
        } else {
            first.entry(k).or_insert(t.ts_ns);
        }
    }
    let (mut checked, mut after_resume, mut after_resume_matched) = (0, 0, 0);
    let mut acks_lost = 0u64;
    let mut wrong = Vec::new();
    // Unmatched orders after the resume, for the failure message: how long after the resume
    // (drops still going on while the consumer catches up, or framing lost?).
    let mut unmatched = Vec::new();
    for (k, &rq) in &req {
        let key = (k.0.as_str(), k.1.as_str());
        let (t, c) = (ex[&key], cl[&key]);
        if t.request_ns > resumed_ns + 200_000_000 {
            after_resume += 1;
        }
        let Some(&rs) = first.get(k) else {
            if t.request_ns > resumed_ns + 200_000_000 {
                unmatched.push(format!(
                    "{k:?}: sent {} ms after the resume",
                    (t.request_ns - resumed_ns) / 1_000_000
                ));
            }
            continue;
        };
        if t.request_ns > resumed_ns + 200_000_000 {
            after_resume_matched += 1;
        }
        checked += 1;
        let (send, got) = (c.send_ns.expect("send"), c.first_ns.expect("first"));
        let ack = t.ack_ns.expect("ack");
        assert!(
            send <= rq + EPS_NS && rq <= t.request_ns + EPS_NS,
            "{k:?}: wire request {rq} outside [client write {send}, exchange read {}]",
            t.request_ns
        );
        // The ack lost in a hole of the capture: the first response fixscope saw is the
        // fill, and it must not be measured as the order's first response (checked below
        // with `answered_after_capture_hole`).
        let (fill, got_fill) = (t.fill_ns.expect("fill"), c.fill_ns.expect("fill read"));
        let ack_lost = rs > got + EPS_NS && fill <= rs + EPS_NS && rs <= got_fill + EPS_NS;
        if ack_lost {
            acks_lost += 1;
        } else if !(ack <= rs + EPS_NS && rs <= got + EPS_NS) {
            // The exchange stamps a message before the write() that sent its LAST byte:
            // after a partial write (socket full) its first byte left earlier.
            wrong.push(format!(
                "{k:?}: wire first response {rs} outside [exchange write {ack}, client read \
                 {got}]: +{} µs / -{} µs (exchange read the order at {})",
                (rs - got.min(rs)) / 1000,
                (ack - ack.min(rs)) / 1000,
                t.request_ns
            ));
        }
    }
    let counter = |name: &str| support::counter(&summary, name);
    let after_hole = counter("answered_after_capture_hole");
    eprintln!(
        "ring overflow: {drops} records dropped, {} of {} orders traced, {checked} latencies \
         checked ({acks_lost} whose ack was lost: {after_hole} orders answered after a \
         capture hole, unmeasured), {after_resume_matched}/{after_resume} orders after the \
         resume matched",
        req.len(),
        truth.len()
    );
    // An order whose ack the capture lost is never measured by its fill: it is counted
    // `answered_after_capture_hole`, not `matched` (every order it counts waited across a
    // hole, so there may be more of them than acks lost).
    assert!(
        after_hole >= acks_lost,
        "{acks_lost} orders' first response seen was their fill, only {after_hole} counted \
         answered_after_capture_hole"
    );
    assert_eq!(
        counter("requests"),
        counter("matched")
            + counter("response_before_request")
            + after_hole
            + counter("unanswered"),
        "every order in one count: {}",
        summary["counters"]
    );
    // No latency made from a half-lost exchange (e.g. bytes held behind a capture hole and
    // stamped with the time the hole was given up instead of their own).
    assert!(
        wrong.is_empty(),
        "{} of {checked} latencies lie outside the applications' own timestamps, e.g.:\n{}",
        wrong.len(),
        wrong[..wrong.len().min(5)].join("\n")
    );
    assert!(
        after_resume > 1000,
        "orders after the resume: {after_resume}"
    );
    assert_eq!(
        after_resume_matched,
        after_resume,
        "every order after the resume matched; unmatched: {:?}",
        &unmatched[..unmatched.len().min(5)]
    );
}

/// CLOCK_MONOTONIC now (the clock of the truth files and of bpf_ktime_get_ns).
fn fixscope_live_clock_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
