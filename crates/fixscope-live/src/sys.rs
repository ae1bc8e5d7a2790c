//! Small OS helpers: privileges, interfaces, kernel version, BPF object info.

use std::ffi::{CStr, CString};
use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use libbpf_rs::libbpf_sys;

use crate::capabilities::{missing_capabilities, parse_cap_eff};
use crate::LiveError;

const ARPHRD_RAWIP: u16 = 519; // not in the libc crate

/// Fails with [`LiveError::NotPrivileged`] unless this process may load and attach.
pub fn check_privileges() -> Result<(), LiveError> {
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|e| LiveError::NotPrivileged(format!("cannot read /proc/self/status: {e}")))?;
    let cap_eff = parse_cap_eff(&status).ok_or_else(|| {
        LiveError::NotPrivileged("no CapEff line in /proc/self/status".to_string())
    })?;
    let missing = missing_capabilities(cap_eff);
    if missing.is_empty() {
        return Ok(());
    }
    Err(LiveError::NotPrivileged(format!(
        "live capture needs root or {} (missing: {}); run with sudo or \
         `setcap cap_bpf,cap_net_admin,cap_perfmon+ep <binary>`",
        "CAP_BPF + CAP_NET_ADMIN",
        missing.join(", ")
    )))
}

/// The interface index of `name` in the calling thread's network namespace.
pub fn ifindex_of(name: &str) -> Result<u32, LiveError> {
    let c = CString::new(name).map_err(|_| LiveError::NoSuchInterface(name.to_string()))?;
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
    let idx = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if idx == 0 {
        return Err(LiveError::NoSuchInterface(name.to_string()));
    }
    Ok(idx)
}

/// The name of interface `ifindex`, or `None` when there is no such interface.
pub fn ifname_of(ifindex: u32) -> Option<String> {
    let mut buf = [0 as libc::c_char; libc::IF_NAMESIZE];
    // SAFETY: `buf` has the IF_NAMESIZE bytes if_indextoname may write.
    let p = unsafe { libc::if_indextoname(ifindex, buf.as_mut_ptr()) };
    if p.is_null() {
        return None;
    }
    // SAFETY: on success if_indextoname wrote a NUL-terminated name into `buf`.
    let name = unsafe { CStr::from_ptr(buf.as_ptr()) };
    Some(name.to_string_lossy().into_owned())
}

/// Bytes of link-layer header the TC hook sees in front of the IP header: 14 for
/// Ethernet-like devices (including loopback and veth), 0 for L3 devices (tun, wireguard,
/// GRE, ...).
pub(crate) fn l2_header_len(name: &str) -> Result<u32, LiveError> {
    // Ask the kernel (SIOCGIFHWADDR) rather than /sys/class/net, which shows the
    // namespace sysfs was mounted in, not the calling thread's.
    // SAFETY: plain socket(2) call; the result is checked.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(LiveError::attach(
            "socket() for the link-type query",
            io::Error::last_os_error(),
        ));
    }
    // SAFETY: `fd` is a fresh descriptor we own.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in ifr
        .ifr_name
        .iter_mut()
        .zip(name.bytes().take(libc::IF_NAMESIZE - 1))
    {
        *dst = src as libc::c_char;
    }
    // SAFETY: SIOCGIFHWADDR reads ifr_name and writes ifr_hwaddr inside `ifr`.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFHWADDR, &mut ifr) };
    if rc < 0 {
        return Err(LiveError::NoSuchInterface(name.to_string()));
    }
    // SAFETY: the ioctl succeeded, so the hwaddr member of the union is the initialised one.
    let hw_type = unsafe { ifr.ifr_ifru.ifru_hwaddr.sa_family };
    match hw_type {
        libc::ARPHRD_ETHER | libc::ARPHRD_LOOPBACK => Ok(14),
        libc::ARPHRD_NONE
        | ARPHRD_RAWIP
        | libc::ARPHRD_TUNNEL
        | libc::ARPHRD_TUNNEL6
        | libc::ARPHRD_IPGRE
        | libc::ARPHRD_SIT => Ok(0),
        other => Err(LiveError::UnsupportedLink {
            iface: name.to_string(),
            link_type: other,
        }),
    }
}

/// The calling thread's network namespace, as the (device, inode) of its nsfs file: equal
/// for two threads exactly when they share the namespace.
/// The online CPUs (`/sys/devices/system/cpu/online`), in order.
pub(crate) fn online_cpus() -> io::Result<Vec<usize>> {
    let list = std::fs::read_to_string("/sys/devices/system/cpu/online")?;
    parse_cpu_list(&list).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a CPU list of {list:?}"),
        )
    })
}

/// A kernel CPU list ("0-3,5,7-8"), or `None` if it is not one.
pub(crate) fn parse_cpu_list(list: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in list.trim().split(',') {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.parse::<usize>().ok()?, b.parse::<usize>().ok()?),
            None => {
                let c = part.parse::<usize>().ok()?;
                (c, c)
            }
        };
        if hi < lo || hi >= 1 << 16 {
            return None;
        }
        cpus.extend(lo..=hi);
    }
    Some(cpus)
}

