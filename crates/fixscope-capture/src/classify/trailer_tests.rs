//! Trailers read by the classifier inside every tunnel: [`crate::wire_stamp`]'s clock read
//! both ways a run reads it (before the run, and per segment), which must agree.

use crate::capture_stats::CaptureStats;
use crate::classify::FrameClassifier;
use crate::decode::LinkType;
use crate::pcap_writer::{wrap_in_tunnel, Tunnel};
use crate::wire_stamp::tests::{frame, stamp, with_trailer};
use crate::wire_stamp::{TrailerCounters, TrailerKind, WireStamp, WireStampMode, WireStamps};
use fixscope_model::ports::PortSet;
use fixscope_model::wire::be16;

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
