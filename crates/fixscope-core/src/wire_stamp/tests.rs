use super::*;
use crate::classify::{CaptureStats, FrameClassifier};
use crate::decode::LinkType;
use crate::pcap_writer::test_support::ep;
use crate::pcap_writer::{wrap_in_tunnel, FrameOptions, SyntheticConnection, Tunnel};
use crate::ports::PortSet;

/// An Ethernet frame carrying a FIX-sized TCP segment.
fn frame(payload_len: usize) -> Vec<u8> {
    let mut conn = SyntheticConnection::new(ep("10.0.0.1", 40000), ep("10.0.0.2", 9878));
    conn.client_sends(&vec![b'x'; payload_len])
        .frame(LinkType::Ethernet, &FrameOptions::default())
}

fn with_trailer(frame: &[u8], stamp: &WireStamp, new_fcs: bool) -> Vec<u8> {
    let mut f = frame.to_vec();
    f.extend_from_slice(&trailer_for(frame, stamp, new_fcs));
    f
}

fn stamp(kind: TrailerKind, unix_ns: u64) -> WireStamp {
    WireStamp {
        kind,
        device: 7,
        port: 3,
        unix_ns,
    }
}

#[test]
fn metawatch_and_hpt_are_read_with_and_without_the_new_fcs() {
    let t = 1_700_000_000_123_456_789;
    for kind in [
        TrailerKind::MetaWatch,
        TrailerKind::Hpt,
        TrailerKind::Ixia,
        TrailerKind::Gigamon,
    ] {
        for new_fcs in [false, true] {
            for len in [1, 200] {
                // A short frame is padded to 60 bytes on the wire: the tap's FCS covers it.
                let mut f = frame(len);
                if f.len() < 60 {
                    f.resize(60, 0);
                }
                let s = stamp(kind, t);
                let mut stamps = WireStamps::new(WireStampMode::Auto);
                let mut c = TrailerCounters::default();
                let got = stamps.stamp(&with_trailer(&f, &s, new_fcs), t + 50_000, &mut c);
                let want = match kind {
                    // Their layouts carry no device or port.
                    TrailerKind::Ixia | TrailerKind::Gigamon => WireStamp {
                        device: 0,
                        port: 0,
                        ..s
                    },
                    _ => s,
                };
                assert_eq!(got, Some(want), "{kind:?} new_fcs {new_fcs} len {len}");
                assert_eq!(c.trailer_timestamps, 1);
                assert_eq!(stamps.kind(), Some(kind));
            }
        }
    }
}

#[test]
fn hpt_fractions_read_back_every_nanosecond() {
    let f = frame(100);
    let mut stamps = WireStamps::new(WireStampMode::Hpt);
    let mut c = TrailerCounters::default();
    for ns in [
        0,
        1,
        2,
        999,
        123_456_789,
        500_000_000,
        999_999_998,
        999_999_999,
    ] {
        let s = stamp(TrailerKind::Hpt, 1_600_000_000 * 1_000_000_000 + ns);
        assert_eq!(
            stamps.stamp(&with_trailer(&f, &s, false), s.unix_ns, &mut c),
            Some(s)
        );
    }
}

#[test]
fn a_plain_frame_costs_nothing_and_counts_nothing_until_a_trailer_is_locked() {
    let f = frame(100);
    let mut stamps = WireStamps::new(WireStampMode::Auto);
    let mut c = TrailerCounters::default();
    assert_eq!(stamps.stamp(&f, 5, &mut c), None);
    // The NIC kept the FCS: 4 bytes after the datagram are no trailer.
    let mut with_fcs = f.clone();
    with_fcs.extend_from_slice(&crc32fast::hash(&f).to_le_bytes());
    assert_eq!(stamps.stamp(&with_fcs, 5, &mut c), None);
    assert_eq!(c, TrailerCounters::default());

    // Once a trailer is found, a frame without one is counted missing, and bytes after the
    // datagram that fail the FCS check are counted, never read as a time.
    let s = stamp(TrailerKind::MetaWatch, 1_000_000_000_000);
    assert!(stamps
        .stamp(&with_trailer(&f, &s, false), 0, &mut c)
        .is_some());
    assert_eq!(stamps.stamp(&f, 5, &mut c), None);
    let mut broken = with_trailer(&f, &s, false);
    let at = f.len();
    broken[at] ^= 0xFF;
    assert_eq!(stamps.stamp(&broken, 5, &mut c), None);
    assert_eq!(
        c,
        TrailerCounters {
            trailer_timestamps: 1,
            trailer_missing: 1,
            trailer_fcs_mismatch: 1,
            first: Some((TrailerKind::MetaWatch, 7)),
            first_offset_ns: Some(1_000_000_000_000),
            keyframes: 0,
        }
    );
}

