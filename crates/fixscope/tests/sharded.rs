//! `fixscope pcap --threads N` (issue #22): connections sharded across worker pipelines
//! (`--threads 3` and more), and one pipeline in two stages on two threads (`--threads 2`,
//! the default below 4 cores: `fixscope_core::twostage`), must give one thread's output
//! byte for byte — stdout text and JSON, the HdrHistogram
//! log, the HTML page — on the real captures in testdata/ and on captures with many
//! connections, many intervals, `-t` alerts, ties among the slowest orders and sessions
//! that reconnect or reuse ports.
//!
//! With the FIX session layer (#21): session-layer counters, rates and 1 ms peaks (per
//! session and in total), `test_request_rtt`, reject reasons and `--by` groups (under
//! `--by-limit`) too; and a session split across shard keys (a failover) makes the run
//! fall back to one pipeline, with one pipeline's bytes.

mod support;

use std::path::{Path, PathBuf};

use fixscope_core::pcap_writer::SyntheticConnection;
use fixscope_core::Endpoint;
use support::*;

/// Every output of one run, as bytes.
#[derive(Debug, PartialEq, Eq)]
struct Outputs {
    stdout: Vec<u8>,
    hlog: Vec<u8>,
    html: Vec<u8>,
}

/// `threads` 0: no `--threads` (the default: on 2–3 cores one pipeline in two stages,
/// from 4 one worker per core); 1: everything on one thread; 2: two stages; 3+: sharded.
fn run(dir: &Path, captures: &[&Path], threads: usize, extra: &[&str]) -> Outputs {
    let hlog = dir.join(format!("t{threads}.hlog"));
    let html = dir.join(format!("t{threads}.html"));
    let threads_s = threads.to_string();
    let mut args: Vec<String> = vec!["pcap".into()];
    args.extend(captures.iter().map(|p| p.display().to_string()));
    args.extend(extra.iter().map(|s| s.to_string()));
    let interval = !extra.windows(2).any(|w| w == ["-r", "0"]);
    if interval {
        args.extend(["--hlog".into(), hlog.display().to_string()]);
    }
    args.extend(["--html".into(), html.display().to_string()]);
    if threads > 0 {
        args.extend(["--threads".into(), threads_s.clone()]);
    }
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = fixscope(&argv);
    assert!(
        out.status.success(),
        "fixscope {argv:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Nothing but the reports: no progress bar in a pipe (stderr is one here).
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.stderr.is_empty(), "{stderr}");
    let read = |p: &PathBuf| std::fs::read(p).unwrap_or_default();
    // The page shows the command line, which names the thread count and the file names.
    let html = String::from_utf8(read(&html))
        .unwrap()
        .replace(&format!(" --threads {threads_s}"), "")
        .replace(&format!("t{threads}."), "tN.");
    Outputs {
        stdout: out.stdout,
        hlog: read(&hlog),
        html: html.into_bytes(),
    }
}

/// The first top-level field two JSON lines differ in, with both values (a diagnosis).
fn first_json_difference(a: &str, b: &str) -> Option<String> {
    let (a, b): (serde_json::Value, serde_json::Value) =
        (serde_json::from_str(a).ok()?, serde_json::from_str(b).ok()?);
    let (a, b) = (a.as_object()?, b.as_object()?);
    a.iter().find(|(k, v)| b.get(*k) != Some(v)).map(|(k, v)| {
        let cut = |v: String| v.chars().take(1500).collect::<String>();
        format!(
            "{k}: {} vs {}",
            cut(v.to_string()),
            cut(b.get(k).map_or(String::new(), |v| v.to_string()))
        )
    })
}

fn assert_same_for_every_thread_count(captures: &[&Path], extra: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let one = run(dir.path(), captures, 1, extra);
    assert!(!one.stdout.is_empty());
    for threads in [0, 2, 3, 8] {
        let many = run(dir.path(), captures, threads, extra);
        for (what, a, b) in [
            ("stdout", &one.stdout, &many.stdout),
            ("hlog", &one.hlog, &many.hlog),
            ("html", &one.html, &many.html),
        ] {
            if a != b {
                let (a, b) = (String::from_utf8_lossy(a), String::from_utf8_lossy(b));
                let line = a.lines().zip(b.lines()).position(|(x, y)| x != y);
                let field =
                    line.and_then(|l| first_json_difference(a.lines().nth(l)?, b.lines().nth(l)?));
                eprintln!("first differing JSON field: {field:?}");
                panic!(
                    "{what} of --threads {threads} differs from one pipeline's ({captures:?} {extra:?}) \
                     at line {line:?}:\n{:?}\n{:?}",
                    line.and_then(|l| a.lines().nth(l)),
                    line.and_then(|l| b.lines().nth(l)),
                );
            }
        }
    }
}

