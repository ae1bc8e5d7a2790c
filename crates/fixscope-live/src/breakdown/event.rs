//! Decoding one breakdown ring record (`struct fxb_rec`, breakdown.h) into a
//! [`SocketEvent`].

use std::mem::size_of;
#[cfg(test)]
use std::net::Ipv6Addr;

#[cfg(test)]
use fixscope_core::segment::Direction;
use fixscope_core::socket_event::{SocketCall, SocketEvent, Wakeup};

use super::skel::types::{fxb_call, fxb_rec};

/// Bytes of a breakdown ring record.
pub const SOCKET_RECORD_BYTES: usize = size_of::<fxb_rec>();

/// The socket call in `rec`, or `None` when the record is too short or inconsistent.
/// Public for the fuzz targets: it parses bytes the kernel wrote.
pub fn socket_event_from_record(rec: &[u8]) -> Option<SocketEvent> {
    if rec.len() < SOCKET_RECORD_BYTES {
        return None;
    }
    // SAFETY: `rec` holds at least size_of::<fxb_rec>() bytes and fxb_rec consists of
    // integers and byte arrays (every bit pattern valid); read_unaligned needs no alignment.
    let h = unsafe { std::ptr::read_unaligned(rec.as_ptr() as *const fxb_rec) };
    let (flow, direction) =
        crate::record::flow_and_direction(h.family, (h.saddr, h.sport), (h.daddr, h.dport), h.dir)?;
    let call = match fxb_call(u32::from(h.call)) {
        fxb_call::FXB_CALL_READ => SocketCall::Read,
        fxb_call::FXB_CALL_WRITE => SocketCall::Write,
        _ => return None,
    };
    if h.len == 0 {
        return None;
    }
    // The kernel fills the pair only for reads, in this order, before the read ran; any
    // other shape is not a wakeup this read waited on.
    let wakeup = (call == SocketCall::Read
        && h.woken_ns != 0
        && h.woken_ns <= h.on_cpu_ns
        && h.on_cpu_ns <= h.ts_ns)
        .then_some(Wakeup {
            woken_ns: h.woken_ns,
            on_cpu_ns: h.on_cpu_ns,
        });
    Some(SocketEvent {
        ts_ns: h.ts_ns,
        flow,
        direction,
        call,
        seq: h.seq,
        len: h.len,
        tid: h.tid,
        wakeup,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(h: fxb_rec) -> Vec<u8> {
        let mut v = vec![0u8; SOCKET_RECORD_BYTES];
        // SAFETY: `v` has room for the record; write_unaligned needs no alignment.
        unsafe { std::ptr::write_unaligned(v.as_mut_ptr() as *mut fxb_rec, h) };
        v
    }

    fn read_v4() -> fxb_rec {
        let mut h = fxb_rec {
            ts_ns: 1_000,
            woken_ns: 700,
            on_cpu_ns: 900,
            seq: 4_000_000_000,
            len: 120,
            tid: 77,
            sport: 50_000,
            dport: 9878,
            family: 4,
            dir: 0,
            call: fxb_call::FXB_CALL_READ.0 as u8,
            ..Default::default()
        };
        h.saddr[..4].copy_from_slice(&[10, 0, 0, 2]);
        h.daddr[..4].copy_from_slice(&[10, 0, 0, 1]);
        h
    }

    #[test]
    fn decodes_reads_and_writes() {
        let ev = socket_event_from_record(&record(read_v4())).expect("decodes");
        assert_eq!(ev.ts_ns, 1_000);
        assert_eq!(ev.call, SocketCall::Read);
        assert_eq!(ev.direction, Direction::Request);
        assert_eq!((ev.seq, ev.len, ev.tid), (4_000_000_000, 120, 77));
        assert_eq!(ev.flow.src.to_string(), "10.0.0.2:50000");
        assert_eq!(ev.flow.dst.to_string(), "10.0.0.1:9878");
        assert_eq!(
            ev.wakeup,
            Some(Wakeup {
                woken_ns: 700,
                on_cpu_ns: 900
            })
        );

        let mut w = read_v4();
        w.call = fxb_call::FXB_CALL_WRITE.0 as u8;
        w.dir = 1;
        w.family = 6;
        w.saddr = Ipv6Addr::LOCALHOST.octets();
        w.daddr = Ipv6Addr::LOCALHOST.octets();
        let ev = socket_event_from_record(&record(w)).expect("decodes");
        assert_eq!(ev.call, SocketCall::Write);
        assert_eq!(ev.direction, Direction::Response);
        assert_eq!(ev.flow.src.to_string(), "[::1]:50000");
        assert_eq!(ev.wakeup, None, "writes carry no wakeup");
    }

    #[test]
    fn a_wakeup_out_of_order_is_none() {
        for (woken, on_cpu) in [(0, 900), (950, 900), (700, 1_001)] {
            let mut h = read_v4();
            h.woken_ns = woken;
            h.on_cpu_ns = on_cpu;
            let ev = socket_event_from_record(&record(h)).expect("decodes");
            assert_eq!(ev.wakeup, None, "woken {woken} on_cpu {on_cpu}");
        }
    }

    #[test]
    fn rejects_malformed_records() {
        assert!(socket_event_from_record(&[0u8; 10]).is_none(), "short");
        let bad = |f: fn(&mut fxb_rec)| {
            let mut h = read_v4();
            f(&mut h);
            socket_event_from_record(&record(h))
        };
        assert!(bad(|h| h.family = 7).is_none(), "family");
        assert!(bad(|h| h.dir = 2).is_none(), "direction");
        assert!(bad(|h| h.call = 2).is_none(), "call");
        assert!(bad(|h| h.len = 0).is_none(), "empty");
    }

    #[test]
    fn record_matches_c_layout() {
        // ts_ns first (the timestamp merge reads it), then the C layout: 3 x u64, 2 x 16
        // bytes, 3 x u32, 2 x u16, 4 x u8.
        assert_eq!(std::mem::offset_of!(fxb_rec, ts_ns), 0);
        assert_eq!(SOCKET_RECORD_BYTES, 80);
    }
}
