//! Tick forms on frames built byte by byte from the layouts (`super`'s docs), with true
//! times put into the keyframes and the ticks: the decoder must give them back.

use crate::decode::LinkType;
use crate::pcap_writer::test_support::ep;
use crate::pcap_writer::{FrameOptions, SyntheticConnection};
use crate::wire_stamp::{TrailerCounters, TrailerKind, WireStampMode, WireStamps};

/// An Ethernet frame carrying a TCP segment of `len` bytes, padded to 60 as on the wire.
fn tcp_frame(len: usize) -> Vec<u8> {
    let mut conn = SyntheticConnection::new(ep("10.0.0.1", 40000), ep("10.0.0.2", 9878));
    let mut f = conn
        .client_sends(&vec![b'x'; len])
        .frame(LinkType::Ethernet, &FrameOptions::default());
    if f.len() < 60 {
        f.resize(60, 0);
    }
    f
}

/// `frame` with the 4 tick bytes `raw` after it, and a new FCS after those when `fcs`.
fn with_tick(frame: &[u8], raw: u32, fcs: bool) -> Vec<u8> {
    let mut f = frame.to_vec();
    f.extend_from_slice(&raw.to_be_bytes());
    if fcs {
        let crc = crc32fast::hash(&f);
        f.extend_from_slice(&crc.to_le_bytes());
    }
    f
}

/// The 7150's 32-bit field for a counter: its low 31 bits with a zero bit 7 inserted.
fn raw_7150(counter: u64) -> u32 {
    let t = counter as u32 & 0x7FFF_FFFF;
    ((t << 1) & 0xFFFF_FF00) | (t & 0x7F)
}

/// An Ethernet frame holding an IPv4 datagram of protocol 253 with `payload`.
fn ipv4_253(payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0xFF; 6];
    f.extend_from_slice(&[0x00, 0x1c, 0x73, 0xc5, 0xb7, 0xaa, 0x08, 0x00]);
    let total = 20 + payload.len() as u16;
    f.extend_from_slice(&[0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 253, 0, 0]);
    f[16..18].copy_from_slice(&total.to_be_bytes());
    f.extend_from_slice(&[1, 2, 3, 4, 111, 111, 111, 111]);
    f.extend_from_slice(payload);
    f
}

/// A 7150 keyframe: v2 (62 bytes) with `skew`, v1 (46 bytes) without; its own tick is 0.
fn keyframe_7150(counter: u64, utc_ns: u64, skew: Option<(u64, u64)>, device: u16) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend_from_slice(&counter.to_be_bytes());
    p.extend_from_slice(&utc_ns.to_be_bytes());
    p.extend_from_slice(&(counter - 1000).to_be_bytes()); // last sync
    if let Some((a, b)) = skew {
        p.extend_from_slice(&a.to_be_bytes());
        p.extend_from_slice(&b.to_be_bytes());
    }
    p.extend_from_slice(&(counter + 5000).to_be_bytes()); // keyframe timestamp
    p.extend_from_slice(&0u64.to_be_bytes()); // drops
    p.extend_from_slice(&device.to_be_bytes());
    p.extend_from_slice(&37u16.to_be_bytes()); // egress interface
    p.extend_from_slice(&[1, 0]); // fcs_type: before the FCS; reserved
    with_tick(&ipv4_253(&p), 0, true)
}

/// A Fusion keyframe: EtherType 0x88B5, or (compat) IPv4 protocol 253.
fn keyframe_fusion(counter: u64, utc_ns: u64, freq: u64, compat: bool) -> Vec<u8> {
    let mut p = b"EXKF".to_vec();
    p.extend_from_slice(&[1, 0, 0, 0]);
    for v in [utc_ns, counter, freq, counter] {
        p.extend_from_slice(&v.to_be_bytes());
    }
    if compat {
        return ipv4_253(&p);
    }
    let mut f = vec![0xFF; 6];
    f.extend_from_slice(&[0x64, 0x3f, 0x5f, 0x80, 0x19, 0xa1, 0x88, 0xB5]);
    f.extend_from_slice(&p);
    f.resize(64, 0);
    f
}

/// A device's counter: `ticks` ticks in `ns` nanoseconds, `counter0` at `utc0`.
#[derive(Clone, Copy)]
struct Device {
    counter0: u64,
    utc0: u64,
    ns: u64,
    ticks: u64,
}

