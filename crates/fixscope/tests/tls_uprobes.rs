//! `live --tls-uprobes`: FIX over TLS without a key log, from uprobes on the OpenSSL the
//! applications really use (Python's `ssl` → the system's libssl.so.3, through
//! `tests/interop/tls_fix.py`), on lo.
//!
//! With `--tls-uprobes` alone (no key anywhere) fixscope must match every order, place
//! every call (`tls_uprobe_unmapped` 0) and put every order inside the client's own round
//! trip. With the key log as well, every call of the decrypted connection is placed all the
//! same and compared with the decryption of the same packets: the exact check that the
//! calls give the wire's time, not the call's (`tls_uprobe_verified`, none
//! `tls_uprobe_disagreed`). One fixscope per scenario: before TCX (Linux < 6.6) a second
//! instance cannot attach to the same interface.
//!
//! Needs root (BPF, uprobes), python3 and openssl: without them the tests fail loudly.

mod support;
#[allow(unused_imports)]
mod support_live;
mod support_tls;

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::{counter, stage};
use support_live::*;
use support_tls::*;

const ORDERS: usize = 20;

fn start_instance(port: u16, trace: &Path, tls: &[&str]) -> Proc {
    start_tls_live(&[], port, trace, tls)
}

/// The system's libssl.so.3, as the dynamic loader finds it (the one Python's ssl maps).
fn system_libssl() -> PathBuf {
    let out = std::process::Command::new("ldconfig")
        .arg("-p")
        .output()
        .expect("ldconfig");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("libssl.so.3 ") && l.contains("x86-64"))
        .unwrap_or_else(|| panic!("no libssl.so.3 in ldconfig -p:\n{text}"));
    PathBuf::from(line.rsplit("=> ").next().unwrap().trim())
}

struct Runs {
    uprobes: Value,
    uprobes_stderr: String,
}

/// The exchange, fixscope with `uprobe_flags` (no key log), the client: the summary,
/// after checking that every order lies inside the client's round trip.
fn run(test: &str, uprobe_flags: &[&str], client_flags: &[&str]) -> Runs {
    require_tls_peers(test);
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("u.csv");
    let port = free_port();
    let _exchange = start_tls_exchange(dir.path(), port);
    let mut uprobes = start_instance(port, &trace, uprobe_flags);
    let client = run_tls_client(
        port,
        ORDERS,
        &dir.path().join("client.txt"),
        None,
        client_flags,
    );
    let done = stop_live_proc(&mut uprobes, libc::SIGINT);
    let (_, summary) = parse_report(&done.stdout);
    assert_every_call_in_one_count(&summary);
    if counter(&summary, "matched") == ORDERS as u64 {
        assert_inside_round_trips(test, &client, &wire_latencies(&trace));
    }
    Runs {
        uprobes: summary,
        uprobes_stderr: done.stderr,
    }
}

/// Every call the kernel handed over lands in exactly one user-space count: placed on its
/// records, unmapped, or ignored (no TLS to place it on).
fn assert_every_call_in_one_count(s: &Value) {
    let parts: u64 = [
        "tls_uprobe_placed",
        "tls_uprobe_unmapped",
        "tls_uprobe_ignored",
    ]
    .iter()
    .map(|n| counter(s, n))
    .sum();
    assert_eq!(
        source(s, "tls_uprobe_records"),
        parts,
        "{}\n{}",
        s["counters"],
        s["source"]
    );
}

