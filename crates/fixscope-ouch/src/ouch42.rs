//! OUCH 4.2: fixed-length messages, integers big-endian, prices u32 with 4 implied
//! decimals, the Order Token (14 alpha, space padded) the key every response carries.
//! Layouts and sizes (type byte included) as Wireshark's packet-ouch.c and the Open
//! Markets Initiative's OUCH 4.2 dissector read them; a message of another length than
//! its type's is an error, never read at a guessed offset.
//!
//! Client → host messages ride in SoupBinTCP `U` packets ([`decode_request`]), host →
//! client ones in `S` packets ([`decode_response`]): OUCH's `U` is Replace Order one way
//! and Replaced the other, so the packet type, not the letter, says which.

use crate::read::{DecodeError, Reader};
use crate::soupbin::SoupPacket;

/// Message sizes with the type byte.
pub mod size {
    pub const ENTER_ORDER: usize = 49;
    pub const REPLACE_ORDER: usize = 47;
    pub const CANCEL_ORDER: usize = 19;
    pub const MODIFY_ORDER: usize = 20;
    pub const SYSTEM_EVENT: usize = 10;
    pub const ACCEPTED: usize = 66;
    pub const REPLACED: usize = 80;
    pub const CANCELED: usize = 28;
    pub const AIQ_CANCELED: usize = 37;
    pub const EXECUTED: usize = 40;
    pub const BROKEN_TRADE: usize = 32;
    pub const PRICE_CORRECTION: usize = 36;
    pub const REJECTED: usize = 24;
    pub const CANCEL_PENDING: usize = 23;
    pub const CANCEL_REJECT: usize = 23;
    pub const ORDER_MODIFIED: usize = 28;
}

/// An Order Token as on the wire: 14 bytes, space padded.
pub type Token<'a> = &'a [u8];

/// `O`: a new order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnterOrder<'a> {
    pub token: Token<'a>,
    pub side: u8,
    pub shares: u32,
    pub stock: &'a [u8],
    pub price: u32,
    pub time_in_force: u32,
    pub firm: &'a [u8],
    pub display: u8,
    pub capacity: u8,
    pub iso_eligibility: u8,
    pub min_quantity: u32,
    pub cross_type: u8,
    pub customer_type: u8,
}

/// `U` from the client: replace the order `existing_token` by `replacement_token`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplaceOrder<'a> {
    pub existing_token: Token<'a>,
    pub replacement_token: Token<'a>,
    pub shares: u32,
    pub price: u32,
    pub time_in_force: u32,
    pub display: u8,
    pub iso_eligibility: u8,
    pub min_quantity: u32,
}

/// `A`, and the body `U` (Replaced) shares with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Accepted<'a> {
    pub timestamp_ns: u64,
    pub token: Token<'a>,
    pub side: u8,
    pub shares: u32,
    pub stock: &'a [u8],
    pub price: u32,
    pub time_in_force: u32,
    pub firm: &'a [u8],
    pub display: u8,
    pub order_reference_number: u64,
    pub capacity: u8,
    pub iso_eligibility: u8,
    pub min_quantity: u32,
    pub cross_type: u8,
    pub order_state: u8,
    pub bbo_weight_indicator: u8,
}

/// `U` from the host: the order `previous_token` was replaced by `accepted.token` (the
/// Replace's replacement token).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replaced<'a> {
    pub accepted: Accepted<'a>,
    pub previous_token: Token<'a>,
}

