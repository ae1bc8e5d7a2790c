//! SoupBinTCP 3.00: the session layer OUCH rides on. A logical packet is a 2-byte
//! big-endian length (of the type byte and the payload), a 1-byte packet type, then the
//! payload; logical packets do not map to TCP segments (SoupBinTCP 3.00 §1.1).
//!
//! [`SoupBinFramer`] cuts one direction's stream into whole logical packets (length prefix
//! included) on the seam's [`Framer`] contract; [`decode`] reads a frame into a typed
//! [`SoupPacket`].
//!
//! **Resync.** SoupBinTCP has no start marker, so after a hole (or a header that cannot be
//! a packet) nothing in the bytes says where the next packet begins, and guessing a
//! boundary could misread an order token as a length. The framer then stops framing that
//! direction (the bytes are counted in `skipped_bytes`) until a delivery of in-order bytes
//! (one `push_at`, which is what one segment's readable bytes are) is *aligned*: it is a
//! chain of whole, plausible packet headers — a known type of the direction's side, a
//! length from 1 to [`MAX_PACKET_LEN`], the exact length for the fixed-size session
//! packets — starting at its first byte and ending exactly at its last. Senders write
//! packets whole, so such segments come soon (a server heartbeat is one, at least every
//! second on an idle session); a segment that starts or ends inside a packet is skipped
//! whole. A connection is assumed to start at a packet boundary (its first bytes are a
//! Login Request or its answer: [`crate::Ouch42`]'s recognition checks them).

use fixscope_protocol::{ByteTimes, FramedMessage, Framer, FramingCounters};

/// Largest value of the length field accepted (type byte + payload). SoupBinTCP allows
/// 65,535; OUCH messages are under 200 bytes and a debug text a line, so a larger one means
/// the framer is not at a packet boundary. Above it the header is counted
/// (`bad_body_length`) and the direction resyncs.
pub const MAX_PACKET_LEN: usize = 2048;

/// Which end sends a packet type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Client,
    Host,
}

/// SoupBinTCP packet types (W `pkt_type_val`; SoupBinTCP 3.00 §2, §3).
pub mod packet_type {
    pub const DEBUG: u8 = b'+';
    pub const LOGIN_ACCEPTED: u8 = b'A';
    pub const LOGIN_REJECTED: u8 = b'J';
    pub const SERVER_HEARTBEAT: u8 = b'H';
    pub const SEQUENCED_DATA: u8 = b'S';
    pub const END_OF_SESSION: u8 = b'Z';
    pub const LOGIN_REQUEST: u8 = b'L';
    pub const UNSEQUENCED_DATA: u8 = b'U';
    pub const CLIENT_HEARTBEAT: u8 = b'R';
    pub const LOGOUT_REQUEST: u8 = b'O';
}

/// Length-field values of the fixed-size packets: Login Request is username 6, password
/// 10, requested session 10, requested sequence number 20 (0x2F with the type byte);
/// Login Accepted session 10, sequence number 20; Login Rejected a reason code.
pub const LOGIN_REQUEST_LEN: usize = 1 + 6 + 10 + 10 + 20;
pub const LOGIN_ACCEPTED_LEN: usize = 1 + 10 + 20;
pub const LOGIN_REJECTED_LEN: usize = 1 + 1;

/// The side that sends `packet_type` (`None`: debug, sent by both) and the exact value
/// of its length field (`None`: variable, at least 1); `Err` for a type SoupBinTCP lacks.
fn packet_shape(packet_type: u8) -> Result<(Option<Side>, Option<usize>), ()> {
    use packet_type::*;
    Ok(match packet_type {
        DEBUG => (None, None),
        LOGIN_ACCEPTED => (Some(Side::Host), Some(LOGIN_ACCEPTED_LEN)),
        LOGIN_REJECTED => (Some(Side::Host), Some(LOGIN_REJECTED_LEN)),
        SERVER_HEARTBEAT | END_OF_SESSION => (Some(Side::Host), Some(1)),
        SEQUENCED_DATA => (Some(Side::Host), None),
        LOGIN_REQUEST => (Some(Side::Client), Some(LOGIN_REQUEST_LEN)),
        UNSEQUENCED_DATA => (Some(Side::Client), None),
        CLIENT_HEARTBEAT | LOGOUT_REQUEST => (Some(Side::Client), Some(1)),
        _ => return Err(()),
    })
}

