//! The same traffic with other bytes: a capture read back and written again with each TCP
//! connection's payloads replaced (FIX re-sent over TLS, #49's benchmark), every segment
//! at its own time and with its own flags, the sequence and acknowledgement numbers moved
//! by what the replacement added, and bytes of the rewriter's choosing (a handshake) put on
//! the wire before the connection's first payload.
//!
//! Made for generated captures (`gen_capture`, the tests' scenarios): each direction's
//! segments must come once and in order. A retransmission, a reordered or missing segment
//! or a payload the capture cut short is an error, not a guess.
//!
//! The segments come from whoever reads the capture (`pcap::read_capture_until`, which
//! this writer's module does not use: the reader's tests use the writer);
//! `crates/fixscope-core/tests/capture_rewrite.rs` reads and rewrites files.

use std::io::{self, Write};

use hashbrown::HashMap;

use super::file::CaptureWriter;
use super::packet::TcpPacketSpec;
use fixscope_model::segment::{ConnectionKey, Direction, FlowKey, Segment, TcpFlags};

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

/// Writes segments again with each connection's payloads replaced: feed it every segment of
/// a capture, in file order.
pub struct CaptureRewriter<R> {
    conns: HashMap<ConnectionKey, Conn<R>>,
    summary: RewriteSummary,
}

impl<R> Default for CaptureRewriter<R> {
    fn default() -> Self {
        CaptureRewriter {
            conns: HashMap::new(),
            summary: RewriteSummary::default(),
        }
    }
}

impl<R: PayloadRewrite> CaptureRewriter<R> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Writes `seg` again to `out` at its own time (after the connection's opening, before
    /// its first payload); `connect` makes the connection's [`PayloadRewrite`] at its
    /// first segment.
    pub fn segment<W: Write>(
        &mut self,
        seg: &Segment<'_>,
        out: &mut CaptureWriter<W>,
        connect: impl FnOnce(&ConnectionKey) -> R,
    ) -> io::Result<()> {
        let key = seg.connection();
        let summary = &mut self.summary;
        let conn = self.conns.entry(key).or_insert_with(|| {
            summary.connections += 1;
            Conn {
                rewrite: connect(&key),
                next: [None; 2],
                delta: [0; 2],
                opened: false,
            }
        });
        rewrite_segment(conn, seg, out, summary)
    }

    /// What was read and written so far.
    pub fn summary(&self) -> RewriteSummary {
        self.summary
    }
}