#[test]
fn a_16_byte_trailer_is_the_kind_whose_time_is_the_captures() {
    let f = frame(100);
    let t = 1_700_000_000_000_000_000;
    for kind in [TrailerKind::MetaWatch, TrailerKind::Hpt] {
        let s = stamp(kind, t);
        let mut stamps = WireStamps::new(WireStampMode::Auto);
        let got = stamps.stamp(
            &with_trailer(&f, &s, false),
            t + 80_000,
            &mut TrailerCounters::default(),
        );
        assert_eq!(got.map(|g| g.kind), Some(kind));
    }
}

#[test]
fn off_reads_no_trailer() {
    let f = frame(100);
    let s = stamp(TrailerKind::Hpt, 1_000_000_000);
    let mut c = TrailerCounters::default();
    let mut stamps = WireStamps::new(WireStampMode::Off);
    assert_eq!(stamps.stamp(&with_trailer(&f, &s, true), 0, &mut c), None);
    assert_eq!(c, TrailerCounters::default());
}

#[test]
fn metawatch_with_a_sub_nanosecond_tlv() {
    let f = frame(100);
    let s = stamp(TrailerKind::MetaWatch, 1_700_000_000_000_000_001);
    let plain = trailer_for(&f, &s, false);
    // FCS · TLV (tag 1, final) · seconds · ns · flags with 0x02 · device · port.
    let mut t = plain[..4].to_vec();
    t.extend_from_slice(&((0x80_0000u32 << 8) | 0x20 | 1).to_be_bytes());
    t.extend_from_slice(&plain[4..12]);
    t.push(plain[12] | 0x02);
    t.extend_from_slice(&plain[13..]);
    let mut whole = f.clone();
    whole.extend_from_slice(&t);
    let got = WireStamps::new(WireStampMode::Auto).stamp(
        &whole,
        s.unix_ns,
        &mut TrailerCounters::default(),
    );
    assert_eq!(got, Some(s));
}

#[test]
fn a_kept_new_fcs_is_never_read_as_a_metawatch_tlv() {
    // Whatever bytes the new FCS happens to be, a 16-byte trailer and its FCS read as the
    // 16-byte trailer: 3,000 stamps give 3,000 different FCS values.
    let f = frame(100);
    let mut stamps = WireStamps::new(WireStampMode::MetaWatch);
    let mut c = TrailerCounters::default();
    for i in 0..3_000u64 {
        let s = stamp(
            TrailerKind::MetaWatch,
            1_700_000_000_000_000_000 + i * 7_919,
        );
        assert_eq!(
            stamps.stamp(&with_trailer(&f, &s, true), s.unix_ns, &mut c),
            Some(s),
            "stamp {i}"
        );
    }
}

/// Arista's header with `version` and the time as it writes it.
fn arista_frame(f: &[u8], version: u16, time: &[u8]) -> Vec<u8> {
    let mut out = f[..12].to_vec();
    out.extend_from_slice(&ARISTA_ETHERTYPE.to_be_bytes());
    out.extend_from_slice(&1u16.to_be_bytes());
    out.extend_from_slice(&version.to_be_bytes());
    out.extend_from_slice(time);
    out.extend_from_slice(&f[12..]);
    out
}

