//! No ClOrdID and no payload byte reaches fixscope's messages or report unless asked for
//! (`--trace`; the report's slowest-orders list, `--slowest N`, names its orders' keys and
//! nothing else does — `--slowest 0` turns it off): traffic with distinctive ClOrdIDs and text — answered, unanswered (timed
//! out), unmatched, duplicated, with a bad checksum, plus garbage — measured live (text and
//! JSON) and from a tcpdump capture of it (whole and truncated mid-message), and the
//! canary is looked for in everything fixscope printed. The trace file is the positive
//! control: it must hold the ClOrdIDs, so the traffic did reach fixscope.
//!
//! Needs root (BPF, a network namespace) and tcpdump: without them the test fails loudly.

// Not every helper is used here.
#[allow(unused_imports)]
mod support;
#[allow(unused_imports)]
mod support_live;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use fixscope_testkit::fix::fix_message;
use fixscope_testkit::netns::enter_netns;
use support_live::*;

const CANARY: &str = "LEAKCANARY";

fn order(id: &str) -> Vec<u8> {
    fix_message(
        "FIX.4.4",
        &[
            (35, "D"),
            (49, "C"),
            (56, "S"),
            (11, id),
            (55, "CANARYSYM"),
            (58, "LEAKCANARY-TEXT-PAYLOAD"),
        ],
    )
}

fn report(id: &str) -> Vec<u8> {
    fix_message(
        "FIX.4.4",
        &[
            (35, "8"),
            (49, "S"),
            (56, "C"),
            (11, id),
            (150, "0"),
            (39, "0"),
        ],
    )
}

