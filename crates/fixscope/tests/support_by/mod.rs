//! Binary order sessions whose orders are on a few instruments, each order's truth kept
//! by the script that sends it (by_binary.rs, records_binary.rs): which value of the
//! protocol's instrument field it carries, its key, its message type as the protocol
//! names it, its ack latency.
//!
//! OUCH 4.2: eighteen orders on AAPL, MSFT and QQQ (acks per stock from its base, a
//! microsecond more for each next order of it); a Replace of the first AAPL order (a
//! Replace carries no stock: its value is its Replaced's); a Cancel of the first MSFT order
//! (neither it nor its Canceled carries one: `(none)`). OUCH 5.0: twelve orders on two
//! symbols, keyed by UserRefNum, sold and bought in turn. iLink 3: eighteen orders on three
//! SecurityIDs, buys and sells in turn, and a cancel of the first (an OrderCancelRequest516
//! carries its SecurityID).

#![allow(dead_code)]

use fixscope_core::pcap_writer::SyntheticConnection;
use fixscope_ilink3::encode;
use fixscope_ilink3::messages::Request;
use fixscope_ouch::encode::{login_accepted, login_request, ouch42_packet, ouch50_packet};
use fixscope_ouch::ouch42::{Message, ReplaceOrder, Replaced};
use fixscope_ouch::ouch50;

use crate::support::{at, endpoint, TimedPacket};
use crate::support_ilink3::{report, CANCELED, FIRM, NEW, UUID};
use crate::support_ouch::{accepted42_of, enter42_of, token};

/// One order as the script sent it.
#[derive(Clone, Debug)]
pub struct Order {
    /// Its `--by` value of the instrument field (`None`: `(none)`).
    pub value: Option<String>,
    /// What its request itself carried of the instrument and the side (the records').
    pub symbol: String,
    pub side: String,
    /// Its key as the records show it (token, UserRefNum, OrderRequestID).
    pub key: String,
    /// Its request's message type as the protocol names it.
    pub msg_type: &'static str,
    pub ack_ns: u64,
}

/// Per `--by` value: the value, the requests that carried it, its acks (sorted).
pub type ByRows = Vec<(String, u64, Vec<u64>)>;

/// A capture and its truth.
pub struct Script {
    pub packets: Vec<TimedPacket>,
    pub orders: Vec<Order>,
    pub port: u16,
    /// `--protocol`'s name.
    pub protocol: &'static str,
    /// The session table's names of its one session.
    pub sender: String,
    pub target: String,
}

impl Script {
    /// `--protocol PORT=NAME`.
    pub fn protocol_flag(&self) -> String {
        format!("{}={}", self.port, self.protocol)
    }

    /// Per `--by` value (`(none)` for none): requests that carried it, and the acks.
    pub fn by_value(&self) -> ByRows {
        let mut out: ByRows = Vec::new();
        for o in &self.orders {
            let name = o.value.clone().unwrap_or_else(|| "(none)".into());
            let at = match out.iter().position(|(v, ..)| *v == name) {
                Some(at) => at,
                None => {
                    out.push((name, 0, Vec::new()));
                    out.len() - 1
                }
            };
            // A request is counted under the value it carried itself.
            if o.value.as_deref() == Some(o.symbol.as_str()) {
                out[at].1 += 1;
            }
            out[at].2.push(o.ack_ns);
        }
        for (_, _, acks) in &mut out {
            acks.sort_unstable();
        }
        out
    }
}

pub const OUCH_STOCKS: [(&str, u64); 3] = [("AAPL", 20_000), ("MSFT", 33_000), ("QQQ", 47_000)];
pub const OUCH_REPLACE_NS: u64 = 61_000;
pub const OUCH_CANCEL_NS: u64 = 52_000;
pub const ORDERS: usize = 18;

fn fixed<const N: usize>(text: &str) -> [u8; N] {
    let mut b = [b' '; N];
    b[..text.len()].copy_from_slice(text.as_bytes());
    b
}