/// An OUCH 4.2 message, borrowed from its packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Message<'a> {
    EnterOrder(EnterOrder<'a>),
    ReplaceOrder(ReplaceOrder<'a>),
    /// `X`: `shares` is the size the order is to have (0 cancels it all). It names the
    /// order's token: a Cancel has no key of its own.
    CancelOrder {
        token: Token<'a>,
        shares: u32,
    },
    /// `M`: reduce shares or change the side.
    ModifyOrder {
        token: Token<'a>,
        side: u8,
        shares: u32,
    },
    SystemEvent {
        timestamp_ns: u64,
        event_code: u8,
    },
    Accepted(Accepted<'a>),
    Replaced(Replaced<'a>),
    /// `C`: the answer to a Cancel, or unsolicited (reason `I`: an IOC's remainder, `S`
    /// supervisory, ...).
    Canceled {
        timestamp_ns: u64,
        token: Token<'a>,
        decrement_shares: u32,
        reason: u8,
    },
    /// `D`.
    AiqCanceled {
        timestamp_ns: u64,
        token: Token<'a>,
        decrement_shares: u32,
        reason: u8,
        quantity_prevented_from_trading: u32,
        execution_price: u32,
        liquidity_flag: u8,
    },
    /// `E`: a fill, partial or full — it carries no leaves quantity.
    Executed {
        timestamp_ns: u64,
        token: Token<'a>,
        executed_shares: u32,
        execution_price: u32,
        liquidity_flag: u8,
        match_number: u64,
    },
    /// `B`.
    BrokenTrade {
        timestamp_ns: u64,
        token: Token<'a>,
        match_number: u64,
        reason: u8,
    },
    /// `K`.
    PriceCorrection {
        timestamp_ns: u64,
        token: Token<'a>,
        match_number: u64,
        new_execution_price: u32,
        reason: u8,
    },
    /// `J`: an Enter Order refused.
    Rejected {
        timestamp_ns: u64,
        token: Token<'a>,
        reason: u8,
    },
    /// `P`.
    CancelPending {
        timestamp_ns: u64,
        token: Token<'a>,
    },
    /// `I`.
    CancelReject {
        timestamp_ns: u64,
        token: Token<'a>,
    },
    /// `M` from the host: the answer to a Modify.
    OrderModified {
        timestamp_ns: u64,
        token: Token<'a>,
        side: u8,
        shares: u32,
    },
    /// A type this reader does not take apart (its bytes, type byte first).
    Other {
        message_type: u8,
        bytes: &'a [u8],
    },
}

impl<'a> Message<'a> {
    /// The Order Token a message is keyed by: an Enter Order's, a Replace's replacement
    /// token (the order it makes), the order a Cancel or Modify names, the token of the
    /// order a response is about (a Replaced: the replacement token).
    pub fn token(&self) -> Option<Token<'a>> {
        use Message::*;
        match *self {
            EnterOrder(o) => Some(o.token),
            ReplaceOrder(r) => Some(r.replacement_token),
            Accepted(a) => Some(a.token),
            Replaced(r) => Some(r.accepted.token),
            CancelOrder { token, .. }
            | ModifyOrder { token, .. }
            | Canceled { token, .. }
            | AiqCanceled { token, .. }
            | Executed { token, .. }
            | BrokenTrade { token, .. }
            | PriceCorrection { token, .. }
            | Rejected { token, .. }
            | CancelPending { token, .. }
            | CancelReject { token, .. }
            | OrderModified { token, .. } => Some(token),
            SystemEvent { .. } | Other { .. } => None,
        }
    }

    /// The token of the order a Replace (existing) or Replaced (previous) replaces.
    pub fn replaced_token(&self) -> Option<Token<'a>> {
        match *self {
            Message::ReplaceOrder(r) => Some(r.existing_token),
            Message::Replaced(r) => Some(r.previous_token),
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

fn exact(bytes: &[u8], expected: usize) -> Result<Reader<'_>, DecodeError> {
    if bytes.len() != expected {
        return Err(DecodeError::Length {
            message_type: bytes.first().copied().unwrap_or(0),
            expected,
            got: bytes.len(),
        });
    }
    Ok(Reader::after_type(bytes))
}

/// Reads a client → host message (a `U` packet's payload).
pub fn decode_request(bytes: &[u8]) -> Result<Message<'_>, DecodeError> {
    let Some(&t) = bytes.first() else {
        return Err(DecodeError::Empty);
    };
    Ok(match t {
        b'O' => {
            let mut r = exact(bytes, size::ENTER_ORDER)?;
            Message::EnterOrder(EnterOrder {
                token: r.take(14),
                side: r.u8(),
                shares: r.u32(),
                stock: r.take(8),
                price: r.u32(),
                time_in_force: r.u32(),
                firm: r.take(4),
                display: r.u8(),
                capacity: r.u8(),
                iso_eligibility: r.u8(),
                min_quantity: r.u32(),
                cross_type: r.u8(),
                customer_type: r.u8(),
            })
        }
        b'U' => {
            let mut r = exact(bytes, size::REPLACE_ORDER)?;
            Message::ReplaceOrder(ReplaceOrder {
                existing_token: r.take(14),
                replacement_token: r.take(14),
                shares: r.u32(),
                price: r.u32(),
                time_in_force: r.u32(),
                display: r.u8(),
                iso_eligibility: r.u8(),
                min_quantity: r.u32(),
            })
        }
        b'X' => {
            let mut r = exact(bytes, size::CANCEL_ORDER)?;
            Message::CancelOrder {
                token: r.take(14),
                shares: r.u32(),
            }
        }
        b'M' => {
            let mut r = exact(bytes, size::MODIFY_ORDER)?;
            Message::ModifyOrder {
                token: r.take(14),
                side: r.u8(),
                shares: r.u32(),
            }
        }
        _ => Message::Other {
            message_type: t,
            bytes,
        },
    })
}

fn accepted_body<'a>(r: &mut Reader<'a>) -> Accepted<'a> {
    let timestamp_ns = r.u64();
    let token = r.take(14);
    let side = r.u8();
    let shares = r.u32();
    let stock = r.take(8);
    let price = r.u32();
    let time_in_force = r.u32();
    let firm = r.take(4);
    let display = r.u8();
    let order_reference_number = r.u64();
    let capacity = r.u8();
    let iso_eligibility = r.u8();
    let min_quantity = r.u32();
    let cross_type = r.u8();
    let order_state = r.u8();
    Accepted {
        timestamp_ns,
        token,
        side,
        shares,
        stock,
        price,
        time_in_force,
        firm,
        display,
        order_reference_number,
        capacity,
        iso_eligibility,
        min_quantity,
        cross_type,
        order_state,
        bbo_weight_indicator: 0,
    }
}

