//! The clsact qdisc that tc filters hang on (the pre-TCX path): create it when missing,
//! and remove it again only if we created it and no filter — ours or anyone's — is left
//! (libbpf-bootstrap's `hook_created`).
//!
//! libbpf can create and delete the qdisc but cannot list filters (its query needs a
//! handle and priority), so "is any filter left?" is one rtnetlink dump, the request
//! `tc filter show dev DEV ingress|egress` makes.

use std::io;
use std::mem::size_of;
use std::os::fd::{AsFd, OwnedFd};

use libbpf_rs::libbpf_sys;
use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType};

use crate::error::errno;

/// `struct bpf_tc_hook` for `ifindex` at `attach_point`.
pub(crate) fn tc_hook(
    ifindex: u32,
    attach_point: libbpf_sys::bpf_tc_attach_point,
) -> libbpf_sys::bpf_tc_hook {
    libbpf_sys::bpf_tc_hook {
        sz: size_of::<libbpf_sys::bpf_tc_hook>() as libbpf_sys::size_t,
        ifindex: ifindex as i32,
        attach_point,
        ..Default::default()
    }
}

/// Creates the clsact qdisc on `ifindex` unless it exists. `Ok(true)`: we created it.
pub(crate) fn create(ifindex: u32) -> io::Result<bool> {
    let mut hook = tc_hook(ifindex, libbpf_sys::BPF_TC_INGRESS);
    // SAFETY: a valid, sized bpf_tc_hook; libbpf creates the qdisc exclusively (EEXIST
    // when it is already there).
    let rc = unsafe { libbpf_sys::bpf_tc_hook_create(&mut hook) };
    match rc {
        0 => Ok(true),
        rc if rc == -libc::EEXIST => Ok(false),
        rc => Err(errno(rc)),
    }
}

/// Removes the clsact qdisc of `ifindex` (and with it every filter on it: call only when
/// [`filters_on`] found none). A qdisc or interface already gone is not an error.
pub(crate) fn destroy(ifindex: u32) -> io::Result<()> {
    let mut hook = tc_hook(
        ifindex,
        libbpf_sys::BPF_TC_INGRESS | libbpf_sys::BPF_TC_EGRESS,
    );
    // SAFETY: a valid, sized bpf_tc_hook; with both attach points libbpf deletes the qdisc.
    let rc = unsafe { libbpf_sys::bpf_tc_hook_destroy(&mut hook) };
    match rc {
        0 => Ok(()),
        rc if rc == -libc::ENOENT || rc == -libc::ENODEV => Ok(()),
        rc => Err(errno(rc)),
    }
}

/// How many tc filters sit on the clsact qdisc of `ifindex`, ingress and egress together
/// (0 when there is no qdisc). Runs in the calling thread's network namespace.
pub(crate) fn filters_on(ifindex: u32) -> io::Result<usize> {
    Ok(list(ifindex)?.len())
}

/// One entry of a filter dump: where it hangs, its handle and its priority (a filter
/// kind's own entry per priority has handle 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Listed {
    pub(crate) ingress: bool,
    pub(crate) handle: u32,
    pub(crate) priority: u32,
}

/// Every filter on the clsact qdisc of `ifindex`, ingress then egress (none when there is
/// no qdisc) — a dump, so unlike libbpf's queries it logs nothing for a filter or qdisc
/// that is not there. Runs in the calling thread's network namespace.
pub(crate) fn list(ifindex: u32) -> io::Result<Vec<Listed>> {
    let sock = rustix::net::socket_with(
        AddressFamily::NETLINK,
        SocketType::RAW,
        SocketFlags::CLOEXEC,
        None, // NETLINK_ROUTE is protocol 0
    )?;
    let mut all = Vec::new();
    for (ingress, min) in [
        (true, libbpf_rs::TC_H_MIN_INGRESS),
        (false, libbpf_rs::TC_H_MIN_EGRESS),
    ] {
        let parent = (libbpf_rs::TC_H_CLSACT & TC_H_MAJ_MASK) | min;
        for (handle, info) in dump_filters(&sock, ifindex, parent)? {
            all.push(Listed {
                ingress,
                handle,
                // tcm_info: priority << 16 | protocol.
                priority: info >> 16,
            });
        }
    }
    Ok(all)
}

const TC_H_MAJ_MASK: u32 = 0xFFFF_0000;
const NLMSG_HDRLEN: usize = 16;
const TCMSG_LEN: usize = 20;

