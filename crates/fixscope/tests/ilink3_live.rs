//! `fixscope live --protocol PORT=ilink3` on lo: a real iLink 3 exchange and client (this
//! test's threads, over the kernel's TCP, bytes from the protocol crate's encoder) measured
//! from the TC hooks. Every order is matched and acked once; each ack latency lies inside
//! the client's own round trip for the order (its send before the request is on the wire,
//! its receive after the response was), and the session table names the UUID and firm.
//!
//! Needs root (BPF): without it the test fails loudly.

mod support;
mod support_ilink3;
#[allow(unused_imports)]
mod support_live;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use fixscope_ilink3::{encode, messages, Message};
use support::{counter, stage};
use support_ilink3::*;
use support_live::*;

const ORDERS: usize = 200;

/// One iLink 3 message from `s`: CME's SOFH (a little-endian length counting itself, then
/// the encoding type), then the rest.
fn read_message(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut sofh = [0u8; 4];
    s.read_exact(&mut sofh).ok()?;
    let len = usize::from(u16::from_le_bytes([sofh[0], sofh[1]]));
    let mut message = sofh.to_vec();
    message.resize(len.max(4), 0);
    s.read_exact(&mut message[4..]).ok()?;
    Some(message)
}

/// The exchange: Negotiate and Establish answered, then an ExecutionReportNew and a full
/// trade for every NewOrderSingle, numbered from 1.
fn exchange(listener: TcpListener) {
    let (mut s, _) = listener.accept().expect("accept");
    s.set_nodelay(true).unwrap();
    read_message(&mut s).expect("negotiate");
    s.write_all(&encode::negotiation_response(UUID, 1)).unwrap();
    read_message(&mut s).expect("establish");
    s.write_all(&encode::establishment_ack(UUID, 1, 1)).unwrap();
    let mut seq = 1;
    while let Some(m) = read_message(&mut s) {
        let Ok(Message::NewOrder(r)) = messages::decode(&m) else {
            continue;
        };
        let order_id = 70_000 + r.order_request_id;
        let new = encode::report(&report(NEW, seq, r.order_request_id, order_id, 3));
        let trade = encode::report(&report(TRADE, seq + 1, r.order_request_id, order_id, 0));
        seq += 2;
        s.write_all(&new).unwrap();
        s.write_all(&trade).unwrap();
    }
}

#[test]
fn live_ilink3_orders_lie_inside_the_clients_round_trips() {
    require_root("ilink3 live");
    let _serial = serial();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let protocol = format!("{port}=ilink3");
    let mut live = start_live(None, "lo", port, &["--json", "--protocol", &protocol]);
    let server = std::thread::spawn(move || exchange(listener));
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.set_nodelay(true).unwrap();
    c.write_all(&encode::negotiate(UUID, FIRM, 1)).unwrap();
    read_message(&mut c).expect("negotiation response");
    c.write_all(&encode::establish(UUID, FIRM, 2, 1)).unwrap();
    read_message(&mut c).expect("establishment ack");
    let mut round_trips = Vec::new();
    for i in 0..ORDERS {
        let order = new_order(i as u32 + 1, 5_000 + i as u64, 0);
        let sent = Instant::now();
        c.write_all(&order).unwrap();
        read_message(&mut c).expect("execution report new");
        round_trips.push(sent.elapsed());
        read_message(&mut c).expect("trade");
        std::thread::sleep(Duration::from_millis(2));
    }
    drop(c);
    server.join().unwrap();
    let done = stop_live_proc(&mut live.proc, libc::SIGINT);
    let (_, s) = parse_report(&done.stdout);
    assert_eq!(counter(&s, "requests"), ORDERS as u64, "{}", s["counters"]);
    assert_eq!(counter(&s, "matched"), ORDERS as u64, "{}", s["counters"]);
    assert_eq!(counter(&s, "unmatched_responses"), 0);
    assert_eq!(counter(&s, "ilink3_establishments"), 1);
    assert_eq!(counter(&s, "ilink3_undecodable_messages"), 0);
    assert_eq!(source(&s, "kernel_ring_drops_request"), 0);
    assert_eq!(source(&s, "kernel_ring_drops_response"), 0);
    let ack = stage(&s, "ack");
    assert_eq!(ack["count"], ORDERS as u64);
    // The wire's ack latency is inside the client's round trip: never above the longest
    // one, and above zero.
    let longest = round_trips.iter().max().unwrap().as_nanos() as u64;
    let max_ns = ack["max_ns"].as_u64().unwrap();
    let min_ns = ack["min_ns"].as_u64().unwrap();
    assert!(
        min_ns > 0 && max_ns <= longest,
        "ack {min_ns}..{max_ns} ns, longest round trip {longest} ns"
    );
    assert_eq!(stage(&s, "fill")["count"], ORDERS as u64);
    assert_eq!(counter(&s, "pending"), 0, "{}", s["counters"]);
    let sessions = s["sessions"].as_array().expect("sessions");
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    assert_eq!(sessions[0]["sender_comp_id"], "FRM01");
    assert_eq!(sessions[0]["target_comp_id"], UUID.to_string());
}
