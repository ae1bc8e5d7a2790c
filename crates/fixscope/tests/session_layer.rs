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