/// An RTM_GETTFILTER dump request: nlmsghdr + tcmsg, in native byte order.
fn dump_request(ifindex: u32, parent: u32, seq: u32) -> [u8; NLMSG_HDRLEN + TCMSG_LEN] {
    let mut m = [0u8; NLMSG_HDRLEN + TCMSG_LEN];
    m[0..4].copy_from_slice(&((NLMSG_HDRLEN + TCMSG_LEN) as u32).to_ne_bytes());
    m[4..6].copy_from_slice(&libc::RTM_GETTFILTER.to_ne_bytes());
    let flags = (libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16;
    m[6..8].copy_from_slice(&flags.to_ne_bytes());
    m[8..12].copy_from_slice(&seq.to_ne_bytes());
    // tcmsg: family (AF_UNSPEC) and padding stay 0, then ifindex, handle (0), parent, info (0).
    m[20..24].copy_from_slice(&ifindex.to_ne_bytes());
    m[28..32].copy_from_slice(&parent.to_ne_bytes());
    m
}

/// (tcm_handle, tcm_info) of each filter the dump of `parent` lists.
fn dump_filters(sock: &OwnedFd, ifindex: u32, parent: u32) -> io::Result<Vec<(u32, u32)>> {
    let seq = parent; // distinct per request on this socket
    rustix::net::send(
        sock.as_fd(),
        &dump_request(ifindex, parent, seq),
        SendFlags::empty(),
    )?;
    let mut buf = vec![0u8; 32 * 1024];
    let mut filters = Vec::new();
    loop {
        let (len, _) = rustix::net::recv(sock.as_fd(), &mut buf[..], RecvFlags::empty())?;
        match count_filters(&buf[..len], seq, &mut filters)? {
            Dump::More => {}
            Dump::Done => return Ok(filters),
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Dump {
    More,
    Done,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_ne_bytes(w)
}

/// Adds (tcm_handle, tcm_info) of the RTM_NEWTFILTER messages of one datagram of the dump
/// answering `seq` to `out`.
fn count_filters(mut b: &[u8], seq: u32, out: &mut Vec<(u32, u32)>) -> io::Result<Dump> {
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "malformed rtnetlink reply");
    while b.len() >= NLMSG_HDRLEN {
        let len = u32_at(b, 0) as usize;
        if len < NLMSG_HDRLEN || len > b.len() {
            return Err(bad());
        }
        let kind = u16::from_ne_bytes([b[4], b[5]]);
        let msg_seq = u32_at(b, 8);
        if msg_seq == seq {
            match i32::from(kind) {
                libc::NLMSG_DONE => return Ok(Dump::Done),
                libc::NLMSG_ERROR => {
                    if len < NLMSG_HDRLEN + 4 {
                        return Err(bad());
                    }
                    let code = u32_at(b, NLMSG_HDRLEN) as i32;
                    return match code {
                        0 => Ok(Dump::Done),
                        // No such qdisc or device: nothing is on it.
                        c if c == -libc::ENOENT || c == -libc::ENODEV => Ok(Dump::Done),
                        c => Err(errno(c)),
                    };
                }
                _ if kind == libc::RTM_NEWTFILTER => {
                    // tcmsg: family, pad, ifindex, handle (+8), parent, info (+16).
                    if len < NLMSG_HDRLEN + TCMSG_LEN {
                        return Err(bad());
                    }
                    out.push((u32_at(b, NLMSG_HDRLEN + 8), u32_at(b, NLMSG_HDRLEN + 16)));
                }
                _ => {}
            }
        }
        let step = (len + 3) & !3;
        b = b.get(step..).unwrap_or_default();
    }
    Ok(Dump::More)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(kind: u16, seq: u32, payload: &[u8]) -> Vec<u8> {
        let len = NLMSG_HDRLEN + payload.len();
        let mut m = Vec::new();
        m.extend_from_slice(&(len as u32).to_ne_bytes());
        m.extend_from_slice(&kind.to_ne_bytes());
        m.extend_from_slice(&2u16.to_ne_bytes()); // NLM_F_MULTI
        m.extend_from_slice(&seq.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes());
        m.extend_from_slice(payload);
        while m.len() % 4 != 0 {
            m.push(0);
        }
        m
    }

    #[test]
    fn dump_replies_are_counted() {
        let mut tcmsg = [0u8; 22]; // unaligned payload
        tcmsg[8..12].copy_from_slice(&0xF1C6u32.to_ne_bytes());
        tcmsg[16..20].copy_from_slice(&(0xF1C5u32 << 16 | 3).to_ne_bytes());
        let filter = msg(libc::RTM_NEWTFILTER, 7, &tcmsg);
        let mut one = filter.clone();
        one.extend(msg(libc::RTM_NEWTFILTER, 7, &[0u8; 20]));
        one.extend(msg(libc::RTM_NEWTFILTER, 8, &[0u8; 20])); // another request's
        let mut got = Vec::new();
        assert_eq!(count_filters(&one, 7, &mut got).ok(), Some(Dump::More));
        assert_eq!(got, [(0xF1C6, 0xF1C5 << 16 | 3), (0, 0)]);
        let done = msg(libc::NLMSG_DONE as u16, 7, &0i32.to_ne_bytes());
        let mut last = filter;
        last.extend(done);
        let mut got = Vec::new();
        assert_eq!(count_filters(&last, 7, &mut got).ok(), Some(Dump::Done));
        assert_eq!(got.len(), 1);
        let err = msg(libc::NLMSG_ERROR as u16, 7, &(-libc::EPERM).to_ne_bytes());
        let e = count_filters(&err, 7, &mut got).expect_err("EPERM is an error");
        assert_eq!(e.raw_os_error(), Some(libc::EPERM));
        assert!(
            count_filters(&[0xff; 20], 7, &mut got).is_err(),
            "length beyond the datagram"
        );
        let short = msg(libc::RTM_NEWTFILTER, 7, &[0u8; 8]);
        assert!(count_filters(&short, 7, &mut got).is_err(), "a cut tcmsg");
    }

    #[test]
    fn the_request_is_a_filter_dump() {
        let m = dump_request(5, 0xFFFF_FFF2, 9);
        assert_eq!(u32_at(&m, 0) as usize, m.len());
        assert_eq!(u16::from_ne_bytes([m[4], m[5]]), libc::RTM_GETTFILTER);
        assert_eq!(u32_at(&m, 20), 5);
        assert_eq!(u32_at(&m, 28), 0xFFFF_FFF2);
    }
}
