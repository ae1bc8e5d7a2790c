//! A real FIX engine: QuickFIX/J (engines/quickfixj) — an acceptor answering every
//! NewOrderSingle with an ack and a fill, an initiator sending orders at a rate, both
//! logging their own System.nanoTime() (CLOCK_MONOTONIC on Linux) per ClOrdID — on the
//! loopback of a network namespace this test creates, measured by `fixscope live` and, from
//! tcpdump's capture of the same traffic, by `fixscope pcap`.
//!
//! Both must match every order, and every wire latency must lie inside the engines' own
//! windows: the acceptor's receive→send is the least the wire can show (its receive comes
//! after the request's bytes, its send before the response's), the initiator's send→receive
//! the most. Live times share the engines' clock, so each wire time is also checked
//! against the engines' timestamps directly.
//!
//! Needs root (BPF, a namespace), java 17, maven (the first build downloads QuickFIX/J into
//! ~/.m2) and tcpdump: without them the test fails loudly.

mod support;
// Not every helper is used here.
#[allow(unused_imports)]
mod support_live;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use support::counter;
use support_live::*;

const ORDERS: u64 = 500;
const RATE: u64 = 250;
/// TestRequests the initiator sends during the run (all with TestReqID TEST).
const TEST_REQUESTS: u64 = 5;
/// Clock slack between the wire and the engines' timestamps (one clock live).
const EPS_NS: u64 = 1_000;

fn engine_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../engines/quickfixj")
}

/// `mvn package`: the jar and its dependencies in target/lib.
fn build_engine() -> String {
    let dir = engine_dir();
    let out = Command::new("mvn")
        .args(["-q", "-B", "package"])
        .current_dir(&dir)
        .output()
        .expect("mvn");
    assert!(
        out.status.success(),
        "mvn package in {dir:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    format!(
        "{}:{}",
        dir.join("target/fixscope-quickfixj-0.1.0.jar").display(),
        dir.join("target/lib/*").display()
    )
}

/// An engine's log: ClOrdID → event → ns.
fn read_engine_log(path: &Path) -> HashMap<String, HashMap<String, u64>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("clordid,event,ns"));
    let mut by_id: HashMap<String, HashMap<String, u64>> = HashMap::new();
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        assert_eq!(f.len(), 3, "{l}");
        by_id
            .entry(f[0].to_string())
            .or_default()
            .insert(f[1].to_string(), f[2].parse().expect("ns"));
    }
    by_id
}

/// Per ClOrdID: (request time, [first response, second response]) from a --trace file.
fn wire_times(trace: &Path) -> HashMap<String, (u64, Vec<u64>)> {
    let mut m: HashMap<String, (u64, Vec<u64>)> = HashMap::new();
    for row in read_trace(trace) {
        let e = m.entry(row.key.clone()).or_insert((0, Vec::new()));
        if row.request {
            assert_eq!(e.0, 0, "request {} traced twice", row.key);
            e.0 = row.ts_ns;
        } else {
            e.1.push(row.ts_ns);
        }
    }
    m
}

fn ns_of(log: &HashMap<String, HashMap<String, u64>>, id: &str, event: &str) -> u64 {
    *log.get(id)
        .and_then(|e| e.get(event))
        .unwrap_or_else(|| panic!("{id}: no {event} in the engine's log"))
}

