//! End to end: `fixscope live --breakdown` against the simulator's exchange truth (#13).
//!
//! The exchange's truth file holds, per order, the monotonic time right after the read()
//! that returned the request's last byte (`request_ns`) and just before the write() of the
//! ack (`ack_ns`): `ack_ns - request_ns` is the exchange's own view of `app` (read return →
//! write entry); `read_call_ns` (before that read) and `ack_written_ns` (after that write)
//! bracket it. Every order's `app` is listed (`--slowest` at its maximum) and must lie in
//! its brackets, exactly; fixscope's p50 and p99 must match the exchange's within
//! max(2 µs, 5%), ranks shifted only by the few orders the exchange's clock read was
//! interrupted next to a call ([`check_app_quantiles`]). Every order's `wire_to_read`, `app` and
//! `write_to_wire` must be recorded (none negative, none missing unless the kernel counted
//! socket calls it did not let our hooks record: `breakdown_recursion_misses`,
//! `breakdown_ring_drops`) and sum exactly to its `first_response`. On lo and over a veth
//! pair between namespaces; the client sends a window of orders back to back with every
//! order split over two write() calls, so the exchange reads several messages per read,
//! reads span messages, and writes carry several responses (checked in its truth).
//!
//! Needs root (BPF, namespaces) and the kernel half of `--breakdown` (socket-call events):
//! without it, the tests fail loudly.

mod support;
#[allow(unused_imports)]
mod support_live;

use fixscope_sim::truth::TruthRecord;
use serde_json::Value;
use support_live::*;

/// max(2 µs, 5%) of the truth's figure.
fn tolerance(truth_ns: u64) -> u64 {
    (truth_ns / 20).max(2_000)
}

fn within(truth_ns: u64, got_ns: u64) -> bool {
    got_ns.abs_diff(truth_ns) <= tolerance(truth_ns)
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
    // Batching happened, by the exchange's own account: a read that returned the last
    // bytes of several requests stamped them all with its one `request_ns`, a write that
    // completed several acks them all with its one `ack_ns`.
    let (reads, writes) = (
        shared_stamps(r.truth.iter().map(|t| Some(t.request_ns))),
        shared_stamps(r.truth.iter().map(|t| t.ack_ns)),
    );
    eprintln!(
        "[{}] the exchange's reads of several requests: {reads}, writes of several acks: \
         {writes}; fixscope's socket calls: {} for {} messages",
        r.label,
        counter(s, "breakdown_calls"),
        counter(s, "requests") + counter(s, "responses")
    );
    assert!(
        reads > 0 && writes > 0,
        "[{}] no batched reads ({reads}) or writes ({writes}) in the exchange's truth",
        r.label
    );
    // Exact sums, order by order, on the orders that carry their breakdown. An order
    // without one must be among those counted `breakdown_missing` (on PREEMPT_RT a hook
    // preempted on its CPU makes the kernel skip the same program's next run there — a
    // `recursion_misses` no BPF code can prevent — and that order's call is lost; #47):
    // all three stages absent together, never one of them.
    let slow = s["slowest"]["first_response"].as_array().expect("slowest");
    assert!(!slow.is_empty(), "[{}] no slowest orders", r.label);
    let stages = ["wire_to_read", "app", "write_to_wire"];
    let mut without = 0;
    for o in slow {
        let b = &o["breakdown"];
        if stages.iter().all(|n| b[*n].is_null()) {
            without += 1;
            continue;
        }
        let part = |n: &str| b[n].as_u64().unwrap_or_else(|| panic!("{n} null: {o}"));
        assert_eq!(
            part("wire_to_read") + part("app") + part("write_to_wire"),
            o["latency_ns"].as_u64().unwrap(),
            "[{}] stages must sum to first_response: {o}",
            r.label
        );
    }
    assert!(
        without <= missing + counter(s, "breakdown_negative"),
        "[{}] {without} listed orders have no breakdown, {missing} counted missing",
        r.label
    );
    let per_order = app_per_order(r, orders);
    check_app_brackets(r, &per_order, missing);
    check_app_quantiles(r, &per_order, missing);
}