#[test]
fn real_captures_give_one_pipelines_bytes() {
    let sim = fixscope_testkit::test_data("captures/sim/sim_orders.pcap");
    let ndpi = fixscope_testkit::test_data("captures/ndpi/ndpi_fix.pcap");
    let ndpi2 = fixscope_testkit::test_data("captures/ndpi/ndpi_fix2.pcap");
    for extra in [
        &["-p", "19478", "--json", "-r", "0.05"][..],
        &["-p", "19478", "-r", "0.1", "--slowest", "3"],
        &["-p", "19478", "--json", "-r", "0"],
        &["-p", "19478", "--json", "-t", "0.005", "-r", "0.2"],
        // The session layer: latency by symbol, rates and microbursts per session.
        &["-p", "19478", "--json", "-r", "0.05", "--by", "55"],
        &[
            "-p",
            "19478",
            "-r",
            "0.1",
            "--by",
            // Two tags the orders carry (Account, 1, is in none of them: that is warned).
            "55,54",
            "--by-limit",
            "2",
        ],
    ] {
        assert_same_for_every_thread_count(&[&sim], extra);
    }
    assert_same_for_every_thread_count(&[&ndpi], &["-p", "4000", "--json", "-r", "1"]);
    assert_same_for_every_thread_count(&[&ndpi2], &["-p", "1-65535", "--json"]);
    // Several files as one timeline.
    assert_same_for_every_thread_count(&[&ndpi, &sim], &["-p", "4000,19478", "--json"]);
}

/// 600 connections from 150 client hosts to 3 servers: each client reconnects (new port,
/// same session addresses), some reuse a port (a new SYN on a known 4-tuple), some end
/// with RST, some never answer; ClOrdIDs collide across sessions; latencies tie.
fn many_connections(path: &Path) {
    write_pcap(path, &many_connections_packets());
}

fn many_connections_packets() -> Vec<TimedPacket> {
    let mut packets = Vec::new();
    let t0 = 1_700_000_000_000_000_000u64;
    for c in 0..150u32 {
        let client_ip = format!("10.1.{}.{}", c / 200, c % 200 + 1);
        let server_ip = format!("10.9.0.{}", c % 3 + 1);
        for round in 0..4u64 {
            let port = if c % 10 == 0 {
                40000
            } else {
                40000 + round as u16
            };
            let client = Endpoint {
                addr: client_ip.parse().unwrap(),
                port,
            };
            let server = Endpoint {
                addr: server_ip.parse().unwrap(),
                port: 9878,
            };
            let isn = 1_000 + round as u32 * 7_919;
            let mut conn = SyntheticConnection::with_isns(client, server, isn, isn * 3);
            let mut ts = t0 + round * 40_000_000 + u64::from(c) * 7_000;
            for spec in conn.handshake() {
                packets.push(at(ts, spec));
                ts += 1_000;
            }
            for i in 0..8u64 {
                let id = format!("ORD{}", i + round * 8); // colliding across sessions
                let comp_id = format!("C{c}"); // one FIX session per client host
                let order = fix_order(&comp_id, &id);
                packets.push(at(ts, conn.client_sends(&order)));
                // Latencies repeat (ties), some long enough for `-t 2ms`.
                let lat = [20_000u64, 20_000, 35_000, 3_000_000][(i as usize + c as usize) % 4];
                if !(c % 7 == 3 && i == 5) {
                    let ack = fix_exec(&comp_id, &id, '0');
                    packets.push(at(ts + lat, conn.server_sends(&ack)));
                    let fill = fix_exec(&comp_id, &id, '2');
                    packets.push(at(ts + lat + 5_000, conn.server_sends(&fill)));
                }
                ts += 1_500_000;
            }
            if c % 5 == 0 {
                packets.push(at(ts, conn.client_rst()));
            } else if c % 5 != 1 {
                // (c % 5 == 1: left open, as a capture cut mid-session leaves it)
                packets.push(at(ts, conn.client_fin()));
                packets.push(at(ts + 1_000, conn.server_fin()));
            }
        }
    }
    packets.sort_by_key(|p| p.ts_ns);
    packets
}