/// An OUCH 4.2 session (USER01 on SESSION042) on port 15001.
pub fn ouch42() -> Script {
    const PORT: u16 = 15001;
    let t0 = 1_700_000_000_000_000_000u64;
    let mut c = SyntheticConnection::new(endpoint(false, 2, 40_000), endpoint(false, 1, PORT));
    let mut packets: Vec<TimedPacket> = c.handshake().into_iter().map(|p| at(t0, p)).collect();
    let login = login_request(b"USER01", b"pw", b"", Some(1));
    packets.push(at(t0 + 1_000, c.client_sends(&login)));
    let accepted = login_accepted(b"SESSION042", 1);
    packets.push(at(t0 + 2_000, c.server_sends(&accepted)));
    let mut orders = Vec::new();
    let stocks: Vec<[u8; 8]> = OUCH_STOCKS.iter().map(|(s, _)| fixed(s)).collect();
    let tokens: Vec<[u8; 14]> = (0..ORDERS).map(|i| token("ORD", i)).collect();
    for i in 0..ORDERS {
        let (stock, base) = OUCH_STOCKS[i % 3];
        let ack = base + (i / 3) as u64 * 1_000;
        let t = t0 + 1_000_000 + i as u64 * 1_000_000;
        let enter = enter42_of(&tokens[i], 300, &stocks[i % 3]);
        packets.push(at(t, c.client_sends(&enter)));
        let a = accepted42_of(&tokens[i], 300, &stocks[i % 3], t);
        packets.push(at(
            t + ack,
            c.server_sends(&ouch42_packet(&Message::Accepted(a))),
        ));
        orders.push(Order {
            value: Some(stock.into()),
            symbol: stock.into(),
            side: "B".into(),
            key: format!("ORD{i:07}"),
            msg_type: "O",
            ack_ns: ack,
        });
    }
    // The first AAPL order replaced: its value is the Replaced's.
    let t = t0 + 100_000_000;
    let rpl = token("RPL", 0);
    let replace = ouch42_packet(&Message::ReplaceOrder(ReplaceOrder {
        existing_token: &tokens[0],
        replacement_token: &rpl,
        shares: 200,
        price: 1_895_000,
        time_in_force: 99_999,
        display: b'Y',
        iso_eligibility: b'N',
        min_quantity: 0,
    }));
    packets.push(at(t, c.client_sends(&replace)));
    let replaced = ouch42_packet(&Message::Replaced(Replaced {
        accepted: accepted42_of(&rpl, 200, &stocks[0], t),
        previous_token: &tokens[0],
    }));
    packets.push(at(t + OUCH_REPLACE_NS, c.server_sends(&replaced)));
    orders.push(Order {
        value: Some("AAPL".into()),
        symbol: String::new(),
        side: String::new(),
        key: "RPL0000000".into(),
        msg_type: "U",
        ack_ns: OUCH_REPLACE_NS,
    });
    // The first MSFT order cancelled: no stock on either side.
    let t = t0 + 110_000_000;
    let cancel = ouch42_packet(&Message::CancelOrder {
        token: &tokens[1],
        shares: 0,
    });
    packets.push(at(t, c.client_sends(&cancel)));
    let canceled = ouch42_packet(&Message::Canceled {
        timestamp_ns: t,
        token: &tokens[1],
        decrement_shares: 300,
        reason: b'U',
    });
    packets.push(at(t + OUCH_CANCEL_NS, c.server_sends(&canceled)));
    orders.push(Order {
        value: None,
        symbol: String::new(),
        side: String::new(),
        key: "ORD0000001".into(),
        msg_type: "X",
        ack_ns: OUCH_CANCEL_NS,
    });
    Script {
        packets,
        orders,
        port: PORT,
        protocol: "ouch42",
        sender: "USER01".into(),
        target: "SESSION042".into(),
    }
}

pub const OUCH50_SYMBOLS: [(&str, u64); 2] = [("SPY", 14_000), ("TSLA", 29_000)];

/// An OUCH 5.0 session (TRDR5 on SESS5) on port 15050.
pub fn ouch50() -> Script {
    const PORT: u16 = 15050;
    let t0 = 1_700_000_000_000_000_000u64;
    let mut c = SyntheticConnection::new(endpoint(false, 2, 41_000), endpoint(false, 1, PORT));
    let mut packets: Vec<TimedPacket> = c.handshake().into_iter().map(|p| at(t0, p)).collect();
    let login = login_request(b"TRDR5", b"x", b"", Some(1));
    packets.push(at(t0 + 1_000, c.client_sends(&login)));
    packets.push(at(t0 + 2_000, c.server_sends(&login_accepted(b"SESS5", 1))));
    let symbols: Vec<[u8; 8]> = OUCH50_SYMBOLS.iter().map(|(s, _)| fixed(s)).collect();
    let mut orders = Vec::new();
    for i in 0..12u32 {
        let (symbol, base) = OUCH50_SYMBOLS[(i % 2) as usize];
        let bytes = &symbols[(i % 2) as usize];
        let side = if i % 4 < 2 { b'S' } else { b'B' };
        let ack = base + u64::from(i / 2) * 1_000;
        let t = t0 + 1_000_000 + u64::from(i) * 1_000_000;
        let urn = 100 + i;
        let enter = ouch50_packet(&ouch50::Message::EnterOrder(ouch50::EnterOrder {
            user_ref_num: urn,
            side,
            quantity: 500,
            symbol: bytes,
            price: 4_100_000,
            time_in_force: b'0',
            display: b'Y',
            capacity: b'A',
            iso_eligibility: b'N',
            cross_type: b'N',
            cl_ord_id: b"CL0000000000001",
            appendage: ouch50::Appendage { bytes: &[] },
        }));
        packets.push(at(t, c.client_sends(&enter)));
        let accepted = ouch50_packet(&ouch50::Message::Accepted(ouch50::Accepted {
            timestamp_ns: t,
            user_ref_num: urn,
            side,
            quantity: 500,
            symbol: bytes,
            price: 4_100_000,
            time_in_force: b'0',
            display: b'Y',
            order_reference_number: 9_000 + u64::from(urn),
            capacity: b'A',
            iso_eligibility: b'N',
            cross_type: b'N',
            order_state: b'L',
            cl_ord_id: b"CL0000000000001",
            appendage: ouch50::Appendage { bytes: &[] },
        }));
        packets.push(at(t + ack, c.server_sends(&accepted)));
        orders.push(Order {
            value: Some(symbol.into()),
            symbol: symbol.into(),
            side: (side as char).to_string(),
            key: urn.to_string(),
            msg_type: "O",
            ack_ns: ack,
        });
    }
    Script {
        packets,
        orders,
        port: PORT,
        protocol: "ouch50",
        sender: "TRDR5".into(),
        target: "SESS5".into(),
    }
}

