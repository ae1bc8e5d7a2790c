//! `pcap_writer::CaptureRewriter` on files: a capture written, read back, written again with
//! other payloads (a scripted connection, a hello each way first, every payload doubled),
//! and read back again: every segment at its own time, with its flags, and the sequence
//! and acknowledgement numbers a TCP stack sending the new bytes would have used.

use std::io;
use std::path::Path;

use fixscope_core::decode::LinkType;
use fixscope_core::pcap::{read_capture, read_capture_until, CaptureStats, Flow};
use fixscope_core::pcap_writer::{
    CaptureFormat, CaptureRewriter, CaptureWriter, PayloadRewrite, RewriteSummary,
    SyntheticConnection, TcpPacketSpec,
};
use fixscope_core::{Direction, Endpoint, PortSet, TcpFlags};

fn conn() -> SyntheticConnection {
    let ep = |addr: &str, port| Endpoint {
        addr: addr.parse().unwrap(),
        port,
    };
    SyntheticConnection::new(ep("10.1.1.1", 40001), ep("10.1.1.2", 9878))
}

/// `plain` written again to `out` with `Doubled`.
fn rewrite(plain: &Path, out: &Path) -> io::Result<RewriteSummary> {
    let f = std::fs::File::create(out).unwrap();
    let mut w = CaptureWriter::new(f, CaptureFormat::pcap_nanos(), LinkType::Ethernet).unwrap();
    let mut rewriter = CaptureRewriter::new();
    let mut failed = None;
    let mut stats = CaptureStats::default();
    read_capture_until(
        plain,
        &PortSet::single(9878),
        &mut stats,
        |seg| match rewriter.segment(seg, &mut w, |_| Doubled) {
            Ok(()) => Flow::Continue,
            Err(e) => {
                failed = Some(e);
                Flow::Stop
            }
        },
    )
    .unwrap();
    w.finish().unwrap();
    match failed {
        Some(e) => Err(e),
        None => Ok(rewriter.summary()),
    }
}

/// Each payload doubled, and a 3-byte hello each way first.
struct Doubled;
impl PayloadRewrite for Doubled {
    fn opening(&mut self) -> Vec<(Direction, Vec<u8>)> {
        vec![
            (Direction::Request, b"hi!".to_vec()),
            (Direction::Response, b"yo!".to_vec()),
        ]
    }
    fn payload(&mut self, _: Direction, payload: &[u8]) -> Vec<u8> {
        [payload, payload].concat()
    }
}

fn write(path: &Path, packets: &[(u64, TcpPacketSpec)]) {
    let f = std::fs::File::create(path).unwrap();
    let mut w = CaptureWriter::new(f, CaptureFormat::pcap_nanos(), LinkType::Ethernet).unwrap();
    for (ts, p) in packets {
        w.write_tcp(*ts, p).unwrap();
    }
    w.finish().unwrap();
}

/// (ts, direction, seq, ack, flags, payload) of every segment of a capture.
type Row = (u64, Direction, u32, u32, u8, Vec<u8>);
fn read(path: &Path) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut stats = CaptureStats::default();
    read_capture(path, &PortSet::single(9878), &mut stats, |s| {
        rows.push((
            s.ts_ns,
            s.direction,
            s.seq,
            s.ack,
            s.flags.0,
            s.payload.to_vec(),
        ))
    })
    .unwrap();
    rows
}

/// The written capture is what a TCP stack sending the new bytes would have put on the
/// wire: each direction's sequence numbers follow on from its new payloads (across the
/// 2^32 wrap the writer's ISNs sit below), acknowledgements follow the peer's.
#[test]
fn sequence_numbers_follow_the_new_payloads() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, rewritten) = (dir.path().join("a.pcap"), dir.path().join("b.pcap"));
    let mut c = conn();
    let mut packets: Vec<(u64, TcpPacketSpec)> =
        c.handshake().into_iter().map(|p| (10, p)).collect();
    packets.push((20, c.client_sends(b"order-1")));
    packets.push((30, c.server_sends(b"ack-1")));
    packets.push((35, c.client_sends(b"")));
    packets.push((40, c.client_sends(b"order-2")));
    packets.push((50, c.server_sends(b"fill-2")));
    packets.push((60, c.client_fin()));
    packets.push((61, c.server_fin()));
    write(&plain, &packets);
    let summary = rewrite(&plain, &rewritten).unwrap();
    assert_eq!(summary.connections, 1);
    assert_eq!(summary.segments, 10);
    assert_eq!(summary.opening_segments, 2);

    let got = read(&rewritten);
    let (req, resp) = (Direction::Request, Direction::Response);
    let (c0, s0) = (u32::MAX - 99, u32::MAX - 299);
    let (c1, s1) = (c0.wrapping_add(1), s0.wrapping_add(1));
    let fl = |f: u8| f;
    let pa = TcpFlags::PSH | TcpFlags::ACK;
    let fa = TcpFlags::FIN | TcpFlags::ACK;
    let expected: Vec<Row> = vec![
        (10, req, c0, 0, fl(TcpFlags::SYN), vec![]),
        (10, resp, s0, c1, TcpFlags::SYN | TcpFlags::ACK, vec![]),
        (10, req, c1, s1, fl(TcpFlags::ACK), vec![]),
        (20, req, c1, s1, pa, b"hi!".to_vec()),
        (20, resp, s1, c1.wrapping_add(3), pa, b"yo!".to_vec()),
        (
            20,
            req,
            c1.wrapping_add(3),
            s1.wrapping_add(3),
            pa,
            b"order-1order-1".to_vec(),
        ),
        (
            30,
            resp,
            s1.wrapping_add(3),
            c1.wrapping_add(17),
            pa,
            b"ack-1ack-1".to_vec(),
        ),
        (
            35,
            req,
            c1.wrapping_add(17),
            s1.wrapping_add(13),
            pa,
            vec![],
        ),
        (
            40,
            req,
            c1.wrapping_add(17),
            s1.wrapping_add(13),
            pa,
            b"order-2order-2".to_vec(),
        ),
        (
            50,
            resp,
            s1.wrapping_add(13),
            c1.wrapping_add(31),
            pa,
            b"fill-2fill-2".to_vec(),
        ),
        (
            60,
            req,
            c1.wrapping_add(31),
            s1.wrapping_add(25),
            fa,
            vec![],
        ),
        (
            61,
            resp,
            s1.wrapping_add(25),
            c1.wrapping_add(32),
            fa,
            vec![],
        ),
    ];
    assert_eq!(got, expected);
}

/// A segment out of order (or sent twice, or lost) is said, not rewritten into a wrong
/// stream. (An identical copy of a frame is left out by the reader as a mirror's
/// duplicate before it gets here.)
#[test]
fn a_segment_out_of_order_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, rewritten) = (dir.path().join("a.pcap"), dir.path().join("b.pcap"));
    let mut c = conn();
    let mut packets: Vec<(u64, TcpPacketSpec)> =
        c.handshake().into_iter().map(|p| (10, p)).collect();
    let first = c.client_sends(b"order-1");
    packets.push((20, c.client_sends(b"order-2")));
    packets.push((25, first));
    write(&plain, &packets);
    let err = rewrite(&plain, &rewritten).expect_err("a segment out of order");
    assert!(err.to_string().contains("reordered"), "{err}");
}
