//! The same traffic with other bytes: a capture read back and written again with each TCP
//! connection's payloads replaced (FIX re-sent over TLS, #49's benchmark), every segment
//! at its own time and with its own flags, the sequence and acknowledgement numbers moved
//! by what the replacement added, and bytes of the rewriter's choosing (a handshake) put on
//! the wire before the connection's first payload.
//!
//! Made for generated captures (`gen_capture`, the tests' scenarios): each direction's
//! segments must come once and in order. A retransmission, a reordered or missing segment
//! or a payload the capture cut short is an error, not a guess.

use std::io::{self, Write};
use std::path::Path;

use hashbrown::HashMap;

use super::file::CaptureWriter;
use super::packet::TcpPacketSpec;
use crate::capture_stats::CaptureStats;
use crate::pcap::read_capture_until;
use crate::ports::PortSet;
use crate::segment::{ConnectionKey, Direction, FlowKey, Segment, TcpFlags};
use crate::source::Flow;

/// What replaces one TCP connection's payloads.
pub trait PayloadRewrite {
    /// Bytes put on the wire before the connection's first payload, each one segment from
    /// its direction's end at that payload's time (a TLS handshake's flights).
    fn opening(&mut self) -> Vec<(Direction, Vec<u8>)>;
    /// What goes on the wire instead of `payload`, sent from `direction`'s end.
    fn payload(&mut self, direction: Direction, payload: &[u8]) -> Vec<u8>;
}

/// What a rewrite read and wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RewriteSummary {
    pub connections: u64,
    /// Segments read (in the port range) and written again.
    pub segments: u64,
    /// Segments added before a connection's first payload.
    pub opening_segments: u64,
    pub payload_bytes_in: u64,
    pub payload_bytes_out: u64,
}

/// One connection's sequence-number bookkeeping.
struct Conn<R> {
    rewrite: R,
    /// The original next sequence number of each direction (request, response), once seen.
    next: [Option<u32>; 2],
    /// How far each direction's sequence numbers moved (bytes added, modulo 2^32).
    delta: [u32; 2],
    opened: bool,
}

fn side(d: Direction) -> usize {
    match d {
        Direction::Request => 0,
        Direction::Response => 1,
    }
}

fn back(flow: FlowKey) -> FlowKey {
    FlowKey {
        src: flow.dst,
        dst: flow.src,
    }
}

