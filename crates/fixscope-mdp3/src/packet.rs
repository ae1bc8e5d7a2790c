//! The MDP 3.0 Binary Packet Header on every UDP datagram and the messages after it
//! (CME "MDP 3.0 - Binary Packet Header", "MDP 3.0 - SBE Technical Headers"):
//!
//! - MsgSeqNum, u32 little-endian: "a unique sequence number given to each packet", each
//!   channel numbering its own, "reset weekly";
//! - SendingTime, u64 little-endian: the gateway's transmission time, nanoseconds since
//!   1970;
//! - then messages, each MsgSize (u16 little-endian, counting the *whole* message,
//!   MsgSize's own two bytes included — OMI's v1.13 dissector advances by the size from
//!   the MsgSize field) followed by the SBE header and body.
//!
//! **A datagram is read whole or not at all.** MsgSize is the only boundary between
//! messages: when the chain of MsgSizes does not end exactly at the datagram's end (a
//! size below the SBE header, one running past the datagram, bytes left over), one of
//! them is wrong and nothing says which; every message after it would be misread, and
//! the ones before it could be another protocol's bytes that happened to chain. So
//! [`parse`] rejects the datagram whole with a [`PacketError`], no message of it is
//! counted, and its MsgSeqNum shows as a gap in the channel.

use crate::sbe::{self, MIN_MESSAGE_LEN, MSG_SIZE_LEN};

/// MsgSeqNum (4) + SendingTime (8).
pub const PACKET_HEADER_LEN: usize = 12;

/// Why a datagram is no MDP 3.0 packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketError {
    /// Shorter than the packet header.
    Truncated { got: usize },
    /// A MsgSize below MsgSize + SBE header, at byte `at` of the datagram.
    MessageTooShort { at: usize, msg_size: usize },
    /// A message running past the datagram's end.
    MessageOverrun {
        at: usize,
        msg_size: usize,
        available: usize,
    },
    /// Bytes after the last message, too few to hold another's MsgSize.
    TrailingBytes { at: usize, left: usize },
}

/// The Binary Packet Header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketHeader {
    pub msg_seq_num: u32,
    /// As sent; [`PacketHeader::sending_time`] says whether it is set.
    pub sending_time_raw: u64,
}

impl PacketHeader {
    /// The SendingTime, `None` when the gateway did not set it (0, or all ones: SBE's
    /// null of a u64).
    pub fn sending_time(&self) -> Option<u64> {
        (self.sending_time_raw != 0 && self.sending_time_raw != u64::MAX)
            .then_some(self.sending_time_raw)
    }
}

/// A checked packet: its header and its messages, whose MsgSizes were found to fill the
/// datagram exactly.
#[derive(Clone, Copy, Debug)]
pub struct Packet<'a> {
    pub header: PacketHeader,
    body: &'a [u8],
    count: usize,
}

impl<'a> Packet<'a> {
    /// How many messages it carries.
    pub fn message_count(&self) -> usize {
        self.count
    }

    /// Each message's bytes (MsgSize included), in order: [`sbe::Frame::parse`] or
    /// [`crate::messages::decode`] reads one.
    pub fn messages(&self) -> Messages<'a> {
        Messages { rest: self.body }
    }
}

/// A packet's messages (see [`Packet::messages`]).
#[derive(Clone, Copy, Debug)]
pub struct Messages<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Messages<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let size = msg_size(self.rest)?;
        // `parse` checked the chain; a size that does not fit ends the iteration anyway.
        let (m, rest) = (self.rest.get(..size)?, self.rest.get(size..)?);
        self.rest = rest;
        Some(m)
    }
}

fn msg_size(b: &[u8]) -> Option<usize> {
    (b.len() >= MSG_SIZE_LEN).then(|| usize::from(u16::from_le_bytes([b[0], b[1]])))
}

