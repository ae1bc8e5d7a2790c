//! OUCH 5.0: integers big-endian, prices 8 bytes with 4 implied decimals, the key a
//! UserRefNum (u32, strictly increasing per trading day), ClOrdID free text (14 alpha,
//! "not checked for day-uniqueness"). Enter Order, Replace, Accepted, Replaced and
//! Executed end with an **Optional Appendage**: its length (u16) is the fixed part's last
//! field, each element `[length u8 = 1 + value size][tag u8][value]`. So a message is its
//! type's fixed part (Open Markets Initiative's OUCH 5.0 dissector; Orchimate's rendering
//! of the spec) plus what the SoupBinTCP packet length gives — never a size table. A
//! message shorter than its fixed part, or an appendage longer than what the packet
//! holds, is an error value; bytes past the appendage (or past a fixed-size message's
//! end) are left unread, for later revisions.
//!
//! Requests ride in `U` packets ([`decode_request`]), responses in `S` packets
//! ([`decode_response`]); as in 4.2, OUCH's `U` is Replace one way and Replaced the other.

use crate::read::{at_least, DecodeError, Reader};
use crate::soupbin::SoupPacket;

/// Fixed parts with the type byte (an appendage's length field included).
pub mod size {
    pub const ENTER_ORDER: usize = 47;
    pub const REPLACE_ORDER: usize = 40;
    pub const CANCEL_ORDER: usize = 9;
    pub const MODIFY_ORDER: usize = 10;
    pub const SYSTEM_EVENT: usize = 10;
    pub const ACCEPTED: usize = 64;
    pub const REPLACED: usize = 68;
    pub const CANCELED: usize = 18;
    pub const AIQ_CANCELED: usize = 31;
    pub const EXECUTED: usize = 36;
    pub const BROKEN_TRADE: usize = 36;
    pub const REJECTED: usize = 29;
    pub const CANCEL_PENDING: usize = 13;
    pub const CANCEL_REJECT: usize = 13;
    pub const ORDER_MODIFIED: usize = 18;
}

/// An Optional Appendage: its bytes, read element by element.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Appendage<'a> {
    pub bytes: &'a [u8],
}

impl<'a> Appendage<'a> {
    /// The elements as (tag, value), up to the first that does not fit.
    pub fn elements(&self) -> impl Iterator<Item = (u8, &'a [u8])> + 'a {
        let mut rest = self.bytes;
        std::iter::from_fn(move || {
            let (&len, after) = rest.split_first()?;
            let len = usize::from(len);
            if len == 0 || after.len() < len {
                rest = &[];
                return None;
            }
            let (element, next) = after.split_at(len);
            rest = next;
            Some((element[0], &element[1..]))
        })
    }

    /// Whether the elements fill the appendage exactly.
    pub fn well_formed(&self) -> bool {
        let used: usize = self.elements().map(|(_, v)| 2 + v.len()).sum();
        used == self.bytes.len()
    }
}

/// `O`: a new order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnterOrder<'a> {
    pub user_ref_num: u32,
    pub side: u8,
    pub quantity: u32,
    pub symbol: &'a [u8],
    pub price: u64,
    pub time_in_force: u8,
    pub display: u8,
    pub capacity: u8,
    pub iso_eligibility: u8,
    pub cross_type: u8,
    pub cl_ord_id: &'a [u8],
    pub appendage: Appendage<'a>,
}

/// `U` from the client: replace order `orig_user_ref_num` by a new `user_ref_num`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplaceOrder<'a> {
    pub orig_user_ref_num: u32,
    pub user_ref_num: u32,
    pub quantity: u32,
    pub price: u64,
    pub time_in_force: u8,
    pub display: u8,
    pub iso_eligibility: u8,
    pub cl_ord_id: &'a [u8],
    pub appendage: Appendage<'a>,
}

