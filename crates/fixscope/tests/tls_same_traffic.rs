//! The benchmark's TLS traffic, small (#49, `make bench-tls`): a plaintext capture of
//! scripted sessions with known latencies is written again over TLS by the benchmark's own
//! generator (`support_tls_capture`: a rustls connection per TCP connection, a real handshake, each
//! segment's payload one record in a segment at the same time). `fixscope pcap
//! --tls-keylog` on the copy must give the script's latencies — the generator's truth —
//! exactly as the plaintext run does, on every plan, and the same message at the same
//! time for every order (`--trace`, line for line).

mod support;
mod support_tls_capture;

use std::path::Path;

use fixscope_core::PortSet;
use support::{
    analyse, assert_truth, build_scenario, counter, every_plan_with_flags, find, write_pcap,
    ScenarioSpec, SERVER_PORT,
};

/// `fixscope pcap --trace` of `cap` (with `extra` flags): the trace's text.
fn trace(cap: &Path, out: &Path, extra: &[&str]) -> String {
    let mut args = vec!["--trace", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    analyse(&[cap], &args);
    std::fs::read_to_string(out).unwrap()
}

fn same_traffic(spec: &ScenarioSpec, suite: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (packets, truth) = build_scenario(spec);
    let plain = dir.path().join("plain.pcap");
    write_pcap(&plain, &packets);
    let (tls, keys) = (dir.path().join("tls.pcap"), dir.path().join("keys.log"));
    let written = support_tls_capture::tls_copy(
        &plain,
        &PortSet::single(SERVER_PORT),
        &tls,
        &keys,
        support_tls_capture::suite_named(suite).unwrap(),
    )
    .unwrap();
    let data_segments = packets
        .iter()
        .filter(|p| !p.spec.payload.is_empty())
        .count() as u64;
    assert_eq!(written.connections, spec.sessions as u64);
    assert_eq!(written.segments, packets.len() as u64);
    // Ciphertext: no FIX in the clear is left in the copy.
    let bytes = std::fs::read(&tls).unwrap();
    assert!(
        find(&bytes, b"\x0135=D\x01").is_none(),
        "plaintext FIX in {tls:?}"
    );
    assert!(find(&bytes, b"8=FIX").is_none(), "plaintext FIX in {tls:?}");

    let plain_summary = every_plan_with_flags(&[&plain], &[]);
    assert_truth(&plain_summary, &truth);
    let keys_arg = keys.to_str().unwrap();
    let tls_summary = every_plan_with_flags(&[&tls], &["--tls-keylog", keys_arg]);
    assert_truth(&tls_summary, &truth);
    assert_eq!(plain_summary["stages"], tls_summary["stages"], "{suite}");
    assert_eq!(
        counter(&tls_summary, "tls_connections"),
        spec.sessions as u64
    );
    // Every data segment is one record; the handshake adds a few more per connection.
    let records = counter(&tls_summary, "tls_records_decrypted");
    assert!(
        records >= data_segments && records <= data_segments + 8 * spec.sessions as u64,
        "{records} records for {data_segments} data segments"
    );
    for name in [
        "tls_no_key",
        "tls_no_handshake",
        "tls_unsupported",
        "tls_auth_failed",
        "tls_resyncs",
    ] {
        assert_eq!(counter(&tls_summary, name), 0, "{suite}: {name}");
    }

    // Every message of every order at the same time, in the same order.
    let t_plain = trace(&plain, &dir.path().join("plain.csv"), &[]);
    let t_tls = trace(
        &tls,
        &dir.path().join("tls.csv"),
        &["--tls-keylog", keys_arg],
    );
    let lines = t_plain.lines().count();
    assert!(
        lines as u64 > 3 * truth.requests,
        "{lines} trace lines for {} orders",
        truth.requests
    );
    assert!(t_plain == t_tls, "{suite}: the traces differ");
}

#[test]
fn tls13_aes128_gives_the_plaintext_latencies() {
    same_traffic(&ScenarioSpec::default(), "aes128");
}

#[test]
fn tls13_chacha20_gives_the_plaintext_latencies() {
    same_traffic(&ScenarioSpec::default(), "chacha");
}

#[test]
fn tls12_aes128_gives_the_plaintext_latencies() {
    same_traffic(&ScenarioSpec::default(), "tls12-aes128");
}

/// Each order in two segments, so two records: timed by the one with its last byte, as in
/// the clear.
#[test]
fn orders_across_two_records_keep_their_times() {
    let spec = ScenarioSpec {
        split_in_clordid: true,
        orders_per_session: 100,
        ..ScenarioSpec::default()
    };
    same_traffic(&spec, "aes256");
}