/// Issue #36: a capture split into files given out of time order — a rotation's files in
/// the wrong order, or the files of two taps over one time span (each holding some of the
/// connections) — is read as one timeline: the whole capture's bytes, on every plan, and
/// a note on stderr says what was done.
#[test]
fn split_captures_in_any_order_give_the_whole_captures_bytes() {
    let dir = tempfile::tempdir().unwrap();
    // Half the client hosts 1 ns later: no two packets of the two taps at the same time
    // (equal times go in the order the files are given, as in mergecap).
    let odd_host = |p: &TimedPacket| {
        let client = if p.spec.flow.dst.port == 9878 {
            p.spec.flow.src
        } else {
            p.spec.flow.dst
        };
        match client.addr {
            std::net::IpAddr::V4(a) => a.octets()[3] % 2 == 1,
            std::net::IpAddr::V6(_) => false,
        }
    };
    let mut packets = many_connections_packets();
    for p in &mut packets {
        p.ts_ns += u64::from(odd_host(p));
    }
    packets.sort_by_key(|p| p.ts_ns);
    let copy = |p: &TimedPacket| TimedPacket {
        ts_ns: p.ts_ns,
        spec: p.spec.clone(),
        iface: p.iface,
    };
    let file = |name: &str, packets: Vec<TimedPacket>| {
        let path = dir.path().join(name);
        write_pcap(&path, &packets);
        path
    };
    let whole = file("whole.pcap", packets.iter().map(copy).collect());
    let half = packets.len() / 2;
    let early = file("early.pcap", packets[..half].iter().map(copy).collect());
    let late = file("late.pcap", packets[half..].iter().map(copy).collect());
    let odd = file(
        "odd.pcap",
        packets.iter().filter(|p| odd_host(p)).map(copy).collect(),
    );
    let even = file(
        "even.pcap",
        packets.iter().filter(|p| !odd_host(p)).map(copy).collect(),
    );
    let flags = ["-p", "9878", "--json", "-r", "0.05", "--slowest", "4"];
    let run = |captures: &[&PathBuf], threads: &str| {
        let mut args: Vec<String> = vec!["pcap".into()];
        args.extend(captures.iter().map(|p| p.display().to_string()));
        args.extend(flags.iter().map(|s| s.to_string()));
        args.extend(["--threads".into(), threads.into()]);
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = fixscope(&argv);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{argv:?}: {stderr}");
        (out.stdout, stderr)
    };
    let (expected, quiet) = run(&[&whole], "1");
    let (early, late, odd, even) = (&early, &late, &odd, &even);
    assert!(quiet.is_empty(), "{quiet}");
    for threads in ["1", "2", "3", "8"] {
        for (given, said) in [
            ([late, early], "not given in time order"),
            ([early, late], ""),
            ([even, odd], "overlap in time"),
            ([odd, even], "overlap in time"),
        ] {
            let (got, stderr) = run(&given, threads);
            if got != expected {
                let (a, b) = (
                    String::from_utf8_lossy(&expected),
                    String::from_utf8_lossy(&got),
                );
                let line = a.lines().zip(b.lines()).position(|(x, y)| x != y);
                let field =
                    line.and_then(|l| first_json_difference(a.lines().nth(l)?, b.lines().nth(l)?));
                panic!("{given:?} --threads {threads}: not the whole capture's output: {field:?}");
            }
            if said.is_empty() {
                assert!(stderr.is_empty(), "{given:?}: {stderr}");
            } else {
                assert!(stderr.contains(said), "{given:?}: {stderr}");
                assert_eq!(stderr.lines().count(), 1, "said once: {stderr}");
            }
        }
    }
}

fn fix_order(client: &str, id: &str) -> Vec<u8> {
    fixscope_testkit::fix::fix_message(
        "FIX.4.4",
        &[
            (35, "D"),
            (49, client),
            (56, "X"),
            (11, id),
            (55, "ABC"),
            (54, "1"),
            (38, "100"),
        ],
    )
}

fn fix_exec(client: &str, id: &str, status: char) -> Vec<u8> {
    let s = status.to_string();
    fixscope_testkit::fix::fix_message(
        "FIX.4.4",
        &[
            (35, "8"),
            (49, "X"),
            (56, client),
            (11, id),
            (150, &s),
            (39, &s),
        ],
    )
}

