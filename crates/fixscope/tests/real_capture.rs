//! A capture recorded by real `tcpdump` of real TCP traffic on loopback, analysed by
//! fixscope and cross-checked against tshark's FIX dissector (message counts, ClOrdIDs)
//! and against the latencies the test's own server logged.

mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fixscope_core::fix::framing::{FramingCounters, StreamFramer};
use fixscope_core::fix::message::find_field;
use fixscope_testkit::fix::ack_and_fill;
use fixscope_testkit::{require_root, require_tool};
use support::*;

/// Answers every NewOrderSingle with an ack and a fill, in one write or two.
fn serve(listener: TcpListener, orders: usize) {
    let (mut sock, _) = listener.accept().unwrap();
    sock.set_nodelay(true).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut framer = StreamFramer::new();
    let mut counters = FramingCounters::default();
    let mut buf = vec![0u8; 65536];
    let mut answered = 0;
    while answered < orders {
        let n = sock.read(&mut buf).unwrap();
        assert!(n > 0, "client closed early");
        let mut replies: Vec<Vec<u8>> = Vec::new();
        framer.push(&buf[..n], 0, &mut counters, |m| {
            let id = String::from_utf8_lossy(find_field(m.bytes, 11).unwrap()).into_owned();
            let (ack, fill) = ack_and_fill("CLI", &id);
            replies.push(ack);
            replies.push(fill);
        });
        for pair in replies.chunks(2) {
            sock.write_all(&pair[0]).unwrap();
            sock.write_all(&pair[1]).unwrap();
            answered += 1;
        }
    }
    // Wait for the client's close so the capture ends cleanly.
    let _ = sock.read(&mut buf);
}

#[test]
fn tcpdump_capture_matches_tshark_dissector() {
    const TEST: &str = "tcpdump_capture_matches_tshark_dissector";
    require_tool(TEST, "tcpdump");
    require_tool(TEST, "tshark");
    // tcpdump captures on lo.
    require_root(TEST);
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("lo.pcap");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut tcpdump = Command::new("tcpdump")
        // A 64 MiB kernel buffer: with the default 2 MiB, tcpdump dropped up to 230 of
        // ~3600 packets while other tests loaded both CPUs.
        .args([
            "-i",
            "lo",
            "-U",
            "--immediate-mode",
            "-s",
            "0",
            "-B",
            "65536",
            "-w",
        ])
        .arg(&cap)
        .arg(format!("tcp port {port}"))
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // tcpdump says "listening on lo" once the capture runs.
    let mut err = BufReader::new(tcpdump.stderr.take().unwrap());
    let mut line = String::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !line.contains("listening on") {
        line.clear();
        assert!(
            err.read_line(&mut line).unwrap() > 0 && Instant::now() < deadline,
            "tcpdump did not start"
        );
    }
    const ORDERS: usize = 500;
    let server = std::thread::spawn(move || serve(listener, ORDERS));
    let mut client = TcpStream::connect(("127.0.0.1", port)).unwrap();
    client.set_nodelay(true).unwrap();
    let mut sent_ids = Vec::new();
    for i in 0..ORDERS {
        let id = format!("REAL-{i:05}-{}", "k".repeat(i % 40));
        let order = fix_message(
            "FIX.4.4",
            &[
                (35, "D"),
                (49, "CLI"),
                (56, "EXCH"),
                (11, &id),
                (55, "IBM"),
                (38, "100"),
            ],
        );
        if i % 3 == 0 {
            // Split inside the ClOrdID: two segments.
            let cut = find(&order, b"\x0111=").unwrap() + 6;
            client.write_all(&order[..cut]).unwrap();
            std::thread::sleep(Duration::from_micros(200));
            client.write_all(&order[cut..]).unwrap();
        } else {
            client.write_all(&order).unwrap();
        }
        sent_ids.push(id);
        if i % 50 == 0 {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    // Our FIN tells the server all orders are in (it answers them, then sees the close).
    client.shutdown(std::net::Shutdown::Write).unwrap();
    server.join().unwrap();
    drop(client);
    // Stop tcpdump once its file has stopped growing (a fixed 300 ms once lost the last
    // 24 responses on a loaded machine: tcpdump had not written them yet).
    let mut last = 0;
    let mut still = 0;
    let settle_deadline = Instant::now() + Duration::from_secs(10);
    while still < 3 && Instant::now() < settle_deadline {
        std::thread::sleep(Duration::from_millis(150));
        let len = std::fs::metadata(&cap).map(|m| m.len()).unwrap_or(0);
        still = if len == last && len > 0 { still + 1 } else { 0 };
        last = len;
    }
    // SAFETY: kill(2) on the PID of the tcpdump child we spawned; it is still our child.
    unsafe {
        libc::kill(tcpdump.id() as i32, libc::SIGTERM);
    }
    tcpdump.wait().unwrap();
    // A capture tcpdump could not keep up with is no ground truth (fixscope reports such
    // losses as tcp_gaps, which the assertions below would then show).
    let mut stats = String::new();
    std::io::Read::read_to_string(&mut err, &mut stats).unwrap();
    assert!(
        stats
            .lines()
            .any(|l| l.trim() == "0 packets dropped by kernel"),
        "tcpdump lost packets, the capture is incomplete: {stats}"
    );

    // fixscope
    let trace = dir.path().join("trace.csv");
    let (_, summary) = analyse(
        &[&cap],
        &["-p", &port.to_string(), "--trace", trace.to_str().unwrap()],
    );
    assert_eq!(counter(&summary, "requests"), ORDERS as u64);
    assert_eq!(counter(&summary, "responses"), 2 * ORDERS as u64);
    assert_eq!(counter(&summary, "matched"), ORDERS as u64);
    assert_eq!(stage(&summary, "fill")["count"], ORDERS as u64);
    assert_eq!(counter(&summary, "tcp_gaps"), 0);
    let mut fixscope_ids: BTreeMap<(String, String), usize> = BTreeMap::new();
    for line in std::fs::read_to_string(&trace).unwrap().lines().skip(1) {
        let cols: Vec<&str> = line.split(',').collect();
        *fixscope_ids
            .entry((cols[3].to_string(), cols[4].to_string()))
            .or_default() += 1;
    }

    // tshark's FIX dissector on the same file.
    let out = Command::new("tshark")
        .args([
            "-r",
            cap.to_str().unwrap(),
            "-d",
            &format!("tcp.port=={port},fix"),
            "-Y",
            "fix",
            "-T",
            "fields",
            "-E",
            "occurrence=a",
            "-E",
            "aggregator=;",
            "-e",
            "fix.MsgType",
            "-e",
            "fix.ClOrdID",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut tshark_ids: BTreeMap<(String, String), usize> = BTreeMap::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let mut cols = line.split('\t');
        let types: Vec<&str> = cols.next().unwrap_or("").split(';').collect();
        let ids: Vec<&str> = cols.next().unwrap_or("").split(';').collect();
        for (t, id) in types.iter().zip(ids.iter()) {
            *tshark_ids
                .entry((t.to_string(), id.to_string()))
                .or_default() += 1;
        }
    }
    assert_eq!(
        tshark_ids.values().sum::<usize>(),
        3 * ORDERS,
        "tshark message count"
    );
    assert_eq!(
        fixscope_ids, tshark_ids,
        "fixscope and tshark disagree on messages"
    );
    for id in &sent_ids {
        assert_eq!(fixscope_ids.get(&("D".to_string(), id.clone())), Some(&1));
    }
}
