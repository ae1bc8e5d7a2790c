//! The watch filter both BPF objects are loaded with — the TC programs and `--breakdown`'s
//! socket hooks must take exactly the same connections — as the values of their rodata
//! `cfg_*` fields, worked out once from the configuration.

use std::net::IpAddr;

use fixscope_core::ports::Role;

use crate::config::{LiveConfig, MAX_PORT_RANGES};
use crate::skeleton::types::fxs_role;
use crate::LiveError;

/// The values of `cfg_nranges`, `cfg_port_lo`/`cfg_port_hi`, `cfg_port_role`, `cfg_ip_family` and
/// `cfg_ip` (fixscope.bpf.c, breakdown.bpf.c).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct WatchFilter {
    pub nranges: u32,
    pub port_lo: [u16; MAX_PORT_RANGES],
    pub port_hi: [u16; MAX_PORT_RANGES],
    /// Each range's role (`fxs_role`): the configuration's, or its `port_roles` entry's.
    pub port_role: [u8; MAX_PORT_RANGES],
    /// 0: no address filter, 4 or 6.
    pub ip_family: u32,
    /// Network byte order, as the programs compare it with the packet's; IPv4 in `ip[0]`.
    pub ip: [u32; 4],
}

impl WatchFilter {
    /// The filter for `cfg`; more port ranges than the programs hold is a configuration
    /// error.
    pub(crate) fn new(cfg: &LiveConfig) -> Result<WatchFilter, LiveError> {
        let ranges = cfg.ports.ranges();
        if ranges.len() > MAX_PORT_RANGES {
            return Err(LiveError::Config(format!(
                "at most {MAX_PORT_RANGES} port ranges can be watched live (got {})",
                ranges.len()
            )));
        }
        let mut port_lo = [0; MAX_PORT_RANGES];
        let mut port_hi = [0; MAX_PORT_RANGES];
        let mut port_role = [0; MAX_PORT_RANGES];
        for (i, r) in ranges.iter().enumerate() {
            port_lo[i] = r.lo;
            port_hi[i] = r.hi;
            let role = cfg
                .port_roles
                .iter()
                .find(|(ports, _)| ports.contains(r.lo))
                .map_or(cfg.role, |&(_, role)| role);
            port_role[i] = match role {
                Role::Server => fxs_role::FXS_ROLE_SERVER.0 as u8,
                Role::Client => fxs_role::FXS_ROLE_CLIENT.0 as u8,
            };
        }
        let (ip_family, ip) = match cfg.ip_filter {
            None => (0, [0; 4]),
            Some(IpAddr::V4(a)) => (4, [u32::from_ne_bytes(a.octets()), 0, 0, 0]),
            Some(IpAddr::V6(a)) => {
                let o = a.octets();
                (
                    6,
                    std::array::from_fn(|i| {
                        u32::from_ne_bytes([o[4 * i], o[4 * i + 1], o[4 * i + 2], o[4 * i + 3]])
                    }),
                )
            }
        };
        Ok(WatchFilter {
            nranges: ranges.len() as u32,
            port_lo,
            port_hi,
            port_role,
            ip_family,
            ip,
        })
    }
}

/// Writes a [`WatchFilter`] into an object's rodata: each BPF object's generated rodata
/// type has its own copy of the same `cfg_*` fields (watch_filter.h).
macro_rules! write_watch_filter {
    ($ro:expr, $filter:expr) => {{
        let (ro, f) = ($ro, $filter);
        ro.cfg_nranges = f.nranges;
        ro.cfg_port_lo = f.port_lo;
        ro.cfg_port_hi = f.port_hi;
        ro.cfg_port_role = f.port_role;
        ro.cfg_ip_family = f.ip_family;
        ro.cfg_ip = f.ip;
    }};
}
pub(crate) use write_watch_filter;

