//! End to end: `fixscope live --breakdown` against the simulator's exchange truth (#13).
//!
//! The exchange's truth file holds, per order, the monotonic time right after the read()
//! that returned the request's last byte (`request_ns`) and just before the write() of the
//! ack (`ack_ns`): `ack_ns - request_ns` is the exchange's own view of `app` (read return →
//! write entry). fixscope's `app` must match it within max(2 µs, 5%) at p50 and p99; every
//! order's `wire_to_read`, `app` and `write_to_wire` must be recorded (none negative, none
//! missing unless the kernel counted socket calls it did not let our hooks record:
//! `breakdown_recursion_misses`, `breakdown_ring_drops`) and sum exactly to its
//! `first_response` (checked on the slowest orders, which carry their breakdown). On lo and over a veth pair between namespaces; the client
//! sends a window of orders back to back with every order split over two write() calls,
//! so the exchange reads several messages per read, reads span messages, and writes carry
//! several responses.
//!
//! Needs root (BPF, namespaces) and the kernel half of `--breakdown` (socket-call events):
//! without it, the tests fail loudly.

mod support;
#[allow(unused_imports)]
mod support_live;

use serde_json::Value;
use support_live::*;

/// max(2 µs, 5%) of the truth's figure.
fn within(truth_ns: u64, got_ns: u64) -> bool {
    let tol = (truth_ns / 20).max(2_000);
    got_ns.abs_diff(truth_ns) <= tol
}

/// Under QEMU's TCG (`make test-kernel` sets FIXSCOPE_TEST_EMULATED_CPU=1) the time
/// between the kernel's hook and the exchange's own clock read is not a few hundred ns of
/// syscall return but whatever the emulated CPU and the guest's scheduler make it: on
/// PREEMPT_RT a preemption there costs hundreds of µs (6.1-rt: app p99 5.31 ms against the
/// exchange's 4.69 ms, p50 +13.6 µs). There the percentile is held to the exchange's own
/// brackets instead ([`check_app_brackets`], exact on any CPU); on real CPUs to [`within`]
/// as well.
fn emulated() -> bool {
    std::env::var_os("FIXSCOPE_TEST_EMULATED_CPU").is_some_and(|v| v == "1")
}

fn quantile(sorted: &[u64], q: f64) -> u64 {
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

fn stage<'a>(summary: &'a Value, name: &str) -> &'a Value {
    summary["stages"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["stage"] == name))
        .unwrap_or_else(|| panic!("stage {name} missing from the summary: {summary}"))
}

fn source(summary: &Value, name: &str) -> u64 {
    summary["source"][name]
        .as_u64()
        .unwrap_or_else(|| panic!("source counter {name} missing: {}", summary["source"]))
}

fn counter(summary: &Value, name: &str) -> u64 {
    summary["counters"][name]
        .as_u64()
        .unwrap_or_else(|| panic!("counter {name} missing: {}", summary["counters"]))
}

