//! The slowest orders (`--slowest`), plots (`fixscope plot`) and the HTML report (`--html`),
//! end to end through the real binary on captures with exactly known latencies.

mod support;

use std::path::{Path, PathBuf};

use fixscope_core::decode::LinkType;
use fixscope_core::pcap_writer::{CaptureFormat, FrameOptions, SyntheticConnection};
use serde_json::Value;
use support::*;

/// One latency the capture holds, with what identifies its order.
#[derive(Clone, Debug, PartialEq)]
struct Expected {
    stage: &'static str,
    latency_ns: u64,
    key: String,
    session: u64,
    sender: String,
    client: String,
    request_ns: u64,
    response_ns: u64,
    response_msg_type: &'static str,
}

const T0: u64 = 1_700_000_000_000_000_000;
/// `-x` of the runs: the big order's ack is above it.
const RANGE_MS: &str = "1000";
const BIG_ACK_NS: u64 = 1_500_000_123;

/// Two sessions of orders with distinct ack and fill latencies, one order acked after
/// 1.5 s (above `-x 1000`), one cancel rejected with 35=9. Returns the capture and every
/// latency it holds.
fn orders_capture(dir: &Path, orders: usize) -> (PathBuf, Vec<Expected>) {
    let server = endpoint(false, 1, SERVER_PORT);
    let mut packets = Vec::new();
    let mut expected = Vec::new();
    for s in 0..2usize {
        let client = endpoint(false, 2 + s as u8, 40000 + s as u16);
        let sender = format!("CLIENT{s}");
        let session = s as u64 + 1;
        // (ts, from client, message), sent in time order per connection so sequence
        // numbers follow time.
        let mut events: Vec<(u64, bool, Vec<u8>)> = Vec::new();
        let t_start = T0 + s as u64 * 300_000;
        let logon = fix_message("FIX.4.4", &[(35, "A"), (49, &sender), (56, "EXCH")]);
        events.push((t_start, true, logon));
        let push = |events: &mut Vec<_>, expected: &mut Vec<_>, i: usize, ack_ns: u64| {
            let t = t_start + 1_000 + i as u64 * 1_000_000;
            let id = format!("S{s}-ORD{i:03}");
            let order = fix_message(
                "FIX.4.4",
                &[
                    (35, "D"),
                    (49, &sender),
                    (56, "EXCH"),
                    (11, &id),
                    (55, "IBM"),
                ],
            );
            let fill_ns = 5_000 + (i as u64 % 7) * 1_000;
            let ack = fix_message(
                "FIX.4.4",
                &[
                    (35, "8"),
                    (49, "EXCH"),
                    (56, &sender),
                    (11, &id),
                    (150, "0"),
                    (39, "0"),
                ],
            );
            let fill = fix_message(
                "FIX.4.4",
                &[
                    (35, "8"),
                    (49, "EXCH"),
                    (56, &sender),
                    (11, &id),
                    (150, "F"),
                    (39, "2"),
                ],
            );
            events.push((t, true, order));
            events.push((t + ack_ns, false, ack));
            events.push((t + ack_ns + fill_ns, false, fill));
            let e = |stage, latency_ns, response_ns| Expected {
                stage,
                latency_ns,
                key: id.clone(),
                session,
                sender: sender.clone(),
                client: client.to_string(),
                request_ns: t,
                response_ns,
                response_msg_type: "8",
            };
            expected.push(e("first_response", ack_ns, t + ack_ns));
            expected.push(e("ack", ack_ns, t + ack_ns));
            expected.push(e("fill", ack_ns + fill_ns, t + ack_ns + fill_ns));
            expected.push(e("ack_to_fill", fill_ns, t + ack_ns + fill_ns));
        };
        for i in 0..orders {
            let ack_ns = 10_000 + ((i as u64 * 7919 + s as u64 * 104_729) % 997) * 113;
            push(&mut events, &mut expected, i, ack_ns);
        }
        if s == 0 {
            push(&mut events, &mut expected, orders, BIG_ACK_NS);
        } else {
            // A cancel of an unknown order, rejected (35=9): an ack-stage response.
            let t = t_start + 1_000 + orders as u64 * 1_000_000;
            let cancel = fix_message(
                "FIX.4.4",
                &[
                    (35, "F"),
                    (49, &sender),
                    (56, "EXCH"),
                    (11, "CXL-1"),
                    (41, "NOPE"),
                ],
            );
            let reject = fix_message(
                "FIX.4.4",
                &[
                    (35, "9"),
                    (49, "EXCH"),
                    (56, &sender),
                    (11, "CXL-1"),
                    (39, "8"),
                ],
            );
            let latency = 900_000;
            events.push((t, true, cancel));
            events.push((t + latency, false, reject));
            for stage in ["first_response", "ack"] {
                expected.push(Expected {
                    stage,
                    latency_ns: latency,
                    key: "CXL-1".into(),
                    session,
                    sender: sender.clone(),
                    client: client.to_string(),
                    request_ns: t,
                    response_ns: t + latency,
                    response_msg_type: "9",
                });
            }
        }
        events.sort_by_key(|e| e.0);
        let mut conn = SyntheticConnection::new(client, server);
        for p in conn.handshake() {
            packets.push(at(t_start - 1, p));
        }
        for (ts, from_client, msg) in events {
            let spec = if from_client {
                conn.client_sends(&msg)
            } else {
                conn.server_sends(&msg)
            };
            packets.push(at(ts, spec));
        }
    }
    packets.sort_by_key(|p| p.ts_ns);
    let path = dir.join("orders.pcap");
    write_capture(
        &path,
        &packets,
        CaptureFormat::pcap_nanos(),
        LinkType::Ethernet,
        &FrameOptions::default(),
        None,
    );
    (path, expected)
}

