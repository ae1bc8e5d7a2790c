//! Target `record`: live ring records (header + payload, as the kernel writes them) one
//! after another, each preceded by a 2-byte length here, decoded and fed through the
//! pipeline as the live source does.

use fixscope_live::{segment_from_record, RECORD_HEADER_BYTES};

use crate::check;

pub fn record(mut data: &[u8]) {
    let mut pipeline = check::small_pipeline();
    while data.len() >= 2 {
        let len = (u16::from_le_bytes([data[0], data[1]]) as usize).min(data.len() - 2);
        let rec = &data[2..2 + len];
        data = &data[2 + len..];
        let Some(segment) = segment_from_record(rec) else {
            continue;
        };
        // The payload is the bytes after the header, never beyond the record.
        assert!(RECORD_HEADER_BYTES + segment.payload.len() <= rec.len());
        assert_eq!(
            segment.payload.as_ptr(),
            rec[RECORD_HEADER_BYTES..].as_ptr()
        );
        pipeline.on_segment(&segment);
    }
    check::finish(pipeline);
}
