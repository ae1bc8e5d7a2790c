//! Target `decode`: one frame of any link type (the first byte picks it) through the
//! link/IP/TCP decoder and the frame classifier.

use fixscope_core::classify::{CaptureStats, FrameClassifier};
use fixscope_core::decode::{decode as decode_frame, Decoded, LinkType};
use fixscope_core::PortSet;

const LINKS: [LinkType; 5] = [
    LinkType::Ethernet,
    LinkType::LinuxSll,
    LinkType::LinuxSll2,
    LinkType::RawIp,
    LinkType::Null,
];

pub fn decode(data: &[u8]) {
    let Some((&pick, frame)) = data.split_first() else {
        return;
    };
    let link = LINKS[pick as usize % LINKS.len()];
    let decoded = decode_frame(link, frame);
    match &decoded {
        Ok(Decoded::Tcp(t)) => {
            // The payload is part of the frame, never bytes from elsewhere.
            let frame_range = frame.as_ptr_range();
            let payload_range = t.payload.as_ptr_range();
            assert!(frame_range.start <= payload_range.start);
            assert!(payload_range.end <= frame_range.end);
            // Bytes announced but not captured can only be what the frame lacks: an IP
            // datagram is at most 64 KiB (IPv4) or 64 KiB + 40 (IPv6 without jumbograms).
            assert!(t.missing_tail as usize + t.payload.len() <= 65_535 + 40);
        }
        Ok(_) => {}
        Err(e) => assert!(!e.to_string().is_empty()),
    }
    // The classifier counts exactly one outcome per frame.
    let ports: PortSet = "1-65535".parse().expect("a valid port range");
    let mut stats = CaptureStats::default();
    let segment = FrameClassifier::new(ports).classify(link, 7, frame, &mut stats);
    assert_eq!(stats.packets, 1);
    let outcomes = stats.tcp_segments + stats.not_tcp + stats.ip_fragments + stats.decode_errors;
    assert_eq!(outcomes, 1, "{stats:?}");
    if segment.is_some() {
        assert!(matches!(decoded, Ok(Decoded::Tcp(_))));
    }
}