/// What the counters capture makes, computed as it is written.
#[derive(Default)]
struct CountersTruth {
    /// Latencies above `-x`, every stage (first response, ack, fill, ack to fill).
    over_range: u64,
}

/// `-x` and `-t` of the counters capture, in ns.
const COUNTERS_X_NS: u64 = 1_000_000;
const COUNTERS_T_NS: u64 = 20_000_000;

/// 12 client hosts, 10 orders each, answered to make many counters: latencies above `-x`
/// (one at `-x` + 1 ns, one at `-x` exactly: not above), answers after `-t` (`late`),
/// orders never answered (`timed_out`, `unanswered_pending`),
/// answers to no order (`unmatched_responses`), an order sent twice (`duplicate_requests`),
/// rejects, fills, heartbeats; one connection loses a segment (`tcp_gaps`), some end with
/// RST, some stay open. Each connection's packets are in time order on the wire (the
/// sequence numbers follow the timestamps), so the only hole is the lost segment.
fn counters_capture(path: &Path) -> CountersTruth {
    enum Side {
        Client,
        Server,
    }
    let mut truth = CountersTruth::default();
    let mut over = |latencies: &[u64]| {
        truth.over_range += latencies.iter().filter(|&&l| l > COUNTERS_X_NS).count() as u64;
    };
    let mut packets = Vec::new();
    let t0 = 1_700_000_200_000_000_000u64;
    let server = Endpoint {
        addr: "10.7.0.1".parse().unwrap(),
        port: 9878,
    };
    for c in 0..12u32 {
        let client = Endpoint {
            addr: format!("10.3.0.{}", c + 1).parse().unwrap(),
            port: 42000,
        };
        let comp = format!("K{c}");
        let start = t0 + u64::from(c) * 3_000_000;
        // (time, side, payload, sent: false for the segment the capture lost)
        let mut script: Vec<(u64, Side, Vec<u8>, bool)> = Vec::new();
        let heartbeat = fixscope_testkit::fix::fix_message(
            "FIX.4.4",
            &[(35, "0"), (49, comp.as_str()), (56, "X")],
        );
        script.push((start + 10_000, Side::Client, heartbeat, true));
        let gap_connection = c == 5;
        let mut ts = start + 100_000;
        for i in 0..10u32 {
            let id = format!("{comp}-{i}");
            let order = fix_order(&comp, &id);
            let answer = |status| fix_exec(&comp, &id, status);
            if gap_connection {
                // Every answer 100 µs after its order: whatever the hole does to this
                // connection, no latency of it is above `-x`.
                script.push((ts, Side::Client, order, i != 4));
                script.push((ts + 100_000, Side::Server, answer('0'), true));
                ts += 200_000;
                continue;
            }
            script.push((ts, Side::Client, order.clone(), true));
            match (c + i) % 8 {
                0 => {
                    script.push((ts + 2_500_000, Side::Server, answer('0'), true));
                    over(&[2_500_000; 2]);
                }
                1 => {
                    // After `-t`: timed out, then answered late with its true latency.
                    let lat = COUNTERS_T_NS + 10_000_000;
                    script.push((ts + lat, Side::Server, answer('0'), true));
                    over(&[lat; 2]);
                }
                2 => {} // never answered
                3 => {
                    script.push((ts + 100_000, Side::Server, answer('0'), true));
                    let stray = fix_exec(&comp, &format!("{id}-none"), '0');
                    script.push((ts + 150_000, Side::Server, stray, true));
                }
                4 => {
                    script.push((ts + 10_000, Side::Client, order, true));
                    script.push((ts + 200_000, Side::Server, answer('0'), true));
                }
                5 => script.push((ts + 500_000, Side::Server, answer('8'), true)),
                6 => {
                    // At `-x` exactly: in range.
                    script.push((ts + COUNTERS_X_NS, Side::Server, answer('0'), true));
                    over(&[COUNTERS_X_NS; 2]);
                }
                _ => {
                    let (ack, fill) = (COUNTERS_X_NS + 1, COUNTERS_X_NS + 3_000_001);
                    script.push((ts + ack, Side::Server, answer('0'), true));
                    script.push((ts + fill, Side::Server, answer('2'), true));
                    // first response, ack, fill, ack to fill
                    over(&[ack, ack, fill, fill - ack]);
                }
            }
            ts += 1_000_000;
        }
        script.sort_by_key(|e| e.0);
        let mut conn = SyntheticConnection::with_isns(client, server, 9_000 + c * 211, 70_000 + c);
        for spec in conn.handshake() {
            packets.push(at(start, spec));
        }
        let mut last = start;
        for (ts, side, payload, sent) in script {
            let spec = match side {
                Side::Client => conn.client_sends(&payload),
                Side::Server => conn.server_sends(&payload),
            };
            if sent {
                packets.push(at(ts, spec));
            }
            last = ts;
        }
        match c % 4 {
            0 => packets.push(at(last + 1_000, conn.client_rst())),
            1 => {} // still open at the end
            _ => {
                packets.push(at(last + 1_000, conn.client_fin()));
                packets.push(at(last + 2_000, conn.server_fin()));
            }
        }
    }
    packets.sort_by_key(|p| p.ts_ns);
    write_pcap(path, &packets);
    truth
}

