use super::*;
use crate::decode::LinkType;
use crate::pcap_writer::test_support::ep;
use crate::pcap_writer::{FrameOptions, SyntheticConnection};

/// An Ethernet frame carrying a FIX-sized TCP segment.
pub(crate) fn frame(payload_len: usize) -> Vec<u8> {
    let mut conn = SyntheticConnection::new(ep("10.0.0.1", 40000), ep("10.0.0.2", 9878));
    conn.client_sends(&vec![b'x'; payload_len])
        .frame(LinkType::Ethernet, &FrameOptions::default())
}

pub(crate) fn with_trailer(frame: &[u8], stamp: &WireStamp, new_fcs: bool) -> Vec<u8> {
    let mut f = frame.to_vec();
    f.extend_from_slice(&trailer_for(frame, stamp, new_fcs));
    f
}

pub(crate) fn stamp(kind: TrailerKind, unix_ns: u64) -> WireStamp {
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
