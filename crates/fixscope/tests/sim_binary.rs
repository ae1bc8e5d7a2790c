//! `fixscope sim exchange|client --protocol ouch42|ouch50|ilink3` measured by `fixscope live
//! --protocol PORT=...` on lo, against the simulator's own ground truth. The exchange and
//! the client run in-process (fixscope_sim::run_exchange/run_client on threads), 2
//! sessions of 100 orders each, acked after 200 µs and filled 300 µs later. fixscope must
//! match every order, and each order's wire ack latency (its `--trace` request row to the
//! first response row of the same key and session) must lie inside what the two ends
//! measured around their syscalls: no shorter than the exchange's read() return to its
//! write() call (less a little clock slack), no longer than the client's write() call to
//! its read() return. The session table names both logical sessions as the protocol does.
//!
//! Needs root (BPF): without it the test fails loudly.

mod support;
#[allow(unused_imports)]
mod support_live;

use std::collections::HashMap;
use std::path::Path;

use fixscope_sim::truth::{read_client_truth, read_truth};
use fixscope_sim::{run_client, run_exchange, ClientArgs, ExchangeArgs, Shutdown};
use serde_json::Value;
use support::{counter, stage};
use support_live::*;

const SESSIONS: usize = 2;
const ORDERS_PER_SESSION: usize = 100;
const ORDERS: usize = SESSIONS * ORDERS_PER_SESSION;
/// Clock slack on the lower bound: the TC hook's bpf_ktime_get_ns against the vDSO's
/// CLOCK_MONOTONIC (as the FIX live tests allow).
const EPS_NS: u64 = 1_000;

/// What fixscope's session table must name the two sessions: (sender, target).
fn expected_names(protocol: &str, s: &Value) -> Vec<(String, String)> {
    let mut names: Vec<(String, String)> = match protocol {
        "ilink3" => s["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| {
                // iLink 3: firm, and the session's UUID (its own per session).
                let uuid = x["target_comp_id"].as_str().unwrap_or("").to_string();
                assert!(
                    uuid.parse::<u64>().is_ok_and(|u| u > 0),
                    "an iLink 3 session is named by its UUID: {x}"
                );
                ("SIMFM".to_string(), uuid)
            })
            .collect(),
        _ => (1..=SESSIONS)
            .map(|i| (format!("SIM{i:03}"), "SIMSESS001".to_string()))
            .collect(),
    };
    names.sort();
    names
}

fn run(protocol: &str) {
    run_named(protocol, true)
}

/// `named`: `live --protocol PORT=NAME`; else nothing named, the protocol (and OUCH's
/// version) recognised from the sessions' own first bytes.
fn run_named(protocol: &str, named: bool) {
    require_root("sim --protocol live");
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let (ex_truth, cl_truth, trace) = (path("exchange.csv"), path("client.csv"), path("trace.csv"));

    let ex_args = ExchangeArgs::from_flags([
        "--protocol",
        protocol,
        "--listen",
        "127.0.0.1:0",
        "--ack-delay",
        "fixed:200us",
        "--fill-delay",
        "fixed:300us",
        "--truth",
        &ex_truth,
    ])
    .unwrap();
    let stop = Shutdown::new();
    let (tx, rx) = std::sync::mpsc::channel();
    let exchange = {
        let stop = stop.clone();
        std::thread::spawn(move || run_exchange(&ex_args, &stop, |a| tx.send(a).unwrap()))
    };
    let addr = rx.recv().expect("the exchange listens");
    let ports = format!("{}={protocol}", addr.port());
    let mut flags = vec!["--json", "--trace", &trace];
    if named {
        flags.extend(["--protocol", &ports]);
    }
    let mut live = start_live(None, "lo", addr.port(), &flags);

    let count = ORDERS.to_string();
    let sessions = SESSIONS.to_string();
    let connect = addr.to_string();
    let cl_args = ClientArgs::from_flags([
        "--protocol",
        protocol,
        "--connect",
        &connect,
        "--sessions",
        &sessions,
        "--count",
        &count,
        "--rate",
        "2000",
        "--truth",
        &cl_truth,
    ])
    .unwrap();
    let report = run_client(&cl_args, &Shutdown::new()).expect("client");
    assert_eq!(
        (report.sent, report.acks, report.filled_orders),
        (ORDERS as u64, ORDERS as u64, ORDERS as u64),
        "[{protocol}] {report}"
    );
    let done = stop_live_proc(&mut live.proc, libc::SIGINT);
    stop.trigger();
    let summary = exchange.join().unwrap().expect("exchange");
    assert_eq!(summary.orders, ORDERS as u64, "[{protocol}] {summary}");

    let (_, s) = parse_report(&done.stdout);
    for (name, want) in [
        ("requests", ORDERS as u64),
        ("matched", ORDERS as u64),
        ("unmatched_responses", 0),
        ("pending", 0),
    ] {
        assert_eq!(
            counter(&s, name),
            want,
            "[{protocol}] {name}: {}",
            s["counters"]
        );
    }
    assert_eq!(source(&s, "kernel_ring_drops_request"), 0);
    assert_eq!(source(&s, "kernel_ring_drops_response"), 0);
    assert_eq!(stage(&s, "ack")["count"], ORDERS as u64);
    assert_eq!(stage(&s, "fill")["count"], ORDERS as u64);

    // The session table: both logical sessions, named as the protocol names them.
    let table = s["sessions"].as_array().expect("sessions");
    assert_eq!(table.len(), SESSIONS, "[{protocol}] {table:?}");
    let mut named: Vec<(String, String)> = table
        .iter()
        .map(|x| {
            let text = |k: &str| x[k].as_str().unwrap_or("").to_string();
            (text("sender_comp_id"), text("target_comp_id"))
        })
        .collect();
    named.sort();
    assert_eq!(
        named,
        expected_names(protocol, &s),
        "[{protocol}] {table:?}"
    );
    let shown = match protocol {
        "ouch42" => "OUCH 4.2",
        "ouch50" => "OUCH 5.0",
        _ => "iLink 3",
    };
    for x in table {
        assert_eq!(x["begin_string"], shown, "[{protocol}] {x}");
        assert_eq!(x["requests"], ORDERS_PER_SESSION as u64, "[{protocol}] {x}");
    }

    check_orders(protocol, &s, Path::new(&trace), &ex_truth, &cl_truth);
}