/// Issue #47 (7): every plan — one thread, two stages, the default, sharded — gives the
/// same counters, every one of them by name (not a chosen list), in the summary and in
/// every interval; and `over_range` is the capture's count of latencies above `-x`.
#[test]
fn every_plan_gives_the_same_counters() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("counters.pcap");
    let truth = counters_capture(&cap);
    let sim = fixscope_testkit::test_data("captures/sim/sim_orders.pcap");
    let x = (COUNTERS_X_NS as f64 / 1e6).to_string();
    let t = (COUNTERS_T_NS as f64 / 1e9).to_string();
    let ours = ["-p", "9878", "--json", "-r", "0.01", "-x", &x, "-t", &t];
    // The simulator's capture with a small `-x`: many latencies above it.
    let theirs = [
        "-p", "19478", "--json", "-r", "0.05", "-x", "0.05", "-t", "0.005",
    ];
    for (capture, extra) in [(&cap, &ours[..]), (&sim, &theirs[..])] {
        // Every counter of each line: the intervals', then the summary's.
        let counters = |threads| -> Vec<serde_json::Map<String, serde_json::Value>> {
            let out = run(dir.path(), &[capture], threads, extra);
            String::from_utf8(out.stdout)
                .unwrap()
                .lines()
                .map(|l| {
                    let line: serde_json::Value = serde_json::from_str(l).unwrap();
                    line["counters"].as_object().expect("counters").clone()
                })
                .collect()
        };
        let one = counters(1);
        let summary = one.last().unwrap();
        assert!(one.len() > 3, "intervals too: {} lines", one.len());
        if capture == &cap {
            assert_eq!(summary["over_range"], truth.over_range, "{summary:?}");
            // The capture makes these (else their comparison proves little).
            for name in [
                "late",
                "timed_out",
                "unanswered_pending",
                "untracked_requests",
                "unmatched_responses",
                "duplicate_requests",
                "order_rejects",
                "heartbeats",
                "tcp_gaps",
                "open_connections",
            ] {
                assert!(summary[name].as_u64().unwrap() > 0, "{name}: {summary:?}");
            }
        } else {
            assert!(summary["over_range"].as_u64().unwrap() > 0, "{summary:?}");
        }
        for threads in [0, 2, 4] {
            let many = counters(threads);
            assert_eq!(many.len(), one.len(), "--threads {threads}: lines");
            let mut differ = Vec::new();
            for (line, (a, b)) in one.iter().zip(&many).enumerate() {
                let names: std::collections::BTreeSet<_> = a.keys().chain(b.keys()).collect();
                for name in names {
                    if a.get(name) != b.get(name) {
                        differ.push(format!(
                            "line {line} {name}: {:?} vs {:?}",
                            a.get(name),
                            b.get(name)
                        ));
                    }
                }
            }
            assert!(
                differ.is_empty(),
                "--threads {threads} ({capture:?}): counters differ from one thread's:\n{}",
                differ.join("\n")
            );
        }
    }
}

