//! `--clickhouse`'s host name resolved without the C library's NSS (#48).
//!
//! A statically linked glibc cannot load the NSS modules `getaddrinfo` needs (it would try
//! to `dlopen` the host's `libnss_*.so` of another glibc version, and fail or crash). The
//! static binary (`make dist`) therefore resolves the way musl and Go's pure resolver do:
//! an address literal as is, then `/etc/hosts`, then `localhost` (RFC 6761), then DNS over
//! UDP to the name servers of `/etc/resolv.conf`, with its `search` list and `ndots`. LDAP,
//! mDNS or other NSS sources are not consulted: a name only they know needs an address or
//! an `/etc/hosts` line (docs/deploy.md). The dynamically linked build keeps the system's
//! resolver (`getaddrinfo`), so its behaviour is unchanged.
//!
//! DNS messages are built and read by the `simple-dns` crate; only the transport (one UDP
//! query per record type, with a timeout and a matching id) is here.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use simple_dns::rdata::RData;
use simple_dns::{Name, Packet, PacketFlag, Question, CLASS, RCODE, TYPE};

/// The resolver of the static binary: files and DNS, never NSS.
#[derive(Clone, Debug)]
pub struct NssFreeResolver {
    hosts: PathBuf,
    resolv_conf: PathBuf,
    /// DNS port of every name server (53; tests point it at their own server).
    dns_port: u16,
    timeout: Duration,
}

impl NssFreeResolver {
    /// The system's files: `/etc/hosts` and `/etc/resolv.conf`.
    pub fn system() -> Self {
        Self::with_files("/etc/hosts".into(), "/etc/resolv.conf".into(), 53)
    }

    /// Other files and DNS port (tests).
    pub fn with_files(hosts: PathBuf, resolv_conf: PathBuf, dns_port: u16) -> Self {
        NssFreeResolver {
            hosts,
            resolv_conf,
            dns_port,
            timeout: Duration::from_secs(2),
        }
    }

    /// The addresses of `host`, in the order found; an error naming the host when none.
    pub fn lookup(&self, host: &str) -> io::Result<Vec<IpAddr>> {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return Ok(vec![ip]);
        }
        let hosts = std::fs::read_to_string(&self.hosts).unwrap_or_default();
        let found = hosts_file_addresses(&hosts, host);
        if !found.is_empty() {
            return Ok(found);
        }
        let lower = host.trim_end_matches('.').to_ascii_lowercase();
        if lower == "localhost" || lower.ends_with(".localhost") {
            return Ok(vec![
                IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V6(Ipv6Addr::LOCALHOST),
            ]);
        }
        let conf =
            ResolvConf::parse(&std::fs::read_to_string(&self.resolv_conf).unwrap_or_default());
        let mut last_error = None;
        for candidate in conf.candidates(host) {
            for server in &conf.nameservers {
                match self.query_both(*server, &candidate) {
                    Ok(addrs) if !addrs.is_empty() => return Ok(addrs),
                    Ok(_) => {}
                    Err(e) => last_error = Some(e),
                }
            }
        }
        let why = last_error.map_or_else(
            || "no address in /etc/hosts or DNS".to_string(),
            |e| format!("DNS: {e}"),
        );
        Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("cannot resolve {host}: {why}"),
        ))
    }

    /// A then AAAA records of `name` from one server.
    fn query_both(&self, server: IpAddr, name: &str) -> io::Result<Vec<IpAddr>> {
        let mut addrs = self.query(server, name, TYPE::A)?;
        addrs.extend(self.query(server, name, TYPE::AAAA)?);
        Ok(addrs)
    }

    fn query(&self, server: IpAddr, name: &str, record: TYPE) -> io::Result<Vec<IpAddr>> {
        let invalid = |e: simple_dns::SimpleDnsError| io::Error::new(io::ErrorKind::InvalidData, e);
        // Not security-relevant (spoofing is out of scope on a trading LAN), only distinct.
        let id = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0x5eed, |d| (d.subsec_nanos() >> 4) as u16);
        let mut query = Packet::new_query(id);
        query.set_flags(PacketFlag::RECURSION_DESIRED);
        query.questions.push(Question::new(
            Name::new(name.trim_end_matches('.')).map_err(invalid)?,
            record.into(),
            CLASS::IN.into(),
            false,
        ));
        let bytes = query.build_bytes_vec().map_err(invalid)?;
        let local: SocketAddr = match server {
            IpAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
            IpAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
        };
        let socket = UdpSocket::bind(local)?;
        socket.connect((server, self.dns_port))?;
        socket.set_read_timeout(Some(self.timeout))?;
        socket.send(&bytes)?;
        let mut buf = [0u8; 4096];
        // Answers with another id (a late reply to an earlier query) are read past.
        for _ in 0..8 {
            let n = socket.recv(&mut buf)?;
            let Ok(reply) = Packet::parse(&buf[..n]) else {
                continue;
            };
            if reply.id() != id || !reply.has_flags(PacketFlag::RESPONSE) {
                continue;
            }
            return match reply.rcode() {
                RCODE::NoError | RCODE::NameError => Ok(reply
                    .answers
                    .iter()
                    .filter_map(|rr| match &rr.rdata {
                        RData::A(a) => Some(IpAddr::V4(Ipv4Addr::from(a.address))),
                        RData::AAAA(a) => Some(IpAddr::V6(Ipv6Addr::from(a.address))),
                        _ => None,
                    })
                    .collect()),
                other => Err(io::Error::other(format!("{server} answered {other:?}"))),
            };
        }
        Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{server} sent no answer to the query"),
        ))
    }
}

