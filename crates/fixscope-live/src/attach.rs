//! Putting the two programs on an interface and taking them off again — TCX links where
//! the kernel has them (upstream 6.6; probed), clsact filters with fixscope's own
//! handle/priority otherwise — and finding
//! and removing what a killed capture left behind.
//!
//! Destroy only what we created: our filters and links, never anyone else's, and the
//! clsact qdisc only if this capture created it and no filter is left on it.
//!
//! Whether a capture created the qdisc is written into its filters themselves: their
//! handle is [`TC_HANDLE`] on a qdisc that was there, [`TC_HANDLE_CREATED_CLSACT`] on one
//! the capture created. So the record lives exactly as long as the filters, and
//! [`detach_leftovers`] (after a SIGKILL) knows whether the qdisc is fixscope's to remove.

use std::io;
use std::mem::size_of;
use std::os::fd::AsFd;
use std::ptr::NonNull;

use libbpf_rs::{libbpf_sys, AsRawLibbpf, Link, TcHook};

use crate::error::errno;
use crate::skeleton::FixscopeSkel;
use crate::{clsact, sys, LiveError};

/// Handle of fixscope's clsact filters (tc fallback), "F1C5", on a clsact qdisc that was
/// there before the capture.
pub const TC_HANDLE: u32 = 0xF1C5;
/// Handle of fixscope's clsact filters on a clsact qdisc the capture created (so that a
/// `fixscope detach` after a killed capture knows the qdisc is fixscope's to remove).
pub const TC_HANDLE_CREATED_CLSACT: u32 = 0xF1C6;
/// Priority of fixscope's clsact filters (tc fallback).
pub const TC_PRIORITY: u32 = 0xF1C5;
/// Names of the BPF programs (as the kernel reports them).
pub const PROGRAM_NAMES: [&str; 2] = ["fxs_ingress", "fxs_egress"];

/// A TCX link of fixscope's, as found by [`fixscope_links_on`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FixscopeLink {
    pub link_id: u32,
    pub prog_id: u32,
    pub prog_name: String,
    pub ifindex: u32,
    /// "ingress" or "egress".
    pub direction: &'static str,
}

/// A tc (clsact) filter of fixscope's, as found by [`fixscope_tc_filters_on`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FixscopeTcFilter {
    pub prog_id: u32,
    pub prog_name: String,
    /// "ingress" or "egress".
    pub direction: &'static str,
    /// The capture that attached it created the clsact qdisc (its handle is
    /// [`TC_HANDLE_CREATED_CLSACT`]).
    pub created_clsact: bool,
}

/// What a capture attached.
pub(crate) enum Attached {
    /// Closing (after detaching) the links takes the programs off; they also die with the
    /// process.
    Tcx(Vec<Link>),
    /// Filters outlive the process: removed by `detach`, or by [`detach_leftovers`].
    Tc(TcFilters),
}

/// fixscope's filters on one interface's clsact qdisc.
pub(crate) struct TcFilters {
    ifindex: u32,
    /// The hooks our filter is on.
    points: Vec<(libbpf_sys::bpf_tc_attach_point, &'static str)>,
    /// The qdisc was not there before this capture.
    created_clsact: bool,
    /// The network namespace attached in (an ifindex means something only there).
    netns: Option<(u64, u64)>,
}

impl Attached {
    /// "tcx" or "tc".
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Attached::Tcx(_) => "tcx",
            Attached::Tc(_) => "tc",
        }
    }

    /// Takes everything off; the first failure is returned after trying the rest.
    pub(crate) fn detach(self) -> Result<(), LiveError> {
        match self {
            Attached::Tcx(links) => {
                let mut first = None;
                for link in links {
                    if let Err(e) = link.detach() {
                        first.get_or_insert(LiveError::detach("a TCX link", e));
                    }
                }
                first.map_or(Ok(()), Err)
            }
            Attached::Tc(filters) => filters.detach(),
        }
    }
}