#[test]
fn many_connections_give_one_pipelines_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("many.pcap");
    many_connections(&cap);
    let (_, summary) = analyse(&[&cap], &[]);
    assert!(counter(&summary, "connections") >= 600, "{summary}");
    // The `--by-candidates` case below folds candidates and overflows values (or it would
    // not test their merge).
    let (_, by) = analyse(
        &[&cap],
        &[
            "-r",
            "0",
            "--by",
            "49",
            "--by-limit",
            "5",
            "--by-candidates",
            "20",
        ],
    );
    let other = by["by"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["value"] == "(other)")
        .expect("(other)");
    assert!(other["values"].as_u64().unwrap() > 15, "{other}");
    assert!(other["values_overflowed"].as_u64().unwrap() > 0, "{other}");
    // Acks sent 3 ms late come after the next order's (their bytes earlier in the stream):
    // the holes they leave are given up, and orders waiting across one are answered but
    // not measured.
    assert!(
        counter(&summary, "matched") + counter(&summary, "answered_after_capture_hole") > 4000,
        "{}",
        summary["counters"]
    );
    assert!(
        counter(&summary, "matched") > 3000,
        "{}",
        summary["counters"]
    );
    for extra in [
        &["-p", "9878", "--json", "-r", "0.01"][..],
        &["-p", "9878", "-r", "0.05", "-t", "0.002", "--slowest", "4"],
        &["-p", "9878", "--json", "-r", "0", "-t", "0.002"],
        &["-p", "9878", "--json", "-r", "0.02", "--by", "55,49"],
        // The busiest 5 of hundreds of CompIDs chosen from the first 20 tracked: folded
        // candidates and overflowed values merged across workers as one pipeline.
        &[
            "-p",
            "9878",
            "--json",
            "-r",
            "0",
            "--by",
            "49",
            "--by-limit",
            "5",
            "--by-candidates",
            "20",
        ],
    ] {
        assert_same_for_every_thread_count(&[&cap], extra);
    }
}

/// Scripted session-layer traffic (as tests/session_replays.rs in fixscope-core) from 40
/// client hosts, each its own CompIDs, reconnecting once: Logons with HeartBtInt,
/// TestRequest → Heartbeat (`test_request_rtt`), orders answered, rejected by a session
/// Reject (RefSeqNum, reason 5) or a BusinessMessageReject (reason 3, by ClOrdID),
/// PossDup replays and a MsgSeqNum gap.
fn session_layer_connections(path: &Path, failover: bool) {
    let mut packets = Vec::new();
    let t0 = 1_700_000_100_000_000_000u64;
    for c in 0..40u32 {
        // With `failover`, the reconnect comes from another address (another shard key).
        let client_ip = |round: u64| format!("10.2.{}.{}", u64::from(failover) * round, c + 1);
        let server_ip = format!("10.8.0.{}", c % 2 + 1);
        let comp = format!("S{c}");
        let mut client_seq = 0u32;
        let mut server_seq = 0u32;
        for round in 0..2u64 {
            let client = Endpoint {
                addr: client_ip(round).parse().unwrap(),
                port: 41000 + round as u16,
            };
            let server = Endpoint {
                addr: server_ip.parse().unwrap(),
                port: 9878,
            };
            let isn = 5_000 + c * 13 + round as u32 * 7_919;
            let mut conn = SyntheticConnection::with_isns(client, server, isn, isn * 5);
            let mut ts = t0 + round * 30_000_000 + u64::from(c) * 11_000;
            for spec in conn.handshake() {
                packets.push(at(ts, spec));
                ts += 1_000;
            }
            let mut from_client = |fields: &[(u32, &str)], extra_seq: u32| {
                client_seq += 1 + extra_seq;
                let seq = client_seq.to_string();
                let mut all = vec![
                    (35, fields[0].1),
                    (49, comp.as_str()),
                    (56, "EX"),
                    (34, &seq),
                ];
                all.extend_from_slice(&fields[1..]);
                (
                    fixscope_testkit::fix::fix_message("FIX.4.4", &all),
                    client_seq,
                )
            };
            let (logon, _) = from_client(&[(35, "A"), (108, "30")], 0);
            packets.push(at(ts, conn.client_sends(&logon)));
            ts += 50_000;
            let mut from_server = |fields: &[(u32, &str)]| {
                server_seq += 1;
                let seq = server_seq.to_string();
                let mut all = vec![
                    (35, fields[0].1),
                    (49, "EX"),
                    (56, comp.as_str()),
                    (34, &seq),
                ];
                all.extend_from_slice(&fields[1..]);
                fixscope_testkit::fix::fix_message("FIX.4.4", &all)
            };
            packets.push(at(
                ts,
                conn.server_sends(&from_server(&[(35, "A"), (108, "30")])),
            ));
            ts += 100_000;
            packets.push(at(
                ts,
                conn.server_sends(&from_server(&[(35, "1"), (112, "T")])),
            ));
            ts += 20_000 + u64::from(c % 5) * 3_000;
            let (hb, _) = from_client(&[(35, "0"), (112, "T")], 0);
            packets.push(at(ts, conn.client_sends(&hb)));
            ts += 100_000;
            for i in 0..6u32 {
                let id = format!("{comp}-{round}-{i}");
                let gap = u32::from(i == 4 && c % 3 == 0);
                let (order, seq) =
                    from_client(&[(35, "D"), (11, &id), (55, "XYZ"), (54, "1")], gap);
                packets.push(at(ts, conn.client_sends(&order)));
                let lat = 15_000 + u64::from((c + i) % 4) * 5_000;
                let answer = match i {
                    2 => from_server(&[(35, "3"), (45, &seq.to_string()), (373, "5")]),
                    3 => from_server(&[(35, "j"), (379, &id), (380, "3"), (372, "D")]),
                    _ => from_server(&[(35, "8"), (11, &id), (150, "0"), (39, "0")]),
                };
                packets.push(at(ts + lat, conn.server_sends(&answer)));
                if i == 1 {
                    // The same order again under its MsgSeqNum: a replay, not an order.
                    let seq_s = seq.to_string();
                    let replay = fixscope_testkit::fix::fix_message(
                        "FIX.4.4",
                        &[
                            (35, "D"),
                            (49, &comp),
                            (56, "EX"),
                            (34, &seq_s),
                            (43, "Y"),
                            (11, &id),
                            (55, "XYZ"),
                            (54, "1"),
                        ],
                    );
                    packets.push(at(ts + lat + 10_000, conn.client_sends(&replay)));
                }
                ts += 400_000;
            }
            packets.push(at(ts, conn.client_fin()));
            packets.push(at(ts + 1_000, conn.server_fin()));
        }
    }
    packets.sort_by_key(|p| p.ts_ns);
    write_pcap(path, &packets);
}

