//! Target `socket_record`: `--breakdown` ring records (`struct fxb_rec`, breakdown.h) one
//! after another, each preceded by a 2-byte length here, decoded as the live source does.

use fixscope_core::socket_event::SocketCall;
use fixscope_live::{socket_event_from_record, SOCKET_RECORD_BYTES};

pub fn socket_record(mut data: &[u8]) {
    while data.len() >= 2 {
        let len = (u16::from_le_bytes([data[0], data[1]]) as usize).min(data.len() - 2);
        let rec = &data[2..2 + len];
        data = &data[2 + len..];
        let Some(ev) = socket_event_from_record(rec) else {
            continue;
        };
        assert!(rec.len() >= SOCKET_RECORD_BYTES);
        assert!(ev.len > 0, "an event moves bytes");
        // A wakeup only on reads, in its order: woken <= on cpu <= the read.
        if let Some(w) = ev.wakeup {
            assert_eq!(ev.call, SocketCall::Read);
            assert!(w.woken_ns <= w.on_cpu_ns && w.on_cpu_ns <= ev.ts_ns);
        }
    }
}