#[test]
fn arista_headers_64_and_48_bit_utc_and_tai() {
    let f = frame(100);
    let t: u64 = 1_700_000_123_456_789_012;
    let (s, ns) = (t / 1_000_000_000, (t % 1_000_000_000) as u32);
    let tai_s = s + 37;
    let wide = |sec: u64| [(sec as u32).to_be_bytes(), ns.to_be_bytes()].concat();
    let narrow = |sec: u64| [&(sec as u16).to_be_bytes()[..], &ns.to_be_bytes()[..]].concat();
    for (version, time) in [
        (0x0110, wide(s)),
        (0x0010, wide(tai_s)),
        (0x0120, narrow(s)),
        (0x0020, narrow(tai_s)),
    ] {
        let framed = arista_frame(&f, version, &time);
        // The header is skipped: the TCP segment decodes as without it.
        let Ok(crate::decode::Decoded::Tcp(tcp)) =
            crate::decode::decode(LinkType::Ethernet, &framed)
        else {
            panic!("version {version:#x}: no TCP");
        };
        assert_eq!(tcp.payload, &[b'x'; 100][..]);
        // The host stamped it 40 s later or 20 s sooner: the 48-bit forms still find the
        // right seconds (their 16 bits are taken nearest the host's clock).
        for host in [t + 40_000_000_000, t - 20_000_000_000] {
            let mut c = TrailerCounters::default();
            let got = WireStamps::new(WireStampMode::Auto).stamp(&framed, host, &mut c);
            assert_eq!(
                got.map(|g| (g.kind, g.unix_ns)),
                Some((TrailerKind::AristaHeader, t)),
                "version {version:#x}"
            );
            assert_eq!(c.trailer_timestamps, 1);
        }
    }
    assert_eq!(
        with_arista_header(&f, t),
        arista_frame(&f, 0x0110, &wide(s))
    );
    // Off: the header is skipped by the decoder, its time not used.
    let framed = with_arista_header(&f, t);
    assert_eq!(
        WireStamps::new(WireStampMode::Off).stamp(&framed, 5, &mut TrailerCounters::default()),
        None
    );
    // An unknown version: counted, not read.
    let mut c = TrailerCounters::default();
    assert_eq!(
        WireStamps::new(WireStampMode::Auto).stamp(&arista_frame(&f, 0x0030, &wide(s)), 5, &mut c),
        None
    );
    assert_eq!(c.trailer_fcs_mismatch, 1);
}

/// A VSS trailer: seconds · ns (with the clock source in its top two bits) · a port stamp
/// of `port.len()` bytes, after the frame as on the wire; the new FCS when `fcs`.
fn vss_frame(f: &[u8], unix_ns: u64, source: u32, port: &[u8], fcs: bool) -> Vec<u8> {
    let mut out = f.to_vec();
    if out.len() < 60 {
        out.resize(60, 0);
    }
    out.extend_from_slice(&((unix_ns / 1_000_000_000) as u32).to_be_bytes());
    let ns = (unix_ns % 1_000_000_000) as u32 | source << 30;
    out.extend_from_slice(&ns.to_be_bytes());
    out.extend_from_slice(port);
    if fcs {
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
    }
    out
}

#[test]
fn vss_trailers_with_any_port_stamp_and_clock_source_only_when_asked_for() {
    let t = 1_700_000_000_987_654_321;
    for len in [1, 200] {
        let f = frame(len);
        for port in [&[][..], &[9][..], &[1, 9][..]] {
            for (source, fcs) in [(0, false), (3, true), (1, true), (2, false)] {
                let framed = vss_frame(&f, t, source, port, fcs);
                let mut c = TrailerCounters::default();
                let got = WireStamps::new(WireStampMode::Vss).stamp(&framed, t + 40_000, &mut c);
                let got = got.unwrap_or_else(|| panic!("len {len} port {port:?} fcs {fcs}"));
                assert_eq!((got.kind, got.unix_ns), (TrailerKind::Vss, t));
                assert_eq!(got.port, port.last().copied().unwrap_or(0));
                assert_eq!(c.trailer_timestamps, 1);
                // Never by itself: `auto` reads nothing there.
                let mut c = TrailerCounters::default();
                assert_eq!(
                    WireStamps::new(WireStampMode::Auto).stamp(&framed, t, &mut c),
                    None
                );
                assert_eq!(c, TrailerCounters::default());
            }
        }
    }
    // What cannot be a VSS time: counted, not read; no trailer: missing.
    let f = frame(100);
    let mut s = WireStamps::new(WireStampMode::Vss);
    let mut c = TrailerCounters::default();
    let mut bad_ns = vss_frame(&f, t, 0, &[], false);
    let at = bad_ns.len() - 4;
    bad_ns[at..].copy_from_slice(&1_000_000_000u32.to_be_bytes());
    let zero = vss_frame(&f, 999_999_999, 0, &[], false);
    let mut odd = vss_frame(&f, t, 0, &[], false);
    odd.extend_from_slice(&[0; 3]);
    for framed in [bad_ns, zero, odd] {
        assert_eq!(s.stamp(&framed, t, &mut c), None);
    }
    assert_eq!(s.stamp(&f, t, &mut c), None);
    assert_eq!((c.trailer_fcs_mismatch, c.trailer_missing), (3, 1));
}