/// The checks every scenario shares.
fn check_breakdown(r: &RunResult) {
    let s = &r.summary;
    let matched = counter(s, "matched");
    assert!(matched >= 500, "[{}] matched {matched}", r.label);
    // Every order without a breakdown is accounted for by a socket call the kernel counted
    // as not recorded: a run of one of our hooks skipped by the kernel's recursion guard
    // (preemptible and PREEMPT_RT kernels, where a task preempted inside our program makes
    // the hook skip the other tasks of its CPU) or a full ring. One lost call costs at most
    // the orders in flight on its connection (the client's window), so
    // missing <= WINDOW x (misses + ring drops); and none missing when the kernel counted
    // nothing lost — on every kernel, emulated or not.
    let missing = counter(s, "breakdown_missing");
    let lost_calls = source(s, "breakdown_recursion_misses") + source(s, "breakdown_ring_drops");
    eprintln!(
        "[{}] breakdown_missing {missing}, breakdown_recursion_misses {}, breakdown_ring_drops {}, \
         breakdown_skipped {}",
        r.label,
        source(s, "breakdown_recursion_misses"),
        source(s, "breakdown_ring_drops"),
        source(s, "breakdown_skipped")
    );
    assert!(
        missing <= WINDOW * lost_calls,
        "[{}] {missing} orders without a breakdown, but the kernel counted only {lost_calls} \
         socket calls lost (recursion misses + ring drops; each costs at most {WINDOW} orders)\n\
         counters: {}\nsource: {}",
        r.label,
        s["counters"],
        s["source"]
    );
    assert_eq!(
        counter(s, "breakdown_orders") + missing + counter(s, "breakdown_negative"),
        matched,
        "[{}] every matched order has a breakdown or is counted missing (or negative)",
        r.label
    );
    assert_eq!(
        counter(s, "breakdown_negative"),
        0,
        "[{}] {}",
        r.label,
        s["counters"]
    );
    let orders = counter(s, "breakdown_orders");
    for name in ["wire_to_read", "app", "write_to_wire"] {
        assert_eq!(stage(s, name)["count"], orders, "[{}] {name}", r.label);
    }
    // Batching happened: fewer socket calls than FIX messages of orders.
    let (requests, responses) = (counter(s, "requests"), counter(s, "responses"));
    assert!(
        counter(s, "breakdown_calls") < requests + responses,
        "[{}] no batched reads or writes: {} calls for {requests} requests and {responses} responses",
        r.label,
        counter(s, "breakdown_calls")
    );
    // Exact sums, order by order, on the orders that carry their breakdown.
    let slow = s["slowest"]["first_response"].as_array().expect("slowest");
    assert!(!slow.is_empty(), "[{}] no slowest orders", r.label);
    for o in slow {
        let b = &o["breakdown"];
        let part = |n: &str| b[n].as_u64().unwrap_or_else(|| panic!("{n} null: {o}"));
        assert_eq!(
            part("wire_to_read") + part("app") + part("write_to_wire"),
            o["latency_ns"].as_u64().unwrap(),
            "[{}] stages must sum to first_response: {o}",
            r.label
        );
    }
    // Per order, on the orders that carry their breakdown (the slowest): the exchange took
    // `request_ns` after its read returned and `ack_ns` before its write (a batched write
    // may start later still), so fixscope's read → write brackets the truth's: never
    // shorter (2 µs of clock slack). Keys are unique per run.
    for o in slow {
        let key = o["key"].as_str().expect("key");
        let t = r
            .truth
            .iter()
            .find(|t| t.clordid == key)
            .unwrap_or_else(|| panic!("[{}] order {key} not in the truth", r.label));
        let want = t.ack_ns.expect("acked") - t.request_ns;
        let got = o["breakdown"]["app"].as_u64().expect("app");
        assert!(
            got + 2_000 >= want,
            "[{}] order {key}: app {got} ns shorter than the exchange's own {want} ns",
            r.label
        );
    }
    check_app_brackets(r, missing);
    // `app` against the exchange's own read → write, at p50 and p99.
    let mut truth: Vec<u64> = r
        .truth
        .iter()
        .filter_map(|t| Some(t.ack_ns? - t.request_ns))
        .collect();
    truth.sort_unstable();
    let app = stage(s, "app");
    for (q, field) in [(0.5, "p50_ns"), (0.99, "p99_ns")] {
        let want = quantile(&truth, q);
        let got = app[field].as_u64().expect("app percentile");
        eprintln!(
            "[{}] app {field}: fixscope {got} ns, exchange truth {want} ns ({:+} ns)",
            r.label,
            got as i64 - want as i64
        );
        assert!(
            emulated() || within(want, got),
            "[{}] app {field} {got} ns vs the exchange's {want} ns: beyond max(2 µs, 5%)",
            r.label
        );
    }
}