/// How many timestamps are shared by more than one order (each counted once).
fn shared_stamps(stamps: impl Iterator<Item = Option<u64>>) -> usize {
    let mut seen: std::collections::HashMap<u64, u32> = std::collections::HashMap::new();
    for ts in stamps.flatten() {
        *seen.entry(ts).or_default() += 1;
    }
    seen.values().filter(|&&n| n > 1).count()
}

/// Every broken-down order's `app`, with its truth's brackets: the summary's slowest-by-app
/// list holds them all (`--slowest` at its maximum, [`ORDERS`] no more than it).
fn app_per_order<'a>(r: &'a RunResult, orders: u64) -> Vec<OrderApp<'a>> {
    let truth: std::collections::HashMap<&str, &TruthRecord> =
        r.truth.iter().map(|t| (t.clordid.as_str(), t)).collect();
    let list = r.summary["slowest"]["app"]
        .as_array()
        .unwrap_or_else(|| panic!("[{}] no slowest app list", r.label));
    assert_eq!(
        list.len() as u64,
        orders,
        "[{}] the slowest-by-app list holds every broken-down order",
        r.label
    );
    list.iter()
        .map(|o| {
            let key = o["key"].as_str().expect("key");
            let t = truth
                .get(key)
                .unwrap_or_else(|| panic!("[{}] order {key} not in the truth", r.label));
            let (lo, hi) = app_bracket(t).expect("acked");
            OrderApp {
                key,
                app: o["latency_ns"].as_u64().expect("app"),
                lo,
                hi,
            }
        })
        .collect()
}

/// The exchange's bracket of an acked order's `app`: (`ack_ns - request_ns`,
/// `ack_written_ns - read_call_ns`); None when it was not acked.
fn app_bracket(t: &TruthRecord) -> Option<(u64, u64)> {
    let lo = t.ack_ns? - t.request_ns;
    let hi = t.ack_written_ns? - t.read_call_ns.expect("the exchange's read_call_ns");
    Some((lo, hi))
}

/// One order's `app` by fixscope and the exchange's brackets of it.
struct OrderApp<'a> {
    key: &'a str,
    /// fixscope's: the read's return to the write's entry, by the kernel's hooks.
    app: u64,
    /// The exchange's own `ack_ns - request_ns`: its clock read after the read returned to
    /// its clock read before the write.
    lo: u64,
    /// `ack_written_ns - read_call_ns`: before the read was called to after the write
    /// returned.
    hi: u64,
}

/// At most this share of orders (in %) may differ from the exchange's own clock by more
/// than max(2 µs, 5%) — each of them inside the exchange's brackets (checked); under
/// emulation ([`emulated`]) only the brackets hold. Seen: 0 to
/// 1.6% (quiet, and with two busy loops on the 2 vCPUs); a bias of the hooks moves many
/// (3 µs of bias: 13 to 15%).
const DISTURBED_PERCENT_MAX: u64 = 5;

