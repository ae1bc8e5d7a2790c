//! Vendors' own captures with hardware trailers (`../shared/tap-samples/`, not in the
//! repository: their licences keep them out). Run by `make test-tap-samples`; `make test`
//! uses fixtures built from the same layouts (`wire_stamp` unit tests,
//! `crates/fixscope/tests/wire_timestamps.rs`). A missing sample fails loudly.

use std::path::PathBuf;

use fixscope_core::wire_stamp::{TrailerCounters, TrailerKind, WireStampMode, WireStamps};

fn samples() -> PathBuf {
    std::env::var_os("FIXSCOPE_TAP_SAMPLES").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/tap-samples"),
        PathBuf::from,
    )
}

/// The records of a little-endian nanosecond pcap: (ns since the epoch, frame).
fn records(bytes: &[u8]) -> Vec<(u64, &[u8])> {
    assert_eq!(
        &bytes[..4],
        &0xA1B2_3C4Du32.to_le_bytes(),
        "a nanosecond pcap"
    );
    let le = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    let mut out = Vec::new();
    let mut at = 24;
    while at + 16 <= bytes.len() {
        let (s, ns, len) = (le(at), le(at + 4), le(at + 8) as usize);
        out.push((
            u64::from(s) * 1_000_000_000 + u64::from(ns),
            &bytes[at + 16..at + 16 + len],
        ));
        at += 16 + len;
    }
    out
}

#[test]
#[ignore = "reads ../shared/tap-samples: make test-tap-samples"]
fn cisco_hpt_example_decodes_to_its_record_times() {
    let path = samples().join("cisco-n3550-fusion_hpt_example.pcap");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (FIXSCOPE_TAP_SAMPLES=DIR to point elsewhere)",
            path.display()
        )
    });
    let frames = records(&bytes);
    assert_eq!(frames.len(), 24);
    let mut stamps = WireStamps::new(WireStampMode::Auto);
    let mut counters = TrailerCounters::default();
    let mut ports = std::collections::BTreeSet::new();
    for (i, (record_ns, frame)) in frames.iter().enumerate() {
        // The host's time is unknown here (Cisco's decoder rewrote it): a second off.
        let s = stamps
            .stamp(frame, record_ns + 1_000_000_000, &mut counters)
            .unwrap_or_else(|| panic!("frame {i}: no trailer found"));
        assert_eq!(s.kind, TrailerKind::Hpt, "frame {i}");
        assert_eq!(
            s.unix_ns, *record_ns,
            "frame {i}: the trailer's time is the record's"
        );
        assert_eq!(s.device, 0);
        ports.insert(s.port);
    }
    assert_eq!(ports.into_iter().collect::<Vec<_>>(), [47, 48]);
    assert_eq!(counters.trailer_timestamps, 24);
    assert_eq!(counters.trailer_missing + counters.trailer_fcs_mismatch, 0);
}
