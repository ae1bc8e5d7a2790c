//! Which end of a connection is the acceptor when both of its ports are watched (issue #36).
//!
//! The watched ports say which way a segment goes: towards a watched port is a request,
//! away from one a response. With both ports watched (`-p 1-65535`, or two FIX ports
//! talking to each other) the ports cannot tell, and every connection used to be split
//! into two reversed halves — 600 requests, 0 matched. Here the connection tells:
//!
//! 1. **the handshake**: the end that sent the SYN is the initiator, the end that answered
//!    it (SYN+ACK) the acceptor — decided at once;
//! 2. else **FIX itself**: the end that sends a NewOrderSingle, OrderCancelRequest or
//!    OrderCancelReplaceRequest (`35=D`, `F`, `G`) is the initiator, the end that sends an
//!    ExecutionReport or OrderCancelReject (`35=8`, `9`) the acceptor (a message's
//!    standard header only: `8=FIX…␁9=…␁35=…␁`);
//! 3. else — nothing decided after [`HOLD_NS`] of capture time, more than [`MAX_HELD`]
//!    bytes held, or the end of the capture — the end with the lower port (the lower
//!    address if equal) is taken for the acceptor, as the well-known end of a connection
//!    usually is. A connection that carried FIX is then counted in
//!    [`CaptureStats::guessed_acceptors`] (the binary warns).
//!
//! While a connection that carries FIX (`8=FIX` in a segment) waits for its decision, its
//! segments — and every segment captured after the first of them, of any connection — are
//! held (copied) and handed on in capture order once the connections they belong to are
//! decided: the pipeline sees exactly the order of the capture, with the right directions,
//! as if only the acceptors' ports had been watched. Segments without FIX of a connection
//! not decided (a pure ACK, another protocol) are not held: they go the way the ports
//! would guess (a pure ACK of no known connection opens nothing either way), and decide
//! nothing.
//!
//! A decision holds for the connection until its end (RST, or FIN from both ends) or a new
//! SYN on the same ports. Connections with one watched port never come here.

use std::collections::{HashMap, HashSet, VecDeque};

use crate::capture_stats::CaptureStats;
use crate::decode::TcpPacket;
use fixscope_model::segment::{Direction, Endpoint, FlowKey, Segment, TcpFlags};

/// Capture time a connection's segments are held at most, waiting for a request or a
/// response to tell its acceptor.
pub const HOLD_NS: u64 = 1_000_000_000;
/// Payload bytes held at most: beyond, the connection held longest is decided by its
/// ports.
pub const MAX_HELD: usize = 16 << 20;
/// Decisions kept at most (a safety net: ended connections are forgotten as they end).
const MAX_DECIDED: usize = 1 << 18;

/// A connection's two ends, the lower first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Ends(Endpoint, Endpoint);

impl Ends {
    fn of(flow: &FlowKey) -> Ends {
        if flow.src <= flow.dst {
            Ends(flow.src, flow.dst)
        } else {
            Ends(flow.dst, flow.src)
        }
    }