/// Writes the socket hooks' rodata (breakdown.bpf.c, tls_uprobe.bpf.c: each its own
/// generated type): the watch filter and this kernel's tcp_recvmsg signature. `$rodata` is
/// the skeleton's `Option<&mut rodata>`; returns early with the error when it is missing.
macro_rules! write_socket_hooks_config {
    ($rodata:expr, $cfg:expr, $object:literal) => {{
        let filter = crate::filter::WatchFilter::new($cfg)?;
        let ro = $rodata.ok_or_else(|| {
            crate::LiveError::load(
                concat!("the ", $object, " BPF object has no .rodata"),
                std::io::Error::from(std::io::ErrorKind::InvalidData),
            )
        })?;
        crate::filter::write_watch_filter!(&mut *ro, &filter);
        // tcp_recvmsg lost `nonblock` in 5.19 and `addr_len` in 6.18; what this kernel has
        // is in its BTF (without it, the fentry/fexit set does not load and the tracepoints
        // are tried).
        let (nargs, flags) = crate::probe::tcp_recvmsg_args().unwrap_or((5, 3));
        ro.cfg_recvmsg_nargs = nargs;
        ro.cfg_recvmsg_flags_arg = flags;
    }};
}
pub(crate) use write_socket_hooks_config;

#[cfg(test)]
mod tests {
    use super::*;
    use fixscope_core::ports::PortSet;

    fn config(ports: &str, ip: Option<&str>) -> LiveConfig {
        let mut cfg = LiveConfig::new("lo", ports.parse::<PortSet>().expect("ports"));
        cfg.ip_filter = ip.map(|a| a.parse().expect("address"));
        cfg
    }

    #[test]
    fn ports_and_addresses_become_the_programs_values() {
        let f = WatchFilter::new(&config("9000-9010,9878", Some("10.1.2.3"))).expect("filter");
        assert_eq!(f.nranges, 2);
        assert_eq!((f.port_lo[0], f.port_hi[0]), (9000, 9010));
        assert_eq!((f.port_lo[1], f.port_hi[1]), (9878, 9878));
        assert_eq!(f.ip_family, 4);
        // In memory, the bytes of the address in wire order.
        assert_eq!(f.ip[0].to_ne_bytes(), [10, 1, 2, 3]);
        assert_eq!(&f.ip[1..], &[0, 0, 0]);

        let f = WatchFilter::new(&config("1", Some("2001:db8::1"))).expect("filter");
        assert_eq!(f.ip_family, 6);
        let bytes: Vec<u8> = f.ip.iter().flat_map(|w| w.to_ne_bytes()).collect();
        assert_eq!(
            bytes,
            "2001:db8::1"
                .parse::<std::net::Ipv6Addr>()
                .expect("v6")
                .octets()
        );

        let f = WatchFilter::new(&config("1", None)).expect("filter");
        assert_eq!((f.ip_family, f.ip), (0, [0; 4]));
    }

    #[test]
    fn each_range_takes_its_leg_s_role() {
        let mut cfg = config("9879,9001-9004,9100", None);
        cfg.port_roles = vec![
            ("9001-9004".parse().expect("ports"), Role::Client),
            ("9100".parse().expect("ports"), Role::Client),
        ];
        let f = WatchFilter::new(&cfg).expect("filter");
        assert_eq!(&f.port_role[..3], &[0, 1, 1]);
        cfg.role = Role::Client;
        cfg.port_roles.clear();
        assert_eq!(
            &WatchFilter::new(&cfg).expect("filter").port_role[..3],
            &[1, 1, 1]
        );
    }

    #[test]
    fn more_ranges_than_the_programs_hold_is_a_config_error() {
        let many: Vec<String> = (0..=MAX_PORT_RANGES)
            .map(|i| (1000 + 10 * i).to_string())
            .collect();
        let err = WatchFilter::new(&config(&many.join(","), None)).expect_err("too many");
        assert!(matches!(err, LiveError::Config(_)), "{err:?}");
    }
}
