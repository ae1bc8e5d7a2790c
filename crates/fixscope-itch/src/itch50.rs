//! Nasdaq TotalView-ITCH 5.0 messages: one per MoldUDP64 block, a type byte first, then
//! Stock Locate (u16), Tracking Number (u16) and Timestamp (**6 bytes**, big-endian,
//! nanoseconds since midnight, exchange time), then the type's fixed fields. Integers are
//! big-endian; prices are u32 with 4 implied decimals (Cross Trade's and the MWCB levels'
//! as the spec says, read here as raw integers); alpha fields are space padded on the
//! right.
//!
//! Sizes (type byte included) are the TotalView-ITCH 5.0 specification's, as the Open
//! Markets Initiative's `TotalView_Itch_v5_0` dissector lists each message's fields; each
//! size below is checked in the tests against the sum of its fields' widths. Wireshark's
//! own `nasdaq_itch` reads ITCH 2.0/3.0 only, so for ITCH 5.0 these sizes are the
//! independent check.
//!
//! **The block length decides, the table checks it.** A message is read only when its
//! MoldUDP64 block is exactly its type's size: a longer block is not read with the extra
//! bytes ignored, a shorter one not read with zeros — either means this table and the
//! sender disagree (a newer spec revision, a corrupt block), and a misread Order Reference
//! Number would silently corrupt every book built on it.

use std::fmt;

/// Message sizes, type byte included.
pub mod size {
    pub const SYSTEM_EVENT: usize = 12;
    pub const STOCK_DIRECTORY: usize = 39;
    pub const STOCK_TRADING_ACTION: usize = 25;
    pub const REG_SHO: usize = 20;
    pub const MARKET_PARTICIPANT_POSITION: usize = 26;
    pub const MWCB_DECLINE_LEVEL: usize = 35;
    pub const MWCB_STATUS: usize = 12;
    pub const IPO_QUOTING_PERIOD: usize = 28;
    pub const LULD_AUCTION_COLLAR: usize = 35;
    pub const OPERATIONAL_HALT: usize = 21;
    pub const ADD_ORDER: usize = 36;
    pub const ADD_ORDER_MPID: usize = 40;
    pub const ORDER_EXECUTED: usize = 31;
    pub const ORDER_EXECUTED_WITH_PRICE: usize = 36;
    pub const ORDER_CANCEL: usize = 23;
    pub const ORDER_DELETE: usize = 19;
    pub const ORDER_REPLACE: usize = 35;
    pub const TRADE: usize = 44;
    pub const CROSS_TRADE: usize = 40;
    pub const BROKEN_TRADE: usize = 19;
    pub const NOII: usize = 50;
    pub const RPII: usize = 20;
    pub const DIRECT_LISTING_CAPITAL_RAISE: usize = 48;
}

/// Bytes before every message's own fields: type 1, locate 2, tracking 2, timestamp 6.
pub const HEADER_LEN: usize = 11;

/// The size of ITCH 5.0 message type `t` (type byte included); `None` for a type the spec
/// does not define.
pub fn expected_size(t: u8) -> Option<usize> {
    use size::*;
    Some(match t {
        b'S' => SYSTEM_EVENT,
        b'R' => STOCK_DIRECTORY,
        b'H' => STOCK_TRADING_ACTION,
        b'Y' => REG_SHO,
        b'L' => MARKET_PARTICIPANT_POSITION,
        b'V' => MWCB_DECLINE_LEVEL,
        b'W' => MWCB_STATUS,
        b'K' => IPO_QUOTING_PERIOD,
        b'J' => LULD_AUCTION_COLLAR,
        b'h' => OPERATIONAL_HALT,
        b'A' => ADD_ORDER,
        b'F' => ADD_ORDER_MPID,
        b'E' => ORDER_EXECUTED,
        b'C' => ORDER_EXECUTED_WITH_PRICE,
        b'X' => ORDER_CANCEL,
        b'D' => ORDER_DELETE,
        b'U' => ORDER_REPLACE,
        b'P' => TRADE,
        b'Q' => CROSS_TRADE,
        b'B' => BROKEN_TRADE,
        b'I' => NOII,
        b'N' => RPII,
        b'O' => DIRECT_LISTING_CAPITAL_RAISE,
        _ => return None,
    })
}

/// An 8-byte stock symbol as on the wire (space padded).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Symbol(pub [u8; 8]);

impl Symbol {
    /// `name` space padded (cut) to 8 bytes.
    pub fn new(name: &[u8]) -> Self {
        let mut s = [b' '; 8];
        let n = name.len().min(8);
        s[..n].copy_from_slice(&name[..n]);
        Symbol(s)
    }