/// Reads a datagram's packet header and checks its message chain (the module doc).
pub fn parse(datagram: &[u8]) -> Result<Packet<'_>, PacketError> {
    if datagram.len() < PACKET_HEADER_LEN {
        return Err(PacketError::Truncated {
            got: datagram.len(),
        });
    }
    let mut seq = [0u8; 4];
    seq.copy_from_slice(&datagram[..4]);
    let mut time = [0u8; 8];
    time.copy_from_slice(&datagram[4..PACKET_HEADER_LEN]);
    let header = PacketHeader {
        msg_seq_num: u32::from_le_bytes(seq),
        sending_time_raw: u64::from_le_bytes(time),
    };
    let body = &datagram[PACKET_HEADER_LEN..];
    let mut at = 0;
    let mut count = 0;
    while at < body.len() {
        let Some(size) = msg_size(&body[at..]) else {
            return Err(PacketError::TrailingBytes {
                at: PACKET_HEADER_LEN + at,
                left: body.len() - at,
            });
        };
        if size < MIN_MESSAGE_LEN {
            return Err(PacketError::MessageTooShort {
                at: PACKET_HEADER_LEN + at,
                msg_size: size,
            });
        }
        if size > body.len() - at {
            return Err(PacketError::MessageOverrun {
                at: PACKET_HEADER_LEN + at,
                msg_size: size,
                available: body.len() - at,
            });
        }
        at += size;
        count += 1;
    }
    Ok(Packet {
        header,
        body,
        count,
    })
}

/// The SBE header of each message of a checked packet, for a quick look (template ids).
pub fn headers<'a>(p: &Packet<'a>) -> impl Iterator<Item = Option<sbe::Header>> + 'a {
    p.messages().map(sbe::header)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(seq: u32, time: u64, messages: &[&[u8]]) -> Vec<u8> {
        let mut out = seq.to_le_bytes().to_vec();
        out.extend_from_slice(&time.to_le_bytes());
        for m in messages {
            out.extend_from_slice(m);
        }
        out
    }

    /// A heartbeat's bytes: MsgSize 10, BlockLength 0, template 12, schema 1, version 9.
    const HEARTBEAT: [u8; 10] = [10, 0, 0, 0, 12, 0, 1, 0, 9, 0];

    #[test]
    fn a_packet_is_its_header_and_messages_that_fill_it_exactly() {
        let d = packet(7, 1_700_000_000_000_000_000, &[&HEARTBEAT, &HEARTBEAT]);
        let p = parse(&d).expect("parses");
        assert_eq!(p.header.msg_seq_num, 7);
        assert_eq!(p.header.sending_time(), Some(1_700_000_000_000_000_000));
        assert_eq!(p.message_count(), 2);
        assert!(p.messages().all(|m| m == HEARTBEAT));
        let ids: Vec<_> = headers(&p).map(|h| h.map(|h| h.template_id)).collect();
        assert_eq!(ids, [Some(12), Some(12)]);
        let empty = packet(8, 0, &[]);
        let p = parse(&empty).expect("a packet of no messages");
        assert_eq!((p.message_count(), p.header.sending_time()), (0, None));
    }

    #[test]
    fn a_chain_that_does_not_fill_the_datagram_rejects_it_whole() {
        assert!(matches!(
            parse(&[0; 11]),
            Err(PacketError::Truncated { got: 11 })
        ));
        let mut short = HEARTBEAT;
        short[0] = 9;
        let d = packet(1, 1, &[&HEARTBEAT, &short]);
        assert!(matches!(
            parse(&d),
            Err(PacketError::MessageTooShort {
                at: 22,
                msg_size: 9
            })
        ));
        let mut long = HEARTBEAT;
        long[0] = 11;
        assert!(matches!(
            parse(&packet(1, 1, &[&long])),
            Err(PacketError::MessageOverrun {
                at: 12,
                msg_size: 11,
                available: 10
            })
        ));
        let mut trailing = packet(1, 1, &[&HEARTBEAT]);
        trailing.push(0);
        assert!(matches!(
            parse(&trailing),
            Err(PacketError::TrailingBytes { at: 22, left: 1 })
        ));
    }
}
