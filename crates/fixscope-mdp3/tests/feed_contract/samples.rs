//! Entries and messages the tests share.

use fixscope_mdp3::encode;
use fixscope_mdp3::messages::{BookEntry, TradeEntry};

pub fn book_entry(security_id: i32, rpt_seq: u32, px: Option<i64>) -> BookEntry {
    BookEntry {
        md_entry_px: px,
        md_entry_size: px.map(|p| (p % 1000) as i32 + 1),
        security_id,
        rpt_seq,
        number_of_orders: Some(3),
        md_price_level: 1,
        md_update_action: (rpt_seq % 3) as u8,
        md_entry_type: if rpt_seq.is_multiple_of(2) {
            b'0'
        } else {
            b'1'
        },
    }
}

pub fn trade_entry(security_id: i32, rpt_seq: u32) -> TradeEntry {
    TradeEntry {
        md_entry_px: 4_500_250_000_000 + i64::from(rpt_seq),
        md_entry_size: 7,
        security_id,
        rpt_seq,
        number_of_orders: 2,
        aggressor_side: Some(1),
        md_update_action: 0,
        md_trade_entry_id: Some(rpt_seq * 10),
    }
}

/// One book update of `entries` (SecurityID, RptSeq).
pub fn book(entries: &[(i32, u32)]) -> Vec<u8> {
    let e: Vec<_> = entries
        .iter()
        .map(|&(s, r)| book_entry(s, r, Some(4_500_000_000_000 + i64::from(r))))
        .collect();
    encode::book(1_700_000_000_000_000_000, &e)
}
