//! Sample ITCH 5.0 messages, one of each type read whole, with values set here.

use fixscope_itch::encode::itch_header_of;
use fixscope_itch::itch50::{AddOrder, CrossTrade, Header, Message, StockDirectory, Symbol, Trade};

/// A header with every field set (the tracking number too).
pub fn header(t: u8, locate: u16, ts: u64) -> Header {
    Header {
        tracking_number: 0x0a0b,
        ..itch_header_of(t, locate, ts)
    }
}

/// 09:30:00.000000001, a timestamp that needs all 6 bytes' worth of ordering.
pub const OPEN: u64 = 34_200_000_000_001;

pub fn add_order(order_reference_number: u64) -> Message {
    Message::AddOrder(AddOrder {
        header: header(b'A', 7, OPEN),
        order_reference_number,
        side: b'B',
        shares: 100,
        stock: Symbol::new(b"AAPL"),
        price: 1_895_000,
        attribution: None,
    })
}

/// One message of each type read whole.
pub fn every_read_type() -> Vec<Message> {
    vec![
        Message::SystemEvent {
            header: header(b'S', 0, 3 * 3_600_000_000_000),
            event_code: b'O',
        },
        Message::StockDirectory(StockDirectory {
            header: header(b'R', 7, 3 * 3_600_000_000_000 + 5),
            stock: Symbol::new(b"AAPL"),
            market_category: b'Q',
            financial_status: b'N',
            round_lot_size: 100,
            round_lots_only: b'N',
            issue_classification: b'C',
            issue_sub_type: *b"Z ",
            authenticity: b'P',
            short_sale_threshold: b'N',
            ipo_flag: b' ',
            luld_reference_price_tier: b'1',
            etp_flag: b'N',
            etp_leverage_factor: 1,
            inverse_indicator: b'N',
        }),
        add_order(1001),
        Message::AddOrder(AddOrder {
            header: header(b'F', 7, OPEN + 1),
            order_reference_number: 1002,
            side: b'S',
            shares: 200,
            stock: Symbol::new(b"AAPL"),
            price: 1_895_100,
            attribution: Some(*b"GSCO"),
        }),
        Message::OrderExecuted {
            header: header(b'E', 7, OPEN + 2),
            order_reference_number: 1001,
            executed_shares: 40,
            match_number: 900_001,
        },
        Message::OrderExecutedWithPrice {
            header: header(b'C', 7, OPEN + 3),
            order_reference_number: 1001,
            executed_shares: 10,
            match_number: 900_002,
            printable: b'Y',
            execution_price: 1_894_900,
        },
        Message::OrderCancel {
            header: header(b'X', 7, OPEN + 4),
            order_reference_number: 1001,
            canceled_shares: 25,
        },
        Message::OrderReplace {
            header: header(b'U', 7, OPEN + 5),
            original_order_reference_number: 1002,
            new_order_reference_number: 1003,
            shares: 150,
            price: 1_895_200,
        },
        Message::OrderDelete {
            header: header(b'D', 7, OPEN + 6),
            order_reference_number: 1003,
        },
        Message::Trade(Trade {
            header: header(b'P', 7, OPEN + 7),
            order_reference_number: 0,
            side: b'B',
            shares: 300,
            stock: Symbol::new(b"AAPL"),
            price: 1_895_000,
            match_number: 900_003,
        }),
        Message::CrossTrade(CrossTrade {
            header: header(b'Q', 7, OPEN + 8),
            shares: 5_000_000_000,
            stock: Symbol::new(b"AAPL"),
            cross_price: 1_895_000,
            match_number: 900_004,
            cross_type: b'O',
        }),
        Message::BrokenTrade {
            header: header(b'B', 7, OPEN + 9),
            match_number: 900_003,
        },
    ]
}

/// The types read no further than their header.
pub const OTHER_TYPES: &[u8] = b"HYLVWKJhINO";