    /// The end with the lower port (then address): the acceptor when nothing else tells.
    fn by_ports(self) -> Endpoint {
        if (self.0.port, self.0.addr) <= (self.1.port, self.1.addr) {
            self.0
        } else {
            self.1
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Decided {
    acceptor: Endpoint,
    /// FIN seen from the acceptor (bit 0) and from the initiator (bit 1).
    fins: u8,
}

/// A segment held until the connections before it are decided.
#[derive(Clone, Debug)]
struct Held {
    ts_ns: u64,
    flow: FlowKey,
    seq: u32,
    ack: u32,
    flags: TcpFlags,
    payload: Vec<u8>,
    missing_tail: u32,
    /// Known, or waiting for the decision of the connection between these ends.
    direction: Result<Direction, Ends>,
}

/// The acceptors of connections between two watched ports (see the module).
#[derive(Clone, Debug, Default)]
pub struct Acceptors {
    decided: HashMap<Ends, Decided>,
    /// Connections waiting for a decision (with segments held).
    waiting: HashSet<Ends>,
    /// Every segment since the first held one, in capture order.
    held: VecDeque<Held>,
    held_bytes: usize,
}

impl Acceptors {
    /// Nothing is held: a segment of a connection with one watched port goes on at once.
    #[inline]
    pub fn idle(&self) -> bool {
        self.held.is_empty()
    }

    /// Held segments are ready to go on ([`Acceptors::take_released`]).
    #[inline]
    pub fn has_released(&self) -> bool {
        self.held.front().is_some_and(|h| h.direction.is_ok())
    }

    /// A segment of the watched ports while segments are held, or one between two watched
    /// ports (`direction` None): its direction when it may go on now, or `None` when it is
    /// held (it comes out of [`Acceptors::take_released`], in capture order).
    pub fn segment(
        &mut self,
        ts_ns: u64,
        t: &TcpPacket<'_>,
        direction: Option<Direction>,
        stats: &mut CaptureStats,
    ) -> Option<Direction> {
        self.expire(ts_ns, stats);
        let direction = match direction {
            Some(d) => Ok(d),
            None => match self.direction_of(t) {
                Ok(d) | Err(Undecided::Guess(d)) => Ok(d),
                Err(Undecided::Wait(ends)) => Err(ends),
            },
        };
        match direction {
            Ok(d) if self.held.is_empty() => return Some(d),
            Ok(_) => {}
            Err(ends) => {
                self.waiting.insert(ends);
            }
        }
        self.held_bytes += t.payload.len();
        self.held.push_back(Held {
            ts_ns,
            flow: t.flow,
            seq: t.seq,
            ack: t.ack,
            flags: t.flags,
            payload: t.payload.to_vec(),
            missing_tail: t.missing_tail,
            direction,
        });
        while self.held_bytes > MAX_HELD {
            match self.held.front().map(|h| h.direction) {
                Some(Err(ends)) => self.guess(ends, stats),
                _ => break,
            }
        }
        None
    }

    /// Decides every connection still waiting by its ports (the end of a capture): all
    /// that is held is then released.
    pub fn flush(&mut self, stats: &mut CaptureStats) {
        let waiting: Vec<Ends> = self.waiting.iter().copied().collect();
        for ends in waiting {
            self.guess(ends, stats);
        }
    }

    /// Hands the released segments on, in order (counted as handed on in `stats`); stops
    /// when `on_segment` returns false.
    pub fn take_released(
        &mut self,
        stats: &mut CaptureStats,
        on_segment: &mut dyn FnMut(&Segment<'_>, &mut CaptureStats) -> bool,
    ) {
        while let Some(Held {
            direction: Ok(direction),
            ..
        }) = self.held.front()
        {
            let direction = *direction;
            let Some(h) = self.held.pop_front() else {
                break;
            };
            self.held_bytes -= h.payload.len();
            stats.segments_in_port_range += 1;
            if h.missing_tail > 0 {
                stats.truncated_segments += 1;
            }
            let segment = Segment {
                ts_ns: h.ts_ns,
                flow: h.flow,
                direction,
                seq: h.seq,
                ack: h.ack,
                flags: h.flags,
                payload: &h.payload,
                missing_tail: h.missing_tail,
            };
            if !on_segment(&segment, stats) {
                break;
            }
        }
    }

    /// The direction of a segment between two watched ports, deciding its connection when
    /// it tells (see the module).
    fn direction_of(&mut self, t: &TcpPacket<'_>) -> Result<Direction, Undecided> {
        let ends = Ends::of(&t.flow);
        let told = match (t.flags.syn(), t.flags.ack()) {
            (true, false) => Some(t.flow.dst),
            (true, true) => Some(t.flow.src),
            _ if self.decided.contains_key(&ends) => None,
            _ => fix_acceptor(t),
        };
        if let Some(acceptor) = told {
            self.decide(ends, acceptor);
        }
        let Some(d) = self.decided.get_mut(&ends) else {
            // Not decided: worth waiting for when it is FIX (or its connection waits).
            let fix = !t.payload.is_empty() && memchr::memmem::find(t.payload, b"8=FIX").is_some();
            return Err(if fix || self.waiting.contains(&ends) {
                Undecided::Wait(ends)
            } else {
                Undecided::Guess(direction_to(&t.flow, ends.by_ports()))
            });
        };
        let direction = direction_to(&t.flow, d.acceptor);
        if t.flags.fin() {
            d.fins |= match direction {
                Direction::Response => 1,
                Direction::Request => 2,
            };
        }
        if t.flags.rst() || d.fins == 3 {
            self.decided.remove(&ends);
        }
        Ok(direction)
    }

    fn decide(&mut self, ends: Ends, acceptor: Endpoint) {
        if self.decided.len() >= MAX_DECIDED {
            self.decided.clear();
        }
        self.decided.insert(ends, Decided { acceptor, fins: 0 });
        if self.waiting.remove(&ends) {
            for h in &mut self.held {
                if h.direction == Err(ends) {
                    h.direction = Ok(direction_to(&h.flow, acceptor));
                }
            }
        }
    }

    /// Decides a waiting connection by its ports.
    fn guess(&mut self, ends: Ends, stats: &mut CaptureStats) {
        stats.guessed_acceptors += 1;
        self.decide(ends, ends.by_ports());
    }

    /// Decides the connection whose segment waits at the front by its ports once it has
    /// waited [`HOLD_NS`].
    fn expire(&mut self, ts_ns: u64, stats: &mut CaptureStats) {
        while let Some(Held {
            ts_ns: first,
            direction: Err(ends),
            ..
        }) = self.held.front()
        {
            if first.saturating_add(HOLD_NS) > ts_ns {
                break;
            }
            let ends = *ends;
            self.guess(ends, stats);
        }
    }
}

/// Why a segment between two watched ports has no direction yet.
enum Undecided {
    /// Its connection carries FIX: wait for the decision.
    Wait(Ends),
    /// Not FIX: the ports' guess, deciding nothing.
    Guess(Direction),
}

/// Towards the acceptor is a request.
fn direction_to(flow: &FlowKey, acceptor: Endpoint) -> Direction {
    if flow.dst == acceptor {
        Direction::Request
    } else {
        Direction::Response
    }
}

/// The acceptor by what the segment carries: the receiver of a request (`35=D`, `F`, `G`,
/// `E`, `s`; a multileg `AB` is no one-character type),
/// the sender of a response (`35=8`, `9`); `None` if it carries neither. Only a message's
/// standard header counts — `8=FIX…` at the start of the payload or after a SOH, then
/// `9=` and `35=` — so a lookalike protocol (nDPI's "8=O" captures) tells nothing.
fn fix_acceptor(t: &TcpPacket<'_>) -> Option<Endpoint> {
    let p = t.payload;
    for at in memchr::memmem::find_iter(p, b"8=FIX") {
        if at > 0 && p[at - 1] != 0x01 {
            continue;
        }
        match msg_type(&p[at..]) {
            Some(b'D' | b'F' | b'G' | b'E' | b's') => return Some(t.flow.dst),
            Some(b'8' | b'9') => return Some(t.flow.src),
            _ => {}
        }
    }
    None
}

/// The one-character MsgType of a message starting at `m[0]` (`8=FIX…␁9=N␁35=X␁`).
fn msg_type(m: &[u8]) -> Option<u8> {
    let begin_end = memchr::memchr(0x01, m)?;
    let len = m.get(begin_end + 1..)?.strip_prefix(b"9=")?;
    let digits = len.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    match len.get(digits..)? {
        [0x01, b'3', b'5', b'=', x, 0x01, ..] => Some(*x),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::FrameClassifier;
    use crate::decode::LinkType;
    use crate::pcap_writer::{FrameOptions, SyntheticConnection, TcpPacketSpec};

    fn ep(host: u8, port: u16) -> Endpoint {
        Endpoint {
            addr: format!("10.0.0.{host}").parse().unwrap(),
            port,
        }
    }

    fn fix(msg_type: &str) -> Vec<u8> {
        message(msg_type)
    }

    /// A FIX message with a correct header (BodyLength, CheckSum need not be right here).
    fn message(msg_type: &str) -> Vec<u8> {
        let body = format!("35={msg_type}\x0149=A\x0156=B\x01");
        format!("8=FIX.4.4\x019={}\x01{body}10=000\x01", body.len()).into_bytes()
    }

    /// What the classifier hands on, released segments first, as (ts, from port, direction).
    #[derive(Default)]
    struct Out {
        handed: Vec<(u64, u16, Direction)>,
        stats: CaptureStats,
    }

    impl Out {
        fn feed(&mut self, c: &mut FrameClassifier, ts: u64, spec: &TcpPacketSpec) -> bool {
            let frame = spec.frame(LinkType::Ethernet, &FrameOptions::default());
            let seg = c.classify(LinkType::Ethernet, ts, &frame, &mut self.stats);
            self.release(c);
            match seg {
                Some(s) => {
                    self.handed.push((s.ts_ns, s.flow.src.port, s.direction));
                    true
                }
                None => false,
            }
        }

        fn release(&mut self, c: &mut FrameClassifier) {
            let handed = &mut self.handed;
            if c.has_released() {
                c.take_released(&mut self.stats, &mut |s, _| {
                    handed.push((s.ts_ns, s.flow.src.port, s.direction));
                    true
                });
            }
        }

        fn finish(&mut self, c: &mut FrameClassifier) {
            c.finish(&mut self.stats);
            self.release(c);
        }
    }

    use Direction::{Request, Response};

    #[test]
    fn the_handshake_tells_whatever_the_ports() {
        // The initiator on the lower port: the ports would guess wrong.
        let mut c = FrameClassifier::new("1-65535".parse().unwrap());
        let mut conn = SyntheticConnection::new(ep(2, 1000), ep(1, 9000));
        let mut out = Out::default();
        let hs = conn.handshake();
        for (i, p) in hs.iter().enumerate() {
            assert!(out.feed(&mut c, i as u64, p), "never held");
        }
        assert!(out.feed(&mut c, 10, &conn.server_sends(&fix("0"))));
        assert!(out.feed(&mut c, 11, &conn.client_sends(&fix("0"))));
        assert_eq!(
            out.handed,
            vec![
                (0, 1000, Request),
                (1, 9000, Response),
                (2, 1000, Request),
                (10, 9000, Response),
                (11, 1000, Request),
            ]
        );
        assert_eq!(out.stats.guessed_acceptors, 0);
    }

    #[test]
    fn an_order_tells_and_everything_held_goes_on_in_capture_order() {
        // 4000 <-> 9878 both watched (initiator on 4000); 40000 -> 9878 watched one way.
        let mut c = FrameClassifier::new("4000,9878".parse().unwrap());
        let mut a = SyntheticConnection::new(ep(2, 4000), ep(1, 9878));
        let mut b = SyntheticConnection::new(ep(3, 40000), ep(1, 9878));
        let mut out = Out::default();
        assert!(
            out.feed(&mut c, 1, &b.client_sends(&fix("0"))),
            "nothing held yet"
        );
        assert!(
            !out.feed(&mut c, 2, &a.server_sends(&fix("0"))),
            "FIX, undecided: held"
        );
        assert!(
            !out.feed(&mut c, 3, &b.client_sends(&fix("D"))),
            "behind a held one"
        );
        // A lookalike of FIX's header tells nothing.
        assert!(!out.feed(&mut c, 4, &a.server_sends(b"8=O\x019=5\x0135=G\x01xx")));
        assert!(!out.feed(&mut c, 5, &a.client_sends(&fix("A"))));
        assert_eq!(out.handed.len(), 1);
        // The order: its sender is the initiator. All of it goes on, in order.
        assert!(!out.feed(&mut c, 6, &a.client_sends(&fix("D"))));
        assert_eq!(
            out.handed,
            vec![
                (1, 40000, Request),
                (2, 9878, Response),
                (3, 40000, Request),
                (4, 9878, Response),
                (5, 4000, Request),
                (6, 4000, Request),
            ]
        );
        // Decided: no more holding.
        assert!(out.feed(&mut c, 7, &a.server_sends(&fix("8"))));
        assert_eq!(out.handed[6], (7, 9878, Response));
        assert_eq!(out.stats.segments_in_port_range, 7);
        assert_eq!(out.stats.guessed_acceptors, 0);
        // An execution report tells too: its sender is the acceptor.
        let mut c = FrameClassifier::new("4000,9878".parse().unwrap());
        let mut a = SyntheticConnection::new(ep(2, 4000), ep(1, 9878));
        let mut out = Out::default();
        assert!(!out.feed(&mut c, 1, &a.client_sends(&fix("0"))));
        assert!(!out.feed(&mut c, 2, &a.server_sends(&fix("9"))));
        assert_eq!(out.handed, vec![(1, 4000, Request), (2, 9878, Response)]);
    }

    #[test]
    fn what_nothing_tells_goes_by_the_lower_port_after_a_while_or_at_the_end() {
        let mut c = FrameClassifier::new("1-65535".parse().unwrap());
        let mut a = SyntheticConnection::new(ep(2, 4000), ep(1, 9878));
        let mut b = SyntheticConnection::new(ep(3, 40000), ep(1, 9878));
        let mut out = Out::default();
        assert!(!out.feed(&mut c, 100, &a.server_sends(&fix("0"))));
        assert!(!out.feed(&mut c, 200, &b.client_sends(&fix("0"))));
        // Another protocol between watched ports goes on with the ports' guess (when
        // nothing is held), and is no FIX connection guessed.
        let mut web = SyntheticConnection::new(ep(4, 50000), ep(5, 80));
        // A segment at 100 + HOLD_NS: the first held connection waited long enough.
        assert!(!out.feed(
            &mut c,
            100 + HOLD_NS,
            &web.client_sends(b"GET / HTTP/1.1\r\n")
        ));
        assert_eq!(
            out.handed,
            vec![(100, 9878, Request)],
            "4000 < 9878: taken for the acceptor"
        );
        assert_eq!(out.stats.guessed_acceptors, 1);
        // The end of the capture decides the rest (by its lower port, 9878).
        out.finish(&mut c);
        assert_eq!(
            out.handed[1..],
            [(200, 40000, Request), (100 + HOLD_NS, 50000, Request)]
        );
        assert_eq!(out.stats.guessed_acceptors, 2);
        // Nothing held: a non-FIX segment goes on at once.
        assert!(out.feed(
            &mut c,
            HOLD_NS * 3,
            &web.server_sends(b"HTTP/1.1 200 OK\r\n")
        ));
    }
}
