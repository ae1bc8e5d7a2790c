//! `live --tls-keylog` and `live --tap --tls-keylog` against a real TLS stack: OpenSSL
//! through Python's `ssl` (`tests/interop/tls_fix.py`), a FIX exchange and a client on lo.
//! fixscope starts first, with an empty key log; the client's OpenSSL appends its lines
//! during the handshake, after fixscope saw the hellos — so the connection is decrypted
//! only if the key log is followed and the connection held until its line is read.
//!
//! The client logs its own send and receive times per ClOrdID: fixscope's wire latency of
//! every order must lie inside the client's round trip (the request is on the wire after
//! the client's send began, the response before its receive returned). A connection whose
//! key is never logged is `tls_no_key`, named in the summary, and gives no number.
//!
//! Needs root (BPF, capture on lo), python3 and openssl: without them the tests fail loudly.

mod support;
#[allow(unused_imports)]
mod support_live;
mod support_tls;

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;
use support::{counter, stage};
use support_live::*;
use support_tls::*;

const ORDERS: usize = 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Watch {
    /// `live`: eBPF on TC.
    Tc,
    /// `live --tap`: libpcap.
    Tap,
}

/// fixscope watching lo with the key log (`--json --trace`); waits until it watches.
fn start_fixscope(watch: Watch, port: u16, keys: &Path, trace: &Path) -> Proc {
    let tap: &[&str] = if watch == Watch::Tap { &["--tap"] } else { &[] };
    start_tls_live(tap, port, trace, &["--tls-keylog", keys.to_str().unwrap()])
}

fn run_client(
    port: u16,
    out: &Path,
    keylog: Option<&Path>,
    extra: &[&str],
) -> HashMap<String, (u64, u64)> {
    run_tls_client(port, ORDERS, out, keylog, extra)
}

/// What every scenario starts from: root, the tools, the serial lock, an empty key log
/// (fixscope starts before any key is written), the OpenSSL exchange, and fixscope
/// watching its port. Bind every field: the lock and the exchange must live to the end.
struct Started {
    serial: std::sync::MutexGuard<'static, ()>,
    dir: tempfile::TempDir,
    keys: std::path::PathBuf,
    trace: std::path::PathBuf,
    port: u16,
    exchange: Proc,
    live: Proc,
}

fn start(test: &str, watch: Watch) -> Started {
    require_tls_peers(test);
    let serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys.log");
    std::fs::write(&keys, "").unwrap();
    let trace = dir.path().join("trace.csv");
    let port = free_port();
    let exchange = start_tls_exchange(dir.path(), port);
    let live = start_fixscope(watch, port, &keys, &trace);
    Started {
        serial,
        dir,
        keys,
        trace,
        port,
        exchange,
        live,
    }
}

fn scenario(test: &str, watch: Watch, extra: &[&str]) {
    let Started {
        serial: _serial,
        dir,
        keys,
        trace,
        port,
        exchange: _exchange,
        mut live,
    } = start(test, watch);
    let client = run_client(port, &dir.path().join("client.txt"), Some(&keys), extra);
    assert_eq!(client.len(), ORDERS);
    let done = stop_live_proc(&mut live, libc::SIGINT);
    let (_, summary) = parse_report(&done.stdout);

    assert!(
        counter(&summary, "tls_connections") >= 1,
        "{}",
        summary["counters"]
    );
    assert!(counter(&summary, "tls_records_decrypted") > 0);
    assert_eq!(counter(&summary, "tls_no_key"), 0, "{}", done.stderr);
    assert_eq!(counter(&summary, "tls_auth_failed"), 0);
    assert_eq!(counter(&summary, "matched"), ORDERS as u64);
    assert_eq!(stage(&summary, "first_response")["count"], ORDERS as u64);
    let named = &summary["tls_undecrypted"];
    assert!(named.is_null() || *named == Value::Array(vec![]), "{named}");

    // Every order on the wire inside the client's own round trip.
    assert_inside_round_trips(&format!("{watch:?}"), &client, &wire_latencies(&trace));
}