impl Device {
    /// The counter at true time `t` (whole ticks elapsed).
    fn counter(&self, t: u64) -> u64 {
        let elapsed = u128::from(t - self.utc0) * u128::from(self.ticks) / u128::from(self.ns);
        self.counter0 + elapsed as u64
    }

    /// One tick, rounded up, in ns: how far a decoded time may be from the truth.
    fn tick_ns(&self) -> u64 {
        self.ns.div_ceil(self.ticks)
    }
}

/// The Arista samples' device: skew a/b = 1.0999955, 318.18 MHz; its counter's low 31
/// bits wrap 0.3 s after `utc0`.
const SKEW: (u64, u64) = (1_003_798_705, 912_547_981);
const UTC0: u64 = 1_602_694_863_348_865_269;
fn arista_device() -> Device {
    Device {
        counter0: (0xB3 << 32) | (0x7FFF_FFFF - 95_000_000),
        utc0: UTC0,
        ns: 20 * SKEW.0,
        ticks: 7 * SKEW.1,
    }
}

fn stamps(mode: WireStampMode) -> (WireStamps, TrailerCounters) {
    (WireStamps::new(mode), TrailerCounters::default())
}

#[test]
fn arista_7150_ticks_skewed_wrapping_and_read_out_of_order_give_the_true_times() {
    let dev = arista_device();
    let frame = tcp_frame(100);
    // Keyframes sampled every 0.5 s, sent 0.55 s later (as the samples' are).
    let lag = 550_000_000;
    let mut frames: Vec<(u64, Vec<u8>, Option<u64>)> = (0..8)
        .map(|k| {
            let t = UTC0 + k * 500_000_000;
            let kf = keyframe_7150(dev.counter(t), t, Some(SKEW), 888);
            (t + lag, kf, None)
        })
        .collect();
    // Packets every 37 ms from before the first keyframe arrives, read 5 to 100 µs late,
    // the tick before a kept FCS or in its place.
    for i in 0..100u64 {
        let t = UTC0 + 40_000_000 + i * 37_000_000;
        let host = t + 5_000 + (i * 7_919) % 95_000;
        let f = with_tick(&frame, raw_7150(dev.counter(t)), i % 2 == 0);
        frames.push((host, f, Some(t)));
    }
    // Between keyframes 1 and 2 (device time), read after keyframe 2 arrived: the tick
    // difference from the last keyframe read is negative.
    let t = UTC0 + 500_000_000 + 250_000_000;
    frames.push((
        UTC0 + 1_000_000_000 + lag + 1,
        with_tick(&frame, raw_7150(dev.counter(t)), false),
        Some(t),
    ));
    frames.sort_by_key(|(host, _, _)| *host);

    let (mut s, mut c) = stamps(WireStampMode::Arista7150);
    let first_keyframe = UTC0 + lag;
    let (mut timed, mut before) = (0, 0);
    for (host, f, truth) in &frames {
        let got = s.stamp(f, *host, &mut c);
        let Some(t) = truth else {
            assert_eq!(got, None, "a keyframe carries no stamp");
            continue;
        };
        if *host < first_keyframe {
            assert_eq!(got, None, "before the first keyframe");
            before += 1;
            continue;
        }
        let got = got.unwrap_or_else(|| panic!("packet at {t}: no time"));
        assert_eq!((got.kind, got.device), (TrailerKind::Arista7150, 888));
        assert!(
            got.unix_ns.abs_diff(*t) <= dev.tick_ns(),
            "packet at {t}: {} ns off",
            got.unix_ns as i64 - *t as i64
        );
        timed += 1;
    }
    // The counter's low 31 bits wrapped between the first and the last packet.
    assert!(
        dev.counter(UTC0 + 4_000_000_000) as u32 & 0x7FFF_FFFF
            < dev.counter(UTC0) as u32 & 0x7FFF_FFFF
    );
    assert!(before > 0);
    assert_eq!(timed + before, 101);
    assert_eq!(c.trailer_timestamps, timed);
    assert_eq!(c.trailer_missing, before);
    assert_eq!(c.trailer_fcs_mismatch, 0);
    assert_eq!(c.keyframes, 8);
    assert_eq!(c.first.map(|f| f.0), Some(TrailerKind::Arista7150));
}