/// `A`; `U` (Replaced) carries the same with `orig_user_ref_num` before `user_ref_num`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Accepted<'a> {
    pub timestamp_ns: u64,
    pub user_ref_num: u32,
    pub side: u8,
    pub quantity: u32,
    pub symbol: &'a [u8],
    pub price: u64,
    pub time_in_force: u8,
    pub display: u8,
    pub order_reference_number: u64,
    pub capacity: u8,
    pub iso_eligibility: u8,
    pub cross_type: u8,
    pub order_state: u8,
    pub cl_ord_id: &'a [u8],
    pub appendage: Appendage<'a>,
}

/// An OUCH 5.0 message, borrowed from its packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Message<'a> {
    EnterOrder(EnterOrder<'a>),
    ReplaceOrder(ReplaceOrder<'a>),
    /// `X`: `quantity` is what the order is to keep (0 cancels it); it names the order's
    /// UserRefNum, a Cancel has no key of its own.
    CancelOrder {
        user_ref_num: u32,
        quantity: u32,
    },
    /// `M`.
    ModifyOrder {
        user_ref_num: u32,
        side: u8,
        quantity: u32,
    },
    SystemEvent {
        timestamp_ns: u64,
        event_code: u8,
    },
    Accepted(Accepted<'a>),
    /// `U` from the host: `orig_user_ref_num` replaced by `accepted.user_ref_num`.
    Replaced {
        orig_user_ref_num: u32,
        accepted: Accepted<'a>,
    },
    /// `C`: the answer to a Cancel, or unsolicited (an IOC's remainder, ...).
    Canceled {
        timestamp_ns: u64,
        user_ref_num: u32,
        quantity: u32,
        reason: u8,
    },
    /// `D`.
    AiqCanceled {
        timestamp_ns: u64,
        user_ref_num: u32,
        decrement_shares: u32,
        reason: u8,
        quantity_prevented_from_trading: u32,
        execution_price: u64,
        liquidity_flag: u8,
    },
    /// `E`: a fill, partial or full — no leaves quantity.
    Executed {
        timestamp_ns: u64,
        user_ref_num: u32,
        quantity: u32,
        price: u64,
        liquidity_flag: u8,
        match_number: u64,
        appendage: Appendage<'a>,
    },
    /// `B`.
    BrokenTrade {
        timestamp_ns: u64,
        user_ref_num: u32,
        match_number: u64,
        reason: u8,
        cl_ord_id: &'a [u8],
    },
    /// `J`: `reason` is a u16 code in 5.0.
    Rejected {
        timestamp_ns: u64,
        user_ref_num: u32,
        reason: u16,
        cl_ord_id: &'a [u8],
    },
    /// `P`.
    CancelPending {
        timestamp_ns: u64,
        user_ref_num: u32,
    },
    /// `I`.
    CancelReject {
        timestamp_ns: u64,
        user_ref_num: u32,
    },
    /// `M` from the host.
    OrderModified {
        timestamp_ns: u64,
        user_ref_num: u32,
        side: u8,
        quantity: u32,
    },
    /// A type this reader does not take apart (its bytes, type byte first).
    Other {
        message_type: u8,
        bytes: &'a [u8],
    },
}

impl<'a> Message<'a> {
    /// The UserRefNum a message is keyed by (a Replace's or Replaced's: the new one).
    pub fn user_ref_num(&self) -> Option<u32> {
        use Message::*;
        match *self {
            EnterOrder(o) => Some(o.user_ref_num),
            ReplaceOrder(r) => Some(r.user_ref_num),
            Accepted(a) | Replaced { accepted: a, .. } => Some(a.user_ref_num),
            CancelOrder { user_ref_num, .. }
            | ModifyOrder { user_ref_num, .. }
            | Canceled { user_ref_num, .. }
            | AiqCanceled { user_ref_num, .. }
            | Executed { user_ref_num, .. }
            | BrokenTrade { user_ref_num, .. }
            | Rejected { user_ref_num, .. }
            | CancelPending { user_ref_num, .. }
            | CancelReject { user_ref_num, .. }
            | OrderModified { user_ref_num, .. } => Some(user_ref_num),
            SystemEvent { .. } | Other { .. } => None,
        }
    }

    /// The UserRefNum of the order a Replace or Replaced replaces.
    pub fn orig_user_ref_num(&self) -> Option<u32> {
        match *self {
            Message::ReplaceOrder(r) => Some(r.orig_user_ref_num),
            Message::Replaced {
                orig_user_ref_num, ..
            } => Some(orig_user_ref_num),
            _ => None,
        }
    }
}

/// The OUCH message a data packet carries: a `U`'s as a request, an `S`'s as a response;
/// `None` for the session packets.
pub fn decode<'a>(packet: &SoupPacket<'a>) -> Option<Result<Message<'a>, DecodeError>> {
    match *packet {
        SoupPacket::UnsequencedData { message } => Some(decode_request(message)),
        SoupPacket::SequencedData { message } => Some(decode_response(message)),
        _ => None,
    }
}

