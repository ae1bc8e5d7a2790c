//! Target `pcap`: a whole capture file (pcap or pcapng, any damage), read as `fixscope
//! pcap` reads it, every segment fed through the pipeline.

use std::path::Path;

use fixscope_core::pcap::{read_capture_from, CaptureStats, Flow};
use fixscope_core::PortSet;

use crate::check;

pub fn pcap(data: &[u8]) {
    let ports: PortSet = "1-65535".parse().expect("a valid port range");
    let mut stats = CaptureStats::default();
    let mut pipeline = check::small_pipeline();
    let mut handed_on = 0u64;
    let result = read_capture_from(
        data,
        Path::new("fuzz-input"),
        &ports,
        &mut stats,
        |segment| {
            handed_on += 1;
            // A payload never holds more bytes than the file.
            assert!(segment.payload.len() <= data.len());
            pipeline.on_segment(segment);
            Flow::Continue
        },
    );
    // A clear error is fine; a panic or a miscount is not.
    if let Err(e) = &result {
        assert!(!e.to_string().is_empty());
    }
    assert_eq!(handed_on, stats.segments_in_port_range);
    assert!(stats.segments_in_port_range <= stats.tcp_segments);
    assert!(stats.truncated_segments <= stats.segments_in_port_range);
    assert!(
        stats.tcp_segments + stats.not_tcp + stats.ip_fragments + stats.decode_errors
            <= stats.packets
    );
    check::finish(pipeline);
}
