//! Real traffic on `lo`, captured by the real kernel programs: every byte of both
//! directions exactly once, in order, with the right directions and timestamps.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use fixscope_core::ports::{PortSet, Role};
use fixscope_core::segment::Direction;
use fixscope_live::{AttachMode, LiveCapture, LiveConfig};
use fixscope_testkit::tc::{has_clsact, tc_filter_show};
use fixscope_testkit::{kernel_at_least, require_root, serial};

use crate::common::*;

fn cfg(role: Role, attach: AttachMode) -> LiveConfig {
    let mut c = LiveConfig::new("lo", PortSet::single(1));
    c.role = role;
    c.attach = attach;
    c.ring_bytes = 32 << 20;
    c
}

/// What `AttachMode::Auto` picks on this kernel: TCX from Linux 6.6 on.
pub fn expected_auto_kind() -> &'static str {
    if kernel_at_least(6, 6) {
        "tcx"
    } else {
        "tc"
    }
}

fn v4() -> SocketAddr {
    "127.0.0.1:0".parse().expect("addr")
}

fn v6() -> SocketAddr {
    "[::1]:0".parse().expect("addr")
}

#[test]
fn lo_ipv4_server_role_captures_every_byte_once() {
    let _g = serial();
    require_root("lo_ipv4_server_role_captures_every_byte_once");
    let (caps, cap) = exchange_and_verify(v4(), cfg(Role::Server, AttachMode::Auto));
    assert_eq!(cap.attach_kind(), expected_auto_kind());
    // The 60 KB write travels as one GSO skb on lo and arrives as 16 KiB chunks.
    assert!(
        caps.iter().any(|c| c.payload.len() == 16384),
        "a GSO-sized skb was split into 16 KiB records"
    );
    let k = cap.counters().expect("counters");
    assert!(k.hook_calls >= k.requests_in_range + k.responses_in_range);
    assert!(k.records as usize >= caps.len());
    eprintln!("counters: {k:?}");
}

#[test]
fn lo_ipv4_client_role_captures_every_byte_once() {
    let _g = serial();
    require_root("lo_ipv4_client_role_captures_every_byte_once");
    // Also exercises the busy-poll strategy with a pinned consumer thread.
    let mut c = cfg(Role::Client, AttachMode::Auto);
    c.idle = fixscope_live::IdleStrategy::Spin;
    c.cpu = Some(0);
    exchange_and_verify(v4(), c);
}

#[test]
fn lo_ipv6_server_role_captures_every_byte_once() {
    let _g = serial();
    require_root("lo_ipv6_server_role_captures_every_byte_once");
    let (caps, _) = exchange_and_verify(v6(), cfg(Role::Server, AttachMode::Auto));
    assert!(caps.iter().all(|c| c.src.is_ipv6() && c.dst.is_ipv6()));
}

#[test]
fn lo_ipv6_client_role_captures_every_byte_once() {
    let _g = serial();
    require_root("lo_ipv6_client_role_captures_every_byte_once");
    exchange_and_verify(v6(), cfg(Role::Client, AttachMode::Auto));
}

#[test]
fn lo_tc_filter_fallback_captures_every_byte_once() {
    let _g = serial();
    require_root("lo_tc_filter_fallback_captures_every_byte_once");
    // No hand cleanup: the capture removes the clsact qdisc it created (if it did).
    let had_clsact = has_clsact("lo");
    {
        let (_, cap) = exchange_and_verify(v4(), cfg(Role::Server, AttachMode::TcFilter));
        assert_eq!(cap.attach_kind(), "tc");
        assert_eq!(
            fixscope_live::fixscope_tc_filters_on("lo")
                .expect("query")
                .len(),
            2
        );
        assert!(has_clsact("lo"), "the filters hang on a clsact qdisc");
    }
    assert!(fixscope_live::fixscope_tc_filters_on("lo")
        .expect("query")
        .is_empty());
    let shown = tc_filter_show("lo");
    assert!(!shown.contains("fxs_"), "no fixscope filter left: {shown}");
    assert_eq!(
        has_clsact("lo"),
        had_clsact,
        "lo's clsact qdisc is as it was before the capture"
    );
}

#[test]
fn ip_filter_keeps_only_matching_addresses() {
    let _g = serial();
    require_root("ip_filter_keeps_only_matching_addresses");
    // Filter on 127.0.0.1: the exchange on 127.0.0.1 is complete.
    let mut c = cfg(Role::Server, AttachMode::Auto);
    c.ip_filter = Some(IpAddr::V4(Ipv4Addr::LOCALHOST));
    exchange_and_verify(v4(), c);

    // Filter on another address: nothing of the exchange is taken.
    let (addr, server) = spawn_server(None, v4());
    let mut c = cfg(Role::Server, AttachMode::Auto);
    c.ports = PortSet::single(addr.port());
    c.ip_filter = Some(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)));
    let mut cap = LiveCapture::open(&c).expect("open");
    let client = spawn_client(None, addr, vec![vec![10, 20], vec![30]]);
    client.join().expect("client thread").expect("client");
    server.join().expect("server thread").expect("server");
    let caps = collect(&mut cap, Duration::from_millis(300), Duration::ZERO, |_| {
        false
    });
    assert!(
        caps.is_empty(),
        "address filter let {} segments through",
        caps.len()
    );
    let k = cap.counters().expect("counters");
    assert_eq!(k.requests_in_range + k.responses_in_range, 0);
}

#[test]
fn ring_full_drops_are_counted_not_fatal() {
    let _g = serial();
    require_root("ring_full_drops_are_counted_not_fatal");
    let (addr, server) = spawn_server(None, v4());
    let mut c = cfg(Role::Server, AttachMode::Auto);
    c.ports = PortSet::single(addr.port());
    c.ring_bytes = 4096; // one page
    c.wakeup_threshold_bytes = 1024;
    let mut cap = LiveCapture::open(&c).expect("open");
    // Nobody polls while the burst runs.
    let client = spawn_client(None, addr, default_plan());
    let clog = client.join().expect("client thread").expect("client");
    let slog = server.join().expect("server thread").expect("server");
    let k = cap.counters().expect("counters");
    eprintln!("counters after burst: {k:?}");
    assert!(k.ring_drops_request > 0, "request records dropped: {k:?}");
    assert!(k.ring_drops_response > 0, "response records dropped: {k:?}");
    assert!(k.dropped_bytes > 0);
    // What did fit still decodes, and the capture keeps working.
    let caps = collect(&mut cap, Duration::from_millis(200), Duration::ZERO, |_| {
        false
    });
    assert!(!caps.is_empty() && caps.len() < 4096 / 72 + 1);
    let captured =
        payload_bytes(&caps, Direction::Request) + payload_bytes(&caps, Direction::Response);
    assert!(captured < clog.sent.len() + slog.sent.len());
    assert_eq!(cap.malformed_records(), 0);
}