#[test]
fn without_the_skew_the_rate_is_measured_between_v1_keyframes_steps_left_out() {
    let dev = arista_device();
    let frame = tcp_frame(40);
    let (mut s, mut c) = stamps(WireStampMode::Arista7150);
    // v1 keyframes every 0.5 s; UTC steps 2.9 s back before the fifth (a PTP step).
    let step = 2_900_000_000;
    let utc_of = |k: u64, t: u64| if k >= 4 { t - step } else { t };
    let mut worst_before_measured = 0;
    for k in 0..8u64 {
        let t = UTC0 + k * 500_000_000;
        let host = t + 1_000;
        assert!(s
            .stamp(
                &keyframe_7150(dev.counter(t), utc_of(k, t), None, 888),
                host,
                &mut c
            )
            .is_none());
        // A packet 0.3 s after each keyframe.
        let tp = t + 300_000_000;
        let got = s
            .stamp(
                &with_tick(&frame, raw_7150(dev.counter(tp)), true),
                tp + 2_000,
                &mut c,
            )
            .expect("timed");
        let off = got.unix_ns.abs_diff(utc_of(k, tp));
        if k < 2 {
            // Nominal 350 MHz until two successive measurements agree: 10% off.
            worst_before_measured = worst_before_measured.max(off);
        } else {
            assert!(off <= dev.tick_ns(), "keyframe {k}: {off} ns off");
        }
    }
    assert!(
        worst_before_measured > 25_000_000,
        "{worst_before_measured}"
    );
}

#[test]
fn a_frame_long_after_the_last_keyframe_takes_its_wrap_from_the_host_clock() {
    let dev = arista_device();
    let frame = tcp_frame(100);
    let (mut s, mut c) = stamps(WireStampMode::Arista7150);
    s.stamp(
        &keyframe_7150(dev.counter(UTC0), UTC0, Some(SKEW), 888),
        UTC0,
        &mut c,
    );
    // 5 s and 9 s later (a wrap is 6.75 s; half of it 3.4 s), 20 µs late.
    for after in [5_000_000_000u64, 9_000_000_000] {
        let t = UTC0 + after;
        let got = s.stamp(
            &with_tick(&frame, raw_7150(dev.counter(t)), false),
            t + 20_000,
            &mut c,
        );
        assert!(got.unwrap().unix_ns.abs_diff(t) <= dev.tick_ns(), "{after}");
    }
    // A minute without keyframes: not timed.
    let t = UTC0 + 61_000_000_000;
    assert_eq!(
        s.stamp(
            &with_tick(&frame, raw_7150(dev.counter(t)), false),
            t,
            &mut c
        ),
        None
    );
    assert_eq!(c.trailer_missing, 1);
}

#[test]
fn a_host_clock_stepped_back_does_not_move_the_wrap() {
    // As in the Arista samples: the host's clock steps 2.93 s back between two keyframes,
    // so the frames after it are host-stamped before keyframes read earlier. The last
    // keyframe read still gives the wrap; the nearest by host time would not.
    let dev = arista_device();
    let frame = tcp_frame(100);
    let (mut s, mut c) = stamps(WireStampMode::Arista7150);
    let lag = 550_000_000;
    let step = 2_930_000_000;
    for k in 0..6u64 {
        let t = UTC0 + k * 500_000_000;
        let host = t + lag - if k >= 4 { step } else { 0 };
        s.stamp(
            &keyframe_7150(dev.counter(t), t, Some(SKEW), 888),
            host,
            &mut c,
        );
    }
    // 1.06 s after the last keyframe's sample (its host time + 0.51 s).
    let t = UTC0 + 5 * 500_000_000 + 1_060_000_000;
    let got = s.stamp(
        &with_tick(&frame, raw_7150(dev.counter(t)), true),
        t + 30_000 - step,
        &mut c,
    );
    assert!(got.unwrap().unix_ns.abs_diff(t) <= dev.tick_ns());
    // The host's clock steps back again, after the last keyframe: the next frame is
    // host-stamped 2.4 s before that keyframe, and is still 1.1 s after it in ticks.
    let t = t + 40_000_000;
    let got = s.stamp(
        &with_tick(&frame, raw_7150(dev.counter(t)), true),
        t + 30_000 - 2 * step,
        &mut c,
    );
    assert!(got.unwrap().unix_ns.abs_diff(t) <= dev.tick_ns());
}