/// Every order matched and timed by calls placed on their records, with no key.
/// `one_call_each`: each order and each report fits one record, so the exchange made
/// exactly one read and one write per order — and the client's calls, which the role
/// filter leaves out in the kernel, were never copied.
fn assert_every_order_by_calls(r: &Runs, one_call_each: bool) {
    let s = &r.uprobes;
    assert_eq!(
        counter(s, "matched"),
        ORDERS as u64,
        "{}\n{}\n{}",
        r.uprobes_stderr,
        s["counters"],
        s["source"]
    );
    assert_eq!(stage(s, "first_response")["count"], ORDERS as u64);
    assert!(counter(s, "tls_connections") >= 1, "{}", s["counters"]);
    assert_eq!(
        counter(s, "tls_records_decrypted"),
        0,
        "no key: nothing decrypted"
    );
    assert_eq!(counter(s, "tls_no_key"), 0);
    assert_eq!(counter(s, "tls_uprobe_unmapped"), 0, "{}", s["counters"]);
    assert_eq!(counter(s, "tls_uprobe_silent"), 0);
    // The exchange's reads of the orders and writes of the reports, at least.
    assert!(
        source(s, "tls_uprobe_records") >= 2 * ORDERS as u64,
        "{}",
        s["source"]
    );
    if one_call_each {
        assert_eq!(
            source(s, "tls_uprobe_records"),
            2 * ORDERS as u64,
            "{}",
            s["source"]
        );
        // The client's calls were seen (its library is hooked too), not copied.
        assert!(
            source(s, "tls_uprobe_calls") >= 4 * ORDERS as u64,
            "{}",
            s["source"]
        );
    }
    assert_eq!(source(s, "tls_uprobe_ring_drops"), 0);
    let named = &s["tls_undecrypted"];
    assert!(named.is_null() || *named == Value::Array(vec![]), "{named}");
}

/// One instance with both the key log and the uprobes: each connection is decrypted, and
/// every call of it is placed all the same and compared with the decryption — the same
/// bytes at the same packet's time. The exact check that the calls give the wire's time.
fn run_checked(test: &str, client_flags: &[&str]) {
    require_tls_peers(test);
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys.log");
    std::fs::write(&keys, "").unwrap();
    let trace = dir.path().join("t.csv");
    let port = free_port();
    // fixscope first: the exchange maps libssl after the uprobes were set on it.
    let mut live = start_instance(
        port,
        &trace,
        &["--tls-uprobes", "--tls-keylog", keys.to_str().unwrap()],
    );
    let _exchange = start_tls_exchange(dir.path(), port);
    let client = run_tls_client(
        port,
        ORDERS,
        &dir.path().join("client.txt"),
        Some(&keys),
        client_flags,
    );
    let done = stop_live_proc(&mut live, libc::SIGINT);
    let (_, s) = parse_report(&done.stdout);
    assert_every_call_in_one_count(&s);
    assert_eq!(counter(&s, "matched"), ORDERS as u64, "{}", done.stderr);
    assert!(
        counter(&s, "tls_records_decrypted") > 0,
        "{}",
        s["counters"]
    );
    // Each order: at least the exchange's read of it and its write of the report.
    assert!(
        counter(&s, "tls_uprobe_verified") >= 2 * ORDERS as u64,
        "{}",
        s["counters"]
    );
    assert_eq!(counter(&s, "tls_uprobe_disagreed"), 0, "{}", s["counters"]);
    assert_eq!(counter(&s, "tls_uprobe_unmapped"), 0, "{}", s["counters"]);
    assert_eq!(counter(&s, "tls_uprobe_unchecked"), 0, "{}", s["counters"]);
    assert_inside_round_trips(test, &client, &wire_latencies(&trace));
}

/// The key log and the uprobes on a copy of libssl no process maps: the connection is
/// decrypted and measured by the key log, and the check its calls were to pass compared
/// nothing — counted `tls_uprobe_unchecked`, never a silent "0 disagreed".
#[test]
fn a_check_that_compared_nothing_says_so() {
    let test = "tls_uprobes unchecked";
    require_tls_peers(test);
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("libssl-copy.so.3");
    std::fs::copy(system_libssl(), &lib).unwrap();
    let keys = dir.path().join("keys.log");
    std::fs::write(&keys, "").unwrap();
    let trace = dir.path().join("t.csv");
    let port = free_port();
    let mut live = start_instance(
        port,
        &trace,
        &[
            "--tls-lib",
            lib.to_str().unwrap(),
            "--tls-keylog",
            keys.to_str().unwrap(),
        ],
    );
    let _exchange = start_tls_exchange(dir.path(), port);
    run_tls_client(
        port,
        ORDERS,
        &dir.path().join("client.txt"),
        Some(&keys),
        &[],
    );
    let done = stop_live_proc(&mut live, libc::SIGINT);
    let (_, s) = parse_report(&done.stdout);
    assert_every_call_in_one_count(&s);
    assert_eq!(counter(&s, "matched"), ORDERS as u64, "{}", done.stderr);
    let checked = counter(&s, "tls_uprobe_verified") + counter(&s, "tls_uprobe_disagreed");
    assert_eq!(checked, 0, "{}", s["counters"]);
    assert_eq!(counter(&s, "tls_uprobe_unchecked"), 1, "{}", s["counters"]);
}

