//! FIX through `openssl s_server` and `openssl s_client` over ChaCha20-Poly1305 (#49):
//! a harness (`tests/interop/openssl_fix.py`) sends NewOrderSingles through s_client's
//! stdin and answers each with an ExecutionReport through s_server's stdin, on 127.0.0.1;
//! s_server writes the key log; tcpdump records lo. `fixscope pcap --tls-keylog` on
//! tcpdump's capture must match every order, each on the wire inside the harness's own
//! send and receive times (tcpdump and the harness read the same clock, CLOCK_REALTIME),
//! and the suite the server chose in its ServerHello — read from the capture here, not from
//! fixscope — must be ChaCha20-Poly1305, as s_client itself says it negotiated.
//!
//! Needs root (tcpdump on lo), python3, openssl and tcpdump: without them the tests fail
//! loudly.

mod support;
#[allow(unused_imports)]
mod support_live;
mod support_tls;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use fixscope_core::pcap::{read_capture, CaptureStats};
use fixscope_core::{Direction, PortSet};
use support::{analyse, counter, stage};
use support_live::*;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/openssl_fix.py");
const ORDERS: usize = 20;

/// The cipher suite of the capture's ServerHello (the first handshake record the server
/// sent): its two bytes after the random and the session id.
fn server_hello_suite(cap: &Path, port: u16) -> u16 {
    let mut server = Vec::new();
    let mut stats = CaptureStats::default();
    read_capture(cap, &PortSet::single(port), &mut stats, |s| {
        if s.direction == Direction::Response && server.len() < 4096 {
            server.extend_from_slice(s.payload);
        }
    })
    .unwrap();
    // Record header (5), handshake type 2 and length (4), legacy version (2), random (32).
    assert!(server.len() > 44, "no ServerHello in {cap:?}");
    assert_eq!(server[0], 0x16, "a handshake record first");
    assert_eq!(server[5], 0x02, "a ServerHello first");
    let sid = server[43] as usize;
    u16::from_be_bytes([server[44 + sid], server[45 + sid]])
}

/// The harness's own times per ClOrdID (send, receive) and what s_client negotiated.
fn run_harness(dir: &Path, port: u16, extra: &[&str]) -> (HashMap<String, (u64, u64)>, String) {
    let out = dir.join("harness.txt");
    let mut cmd = Command::new("python3");
    cmd.args([SCRIPT, dir.to_str().unwrap(), &port.to_string()])
        .arg(ORDERS.to_string())
        .arg(&out)
        .args(extra);
    let done = Proc::spawn("openssl harness", cmd).finish(Duration::from_secs(60));
    assert!(
        done.status.success(),
        "harness: {}\n{}",
        done.stderr,
        done.stdout
    );
    let negotiated = done
        .stdout
        .lines()
        .last()
        .and_then(|l| l.strip_prefix("negotiated "))
        .unwrap_or_else(|| panic!("harness said no suite: {}", done.stdout))
        .to_string();
    let times = support_tls::read_client_times(&out);
    (times, negotiated)
}

fn scenario(test: &str, extra: &[&str], negotiated: &str, suite: u16) {
    require_root(test);
    for tool in ["python3", "openssl", "tcpdump"] {
        require_tool(test, tool);
    }
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let cap = dir.path().join("lo.pcap");
    let mut tcpdump = Command::new("tcpdump");
    tcpdump
        .args([
            "-i",
            "lo",
            "--immediate-mode",
            "-U",
            "-s",
            "0",
            "-B",
            "65536",
        ])
        .args(["--time-stamp-precision", "nano", "-w"])
        .arg(&cap)
        .arg(format!("tcp port {port}"));
    let mut tcpdump = Proc::spawn("tcpdump", tcpdump);
    tcpdump.wait_for_stderr("listening on", Duration::from_secs(10));
    let (harness, said) = run_harness(dir.path(), port, extra);
    stop_tcpdump(tcpdump, &cap);
    assert_eq!(harness.len(), ORDERS);
    assert_eq!(said, negotiated, "what s_client negotiated");
    assert_eq!(
        server_hello_suite(&cap, port),
        suite,
        "the ServerHello's suite"
    );

    let keys = dir.path().join("keys.log");
    let trace = dir.path().join("trace.csv");
    let p = port.to_string();
    let (_, summary) = analyse(
        &[&cap],
        &[
            "-p",
            &p,
            "--tls-keylog",
            keys.to_str().unwrap(),
            "--trace",
            trace.to_str().unwrap(),
        ],
    );
    assert_eq!(counter(&summary, "tls_connections"), 1);
    assert!(counter(&summary, "tls_records_decrypted") >= 2 * ORDERS as u64);
    for name in ["tls_no_key", "tls_unsupported", "tls_auth_failed"] {
        assert_eq!(counter(&summary, name), 0, "{name}");
    }
    assert_eq!(counter(&summary, "matched"), ORDERS as u64);
    assert_eq!(stage(&summary, "first_response")["count"], ORDERS as u64);

    // Every order on the wire inside the harness's own send and receive.
    let rows = read_trace(&trace);
    let at = |request: bool, key: &str| {
        let found: Vec<u64> = rows
            .iter()
            .filter(|r| r.request == request && r.key == key)
            .map(|r| r.ts_ns)
            .collect();
        assert_eq!(found.len(), 1, "{key} ({request}) in the trace: {found:?}");
        found[0]
    };
    for (id, &(sent, received)) in &harness {
        let (request, response) = (at(true, id), at(false, id));
        assert!(
            sent <= request && request < response && response <= received,
            "{id}: sent {sent}, on the wire {request} -> {response}, received {received}"
        );
    }
    let traced: usize = rows.iter().filter(|r| r.request).count();
    assert_eq!(traced, ORDERS, "one request traced per order");
}

#[test]
fn openssl_tls13_chacha20_every_order_inside_the_harness_times() {
    scenario(
        "tls_openssl tls1.3 chacha20",
        &[],
        "TLSv1.3 TLS_CHACHA20_POLY1305_SHA256",
        0x1303,
    );
}

#[test]
fn openssl_tls12_chacha20_every_order_inside_the_harness_times() {
    scenario(
        "tls_openssl tls1.2 chacha20",
        &["--tls12"],
        "TLSv1.2 ECDHE-RSA-CHACHA20-POLY1305",
        0xcca8,
    );
}