/// Every order's wire ack latency inside [exchange's, client's] (joined by session and key).
fn check_orders(protocol: &str, s: &Value, trace: &Path, ex_truth: &str, cl_truth: &str) {
    let exchange = read_truth(ex_truth).expect("exchange truth");
    let client = read_client_truth(cl_truth).expect("client truth");
    assert_eq!(
        (exchange.len(), client.len()),
        (ORDERS, ORDERS),
        "[{protocol}] truth rows"
    );
    // fixscope's session ids → the client's ip:port, the truth files' session.
    let peers: HashMap<u64, String> = s["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["session"].as_u64().expect("session id"),
                x["client"].as_str().expect("client").to_string(),
            )
        })
        .collect();
    let mut request: HashMap<(String, String), u64> = HashMap::new();
    let mut response: HashMap<(String, String), u64> = HashMap::new();
    for row in read_trace(trace) {
        let peer = peers
            .get(&row.session)
            .unwrap_or_else(|| panic!("[{protocol}] trace session {} unknown", row.session));
        let k = (peer.clone(), row.key.clone());
        if row.request {
            assert!(
                request.insert(k, row.ts_ns).is_none(),
                "[{protocol}] {} traced twice",
                row.key
            );
        } else {
            response.entry(k).or_insert(row.ts_ns);
        }
    }
    assert_eq!(
        request.len(),
        ORDERS,
        "[{protocol}] one traced request per order"
    );
    let client: HashMap<(String, String), _> = client
        .iter()
        .map(|c| ((c.session.clone(), c.clordid.clone()), c))
        .collect();
    let code = if protocol == "ilink3" { "514" } else { "O" };
    for e in &exchange {
        let k = (e.session.clone(), e.clordid.clone());
        assert_eq!(e.msg_type, code, "[{protocol}] {e:?}");
        let c = client
            .get(&k)
            .unwrap_or_else(|| panic!("[{protocol}] {k:?} not in the client's truth"));
        let rq = *request
            .get(&k)
            .unwrap_or_else(|| panic!("[{protocol}] fixscope never saw {k:?}"));
        let rs = *response
            .get(&k)
            .unwrap_or_else(|| panic!("[{protocol}] fixscope saw no response to {k:?}"));
        let wire = rs - rq;
        let lower = e.ack_ns.expect("exchange ack_ns") - e.request_ns;
        let upper = c.ack_ns.expect("client ack_ns") - c.send_ns.expect("client send_ns");
        assert!(
            wire + EPS_NS >= lower && wire <= upper,
            "[{protocol}] {k:?}: wire ack {wire} ns outside [exchange {lower} ns, client {upper} ns]"
        );
        assert!(lower >= 200_000, "[{protocol}] {e:?}: ack before its delay");
    }
}

#[test]
fn sim_ouch42_orders_lie_inside_the_truth() {
    run("ouch42");
}

#[test]
fn sim_ouch50_orders_lie_inside_the_truth() {
    run("ouch50");
}

#[test]
fn sim_ilink3_orders_lie_inside_the_truth() {
    run("ilink3");
}

/// Live with nothing named: OUCH 5.0 recognised by its SoupBinTCP login and its version read
/// from the first order, every order inside the truth as when named.
#[test]
fn sim_ouch50_recognised_by_its_login_lies_inside_the_truth() {
    run_named("ouch50", false);
}

#[test]
fn sim_ilink3_recognised_by_its_login_lies_inside_the_truth() {
    run_named("ilink3", false);
}