pub const ILINK3_SECURITIES: [(i64, u64); 3] =
    [(42_000, 23_000), (51_000, 31_000), (77_000, 45_000)];
pub const ILINK3_CANCEL_NS: u64 = 61_000;

/// An iLink 3 session (its UUID, of FIRM) on port 15301.
pub fn ilink3() -> Script {
    const PORT: u16 = 15301;
    let t0 = 1_733_011_200_000_000_000u64;
    let mut c = SyntheticConnection::new(endpoint(false, 2, 40_000), endpoint(false, 1, PORT));
    let mut packets: Vec<TimedPacket> = c.handshake().into_iter().map(|p| at(t0, p)).collect();
    let session = [
        (true, encode::negotiate(UUID, FIRM, t0)),
        (false, encode::negotiation_response(UUID, t0)),
        (true, encode::establish(UUID, FIRM, t0 + 1, 1)),
        (false, encode::establishment_ack(UUID, t0 + 1, 1)),
    ];
    for (i, (client, bytes)) in session.into_iter().enumerate() {
        let ts = t0 + 1_000 * (i as u64 + 1);
        let p = if client {
            c.client_sends(&bytes)
        } else {
            c.server_sends(&bytes)
        };
        packets.push(at(ts, p));
    }
    let (mut client_seq, mut host_seq) = (1u32, 1u32);
    let mut orders = Vec::new();
    let request = |seq: u32, id: u64, order_id: Option<u64>, security: i64, side: u8, ts| Request {
        security_id: Some(security),
        side: Some(side),
        ..crate::support_ilink3::request(seq, id, order_id, ts)
    };
    for i in 0..ORDERS {
        let (security, base) = ILINK3_SECURITIES[i % 3];
        let side = 1 + (i % 2) as u8;
        let ack = base + (i / 3) as u64 * 1_000;
        let t = t0 + 1_000_000 + i as u64 * 1_000_000;
        let id = 1_000 + i as u64;
        let r = request(client_seq, id, None, security, side, t);
        client_seq += 1;
        packets.push(at(t, c.client_sends(&encode::new_order(&r))));
        let new = report(NEW, host_seq, id, 9_000 + i as u64, 3);
        host_seq += 1;
        packets.push(at(t + ack, c.server_sends(&encode::report(&new))));
        orders.push(Order {
            value: Some(security.to_string()),
            symbol: security.to_string(),
            side: side.to_string(),
            key: id.to_string(),
            msg_type: "514",
            ack_ns: ack,
        });
    }
    // The first order cancelled, under the cancel's own OrderRequestID.
    let t = t0 + 100_000_000;
    let (security, _) = ILINK3_SECURITIES[0];
    let r = Request {
        price: None,
        order_qty: None,
        ..request(client_seq, 2_000, Some(9_000), security, 1, t)
    };
    packets.push(at(t, c.client_sends(&encode::cancel(&r))));
    let canceled = report(CANCELED, host_seq, 2_000, 9_000, 0);
    packets.push(at(
        t + ILINK3_CANCEL_NS,
        c.server_sends(&encode::report(&canceled)),
    ));
    orders.push(Order {
        value: Some(security.to_string()),
        symbol: security.to_string(),
        side: "1".into(),
        key: "2000".into(),
        msg_type: "516",
        ack_ns: ILINK3_CANCEL_NS,
    });
    Script {
        packets,
        orders,
        port: PORT,
        protocol: "ilink3",
        sender: String::from_utf8_lossy(FIRM).into_owned(),
        target: UUID.to_string(),
    }
}