    /// Without its padding.
    pub fn trimmed(&self) -> &[u8] {
        let end = self.0.iter().rposition(|&c| c != b' ').map_or(0, |e| e + 1);
        &self.0[..end]
    }
}

impl fmt::Debug for Symbol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.trimmed()))
    }
}

/// The fields every message starts with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Header {
    pub message_type: u8,
    /// The instrument's number for the day (Stock Directory maps it to a symbol; 0 in
    /// messages about no instrument, System Event).
    pub stock_locate: u16,
    pub tracking_number: u16,
    /// Nanoseconds since midnight, exchange (New York) time (`timestamp` converts).
    pub timestamp_ns: u64,
}

/// `R`: the day's instrument list; `stock_locate` (in the header) names `stock` in every
/// later message of the session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StockDirectory {
    pub header: Header,
    pub stock: Symbol,
    pub market_category: u8,
    pub financial_status: u8,
    pub round_lot_size: u32,
    pub round_lots_only: u8,
    pub issue_classification: u8,
    pub issue_sub_type: [u8; 2],
    pub authenticity: u8,
    pub short_sale_threshold: u8,
    pub ipo_flag: u8,
    pub luld_reference_price_tier: u8,
    pub etp_flag: u8,
    pub etp_leverage_factor: u32,
    pub inverse_indicator: u8,
}

/// `A` and `F` (with `attribution`, the MPID).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddOrder {
    pub header: Header,
    pub order_reference_number: u64,
    /// `B` buy, `S` sell.
    pub side: u8,
    pub shares: u32,
    pub stock: Symbol,
    pub price: u32,
    pub attribution: Option<[u8; 4]>,
}

/// `P`: an execution of a non-displayed order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trade {
    pub header: Header,
    pub order_reference_number: u64,
    pub side: u8,
    pub shares: u32,
    pub stock: Symbol,
    pub price: u32,
    pub match_number: u64,
}

/// `Q`: the opening, closing, IPO or halt cross.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CrossTrade {
    pub header: Header,
    pub shares: u64,
    pub stock: Symbol,
    pub cross_price: u32,
    pub match_number: u64,
    pub cross_type: u8,
}

/// An ITCH 5.0 message. The types feed health and tick-to-trade need are read whole;
/// the others are [`Message::Other`], their size checked all the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Message {
    /// `S`: start/end of messages, system hours, market hours.
    SystemEvent {
        header: Header,
        event_code: u8,
    },
    StockDirectory(StockDirectory),
    /// `A`, `F`.
    AddOrder(AddOrder),
    /// `E`: executed at the order's price.
    OrderExecuted {
        header: Header,
        order_reference_number: u64,
        executed_shares: u32,
        match_number: u64,
    },
    /// `C`: executed at another price; `printable` `N`: not to be counted in volume.
    OrderExecutedWithPrice {
        header: Header,
        order_reference_number: u64,
        executed_shares: u32,
        match_number: u64,
        printable: u8,
        execution_price: u32,
    },
    /// `X`: partly canceled.
    OrderCancel {
        header: Header,
        order_reference_number: u64,
        canceled_shares: u32,
    },
    /// `D`: removed from the book.
    OrderDelete {
        header: Header,
        order_reference_number: u64,
    },
    /// `U`: the original order removed, a new one (new reference number) added.
    OrderReplace {
        header: Header,
        original_order_reference_number: u64,
        new_order_reference_number: u64,
        shares: u32,
        price: u32,
    },
    Trade(Trade),
    CrossTrade(CrossTrade),
    /// `B`: a trade (by match number) broken.
    BrokenTrade {
        header: Header,
        match_number: u64,
    },
    /// A type read no further than its header.
    Other {
        header: Header,
    },
}

impl Message {
    pub fn header(&self) -> Header {
        match *self {
            Message::SystemEvent { header, .. }
            | Message::OrderExecuted { header, .. }
            | Message::OrderExecutedWithPrice { header, .. }
            | Message::OrderCancel { header, .. }
            | Message::OrderDelete { header, .. }
            | Message::OrderReplace { header, .. }
            | Message::BrokenTrade { header, .. }
            | Message::Other { header } => header,
            Message::StockDirectory(m) => m.header,
            Message::AddOrder(m) => m.header,
            Message::Trade(m) => m.header,
            Message::CrossTrade(m) => m.header,
        }
    }

