//! A veth pair between two network namespaces created (and always deleted) by the test:
//! server in one, client in the other, capture on the server's veth end.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::*;
use fixscope_core::ports::{PortSet, Role};
use fixscope_core::segment::Direction;
use fixscope_live::{fixscope_links_on, LiveCapture, LiveConfig, LiveError};

#[test]
fn veth_between_namespaces_captures_every_byte_once() {
    let _g = serial();
    require_root("veth_between_namespaces_captures_every_byte_once");
    let pid = std::process::id();
    let (ns_a, ns_b) = (format!("fxs-test-{pid}-a"), format!("fxs-test-{pid}-b"));
    let (va, vb) = (format!("fxsa{pid}"), format!("fxsb{pid}"));
    let netns = NetnsGuard::create(&[ns_a.clone(), ns_b.clone()]);
    run(
        "ip",
        &[
            "-n", &ns_a, "link", "add", &va, "type", "veth", "peer", "name", &vb, "netns", &ns_b,
        ],
    );
    run(
        "ip",
        &["-n", &ns_a, "addr", "add", "10.231.77.1/24", "dev", &va],
    );
    run(
        "ip",
        &["-n", &ns_b, "addr", "add", "10.231.77.2/24", "dev", &vb],
    );
    for (ns, dev) in [(&ns_a, &va), (&ns_b, &vb)] {
        run("ip", &["-n", ns, "link", "set", dev, "up"]);
        run("ip", &["-n", ns, "link", "set", "lo", "up"]);
    }

    let bind: SocketAddr = "10.231.77.1:0".parse().expect("addr");
    let (addr, server) = spawn_server(Some(ns_a.clone()), bind);

    // Open the capture from a thread inside the server's namespace.
    let (ns, dev) = (ns_a.clone(), va.clone());
    let opener = std::thread::spawn(move || -> Result<(LiveCapture, usize), LiveError> {
        enter_netns(&ns).map_err(LiveError::Ring)?;
        let mut cfg = LiveConfig::new(dev, PortSet::single(addr.port()));
        cfg.role = Role::Server;
        cfg.ring_bytes = 32 << 20;
        let cap = LiveCapture::open(&cfg)?;
        let links = fixscope_links_on(cap.ifindex())?.len();
        Ok((cap, links))
    });
    let (mut cap, links) = opener
        .join()
        .expect("opener thread")
        .expect("open in netns");
    assert_eq!(cap.attach_kind(), "tcx");
    assert_eq!(links, 2);

    let client = spawn_client(Some(ns_b.clone()), addr, default_plan());
    let clog = client.join().expect("client thread").expect("client");
    let slog = server.join().expect("server thread").expect("server");
    let (rq, rs) = (clog.sent.len(), slog.sent.len());
    let caps = collect(
        &mut cap,
        Duration::from_secs(15),
        Duration::from_millis(200),
        |c| {
            payload_bytes(c, Direction::Request) >= rq
                && payload_bytes(c, Direction::Response) >= rs
        },
    );
    verify_exchange(&caps, addr, &clog, &slog);
    let k = cap.counters().expect("counters");
    assert_eq!(k.ring_drops(), 0, "{k:?}");
    assert!(caps
        .iter()
        .all(|c| c.src.ip().to_string().starts_with("10.231.77.")));
    eprintln!("veth counters: {k:?}");
    drop(cap);
    drop(netns); // deletes both namespaces and with them the veth pair
    let left = run("ip", &["netns", "list"]);
    assert!(
        !left.contains(&ns_a) && !left.contains(&ns_b),
        "namespaces left: {left}"
    );
}