/// Rewrites one segment of `conn` into `out`, each at `seg.ts_ns`.
fn rewrite_segment<R: PayloadRewrite, W: Write>(
    conn: &mut Conn<R>,
    seg: &Segment<'_>,
    out: &mut CaptureWriter<W>,
    summary: &mut RewriteSummary,
) -> io::Result<()> {
    let d = side(seg.direction);
    let fail = |what: String| {
        io::Error::other(format!("{} at {} ns: {what}", seg.connection(), seg.ts_ns))
    };
    if seg.missing_tail != 0 {
        return Err(fail("a payload cut short by the capture".into()));
    }
    if seg.flags.syn() {
        conn.next[d] = Some(seg.seq.wrapping_add(1));
    } else if !seg.payload.is_empty() || seg.flags.fin() {
        match conn.next[d] {
            Some(n) if n == seg.seq => {}
            Some(n) => {
                return Err(fail(format!(
                    "sequence number {} where {n} comes next (retransmitted, reordered or lost)",
                    seg.seq
                )))
            }
            None => return Err(fail("data before the handshake".into())),
        }
    }
    if !seg.payload.is_empty() && !conn.opened {
        conn.opened = true;
        for (direction, bytes) in conn.rewrite.opening() {
            let o = side(direction);
            let (Some(own), Some(peer)) = (conn.next[o], conn.next[1 - o]) else {
                return Err(fail("a payload before the three-way handshake".into()));
            };
            let flow = if o == d { seg.flow } else { back(seg.flow) };
            let spec = TcpPacketSpec {
                flow,
                seq: own.wrapping_add(conn.delta[o]),
                ack: peer.wrapping_add(conn.delta[1 - o]),
                flags: TcpFlags(TcpFlags::PSH | TcpFlags::ACK),
                payload: bytes,
            };
            out.write_tcp(seg.ts_ns, &spec)?;
            conn.delta[o] = conn.delta[o].wrapping_add(spec.payload.len() as u32);
            summary.opening_segments += 1;
            summary.payload_bytes_out += spec.payload.len() as u64;
        }
    }
    let payload = if seg.payload.is_empty() {
        Vec::new()
    } else {
        conn.rewrite.payload(seg.direction, seg.payload)
    };
    let spec = TcpPacketSpec {
        flow: seg.flow,
        seq: seg.seq.wrapping_add(conn.delta[d]),
        // An acknowledgement covers what the peer sent so far: its bytes moved as far.
        ack: if seg.flags.ack() {
            seg.ack.wrapping_add(conn.delta[1 - d])
        } else {
            seg.ack
        },
        flags: seg.flags,
        payload,
    };
    out.write_tcp(seg.ts_ns, &spec)?;
    if !seg.flags.syn() {
        let consumed = seg.payload.len() as u32 + u32::from(seg.flags.fin());
        conn.next[d] = Some(seg.seq.wrapping_add(consumed));
    }
    let added = (spec.payload.len() as u32).wrapping_sub(seg.payload.len() as u32);
    conn.delta[d] = conn.delta[d].wrapping_add(added);
    summary.segments += 1;
    summary.payload_bytes_in += seg.payload.len() as u64;
    summary.payload_bytes_out += spec.payload.len() as u64;
    Ok(())
}

/// Reads the capture at `input` (TCP segments of `ports`; everything else is left out) and
/// writes each segment again to `out` at its own time, each connection's payloads replaced
/// by the [`PayloadRewrite`] `connect` makes for it when its first segment comes.
pub fn rewrite_capture<R: PayloadRewrite, W: Write>(
    input: &Path,
    ports: &PortSet,
    out: &mut CaptureWriter<W>,
    mut connect: impl FnMut(&ConnectionKey) -> R,
) -> io::Result<RewriteSummary> {
    let mut conns: HashMap<ConnectionKey, Conn<R>> = HashMap::new();
    let mut summary = RewriteSummary::default();
    let mut failed: Option<io::Error> = None;
    let mut stats = CaptureStats::default();
    read_capture_until(input, ports, &mut stats, |seg| {
        let key = seg.connection();
        let conn = conns.entry(key).or_insert_with(|| {
            summary.connections += 1;
            Conn {
                rewrite: connect(&key),
                next: [None; 2],
                delta: [0; 2],
                opened: false,
            }
        });
        match rewrite_segment(conn, seg, out, &mut summary) {
            Ok(()) => Flow::Continue,
            Err(e) => {
                failed = Some(e);
                Flow::Stop
            }
        }
    })
    .map_err(io::Error::other)?;
    match failed {
        Some(e) => Err(e),
        None => Ok(summary),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::LinkType;
    use crate::pcap::read_capture;
    use crate::pcap_writer::test_support::conn;
    use crate::pcap_writer::CaptureFormat;

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
        let f = std::fs::File::create(&rewritten).unwrap();
        let mut w = CaptureWriter::new(f, CaptureFormat::pcap_nanos(), LinkType::Ethernet).unwrap();
        let summary = rewrite_capture(&plain, &PortSet::single(9878), &mut w, |_| Doubled).unwrap();
        w.finish().unwrap();
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
        let f = std::fs::File::create(&rewritten).unwrap();
        let mut w = CaptureWriter::new(f, CaptureFormat::pcap_nanos(), LinkType::Ethernet).unwrap();
        let err = rewrite_capture(&plain, &PortSet::single(9878), &mut w, |_| Doubled)
            .expect_err("a segment out of order");
        assert!(err.to_string().contains("reordered"), "{err}");
    }
}
