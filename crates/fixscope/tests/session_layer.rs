//! The FIX session layer on real captures (#21): sessions are what the wire holds — no
//! phantom session for a closed connection's trailing ACK/FIN/RST — counted against
//! tshark's own view of the same files.

mod support;

use std::process::Command;

use support::*;

/// TCP conversations in a capture, as tshark counts them.
fn tshark_tcp_conversations(path: &std::path::Path) -> u64 {
    fixscope_testkit::require_tool("tshark_tcp_conversations", "tshark");
    let out = Command::new("tshark")
        .args(["-n", "-q", "-z", "conv,tcp", "-r"])
        .arg(path)
        .output()
        .expect("run tshark");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("<->"))
        .count() as u64
}

#[test]
fn no_phantom_sessions_on_the_real_captures() {
    for (file, port, sessions) in [
        ("captures/sim/sim_orders.pcap", "19478", Some(2)),
        ("captures/ndpi/ndpi_fix.pcap", "4000", None),
        ("captures/ndpi/ndpi_fix2.pcap", "1024", None),
    ] {
        let path = fixscope_testkit::test_data(file);
        let (_, summary) = analyse(&[&path], &["-p", port]);
        let connections = summary["counters"]["connections"].as_u64().unwrap();
        assert_eq!(
            connections,
            tshark_tcp_conversations(&path),
            "{file}: connections as tshark counts them"
        );
        let listed = summary["sessions"].as_array().unwrap();
        assert!(
            listed.len() as u64 <= connections,
            "{file}: {} sessions for {connections} connections",
            listed.len()
        );
        if let Some(n) = sessions {
            assert_eq!(listed.len(), n, "{file}: {listed:?}");
            for s in listed {
                assert!(!s["sender_comp_id"].as_str().unwrap().is_empty(), "{s}");
            }
        }
    }
}

/// FIX messages by MsgType as tshark's FIX dissector reads them, retransmitted segments
/// left out (fixscope counts each byte of a stream once).
fn tshark_msg_types(path: &std::path::Path, port: &str) -> std::collections::BTreeMap<String, u64> {
    fixscope_testkit::require_tool("tshark_msg_types", "tshark");
    let out = Command::new("tshark")
        .args(["-n", "-d", &format!("tcp.port=={port},fix"), "-Y"])
        .args([
            "fix && !tcp.analysis.retransmission",
            "-T",
            "fields",
            "-e",
            "fix.MsgType",
            "-r",
        ])
        .arg(path)
        .output()
        .expect("run tshark");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut by_type = std::collections::BTreeMap::new();
    for t in String::from_utf8_lossy(&out.stdout)
        .lines()
        .flat_map(|l| l.split(','))
    {
        *by_type.entry(t.to_string()).or_default() += 1;
    }
    by_type
}

/// The session-layer counters on real captures equal tshark's count of each MsgType.
#[test]
fn session_counters_equal_tshark_on_the_real_captures() {
    for (file, port) in [
        ("captures/sim/sim_orders.pcap", "19478"),
        ("captures/ndpi/ndpi_fix.pcap", "4000"),
        ("captures/ndpi/ndpi_fix2.pcap", "1024"),
    ] {
        let path = fixscope_testkit::test_data(file);
        let (_, summary) = analyse(&[&path], &["-p", port]);
        let by_type = tshark_msg_types(&path, port);
        let of = |t: &str| by_type.get(t).copied().unwrap_or(0);
        let counter = |name: &str| summary["counters"][name].as_u64().unwrap();
        for (name, msg_type) in [
            ("logons", "A"),
            ("logouts", "5"),
            ("heartbeats", "0"),
            ("test_requests", "1"),
            ("resend_requests", "2"),
            ("session_rejects", "3"),
            ("business_rejects", "j"),
            ("cancel_rejects", "9"),
        ] {
            assert_eq!(
                counter(name),
                of(msg_type),
                "{file}: {name} vs tshark {by_type:?}"
            );
        }
        assert_eq!(counter("requests"), of("D") + of("F") + of("G"), "{file}");
        // Per session they add up to the totals.
        for name in ["logons", "heartbeats", "test_requests", "business_rejects"] {
            let per_session: u64 = summary["sessions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["session_layer"][name].as_u64().unwrap())
                .sum();
            assert_eq!(per_session, counter(name), "{file}: {name} per session");
        }
    }
}

/// The session layer and `--by` reach Prometheus (promtool-clean), with the JSON's figures.
#[test]
fn session_layer_and_by_in_prometheus() {
    fixscope_testkit::require_tool("session_layer_and_by_in_prometheus", "promtool");
    let dir = tempfile::tempdir().unwrap();
    let prom = dir.path().join("m.prom");
    let path = fixscope_testkit::test_data("captures/ndpi/ndpi_fix2.pcap");
    let prom_s = prom.display().to_string();
    let (_, summary) = analyse(
        &[&path],
        &[
            "-p",
            "1024",
            "--by",
            "49",
            "--prometheus-by",
            "--prometheus-sessions",
            "10",
            "--prometheus-textfile",
            &prom_s,
        ],
    );
    let text = std::fs::read_to_string(&prom).unwrap();
    let check = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(&prom).unwrap())
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let metric = |line_start: &str| -> f64 {
        text.lines()
            .find(|l| l.starts_with(line_start))
            .unwrap_or_else(|| panic!("{line_start} in\n{text}"))
            .rsplit(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    for name in ["logons", "heartbeats", "test_requests", "business_rejects"] {
        let json = summary["counters"][name].as_u64().unwrap() as f64;
        assert_eq!(metric(&format!("fixscope_{name}_total ")), json, "{name}");
    }
    let rtt = summary["session_stages"][0]["count"].as_u64().unwrap() as f64;
    assert_eq!(metric("fixscope_test_request_rtt_seconds_count "), rtt);
    assert!(rtt > 0.0);
    let peak = summary["rate"]["peak_1ms"].as_u64().unwrap();
    assert!(peak > 0);
    let heartbeats_per_session: f64 = text
        .lines()
        .filter(|l| {
            l.starts_with("fixscope_session_layer_events_total{")
                && l.contains("event=\"heartbeats\"")
        })
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum();
    assert_eq!(heartbeats_per_session, metric("fixscope_heartbeats_total "));
    for entry in summary["by"].as_array().unwrap() {
        let line = format!(
            "fixscope_by_latency_seconds_count{{tag=\"49\",value=\"{}\",stage=\"first_response\"}} ",
            entry["value"].as_str().unwrap()
        );
        let count = entry["stages"][0]["count"].as_u64().unwrap();
        if count > 0 {
            assert_eq!(metric(&line), count as f64);
        }
    }
}