/// `app` at p50 and p99 against the exchange's own figure, within max(2 µs, 5%).
///
/// The exchange reads its clock right after the read() returns and right before the
/// write(); fixscope's hooks fire inside those calls. Between the two lie a syscall's
/// return or entry, a µs or two — unless something interrupts the exchange there: another
/// task's time slice (on a loaded host), a hypervisor's steal, an interrupt. Then that
/// order's `app` exceeds the exchange's by the interruption: a true figure of the kernel's
/// calls, inside the exchange's brackets (checked per order in [`check_app_brackets`]), yet
/// more than 5% from its clock (seen: 3.5 ms). Such "disturbed" orders are counted (at most
/// [`DISTURBED_PERCENT_MAX`]% of the orders); each may rank above where the exchange's
/// clock puts it, so fixscope's rank-k value is held below the exchange's rank k +
/// disturbed + missing (plus the tolerance), and above its rank k (minus it). With nothing
/// disturbed and nothing missing this is exactly "within max(2 µs, 5%) of the exchange's
/// p50/p99" — which one interrupted batch near the p99 of a sparse tail used to fail.
fn check_app_quantiles(r: &RunResult, per_order: &[OrderApp], missing: u64) {
    let disturbed: Vec<&OrderApp> = per_order.iter().filter(|o| !within(o.lo, o.app)).collect();
    let n = per_order.len();
    let mut excess: Vec<i64> = per_order
        .iter()
        .map(|o| o.app as i64 - o.lo as i64)
        .collect();
    excess.sort_unstable();
    eprintln!(
        "[{}] app per order minus the exchange's: p50 {} ns, p99 {} ns, max {} ns; {} of {n} \
         orders beyond max(2 µs, 5%): {:?}",
        r.label,
        excess[n / 2],
        excess[(n * 99 / 100).min(n - 1)],
        excess[n - 1],
        disturbed.len(),
        disturbed
            .iter()
            .take(8)
            .map(|o| (o.key, o.app, o.lo, o.hi))
            .collect::<Vec<_>>()
    );
    assert!(
        emulated() || disturbed.len() as u64 * 100 <= DISTURBED_PERCENT_MAX * n as u64,
        "[{}] {} of {n} orders differ from the exchange's own clock by more than \
         max(2 µs, 5%)",
        r.label,
        disturbed.len()
    );
    let mut truth: Vec<u64> = r
        .truth
        .iter()
        .filter_map(|t| Some(t.ack_ns? - t.request_ns))
        .collect();
    truth.sort_unstable();
    let app = stage(&r.summary, "app");
    let shift = disturbed.len() + missing as usize;
    for (q, field) in [(0.5, "p50_ns"), (0.99, "p99_ns")] {
        let k = ((q * n as f64).ceil() as usize).clamp(1, n) - 1;
        let want = truth[k];
        let want_hi = truth[(k + shift).min(truth.len() - 1)];
        let got = app[field].as_u64().expect("app percentile");
        eprintln!(
            "[{}] app {field}: fixscope {got} ns, exchange truth {want} ns ({:+} ns; rank \
             {k} + {shift}: {want_hi} ns)",
            r.label,
            got as i64 - want as i64
        );
        assert!(
            emulated() || (got + tolerance(want) >= want && got <= want_hi + tolerance(want_hi)),
            "[{}] app {field} {got} ns vs the exchange's {want} ns (rank {k} + {shift} \
             disturbed or missing orders: {want_hi} ns): beyond max(2 µs, 5%)",
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
fn check_app_brackets(r: &RunResult, per_order: &[OrderApp], missing: u64) {
    const SLACK: u64 = 2_000;
    for o in per_order {
        assert!(
            o.app + SLACK >= o.lo && o.app <= o.hi + SLACK,
            "[{}] order {}: app {} ns outside the exchange's [{}, {}] ns",
            r.label,
            o.key,
            o.app,
            o.lo,
            o.hi
        );
    }
    let brackets: Vec<(u64, u64)> = r.truth.iter().filter_map(app_bracket).collect();
    let s = &r.summary;
    let mut lo: Vec<u64> = brackets.iter().map(|b| b.0).collect();
    let mut hi: Vec<u64> = brackets.iter().map(|b| b.1).collect();
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
/// The run's orders: no more than `--slowest` keeps, so every order's `app` is listed.
const ORDERS: &str = "1000";
const LIVE: &[&str] = &["--breakdown", "--slowest", ORDERS];
const CLIENT: &[&str] = &[
    "--sessions",
    "2",
    "--window",
    "8",
    "--count",
    ORDERS,
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
        live_args: LIVE,
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
        live_args: LIVE,
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
