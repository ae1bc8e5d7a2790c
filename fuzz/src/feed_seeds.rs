//! Seeds of the market-data targets, built with each crate's encoder: a MoldUDP64 / ITCH
//! 5.0 A/B pair and an MDP 3.0 channel's A/B pair — every message type read, packets lost
//! on one feed, duplicates, reordering, retransmissions, heartbeats, a session change or
//! channel reset mid-capture, group-bearing messages, damaged datagrams — as
//! [`crate::script::datagrams_script`] captures.

use fixscope_itch::encode as ie;
use fixscope_itch::encode::itch_header_of as ih;
use fixscope_itch::itch50::{AddOrder, CrossTrade, Message, StockDirectory, Symbol, Trade};
use fixscope_mdp3::encode as me;
use fixscope_mdp3::messages::{BookEntry, OrderEntry, TradeEntry, VolumeEntry};

use crate::script::datagrams_script;

const A: usize = 0;
const B: usize = 1;
const OPEN: u64 = 34_200_000_000_001;

/// One ITCH message of each type read whole.
fn itch_messages() -> Vec<Vec<u8>> {
    let aapl = Symbol::new(b"AAPL");
    let m = [
        Message::SystemEvent {
            header: ih(b'S', 0, OPEN - 10),
            event_code: b'O',
        },
        Message::StockDirectory(StockDirectory {
            header: ih(b'R', 7, OPEN - 5),
            stock: aapl,
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
        Message::AddOrder(AddOrder {
            header: ih(b'A', 7, OPEN),
            order_reference_number: 1001,
            side: b'B',
            shares: 100,
            stock: aapl,
            price: 1_895_000,
            attribution: None,
        }),
        Message::AddOrder(AddOrder {
            header: ih(b'F', 7, OPEN + 1),
            order_reference_number: 1002,
            side: b'S',
            shares: 200,
            stock: aapl,
            price: 1_895_100,
            attribution: Some(*b"GSCO"),
        }),
        Message::OrderExecuted {
            header: ih(b'E', 7, OPEN + 2),
            order_reference_number: 1001,
            executed_shares: 40,
            match_number: 900_001,
        },
        Message::OrderExecutedWithPrice {
            header: ih(b'C', 7, OPEN + 3),
            order_reference_number: 1001,
            executed_shares: 10,
            match_number: 900_002,
            printable: b'Y',
            execution_price: 1_894_900,
        },
        Message::OrderCancel {
            header: ih(b'X', 7, OPEN + 4),
            order_reference_number: 1001,
            canceled_shares: 25,
        },
        Message::OrderReplace {
            header: ih(b'U', 7, OPEN + 5),
            original_order_reference_number: 1002,
            new_order_reference_number: 1003,
            shares: 150,
            price: 1_895_200,
        },
        Message::OrderDelete {
            header: ih(b'D', 7, OPEN + 6),
            order_reference_number: 1003,
        },
        Message::Trade(Trade {
            header: ih(b'P', 7, OPEN + 7),
            order_reference_number: 0,
            side: b'B',
            shares: 300,
            stock: aapl,
            price: 1_895_000,
            match_number: 900_003,
        }),
        Message::CrossTrade(CrossTrade {
            header: ih(b'Q', 7, OPEN + 8),
            shares: 5_000,
            stock: aapl,
            cross_price: 1_895_000,
            match_number: 900_004,
            cross_type: b'O',
        }),
        Message::BrokenTrade {
            header: ih(b'B', 7, OPEN + 9),
            match_number: 900_003,
        },
        // An order for a locate no Stock Directory named.
        Message::OrderDelete {
            header: ih(b'D', 999, OPEN + 10),
            order_reference_number: 5,
        },
        Message::Other {
            header: ih(b'H', 7, OPEN + 11),
        },
    ];
    m.iter().map(ie::message).collect()
}

/// Packets of `session` from `first`, `per` messages each, numbered on.
fn itch_packets(session: &[u8], first: u64, msgs: &[Vec<u8>], per: usize) -> Vec<Vec<u8>> {
    let mut seq = first;
    msgs.chunks(per)
        .map(|c| {
            let refs: Vec<&[u8]> = c.iter().map(|m| m.as_slice()).collect();
            let p = ie::downstream(session, seq, &refs);
            seq += c.len() as u64;
            p
        })
        .collect()
}

/// `(name, script)` of the `moldudp64_itch` seeds.
pub(crate) fn moldudp64_itch() -> Vec<(String, Vec<u8>)> {
    let msgs = itch_messages();
    let s1 = b"SESSION001";
    let p = itch_packets(s1, 1, &msgs, 3);
    // p[0] 1..=3, p[1] 4..=6, p[2] 7..=9, p[3] 10..=12, p[4] 13..=14.
    let next = 1 + msgs.len() as u64;
    let ab: Vec<(usize, u8, &[u8])> = vec![
        (A, 1, &p[0]),
        (B, 1, &p[0]),
        (B, 2, &p[1]),
        (A, 1, &p[1]),
        // p[2] lost on A, p[3] on B: each feed covers for the other.
        (B, 1, &p[2]),
        (A, 1, &p[3]),
        (A, 25, &p[4]),
        (B, 0, &p[4]),
        (B, 0, &p[4]),
        (A, 1, b"SESSION001\0\0\0\0\0\0\0\x0f\0\0"),
    ];
    let hb = ie::heartbeat(s1, next);
    let request = ie::request(s1, 7, 3);
    let eos = ie::end_of_session(s1, next);
    let mut abv = ab.clone();
    abv.push((A, 1, &hb));
    abv.push((B, 0, &hb));
    abv.push((A, 1, &request));
    abv.push((A, 1, &eos));
    // Feed A: a gap, the late packet, a retransmission of both, a duplicate.
    let gap: Vec<(usize, u8, &[u8])> = vec![
        (A, 1, &p[0]),
        (A, 1, &p[2]),
        (A, 1, &p[3]),
        (A, 1, &p[1]),
        (A, 40, &p[1]),
        (A, 0, &p[2]),
        (A, 0, &hb),
    ];
    // A feed that restarts mid-capture: a new session numbered from 1, then the old one
    // again (a late copy), and damaged datagrams: truncated, a count above the blocks, a
    // block past the end, trailing bytes, a sequence number about to wrap.
    let s2 = b"SESSION002";
    let p2 = itch_packets(s2, 1, &msgs[..4], 2);
    let mut too_many = p[0].clone();
    too_many[19] = 9;
    let mut overrun = p[1].clone();
    overrun[20] = 0xff;
    let mut trailing = p[2].clone();
    trailing.push(0);
    let wrap = ie::downstream(s2, u64::MAX - 1, &[&msgs[0], &msgs[1]]);
    let near_wrap = ie::downstream(s2, u64::MAX - 2, &[&msgs[0], &msgs[1]]);
    let hb2 = ie::heartbeat(s2, 3);
    let restart: Vec<(usize, u8, &[u8])> = vec![
        (A, 1, &p[0]),
        (A, 1, &p[1]),
        (A, 20, &p2[0]),
        (A, 1, &p2[1]),
        (A, 1, &p[2]),
        (A, 1, &p[0][..30]),
        (A, 1, &p[0][..10]),
        (A, 1, &too_many),
        (A, 1, &overrun),
        (A, 1, &trailing),
        (A, 1, &wrap),
        (A, 1, &near_wrap),
        (B, 1, &near_wrap),
        (A, 1, &hb2),
    ];
    vec![
        ("ab-pair".into(), datagrams_script(&abv)),
        ("gap-recovery-duplicates".into(), datagrams_script(&gap)),
        ("session-change-damaged".into(), datagrams_script(&restart)),
    ]
}

const SENT: u64 = 1_700_000_000_000_000_000;

fn book_entry(security_id: i32, rpt_seq: u32) -> BookEntry {
    BookEntry {
        md_entry_px: Some(4_500_000_000_000 + i64::from(rpt_seq)),
        md_entry_size: Some(5),
        security_id,
        rpt_seq,
        number_of_orders: Some(3),
        md_price_level: 1,
        md_update_action: (rpt_seq % 3) as u8,
        md_entry_type: b'0' + (rpt_seq % 2) as u8,
    }
}

fn trade_entry(security_id: i32, rpt_seq: u32) -> TradeEntry {
    TradeEntry {
        md_entry_px: 4_500_250_000_000,
        md_entry_size: 7,
        security_id,
        rpt_seq,
        number_of_orders: 2,
        aggressor_side: Some(1),
        md_update_action: 0,
        md_trade_entry_id: Some(rpt_seq * 10),
    }
}

/// The messages of a channel's packets 1..: definitions, books, trades, order book,
/// volume, status, a snapshot, heartbeats.
fn mdp3_messages() -> Vec<Vec<Vec<u8>>> {
    let t = SENT - 1_000;
    vec![
        vec![
            me::instrument_definition_future(1, b"ESZ6", b"ES"),
            me::instrument_definition_future(2, b"NQZ6", b"NQ"),
        ],
        vec![me::book(t, &[book_entry(1, 1), book_entry(2, 1)])],
        vec![
            me::trade_summary_builder(t + 1, &[trade_entry(1, 2)], &[(9001, 3), (9002, 4)])
                .finish(),
            me::book_builder(t + 1, 0x80, &[book_entry(1, 3)], &[9001]).finish(),
        ],
        vec![me::order_book(
            t + 2,
            &[OrderEntry {
                order_id: Some(9003),
                md_order_priority: Some(1),
                md_entry_px: Some(4_500_000_000_000),
                md_display_qty: Some(2),
                security_id: 2,
                md_update_action: 0,
                md_entry_type: b'1',
            }],
        )],
        vec![
            me::volume(
                t + 3,
                &[VolumeEntry {
                    md_entry_size: 1000,
                    security_id: 2,
                    rpt_seq: 2,
                    md_update_action: 0,
                }],
            ),
            me::security_status(t + 3, b"ES", Some(1), 17),
            me::security_status(t + 3, b"ES", None, 21),
        ],
        // Instrument 1 jumps from RptSeq 3 to 6; instrument 3 was never defined.
        vec![me::book(t + 4, &[book_entry(1, 6), book_entry(3, 1)])],
        vec![me::snapshot_full_refresh(6, 1, 6, t + 5), me::heartbeat()],
        vec![me::book(t + 6, &[book_entry(1, 4), book_entry(1, 5)])],
    ]
}

fn mdp3_packets(first_seq: u32, sent: u64, msgs: &[Vec<Vec<u8>>]) -> Vec<Vec<u8>> {
    msgs.iter()
        .enumerate()
        .map(|(i, m)| {
            let refs: Vec<&[u8]> = m.iter().map(|m| m.as_slice()).collect();
            me::packet(first_seq + i as u32, sent + i as u64 * 1_000, &refs)
        })
        .collect()
}

/// `(name, script)` of the `mdp3` seeds.
pub(crate) fn mdp3() -> Vec<(String, Vec<u8>)> {
    let msgs = mdp3_messages();
    let p = mdp3_packets(1, SENT, &msgs);
    let ab: Vec<(usize, u8, &[u8])> = vec![
        (A, 1, &p[0]),
        (B, 1, &p[0]),
        (B, 1, &p[1]),
        (A, 2, &p[1]),
        // p[2] lost on B, p[3] lost on A.
        (A, 1, &p[2]),
        (B, 1, &p[3]),
        (A, 1, &p[4]),
        (B, 0, &p[4]),
        (A, 25, &p[5]),
        (B, 0, &p[6]),
        (A, 0, &p[6]),
        (A, 1, &p[7]),
        (A, 0, &p[7]),
    ];
    // Feed A: a gap, the late packet, a duplicate; then a channel reset (a new epoch)
    // and a weekly restart at 1, a packet of the old epoch arriving late.
    let reset_at = SENT + 100_000;
    let reset = me::packet(20, reset_at, &[&me::channel_reset(reset_at - 5, 310)]);
    let after_reset = mdp3_packets(21, reset_at + 1_000, &msgs[..3]);
    let restart = mdp3_packets(1, reset_at + 50_000, &msgs[..2]);
    let epochs: Vec<(usize, u8, &[u8])> = vec![
        (A, 1, &p[0]),
        (A, 1, &p[2]),
        (A, 1, &p[1]),
        (A, 1, &p[1]),
        (A, 1, &p[3]),
        (A, 1, &reset),
        (A, 1, &after_reset[0]),
        (A, 1, &after_reset[2]),
        (A, 1, &p[4]),
        (A, 1, &restart[0]),
        (A, 1, &restart[1]),
        (A, 0, &after_reset[1]),
    ];
    // Damaged datagrams: truncated, a MsgSize past the packet or below the header, bytes
    // left over, another schema id, a BlockLength past the message, a group whose
    // entries run past the message, entries too short for RptSeq, an unset SendingTime,
    // MsgSeqNum at its largest.
    let book = me::book(SENT, &[book_entry(1, 1)]);
    let pk = |seq: u32, m: &[u8]| me::packet(seq, SENT, &[m]);
    let mut other_schema = book.clone();
    other_schema[6] = 9;
    let mut long_block = book.clone();
    long_block[2..4].copy_from_slice(&1000u16.to_le_bytes());
    let long_group = me::book_builder(SENT, 0x80, &[book_entry(1, 1)], &[])
        .trailing(&[])
        .finish();
    let mut group_past = long_group.clone();
    let root = 10 + usize::from(u16::from_le_bytes([long_group[2], long_group[3]]));
    let dim = fixscope_mdp3::schema::md_incremental_refresh_book_46::no_md_entries::GROUP.dimension;
    group_past[root + dim.num_in_group.offset] = 40;
    let short_entries = me::book_builder(SENT, 0x80, &[book_entry(1, 1)], &[])
        .group_block_length(0, 8)
        .finish();
    let mut size_past = pk(1, &book);
    size_past[12] = 0xff;
    let mut size_short = pk(1, &book);
    size_short[12..14].copy_from_slice(&4u16.to_le_bytes());
    let mut left_over = pk(1, &book);
    left_over.push(7);
    let damaged_msgs = [
        pk(1, &other_schema),
        pk(2, &long_block),
        pk(3, &group_past),
        pk(4, &short_entries),
        pk(5, &book),
        me::packet(6, 0, &[&me::heartbeat()]),
        me::packet(7, u64::MAX, &[&me::heartbeat()]),
        me::packet(u32::MAX, SENT + 9, &[&book]),
        me::packet(u32::MAX, SENT + 9, &[&book]),
    ];
    let mut damaged: Vec<(usize, u8, &[u8])> = vec![
        (A, 1, &p[0][..11]),
        (A, 1, &size_past),
        (A, 1, &size_short),
        (A, 1, &left_over),
    ];
    for d in &damaged_msgs {
        damaged.push((A, 1, d));
        damaged.push((B, 0, d));
    }
    vec![
        ("ab-channel".into(), datagrams_script(&ab)),
        ("gap-reset-restart".into(), datagrams_script(&epochs)),
        ("damaged".into(), datagrams_script(&damaged)),
    ]
}