#[test]
fn every_call_agrees_with_the_decryption_of_the_same_packets() {
    run_checked("tls_uprobes checked 1.3", &[]);
    run_checked("tls_uprobes checked 1.2", &["--tls12"]);
    run_checked("tls_uprobes checked big", &["--big"]);
}

/// Every order sent before any report is read: the orders' records queue behind each
/// other at the exchange, which reads them one call after another as it catches up. Each
/// call's bytes still land on the record that carried them: the same bytes at the same
/// packet's time as the decryption, order by order.
#[test]
fn calls_of_records_queued_behind_each_other_agree_with_the_decryption() {
    run_checked("tls_uprobes checked burst 1.3", &["--burst"]);
    run_checked("tls_uprobes checked burst 1.2", &["--burst", "--tls12"]);
}

/// The key line comes after half the orders: the connection is held for it, its calls
/// held meanwhile, then all checked against the decryption.
#[test]
fn calls_held_while_the_key_is_awaited_are_checked_once_it_comes() {
    run_checked("tls_uprobes checked late key", &["--late"]);
}

#[test]
fn uprobes_time_every_order_by_its_records_without_a_key_log() {
    let r = run("tls_uprobes 1.3", &["--tls-uprobes"], &[]);
    assert_every_order_by_calls(&r, true);
    assert!(
        r.uprobes_stderr
            .contains("--tls-uprobes: SSL_read, SSL_read_ex, SSL_write, SSL_write_ex in"),
        "{}",
        r.uprobes_stderr
    );
}

#[test]
fn uprobes_over_tls12_on_the_library_named_with_tls_lib() {
    let lib = system_libssl();
    let r = run(
        "tls_uprobes 1.2",
        &["--tls-lib", lib.to_str().unwrap()],
        &["--tls12"],
    );
    assert_every_order_by_calls(&r, true);
}

/// 40,000-byte messages both ways: the exchange reads each order in several SSL_read
/// calls (one record each) and writes each report in one SSL_write of three records.
#[test]
fn uprobes_place_messages_over_several_records_and_calls() {
    let r = run("tls_uprobes big", &["--tls-uprobes"], &["--big"]);
    assert_every_order_by_calls(&r, false);
}

/// Hooks on a copy of libssl that no process maps: the session's records come, its
/// calls never do. Counted `tls_uprobe_silent`, named, and no number.
#[test]
fn a_session_whose_library_is_not_hooked_is_silent_and_named() {
    let copy = tempfile::tempdir().unwrap();
    let lib = copy.path().join("libssl-copy.so.3");
    std::fs::copy(system_libssl(), &lib).unwrap();
    let r = run(
        "tls_uprobes silent",
        &["--tls-lib", lib.to_str().unwrap()],
        &[],
    );
    let s = &r.uprobes;
    assert_eq!(counter(s, "tls_uprobe_silent"), 1, "{}", s["counters"]);
    assert_eq!(counter(s, "matched"), 0, "no number without the calls");
    assert_eq!(source(s, "tls_uprobe_records"), 0);
    let named = s["tls_undecrypted"].as_array().expect("tls_undecrypted");
    assert_eq!(named.len(), 1, "{named:?}");
    assert_eq!(named[0]["reason"], "no_ssl_calls");
}

const NODE_EXCHANGE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/interop/tls_fix_node.mjs"
);