#[test]
fn arista_7280_source_mac_stamps_take_their_seconds_from_the_capture() {
    let f = frame(100);
    let t: u64 = 1_700_000_123_456_789_012;
    let framed = with_mac_stamp(&f, t);
    assert_eq!(&framed[..6], &f[..6], "the destination MAC is kept");
    assert_eq!(
        &framed[12..],
        &f[12..],
        "nothing after the source MAC moves"
    );
    // The low 16 bits of the seconds · the ns, big-endian.
    assert_eq!(
        &framed[6..12],
        &[
            &((t / 1_000_000_000) as u16).to_be_bytes()[..],
            &((t % 1_000_000_000) as u32).to_be_bytes()[..]
        ]
        .concat()[..]
    );
    for host in [t + 40_000_000_000, t - 20_000_000_000, t + 30_000] {
        let mut c = TrailerCounters::default();
        let got = WireStamps::new(WireStampMode::Arista7280Mac).stamp(&framed, host, &mut c);
        assert_eq!(
            got.map(|g| (g.kind, g.unix_ns)),
            Some((TrailerKind::Arista7280Mac, t))
        );
        assert_eq!(c.trailer_timestamps, 1);
        // `auto` never reads a MAC as a time.
        assert_eq!(
            WireStamps::new(WireStampMode::Auto).stamp(&framed, host, &mut c),
            None
        );
    }
    // A source MAC whose last 4 bytes are 10^9 or more is no stamp.
    let mut c = TrailerCounters::default();
    let mut not = f.clone();
    not[8..12].copy_from_slice(&0xFFFF_FFFFu32.to_be_bytes());
    assert_eq!(
        WireStamps::new(WireStampMode::Arista7280Mac).stamp(&not, t, &mut c),
        None
    );
    assert_eq!(c.trailer_fcs_mismatch, 1);
}

#[test]
fn every_mode_is_chosen_by_its_name() {
    let names = [
        "auto",
        "off",
        "metawatch",
        "hpt",
        "arista-header",
        "ixia",
        "gigamon",
        "arista-7150",
        "fusion",
        "vss",
        "arista-7280-mac",
    ];
    for (name, mode) in names.into_iter().zip(WireStampMode::ALL) {
        assert_eq!(name.parse::<WireStampMode>(), Ok(mode));
        let err = "nope".parse::<WireStampMode>().unwrap_err();
        assert!(err.contains(name), "{err}");
        // As the process-wide choice stores it ([`choose`]: not called here, other tests
        // read it).
        assert_eq!(WireStampMode::from_repr(mode as u8), mode);
        // A kind asked for is named as its reports name it.
        if let Some(kind) = WireStamps::new(mode).kind() {
            assert_eq!(kind.name(), name);
        }
    }
    assert_eq!(
        clock_name(TrailerKind::Arista7150, 888),
        "arista-7150 (device 888)"
    );
    for kind in [
        TrailerKind::Fusion,
        TrailerKind::Vss,
        TrailerKind::Arista7280Mac,
    ] {
        assert_eq!(clock_name(kind, 3), kind.name());
    }
}

/// The Ethernet tunnels a mirror carries a tapped frame in (GRE carrying bare IP drops the
/// frame's tail with its Ethernet header: no trailer inside it).
const ETHERNET_TUNNELS: [Tunnel; 5] = [
    Tunnel::GreTap,
    Tunnel::ErspanII,
    Tunnel::ErspanIII { subheader: false },
    Tunnel::ErspanIII { subheader: true },
    Tunnel::Vxlan,
];

/// A frame as the tap put it on the wire: padded to 60 bytes when short (as [`frame`]
/// makes it already).
fn tapped(payload_len: usize) -> Vec<u8> {
    let f = frame(payload_len);
    assert!(f.len() >= 60);
    f
}

/// [`frame`] without its padding to 60 bytes: the frame as the host sent it.
fn unpadded(payload_len: usize) -> Vec<u8> {
    let mut f = frame(payload_len);
    f.truncate(14 + usize::from(be16(&f, 16)));
    f
}

/// A frame to lock `kind` with: another packet than [`frame`]'s (no mirror's copy of it).
fn lock_frame(kind: TrailerKind, unix_ns: u64) -> Vec<u8> {
    with_trailer(&tapped(3), &stamp(kind, unix_ns), false)
}

