use std::net::UdpSocket;
use std::thread;

use simple_dns::rdata::{A, AAAA};
use simple_dns::ResourceRecord;

use super::*;

#[test]
fn hosts_file_lines_match_any_name_case_insensitively() {
    let text = "127.0.0.1 localhost\n# 10.0.0.1 commented\n10.1.2.3  ch1 ClickHouse.venue  # trailing\n::1 ch1\nbogus line\n";
    assert_eq!(
        hosts_file_addresses(text, "clickhouse.VENUE"),
        vec!["10.1.2.3".parse::<IpAddr>().unwrap()]
    );
    assert_eq!(
        hosts_file_addresses(text, "ch1."),
        vec![
            "10.1.2.3".parse::<IpAddr>().unwrap(),
            "::1".parse().unwrap()
        ]
    );
    assert!(hosts_file_addresses(text, "commented").is_empty());
}

#[test]
fn resolv_conf_gives_servers_search_and_ndots() {
    let conf = ResolvConf::parse(
        "# comment\nnameserver 10.0.0.53\nnameserver fe80::1%eth0\ndomain old.example\nsearch a.example b.example\noptions rotate ndots:2\n",
    );
    assert_eq!(
        conf,
        ResolvConf {
            nameservers: vec!["10.0.0.53".parse().unwrap(), "fe80::1".parse().unwrap()],
            search: vec!["a.example".into(), "b.example".into()],
            ndots: 2,
        }
    );
    assert_eq!(
        conf.candidates("ch"),
        vec!["ch.a.example", "ch.b.example", "ch"]
    );
    assert_eq!(
        conf.candidates("ch.x.y"),
        vec!["ch.x.y", "ch.x.y.a.example", "ch.x.y.b.example"]
    );
    assert_eq!(conf.candidates("ch.abs."), vec!["ch.abs"]);
    // No nameserver line: the local one (resolv.conf(5)).
    assert_eq!(
        ResolvConf::parse("").nameservers,
        vec![IpAddr::V4(Ipv4Addr::LOCALHOST)]
    );
}

/// A DNS server on 127.0.0.1 knowing one name; it first sends a reply with a wrong id,
/// which the resolver must read past. Serves `queries` queries, then stops.
fn dns_server(known: &'static str, queries: usize) -> (u16, thread::JoinHandle<Vec<String>>) {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = socket.local_addr().unwrap().port();
    let handle = thread::spawn(move || {
        let mut asked = Vec::new();
        let mut buf = [0u8; 1500];
        for _ in 0..queries {
            let (n, from) = socket.recv_from(&mut buf).unwrap();
            let query = Packet::parse(&buf[..n]).unwrap();
            let question = query.questions[0].clone();
            let name = question.qname.to_string();
            asked.push(format!("{name} {:?}", question.qtype));
            let mut stale = Packet::new_reply(query.id().wrapping_add(1));
            stale.answers.push(ResourceRecord::new(
                question.qname.clone(),
                CLASS::IN,
                60,
                RData::A(A {
                    address: 0x0A000001,
                }),
            ));
            socket
                .send_to(&stale.build_bytes_vec().unwrap(), from)
                .unwrap();
            let mut reply = Packet::new_reply(query.id());
            if name == known {
                let rdata = if question.qtype == TYPE::A.into() {
                    RData::A(A {
                        address: u32::from(Ipv4Addr::new(127, 0, 0, 9)),
                    })
                } else {
                    RData::AAAA(AAAA {
                        address: u128::from(Ipv6Addr::LOCALHOST),
                    })
                };
                reply.questions.push(question.clone());
                reply.answers.push(ResourceRecord::new(
                    question.qname.clone(),
                    CLASS::IN,
                    60,
                    rdata,
                ));
            } else {
                *reply.rcode_mut() = RCODE::NameError;
            }
            socket
                .send_to(&reply.build_bytes_vec().unwrap(), from)
                .unwrap();
        }
        asked
    });
    (port, handle)
}

#[test]
fn dns_answers_through_the_search_list() {
    let dir = tempfile::tempdir().unwrap();
    let hosts = dir.path().join("hosts");
    let resolv = dir.path().join("resolv.conf");
    std::fs::write(&hosts, "127.0.0.1 localhost\n").unwrap();
    std::fs::write(&resolv, "nameserver 127.0.0.1\nsearch venue.example\n").unwrap();
    // "ch" has no dot: the search domain first (A and AAAA), found there.
    let (port, server) = dns_server("ch.venue.example", 2);
    let resolver = NssFreeResolver::with_files(hosts, resolv, port);
    let addrs = ureq::Resolver::resolve(&resolver, "ch:8123").unwrap();
    assert_eq!(
        addrs,
        vec![
            "127.0.0.9:8123".parse::<SocketAddr>().unwrap(),
            "[::1]:8123".parse().unwrap()
        ]
    );
    assert_eq!(
        server.join().unwrap(),
        vec!["ch.venue.example TYPE(A)", "ch.venue.example TYPE(AAAA)"]
    );
}

#[test]
fn an_unknown_name_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let hosts = dir.path().join("hosts");
    let resolv = dir.path().join("resolv.conf");
    std::fs::write(&resolv, "nameserver 127.0.0.1\n").unwrap();
    // Asked as is (A, AAAA): nothing.
    let (port, server) = dns_server("other.example", 2);
    let resolver = NssFreeResolver::with_files(hosts, resolv, port);
    let err = resolver.lookup("missing.example").unwrap_err();
    assert!(
        err.to_string().contains("cannot resolve missing.example"),
        "{err}"
    );
    server.join().unwrap();
}

#[test]
fn literals_hosts_and_localhost_need_no_dns() {
    let dir = tempfile::tempdir().unwrap();
    let hosts = dir.path().join("hosts");
    std::fs::write(&hosts, "192.0.2.7 ch.lan\n").unwrap();
    // A resolv.conf pointing at a port nobody serves: any DNS query would fail.
    let resolv = dir.path().join("resolv.conf");
    std::fs::write(&resolv, "nameserver 127.0.0.1\n").unwrap();
    let resolver = NssFreeResolver::with_files(hosts, resolv, 9);
    assert_eq!(
        resolver.lookup("ch.lan").unwrap(),
        vec!["192.0.2.7".parse::<IpAddr>().unwrap()]
    );
    assert_eq!(
        resolver.lookup("[::1]").unwrap(),
        vec!["::1".parse::<IpAddr>().unwrap()]
    );
    assert_eq!(
        ureq::Resolver::resolve(&resolver, "localhost:8123").unwrap()[0],
        "127.0.0.1:8123".parse::<SocketAddr>().unwrap()
    );
}