pub(crate) fn netns_id() -> io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata("/proc/thread-self/ns/net")?;
    Ok((m.dev(), m.ino()))
}

/// (major, minor) of the running kernel.
pub fn kernel_version() -> Option<(u32, u32)> {
    // SAFETY: utsname is plain old data; all-zero is valid and uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid utsname to fill.
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    // SAFETY: uname NUL-terminates release.
    let release = unsafe { CStr::from_ptr(u.release.as_ptr()) }.to_string_lossy();
    parse_kernel_version(&release)
}

pub(crate) fn parse_kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut it = release.split(|c: char| !c.is_ascii_digit());
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    Some((major, minor))
}

/// What `bpf_obj_get_info_by_fd` says about a program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramStats {
    pub id: u32,
    pub name: String,
    /// Total time spent in the program; only advances while BPF stats are enabled
    /// (see [`enable_bpf_stats`]).
    pub run_time_ns: u64,
    /// Number of runs counted while BPF stats were enabled.
    pub run_cnt: u64,
}

impl ProgramStats {
    /// Mean nanoseconds per run, if it ran at all.
    pub fn ns_per_run(&self) -> Option<f64> {
        (self.run_cnt > 0).then(|| self.run_time_ns as f64 / self.run_cnt as f64)
    }
}

/// The kernel's `bpf_prog_info` of a program (fields a kernel does not know stay 0).
pub(crate) fn prog_info_by_fd(fd: RawFd) -> io::Result<libbpf_sys::bpf_prog_info> {
    // SAFETY: bpf_prog_info is plain old data; all-zero is valid.
    let mut info: libbpf_sys::bpf_prog_info = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libbpf_sys::bpf_prog_info>() as u32;
    // SAFETY: `info` is writable for `len` bytes; the kernel writes at most that.
    let rc = unsafe {
        libbpf_sys::bpf_obj_get_info_by_fd(
            fd,
            (&mut info as *mut libbpf_sys::bpf_prog_info).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(-rc));
    }
    Ok(info)
}

pub(crate) fn prog_stats_by_fd(fd: RawFd) -> io::Result<ProgramStats> {
    let info = prog_info_by_fd(fd)?;
    let name_bytes: Vec<u8> = info
        .name
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    Ok(ProgramStats {
        id: info.id,
        name: String::from_utf8_lossy(&name_bytes).into_owned(),
        run_time_ns: info.run_time_ns,
        run_cnt: info.run_cnt,
    })
}

pub(crate) fn prog_stats_by_id(id: u32) -> io::Result<ProgramStats> {
    // SAFETY: plain bpf() wrapper; the result is checked.
    let fd = unsafe { libbpf_sys::bpf_prog_get_fd_by_id(id) };
    if fd < 0 {
        return Err(io::Error::from_raw_os_error(-fd));
    }
    // SAFETY: `fd` is a fresh descriptor we own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    prog_stats_by_fd(fd.as_raw_fd())
}

/// Turns on run-time accounting for all BPF programs (BPF_ENABLE_STATS) for as long as the
/// returned descriptor is open. Needs CAP_SYS_ADMIN. Equivalent to
/// `sysctl kernel.bpf_stats_enabled=1`, but scoped to the descriptor's lifetime.
pub fn enable_bpf_stats() -> Result<OwnedFd, LiveError> {
    // SAFETY: plain bpf() wrapper; the result is checked.
    let fd = unsafe { libbpf_sys::bpf_enable_stats(libbpf_sys::BPF_STATS_RUN_TIME) };
    if fd < 0 {
        let e = io::Error::from_raw_os_error(-fd);
        return Err(match -fd {
            libc::EPERM | libc::EACCES => {
                LiveError::NotPrivileged(format!("BPF_ENABLE_STATS needs CAP_SYS_ADMIN: {e}"))
            }
            _ => LiveError::NoBtfOrBpf(format!("BPF_ENABLE_STATS failed: {e}")),
        });
    }
    // SAFETY: `fd` is a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cpu_lists() {
        assert_eq!(parse_cpu_list("0-1\n"), Some(vec![0, 1]));
        assert_eq!(parse_cpu_list("0-2,5,7-8"), Some(vec![0, 1, 2, 5, 7, 8]));
        assert_eq!(parse_cpu_list("3"), Some(vec![3]));
        assert_eq!(parse_cpu_list(""), None);
        assert_eq!(parse_cpu_list("2-1"), None);
        assert_eq!(parse_cpu_list("a"), None);
    }

    #[test]
    fn parses_kernel_release() {
        assert_eq!(parse_kernel_version("6.18.44-fc-v595"), Some((6, 18)));
        assert_eq!(parse_kernel_version("5.15.0-91-generic"), Some((5, 15)));
        assert_eq!(parse_kernel_version("garbage"), None);
    }
}
