//! Vendors' own captures with hardware trailers (`../shared/tap-samples/`, not in the
//! repository: their licences keep them out). Run by `make test-tap-samples`; `make test`
//! uses fixtures built from the same layouts (`wire_stamp` unit tests,
//! `crates/fixscope/tests/wire_timestamps.rs`). A missing sample fails loudly.

use std::path::PathBuf;

use fixscope_core::wire_stamp::{
    read_keyframe, Keyframe, TrailerCounters, TrailerKind, WireStampMode, WireStamps,
};

fn samples() -> PathBuf {
    std::env::var_os("FIXSCOPE_TAP_SAMPLES").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/tap-samples"),
        PathBuf::from,
    )
}

/// The records of a little-endian pcap (nanosecond or microsecond): (ns since the epoch,
/// frame).
fn records(bytes: &[u8]) -> Vec<(u64, &[u8])> {
    let le = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    let frac_ns = match le(0) {
        0xA1B2_3C4D => 1,
        0xA1B2_C3D4 => 1_000,
        magic => panic!("not a little-endian pcap: {magic:#x}"),
    };
    let mut out = Vec::new();
    let mut at = 24;
    while at + 16 <= bytes.len() {
        let (s, frac, len) = (le(at), le(at + 4), le(at + 8) as usize);
        out.push((
            u64::from(s) * 1_000_000_000 + u64::from(frac) * frac_ns,
            &bytes[at + 16..at + 16 + len],
        ));
        at += 16 + len;
    }
    out
}

/// A sample's bytes, or a loud failure naming where it was looked for.
fn sample(name: &str) -> Vec<u8> {
    let path = samples().join(name);
    std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (FIXSCOPE_TAP_SAMPLES=DIR to point elsewhere)",
            path.display()
        )
    })
}