/// The stamp of `wrapped` (a request to port 9878) both ways a run reads it, after the
/// frames `before`: `WireStamps::stamp` (how the clock is named before the run) and the
/// classifier (every segment's time), which must agree; with the counters and the
/// segment's time.
fn read_both(
    mode: WireStampMode,
    before: &[Vec<u8>],
    wrapped: &[u8],
    host_ns: u64,
) -> (Option<WireStamp>, TrailerCounters, u64) {
    let sooner = host_ns - 2_000;
    let mut stamps = WireStamps::new(mode);
    let mut c = TrailerCounters::default();
    for f in before {
        stamps.stamp(f, sooner, &mut c);
    }
    let got = stamps.stamp(wrapped, host_ns, &mut c);
    let mut classifier = FrameClassifier::new(PortSet::single(9878));
    classifier.set_stamps(WireStamps::new(mode));
    let mut stats = CaptureStats::default();
    for f in before {
        classifier.classify(LinkType::Ethernet, sooner, f, &mut stats);
    }
    let seg = classifier
        .classify(LinkType::Ethernet, host_ns, wrapped, &mut stats)
        .expect("a request");
    assert_eq!(
        stats.trailers, c,
        "the classifier counts as the clock's reader"
    );
    assert_eq!(seg.ts_ns, got.map_or(host_ns, |s| s.unix_ns));
    (got, c, seg.ts_ns)
}

#[test]
fn trailers_inside_every_ethernet_tunnel_are_checked_over_the_inner_frame() {
    let t = 1_700_000_000_123_456_789;
    for tunnel in ETHERNET_TUNNELS {
        for kind in [TrailerKind::MetaWatch, TrailerKind::Hpt] {
            for new_fcs in [false, true] {
                for len in [1, 200] {
                    let s = stamp(kind, t);
                    let wrapped = wrap_in_tunnel(&with_trailer(&tapped(len), &s, new_fcs), tunnel);
                    // The outer frame as the capture NIC kept it too, with its FCS.
                    let mut with_fcs = wrapped.clone();
                    with_fcs.extend_from_slice(&crc32fast::hash(&wrapped).to_le_bytes());
                    for f in [&wrapped, &with_fcs] {
                        let (got, c, ts) = read_both(WireStampMode::Auto, &[], f, t + 50_000);
                        let what = format!("{tunnel:?} {kind:?} new_fcs {new_fcs} len {len}");
                        assert_eq!(got, Some(s), "{what}");
                        assert_eq!(ts, t, "{what}");
                        assert_eq!(c.trailer_timestamps, 1, "{what}");
                        assert_eq!((c.trailer_missing, c.trailer_fcs_mismatch), (0, 0));
                    }
                }
            }
        }
    }
}

#[test]
fn an_inner_trailer_that_fails_its_check_is_counted_and_not_used() {
    let t = 1_700_000_000_000_000_000;
    let good = stamp(TrailerKind::MetaWatch, t);
    for tunnel in ETHERNET_TUNNELS {
        for len in [1, 200] {
            let f = tapped(len);
            let lock = wrap_in_tunnel(&lock_frame(TrailerKind::MetaWatch, t), tunnel);
            // The original FCS one bit off.
            let mut broken = with_trailer(&f, &good, false);
            broken[f.len()] ^= 0x01;
            // What a check over the outer frame would take: the CRC of everything before
            // the trailer in the captured frame (the headers' lengths are the same).
            let mut outer_crc = wrap_in_tunnel(&with_trailer(&f, &good, false), tunnel);
            let at = outer_crc.len() - 16;
            let crc = crc32fast::hash(&outer_crc[..at]).to_le_bytes();
            outer_crc[at..at + 4].copy_from_slice(&crc);
            for bad in [wrap_in_tunnel(&broken, tunnel), outer_crc] {
                let what = format!("{tunnel:?} len {len}");
                // Before any kind is locked: nothing read, nothing counted.
                let (got, c, ts) = read_both(WireStampMode::Auto, &[], &bad, t + 9_000);
                assert_eq!((got, ts), (None, t + 9_000), "{what}");
                assert_eq!(c, TrailerCounters::default(), "{what}");
                // Once locked (found, or asked for): counted, the host's time used.
                for (mode, before) in [
                    (WireStampMode::Auto, vec![lock.clone()]),
                    (WireStampMode::MetaWatch, vec![]),
                ] {
                    let (got, c, ts) = read_both(mode, &before, &bad, t + 9_000);
                    assert_eq!((got, ts), (None, t + 9_000), "{what} {mode:?}");
                    assert_eq!(c.trailer_fcs_mismatch, 1, "{what} {mode:?}");
                    assert_eq!(c.trailer_missing, 0, "{what} {mode:?}");
                    assert_eq!(c.trailer_timestamps, before.len() as u64);
                }
            }
        }
    }
}