    /// The symbol the message names, when it names one (`E`, `D`, ... name only the
    /// locate: `locate::LocateMap` has the symbol).
    pub fn stock(&self) -> Option<Symbol> {
        match *self {
            Message::StockDirectory(m) => Some(m.stock),
            Message::AddOrder(m) => Some(m.stock),
            Message::Trade(m) => Some(m.stock),
            Message::CrossTrade(m) => Some(m.stock),
            _ => None,
        }
    }
}

/// Why a message block is not an ITCH 5.0 message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItchError {
    /// An empty block.
    Empty,
    /// A type ITCH 5.0 does not define.
    UnknownType(u8),
    /// A known type in a block of another size than the type's.
    Length {
        message_type: u8,
        expected: usize,
        got: usize,
    },
}

impl fmt::Display for ItchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ItchError::Empty => write!(f, "an empty message block"),
            ItchError::UnknownType(t) => write!(f, "no ITCH 5.0 message type 0x{t:02x}"),
            ItchError::Length {
                message_type,
                expected,
                got,
            } => write!(
                f,
                "ITCH 5.0 `{}` is {expected} bytes, its block {got}",
                char::from(message_type)
            ),
        }
    }
}

impl std::error::Error for ItchError {}

/// Big-endian reads at increasing offsets of a block whose size was checked.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        // The size check before any read makes this always whole; `get` keeps a wrong
        // table from ever panicking.
        if let Some(b) = self.bytes.get(self.at..self.at + N) {
            out.copy_from_slice(b);
        }
        self.at += N;
        out
    }
    fn u8(&mut self) -> u8 {
        self.array::<1>()[0]
    }
    fn u16(&mut self) -> u16 {
        u16::from_be_bytes(self.array())
    }
    fn u32(&mut self) -> u32 {
        u32::from_be_bytes(self.array())
    }
    fn u48(&mut self) -> u64 {
        let b: [u8; 6] = self.array();
        let mut full = [0u8; 8];
        full[2..].copy_from_slice(&b);
        u64::from_be_bytes(full)
    }
    fn u64(&mut self) -> u64 {
        u64::from_be_bytes(self.array())
    }
    fn symbol(&mut self) -> Symbol {
        Symbol(self.array())
    }
}

/// Reads one message (a MoldUDP64 block's bytes).
pub fn decode(bytes: &[u8]) -> Result<Message, ItchError> {
    let &t = bytes.first().ok_or(ItchError::Empty)?;
    let expected = expected_size(t).ok_or(ItchError::UnknownType(t))?;
    if bytes.len() != expected {
        return Err(ItchError::Length {
            message_type: t,
            expected,
            got: bytes.len(),
        });
    }
    let mut r = Reader { bytes, at: 1 };
    let header = Header {
        message_type: t,
        stock_locate: r.u16(),
        tracking_number: r.u16(),
        timestamp_ns: r.u48(),
    };
    Ok(match t {
        b'S' => Message::SystemEvent {
            header,
            event_code: r.u8(),
        },
        b'R' => Message::StockDirectory(StockDirectory {
            header,
            stock: r.symbol(),
            market_category: r.u8(),
            financial_status: r.u8(),
            round_lot_size: r.u32(),
            round_lots_only: r.u8(),
            issue_classification: r.u8(),
            issue_sub_type: r.array(),
            authenticity: r.u8(),
            short_sale_threshold: r.u8(),
            ipo_flag: r.u8(),
            luld_reference_price_tier: r.u8(),
            etp_flag: r.u8(),
            etp_leverage_factor: r.u32(),
            inverse_indicator: r.u8(),
        }),
        b'A' | b'F' => Message::AddOrder(AddOrder {
            header,
            order_reference_number: r.u64(),
            side: r.u8(),
            shares: r.u32(),
            stock: r.symbol(),
            price: r.u32(),
            attribution: (t == b'F').then(|| r.array()),
        }),
        b'E' => Message::OrderExecuted {
            header,
            order_reference_number: r.u64(),
            executed_shares: r.u32(),
            match_number: r.u64(),
        },
        b'C' => Message::OrderExecutedWithPrice {
            header,
            order_reference_number: r.u64(),
            executed_shares: r.u32(),
            match_number: r.u64(),
            printable: r.u8(),
            execution_price: r.u32(),
        },
        b'X' => Message::OrderCancel {
            header,
            order_reference_number: r.u64(),
            canceled_shares: r.u32(),
        },
        b'D' => Message::OrderDelete {
            header,
            order_reference_number: r.u64(),
        },
        b'U' => Message::OrderReplace {
            header,
            original_order_reference_number: r.u64(),
            new_order_reference_number: r.u64(),
            shares: r.u32(),
            price: r.u32(),
        },
        b'P' => Message::Trade(Trade {
            header,
            order_reference_number: r.u64(),
            side: r.u8(),
            shares: r.u32(),
            stock: r.symbol(),
            price: r.u32(),
            match_number: r.u64(),
        }),
        b'Q' => Message::CrossTrade(CrossTrade {
            header,
            shares: r.u64(),
            stock: r.symbol(),
            cross_price: r.u32(),
            match_number: r.u64(),
            cross_type: r.u8(),
        }),
        b'B' => Message::BrokenTrade {
            header,
            match_number: r.u64(),
        },
        _ => Message::Other { header },
    })
}