/// A reader past the type byte of a message at least `fixed` long.
fn fixed(bytes: &[u8], fixed: usize) -> Result<Reader<'_>, DecodeError> {
    at_least(bytes, fixed)?;
    Ok(Reader::after_type(bytes))
}

/// The appendage whose length field `r` is at (the fixed part's last field).
fn appendage<'a>(r: &mut Reader<'a>) -> Result<Appendage<'a>, DecodeError> {
    let declared = usize::from(r.u16());
    let rest = r.rest();
    if declared > rest.len() {
        return Err(DecodeError::AppendageLength {
            declared,
            available: rest.len(),
        });
    }
    Ok(Appendage {
        bytes: &rest[..declared],
    })
}

/// Reads a client → host message (a `U` packet's payload).
pub fn decode_request(bytes: &[u8]) -> Result<Message<'_>, DecodeError> {
    let Some(&t) = bytes.first() else {
        return Err(DecodeError::Empty);
    };
    Ok(match t {
        b'O' => {
            let mut r = fixed(bytes, size::ENTER_ORDER)?;
            Message::EnterOrder(EnterOrder {
                user_ref_num: r.u32(),
                side: r.u8(),
                quantity: r.u32(),
                symbol: r.take(8),
                price: r.u64(),
                time_in_force: r.u8(),
                display: r.u8(),
                capacity: r.u8(),
                iso_eligibility: r.u8(),
                cross_type: r.u8(),
                cl_ord_id: r.take(14),
                appendage: appendage(&mut r)?,
            })
        }
        b'U' => {
            let mut r = fixed(bytes, size::REPLACE_ORDER)?;
            Message::ReplaceOrder(ReplaceOrder {
                orig_user_ref_num: r.u32(),
                user_ref_num: r.u32(),
                quantity: r.u32(),
                price: r.u64(),
                time_in_force: r.u8(),
                display: r.u8(),
                iso_eligibility: r.u8(),
                cl_ord_id: r.take(14),
                appendage: appendage(&mut r)?,
            })
        }
        b'X' => {
            let mut r = fixed(bytes, size::CANCEL_ORDER)?;
            Message::CancelOrder {
                user_ref_num: r.u32(),
                quantity: r.u32(),
            }
        }
        b'M' => {
            let mut r = fixed(bytes, size::MODIFY_ORDER)?;
            Message::ModifyOrder {
                user_ref_num: r.u32(),
                side: r.u8(),
                quantity: r.u32(),
            }
        }
        _ => Message::Other {
            message_type: t,
            bytes,
        },
    })
}

