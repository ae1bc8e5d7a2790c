//! MoldUDP64 1.00: the framing Nasdaq sends ITCH in, one UDP datagram per packet.
//!
//! A **downstream packet** (server → listeners, multicast; or unicast, in answer to a
//! request) is a 20-byte header — Session (10 alphanumeric bytes), Sequence Number (u64
//! big-endian, of the packet's first message), Message Count (u16 big-endian) — then
//! `count` message blocks, each a u16 big-endian length and that many bytes. A count of 0
//! is a **heartbeat** (its sequence number is the next message's), 0xFFFF the **end of
//! session** (no blocks either). A **request packet** (listener → re-request server) is
//! the same 20-byte header alone, its count the number of messages asked for; the answer
//! is an ordinary downstream packet, byte-identical to the one first sent.
//!
//! [`decode`] tells the two apart as Wireshark's packet-moldudp64.c does: exactly 20 bytes
//! with a count that is neither 0 nor 0xFFFF can only be a request (a downstream packet
//! with that count would need blocks); everything else is read as downstream.
//!
//! **A packet with a bad block is rejected whole**, none of its messages yielded. The
//! block lengths are the only framing: once one runs past the datagram, or the blocks do
//! not add up to the count, the header that numbers them is as suspect as any block
//! boundary, and a good-looking prefix may be a misreading. Feed health must never count
//! a guessed message as received — that would hide exactly the loss it exists to report
//! — so the packet is counted undecodable and its sequence numbers show up as a gap
//! (which a retransmission or the other feed can still fill with a good copy).

use std::fmt;

/// Header bytes of every packet: session 10, sequence number 8, message count 2.
pub const HEADER_LEN: usize = 20;
/// The message count of a heartbeat.
pub const HEARTBEAT: u16 = 0;
/// The message count of an end-of-session packet.
pub const END_OF_SESSION: u16 = 0xFFFF;

/// A MoldUDP64 session: 10 alphanumeric bytes naming a day's numbering (a new value
/// restarts the sequence numbers).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Session(pub [u8; 10]);

impl Session {
    /// `name` space padded (cut) to 10 bytes.
    pub fn new(name: &[u8]) -> Self {
        let mut s = [b' '; 10];
        let n = name.len().min(10);
        s[..n].copy_from_slice(&name[..n]);
        Session(s)
    }

    pub fn as_bytes(&self) -> &[u8; 10] {
        &self.0
    }
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(&self.0))
    }
}

/// What a downstream packet is, by its count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// 1 to 65,534 messages.
    Messages,
    Heartbeat,
    EndOfSession,
}

/// The 20-byte header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Header {
    pub session: Session,
    /// The first message's sequence number (a heartbeat's or end of session's: the next
    /// message's).
    pub sequence: u64,
    pub count: u16,
}

impl Header {
    pub fn kind(&self) -> Kind {
        match self.count {
            HEARTBEAT => Kind::Heartbeat,
            END_OF_SESSION => Kind::EndOfSession,
            _ => Kind::Messages,
        }
    }

    /// Messages the packet carries (0 for a heartbeat or end of session).
    pub fn message_count(&self) -> u16 {
        match self.kind() {
            Kind::Messages => self.count,
            _ => 0,
        }
    }

    /// The sequence number after the packet's last message (checked by the decoders not
    /// to overflow).
    pub fn next_sequence(&self) -> u64 {
        self.sequence + u64::from(self.message_count())
    }
}

/// A downstream packet whose blocks were checked: [`Downstream::messages`] cannot fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Downstream<'a> {
    pub header: Header,
    /// The blocks, length prefixes included.
    blocks: &'a [u8],
}

impl<'a> Downstream<'a> {
    /// Each message with its sequence number (the header's plus its index).
    pub fn messages(&self) -> Messages<'a> {
        Messages {
            blocks: self.blocks,
            sequence: self.header.sequence,
        }
    }
}

/// The messages of a [`Downstream`] packet, in order: (sequence number, bytes).
#[derive(Clone, Debug)]
pub struct Messages<'a> {
    blocks: &'a [u8],
    sequence: u64,
}

impl<'a> Iterator for Messages<'a> {
    type Item = (u64, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let (message, rest) = split_block(self.blocks)?;
        self.blocks = rest;
        let seq = self.sequence;
        self.sequence = self.sequence.wrapping_add(1);
        Some((seq, message))
    }
}

/// A Request Packet: retransmit `count` messages from `sequence` of `session`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Request {
    pub session: Session,
    pub sequence: u64,
    pub count: u16,
}

/// A MoldUDP64 datagram, read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packet<'a> {
    Downstream(Downstream<'a>),
    Request(Request),
}