impl TcFilters {
    fn detach(self) -> Result<(), LiveError> {
        let ifindex = self.ifindex;
        if self.netns.is_some() && sys::netns_id().ok() != self.netns {
            return Err(LiveError::detach(
                format!(
                    "the tc filters on ifindex {ifindex} were attached in another network \
                     namespace than this thread's (detach from there, or `fixscope detach`)"
                ),
                io::Error::from(io::ErrorKind::InvalidInput),
            ));
        }
        let mut first = None;
        for (ap, name) in &self.points {
            if let Err(e) = detach_ours(ifindex, *ap, handle_for(self.created_clsact)) {
                first.get_or_insert(LiveError::detach(
                    format!("removing the {name} filter from ifindex {ifindex}"),
                    e,
                ));
            }
        }
        if self.created_clsact && first.is_none() {
            if let Err(e) = remove_clsact_if_unused(ifindex) {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }
}

/// Removes the clsact qdisc this capture created unless a filter (anyone's) is on it.
/// Someone adding a filter between the look and the removal would lose it: a window of
/// one netlink round trip, on a qdisc that was ours.
fn remove_clsact_if_unused(ifindex: u32) -> Result<(), LiveError> {
    let filters = clsact::filters_on(ifindex).map_err(|e| {
        LiveError::detach(
            format!(
                "cannot tell whether the clsact qdisc fixscope created on ifindex {ifindex} \
                 is still used; left in place"
            ),
            e,
        )
    })?;
    if filters == 0 {
        clsact::destroy(ifindex).map_err(|e| {
            LiveError::detach(
                format!("removing the clsact qdisc fixscope created on ifindex {ifindex}"),
                e,
            )
        })?;
    }
    Ok(())
}

/// Attaches both programs as TCX links (they chain with other users' programs).
pub(crate) fn attach_tcx(skel: &FixscopeSkel<'_>, ifindex: u32) -> Result<Attached, LiveError> {
    let mut links = Vec::with_capacity(2);
    for prog in [&skel.progs.fxs_ingress, &skel.progs.fxs_egress] {
        let opts = libbpf_sys::bpf_tcx_opts {
            sz: size_of::<libbpf_sys::bpf_tcx_opts>() as libbpf_sys::size_t,
            ..Default::default()
        };
        // SAFETY: the program pointer is valid and loaded while `skel` lives; `opts` is a
        // valid, sized bpf_tcx_opts. libbpf returns NULL and sets errno on failure.
        let ptr = unsafe {
            libbpf_sys::bpf_program__attach_tcx(
                prog.as_libbpf_object().as_ptr(),
                ifindex as i32,
                &opts,
            )
        };
        match NonNull::new(ptr) {
            // SAFETY: a non-NULL result is a link we now own.
            Some(p) => links.push(unsafe { Link::from_ptr(p) }),
            None => {
                let e = io::Error::last_os_error();
                // Links made so far close (and detach) when `links` drops.
                return Err(LiveError::attach(
                    format!(
                        "TCX attach of {} to ifindex {ifindex}",
                        prog.name().to_string_lossy()
                    ),
                    e,
                ));
            }
        }
    }
    Ok(Attached::Tcx(links))
}

/// Attaches both programs as clsact filters with fixscope's handle/priority, creating the
/// clsact qdisc if the interface has none (and remembering that we did).
pub(crate) fn attach_tc(skel: &FixscopeSkel<'_>, ifindex: u32) -> Result<Attached, LiveError> {
    let created_clsact = clsact::create(ifindex).map_err(|e| {
        LiveError::attach(format!("creating the clsact qdisc on ifindex {ifindex}"), e)
    })?;
    // Our filters under the other handle (a running or killed capture's, on a qdisc it
    // created or found) would not clash with ours: refuse as the same handle does.
    if !created_clsact {
        let listed = clsact::list(ifindex).map_err(|e| {
            LiveError::attach(format!("listing the tc filters on ifindex {ifindex}"), e)
        })?;
        if listed
            .iter()
            .any(|f| f.handle == handle_for(true) && f.priority == TC_PRIORITY)
        {
            return Err(LiveError::attach(
                format!("tc filter on ifindex {ifindex}{ALREADY_THERE}"),
                io::Error::from_raw_os_error(libc::EEXIST),
            ));
        }
    }
    let mut filters = TcFilters {
        ifindex,
        points: Vec::with_capacity(2),
        created_clsact,
        netns: sys::netns_id().ok(),
    };
    for (prog, ap, name) in [
        (&skel.progs.fxs_ingress, libbpf_rs::TC_INGRESS, "ingress"),
        (&skel.progs.fxs_egress, libbpf_rs::TC_EGRESS, "egress"),
    ] {
        let mut hook = TcHook::new(prog.as_fd());
        hook.ifindex(ifindex as i32)
            .replace(false)
            .handle(handle_for(created_clsact))
            .priority(TC_PRIORITY)
            .attach_point(ap);
        if let Err(e) = hook.attach() {
            let hint = if e.kind() == libbpf_rs::ErrorKind::AlreadyExists {
                ALREADY_THERE
            } else {
                ""
            };
            let mut what = format!("tc {name} filter on ifindex {ifindex}{hint}");
            // Take off what this attempt attached (and the qdisc if it made it).
            if let Err(undo) = filters.detach() {
                what.push_str(&format!("; undoing the rest failed too: {undo}"));
            }
            return Err(LiveError::attach(what, e));
        }
        filters.points.push((ap, name));
    }
    Ok(Attached::Tc(filters))
}

const ALREADY_THERE: &str = " (a fixscope filter is already there: another fixscope running \
     on this interface, or a leftover from a killed one — `fixscope detach -i IFACE` removes \
     leftovers)";

/// The handle that says whether the capture created the clsact qdisc.
fn handle_for(created_clsact: bool) -> u32 {
    if created_clsact {
        TC_HANDLE_CREATED_CLSACT
    } else {
        TC_HANDLE
    }
}

fn tc_opts_ours(handle: u32) -> libbpf_sys::bpf_tc_opts {
    libbpf_sys::bpf_tc_opts {
        sz: size_of::<libbpf_sys::bpf_tc_opts>() as libbpf_sys::size_t,
        handle,
        priority: TC_PRIORITY,
        ..Default::default()
    }
}

/// The program id of the filter with `handle` and fixscope's priority at `ap`, if any.
fn fixscope_filter_at(
    ifindex: u32,
    ap: libbpf_sys::bpf_tc_attach_point,
    handle: u32,
) -> Option<u32> {
    let hook = clsact::tc_hook(ifindex, ap);
    let mut opts = tc_opts_ours(handle);
    // SAFETY: valid, sized hook and opts structs; the kernel fills opts.prog_id.
    let rc = unsafe { libbpf_sys::bpf_tc_query(&hook, &mut opts) };
    // Not 0: no clsact qdisc, or no filter with this handle/priority.
    (rc == 0).then_some(opts.prog_id)
}

/// Removes the filter with `handle` and fixscope's priority at `ap`; one that is already
/// gone (with its interface, or removed by hand) is not an error.
fn detach_ours(ifindex: u32, ap: libbpf_sys::bpf_tc_attach_point, handle: u32) -> io::Result<()> {
    let hook = clsact::tc_hook(ifindex, ap);
    let opts = tc_opts_ours(handle);
    // SAFETY: valid, sized hook and opts; detach needs handle+priority, no program.
    let rc = unsafe { libbpf_sys::bpf_tc_detach(&hook, &opts) };
    match rc {
        0 => Ok(()),
        rc if rc == -libc::ENOENT || rc == -libc::ENODEV => Ok(()),
        rc => Err(errno(rc)),
    }
}

/// fixscope's clsact filters (our handle/priority running one of our programs) on `iface`.
pub fn fixscope_tc_filters_on(iface: &str) -> Result<Vec<FixscopeTcFilter>, LiveError> {
    let ifindex = sys::ifindex_of(iface)?;
    let mut out = Vec::new();
    // The dump says which of our handles are there: libbpf's query of one that is not
    // would log the kernel's complaint on stderr.
    let listed = clsact::list(ifindex)
        .map_err(|e| LiveError::bpf(format!("listing the tc filters on {iface}"), e))?;
    for (ap, direction) in [
        (libbpf_sys::BPF_TC_INGRESS, "ingress"),
        (libbpf_sys::BPF_TC_EGRESS, "egress"),
    ] {
        for created_clsact in [false, true] {
            let handle = handle_for(created_clsact);
            let there = listed.iter().any(|f| {
                f.ingress == (ap == libbpf_sys::BPF_TC_INGRESS)
                    && f.handle == handle
                    && f.priority == TC_PRIORITY
            });
            let Some(prog_id) = there
                .then(|| fixscope_filter_at(ifindex, ap, handle))
                .flatten()
            else {
                continue;
            };
            let Ok(info) = sys::prog_stats_by_id(prog_id) else {
                continue;
            };
            if PROGRAM_NAMES.contains(&info.name.as_str()) {
                out.push(FixscopeTcFilter {
                    prog_id,
                    prog_name: info.name,
                    direction,
                    created_clsact,
                });
            }
        }
    }
    Ok(out)
}

/// Removes fixscope's clsact filters from `iface` (left behind when a tc-fallback capture
/// was killed) and returns how many it removed. Only filters with fixscope's handles and
/// priority that run a fixscope program are touched. The clsact qdisc goes too when the
/// killed capture created it (its filters' handle says so) and no filter — anyone's — is
/// left on it; a qdisc the capture found stays. TCX links need no cleanup: they die with
/// the process that made them.
pub fn detach_leftovers(iface: &str) -> Result<usize, LiveError> {
    sys::check_privileges()?;
    let ifindex = sys::ifindex_of(iface)?;
    let mut removed = 0;
    let mut created_clsact = false;
    for f in fixscope_tc_filters_on(iface)? {
        let ap = if f.direction == "ingress" {
            libbpf_sys::BPF_TC_INGRESS
        } else {
            libbpf_sys::BPF_TC_EGRESS
        };
        detach_ours(ifindex, ap, handle_for(f.created_clsact)).map_err(|e| {
            LiveError::detach(format!("removing the {} filter on {iface}", f.direction), e)
        })?;
        created_clsact |= f.created_clsact;
        removed += 1;
    }
    if created_clsact {
        remove_clsact_if_unused(ifindex)?;
    }
    Ok(removed)
}

/// fixscope's TCX links on `ifindex` (Debian's bpftool 7.1 / tc 6.1 cannot show them).
pub fn fixscope_links_on(ifindex: u32) -> Result<Vec<FixscopeLink>, LiveError> {
    let mut out = Vec::new();
    for link in libbpf_rs::query::LinkInfoIter::default() {
        let libbpf_rs::query::LinkTypeInfo::Tcx(tcx) = &link.info else {
            continue;
        };
        if tcx.ifindex != ifindex {
            continue;
        }
        let Ok(info) = sys::prog_stats_by_id(link.prog_id) else {
            continue; // went away meanwhile
        };
        if !PROGRAM_NAMES.contains(&info.name.as_str()) {
            continue;
        }
        let direction = match tcx.attach_type {
            libbpf_rs::ProgramAttachType::TcxIngress => "ingress",
            _ => "egress",
        };
        out.push(FixscopeLink {
            link_id: link.id,
            prog_id: link.prog_id,
            prog_name: info.name,
            ifindex,
            direction,
        });
    }
    Ok(out)
}