#[test]
fn session_layer_traffic_gives_one_pipelines_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("session.pcap");
    session_layer_connections(&cap, false);
    let (_, summary) = analyse(&[&cap], &["-p", "9878"]);
    // The script exercises the session layer (else the comparison proves nothing about it).
    for name in [
        "logons",
        "heartbeats",
        "test_requests",
        "session_rejects",
        "business_rejects",
        "possdup_requests",
        "sequence_gaps",
    ] {
        assert!(counter(&summary, name) > 0, "{name}: {summary}");
    }
    assert!(
        summary["session_stages"][0]["count"].as_u64().unwrap_or(0) >= 80,
        "{summary}"
    );
    for extra in [
        &[
            "-p",
            "9878",
            "--json",
            "-r",
            "0.01",
            "--by",
            "55,49",
            "--by-limit",
            "7",
        ][..],
        &["-p", "9878", "-r", "0.02", "--by", "49"],
    ] {
        assert_same_for_every_thread_count(&[&cap], extra);
    }
}

/// A session whose reconnect comes from another address is one session for one pipeline
/// but two shard keys: a sharded run notices, says so on stderr, and analyses the capture
/// again on one pipeline — its outputs are one pipeline's, byte for byte, and nothing of
/// the stopped run reaches stdout.
#[test]
fn a_session_split_across_shard_keys_falls_back_to_one_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("failover.pcap");
    session_layer_connections(&cap, true);
    let json = dir.path().join("run.json");
    let args = |threads: &str| {
        let mut a = vec!["pcap".to_string(), cap.display().to_string()];
        a.extend(["-p", "9878", "--json", "-r", "0.005", "--threads", threads].map(String::from));
        a.extend(["--json-file".to_string(), json.display().to_string()]);
        a
    };
    let run = |threads: &str| {
        let a = args(threads);
        let out = fixscope(&a.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(
            out.status.success(),
            "--threads {threads}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let file = std::fs::read(&json).unwrap();
        (out, file)
    };
    let (one, one_file) = run("1");
    let one_text = String::from_utf8_lossy(&one.stdout).into_owned();
    let summary = one_text.lines().last().unwrap();
    assert!(summary.contains("\"sender_comp_id\":\"S0\""), "{summary}");
    // Two stages are one pipeline: nothing to fall back from, not a word.
    let (two, two_file) = run("2");
    assert!(
        two.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&two.stderr)
    );
    assert!(two.stdout == one.stdout && two_file == one_file);
    for threads in ["3", "8"] {
        let (many, many_file) = run(threads);
        let stderr = String::from_utf8_lossy(&many.stderr);
        assert!(
            stderr.contains("connects through more than one (client IP, server IP, server port)")
                && stderr.contains("again on one pipeline"),
            "the fallback must be said: {stderr}"
        );
        assert!(
            many.stdout == one.stdout,
            "--threads {threads} after its fallback is not one pipeline's output"
        );
        assert!(
            many_file == one_file,
            "--threads {threads}: --json-file after the fallback is not one pipeline's"
        );
    }
    // The default (one worker per core from 4 cores, else two stages) gives the same.
    let mut a = vec!["pcap".to_string(), cap.display().to_string()];
    a.extend(["-p", "9878", "--json", "-r", "0.005"].map(String::from));
    let default = fixscope(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(default.status.success());
    assert_eq!(default.stdout, one.stdout);
    // Without the failover the same traffic shards without a word (the detection is not
    // a fallback taken every time).
    let plain = dir.path().join("plain.pcap");
    session_layer_connections(&plain, false);
    let out = fixscope(&[
        "pcap",
        plain.to_str().unwrap(),
        "-p",
        "9878",
        "--json",
        "--threads",
        "4",
    ]);
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Two stages read what the mapped reader does not (pcapng, stdin) with the streaming
/// reader: every message then travels copied into the batches, not as a range of the
/// mapping. The outputs are still one thread's, byte for byte; and a capture on stdin is
/// analysed in two stages by default (read once), `--threads 4` included.
#[test]
fn two_stages_read_pcapng_and_stdin_as_one_thread() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let ng = dir.path().join("many.pcapng");
    write_capture(
        &ng,
        &many_connections_packets(),
        fixscope_core::pcap_writer::CaptureFormat::pcapng_nanos(),
        fixscope_core::decode::LinkType::Ethernet,
        &Default::default(),
        None,
    );
    let extra = ["-p", "9878", "--json", "-r", "0.01", "-t", "0.002"];
    assert_same_for_every_thread_count(&[&ng], &extra);
    let one = run(dir.path(), &[&ng], 1, &extra);
    let bytes = std::fs::read(&ng).unwrap();
    for threads in [None, Some("2"), Some("4")] {
        let mut args = vec!["pcap", "-"];
        args.extend(extra);
        if let Some(t) = threads {
            args.extend(["--threads", t]);
        }
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_fixscope"))
            .args(&args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let input = bytes.clone();
        let writer = std::thread::spawn(move || stdin.write_all(&input).unwrap());
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap();
        assert!(out.status.success(), "{args:?}");
        assert!(
            out.stdout == one.stdout,
            "stdin {threads:?}: not one thread's output"
        );
    }
}

/// A capture cut mid-record followed by a file that is no capture: every plan (one
/// thread, two stages, sharded, the default) reports what was read, then the error and the
/// truncated file on stderr, in one thread's words and order, and fails the same way.
#[test]
fn a_damaged_input_ends_every_plan_as_one_thread() {
    let dir = tempfile::tempdir().unwrap();
    let sim = std::fs::read(fixscope_testkit::test_data("captures/sim/sim_orders.pcap")).unwrap();
    let cut = dir.path().join("cut.pcap");
    std::fs::write(&cut, &sim[..sim.len() * 2 / 3]).unwrap();
    let bad = dir.path().join("bad.pcap");
    std::fs::write(&bad, b"not a capture at all").unwrap();
    let run = |threads: Option<&str>| {
        let mut args = vec!["pcap", cut.to_str().unwrap(), bad.to_str().unwrap()];
        args.extend(["-p", "19478", "--json", "-r", "0.05"]);
        if let Some(t) = threads {
            args.extend(["--threads", t]);
        }
        fixscope(&args)
    };
    let one = run(Some("1"));
    let stderr = String::from_utf8_lossy(&one.stderr).into_owned();
    assert_eq!(one.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("not a pcap or pcapng") && stderr.contains("truncated file"),
        "{stderr}"
    );
    assert!(!one.stdout.is_empty(), "the summary of what was read");
    for threads in [None, Some("2"), Some("3")] {
        let many = run(threads);
        assert_eq!(many.status.code(), one.status.code(), "{threads:?}");
        assert!(many.stdout == one.stdout, "{threads:?}: stdout");
        assert_eq!(
            String::from_utf8_lossy(&many.stderr),
            stderr,
            "{threads:?}: stderr"
        );
    }
}