/// Why a datagram is not a MoldUDP64 packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Shorter than the 20-byte header.
    Truncated { len: usize },
    /// Block `index` (from 0) declares more bytes than the datagram has left.
    BlockOverrun {
        index: u16,
        declared: usize,
        available: usize,
    },
    /// The blocks are whole but not as many as the count says.
    CountMismatch { declared: u16, found: usize },
    /// Bytes after the last block that are not a whole block (fewer than a length
    /// prefix, or a block running past the end).
    TrailingBytes { count: u16, bytes: usize },
    /// An end-of-session packet with bytes after its header.
    EndOfSessionWithData { bytes: usize },
    /// The sequence numbers would run past 2^64.
    SequenceOverflow { sequence: u64, count: u16 },
    /// Read as a request: not exactly the 20-byte header.
    RequestLength { len: usize },
    /// Read as a request: a count of 0 or 0xFFFF (a heartbeat's, an end of session's).
    RequestCount { count: u16 },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DecodeError::Truncated { len } => write!(f, "{len} bytes: shorter than the header"),
            DecodeError::BlockOverrun {
                index,
                declared,
                available,
            } => write!(
                f,
                "message block {index} declares {declared} bytes, {available} left"
            ),
            DecodeError::CountMismatch { declared, found } => {
                write!(f, "message count {declared}, {found} blocks")
            }
            DecodeError::TrailingBytes { count, bytes } => {
                write!(f, "{bytes} bytes after the {count} blocks")
            }
            DecodeError::EndOfSessionWithData { bytes } => {
                write!(f, "end of session with {bytes} bytes after its header")
            }
            DecodeError::SequenceOverflow { sequence, count } => {
                write!(f, "sequence number {sequence} + {count} messages overflows")
            }
            DecodeError::RequestLength { len } => {
                write!(f, "a request is {HEADER_LEN} bytes, not {len}")
            }
            DecodeError::RequestCount { count } => write!(f, "a request for {count} messages"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// The first block of `b` and what follows it; `None` unless a whole block is there.
fn split_block(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let [hi, lo, rest @ ..] = b else {
        return None;
    };
    let len = usize::from(u16::from_be_bytes([*hi, *lo]));
    (rest.len() >= len).then(|| rest.split_at(len))
}

fn header(datagram: &[u8]) -> Result<Header, DecodeError> {
    let Some(h) = datagram.get(..HEADER_LEN) else {
        return Err(DecodeError::Truncated {
            len: datagram.len(),
        });
    };
    let mut session = [0u8; 10];
    session.copy_from_slice(&h[..10]);
    let mut seq = [0u8; 8];
    seq.copy_from_slice(&h[10..18]);
    Ok(Header {
        session: Session(session),
        sequence: u64::from_be_bytes(seq),
        count: u16::from_be_bytes([h[18], h[19]]),
    })
}

/// Reads a datagram as a request if it can only be one (module doc), else as downstream.
pub fn decode(datagram: &[u8]) -> Result<Packet<'_>, DecodeError> {
    let h = header(datagram)?;
    if datagram.len() == HEADER_LEN && h.kind() == Kind::Messages {
        return decode_request(datagram).map(Packet::Request);
    }
    decode_downstream(datagram).map(Packet::Downstream)
}

/// Reads a downstream packet, checking every block (the module doc says why a bad one
/// rejects the packet).
pub fn decode_downstream(datagram: &[u8]) -> Result<Downstream<'_>, DecodeError> {
    let header = header(datagram)?;
    let blocks = &datagram[HEADER_LEN..];
    if header.kind() == Kind::EndOfSession {
        if !blocks.is_empty() {
            return Err(DecodeError::EndOfSessionWithData {
                bytes: blocks.len(),
            });
        }
        return Ok(Downstream { header, blocks });
    }
    if header
        .sequence
        .checked_add(u64::from(header.count))
        .is_none()
    {
        return Err(DecodeError::SequenceOverflow {
            sequence: header.sequence,
            count: header.count,
        });
    }
    let mut rest = blocks;
    for index in 0..header.count {
        if rest.is_empty() {
            return Err(DecodeError::CountMismatch {
                declared: header.count,
                found: usize::from(index),
            });
        }
        match split_block(rest) {
            Some((_, after)) => rest = after,
            None => {
                return Err(DecodeError::BlockOverrun {
                    index,
                    declared: rest
                        .get(..2)
                        .map_or(0, |l| usize::from(u16::from_be_bytes([l[0], l[1]]))),
                    available: rest.len().saturating_sub(2),
                })
            }
        }
    }
    if !rest.is_empty() {
        // More whole blocks than the count says is a count error; anything else is
        // debris after the last block.
        let mut extra = 0usize;
        let mut tail = rest;
        while let Some((_, after)) = split_block(tail) {
            extra += 1;
            tail = after;
        }
        if tail.is_empty() {
            return Err(DecodeError::CountMismatch {
                declared: header.count,
                found: usize::from(header.count) + extra,
            });
        }
        return Err(DecodeError::TrailingBytes {
            count: header.count,
            bytes: rest.len(),
        });
    }
    Ok(Downstream {
        header,
        blocks: &blocks[..blocks.len() - rest.len()],
    })
}

