//! `fixscope live --protocol PORT=ouch42` on lo: a real OUCH 4.2 exchange and client (this
//! test's threads, over the kernel's TCP, bytes from the protocol crate's encoder) measured
//! from the TC hooks. Every order is matched and acked once; each ack latency lies inside
//! the client's own round trip for the order (its send before the request is on the wire,
//! its receive after the response was), and the session table names the logical session.
//!
//! Needs root (BPF): without it the test fails loudly.

mod support;
#[allow(unused_imports)]
mod support_live;
mod support_ouch;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use fixscope_ouch::encode::{login_accepted, login_request};
use support::{counter, stage};
use support_live::*;
use support_ouch::{accepted42, enter42, executed42};

const ORDERS: usize = 200;

/// One SoupBinTCP packet from `s` (its 2-byte length, then that many bytes).
fn read_packet(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut len = [0u8; 2];
    s.read_exact(&mut len).ok()?;
    let mut body = vec![0u8; usize::from(u16::from_be_bytes(len))];
    s.read_exact(&mut body).ok()?;
    let mut packet = len.to_vec();
    packet.extend_from_slice(&body);
    Some(packet)
}

/// The exchange: a login, then an Accepted and a full Executed for every Enter Order.
fn exchange(listener: TcpListener) {
    let (mut s, _) = listener.accept().expect("accept");
    s.set_nodelay(true).unwrap();
    read_packet(&mut s).expect("login request");
    s.write_all(&login_accepted(b"LIVESESS", 1)).unwrap();
    while let Some(p) = read_packet(&mut s) {
        // `U` packets carry the client's OUCH message after the 3-byte header.
        if p.len() < 4 || p[2] != b'U' || p[3] != b'O' {
            continue;
        }
        let token: [u8; 14] = p[4..18].try_into().unwrap();
        let accepted = accepted42(&token, 100, 1);
        let executed = executed42(&token, 100, 2);
        s.write_all(&accepted).unwrap();
        s.write_all(&executed).unwrap();
    }
}

#[test]
fn live_ouch42_orders_lie_inside_the_clients_round_trips() {
    require_root("ouch live");
    let _serial = serial();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let protocol = format!("{port}=ouch42");
    let mut live = start_live(None, "lo", port, &["--json", "--protocol", &protocol]);
    let server = std::thread::spawn(move || exchange(listener));
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.set_nodelay(true).unwrap();
    c.write_all(&login_request(b"LIVEU", b"pw", b"", Some(1)))
        .unwrap();
    read_packet(&mut c).expect("login accepted");
    let mut round_trips = Vec::new();
    for i in 0..ORDERS {
        let t = support_ouch::token("LIVE", i);
        let enter = enter42(&t, 100);
        let sent = Instant::now();
        c.write_all(&enter).unwrap();
        read_packet(&mut c).expect("accepted");
        round_trips.push(sent.elapsed());
        read_packet(&mut c).expect("executed");
        std::thread::sleep(Duration::from_millis(2));
    }
    drop(c);
    server.join().unwrap();
    let done = stop_live_proc(&mut live.proc, libc::SIGINT);
    let (_, s) = parse_report(&done.stdout);
    assert_eq!(counter(&s, "requests"), ORDERS as u64, "{}", s["counters"]);
    assert_eq!(counter(&s, "matched"), ORDERS as u64, "{}", s["counters"]);
    assert_eq!(counter(&s, "unmatched_responses"), 0);
    assert_eq!(counter(&s, "soupbin_logins"), 1);
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
    let sessions = s["sessions"].as_array().expect("sessions");
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    assert_eq!(sessions[0]["sender_comp_id"], "LIVEU");
    assert_eq!(sessions[0]["target_comp_id"], "LIVESESS");
}