/// The OpenSSL Node.js runs: the system's libssl when `node` links it (Debian's), else the
/// `node` binary itself (builds that link OpenSSL in, as nodesource's do).
fn node_openssl() -> PathBuf {
    let node = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v node"])
            .output()
            .expect("sh")
            .stdout,
    )
    .unwrap();
    let node = PathBuf::from(node.trim());
    let ldd = std::process::Command::new("ldd")
        .arg(&node)
        .output()
        .expect("ldd");
    if String::from_utf8_lossy(&ldd.stdout).contains("libssl.so.3") {
        system_libssl()
    } else {
        node
    }
}

/// A Node.js exchange (its `tls` feeds OpenSSL through memory BIOs, doing the socket I/O
/// outside SSL_read/SSL_write): the calls are seen but nothing ties them to the
/// connection. They are counted `tls_uprobe_memory_bio` — every return in exactly one
/// count — the connection is silent and named for the real reason, `memory_bio` (the
/// kernel saw its socket used by the process whose calls are on memory BIOs), its summary
/// line says what measures it, and no order is measured (no number is better than a
/// guessed one).
#[test]
fn an_engine_on_memory_bios_is_counted_and_said_never_measured_by_a_guess() {
    let test = "tls_uprobes memory BIO";
    require_tls_peers(test);
    require_tool(test, "node");
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let cert = std::process::Command::new("python3")
        .args([SCRIPT, "cert", d])
        .output()
        .expect("python3");
    assert!(cert.status.success(), "cert: {cert:?}");
    let lib = node_openssl();
    let trace = dir.path().join("u.csv");
    let port = free_port();
    // fixscope first: the uprobes are set before node maps the library.
    let mut live = start_instance(port, &trace, &["--tls-lib", lib.to_str().unwrap()]);
    let mut node = std::process::Command::new("node");
    node.args([NODE_EXCHANGE, d, &port.to_string()]);
    let mut exchange = Proc::spawn("node exchange", node);
    exchange.wait_for_stderr("listening", std::time::Duration::from_secs(30));
    run_tls_client(port, ORDERS, &dir.path().join("client.txt"), None, &[]);
    let done = stop_live_proc(&mut live, libc::SIGINT);
    let (_, s) = parse_report(&done.stdout);
    assert_every_call_in_one_count(&s);
    let src = |name: &str| source(&s, name);
    // The exchange read each order and wrote each report on its memory BIOs.
    assert!(
        src("tls_uprobe_memory_bio") >= 2 * ORDERS as u64,
        "{}\n{}",
        done.stderr,
        s["source"]
    );
    assert_eq!(src("tls_uprobe_records"), 0, "{}", s["source"]);
    let parts: u64 = [
        "tls_uprobe_records",
        "tls_uprobe_ring_drops",
        "tls_uprobe_no_entry",
        "tls_uprobe_empty",
        "tls_uprobe_unwatched",
        "tls_uprobe_memory_bio",
        "tls_uprobe_copy_failed",
    ]
    .iter()
    .map(|n| src(n))
    .sum();
    assert_eq!(src("tls_uprobe_calls"), parts, "{}", s["source"]);
    assert_eq!(counter(&s, "matched"), 0, "no number without the calls");
    assert_eq!(counter(&s, "tls_uprobe_silent"), 1, "{}", s["counters"]);
    let named = s["tls_undecrypted"].as_array().expect("tls_undecrypted");
    assert_eq!(named.len(), 1, "{named:?}");
    assert_eq!(named[0]["reason"], "memory_bio", "{named:?}");
}

#[test]
fn tls_uprobes_is_refused_with_tap_and_a_library_without_openssl_is_named() {
    let out = fixscope_cmd(
        None,
        &["live", "--tap", "-i", "lo", "-p", "1", "--tls-uprobes"],
    )
    .output()
    .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--tls-uprobes"));
    require_root("tls_uprobes not a libssl");
    let _serial = serial();
    let out = fixscope_cmd(
        None,
        &[
            "live",
            "-i",
            "lo",
            "-p",
            "1",
            "--tls-lib",
            "/bin/true",
            "--duration",
            "1",
        ],
    )
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("/bin/true") || err.contains("/usr/bin/true"),
        "{err}"
    );
    assert!(err.contains("SSL_read"), "{err}");
}