/// Reads a Request Packet (listener → re-request server).
pub fn decode_request(datagram: &[u8]) -> Result<Request, DecodeError> {
    let h = header(datagram)?;
    if datagram.len() != HEADER_LEN {
        return Err(DecodeError::RequestLength {
            len: datagram.len(),
        });
    }
    if h.kind() != Kind::Messages {
        return Err(DecodeError::RequestCount { count: h.count });
    }
    Ok(Request {
        session: h.session,
        sequence: h.sequence,
        count: h.count,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode;

    const S: &[u8] = b"000123456A";

    #[test]
    fn messages_are_numbered_from_the_header_sequence() {
        let d = encode::downstream(S, 41, &[b"abc", b"", b"xyzw"]);
        let Packet::Downstream(p) = decode(&d).expect("decodes") else {
            panic!("downstream");
        };
        assert_eq!(p.header.session, Session::new(S));
        assert_eq!((p.header.sequence, p.header.count), (41, 3));
        assert_eq!(p.header.kind(), Kind::Messages);
        assert_eq!(p.header.next_sequence(), 44);
        let got: Vec<_> = p.messages().collect();
        assert_eq!(
            got,
            vec![(41, &b"abc"[..]), (42, &b""[..]), (43, &b"xyzw"[..])]
        );
    }

    #[test]
    fn heartbeat_end_of_session_and_request_are_told_apart() {
        let hb = encode::heartbeat(S, 7);
        let hb = decode_downstream(&hb).expect("heartbeat");
        assert_eq!(
            (hb.header.kind(), hb.header.next_sequence()),
            (Kind::Heartbeat, 7)
        );
        assert_eq!(hb.messages().count(), 0);
        let eos = encode::end_of_session(S, 9);
        let eos = decode_downstream(&eos).expect("eos");
        assert_eq!(eos.header.kind(), Kind::EndOfSession);
        assert_eq!(eos.header.message_count(), 0);
        let req = encode::request(S, 100, 25);
        assert_eq!(
            decode(&req),
            Ok(Packet::Request(Request {
                session: Session::new(S),
                sequence: 100,
                count: 25
            }))
        );
        assert_eq!(
            decode_downstream(&req),
            Err(DecodeError::CountMismatch {
                declared: 25,
                found: 0
            })
        );
        assert_eq!(
            decode_request(&encode::heartbeat(S, 1)),
            Err(DecodeError::RequestCount { count: 0 })
        );
        assert_eq!(
            decode_request(&encode::downstream(S, 1, &[b"a"])),
            Err(DecodeError::RequestLength { len: 23 })
        );
    }

    #[test]
    fn a_bad_block_count_or_tail_rejects_the_whole_packet() {
        let good = encode::downstream(S, 1, &[b"abc", b"de"]);
        // Cut inside the second block.
        assert_eq!(
            decode(&good[..good.len() - 1]),
            Err(DecodeError::BlockOverrun {
                index: 1,
                declared: 2,
                available: 1
            })
        );
        // Cut inside the second block's length prefix.
        assert!(matches!(
            decode(&good[..HEADER_LEN + 5 + 1]),
            Err(DecodeError::BlockOverrun { index: 1, .. })
        ));
        // One byte too many.
        let mut tail = good.clone();
        tail.push(0);
        assert_eq!(
            decode(&tail),
            Err(DecodeError::TrailingBytes { count: 2, bytes: 1 })
        );
        // A whole third block the count does not include.
        let mut extra = good.clone();
        extra.extend_from_slice(&[0, 1, b'z']);
        assert_eq!(
            decode(&extra),
            Err(DecodeError::CountMismatch {
                declared: 2,
                found: 3
            })
        );
        // A count of 3 over two blocks.
        let mut short = good.clone();
        short[19] = 3;
        assert_eq!(
            decode(&short),
            Err(DecodeError::CountMismatch {
                declared: 3,
                found: 2
            })
        );
        let mut eos = encode::end_of_session(S, 1);
        eos.push(0);
        assert_eq!(
            decode(&eos),
            Err(DecodeError::EndOfSessionWithData { bytes: 1 })
        );
        assert_eq!(decode(&good[..19]), Err(DecodeError::Truncated { len: 19 }));
        let over = encode::downstream(S, u64::MAX, &[b"a"]);
        assert!(matches!(
            decode(&over),
            Err(DecodeError::SequenceOverflow { .. })
        ));
        // Numbered up to the last sequence number: fine.
        assert!(decode(&encode::downstream(S, u64::MAX - 1, &[b"a"])).is_ok());
    }
}