#[test]
fn only_the_first_device_s_keyframes_are_used() {
    let dev = arista_device();
    let other = Device {
        counter0: 12_345,
        ..dev
    };
    let frame = tcp_frame(100);
    let (mut s, mut c) = stamps(WireStampMode::Arista7150);
    s.stamp(
        &keyframe_7150(dev.counter(UTC0), UTC0, Some(SKEW), 888),
        UTC0,
        &mut c,
    );
    s.stamp(
        &keyframe_7150(other.counter(UTC0 + 1_000), UTC0 + 1_000, Some(SKEW), 7),
        UTC0 + 1_000,
        &mut c,
    );
    assert_eq!(c.keyframes, 1);
    let t = UTC0 + 100_000_000;
    let got = s
        .stamp(
            &with_tick(&frame, raw_7150(dev.counter(t)), false),
            t,
            &mut c,
        )
        .unwrap();
    assert_eq!(got.device, 888);
    assert!(got.unix_ns.abs_diff(t) <= dev.tick_ns());
}

#[test]
fn bytes_after_the_datagram_that_are_no_tick_are_counted_not_read() {
    let dev = arista_device();
    let frame = tcp_frame(100);
    let (mut s, mut c) = stamps(WireStampMode::Arista7150);
    s.stamp(
        &keyframe_7150(dev.counter(UTC0), UTC0, Some(SKEW), 888),
        UTC0,
        &mut c,
    );
    let t = UTC0 + 1_000_000;
    let mut bad_fcs = with_tick(&frame, raw_7150(dev.counter(t)), true);
    *bad_fcs.last_mut().unwrap() ^= 1;
    let mut five = with_tick(&frame, raw_7150(dev.counter(t)), false);
    five.push(0);
    for f in [bad_fcs, five] {
        assert_eq!(s.stamp(&f, t, &mut c), None);
    }
    // The capture NIC dropped the tick that replaced the FCS.
    assert_eq!(s.stamp(&frame, t, &mut c), None);
    assert_eq!(
        (
            c.trailer_fcs_mismatch,
            c.trailer_missing,
            c.trailer_timestamps
        ),
        (2, 1, 0)
    );
}

#[test]
fn auto_never_reads_a_tick() {
    let dev = arista_device();
    let (mut s, mut c) = stamps(WireStampMode::Auto);
    assert!(!s.needs_keyframes());
    s.stamp(
        &keyframe_7150(dev.counter(UTC0), UTC0, Some(SKEW), 888),
        UTC0,
        &mut c,
    );
    for fcs in [false, true] {
        let f = with_tick(&tcp_frame(100), raw_7150(dev.counter(UTC0 + 5)), fcs);
        assert_eq!(s.stamp(&f, UTC0 + 10, &mut c), None);
    }
    assert_eq!(c, TrailerCounters::default());
}

#[test]
fn fusion_ticks_in_place_of_or_before_the_fcs_give_the_true_times() {
    // 350.000123 MHz as the keyframes say; the 32-bit counter wraps after 1 s.
    let freq = 350_000_123;
    let utc0 = 1_456_284_638_000_000_000;
    let dev = Device {
        counter0: 0x17E_FFFF_FFFF - 350_000_000,
        utc0,
        ns: 1_000_000_000,
        ticks: freq,
    };
    let tcp = tcp_frame(300);
    // A frame with no IP length to go by (ARP-sized): the tick before a valid FCS, else last.
    let mut other = tcp_frame(10);
    other[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
    other.resize(64, 0xA5);
    for compat in [false, true] {
        let (mut s, mut c) = stamps(WireStampMode::Fusion);
        assert!(s.needs_keyframes());
        for k in 0..4u64 {
            let t = utc0 + k * 1_000_000_000;
            assert_eq!(
                s.stamp(
                    &keyframe_fusion(dev.counter(t), t, freq, compat),
                    t + 9_000_000,
                    &mut c
                ),
                None
            );
            for (i, base) in [&tcp, &other].into_iter().enumerate() {
                for fcs in [false, true] {
                    let tp = t + 400_000_000 + i as u64 * 1_000 + u64::from(fcs);
                    let f = with_tick(base, dev.counter(tp) as u32, fcs);
                    let got = s.stamp(&f, tp + 9_000_000, &mut c).expect("timed");
                    assert_eq!((got.kind, got.device), (TrailerKind::Fusion, 0));
                    assert!(
                        got.unix_ns.abs_diff(tp) <= dev.tick_ns(),
                        "compat {compat} k {k} fcs {fcs}"
                    );
                }
            }
        }
        assert_eq!(
            (c.keyframes, c.trailer_timestamps, c.trailer_missing),
            (4, 16, 0)
        );
    }
    // A keyframe without the magic is no keyframe.
    let mut bad = keyframe_fusion(0, utc0, freq, false);
    bad[14] = b'X';
    let (mut s, mut c) = stamps(WireStampMode::Fusion);
    assert!(!s.keyframe(&bad, utc0, &mut c));
}
