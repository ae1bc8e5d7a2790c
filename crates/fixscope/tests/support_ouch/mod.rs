//! OUCH 4.2 packets the OUCH tests send (ouch_pcap.rs, ouch_live.rs), laid out by the
//! protocol crate's encoder from the spec's layouts.

#![allow(dead_code)]

use fixscope_ouch::encode::ouch42_packet;
use fixscope_ouch::ouch42::{Accepted, EnterOrder, Message};

/// An Enter Order of `shares` AAPL under `token`.
pub fn enter42(token: &[u8; 14], shares: u32) -> Vec<u8> {
    enter42_of(token, shares, b"AAPL")
}

/// An Enter Order of `shares` of `stock` under `token`.
pub fn enter42_of(token: &[u8; 14], shares: u32, stock: &[u8]) -> Vec<u8> {
    ouch42_packet(&Message::EnterOrder(EnterOrder {
        token,
        side: b'B',
        shares,
        stock,
        price: 1_895_000,
        time_in_force: 99_999,
        firm: b"FRM1",
        display: b'Y',
        capacity: b'A',
        iso_eligibility: b'N',
        min_quantity: 0,
        cross_type: b'N',
        customer_type: b'R',
    }))
}

/// Its Accepted, stamped `ts` by the host.
pub fn accepted42(token: &[u8; 14], shares: u32, ts: u64) -> Vec<u8> {
    ouch42_packet(&Message::Accepted(accepted42_of(
        token, shares, b"AAPL", ts,
    )))
}

/// The Accepted of an order of `stock`, stamped `ts` by the host (a Replaced's too).
pub fn accepted42_of<'a>(
    token: &'a [u8; 14],
    shares: u32,
    stock: &'a [u8],
    ts: u64,
) -> Accepted<'a> {
    Accepted {
        timestamp_ns: ts,
        token,
        side: b'B',
        shares,
        stock,
        price: 1_895_000,
        time_in_force: 99_999,
        firm: b"FRM1",
        display: b'Y',
        order_reference_number: 77_000_001,
        capacity: b'A',
        iso_eligibility: b'N',
        min_quantity: 0,
        cross_type: b'N',
        order_state: b'L',
        bbo_weight_indicator: b'2',
    }
}

/// An execution of `shares` of it.
pub fn executed42(token: &[u8; 14], shares: u32, ts: u64) -> Vec<u8> {
    ouch42_packet(&Message::Executed {
        timestamp_ns: ts,
        token,
        executed_shares: shares,
        execution_price: 1_894_900,
        liquidity_flag: b'A',
        match_number: 5_550_001,
    })
}

/// A 14-byte Order Token: `prefix` and `i`, padded with spaces.
pub fn token(prefix: &str, i: usize) -> [u8; 14] {
    let mut t = [b' '; 14];
    let s = format!("{prefix}{i:07}");
    let n = s.len().min(14);
    t[..n].copy_from_slice(&s.as_bytes()[..n]);
    t
}
