//! VLAN-tagged frames at both hooks. This kernel may lack VLAN devices (CONFIG_VLAN_8021Q),
//! so the frames are built by hand and injected with AF_PACKET sockets on a veth pair in a
//! namespace the test creates (and always deletes):
//! - sent on the captured end `va`, they cross its TC egress with every tag in the packet
//!   data (a packet socket bypasses VLAN offload);
//! - sent on the peer `vb`, they reach `va`'s TC ingress after the kernel has moved the
//!   outer tag to skb->vlan_tci, so a QinQ frame still has its inner tag in the data.
//!
//! Nothing answers these frames (no addresses are configured): they only have to be seen.

use std::ffi::CString;
use std::io;
use std::time::Duration;

use fixscope_core::decode::LinkType;
use fixscope_core::pcap_writer::{FrameOptions, TcpPacketSpec};
use fixscope_core::ports::{PortSet, Role};
use fixscope_core::segment::{Direction, Endpoint, FlowKey, TcpFlags};
use fixscope_live::{LiveCapture, LiveConfig};
use fixscope_testkit::{enter_netns, require_root, run, serial, Netns};

use crate::common::collect;

const PORT: u16 = 9878;

/// An AF_PACKET socket that sends whole Ethernet frames on one interface.
struct PacketSocket {
    fd: i32,
    ifindex: i32,
}