#[test]
fn quickfixj_orders_are_matched_and_bracketed_by_the_engines_timestamps() {
    let name = "quickfixj_orders_are_matched_and_bracketed_by_the_engines_timestamps";
    require_root(name);
    for tool in ["java", "mvn", "tcpdump"] {
        require_tool(name, tool);
    }
    let _g = serial();
    let classpath = build_engine();
    let ns = Netns::create(&[format!("fxs-{}-qfj", std::process::id())]);
    let ns_name = ns.0[0].clone();
    run("ip", &["-n", &ns_name, "link", "set", "lo", "up"]);
    let port: u16 = 39_901;
    let port_s = port.to_string();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = |n: &str| dir.path().join(n).to_str().expect("utf-8").to_string();
    let (cap, live_trace, pcap_trace, acc_log, ini_log) = (
        path("qfj.pcap"),
        path("live.csv"),
        path("pcap.csv"),
        path("acceptor.csv"),
        path("initiator.csv"),
    );
    let in_ns = |args: &[&str]| {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &ns_name]).args(args);
        c
    };

    let mut tcpdump = Proc::spawn(
        "tcpdump",
        in_ns(&[
            "tcpdump",
            "-i",
            "lo",
            // Immediate mode: a SIGTERM loses what libpcap still holds (the Logouts).
            "--immediate-mode",
            "-B",
            "65536",
            "-U",
            "--time-stamp-precision",
            "nano",
            "-w",
            &cap,
            "tcp",
            "port",
            &port_s,
        ]),
    );
    tcpdump.wait_for_stderr("listening on", Duration::from_secs(10));
    // -t 5: the first orders wait for the JVMs' warm-up (hundreds of ms), not a timeout.
    let mut live = start_live(
        Some(&ns_name),
        "lo",
        port,
        &["--json", "-r", "0", "-t", "5", "--trace", &live_trace],
    );
    let engine = |args: &[&str]| {
        let mut all = vec!["java", "-cp", &classpath, "dev.fixscope.qfj.Engine"];
        all.extend_from_slice(args);
        in_ns(&all)
    };
    let mut acceptor = Proc::spawn("acceptor", engine(&["acceptor", &port_s, &acc_log]));
    acceptor.wait_for_stderr("acceptor: listening", Duration::from_secs(30));
    let (rate, count, trs) = (
        RATE.to_string(),
        ORDERS.to_string(),
        TEST_REQUESTS.to_string(),
    );
    let mut initiator = Proc::spawn(
        "initiator",
        engine(&["initiator", &port_s, &ini_log, &rate, &count, &trs]),
    );
    let i = initiator.finish(Duration::from_secs(60));
    assert!(i.status.success(), "initiator: {}\n{}", i.stderr, i.stdout);
    let a = acceptor.finish(Duration::from_secs(20));
    assert!(a.status.success(), "acceptor: {}\n{}", a.stderr, a.stdout);
    std::thread::sleep(Duration::from_millis(300));
    live.proc.signal(libc::SIGTERM);
    // Stop tcpdump once its file stopped growing.
    let mut last = 0;
    wait_until("the capture settles", Duration::from_secs(20), || {
        std::thread::sleep(Duration::from_millis(300));
        let len = std::fs::metadata(&cap).map(|m| m.len()).unwrap_or(0);
        std::mem::replace(&mut last, len) == len && len > 0
    });
    tcpdump.signal(libc::SIGTERM);
    let l = live.proc.finish(Duration::from_secs(10));
    let _ = tcpdump.finish(Duration::from_secs(10));
    assert_eq!(l.status.code(), Some(0), "fixscope live: {}", l.stderr);
    let (_, live_summary) = parse_report(&l.stdout);

    let out = fixscope_cmd(
        None,
        &[
            "pcap",
            &cap,
            "-p",
            &port_s,
            "--json",
            "-r",
            "0",
            "-t",
            "5",
            "--trace",
            &pcap_trace,
        ],
    )
    .output()
    .expect("fixscope pcap");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (_, pcap_summary) = parse_report(&String::from_utf8_lossy(&out.stdout));

    for (what, s) in [("live", &live_summary), ("pcap", &pcap_summary)] {
        for (c, want) in [
            ("requests", ORDERS),
            ("matched", ORDERS),
            ("timed_out", 0),
            ("unmatched_responses", 0),
            ("tcp_gaps", 0),
            ("bad_checksum", 0),
        ] {
            assert_eq!(counter(s, c), want, "{what}: {c}: {}", s["counters"]);
        }
        // The session layer against the engines' own configuration (Engine.java: one
        // session CLIENT->EXCH, HeartBtInt 30, ResetOnLogon=Y, one connection): one session,
        // never a phantom one for the closed connection; no replay, no gap.
        let sessions = s["sessions"].as_array().expect("sessions");
        assert_eq!(sessions.len(), 1, "{what}: {sessions:?}");
        assert_eq!(sessions[0]["sender_comp_id"], "CLIENT", "{what}");
        assert_eq!(sessions[0]["target_comp_id"], "EXCH", "{what}");
        assert_eq!(sessions[0]["session_layer"]["heart_bt_int_s"], 30, "{what}");
        for (c, want) in [
            ("logons", 2),
            ("possdup_requests", 0),
            ("possdup_responses", 0),
            ("sequence_gaps", 0),
            ("session_rejects", 0),
        ] {
            assert_eq!(counter(s, c), want, "{what}: {c}: {}", s["counters"]);
        }
    }
    assert_eq!(
        counter(&pcap_summary, "connections"),
        1,
        "the capture's one connection"
    );

    let acc = read_engine_log(Path::new(&acc_log));
    let ini = read_engine_log(Path::new(&ini_log));
    // The session layer against the engines' own toAdmin callbacks: each session-level
    // message both engines sent, by MsgType, is what fixscope counts; the acceptor answered
    // each TestRequest (112=TEST, paired first in, first out) with a Heartbeat.
    let count = |what: &str, t: &str| -> u64 {
        let of = |log: &HashMap<String, HashMap<String, u64>>| {
            log.get("admin")
                .and_then(|a| a.get(&format!("{what}_{t}")))
                .copied()
                .unwrap_or(0)
        };
        of(&acc) + of(&ini)
    };
    let sent = |t: &str| count("sent", t);
    let received = |t: &str| count("recv", t);
    assert_eq!(
        sent("1"),
        TEST_REQUESTS,
        "the initiator's TestRequests: {ini:?}"
    );
    for (what, s) in [("live", &live_summary), ("pcap", &pcap_summary)] {
        // Logouts: the wire carried every one an engine read, and only ones an engine's
        // toAdmin sent — QuickFIX/J may count its Logout reply in toAdmin and close the
        // socket before the reply is written (seen on a fresh clone: toAdmin 2, wire 1
        // live and in tcpdump's capture alike).
        let logouts = counter(s, "logouts");
        assert!(
            received("5") <= logouts && logouts <= sent("5") && logouts >= 1,
            "{what}: logouts {logouts} outside the engines' read {} and sent {} (initiator {:?}, acceptor {:?})",
            received("5"),
            sent("5"),
            ini.get("admin"),
            acc.get("admin"),
        );
        for (c, t) in [
            ("logons", "A"),
            ("heartbeats", "0"),
            ("test_requests", "1"),
            ("resend_requests", "2"),
            ("gap_fills", "4"),
        ] {
            assert_eq!(
                counter(s, c),
                sent(t),
                "{what}: {c} vs the engines' toAdmin (live {}, pcap {}; initiator {:?}, acceptor {:?})",
                counter(&live_summary, c),
                counter(&pcap_summary, c),
                ini.get("admin"),
                acc.get("admin"),
            );
        }
        let rtt = s["session_stages"]
            .as_array()
            .expect("session_stages")
            .iter()
            .find(|st| st["stage"] == "test_request_rtt")
            .unwrap_or_else(|| panic!("{what}: no test_request_rtt"));
        assert_eq!(rtt["count"], TEST_REQUESTS, "{what}: {rtt}");
    }
    let live_wire = wire_times(Path::new(&live_trace));
    let pcap_wire = wire_times(Path::new(&pcap_trace));
    let (mut excess_lo, mut excess_hi) = (Vec::new(), Vec::new());
    for n in 0..ORDERS {
        let id = format!("QFJ-{n}");
        let (send, recv) = (ns_of(&ini, &id, "send"), ns_of(&acc, &id, "recv"));
        let (ack_send, ack_recv) = (ns_of(&acc, &id, "ack_send"), ns_of(&ini, &id, "ack_recv"));
        let (fill_send, fill_recv) = (ns_of(&acc, &id, "fill_send"), ns_of(&ini, &id, "fill_recv"));
        for (what, wire) in [("live", &live_wire), ("pcap", &pcap_wire)] {
            let (rq, rs) = wire
                .get(&id)
                .unwrap_or_else(|| panic!("{what}: {id} not traced"));
            assert!(rs.len() >= 2, "{what}: {id}: ack and fill traced: {rs:?}");
            let (ack, fill) = (rs[0] - rq, rs[1] - rq);
            // Inside the engines' windows: acceptor's receive→send ≤ wire ≤ initiator's.
            assert!(
                ack_send - recv <= ack + EPS_NS && ack <= ack_recv - send + EPS_NS,
                "{what} {id}: wire ack latency {ack} ns outside [{}, {}]",
                ack_send - recv,
                ack_recv - send
            );
            assert!(
                fill_send - recv <= fill + EPS_NS && fill <= fill_recv - send + EPS_NS,
                "{what} {id}: wire fill latency {fill} ns outside [{}, {}]",
                fill_send - recv,
                fill_recv - send
            );
            if what == "live" {
                // One clock: each wire time between the engines' own.
                assert!(
                    send <= rq + EPS_NS && *rq <= recv + EPS_NS,
                    "{id}: request {rq}"
                );
                assert!(
                    ack_send <= rs[0] + EPS_NS && rs[0] <= ack_recv + EPS_NS,
                    "{id}: ack"
                );
                assert!(
                    fill_send <= rs[1] + EPS_NS && rs[1] <= fill_recv + EPS_NS,
                    "{id}: fill"
                );
                excess_lo.push(ack - (ack_send - recv));
                excess_hi.push((ack_recv - send) - ack);
            }
        }
    }
    excess_lo.sort_unstable();
    excess_hi.sort_unstable();
    let med = |v: &[u64]| v[v.len() / 2] / 1000;
    eprintln!(
        "QuickFIX/J, {ORDERS} orders: wire ack latency exceeds the acceptor's own by a median \
         {} µs and stays under the initiator's by a median {} µs",
        med(&excess_lo),
        med(&excess_hi)
    );
}