#[test]
fn the_outer_frame_s_own_trailer_is_read_after_the_inner_one() {
    let inner = stamp(TrailerKind::MetaWatch, 1_700_000_000_000_000_000);
    let outer = WireStamp {
        device: 9,
        ..stamp(TrailerKind::MetaWatch, 1_700_000_000_000_000_500)
    };
    for tunnel in ETHERNET_TUNNELS.into_iter().chain([Tunnel::GreIp]) {
        let what = format!("{tunnel:?}");
        // GRE carrying IP carries the datagram alone (a router forwards no padding).
        let f = if tunnel == Tunnel::GreIp {
            unpadded(1)
        } else {
            tapped(1)
        };
        // Only the outer frame stamped (after the outer datagram, its FCS over it all).
        let plain = wrap_in_tunnel(&f, tunnel);
        let (got, _, _) = read_both(
            WireStampMode::Auto,
            &[],
            &with_trailer(&plain, &outer, true),
            outer.unix_ns,
        );
        assert_eq!(got, Some(outer), "{what}");
        if tunnel == Tunnel::GreIp {
            continue;
        }
        // Both: the inner frame's, the tap nearer the wire.
        let both = with_trailer(
            &wrap_in_tunnel(&with_trailer(&f, &inner, false), tunnel),
            &outer,
            false,
        );
        let (got, c, _) = read_both(WireStampMode::Auto, &[], &both, outer.unix_ns);
        assert_eq!(got, Some(inner), "{what}");
        assert_eq!(c.trailer_timestamps, 1);
        // The inner one broken: the outer one, nothing counted against the frame.
        let mut broken = with_trailer(&f, &inner, false);
        broken[f.len() + 1] ^= 0x80;
        let wrapped = with_trailer(&wrap_in_tunnel(&broken, tunnel), &outer, false);
        let (got, c, _) = read_both(WireStampMode::MetaWatch, &[], &wrapped, outer.unix_ns);
        assert_eq!(got, Some(outer), "{what}");
        assert_eq!((c.trailer_fcs_mismatch, c.trailer_missing), (0, 0));
    }
}

#[test]
fn a_tunnelled_frame_without_a_trailer_counts_as_a_plain_one_does() {
    let t = 1_700_000_000_000_000_000;
    let lock = lock_frame(TrailerKind::Hpt, t);
    for tunnel in ETHERNET_TUNNELS.into_iter().chain([Tunnel::GreIp]) {
        for len in [0, 1, 200] {
            // As sent, as padded on the wire, with its FCS kept inside the tunnel; the
            // outer frame with its own FCS kept or not, or 8 bytes after it (a tick and
            // an FCS: no trailer `auto` reads) — with the inner frame's 10, more after the
            // datagram than any trailer needs, but too few in either frame.
            let sent = unpadded(len);
            let padded = tapped(len);
            let mut kept = padded.clone();
            kept.extend_from_slice(&crc32fast::hash(&padded).to_le_bytes());
            // GRE carrying IP carries the datagram alone (a router forwards no padding).
            let inners = if tunnel == Tunnel::GreIp {
                vec![sent]
            } else {
                vec![sent, padded, kept]
            };
            for inner in inners {
                let wrapped = wrap_in_tunnel(&inner, tunnel);
                let mut with_fcs = wrapped.clone();
                with_fcs.extend_from_slice(&crc32fast::hash(&wrapped).to_le_bytes());
                let mut with_tick = wrapped.clone();
                with_tick.extend_from_slice(&[0x12, 0x34, 0x56, 0x78]);
                with_tick.extend_from_slice(&crc32fast::hash(&with_tick).to_le_bytes());
                for f in [wrapped, with_fcs, with_tick] {
                    let what = format!("{tunnel:?} len {len} {} bytes", inner.len());
                    let (got, c, ts) = read_both(WireStampMode::Auto, &[], &f, t);
                    assert_eq!((got, ts), (None, t), "{what}");
                    assert_eq!(c, TrailerCounters::default(), "{what}");
                    // A kind locked: missing, never a failed check.
                    let (got, c, _) =
                        read_both(WireStampMode::Auto, std::slice::from_ref(&lock), &f, t);
                    assert_eq!(got, None, "{what}");
                    assert_eq!(
                        (c.trailer_missing, c.trailer_fcs_mismatch),
                        (1, 0),
                        "{what}"
                    );
                }
            }
        }
    }
}