/// Accepted's fields after its UserRefNum (Replaced's after its two).
fn accepted_rest<'a>(
    r: &mut Reader<'a>,
    timestamp_ns: u64,
    user_ref_num: u32,
) -> Result<Accepted<'a>, DecodeError> {
    Ok(Accepted {
        timestamp_ns,
        user_ref_num,
        side: r.u8(),
        quantity: r.u32(),
        symbol: r.take(8),
        price: r.u64(),
        time_in_force: r.u8(),
        display: r.u8(),
        order_reference_number: r.u64(),
        capacity: r.u8(),
        iso_eligibility: r.u8(),
        cross_type: r.u8(),
        order_state: r.u8(),
        cl_ord_id: r.take(14),
        appendage: appendage(r)?,
    })
}

/// Reads a host → client message (an `S` packet's payload).
pub fn decode_response(bytes: &[u8]) -> Result<Message<'_>, DecodeError> {
    let Some(&t) = bytes.first() else {
        return Err(DecodeError::Empty);
    };
    Ok(match t {
        b'S' => {
            let mut r = fixed(bytes, size::SYSTEM_EVENT)?;
            Message::SystemEvent {
                timestamp_ns: r.u64(),
                event_code: r.u8(),
            }
        }
        b'A' => {
            let mut r = fixed(bytes, size::ACCEPTED)?;
            let (ts, urn) = (r.u64(), r.u32());
            Message::Accepted(accepted_rest(&mut r, ts, urn)?)
        }
        b'U' => {
            let mut r = fixed(bytes, size::REPLACED)?;
            let (ts, orig, urn) = (r.u64(), r.u32(), r.u32());
            Message::Replaced {
                orig_user_ref_num: orig,
                accepted: accepted_rest(&mut r, ts, urn)?,
            }
        }
        b'C' => {
            let mut r = fixed(bytes, size::CANCELED)?;
            Message::Canceled {
                timestamp_ns: r.u64(),
                user_ref_num: r.u32(),
                quantity: r.u32(),
                reason: r.u8(),
            }
        }
        b'D' => {
            let mut r = fixed(bytes, size::AIQ_CANCELED)?;
            Message::AiqCanceled {
                timestamp_ns: r.u64(),
                user_ref_num: r.u32(),
                decrement_shares: r.u32(),
                reason: r.u8(),
                quantity_prevented_from_trading: r.u32(),
                execution_price: r.u64(),
                liquidity_flag: r.u8(),
            }
        }
        b'E' => {
            let mut r = fixed(bytes, size::EXECUTED)?;
            Message::Executed {
                timestamp_ns: r.u64(),
                user_ref_num: r.u32(),
                quantity: r.u32(),
                price: r.u64(),
                liquidity_flag: r.u8(),
                match_number: r.u64(),
                appendage: appendage(&mut r)?,
            }
        }
        b'B' => {
            let mut r = fixed(bytes, size::BROKEN_TRADE)?;
            Message::BrokenTrade {
                timestamp_ns: r.u64(),
                user_ref_num: r.u32(),
                match_number: r.u64(),
                reason: r.u8(),
                cl_ord_id: r.take(14),
            }
        }
        b'J' => {
            let mut r = fixed(bytes, size::REJECTED)?;
            Message::Rejected {
                timestamp_ns: r.u64(),
                user_ref_num: r.u32(),
                reason: r.u16(),
                cl_ord_id: r.take(14),
            }
        }
        b'P' | b'I' => {
            let mut r = fixed(bytes, size::CANCEL_PENDING)?;
            let (timestamp_ns, user_ref_num) = (r.u64(), r.u32());
            if t == b'P' {
                Message::CancelPending {
                    timestamp_ns,
                    user_ref_num,
                }
            } else {
                Message::CancelReject {
                    timestamp_ns,
                    user_ref_num,
                }
            }
        }
        b'M' => {
            let mut r = fixed(bytes, size::ORDER_MODIFIED)?;
            Message::OrderModified {
                timestamp_ns: r.u64(),
                user_ref_num: r.u32(),
                side: r.u8(),
                quantity: r.u32(),
            }
        }
        _ => Message::Other {
            message_type: t,
            bytes,
        },
    })
}