/// Client and server on `ns`'s loopback, in one thread (it enters the namespace), on `port`.
fn send_traffic(ns: &str, port: u16) {
    let ns = ns.to_string();
    std::thread::spawn(move || {
        enter_netns(&ns).expect("setns");
        let listener = TcpListener::bind(("127.0.0.1", port)).expect("bind");
        let mut client = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        let (mut server, _) = listener.accept().expect("accept");
        server
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let drain = |s: &mut TcpStream, n: usize| {
            let mut buf = vec![0u8; n];
            s.read_exact(&mut buf).expect("read");
        };
        let mut step = |req: Vec<u8>, resp: Option<Vec<u8>>| {
            client.write_all(&req).expect("write");
            drain(&mut server, req.len());
            if let Some(r) = resp {
                server.write_all(&r).expect("write");
                drain(&mut client, r.len());
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        step(order("LEAKCANARY-ORD-1"), Some(report("LEAKCANARY-ORD-1")));
        step(order("LEAKCANARY-ORD-2"), None); // never answered: times out
        step(order("LEAKCANARY-ORD-3"), None);
        step(order("LEAKCANARY-ORD-3"), Some(report("LEAKCANARY-ORD-3"))); // duplicate
        step(b"LEAKCANARY-GARBAGE-BYTES\x01".to_vec(), None);
        let mut bad = order("LEAKCANARY-BADSUM");
        let n = bad.len();
        bad[n - 2] = if bad[n - 2] == b'0' { b'1' } else { b'0' };
        step(bad, None);
        server
            .write_all(&report("LEAKCANARY-UNMATCHED"))
            .expect("write");
        drain(&mut client, report("LEAKCANARY-UNMATCHED").len());
        // The first half of an order, then the connection closes: a message cut short.
        let half = order("LEAKCANARY-CUT");
        client.write_all(&half[..half.len() / 2]).expect("write");
        drain(&mut server, half.len() / 2);
        std::thread::sleep(Duration::from_millis(300));
    })
    .join()
    .expect("traffic thread");
}

fn assert_no_canary(what: &str, text: &str) {
    assert!(
        !text.contains(CANARY) && !text.contains("CANARYSYM"),
        "{what} shows a ClOrdID or payload:\n{text}"
    );
}

#[test]
fn no_clordid_or_payload_in_messages_or_reports() {
    require_root("no_clordid_or_payload_in_messages_or_reports");
    require_tool("no_clordid_or_payload_in_messages_or_reports", "tcpdump");
    let _g = serial();
    let ns = Netns::create(&[format!("fxs-{}-leak", std::process::id())]);
    let ns_name = ns.0[0].clone();
    run("ip", &["-n", &ns_name, "link", "set", "lo", "up"]);
    let port: u16 = 39_871;
    let dir = tempfile::tempdir().expect("tempdir");
    let cap = dir.path().join("leak.pcap");
    let trace = dir.path().join("trace.csv");
    let cap_s = cap.to_str().expect("utf-8").to_string();
    let trace_s = trace.to_str().expect("utf-8").to_string();

    let mut tcpdump = Proc::spawn("tcpdump", {
        let mut c = std::process::Command::new("ip");
        c.args([
            "netns",
            "exec",
            &ns_name,
            "tcpdump",
            "-i",
            "lo",
            "-U",
            // Packets reach tcpdump at once, not when a 1 s buffer block times out: the
            // capture is complete when tcpdump is stopped right after the traffic.
            "--immediate-mode",
            "-w",
            &cap_s,
        ])
        .args(["tcp", "port", &port.to_string()]);
        c
    });
    tcpdump.wait_for_stderr("listening on", Duration::from_secs(10));
    let port_s = port.to_string();
    let live_text = Proc::spawn(
        "fixscope live (text)",
        fixscope_cmd(
            Some(&ns_name),
            &[
                "live",
                "-i",
                "lo",
                "-p",
                &port_s,
                "-t",
                "0.1",
                "-r",
                "0.2",
                "--slowest",
                "0",
            ],
        ),
    );
    let mut live_json = start_live(
        Some(&ns_name),
        "lo",
        port,
        &["--json", "-t", "0.1", "--slowest", "0", "--trace", &trace_s],
    );
    let mut live_text = live_text;
    live_text.wait_for_stderr("fixscope: watching", Duration::from_secs(15));

    send_traffic(&ns_name, port);
    std::thread::sleep(Duration::from_millis(300));
    for p in [&mut live_text, &mut live_json.proc, &mut tcpdump] {
        p.signal(libc::SIGTERM);
    }
    let t = live_text.finish(Duration::from_secs(10));
    let j = live_json.proc.finish(Duration::from_secs(10));
    let _ = tcpdump.finish(Duration::from_secs(10));
    for (what, f) in [("live text", &t), ("live --json", &j)] {
        assert_eq!(f.status.code(), Some(0), "{what}: {}", f.stderr);
        assert_no_canary(&format!("{what} stderr"), &f.stderr);
        assert_no_canary(&format!("{what} stdout"), &f.stdout);
    }
    // The traffic did reach fixscope, with every kind of trouble counted.
    let (_, summary) = parse_report(&j.stdout);
    let c = &summary["counters"];
    assert_eq!(c["requests"], 4, "{c}"); // the one with a bad checksum is not a message
    assert!(c["duplicate_requests"].as_u64() >= Some(1), "{c}");
    assert_eq!(c["matched"], 2, "{c}");
    assert!(c["timed_out"].as_u64() >= Some(1), "{c}");
    assert!(c["bad_checksum"].as_u64() >= Some(1), "{c}");
    assert!(c["unmatched_responses"].as_u64() >= Some(1), "{c}");
    // Positive control: asked for with --trace, the ClOrdIDs are there.
    let traced = std::fs::read_to_string(&trace).expect("trace");
    assert!(traced.contains("LEAKCANARY-ORD-1"), "{traced}");

    // Offline, from tcpdump's capture: whole, and cut in the middle of a packet.
    let bytes = std::fs::read(&cap).expect("capture");
    assert!(bytes.len() > 200, "tcpdump captured the traffic");
    let cut = dir.path().join("cut.pcap");
    std::fs::write(&cut, &bytes[..bytes.len() - 37]).expect("write");
    for file in [&cap, &cut] {
        for fmt in [&["--json"][..], &[]] {
            let mut args = vec![
                "pcap",
                file.to_str().expect("utf-8"),
                "-p",
                &port_s,
                "-t",
                "0.1",
                "--slowest",
                "0",
            ];
            args.extend_from_slice(fmt);
            let out = fixscope_cmd(None, &args).output().expect("fixscope pcap");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!err.contains("panicked"), "{err}");
            assert_no_canary(&format!("pcap {file:?} {fmt:?} stderr"), &err);
            assert_no_canary(
                &format!("pcap {file:?} {fmt:?} stdout"),
                &String::from_utf8_lossy(&out.stdout),
            );
        }
    }
    // The default `--slowest 10`: the slowest-orders lists name the matched orders' keys
    // (what they are for), and nothing else in the report or on stderr does.
    let out = fixscope_cmd(
        None,
        &[
            "pcap",
            cap.to_str().expect("utf-8"),
            "-p",
            &port_s,
            "-t",
            "0.1",
            "--json",
        ],
    )
    .output()
    .expect("fixscope pcap");
    assert_no_canary(
        "pcap --slowest 10 stderr",
        &String::from_utf8_lossy(&out.stderr),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut named = 0;
    for line in stdout.lines() {
        let mut v: serde_json::Value = serde_json::from_str(line).expect("JSON line");
        if let Some(slowest) = v.as_object_mut().and_then(|o| o.remove("slowest")) {
            named += slowest.to_string().matches("LEAKCANARY-ORD-").count();
        }
        assert_no_canary(
            "pcap --slowest 10 stdout without the slowest lists",
            &v.to_string(),
        );
    }
    assert!(
        named > 0,
        "the slowest lists name the matched orders: {stdout}"
    );
}
