//! Decoding one TLS uprobe ring record (`struct fxt_rec` + plaintext, tls_uprobe.h) into
//! a [`TlsCallEvent`].

use std::mem::size_of;

use fixscope_core::socket_event::TlsCallEvent;
use fixscope_core::tls::{CallKind, TlsCall};

use super::skel::types::{fxt_call, fxt_flag, fxt_rec};

/// Bytes of a record's header (the plaintext follows).
pub const TLS_CALL_HEADER_BYTES: usize = size_of::<fxt_rec>();

/// The call in `rec`, borrowing its plaintext, or `None` when the record is too short or
/// inconsistent. Public for the fuzz targets: it parses bytes the kernel wrote.
pub fn tls_call_from_record(rec: &[u8]) -> Option<TlsCallEvent<'_>> {
    let header = rec.get(..TLS_CALL_HEADER_BYTES)?;
    // SAFETY: `header` holds size_of::<fxt_rec>() bytes and fxt_rec consists of integers
    // and byte arrays (every bit pattern valid); read_unaligned needs no alignment.
    let h = unsafe { std::ptr::read_unaligned(header.as_ptr() as *const fxt_rec) };
    let (flow, direction) =
        crate::record::flow_and_direction(h.family, (h.saddr, h.sport), (h.daddr, h.dport), h.dir)?;
    let kind = match fxt_call(u32::from(h.call)) {
        fxt_call::FXT_CALL_READ => CallKind::Read,
        fxt_call::FXT_CALL_WRITE => CallKind::Write,
        _ => return None,
    };
    let flag = |f: fxt_flag| u32::from(h.flags) & f.0 != 0;
    if flag(fxt_flag::FXT_FLAG_MEMORY_BIO) {
        // Not a call: the connection's process drives OpenSSL through memory BIOs.
        return Some(TlsCallEvent {
            flow,
            direction,
            call: TlsCall {
                kind: CallKind::MemoryBio,
                tcp: None,
                bytes: &[],
                truncated: false,
                ts_ns: h.ts_ns,
            },
        });
    }
    let bytes = rec.get(TLS_CALL_HEADER_BYTES..TLS_CALL_HEADER_BYTES + h.len as usize)?;
    if bytes.is_empty() || h.total < h.len {
        return None;
    }
    // A call whose TCP I/O was not one range of one socket cannot be placed: as if it had
    // none and were not a leftover read (the join then counts it).
    let split = flag(fxt_flag::FXT_FLAG_TCP_SPLIT);
    let tcp = flag(fxt_flag::FXT_FLAG_TCP).then_some((h.seq_start, h.seq_end));
    Some(TlsCallEvent {
        flow,
        direction,
        call: TlsCall {
            kind,
            tcp,
            bytes,
            truncated: flag(fxt_flag::FXT_FLAG_TRUNCATED) || h.total != h.len || split,
            ts_ns: h.ts_ns,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fixscope_core::segment::Direction;

    fn record(h: fxt_rec, data: &[u8]) -> Vec<u8> {
        let mut v = vec![0u8; TLS_CALL_HEADER_BYTES];
        // SAFETY: `v` has room for the header; write_unaligned needs no alignment.
        unsafe { std::ptr::write_unaligned(v.as_mut_ptr() as *mut fxt_rec, h) };
        v.extend_from_slice(data);
        v.resize(v.len() + 64, 0xEE); // the size class's unused room
        v
    }

    fn write_v4(data: &[u8]) -> fxt_rec {
        let mut h = fxt_rec {
            ts_ns: 5_000,
            seq_start: 4_294_967_000,
            seq_end: 200,
            len: data.len() as u32,
            total: data.len() as u32,
            tid: 9,
            sport: 9878,
            dport: 50_000,
            family: 4,
            dir: 1,
            call: fxt_call::FXT_CALL_WRITE.0 as u8,
            flags: fxt_flag::FXT_FLAG_TCP.0 as u8,
            ..Default::default()
        };
        h.saddr[..4].copy_from_slice(&[10, 0, 0, 1]);
        h.daddr[..4].copy_from_slice(&[10, 0, 0, 2]);
        h
    }

    #[test]
    fn a_write_record_decodes_with_its_range_flow_and_exactly_its_bytes() {
        let data = b"8=FIX.4.4\x019=5\x01";
        let rec = record(write_v4(data), data);
        let ev = tls_call_from_record(&rec).unwrap();
        assert_eq!(ev.direction, Direction::Response);
        assert_eq!(ev.flow.src.port, 9878);
        assert_eq!(ev.call.kind, CallKind::Write);
        assert_eq!(ev.call.tcp, Some((4_294_967_000, 200)));
        assert_eq!(ev.call.bytes, data);
        assert!(!ev.call.truncated);
        assert_eq!(ev.call.ts_ns, 5_000);
    }

    #[test]
    fn a_memory_bio_note_decodes_as_such_with_its_flow_and_no_bytes() {
        let mut h = write_v4(&[]);
        h.flags = fxt_flag::FXT_FLAG_MEMORY_BIO.0 as u8;
        let rec = record(h, &[]);
        let ev = tls_call_from_record(&rec).unwrap();
        assert_eq!(ev.call.kind, CallKind::MemoryBio);
        assert_eq!(ev.direction, Direction::Response);
        assert_eq!(ev.flow.src.port, 9878);
        assert!(ev.call.bytes.is_empty());
        assert_eq!(ev.call.tcp, None);
    }

    #[test]
    fn truncated_split_short_and_empty_records_are_flagged_or_refused() {
        let data = [1u8; 10];
        let mut h = write_v4(&data);
        h.total = 70_000;
        assert!(
            tls_call_from_record(&record(h, &data))
                .unwrap()
                .call
                .truncated
        );
        let mut h = write_v4(&data);
        h.flags |= fxt_flag::FXT_FLAG_TCP_SPLIT.0 as u8;
        assert!(
            tls_call_from_record(&record(h, &data))
                .unwrap()
                .call
                .truncated
        );
        let mut h = write_v4(&data);
        h.flags = 0;
        assert_eq!(
            tls_call_from_record(&record(h, &data)).unwrap().call.tcp,
            None
        );
        let rec = record(write_v4(&data), &data);
        assert!(tls_call_from_record(&rec[..TLS_CALL_HEADER_BYTES + 5]).is_none());
        assert!(tls_call_from_record(&record(write_v4(&[]), &[])).is_none());
        let mut h = write_v4(&data);
        h.call = 7;
        assert!(tls_call_from_record(&record(h, &data)).is_none());
    }
}