impl PacketSocket {
    fn open(iface: &str) -> io::Result<Self> {
        let name = CString::new(iface).expect("interface name");
        // SAFETY: if_nametoindex reads a NUL-terminated string we own.
        let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) } as i32;
        if ifindex == 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: plain socket(2) call; the fd is owned by the returned value.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(PacketSocket { fd, ifindex })
    }

    /// Sends `frame`; `outer_ethertype` becomes skb->protocol, as a NIC driver would set it.
    fn send(&self, frame: &[u8], outer_ethertype: u16) -> io::Result<()> {
        // SAFETY: sockaddr_ll is plain old data; all-zero is a valid starting value.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = outer_ethertype.to_be();
        addr.sll_ifindex = self.ifindex;
        addr.sll_halen = 6;
        addr.sll_addr[..6].copy_from_slice(&frame[..6]);
        // SAFETY: the buffer and the address outlive the call; lengths match them.
        let n = unsafe {
            libc::sendto(
                self.fd,
                frame.as_ptr().cast(),
                frame.len(),
                0,
                (&addr as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        if n != frame.len() as isize {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Drop for PacketSocket {
    fn drop(&mut self) {
        // SAFETY: we own the fd.
        unsafe { libc::close(self.fd) };
    }
}

/// The TPID of the outermost tag, as `FrameOptions` writes it.
fn outer_ethertype(tags: &[u16], v6: bool) -> u16 {
    match tags.len() {
        0 if v6 => 0x86DD,
        0 => 0x0800,
        1 => 0x8100,
        _ => 0x88A8,
    }
}

struct Case {
    name: &'static str,
    tags: Vec<u16>,
    v6: bool,
    ip_options: bool,
}

#[test]
fn vlan_tagged_frames_are_captured_at_both_hooks() {
    let _g = serial();
    require_root("vlan_tagged_frames_are_captured_at_both_hooks");
    let pid = std::process::id();
    let ns = format!("fxs-test-{pid}-vlan");
    let (va, vb) = (format!("fxsva{pid}"), format!("fxsvb{pid}"));
    let netns = Netns::create(std::slice::from_ref(&ns));
    run(
        "ip",
        &[
            "-n", &ns, "link", "add", &va, "type", "veth", "peer", "name", &vb,
        ],
    );
    for dev in [&va, &vb] {
        run("ip", &["-n", &ns, "link", "set", dev, "up"]);
    }

    let cases = [
        Case {
            name: "untagged",
            tags: vec![],
            v6: false,
            ip_options: false,
        },
        Case {
            name: "802.1Q",
            tags: vec![100],
            v6: false,
            ip_options: false,
        },
        Case {
            name: "QinQ",
            tags: vec![10, 100],
            v6: false,
            ip_options: true,
        },
        Case {
            name: "QinQ IPv6",
            tags: vec![10, 100],
            v6: true,
            ip_options: true,
        },
    ];
    let worker = {
        let (ns, va, vb) = (ns.clone(), va.clone(), vb.clone());
        std::thread::spawn(move || {
            enter_netns(&ns).expect("enter netns");
            let mut cfg = LiveConfig::new(va.clone(), PortSet::single(PORT));
            cfg.role = Role::Server;
            let mut cap = LiveCapture::open(&cfg).expect("open capture on veth");
            let on_va = PacketSocket::open(&va).expect("packet socket on va");
            let on_vb = PacketSocket::open(&vb).expect("packet socket on vb");
            let mut expected = Vec::new();
            for (i, case) in cases.iter().enumerate() {
                let (client, server) = if case.v6 {
                    ("2001:db8::2", "2001:db8::1")
                } else {
                    ("10.231.80.2", "10.231.80.1")
                };
                let client = Endpoint {
                    addr: client.parse().unwrap(),
                    port: 40000 + i as u16,
                };
                let server = Endpoint {
                    addr: server.parse().unwrap(),
                    port: PORT,
                };
                let opts = FrameOptions {
                    vlan_tags: case.tags.clone(),
                    ip_options: case.ip_options,
                    tcp_options: true,
                };
                let ether = outer_ethertype(&case.tags, case.v6);
                // A request arrives at va (ingress), a response leaves it (egress).
                for (dir, flow, socket) in [
                    (
                        Direction::Request,
                        FlowKey {
                            src: client,
                            dst: server,
                        },
                        &on_vb,
                    ),
                    (
                        Direction::Response,
                        FlowKey {
                            src: server,
                            dst: client,
                        },
                        &on_va,
                    ),
                ] {
                    let payload = format!("{} {:?} payload", case.name, dir).into_bytes();
                    let spec = TcpPacketSpec {
                        flow,
                        seq: 1000 + i as u32,
                        ack: 1,
                        flags: TcpFlags(TcpFlags::ACK | TcpFlags::PSH),
                        payload: payload.clone(),
                    };
                    socket
                        .send(&spec.frame(LinkType::Ethernet, &opts), ether)
                        .unwrap_or_else(|e| panic!("{}: send: {e}", case.name));
                    expected.push((case.name, dir, flow, spec.seq, payload));
                }
            }
            let caps = collect(
                &mut cap,
                Duration::from_secs(5),
                Duration::from_millis(200),
                |c| c.len() >= expected.len(),
            );
            let counters = cap.counters().expect("counters");
            (expected, caps, counters)
        })
    };
    let (expected, caps, counters) = worker.join().expect("worker thread");
    for (name, dir, flow, seq, payload) in &expected {
        let found = caps.iter().filter(|c| {
            c.dir == *dir
                && c.src == std::net::SocketAddr::new(flow.src.addr, flow.src.port)
                && c.dst == std::net::SocketAddr::new(flow.dst.addr, flow.dst.port)
        });
        let found: Vec<_> = found.collect();
        assert_eq!(
            found.len(),
            1,
            "{name} {dir:?}: expected exactly one capture, got {found:?}\nall: {caps:?}"
        );
        assert_eq!(found[0].seq, *seq, "{name} {dir:?}");
        assert_eq!(&found[0].payload, payload, "{name} {dir:?}");
    }
    assert_eq!(
        caps.len(),
        expected.len(),
        "unexpected extra captures: {caps:?}"
    );
    assert_eq!(counters.ring_drops(), 0, "{counters:?}");
    drop(netns);
    assert!(!Netns::any_listed(&[ns]), "namespace left");
}
