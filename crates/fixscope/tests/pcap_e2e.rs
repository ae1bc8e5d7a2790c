//! End to end: capture files written by the test support (every format, link type and TCP
//! oddity the issue lists) analysed by the real `fixscope pcap` binary, compared with the
//! exact latencies the traffic was scripted with.

mod support;

use fixscope_core::decode::LinkType;
use fixscope_core::pcap_writer::{CaptureFormat, FrameOptions, SyntheticConnection};
use fixscope_core::TcpFlags;
use support::*;

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn plain() -> FrameOptions {
    FrameOptions::default()
}

#[test]
fn every_capture_format_gives_the_exact_latencies() {
    let dir = tmp();
    let formats: [(&str, CaptureFormat, u64); 7] = [
        (
            "pcap-us-le",
            CaptureFormat::Pcap {
                nanos: false,
                big_endian: false,
            },
            1000,
        ),
        (
            "pcap-us-be",
            CaptureFormat::Pcap {
                nanos: false,
                big_endian: true,
            },
            1000,
        ),
        (
            "pcap-ns-le",
            CaptureFormat::Pcap {
                nanos: true,
                big_endian: false,
            },
            1,
        ),
        (
            "pcap-ns-be",
            CaptureFormat::Pcap {
                nanos: true,
                big_endian: true,
            },
            1,
        ),
        (
            "pcapng-us",
            CaptureFormat::PcapNg {
                tsresol: 6,
                big_endian: false,
            },
            1000,
        ),
        (
            "pcapng-ns-be",
            CaptureFormat::PcapNg {
                tsresol: 9,
                big_endian: true,
            },
            1,
        ),
        (
            "pcapng-100ns",
            CaptureFormat::PcapNg {
                tsresol: 7,
                big_endian: false,
            },
            100,
        ),
    ];
    for (name, format, granularity_ns) in formats {
        let spec = ScenarioSpec {
            granularity_ns,
            ..ScenarioSpec::default()
        };
        let (packets, truth) = build_scenario(&spec);
        let path = dir.path().join(format!("{name}.cap"));
        write_capture(&path, &packets, format, LinkType::Ethernet, &plain(), None);
        let (_, summary) = analyse(&[&path], &[]);
        assert_truth(&summary, &truth);
    }
}

#[test]
fn pcapng_with_two_interfaces_of_different_resolution() {
    let dir = tmp();
    let spec = ScenarioSpec {
        granularity_ns: 1000,
        ..ScenarioSpec::default()
    };
    let (packets, truth) = build_scenario(&spec);
    let path = dir.path().join("two-if.pcapng");
    // Requests on an ns interface, responses on a µs one (0x80|20 would be 2^-20 s).
    write_capture(
        &path,
        &packets,
        CaptureFormat::PcapNg {
            tsresol: 9,
            big_endian: false,
        },
        LinkType::Ethernet,
        &plain(),
        Some(6),
    );
    let (_, summary) = analyse(&[&path], &[]);
    assert_truth(&summary, &truth);
}

#[test]
fn every_link_type_vlan_stack_and_header_options() {
    let dir = tmp();
    let cases: Vec<(&str, LinkType, FrameOptions, bool)> = vec![
        (
            "eth-vlan",
            LinkType::Ethernet,
            FrameOptions {
                vlan_tags: vec![100],
                ..plain()
            },
            false,
        ),
        (
            "eth-qinq",
            LinkType::Ethernet,
            FrameOptions {
                vlan_tags: vec![10, 20],
                ..plain()
            },
            false,
        ),
        ("sll", LinkType::LinuxSll, plain(), false),
        ("sll2", LinkType::LinuxSll2, plain(), false),
        (
            "raw-v4-options",
            LinkType::RawIp,
            FrameOptions {
                ip_options: true,
                tcp_options: true,
                ..plain()
            },
            false,
        ),
        (
            "eth-v6",
            LinkType::Ethernet,
            FrameOptions {
                tcp_options: true,
                ..plain()
            },
            true,
        ),
        ("sll2-v6", LinkType::LinuxSll2, plain(), true),
        ("raw-v6", LinkType::RawIp, plain(), true),
    ];
    for (name, link, opts, ipv6) in cases {
        let spec = ScenarioSpec {
            ipv6,
            sessions: 2,
            orders_per_session: 50,
            ..ScenarioSpec::default()
        };
        let (packets, truth) = build_scenario(&spec);
        let path = dir.path().join(format!("{name}.pcap"));
        write_capture(
            &path,
            &packets,
            CaptureFormat::pcap_nanos(),
            link,
            &opts,
            None,
        );
        let (_, summary) = analyse(&[&path], &[]);
        assert_truth(&summary, &truth);
    }
}