impl ureq::Resolver for NssFreeResolver {
    fn resolve(&self, netloc: &str) -> io::Result<Vec<SocketAddr>> {
        let (host, port) = netloc
            .rsplit_once(':')
            .and_then(|(h, p)| Some((h, p.parse::<u16>().ok()?)))
            .ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidInput, format!("no port in {netloc}"))
            })?;
        Ok(self
            .lookup(host)?
            .into_iter()
            .map(|ip| SocketAddr::new(ip, port))
            .collect())
    }
}

/// The addresses `/etc/hosts` gives `host` (any of a line's names, case-insensitively).
fn hosts_file_addresses(text: &str, host: &str) -> Vec<IpAddr> {
    let wanted = host.trim_end_matches('.');
    text.lines()
        .filter_map(|line| {
            let line = line.split('#').next().unwrap_or("");
            let mut words = line.split_whitespace();
            let ip = words.next()?.parse::<IpAddr>().ok()?;
            words
                .any(|name| name.eq_ignore_ascii_case(wanted))
                .then_some(ip)
        })
        .collect()
}

/// What `/etc/resolv.conf` says (resolv.conf(5)): servers, search list, ndots.
#[derive(Debug, PartialEq)]
struct ResolvConf {
    nameservers: Vec<IpAddr>,
    search: Vec<String>,
    ndots: usize,
}

impl ResolvConf {
    fn parse(text: &str) -> Self {
        let mut conf = ResolvConf {
            nameservers: Vec::new(),
            search: Vec::new(),
            ndots: 1,
        };
        for line in text.lines() {
            let mut words = line.split_whitespace();
            match words.next() {
                Some("nameserver") => {
                    // A scoped IPv6 address (fe80::1%eth0) keeps only its address.
                    let addr: Option<IpAddr> =
                        words.next().and_then(|w| w.split('%').next()?.parse().ok());
                    conf.nameservers.extend(addr);
                }
                // The last of `search` and `domain` wins, as in glibc.
                Some("search") | Some("domain") => {
                    conf.search = words.map(str::to_string).collect();
                }
                Some("options") => {
                    for option in words {
                        if let Some(n) = option.strip_prefix("ndots:").and_then(|n| n.parse().ok())
                        {
                            conf.ndots = std::cmp::min(n, 15);
                        }
                    }
                }
                _ => {}
            }
        }
        // resolv.conf(5): no nameserver line means the local one.
        if conf.nameservers.is_empty() {
            conf.nameservers.push(IpAddr::V4(Ipv4Addr::LOCALHOST));
        }
        conf
    }

    /// The names to ask for, in order: a name with a trailing dot as is; one with at
    /// least `ndots` dots first as is, then with each search domain; else the reverse.
    fn candidates(&self, host: &str) -> Vec<String> {
        if let Some(absolute) = host.strip_suffix('.') {
            return vec![absolute.to_string()];
        }
        let searched = self.search.iter().map(|domain| format!("{host}.{domain}"));
        if host.matches('.').count() >= self.ndots {
            std::iter::once(host.to_string()).chain(searched).collect()
        } else {
            searched.chain(std::iter::once(host.to_string())).collect()
        }
    }
}

#[cfg(test)]
#[path = "name_lookup_tests.rs"]
mod tests;