/// The `n` slowest of `all` at `stage`, in the documented order: slowest first, then the
/// earlier request.
fn top(all: &[&Expected], stage: &str, n: usize) -> Vec<Expected> {
    let mut v: Vec<Expected> = all
        .iter()
        .filter(|e| e.stage == stage)
        .map(|e| (*e).clone())
        .collect();
    v.sort_by(|a, b| {
        b.latency_ns
            .cmp(&a.latency_ns)
            .then(a.request_ns.cmp(&b.request_ns))
    });
    v.truncate(n);
    v
}

/// The JSON list as the same records.
fn reported(list: &Value) -> Vec<Expected> {
    list.as_array()
        .expect("a list per stage")
        .iter()
        .map(|o| Expected {
            stage: ["first_response", "ack", "fill", "ack_to_fill"]
                .into_iter()
                .find(|s| o["stage"] == *s)
                .expect("a known stage"),
            latency_ns: o["latency_ns"].as_u64().unwrap(),
            key: o["key"].as_str().unwrap().into(),
            session: o["session"].as_u64().unwrap(),
            sender: o["sender_comp_id"].as_str().unwrap().into(),
            client: o["client"].as_str().unwrap().into(),
            request_ns: o["request_ns"].as_u64().unwrap(),
            response_ns: o["response_ns"].as_u64().unwrap(),
            response_msg_type: match o["response_msg_type"].as_str().unwrap() {
                "8" => "8",
                "9" => "9",
                other => panic!("response type {other}"),
            },
        })
        .collect()
}

const STAGES: [&str; 4] = ["first_response", "ack", "fill", "ack_to_fill"];

#[test]
fn slowest_orders_are_the_exact_top_n_per_stage_and_interval() {
    let dir = tempfile::tempdir().unwrap();
    let (path, expected) = orders_capture(dir.path(), 60);
    let all: Vec<&Expected> = expected.iter().collect();
    let (intervals, summary) = analyse(&[&path], &["--slowest", "5", "-x", RANGE_MS, "-r", "0.01"]);
    for stage in STAGES {
        let want = top(&all, stage, 5);
        assert_eq!(
            reported(&summary["slowest"][stage]),
            want,
            "summary {stage}"
        );
    }
    // The order above -x is listed with its exact latency (its percentile is "above range").
    let first = &summary["slowest"]["ack"][0];
    assert_eq!(first["latency_ns"], BIG_ACK_NS);
    assert_eq!(first["key"], "S0-ORD060");
    assert_eq!(first["server"], format!("10.9.0.1:{SERVER_PORT}"));
    assert_eq!(
        (first["exec_type"].as_str(), first["ord_status"].as_str()),
        (Some("0"), Some("0"))
    );
    assert_eq!(first["request_time"], "2023-11-14T22:13:20.060001000Z");
    assert!(stage(&summary, "ack")["over_range"].as_u64().unwrap() >= 1);
    // The rejected cancel is among the ack stage's slowest with its 35=9.
    assert!(reported(&summary["slowest"]["ack"])
        .iter()
        .any(|o| o.key == "CXL-1" && o.response_msg_type == "9"));

    // Each interval lists the slowest of the latencies completed in it.
    assert!(intervals.len() > 3, "{} intervals", intervals.len());
    let last = intervals.len() - 1;
    for (n, iv) in intervals.iter().enumerate() {
        let (start, end) = (
            iv["start_ns"].as_u64().unwrap(),
            iv["end_ns"].as_u64().unwrap(),
        );
        let inside: Vec<&Expected> = expected
            .iter()
            .filter(|e| {
                e.response_ns >= start
                    && (e.response_ns < end || (n == last && e.response_ns == end))
            })
            .collect();
        for stage in STAGES {
            assert_eq!(
                reported(&iv["slowest"][stage]),
                top(&inside, stage, 5),
                "interval {n} {stage}"
            );
        }
    }
    let listed: usize = intervals
        .iter()
        .map(|iv| iv["slowest"]["ack"].as_array().unwrap().len())
        .sum();
    assert!(listed > 5, "intervals list their own slowest");

    // 0 disables; the text summary shows the list.
    let (intervals, summary) = analyse(&[&path], &["--slowest", "0", "-r", "0.01"]);
    for stage in STAGES {
        assert_eq!(summary["slowest"][stage], serde_json::json!([]));
        assert!(intervals
            .iter()
            .all(|iv| iv["slowest"][stage] == serde_json::json!([])));
    }
    let out = fixscope(&[
        "pcap",
        path.to_str().unwrap(),
        "-p",
        "9878",
        "--slowest",
        "3",
        "-x",
        RANGE_MS,
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let section = &text[text.find("slowest orders:").expect("a slowest section")..];
    let row = section
        .lines()
        .find(|l| l.contains("S0-ORD060"))
        .expect("the slowest order's row");
    for part in [
        "1.500s",
        "CLIENT0->EXCH",
        "10.9.0.2:40000 -> 10.9.0.1:9878",
        "8/0/0",
        "2023-11-14T22:13:20.060001000Z",
    ] {
        assert!(row.contains(part), "{part} in {row}");
    }
    assert_eq!(
        section
            .lines()
            .filter(|l| l.trim_start().starts_with("ack "))
            .count(),
        3
    );
}

#[test]
fn slowest_flag_is_validated() {
    let out = fixscope(&["pcap", "x.pcap", "-p", "9878", "--slowest", "1000000"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--slowest"), "{err}");
}