#[test]
#[ignore = "reads ../shared/tap-samples: make test-tap-samples"]
fn cisco_hpt_example_decodes_to_its_record_times() {
    let bytes = sample("cisco-n3550-fusion_hpt_example.pcap");
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

/// `ticks` ticks at `ns_per` = (ns, ticks) per tick, in ns (rounded down; i128: exact).
fn ticks_ns(ticks: i128, ns_per: (u64, u64)) -> i128 {
    (ticks * i128::from(ns_per.0)).div_euclid(i128::from(ns_per.1))
}

/// The keyframes of an Arista 7150 sample, in capture order, with their capture times.
fn arista_keyframes(frames: &[(u64, &[u8])]) -> Vec<Keyframe> {
    frames
        .iter()
        .filter_map(|(host, f)| read_keyframe(WireStampMode::Arista7150, f, *host))
        .collect()
}

/// A v2 keyframe frame turned v1: the skew pair (payload bytes 24..40) taken out.
fn without_skew(frame: &[u8]) -> Vec<u8> {
    let payload = 14 + 20;
    let mut f = frame[..payload + 24].to_vec();
    f.extend_from_slice(&frame[payload + 40..]);
    let total = u16::from_be_bytes([f[16], f[17]]) - 16;
    f[16..18].copy_from_slice(&total.to_be_bytes());
    f
}

/// Arista's two 7150 captures (tick before the FCS, tick in its place; v2 keyframes with
/// the skew, 2 per second, from device 888):
/// - consecutive keyframes predict each other's UTC within 1 µs through the skew (20/7 ×
///   a/b ns per tick) — except across the clock's two steps in each file — and are ~9%
///   off at the nominal 350 MHz (20/7 ns): the skew is what makes the time;
/// - every packet after the first keyframe decodes to a time within the keyframes' span
///   and within 1 ms of the capture host's own (which PTP kept within ~0.2 ms of the
///   switch: 9% of 0.5 s would be 45 ms);
/// - the same with the keyframes stripped of their skew (v1): the rate measured between
///   keyframes does it, once two measurements agree.
#[test]
#[ignore = "reads ../shared/tap-samples: make test-tap-samples"]
fn arista_7150_samples_decode_every_packet_through_the_keyframes_skew() {
    for (name, fcs_type, keyframes, packets) in [
        ("arista-7150-ptpKFbeforeFCS.pcap", 1, 264, 136),
        ("arista-7150-ptpKFreplaceFCS.pcap", 2, 115, 57),
    ] {
        let bytes = sample(name);
        let frames = records(&bytes);
        let kfs = arista_keyframes(&frames);
        assert_eq!(kfs.len(), keyframes, "{name}");
        assert_eq!(frames.len() - kfs.len(), packets, "{name}");
        for kf in &kfs {
            assert_eq!((kf.device, kf.fcs_type), (888, fcs_type), "{name}");
            assert!(kf.rate.is_some(), "{name}: v2 keyframes carry the skew");
        }

        // Keyframe to keyframe.
        let (mut steps, mut worst_skew, mut least_nominal) = (0, 0i128, f64::MAX);
        for pair in kfs.windows(2) {
            let (k0, k1) = (pair[0], pair[1]);
            let ticks = i128::from(k1.counter - k0.counter);
            let utc = i128::from(k1.utc_ns) - i128::from(k0.utc_ns);
            let rate = k0.rate.unwrap();
            let off = ticks_ns(ticks, (rate.ns, rate.ticks)) - utc;
            if off.abs() > 1_000_000_000 {
                steps += 1; // the clock stepped between them
                continue;
            }
            worst_skew = worst_skew.max(off.abs());
            let nominal = (ticks_ns(ticks, (20, 7)) - utc).abs() as f64 / utc as f64;
            least_nominal = least_nominal.min(nominal);
        }
        eprintln!(
            "{name}: keyframe to keyframe {worst_skew} ns at worst through the skew, \
             {:.2}% at least at 350 MHz",
            least_nominal * 100.0
        );
        assert_eq!(steps, 2, "{name}: the two clock steps");
        assert!(
            worst_skew <= 1_000,
            "{name}: {worst_skew} ns through the skew"
        );
        assert!(
            least_nominal > 0.08 && least_nominal < 0.11,
            "{name}: {least_nominal} off at 350 MHz"
        );

        // Packet by packet, with the skew and without it (v1 keyframes).
        let first_utc = kfs.iter().map(|k| k.utc_ns).min().unwrap();
        let last_utc = kfs.iter().map(|k| k.utc_ns).max().unwrap();
        for v1 in [false, true] {
            let mut stamps = WireStamps::new(WireStampMode::Arista7150);
            let mut c = TrailerCounters::default();
            let (mut seen_keyframes, mut before_first, mut worst) = (0, 0, 0u64);
            for (i, (host, frame)) in frames.iter().enumerate() {
                let keyframe = read_keyframe(WireStampMode::Arista7150, frame, *host).is_some();
                let f = if keyframe && v1 {
                    without_skew(frame)
                } else {
                    frame.to_vec()
                };
                let got = stamps.stamp(&f, *host, &mut c);
                if keyframe {
                    assert_eq!(got, None);
                    seen_keyframes += 1;
                    continue;
                }
                if seen_keyframes == 0 {
                    assert_eq!(got, None, "{name} frame {i}: before the first keyframe");
                    before_first += 1;
                    continue;
                }
                let s = got.unwrap_or_else(|| panic!("{name} frame {i}: no time"));
                assert_eq!((s.kind, s.device), (TrailerKind::Arista7150, 888));
                // Read up to 0.55 s after the last keyframe's sample, plus a keyframe
                // interval (they come 0.55 s after their sample).
                assert!(
                    s.unix_ns >= first_utc && s.unix_ns <= last_utc + 1_200_000_000,
                    "{name} frame {i}: {} outside the keyframes' span",
                    s.unix_ns
                );
                // v1: nominal until the third keyframe.
                if !v1 || seen_keyframes >= 3 {
                    worst = worst.max(s.unix_ns.abs_diff(*host));
                }
            }
            eprintln!("{name} (v1 keyframes: {v1}): packets at most {worst} ns from the host");
            assert!(
                worst < 1_000_000,
                "{name} v1 {v1}: {worst} ns from the host"
            );
            assert_eq!(c.keyframes, keyframes as u64);
            assert_eq!(c.trailer_missing, before_first);
            assert_eq!(c.trailer_timestamps + before_first, packets as u64);
            assert_eq!(c.trailer_fcs_mismatch, 0);
        }
    }
}

/// Cisco's ExaLINK Fusion captures (tick in place of the FCS, tick appended before it):
/// keyframes every second (EtherType 0x88B5, "EXKF", 350 MHz) and three frames between two
/// of them, which decode to times between those keyframes, as far apart as their ticks
/// say (107 and 67 ticks; 165 and 159), and 9-11.5 ms behind the capture host's clock as
/// the keyframes are.
#[test]
#[ignore = "reads ../shared/tap-samples: make test-tap-samples"]
fn fusion_samples_decode_every_frame_between_their_keyframes() {
    for (name, keyframes, gaps) in [
        ("cisco-n3550-exa.mode.fcs.pcap", 18, [107u64, 67]),
        ("cisco-n3550-exa.mode.append.pcap", 33, [165, 159]),
    ] {
        let bytes = sample(name);
        let frames = records(&bytes);
        let mut stamps = WireStamps::new(WireStampMode::Fusion);
        let mut c = TrailerCounters::default();
        let (mut before, mut timed) = (None::<Keyframe>, Vec::<(usize, u64, u64)>::new());
        for (i, (host, frame)) in frames.iter().enumerate() {
            if let Some(kf) = read_keyframe(WireStampMode::Fusion, frame, *host) {
                assert_eq!(stamps.stamp(frame, *host, &mut c), None);
                assert_eq!(
                    kf.rate.map(|r| (r.ns, r.ticks)),
                    Some((1_000_000_000, 350_000_000))
                );
                // Each frame so far lies between the keyframe before it and this one.
                for (pair, gap) in timed.windows(2).zip(gaps) {
                    let ns = pair[1].1 - pair[0].1;
                    assert!(
                        ns.abs_diff(gap * 20 / 7) <= 1,
                        "{name}: {ns} ns for {gap} ticks"
                    );
                }
                for (j, t, host) in timed.drain(..) {
                    let b: Keyframe = before.unwrap();
                    assert!(b.utc_ns < t && t < kf.utc_ns, "{name} frame {j}: {t}");
                    let ahead = host - t;
                    assert!((9_000_000..11_500_000).contains(&ahead), "{name} frame {j}");
                }
                before = Some(kf);
                continue;
            }
            let s = stamps
                .stamp(frame, *host, &mut c)
                .unwrap_or_else(|| panic!("{name} frame {i}: no time"));
            assert_eq!(s.kind, TrailerKind::Fusion);
            timed.push((i, s.unix_ns, *host));
        }
        assert!(timed.is_empty(), "{name}: frames after the last keyframe");
        assert_eq!(c.keyframes, keyframes);
        assert_eq!(
            (
                c.trailer_timestamps,
                c.trailer_missing,
                c.trailer_fcs_mismatch
            ),
            (3, 0, 0)
        );
    }
}