/// `app` against the exchange's brackets of its own syscalls, exact on any CPU: fixscope's
/// read hook fires inside the read() (after `read_call_ns`, before `request_ns`) and its
/// write hook at the entry of the write() carrying the ack's first byte (after `ack_ns`
/// unless that write was partial, before `ack_written_ns`), so each order's `app` lies in
/// [ack_ns - request_ns, ack_written_ns - read_call_ns] (2 µs of clock slack) — however
/// long the exchange was preempted between a hook and its own clock read. Checked per order
/// on the slowest (which carry their breakdown) and on the summary's p50/p99: a quantile of
/// per-order values each inside its bracket lies between the brackets' quantiles, ranks
/// shifted by the `missing` orders fixscope could not break down.
fn check_app_brackets(r: &RunResult, missing: u64) {
    const SLACK: u64 = 2_000;
    let brackets: Vec<(&str, u64, u64)> = r
        .truth
        .iter()
        .filter_map(|t| {
            let lo = t.ack_ns? - t.request_ns;
            let hi = t.ack_written_ns? - t.read_call_ns.expect("the exchange's read_call_ns");
            Some((t.clordid.as_str(), lo, hi))
        })
        .collect();
    let s = &r.summary;
    for o in s["slowest"]["first_response"].as_array().expect("slowest") {
        let key = o["key"].as_str().expect("key");
        let &(_, lo, hi) = brackets
            .iter()
            .find(|b| b.0 == key)
            .unwrap_or_else(|| panic!("[{}] order {key} not in the truth", r.label));
        let got = o["breakdown"]["app"].as_u64().expect("app");
        assert!(
            got + SLACK >= lo && got <= hi + SLACK,
            "[{}] order {key}: app {got} ns outside the exchange's [{lo}, {hi}] ns",
            r.label
        );
    }
    let mut lo: Vec<u64> = brackets.iter().map(|b| b.1).collect();
    let mut hi: Vec<u64> = brackets.iter().map(|b| b.2).collect();
    lo.sort_unstable();
    hi.sort_unstable();
    let app = stage(s, "app");
    let n = app["count"].as_u64().expect("app count") as usize;
    assert!(
        n > 0 && n + missing as usize <= lo.len(),
        "[{}] app count {n}",
        r.label
    );
    let hdr = |v: u64| v / 1000 + 1; // HDR histogram: 3 significant digits
    for (q, field) in [(0.5, "p50_ns"), (0.99, "p99_ns")] {
        let got = app[field].as_u64().expect("app percentile");
        // fixscope's rank among its n orders; the missing ones may sit anywhere.
        let k = ((q * n as f64).ceil() as usize).clamp(1, n) - 1;
        let (want_lo, want_hi) = (lo[k], hi[(k + missing as usize).min(hi.len() - 1)]);
        eprintln!(
            "[{}] app {field}: fixscope {got} ns within the exchange's brackets [{want_lo}, \
             {want_hi}] ns",
            r.label
        );
        assert!(
            got + SLACK + hdr(want_lo) >= want_lo && got <= want_hi + SLACK + hdr(want_hi),
            "[{}] app {field} {got} ns outside the exchange's brackets [{want_lo}, {want_hi}] ns",
            r.label
        );
    }
}

const EXCHANGE: &[&str] = &[
    "--ack-delay",
    "lognormal:80us,0.4",
    "--fill-delay",
    "uniform:20us-60us",
];
/// The client's window: orders in flight per session, so the most orders one socket call
/// (a read of requests, a write of responses) can carry.
const WINDOW: u64 = 8;
const CLIENT: &[&str] = &[
    "--sessions",
    "2",
    "--window",
    "8",
    "--count",
    "1500",
    "--split-clordid",
];

#[test]
fn breakdown_on_lo_matches_the_exchange_truth() {
    require_root("breakdown_on_lo_matches_the_exchange_truth");
    let _g = serial();
    let r = run_scenario(&RunSpec {
        label: "breakdown lo",
        exchange_args: EXCHANGE,
        client_args: CLIENT,
        live_args: &["--breakdown"],
        ..RunSpec::default()
    });
    check_breakdown(&r);
}

#[test]
fn breakdown_over_veth_matches_the_exchange_truth() {
    require_root("breakdown_over_veth_matches_the_exchange_truth");
    let _g = serial();
    let net = NetnsPair::create(13);
    let listen = format!("{}:0", net.ip_a);
    let r = run_scenario(&RunSpec {
        label: "breakdown veth",
        listen: &listen,
        iface: &net.veth_a,
        exchange_netns: Some(&net.ns_a),
        live_netns: Some(&net.ns_a),
        client_netns: Some(&net.ns_b),
        exchange_args: EXCHANGE,
        client_args: CLIENT,
        live_args: &["--breakdown"],
    });
    check_breakdown(&r);
    let names = net.names().to_vec();
    drop(net);
    assert!(!Netns::any_listed(&names), "namespaces left: {names:?}");
}

#[test]
fn tolerance_is_two_microseconds_or_five_percent() {
    assert!(within(10_000, 11_999) && !within(10_000, 12_001));
    assert!(within(100_000, 105_000) && !within(100_000, 105_001));
    // The accounting's bound uses the client's window as given to it.
    let w = CLIENT
        .windows(2)
        .find(|a| a[0] == "--window")
        .expect("--window")[1];
    assert_eq!(w.parse::<u64>().unwrap(), WINDOW);
}
