//! What the live TLS tests share (tls_live.rs, tls_uprobes.rs): the OpenSSL exchange and
//! client of `tests/interop/tls_fix.py`, and the check that each order's wire latency lies
//! inside the client's own round trip.

#![allow(dead_code)]

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::support_live::{fixscope_cmd, read_trace, require_root, require_tool, Proc};

pub const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/tls_fix.py");

/// What every live TLS test needs: root (BPF), and python3 and openssl for the peers.
pub fn require_tls_peers(test: &str) {
    require_root(test);
    require_tool(test, "python3");
    require_tool(test, "openssl");
}

/// The exchange, listening on lo (its certificate written into `dir`).
pub fn start_tls_exchange(dir: &Path, port: u16) -> Proc {
    let d = dir.to_str().unwrap();
    let cert = Command::new("python3")
        .args([SCRIPT, "cert", d])
        .output()
        .expect("python3");
    assert!(cert.status.success(), "cert: {cert:?}");
    let mut cmd = Command::new("python3");
    cmd.args([SCRIPT, "serve", d, &port.to_string()]);
    let mut exchange = Proc::spawn("tls exchange", cmd);
    // Python's ssl takes seconds to start in a VM without KVM (make test-kernel).
    exchange.wait_for_stderr("listening", Duration::from_secs(60));
    exchange
}

/// Runs the client for `orders` orders; its own times per ClOrdID: (send, receive).
pub fn run_tls_client(
    port: u16,
    orders: usize,
    out: &Path,
    keylog: Option<&Path>,
    extra: &[&str],
) -> HashMap<String, (u64, u64)> {
    let port = port.to_string();
    let n = orders.to_string();
    let mut cmd = Command::new("python3");
    cmd.args([SCRIPT, "client", &port, &n, out.to_str().unwrap()]);
    if let Some(k) = keylog {
        cmd.arg(k);
    }
    cmd.args(extra);
    let f = Proc::spawn("tls client", cmd).finish(Duration::from_secs(60));
    assert!(f.status.success(), "client: {}", f.stderr);
    let times = read_client_times(out);
    assert_eq!(times.len(), orders);
    times
}

/// A client's own times per ClOrdID from its OUT file: (send, receive), one line an order.
pub fn read_client_times(out: &Path) -> HashMap<String, (u64, u64)> {
    std::fs::read_to_string(out)
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (
                f[0].to_string(),
                (f[1].parse().unwrap(), f[2].parse().unwrap()),
            )
        })
        .collect()
}

/// `fixscope live [first..] -i lo -p PORT --json --trace TRACE [then..]`, once it watches.
pub fn start_tls_live(first: &[&str], port: u16, trace: &Path, then: &[&str]) -> Proc {
    let port = port.to_string();
    let mut args = vec!["live"];
    args.extend_from_slice(first);
    args.extend_from_slice(&["-i", "lo", "-p", &port, "--json", "--trace"]);
    args.push(trace.to_str().unwrap());
    args.extend_from_slice(then);
    let mut live = Proc::spawn("fixscope live", fixscope_cmd(None, &args));
    live.wait_for_stderr("fixscope: watching", Duration::from_secs(20));
    live
}

/// Each order's wire latency (response − request) from a `--trace` file, by ClOrdID.
pub fn wire_latencies(trace: &Path) -> HashMap<String, i64> {
    let rows = read_trace(trace);
    let at = |request: bool, key: &str| {
        rows.iter()
            .find(|r| r.request == request && r.key == key)
            .map(|r| r.ts_ns as i64)
    };
    rows.iter()
        .filter(|r| r.request)
        .filter_map(|r| Some((r.key.clone(), at(false, &r.key)? - at(true, &r.key)?)))
        .collect()
}

/// Every order of `client` is in `wire` and lies inside the client's own round trip (the
/// request is on the wire after the client's send began, the response before its receive
/// returned).
pub fn assert_inside_round_trips(
    label: &str,
    client: &HashMap<String, (u64, u64)>,
    wire: &HashMap<String, i64>,
) {
    for (id, (sent, received)) in client {
        let wire = *wire
            .get(id)
            .unwrap_or_else(|| panic!("{label}: {id} not in the trace"));
        let round_trip = (received - sent) as i64;
        assert!(
            wire > 0 && wire <= round_trip,
            "{label} {id}: wire {wire} ns, the client's round trip {round_trip} ns"
        );
    }
}
