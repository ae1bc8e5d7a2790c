//! Writes a binary order-flow capture for benchmarks (BENCHMARKS.md §11,
//! scripts/bench-binary.sh): the same order flow as `gen_capture`'s FIX, in OUCH 4.2 or
//! iLink 3.
//!
//! ```text
//! cargo run --release -p fixscope-core --example gen_binary_capture -- OUT.pcap \
//!     --protocol ouch42|ilink3 --orders N [--sessions S] [--port P] [--rate ORDERS_PER_S]
//! ```
//!
//! `S` sessions (default 8), each one TCP connection with its handshake and login
//! (SoupBinTCP Login Request / Accepted; iLink 3 Negotiate, Establish and their answers);
//! `N` orders in total, Poisson arrivals at `--rate` (default 700/s, as the FIX benchmark),
//! spread over the sessions; per order an ack 15–80 µs later and a full fill 20–400 µs after
//! the ack, each message in its own segment. The last line on stdout says what was written.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;

use fixscope_core::decode::LinkType;
use fixscope_core::pcap_writer::{
    CaptureFormat, CaptureWriter, SyntheticConnection, TcpPacketSpec,
};
use fixscope_core::Endpoint;

/// 2024-06-10 09:30:00 UTC, a Monday at the open.
const START_NS: u64 = 1_718_011_800_000_000_000;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
    fn exp_ns(&mut self, mean_ns: f64) -> u64 {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        (-(1.0 - u).ln() * mean_ns) as u64
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Protocol {
    Ouch42,
    Ilink3,
}

/// One session's messages: its login, and per order its request, ack and fill.
struct Messages {
    protocol: Protocol,
    session: u64,
    host_seq: u32,
}

impl Messages {
    /// (from the client?, bytes) of the login.
    fn login(&self) -> Vec<(bool, Vec<u8>)> {
        use fixscope_ilink3::encode as il;
        use fixscope_ouch::encode as ouch;
        let uuid = 1_000 + self.session;
        match self.protocol {
            Protocol::Ouch42 => vec![
                (
                    true,
                    ouch::login_request(
                        format!("U{}", self.session).as_bytes(),
                        b"pw",
                        b"",
                        Some(1),
                    ),
                ),
                (false, ouch::login_accepted(b"BENCHSESS1", 1)),
            ],
            Protocol::Ilink3 => vec![
                (true, il::negotiate(uuid, b"FIRM1", START_NS)),
                (false, il::negotiation_response(uuid, START_NS)),
                (true, il::establish(uuid, b"FIRM1", START_NS, 1)),
                (false, il::establishment_ack(uuid, START_NS, 1)),
            ],
        }
    }

    /// Order `i`'s request, ack and fill.
    fn order(&mut self, i: u64, ts: u64) -> [Vec<u8>; 3] {
        match self.protocol {
            Protocol::Ouch42 => {
                use fixscope_ouch::encode::ouch42_packet;
                use fixscope_ouch::ouch42::{Accepted, EnterOrder, Message};
                let mut token = [b' '; 14];
                let t = format!("T{}-{i}", self.session);
                token[..t.len().min(14)].copy_from_slice(&t.as_bytes()[..t.len().min(14)]);
                let token = &token;
                let enter = ouch42_packet(&Message::EnterOrder(EnterOrder {
                    token,
                    side: b'B',
                    shares: 100,
                    stock: b"AAPL    ",
                    price: 1_895_000,
                    time_in_force: 99_999,
                    firm: b"FRM1",
                    display: b'Y',
                    capacity: b'A',
                    iso_eligibility: b'N',
                    min_quantity: 0,
                    cross_type: b'N',
                    customer_type: b'R',
                }));
                let accepted = ouch42_packet(&Message::Accepted(Accepted {
                    timestamp_ns: ts % 86_400_000_000_000,
                    token,
                    side: b'B',
                    shares: 100,
                    stock: b"AAPL    ",
                    price: 1_895_000,
                    time_in_force: 99_999,
                    firm: b"FRM1",
                    display: b'Y',
                    order_reference_number: i,
                    capacity: b'A',
                    iso_eligibility: b'N',
                    min_quantity: 0,
                    cross_type: b'N',
                    order_state: b'L',
                    bbo_weight_indicator: b'2',
                }));
                let executed = ouch42_packet(&Message::Executed {
                    timestamp_ns: ts % 86_400_000_000_000,
                    token,
                    executed_shares: 100,
                    execution_price: 1_894_900,
                    liquidity_flag: b'A',
                    match_number: i,
                });
                [enter, accepted, executed]
            }
            Protocol::Ilink3 => {
                use fixscope_ilink3::encode;
                use fixscope_ilink3::messages::{Report, Request};
                use fixscope_ilink3::schema;
                let uuid = 1_000 + self.session;
                let request = Request {
                    seq_num: (i + 1) as u32,
                    order_request_id: i,
                    cl_ord_id: b"CL-BENCH",
                    order_id: None,
                    sending_time_ns: Some(ts),
                    security_id: Some(42_000),
                    side: Some(1),
                    order_qty: Some(3),
                    price: Some(4_512_250_000_000),
                };
                let report = |template_id, seq_num, leaves| Report {
                    template_id,
                    seq_num,
                    uuid,
                    cl_ord_id: b"CL-BENCH",
                    order_id: Some(9_000_000 + i),
                    order_request_id: Some(i),
                    poss_retrans: false,
                    sending_time_ns: Some(ts),
                    transact_time_ns: Some(ts),
                    leaves_qty: Some(leaves),
                    cum_qty: Some(3 - leaves),
                    last_qty: Some(3),
                    ord_status: Some(if leaves == 0 { 2 } else { 0 }),
                    delay_to_time_ns: None,
                };
                let (s1, s2) = (self.host_seq, self.host_seq + 1);
                self.host_seq += 2;
                [
                    encode::new_order(&request),
                    encode::report(&report(schema::execution_report_new_522::ID, s1, 3)),
                    encode::report(&report(
                        schema::execution_report_trade_outright_525::ID,
                        s2,
                        0,
                    )),
                ]
            }
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let out = PathBuf::from(args.next().expect("OUT.pcap"));
    let (mut protocol, mut orders, mut sessions, mut port, mut rate) =
        (None, 100_000u64, 8u64, 15_001u16, 700f64);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--protocol" => {
                protocol = Some(match value.as_str() {
                    "ouch42" => Protocol::Ouch42,
                    "ilink3" => Protocol::Ilink3,
                    other => panic!("--protocol ouch42|ilink3, not {other}"),
                })
            }
            "--orders" => orders = value.parse().expect("--orders N"),
            "--sessions" => sessions = value.parse().expect("--sessions S"),
            "--port" => port = value.parse().expect("--port P"),
            "--rate" => rate = value.parse().expect("--rate R"),
            other => panic!("unknown flag {other}"),
        }
    }
    let protocol = protocol.expect("--protocol ouch42|ilink3");
    let ip = |a, b, c, d| std::net::IpAddr::V4(std::net::Ipv4Addr::new(a, b, c, d));
    let mut conns: Vec<(SyntheticConnection, Messages)> = (0..sessions)
        .map(|s| {
            let c = SyntheticConnection::new(
                Endpoint {
                    addr: ip(10, 1, 0, 1 + s as u8),
                    port: 40_000 + s as u16,
                },
                Endpoint {
                    addr: ip(10, 2, 0, 1),
                    port,
                },
            );
            let m = Messages {
                protocol,
                session: s,
                host_seq: 1,
            };
            (c, m)
        })
        .collect();
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    // (time, packet bytes), written in time order at the end of each window.
    let mut pending: Vec<(u64, TcpPacketSpec)> = Vec::new();
    for (c, m) in &mut conns {
        for p in c.handshake() {
            pending.push((START_NS, p));
        }
        for (k, (client, bytes)) in m.login().into_iter().enumerate() {
            let ts = START_NS + 1_000 * (k as u64 + 1);
            pending.push((
                ts,
                if client {
                    c.client_sends(&bytes)
                } else {
                    c.server_sends(&bytes)
                },
            ));
        }
    }
    let mut t = START_NS + 1_000_000;
    let mean_gap = 1e9 / rate;
    let (mut packets, mut messages) = (0u64, 0u64);
    let file = BufWriter::new(File::create(&out).expect("create OUT"));
    let mut w = CaptureWriter::new(file, CaptureFormat::pcap_nanos(), LinkType::Ethernet)
        .expect("a writer");
    let mut flush =
        |pending: &mut Vec<(u64, TcpPacketSpec)>, upto: u64, w: &mut CaptureWriter<_>| {
            pending.sort_by_key(|(ts, _)| *ts);
            let n = pending.partition_point(|(ts, _)| *ts <= upto);
            for (ts, p) in pending.drain(..n) {
                w.write_tcp(ts, &p).expect("written");
                packets += 1;
            }
        };
    for i in 0..orders {
        t += rng.exp_ns(mean_gap).max(1);
        let s = (rng.next() % sessions) as usize;
        let (c, m) = &mut conns[s];
        let [request, ack, fill] = m.order(i, t);
        let ack_at = t + rng.range(15_000, 80_000);
        let fill_at = ack_at + rng.range(20_000, 400_000);
        pending.push((t, c.client_sends(&request)));
        pending.push((ack_at, c.server_sends(&ack)));
        pending.push((fill_at, c.server_sends(&fill)));
        messages += 3;
        if pending.len() > 4096 {
            // Nothing of a later order is earlier than `t`.
            flush(&mut pending, t, &mut w);
        }
    }
    for (c, _) in &mut conns {
        pending.push((t + 1_000_000, c.client_fin()));
        pending.push((t + 1_000_100, c.server_fin()));
    }
    flush(&mut pending, u64::MAX, &mut w);
    w.finish().expect("finished");
    println!(
        "{} packets, {messages} order messages, {}",
        packets,
        out.display()
    );
}