/// Reads a host → client message (an `S` packet's payload).
pub fn decode_response(bytes: &[u8]) -> Result<Message<'_>, DecodeError> {
    let Some(&t) = bytes.first() else {
        return Err(DecodeError::Empty);
    };
    Ok(match t {
        b'S' => {
            let mut r = exact(bytes, size::SYSTEM_EVENT)?;
            Message::SystemEvent {
                timestamp_ns: r.u64(),
                event_code: r.u8(),
            }
        }
        b'A' => {
            let mut r = exact(bytes, size::ACCEPTED)?;
            let mut a = accepted_body(&mut r);
            a.bbo_weight_indicator = r.u8();
            Message::Accepted(a)
        }
        b'U' => {
            let mut r = exact(bytes, size::REPLACED)?;
            let mut accepted = accepted_body(&mut r);
            let previous_token = r.take(14);
            accepted.bbo_weight_indicator = r.u8();
            Message::Replaced(Replaced {
                accepted,
                previous_token,
            })
        }
        b'C' => {
            let mut r = exact(bytes, size::CANCELED)?;
            Message::Canceled {
                timestamp_ns: r.u64(),
                token: r.take(14),
                decrement_shares: r.u32(),
                reason: r.u8(),
            }
        }
        b'D' => {
            let mut r = exact(bytes, size::AIQ_CANCELED)?;
            Message::AiqCanceled {
                timestamp_ns: r.u64(),
                token: r.take(14),
                decrement_shares: r.u32(),
                reason: r.u8(),
                quantity_prevented_from_trading: r.u32(),
                execution_price: r.u32(),
                liquidity_flag: r.u8(),
            }
        }
        b'E' => {
            let mut r = exact(bytes, size::EXECUTED)?;
            Message::Executed {
                timestamp_ns: r.u64(),
                token: r.take(14),
                executed_shares: r.u32(),
                execution_price: r.u32(),
                liquidity_flag: r.u8(),
                match_number: r.u64(),
            }
        }
        b'B' => {
            let mut r = exact(bytes, size::BROKEN_TRADE)?;
            Message::BrokenTrade {
                timestamp_ns: r.u64(),
                token: r.take(14),
                match_number: r.u64(),
                reason: r.u8(),
            }
        }
        b'K' => {
            let mut r = exact(bytes, size::PRICE_CORRECTION)?;
            Message::PriceCorrection {
                timestamp_ns: r.u64(),
                token: r.take(14),
                match_number: r.u64(),
                new_execution_price: r.u32(),
                reason: r.u8(),
            }
        }
        b'J' => {
            let mut r = exact(bytes, size::REJECTED)?;
            Message::Rejected {
                timestamp_ns: r.u64(),
                token: r.take(14),
                reason: r.u8(),
            }
        }
        b'P' | b'I' => {
            let mut r = exact(bytes, size::CANCEL_PENDING)?;
            let (timestamp_ns, token) = (r.u64(), r.take(14));
            if t == b'P' {
                Message::CancelPending {
                    timestamp_ns,
                    token,
                }
            } else {
                Message::CancelReject {
                    timestamp_ns,
                    token,
                }
            }
        }
        b'M' => {
            let mut r = exact(bytes, size::ORDER_MODIFIED)?;
            Message::OrderModified {
                timestamp_ns: r.u64(),
                token: r.take(14),
                side: r.u8(),
                shares: r.u32(),
            }
        }
        _ => Message::Other {
            message_type: t,
            bytes,
        },
    })
}