/// Counts one block's decoding in the ITCH counters.
pub fn tally(
    counters: &mut fixscope_model::counters::ItchCounters,
    r: &Result<Message, ItchError>,
) {
    match r {
        Ok(_) => counters.itch_messages += 1,
        Err(ItchError::UnknownType(_)) => counters.itch_unknown_types += 1,
        Err(_) => counters.itch_undecodable_messages += 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each type's fields after the 11-byte header, with their widths, as the spec (and
    /// OMI's dissector) lists them: the size table must be their sum.
    const FIELDS: &[(u8, &[usize])] = &[
        (b'S', &[1]),
        (b'R', &[8, 1, 1, 4, 1, 1, 2, 1, 1, 1, 1, 1, 4, 1]),
        (b'H', &[8, 1, 1, 4]),
        (b'Y', &[8, 1]),
        (b'L', &[4, 8, 1, 1, 1]),
        (b'V', &[8, 8, 8]),
        (b'W', &[1]),
        (b'K', &[8, 4, 1, 4]),
        (b'J', &[8, 4, 4, 4, 4]),
        (b'h', &[8, 1, 1]),
        (b'A', &[8, 1, 4, 8, 4]),
        (b'F', &[8, 1, 4, 8, 4, 4]),
        (b'E', &[8, 4, 8]),
        (b'C', &[8, 4, 8, 1, 4]),
        (b'X', &[8, 4]),
        (b'D', &[8]),
        (b'U', &[8, 8, 4, 4]),
        (b'P', &[8, 1, 4, 8, 4, 8]),
        (b'Q', &[8, 8, 4, 8, 1]),
        (b'B', &[8]),
        (b'I', &[8, 8, 1, 8, 4, 4, 4, 1, 1]),
        (b'N', &[8, 1]),
        (b'O', &[8, 1, 4, 4, 4, 8, 4, 4]),
    ];

    #[test]
    fn every_size_is_the_sum_of_its_fields_and_no_other_type_has_one() {
        for &(t, widths) in FIELDS {
            let sum = HEADER_LEN + widths.iter().sum::<usize>();
            assert_eq!(expected_size(t), Some(sum), "{}", char::from(t));
        }
        let known = (0..=255u8).filter(|&t| expected_size(t).is_some()).count();
        assert_eq!(known, FIELDS.len());
    }

    #[test]
    fn the_header_timestamp_is_six_bytes_big_endian() {
        let mut m = vec![b'D', 0x01, 0x02, 0x00, 0x07];
        m.extend_from_slice(&[0x00, 0x1f, 0x4b, 0x2e, 0x5f, 0x15]);
        m.extend_from_slice(&42u64.to_be_bytes());
        let got = decode(&m).expect("decodes");
        assert_eq!(
            got,
            Message::OrderDelete {
                header: Header {
                    message_type: b'D',
                    stock_locate: 0x0102,
                    tracking_number: 7,
                    timestamp_ns: 0x001f_4b2e_5f15,
                },
                order_reference_number: 42,
            }
        );
    }

    #[test]
    fn a_block_of_another_size_than_its_type_is_an_error() {
        let d = [b'D'; size::ORDER_DELETE];
        assert!(decode(&d).is_ok());
        assert_eq!(
            decode(&d[..18]),
            Err(ItchError::Length {
                message_type: b'D',
                expected: 19,
                got: 18
            })
        );
        let mut long = d.to_vec();
        long.push(0);
        assert!(matches!(
            decode(&long),
            Err(ItchError::Length { got: 20, .. })
        ));
        assert_eq!(decode(&[]), Err(ItchError::Empty));
        assert_eq!(decode(b"zzz"), Err(ItchError::UnknownType(b'z')));
        let mut c = fixscope_model::counters::ItchCounters::default();
        for r in [decode(&d), decode(&d[..3]), decode(b"z"), decode(&[])] {
            tally(&mut c, &r);
        }
        assert_eq!(
            (
                c.itch_messages,
                c.itch_undecodable_messages,
                c.itch_unknown_types
            ),
            (1, 2, 1)
        );
    }
}
