//! Decoding one ring record (`struct fxs_rec` + payload, fixscope.h) into a [`Segment`]
//! that borrows the ring's memory.

use std::mem::size_of;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use fixscope_core::segment::{Direction, Endpoint, FlowKey, Segment, TcpFlags};

use crate::skeleton::types::{fxs_dir, fxs_limit, fxs_rec};

/// Payload bytes a record holds at most (`FXS_CHUNK`).
const CHUNK_BYTES: usize = fxs_limit::FXS_CHUNK.0 as usize;
/// Bytes of the record header in front of the payload.
pub const REC_HDR: usize = size_of::<fxs_rec>();

/// A record's flow: IPv4 addresses in the first 4 bytes of each array (family 4) or IPv6
/// (family 6), `None` for any other family; and its direction (`enum fxs_dir`). Shared by
/// every record layout the programs write (packets here, socket calls in
/// `breakdown/event.rs`).
pub(crate) fn flow_and_direction(
    family: u8,
    (saddr, sport): ([u8; 16], u16),
    (daddr, dport): ([u8; 16], u16),
    dir: u8,
) -> Option<(FlowKey, Direction)> {
    let v4 = |a: [u8; 16]| IpAddr::V4(Ipv4Addr::new(a[0], a[1], a[2], a[3]));
    let (src, dst) = match family {
        4 => (v4(saddr), v4(daddr)),
        6 => (
            IpAddr::V6(Ipv6Addr::from(saddr)),
            IpAddr::V6(Ipv6Addr::from(daddr)),
        ),
        _ => return None,
    };
    let direction = match fxs_dir(u32::from(dir)) {
        fxs_dir::FXS_DIR_REQUEST => Direction::Request,
        fxs_dir::FXS_DIR_RESPONSE => Direction::Response,
        _ => return None,
    };
    let flow = FlowKey {
        src: Endpoint {
            addr: src,
            port: sport,
        },
        dst: Endpoint {
            addr: dst,
            port: dport,
        },
    };
    Some((flow, direction))
}

/// The segment in `rec`, or `None` when the record is too short or inconsistent. Public for
/// the fuzz targets (`fuzz/`): it parses bytes the kernel wrote.
pub fn segment_from_record(rec: &[u8]) -> Option<Segment<'_>> {
    if rec.len() < REC_HDR {
        return None;
    }
    // SAFETY: `rec` holds at least size_of::<fxs_rec>() bytes and fxs_rec consists of
    // integers and byte arrays (every bit pattern valid); read_unaligned needs no alignment.
    let h = unsafe { std::ptr::read_unaligned(rec.as_ptr() as *const fxs_rec) };
    let len = h.len as usize;
    if len > CHUNK_BYTES || REC_HDR + len > rec.len() {
        return None;
    }
    let (flow, direction) =
        flow_and_direction(h.family, (h.saddr, h.sport), (h.daddr, h.dport), h.dir)?;
    Some(Segment {
        ts_ns: h.ts_ns,
        flow,
        direction,
        seq: h.seq,
        ack: h.ack,
        flags: TcpFlags(h.flags),
        payload: &rec[REC_HDR..REC_HDR + len],
        missing_tail: h.cut,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skeleton::types::fxs_counters;

    fn record(h: fxs_rec, payload: &[u8]) -> Vec<u8> {
        let mut v = vec![0u8; REC_HDR + payload.len()];
        // SAFETY: `v` has room for the header; write_unaligned needs no alignment.
        unsafe { std::ptr::write_unaligned(v.as_mut_ptr() as *mut fxs_rec, h) };
        v[REC_HDR..].copy_from_slice(payload);
        v
    }

    fn dir(d: fxs_dir) -> u8 {
        u8::try_from(d.0).expect("directions fit the record's u8")
    }

    #[test]
    fn decodes_v4_and_v6_records() {
        let mut h = fxs_rec {
            ts_ns: 42,
            seq: 1000,
            len: 3,
            cut: 5,
            sport: 50000,
            dport: 9878,
            family: 4,
            dir: dir(fxs_dir::FXS_DIR_REQUEST),
            flags: 0x18,
            ..Default::default()
        };
        h.saddr[..4].copy_from_slice(&[127, 0, 0, 1]);
        h.daddr[..4].copy_from_slice(&[10, 1, 2, 3]);
        let rec = record(h, b"8=F");
        let seg = segment_from_record(&rec).expect("decodes");
        assert_eq!(seg.ts_ns, 42);
        assert_eq!(seg.seq, 1000);
        assert_eq!(seg.payload, b"8=F");
        assert_eq!(seg.missing_tail, 5);
        assert_eq!(seg.direction, Direction::Request);
        assert_eq!(seg.flow.src.to_string(), "127.0.0.1:50000");
        assert_eq!(seg.flow.dst.to_string(), "10.1.2.3:9878");

        h.family = 6;
        h.dir = dir(fxs_dir::FXS_DIR_RESPONSE);
        h.saddr = Ipv6Addr::LOCALHOST.octets();
        h.daddr = Ipv6Addr::LOCALHOST.octets();
        let rec = record(h, b"8=F");
        let seg = segment_from_record(&rec).expect("decodes");
        assert_eq!(seg.direction, Direction::Response);
        assert_eq!(seg.flow.src.to_string(), "[::1]:50000");
    }

    #[test]
    fn rejects_malformed_records() {
        assert!(segment_from_record(&[0u8; 10]).is_none());
        let h = fxs_rec {
            len: 100,
            family: 4,
            ..Default::default()
        };
        assert!(segment_from_record(&record(h, b"short")).is_none(), "len");
        let h = fxs_rec {
            family: 7,
            ..Default::default()
        };
        assert!(segment_from_record(&record(h, b"")).is_none(), "family");
        let h = fxs_rec {
            family: 4,
            dir: 2,
            ..Default::default()
        };
        assert!(segment_from_record(&record(h, b"")).is_none(), "direction");
    }

    #[test]
    fn header_matches_c_layout() {
        assert_eq!(REC_HDR, 80);
        assert_eq!(CHUNK_BYTES, 16384);
        assert_eq!(size_of::<fxs_counters>(), 12 * 8);
    }
}