#[test]
fn split_clordid_long_ids_and_colliding_ids_across_sessions() {
    let dir = tmp();
    let spec = ScenarioSpec {
        split_in_clordid: true,
        colliding_clordids: true,
        clordid_len: 100,
        ..ScenarioSpec::default()
    };
    let (packets, truth) = build_scenario(&spec);
    let summary = analyse_packets(dir.path(), "split.pcap", &packets, &[]);
    // The request's time is its last segment's: the truth is measured from there.
    assert_truth(&summary, &truth);
    let sessions = summary["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 3);
    for s in sessions {
        assert_eq!(s["requests"], 200);
        assert_eq!(s["first_response"]["count"], 200);
        assert!(s["sender_comp_id"].as_str().unwrap().starts_with("CLIENT"));
        assert_eq!(s["target_comp_id"], "EXCH");
    }
}

#[test]
fn older_fix_versions_and_fixt() {
    let dir = tmp();
    for begin in ["FIX.4.0", "FIX.4.2", "FIX.4.4", "FIXT.1.1"] {
        let spec = ScenarioSpec {
            begin_string: begin,
            sessions: 1,
            orders_per_session: 30,
            ..ScenarioSpec::default()
        };
        let (packets, truth) = build_scenario(&spec);
        let path = dir.path().join(format!("{begin}.pcap"));
        write_capture(
            &path,
            &packets,
            CaptureFormat::pcap_nanos(),
            LinkType::Ethernet,
            &plain(),
            None,
        );
        let (_, summary) = analyse(&[&path], &[]);
        assert_truth(&summary, &truth);
    }
}

#[test]
fn fix42_fill_exec_type_2_counts_as_fill() {
    let dir = tmp();
    let client = endpoint(false, 2, 40000);
    let server = endpoint(false, 1, SERVER_PORT);
    let mut conn = SyntheticConnection::new(client, server);
    let mut packets = Vec::new();
    let t = 1_000_000_000u64;
    packets.extend(conn.handshake().into_iter().map(|p| at(t, p)));
    let b = "FIX.4.2";
    let order = fix_message(b, &[(35, "D"), (11, "A1")]);
    let partial = fix_message(b, &[(35, "8"), (11, "A1"), (150, "1"), (39, "1")]);
    let full = fix_message(b, &[(35, "8"), (11, "A1"), (150, "2"), (39, "2")]);
    packets.push(at(t + 100, conn.client_sends(&order)));
    packets.push(at(t + 350, conn.server_sends(&partial)));
    packets.push(at(t + 900, conn.server_sends(&full)));
    let summary = analyse_packets(dir.path(), "fix42.pcap", &packets, &[]);
    assert_eq!(stage(&summary, "fill")["max_ns"], 250);
    assert_eq!(stage(&summary, "ack")["count"], 0);
    // The second report matched the still-open order: not an unmatched response.
    assert_eq!(counter(&summary, "unmatched_responses"), 0);
}

/// Retransmissions, overlaps and reordering must not change a single latency.
#[test]
fn retransmissions_overlaps_and_reordering() {
    let dir = tmp();
    let spec = ScenarioSpec {
        sessions: 1,
        orders_per_session: 100,
        ..ScenarioSpec::default()
    };
    let (mut packets, truth) = build_scenario(&spec);
    let mut extra = Vec::new();
    let mut copies = 0u64;
    for (i, p) in packets.iter().enumerate() {
        if p.spec.payload.is_empty() {
            continue;
        }
        match i % 5 {
            // An exact retransmission, a retransmission timeout later (these synthetic
            // packets all carry IPv4 id 0, so only the time tells it from a copy).
            0 => extra.push(TimedPacket {
                ts_ns: p.ts_ns + 200_000_000,
                spec: p.spec.clone(),
                iface: p.iface,
            }),
            // A mirror's second copy of the packet, 1 ns later: counted, not retransmitted.
            2 => {
                copies += 1;
                extra.push(TimedPacket {
                    ts_ns: p.ts_ns + 1,
                    spec: p.spec.clone(),
                    iface: p.iface,
                })
            }
            // A retransmission of the tail half, overlapping the original.
            1 => {
                let mut s = p.spec.clone();
                let half = s.payload.len() / 2;
                s.seq = s.seq.wrapping_add(half as u32);
                s.payload = s.payload[half..].to_vec();
                extra.push(TimedPacket {
                    ts_ns: p.ts_ns + 2,
                    spec: s,
                    iface: p.iface,
                })
            }
            _ => {}
        }
    }
    let copied: usize = extra
        .iter()
        .filter(|p| {
            packets
                .iter()
                .any(|o| o.ts_ns + 1 == p.ts_ns && o.spec == p.spec)
        })
        .map(|p| p.spec.payload.len())
        .sum();
    let retransmitted: usize = extra.iter().map(|p| p.spec.payload.len()).sum::<usize>() - copied;
    packets.extend(extra);
    packets.sort_by_key(|p| p.ts_ns);
    let summary = analyse_packets(dir.path(), "retrans.pcap", &packets, &[]);
    assert_truth(&summary, &truth);
    assert_eq!(
        counter(&summary, "retransmitted_bytes"),
        retransmitted as u64
    );
    assert!(copies > 0);
    assert_eq!(summary["source"]["capture_mirror_duplicates"], copies);
}

#[test]
fn out_of_order_segments_are_timed_when_the_hole_fills() {
    let dir = tmp();
    let client = endpoint(false, 2, 40000);
    let server = endpoint(false, 1, SERVER_PORT);
    let mut conn = SyntheticConnection::new(client, server);
    let mut packets = Vec::new();
    packets.extend(conn.handshake().into_iter().map(|p| at(0, p)));
    let order = fix_message("FIX.4.4", &[(35, "D"), (11, "OOO-1"), (55, "IBM")]);
    let first = conn.client_sends(&order[..40]);
    let second = conn.client_sends(&order[40..]);
    // The tail arrives first (t=1000), the head later (t=5000): the request is complete,
    // i.e. readable by the application, at 5000.
    packets.push(at(1_000, second));
    packets.push(at(5_000, first));
    let ack = fix_message(
        "FIX.4.4",
        &[(35, "8"), (11, "OOO-1"), (150, "0"), (39, "0")],
    );
    packets.push(at(12_000, conn.server_sends(&ack)));
    let summary = analyse_packets(dir.path(), "ooo.pcap", &packets, &[]);
    assert_eq!(stage(&summary, "ack")["max_ns"], 7_000);
    assert_eq!(counter(&summary, "out_of_order_segments"), 1);
}

#[test]
fn lost_segment_is_a_counted_gap_then_resync() {
    let dir = tmp();
    let spec = ScenarioSpec {
        sessions: 1,
        orders_per_session: 40,
        ..ScenarioSpec::default()
    };
    let (packets, truth) = build_scenario(&spec);
    // Drop the 10th order's segment (a request). Everything after must still match.
    let requests: Vec<usize> = packets
        .iter()
        .enumerate()
        .filter(|(_, p)| {
            p.iface == 0
                && p.spec.payload.starts_with(b"8=FIX")
                && find(&p.spec.payload, b"\x0135=D\x01").is_some()
        })
        .map(|(i, _)| i)
        .collect();
    let dropped = requests[10];
    let lost_bytes = packets[dropped].spec.payload.len() as u64;
    let kept: Vec<TimedPacket> = packets
        .into_iter()
        .enumerate()
        .filter(|(i, _)| *i != dropped)
        .map(|(_, p)| p)
        .collect();
    let summary = analyse_packets(dir.path(), "gap.pcap", &kept, &["-t", "10"]);
    assert_eq!(counter(&summary, "tcp_gaps"), 1);
    assert_eq!(counter(&summary, "tcp_gap_bytes"), lost_bytes);
    assert_eq!(counter(&summary, "matched"), truth.requests - 1);
    // Its ack and fill have no request: two unmatched responses, nothing else lost.
    assert_eq!(counter(&summary, "unmatched_responses"), 2);
}

#[test]
fn capture_starting_mid_connection_and_mid_message() {
    let dir = tmp();
    let spec = ScenarioSpec {
        sessions: 1,
        orders_per_session: 20,
        ..ScenarioSpec::default()
    };
    let (packets, truth) = build_scenario(&spec);
    // Drop the handshake and logon; cut the first order's segment in half.
    let mut kept: Vec<TimedPacket> = packets.into_iter().skip(4).collect();
    let first = &mut kept[0].spec;
    let half = first.payload.len() / 2;
    first.seq = first.seq.wrapping_add(half as u32);
    first.payload = first.payload[half..].to_vec();
    let summary = analyse_packets(dir.path(), "midstream.pcap", &kept, &[]);
    assert_eq!(counter(&summary, "matched"), truth.requests - 1);
    assert_eq!(counter(&summary, "unmatched_responses"), 2);
    assert_eq!(counter(&summary, "tcp_gaps"), 0);
}

#[test]
fn fin_rst_and_port_reuse_keep_sessions_apart() {
    let dir = tmp();
    let client = endpoint(false, 2, 40000);
    let server = endpoint(false, 1, SERVER_PORT);
    let mut packets = Vec::new();
    let mut t = 1_000u64;
    for (round, isn) in [(0u64, 1_000u32), (1, 50_000)] {
        let mut conn = SyntheticConnection::with_isns(client, server, isn, isn + 7);
        packets.extend(conn.handshake().into_iter().map(|p| at(t, p)));
        let order = fix_message("FIX.4.4", &[(35, "D"), (11, "REUSED")]);
        let ack = fix_message(
            "FIX.4.4",
            &[(35, "8"), (11, "REUSED"), (150, "0"), (39, "0")],
        );
        packets.push(at(t + 10, conn.client_sends(&order)));
        packets.push(at(t + 10 + 100 * (round + 1), conn.server_sends(&ack)));
        packets.push(at(t + 1000, conn.client_fin()));
        let last = if round == 0 {
            conn.server_fin()
        } else {
            conn.server_rst()
        };
        packets.push(at(t + 1001, last));
        t += 10_000;
    }
    let summary = analyse_packets(dir.path(), "reuse.pcap", &packets, &[]);
    assert_eq!(counter(&summary, "connections"), 2);
    assert_eq!(counter(&summary, "open_connections"), 0);
    assert_eq!(counter(&summary, "duplicate_requests"), 0);
    let first = stage(&summary, "first_response");
    assert_eq!(
        (first["min_ns"].as_u64(), first["max_ns"].as_u64()),
        (Some(100), Some(200))
    );
}

#[test]
fn timeouts_and_capacity_eviction_are_counted() {
    let dir = tmp();
    let spec = ScenarioSpec {
        sessions: 1,
        orders_per_session: 100,
        ..ScenarioSpec::default()
    };
    let (packets, _) = build_scenario(&spec);
    let path = dir.path().join("t.pcap");
    write_capture(
        &path,
        &packets,
        CaptureFormat::pcap_nanos(),
        LinkType::Ethernet,
        &plain(),
        None,
    );
    // Acks take 5–42 µs: with a 20 µs -t some orders time out before any response. -t is
    // an alert: they are counted timed_out, then late when the ack comes, and every
    // latency is recorded — none vanishes from the percentiles.
    let (_, baseline) = analyse(&[&path], &[]);
    let (_, summary) = analyse(&[&path], &["-t", "0.00002"]);
    let timed_out = counter(&summary, "timed_out");
    assert!(timed_out > 0);
    assert_eq!(counter(&summary, "late"), timed_out);
    assert_eq!(counter(&summary, "matched"), 100);
    assert_eq!(counter(&summary, "unanswered"), 0);
    assert_eq!(counter(&summary, "unmatched_responses"), 0);
    for name in ["first_response", "ack", "fill", "ack_to_fill"] {
        assert_eq!(stage(&summary, name), stage(&baseline, name), "{name}");
    }
    assert!(stage(&summary, "ack")["max_ns"].as_u64().unwrap() > 20_000);
    // Orders are 50 µs apart and acked within 42 µs, but some fills come after the next
    // order: with one pending slot those orders are evicted and lose exactly their fill.
    let (_, summary) = analyse(&[&path], &["-m", "1"]);
    let evicted = counter(&summary, "evicted");
    assert!(evicted > 0);
    assert_eq!(counter(&summary, "matched"), 100);
    assert_eq!(counter(&summary, "unmatched_responses"), evicted);
    // Evicted after their ack: working orders, not unanswered ones.
    assert_eq!(counter(&summary, "expired_after_response"), evicted);
    assert_eq!(counter(&summary, "unanswered"), 0);
    assert_eq!(
        stage(&summary, "fill")["count"].as_u64().unwrap(),
        100 - evicted
    );
}

#[test]
fn eviction_at_capacity_is_oldest_first() {
    let dir = tmp();
    let client = endpoint(false, 2, 40000);
    let server = endpoint(false, 1, SERVER_PORT);
    let mut conn = SyntheticConnection::new(client, server);
    let mut packets = Vec::new();
    packets.extend(conn.handshake().into_iter().map(|p| at(0, p)));
    for i in 0..3 {
        let order = fix_message("FIX.4.4", &[(35, "D"), (11, &format!("E{i}"))]);
        packets.push(at(10 + i, conn.client_sends(&order)));
    }
    for i in 0..3 {
        let ack = fix_message(
            "FIX.4.4",
            &[(35, "8"), (11, &format!("E{i}")), (150, "0"), (39, "0")],
        );
        packets.push(at(100 + i, conn.server_sends(&ack)));
    }
    let summary = analyse_packets(dir.path(), "evict.pcap", &packets, &["-m", "2"]);
    assert_eq!(counter(&summary, "evicted"), 1);
    assert_eq!(counter(&summary, "matched"), 2);
    assert_eq!(counter(&summary, "unmatched_responses"), 1);
    // E0 was evicted: the matched ones are E1 (100+1-11=90) and E2 (102-12=90).
    assert_eq!(stage(&summary, "ack")["min_ns"], 90);
}

#[test]
fn alternative_correlation_key() {
    let dir = tmp();
    let client = endpoint(false, 2, 40000);
    let server = endpoint(false, 1, SERVER_PORT);
    let mut conn = SyntheticConnection::new(client, server);
    let mut packets = Vec::new();
    // Requests keyed by 41 (OrigClOrdID) only.
    let req = fix_message("FIX.4.4", &[(35, "F"), (11, "NEW1"), (41, "ORIG1")]);
    let resp = fix_message(
        "FIX.4.4",
        &[
            (35, "8"),
            (11, "OTHER"),
            (41, "ORIG1"),
            (150, "4"),
            (39, "4"),
        ],
    );
    packets.push(at(10, conn.client_sends(&req)));
    packets.push(at(75, conn.server_sends(&resp)));
    let summary = analyse_packets(dir.path(), "key.pcap", &packets, &[]);
    assert_eq!(counter(&summary, "matched"), 0);
    let summary = analyse_packets(dir.path(), "key.pcap", &packets, &["--key", "41"]);
    assert_eq!(counter(&summary, "matched"), 1);
    assert_eq!(stage(&summary, "ack")["max_ns"], 65);
    let by_type = summary["by_msg_type"].as_array().unwrap();
    assert_eq!(by_type[0]["msg_type"], "F");
}

#[test]
fn role_client_reads_the_same_capture_the_same_way() {
    let dir = tmp();
    let (packets, truth) = build_scenario(&ScenarioSpec::default());
    let summary = analyse_packets(dir.path(), "role.pcap", &packets, &["--role", "client"]);
    assert_truth(&summary, &truth);
}

#[test]
fn port_ranges_and_lists_select_traffic() {
    let dir = tmp();
    let (packets, truth) = build_scenario(&ScenarioSpec::default());
    let summary = analyse_packets(dir.path(), "ports.pcap", &packets, &["-p", "9000-9999"]);
    assert_truth(&summary, &truth);
    let summary = analyse_packets(dir.path(), "ports.pcap", &packets, &["-p", "1,9878"]);
    assert_truth(&summary, &truth);
    let summary = analyse_packets(dir.path(), "ports.pcap", &packets, &["-p", "9879-9999"]);
    assert_eq!(counter(&summary, "messages"), 0);
}

#[test]
fn intervals_follow_capture_time_and_sum_to_the_total() {
    let dir = tmp();
    let spec = ScenarioSpec {
        sessions: 1,
        orders_per_session: 200,
        ..ScenarioSpec::default()
    };
    let (packets, truth) = build_scenario(&spec);
    let path = dir.path().join("iv.pcap");
    write_capture(
        &path,
        &packets,
        CaptureFormat::pcap_nanos(),
        LinkType::Ethernet,
        &plain(),
        None,
    );
    // Orders every 50 µs over 10 ms: 1 ms intervals.
    let (intervals, summary) = analyse(&[&path], &["-r", "0.001"]);
    assert!(intervals.len() >= 10, "{} intervals", intervals.len());
    let total: u64 = intervals
        .iter()
        .map(|i| i["stages"][0]["count"].as_u64().unwrap())
        .sum();
    assert_eq!(total, truth.requests);
    assert_eq!(
        stage(&summary, "first_response")["count"].as_u64().unwrap(),
        truth.requests
    );
    for i in &intervals {
        let s = &i["stages"][0];
        if s["count"].as_u64().unwrap() > 0 {
            assert!(s["min_ns"].as_u64() <= s["max_ns"].as_u64());
            assert!(s["rate_per_s"].as_f64().unwrap() > 0.0);
        }
    }
}

#[test]
fn several_files_form_one_timeline() {
    let dir = tmp();
    let (packets, truth) = build_scenario(&ScenarioSpec::default());
    let mid = packets.len() / 2;
    let a = dir.path().join("a.pcap");
    let b = dir.path().join("b.pcapng");
    write_capture(
        &a,
        &packets[..mid],
        CaptureFormat::pcap_nanos(),
        LinkType::Ethernet,
        &plain(),
        None,
    );
    write_capture(
        &b,
        &packets[mid..],
        CaptureFormat::pcapng_nanos(),
        LinkType::Ethernet,
        &plain(),
        None,
    );
    let (_, summary) = analyse(&[&a, &b], &[]);
    assert_truth(&summary, &truth);
}

/// Issue #36: with both ends of a connection inside `-p` (`-p 1-65535`), the connection
/// tells which end is the acceptor — its handshake, else the side that sends orders — and
/// the figures are those of watching the acceptor's port alone, on every plan.
#[test]
fn both_ends_inside_the_port_range_give_the_acceptor_ports_figures() {
    let dir = tmp();
    let sim = fixscope_testkit::test_data("captures/sim/sim_orders.pcap");
    // Mid-session (no handshake, heartbeats first) with the clients' ports below the
    // acceptor's: only the orders can tell.
    let server = endpoint(false, 1, 9878);
    let mut packets = Vec::new();
    for (c, port) in [(2u8, 4000u16), (3, 5000)] {
        let mut conn = SyntheticConnection::new(endpoint(false, c, port), server);
        let sender = format!("C{c}");
        let t0 = 1_700_000_000_000_000_000u64 + u64::from(c) * 1_000;
        let hb = |from: &str, to: &str| fix_message("FIX.4.4", &[(35, "0"), (49, from), (56, to)]);
        packets.push(at(t0, conn.server_sends(&hb("EX", &sender))));
        packets.push(at(t0 + 10_000, conn.client_sends(&hb(&sender, "EX"))));
        for i in 0..50u64 {
            let t = t0 + 200_000 + i * 300_000;
            let id = format!("{sender}-{i}");
            let order = fix_message(
                "FIX.4.4",
                &[(35, "D"), (49, &sender), (56, "EX"), (11, &id), (55, "X")],
            );
            packets.push(at(t, conn.client_sends(&order)));
            let ack = fix_message(
                "FIX.4.4",
                &[
                    (35, "8"),
                    (49, "EX"),
                    (56, &sender),
                    (11, &id),
                    (150, "0"),
                    (39, "0"),
                ],
            );
            packets.push(at(t + 20_000 + i * 100, conn.server_sends(&ack)));
        }
    }
    packets.sort_by_key(|p| p.ts_ns);
    let mid = dir.path().join("midsession.pcap");
    write_pcap(&mid, &packets);
    for (capture, port) in [(sim.as_path(), "19478"), (mid.as_path(), "9878")] {
        for threads in ["1", "2", "3"] {
            let run = |ports: &str| {
                let out = fixscope(&[
                    "pcap",
                    capture.to_str().unwrap(),
                    "-p",
                    ports,
                    "--json",
                    "-r",
                    "0.5",
                    "--threads",
                    threads,
                ]);
                assert!(out.status.success());
                let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
                assert!(stderr.is_empty(), "{ports}: {stderr}");
                out.stdout
            };
            let watched = run(port);
            assert!(
                run("1-65535") == watched,
                "{capture:?} --threads {threads}: -p 1-65535 differs from -p {port}"
            );
        }
    }
    let (_, summary) = analyse(&[&mid], &["-p", "1-65535"]);
    assert_eq!(counter(&summary, "requests"), 100);
    assert_eq!(counter(&summary, "matched"), 100);

    // Heartbeats only, no handshake: nothing tells. The lower port is taken, and said.
    let mut conn = SyntheticConnection::new(endpoint(false, 2, 4000), server);
    let hb = fix_message("FIX.4.4", &[(35, "0"), (49, "EX"), (56, "C")]);
    let quiet = vec![
        at(1_700_000_000_000_000_000, conn.server_sends(&hb)),
        at(1_700_000_030_000_000_000, conn.server_sends(&hb)),
    ];
    let quiet_path = dir.path().join("quiet.pcap");
    write_pcap(&quiet_path, &quiet);
    let out = fixscope(&["pcap", quiet_path.to_str().unwrap(), "-p", "1-65535"]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("1 FIX connection between two watched ports")
            && stderr.contains("lower port"),
        "{stderr}"
    );
}

/// Issue #36: a capture with none of its TCP traffic on the watched ports says so and
/// names the busiest ports it holds; no summary carries a 1970 date.
#[test]
fn nothing_on_the_watched_ports_is_said_with_the_busiest_ports() {
    let dir = tmp();
    let sim = fixscope_testkit::test_data("captures/sim/sim_orders.pcap");
    let sim = sim.to_str().unwrap();
    for threads in ["1", "2", "3"] {
        for format in ["text", "json"] {
            let out = fixscope(&[
                "pcap",
                sim,
                "-p",
                "9999",
                "--format",
                format,
                "--threads",
                threads,
            ]);
            assert!(out.status.success());
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!stdout.contains("1970"), "{stdout}");
            assert!(
                stderr.contains("no TCP segment of the watched ports (-p 9999)")
                    && stderr.contains("19478 (2388)"),
                "{stderr}"
            );
            if format == "json" {
                let summary: serde_json::Value =
                    serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
                assert!(summary["start"].is_null() && summary["end"].is_null());
                assert_eq!(summary["duration_s"], 0.0);
            } else {
                assert!(
                    stdout.contains("=== fixscope summary: no packet of the watched ports,"),
                    "{stdout}"
                );
            }
        }
    }
    // Matched traffic: no such warning.
    let out = fixscope(&["pcap", sim, "-p", "19478"]);
    assert!(out.stderr.is_empty());
    // A capture without a packet.
    let empty = dir.path().join("empty.pcap");
    write_pcap(&empty, &[]);
    let out = fixscope(&["pcap", empty.to_str().unwrap(), "-p", "9878"]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("holds no packet"), "{stderr}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("1970"));
}

#[test]
fn json_summary_keeps_the_documented_contract() {
    let dir = tmp();
    let (packets, _) = build_scenario(&ScenarioSpec::default());
    let summary = analyse_packets(dir.path(), "schema.pcap", &packets, &[]);
    let names: Vec<&str> = summary["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["stage"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["first_response", "ack", "fill", "ack_to_fill"]);
    for s in summary["stages"].as_array().unwrap() {
        for field in [
            "count",
            "min_ns",
            "mean_ns",
            "p50_ns",
            "p90_ns",
            "p99_ns",
            "p99_9_ns",
            "p99_99_ns",
            "p99_999_ns",
            "max_ns",
        ] {
            assert!(s[field].is_number(), "{field} in {s}");
        }
    }
    for c in [
        "messages",
        "requests",
        "responses",
        "matched",
        "unmatched_responses",
        "duplicate_requests",
        "timed_out",
        "evicted",
        "bad_checksum",
        "bad_body_length",
        "tcp_gaps",
        "retransmitted_bytes",
    ] {
        assert!(summary["counters"][c].is_u64(), "counter {c}");
    }
}

#[test]
fn full_text_report_has_table_counters_and_histogram() {
    let dir = tmp();
    let (packets, _) = build_scenario(&ScenarioSpec::default());
    let path = dir.path().join("text.pcap");
    write_capture(
        &path,
        &packets,
        CaptureFormat::pcap_nanos(),
        LinkType::Ethernet,
        &plain(),
        None,
    );
    let out = fixscope(&[
        "pcap",
        path.to_str().unwrap(),
        "-p",
        "9878",
        "-r",
        "0.005",
        "--full",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "first_response",
        "p99.999",
        "MIN",
        "AVG",
        "MAX",
        "unmatched_responses",
        "never answered",
        "histogram (first_response)",
        "CLIENT0->EXCH",
        "|#",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
}

#[test]
fn bad_checksum_and_garbage_between_messages() {
    let dir = tmp();
    let client = endpoint(false, 2, 40000);
    let server = endpoint(false, 1, SERVER_PORT);
    let mut conn = SyntheticConnection::new(client, server);
    let mut packets = Vec::new();
    let good = fix_message("FIX.4.4", &[(35, "D"), (11, "G1")]);
    let mut bad = fix_message("FIX.4.4", &[(35, "D"), (11, "B1")]);
    let n = bad.len();
    bad[n - 2] = if bad[n - 2] == b'0' { b'1' } else { b'0' };
    let mut stream = b"\x00\x01garbage 8=O\x019=3\x01".to_vec();
    stream.extend_from_slice(&bad);
    stream.extend_from_slice(b"more junk");
    stream.extend_from_slice(&good);
    packets.push(at(10, conn.client_sends(&stream)));
    for id in ["G1", "B1"] {
        let ack = fix_message("FIX.4.4", &[(35, "8"), (11, id), (150, "0"), (39, "0")]);
        packets.push(at(50, conn.server_sends(&ack)));
    }
    let summary = analyse_packets(dir.path(), "garbage.pcap", &packets, &[]);
    assert_eq!(counter(&summary, "bad_checksum"), 1);
    assert_eq!(counter(&summary, "matched"), 1);
    assert_eq!(counter(&summary, "unmatched_responses"), 1);
    assert!(counter(&summary, "skipped_bytes") > 0);
}

#[test]
fn snaplen_truncated_packets_are_gaps_not_garbage() {
    let dir = tmp();
    let spec = ScenarioSpec {
        sessions: 1,
        orders_per_session: 10,
        ..ScenarioSpec::default()
    };
    let (packets, _) = build_scenario(&spec);
    let path = dir.path().join("snap.pcap");
    let file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let mut w = fixscope_core::pcap_writer::CaptureWriter::new(
        file,
        CaptureFormat::pcap_nanos(),
        LinkType::Ethernet,
    )
    .unwrap();
    let mut truncated = 0;
    for (i, p) in packets.iter().enumerate() {
        let frame = p.spec.frame(LinkType::Ethernet, &plain());
        if i == 10 && !p.spec.payload.is_empty() {
            // Capture only the first 80 bytes of this frame.
            w.write_packet_on(0, p.ts_ns, &frame[..80], Some(frame.len() as u32))
                .unwrap();
            truncated += 1;
        } else {
            w.write_packet(p.ts_ns, &frame).unwrap();
        }
    }
    w.finish().unwrap();
    assert_eq!(truncated, 1);
    let (_, summary) = analyse(&[&path], &[]);
    assert_eq!(counter(&summary, "tcp_gaps"), 1);
    assert!(counter(&summary, "matched") >= 9);
    assert_eq!(summary["source"]["capture_truncated_segments"], 1);
}

#[test]
fn unreadable_input_and_nonsense_flags_fail_with_one_line() {
    let dir = tmp();
    let garbage = dir.path().join("garbage.pcap");
    std::fs::write(&garbage, b"this is not a capture file at all, just text\n").unwrap();
    let missing = dir.path().join("missing.pcap");
    let cases: Vec<Vec<String>> = vec![
        vec![
            "pcap".into(),
            missing.display().to_string(),
            "-p".into(),
            "9878".into(),
        ],
        vec![
            "pcap".into(),
            garbage.display().to_string(),
            "-p".into(),
            "9878".into(),
        ],
        vec![
            "pcap".into(),
            garbage.display().to_string(),
            "-p".into(),
            "0".into(),
        ],
        vec![
            "pcap".into(),
            garbage.display().to_string(),
            "-p".into(),
            "10-5".into(),
        ],
        vec![
            "pcap".into(),
            garbage.display().to_string(),
            "-p".into(),
            "9878".into(),
            "-t".into(),
            "-1".into(),
        ],
        vec![
            "pcap".into(),
            garbage.display().to_string(),
            "-p".into(),
            "9878".into(),
            "-x".into(),
            "0".into(),
        ],
        vec![
            "pcap".into(),
            garbage.display().to_string(),
            "-p".into(),
            "9878".into(),
            "--key".into(),
            "abc".into(),
        ],
        vec![
            "pcap".into(),
            garbage.display().to_string(),
            "-p".into(),
            "9878".into(),
            "--role".into(),
            "middle".into(),
        ],
        vec!["pcap".into(), garbage.display().to_string()],
    ];
    for args in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = fixscope(&args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
        assert!(out.stdout.is_empty(), "{args:?} printed a report");
        if args.contains(&"-t")
            || args.contains(&"-x")
            || args.iter().any(|a| a.contains("missing"))
            || args.contains(&"--key")
        {
            assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        }
    }
}

#[test]
fn capture_cut_off_mid_packet_is_analysed_up_to_there() {
    let dir = tmp();
    let spec = ScenarioSpec {
        sessions: 1,
        orders_per_session: 20,
        ..ScenarioSpec::default()
    };
    let (packets, _) = build_scenario(&spec);
    let path = dir.path().join("cut.pcap");
    write_capture(
        &path,
        &packets,
        CaptureFormat::pcap_nanos(),
        LinkType::Ethernet,
        &plain(),
        None,
    );
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 30]).unwrap();
    let out = fixscope(&["pcap", path.to_str().unwrap(), "-p", "9878", "--json"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("truncated"));
    let summary: serde_json::Value = serde_json::from_str(
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .last()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(counter(&summary, "matched"), 20);
    // Flagged in the counters, and complete: everything the file holds was read.
    assert_eq!(summary["source"]["capture_truncated_files"], 1);
    assert_eq!(summary["complete"], true);
    assert!(summary["incomplete_reason"].is_null());
}

/// Issue #36: a capture damaged before its end (a record length of 0x7fffffff): the run
/// fails after the summary of what was read, and that summary says it is incomplete, and
/// why — text, JSON and every plan alike.
#[test]
fn a_damaged_capture_s_summary_says_it_is_incomplete() {
    let dir = tmp();
    let spec = ScenarioSpec {
        sessions: 1,
        orders_per_session: 40,
        ..ScenarioSpec::default()
    };
    let (packets, _) = build_scenario(&spec);
    let path = dir.path().join("damaged.pcap");
    write_capture(
        &path,
        &packets,
        CaptureFormat::pcap_nanos(),
        LinkType::Ethernet,
        &plain(),
        None,
    );
    let mut bytes = std::fs::read(&path).unwrap();
    // The 60th record's captured length.
    let mut at = 24;
    for _ in 0..60 {
        let caplen = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap());
        at += 16 + caplen as usize;
    }
    bytes[at + 8..at + 12].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let p = path.to_str().unwrap();
    for threads in ["1", "2", "3"] {
        let out = fixscope(&["pcap", p, "-p", "9878", "--json", "--threads", threads]);
        assert_eq!(out.status.code(), Some(1), "{threads}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("is corrupt at byte"), "{stderr}");
        let stdout = String::from_utf8(out.stdout).unwrap();
        let summary: serde_json::Value =
            serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
        assert_eq!(summary["complete"], false, "{threads}");
        let why = summary["incomplete_reason"].as_str().unwrap();
        assert!(
            why.contains("damaged.pcap is corrupt at byte") && why.contains("2147483647"),
            "{why}"
        );
        assert!(
            counter(&summary, "matched") > 0,
            "what came before was analysed"
        );
        let out = fixscope(&["pcap", p, "-p", "9878", "--threads", threads]);
        assert_eq!(out.status.code(), Some(1));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("\nINCOMPLETE: ") && text.contains("is corrupt at byte"),
            "{text}"
        );
    }
    // Its interval log keeps it: `fixscope report` says it too.
    let log = dir.path().join("damaged.hlog");
    let out = fixscope(&["pcap", p, "-p", "9878", "--hlog", log.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let out = fixscope(&["report", log.to_str().unwrap(), "--json"]);
    assert!(out.status.success());
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["complete"], false);
    assert!(summary["incomplete_reason"]
        .as_str()
        .is_some_and(|w| w.contains("is corrupt at byte")));
    // A whole capture is complete.
    let summary = analyse_packets(dir.path(), "whole.pcap", &packets, &[]);
    assert_eq!(summary["complete"], true);
    assert!(summary["incomplete_reason"].is_null());
    assert_eq!(summary["source"]["capture_truncated_files"], 0);
}

#[test]
fn public_fix_captures_are_read_without_error() {
    let one = fixscope_testkit::test_data("captures/ndpi/ndpi_fix.pcap");
    let two = fixscope_testkit::test_data("captures/ndpi/ndpi_fix2.pcap");
    let (_, summary) = analyse(&[&one], &["-p", "4000"]);
    // 34 FIX.4.1 session messages (tshark's dissector agrees); the rest is a binary variant.
    assert_eq!(counter(&summary, "messages"), 34);
    let (_, summary) = analyse(&[&two], &["-p", "1-65535"]);
    assert!(counter(&summary, "messages") > 0);
    assert!(counter(&summary, "retransmitted_bytes") > 0);
}

#[test]
fn syn_without_data_and_tcp_flags_only_packets_are_fine() {
    // Keeps TcpFlags in use for readers of this file: a SYN-only capture yields an empty,
    // valid report rather than an error.
    let dir = tmp();
    let mut conn =
        SyntheticConnection::new(endpoint(false, 2, 40000), endpoint(false, 1, SERVER_PORT));
    let packets: Vec<TimedPacket> = conn
        .handshake()
        .into_iter()
        .map(|p| TimedPacket {
            ts_ns: 5,
            spec: p,
            iface: 0,
        })
        .collect();
    assert!(packets[0].spec.flags.0 & TcpFlags::SYN != 0);
    let summary = analyse_packets(dir.path(), "syn.pcap", &packets, &[]);
    assert_eq!(counter(&summary, "messages"), 0);
    assert!(stage(&summary, "first_response")["min_ns"].is_null());
}

#[test]
fn capture_streamed_on_stdin() {
    use std::io::Write;
    let dir = tmp();
    let (packets, truth) = build_scenario(&ScenarioSpec::default());
    let path = dir.path().join("stdin.pcapng");
    write_capture(
        &path,
        &packets,
        CaptureFormat::pcapng_nanos(),
        LinkType::Ethernet,
        &plain(),
        None,
    );
    let bytes = std::fs::read(&path).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_fixscope"))
        .args(["pcap", "-", "-p", "9878", "--json"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&bytes).unwrap());
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let summary: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_truth(&summary, &truth);
}