/// Whether a header (length field, type byte) can start a packet of a direction whose
/// side is `side` (if known yet); `Ok` with the side it shows.
fn check_header(len: usize, packet_type: u8, side: Option<Side>) -> Result<Option<Side>, ()> {
    if len == 0 || len > MAX_PACKET_LEN {
        return Err(());
    }
    let (of, exact) = packet_shape(packet_type)?;
    if exact.is_some_and(|e| e != len) {
        return Err(());
    }
    match (side, of) {
        (Some(s), Some(o)) if s != o => Err(()),
        (Some(s), _) => Ok(Some(s)),
        (None, o) => Ok(o),
    }
}

/// The length field and type byte at the start of `b` (3 bytes or more).
fn header(b: &[u8]) -> Option<(usize, u8)> {
    match b {
        [hi, lo, t, ..] => Some((usize::from(u16::from_be_bytes([*hi, *lo])), *t)),
        _ => None,
    }
}

/// Whether `data` is a chain of whole plausible packets from its first byte to its last
/// (the resync rule in the module's doc).
fn aligned_chain(data: &[u8], mut side: Option<Side>) -> bool {
    let mut at = 0;
    while at < data.len() {
        let Some((len, t)) = header(&data[at..]) else {
            return false;
        };
        match check_header(len, t, side) {
            Ok(s) => side = s,
            Err(()) => return false,
        }
        at += 2 + len;
    }
    at == data.len() && !data.is_empty()
}

/// Frames one direction of a SoupBinTCP connection into logical packets (the module's
/// doc says how it resyncs after a hole).
#[derive(Debug, Default)]
pub struct SoupBinFramer {
    /// The start of a packet that began in an earlier delivery.
    held: Vec<u8>,
    /// Capture time and sequence number of the held packet's first byte.
    held_first_ts_ns: u64,
    held_first_seq: u32,
    /// The side this direction's packets showed (client or host), once one did.
    side: Option<Side>,
    /// Not at a packet boundary (after a hole or a bad header): deliveries are skipped
    /// until an aligned one.
    lost: bool,
}

impl SoupBinFramer {
    pub fn new() -> Self {
        Self::default()
    }

    /// The side this direction's packets showed, once one did.
    pub fn side(&self) -> Option<Side> {
        self.side
    }

    /// Whether the framer waits for an aligned delivery to resync.
    pub fn is_resyncing(&self) -> bool {
        self.lost
    }

    /// A header that cannot be a packet: counted, its bytes and the rest of the delivery
    /// skipped, framing stopped until an aligned delivery.
    fn lose(&mut self, skipped: usize, counters: &mut FramingCounters) {
        counters.bad_body_length += 1;
        counters.skipped_bytes += skipped as u64;
        self.held.clear();
        self.lost = true;
    }