#[test]
fn live_decrypts_a_session_that_connects_after_it_started() {
    scenario("tls_live tc", Watch::Tc, &[]);
}

#[test]
fn live_tap_decrypts_a_session_that_connects_after_it_started() {
    scenario("tls_live tap", Watch::Tap, &[]);
}

#[test]
fn live_decrypts_tls12_too() {
    scenario("tls_live tc tls1.2", Watch::Tc, &["--tls12"]);
}

/// The key line comes only after half the orders were answered (an engine that logs
/// late): the session is held, then every order decrypted and timed at its own segments.
#[test]
fn a_key_logged_late_holds_the_session_until_it_comes() {
    scenario("tls_live late key", Watch::Tc, &["--late"]);
}

#[test]
fn a_session_never_logged_is_no_key_and_named() {
    let Started {
        serial: _serial,
        dir,
        keys: _keys,
        trace: _trace,
        port,
        exchange: _exchange,
        mut live,
    } = start("tls_live no key", Watch::Tc);
    // The client logs no key anywhere.
    run_client(port, &dir.path().join("client.txt"), None, &[]);
    let done = stop_live_proc(&mut live, libc::SIGINT);
    let (_, summary) = parse_report(&done.stdout);
    assert_eq!(counter(&summary, "tls_connections"), 1);
    assert_eq!(counter(&summary, "tls_no_key"), 1);
    assert_eq!(counter(&summary, "tls_records_decrypted"), 0);
    assert_eq!(counter(&summary, "matched"), 0, "no number without the key");
    assert_eq!(stage(&summary, "first_response")["count"], 0);
    let named = summary["tls_undecrypted"]
        .as_array()
        .expect("tls_undecrypted");
    assert_eq!(named.len(), 1, "{named:?}");
    assert_eq!(named[0]["reason"], "no_key");
    assert!(
        named[0]["connection"]
            .as_str()
            .unwrap()
            .contains(&format!(":{port}")),
        "{named:?}"
    );
}

/// Live, a connection held for its key whose peers go quiet: its wait ends on fixscope's
/// clock (the live clock ticks on a quiet wire), not when it next sends or closes. The
/// client logs no key and stays connected, silent, `LINGER_S` after its last order.
#[test]
fn a_quiet_session_never_logged_is_no_key_on_the_clock_before_it_ends() {
    const LINGER_S: u64 = 9;
    let Started {
        serial: _serial,
        dir,
        keys: _keys,
        trace: _trace,
        port,
        exchange: _exchange,
        mut live,
    } = start("tls_live quiet no key", Watch::Tc);
    let linger = format!("--linger={LINGER_S}");
    let times = run_client(port, &dir.path().join("client.txt"), None, &[&linger]);
    let first_sent_ns = times.values().map(|&(sent, _)| sent).min().unwrap();
    let last_answer_ns = times.values().map(|&(_, received)| received).max().unwrap();
    let done = stop_live_proc(&mut live, libc::SIGINT);
    let (intervals, summary) = parse_report(&done.stdout);
    assert_eq!(counter(&summary, "tls_no_key"), 1);
    assert_eq!(summary["tls_undecrypted"][0]["reason"], "no_key");
    // The interval that counted it: after the 5 s wait from the ServerHello (just before
    // the first order), and ended well before the connection did.
    let counted = intervals
        .iter()
        .find(|i| i["counters"]["tls_no_key"].as_u64().unwrap_or(0) > 0)
        .unwrap_or_else(|| panic!("no interval counted tls_no_key:\n{}", done.stdout));
    let end = counted["end"].as_str().expect("the interval's end");
    let end_ns = humantime::parse_rfc3339(end)
        .unwrap()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let s = 1_000_000_000;
    assert!(
        end_ns > first_sent_ns + 4 * s,
        "counted before the wait was over: {end}"
    );
    assert!(
        end_ns < last_answer_ns + (LINGER_S - 1) * s,
        "counted only as the connection ended ({end}; the last answer at {last_answer_ns} ns, \
         closed {LINGER_S} s later)"
    );
}