    /// Completes the held packet with the start of `data`; returns how many bytes of
    /// `data` it took (all of them when the packet is still not complete or was bad).
    fn complete_held<F>(
        &mut self,
        data: &[u8],
        times: ByteTimes,
        seq: u32,
        counters: &mut FramingCounters,
        on_message: &mut F,
    ) -> usize
    where
        F: FnMut(FramedMessage<'_>),
    {
        let mut at = 0;
        if self.held.len() < 3 {
            at = (3 - self.held.len()).min(data.len());
            self.held.extend_from_slice(&data[..at]);
        }
        let Some((len, t)) = header(&self.held) else {
            return at;
        };
        match check_header(len, t, self.side) {
            Ok(s) => self.side = s,
            Err(()) => {
                self.lose(self.held.len() + data.len() - at, counters);
                return data.len();
            }
        }
        let take = (2 + len - self.held.len()).min(data.len() - at);
        self.held.extend_from_slice(&data[at..at + take]);
        at += take;
        if self.held.len() == 2 + len {
            counters.messages += 1;
            on_message(FramedMessage {
                bytes: &self.held,
                first_byte_ts_ns: self.held_first_ts_ns,
                last_byte_ts_ns: times.readable_ns,
                first_byte_seq: self.held_first_seq,
                last_byte_seq: seq.wrapping_add(at as u32).wrapping_sub(1),
            });
            self.held.clear();
        }
        at
    }
}

impl Framer for SoupBinFramer {
    fn push_at<F>(
        &mut self,
        data: &[u8],
        times: ByteTimes,
        seq: u32,
        counters: &mut FramingCounters,
        mut on_message: F,
    ) where
        F: FnMut(FramedMessage<'_>),
    {
        if self.lost {
            if !aligned_chain(data, self.side) {
                counters.skipped_bytes += data.len() as u64;
                return;
            }
            self.lost = false;
        }
        let mut at = 0;
        if !self.held.is_empty() {
            at = self.complete_held(data, times, seq, counters, &mut on_message);
        }
        while at < data.len() && !self.lost {
            let rest = &data[at..];
            let rest_seq = seq.wrapping_add(at as u32);
            let Some((len, t)) = header(rest) else {
                self.hold(rest, times, rest_seq);
                return;
            };
            match check_header(len, t, self.side) {
                Ok(s) => self.side = s,
                Err(()) => {
                    self.lose(rest.len(), counters);
                    return;
                }
            }
            if rest.len() < 2 + len {
                self.hold(rest, times, rest_seq);
                return;
            }
            counters.messages += 1;
            on_message(FramedMessage {
                bytes: &rest[..2 + len],
                first_byte_ts_ns: times.captured_ns,
                last_byte_ts_ns: times.readable_ns,
                first_byte_seq: rest_seq,
                last_byte_seq: rest_seq.wrapping_add(len as u32 + 1),
            });
            at += 2 + len;
        }
    }

    fn gap(&mut self, counters: &mut FramingCounters) {
        if !self.held.is_empty() {
            counters.gap_cut_messages += 1;
        }
        self.held.clear();
        self.lost = true;
    }

    fn pending_bytes(&self) -> usize {
        self.held.len()
    }
}

impl SoupBinFramer {
    /// Keeps the start of a packet the delivery does not complete.
    fn hold(&mut self, rest: &[u8], times: ByteTimes, seq: u32) {
        self.held.clear();
        self.held.extend_from_slice(rest);
        self.held_first_ts_ns = times.captured_ns;
        self.held_first_seq = seq;
    }
}

/// One logical packet, read: the session layer's fields, the data packets' message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SoupPacket<'a> {
    /// `+`: free text, either way.
    Debug { text: &'a [u8] },
    /// `A`: the session the client is logged into and the number of the next sequenced
    /// message the host will send.
    LoginAccepted {
        session: &'a [u8],
        next_sequence: Option<u64>,
    },
    /// `J`: `A` not authorized, `S` session not available.
    LoginRejected { reason: u8 },
    /// `H`.
    ServerHeartbeat,
    /// `S`: a host → client message (OUCH's responses), numbered implicitly by counting
    /// from Login Accepted's sequence number.
    SequencedData { message: &'a [u8] },
    /// `Z`.
    EndOfSession,
    /// `L`: the password is read past and never kept. A blank session asks for the
    /// current one; the requested sequence number is the next one the client expects.
    LoginRequest {
        username: &'a [u8],
        requested_session: &'a [u8],
        requested_sequence: Option<u64>,
    },
    /// `U`: a client → host message (OUCH's requests), not sequenced.
    UnsequencedData { message: &'a [u8] },
    /// `R`.
    ClientHeartbeat,
    /// `O`: SoupBinTCP's logout, not OUCH's Enter Order (also `O`, inside a `U`).
    LogoutRequest,
}

impl SoupPacket<'_> {
    /// The packet's type byte.
    pub fn packet_type(&self) -> u8 {
        use packet_type::*;
        match self {
            SoupPacket::Debug { .. } => DEBUG,
            SoupPacket::LoginAccepted { .. } => LOGIN_ACCEPTED,
            SoupPacket::LoginRejected { .. } => LOGIN_REJECTED,
            SoupPacket::ServerHeartbeat => SERVER_HEARTBEAT,
            SoupPacket::SequencedData { .. } => SEQUENCED_DATA,
            SoupPacket::EndOfSession => END_OF_SESSION,
            SoupPacket::LoginRequest { .. } => LOGIN_REQUEST,
            SoupPacket::UnsequencedData { .. } => UNSEQUENCED_DATA,
            SoupPacket::ClientHeartbeat => CLIENT_HEARTBEAT,
            SoupPacket::LogoutRequest => LOGOUT_REQUEST,
        }
    }
}

/// Why a frame is not a SoupBinTCP packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SoupError {
    /// Fewer than the 3 header bytes.
    Truncated,
    /// The length field does not match the frame's bytes.
    LengthMismatch { declared: usize, actual: usize },
    /// A type SoupBinTCP does not have.
    UnknownType(u8),
    /// A fixed-size packet of another size.
    BadSize { packet_type: u8, len: usize },
}

/// An alpha field without its padding (SoupBinTCP pads alpha fields on the right and
/// numeric ones on the left, with spaces).
pub fn trim_spaces(b: &[u8]) -> &[u8] {
    let start = b.iter().position(|&c| c != b' ').unwrap_or(b.len());
    let end = b.iter().rposition(|&c| c != b' ').map_or(start, |e| e + 1);
    &b[start..end]
}

/// A numeric ASCII field (space padded); `None` if blank or not digits.
fn numeric(b: &[u8]) -> Option<u64> {
    let digits = trim_spaces(b);
    if digits.is_empty() || digits.len() > 20 {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &c| {
        c.is_ascii_digit()
            .then(|| n.checked_mul(10)?.checked_add(u64::from(c - b'0')))
            .flatten()
    })
}

/// Reads a framed logical packet (length prefix included).
pub fn decode(frame: &[u8]) -> Result<SoupPacket<'_>, SoupError> {
    use packet_type::*;
    let (len, t) = header(frame).ok_or(SoupError::Truncated)?;
    if frame.len() != 2 + len {
        return Err(SoupError::LengthMismatch {
            declared: len,
            actual: frame.len().saturating_sub(2),
        });
    }
    let (_, exact) = packet_shape(t).map_err(|()| SoupError::UnknownType(t))?;
    if exact.is_some_and(|e| e != len) {
        return Err(SoupError::BadSize {
            packet_type: t,
            len,
        });
    }
    let payload = &frame[3..];
    Ok(match t {
        DEBUG => SoupPacket::Debug { text: payload },
        LOGIN_ACCEPTED => SoupPacket::LoginAccepted {
            session: trim_spaces(&payload[..10]),
            next_sequence: numeric(&payload[10..]),
        },
        LOGIN_REJECTED => SoupPacket::LoginRejected { reason: payload[0] },
        SERVER_HEARTBEAT => SoupPacket::ServerHeartbeat,
        SEQUENCED_DATA => SoupPacket::SequencedData { message: payload },
        END_OF_SESSION => SoupPacket::EndOfSession,
        LOGIN_REQUEST => SoupPacket::LoginRequest {
            username: trim_spaces(&payload[..6]),
            requested_session: trim_spaces(&payload[16..26]),
            requested_sequence: numeric(&payload[26..]),
        },
        UNSEQUENCED_DATA => SoupPacket::UnsequencedData { message: payload },
        CLIENT_HEARTBEAT => SoupPacket::ClientHeartbeat,
        LOGOUT_REQUEST => SoupPacket::LogoutRequest,
        _ => return Err(SoupError::UnknownType(t)),
    })
}
