//! `--breakdown`: the watched application's socket calls and its reader threads'
//! scheduling, from a second BPF object (src/bpf/breakdown.bpf.c) with its own ring.
//! Loaded and attached only when `LiveConfig::breakdown` is set.
//!
//! Nothing here borrows the skeleton past [`Breakdown::open`]: the links (which keep their
//! programs in the kernel), duplicated map descriptors and program descriptors are all it
//! keeps. Dropping it closes the links, which detaches the programs; a killed process's
//! links close with its descriptors, so nothing outlives it.

mod counters;
mod event;
mod skel;

use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::Path;

use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapHandle, OpenObject, ProgramMut};

pub use self::counters::BreakdownCounters;
pub use self::event::{socket_event_from_record, SOCKET_RECORD_BYTES};
use self::skel::{BreakdownSkel, BreakdownSkelBuilder, OpenBreakdownSkel};
use crate::config::LiveConfig;
use crate::load::VerifiedProgram;
use crate::ring::Ring;
use crate::sys::{self, ProgramStats};
use crate::LiveError;

/// The socket hooks on BPF trampolines: fentry and fexit on tcp_recvmsg, fentry on
/// tcp_sendmsg, fexit on tcp_sendmsg_locked (the kernel's program names; each pair's first
/// hook first).
pub const SOCKET_FENTRY_PROGRAMS: [&str; 4] = [
    "fxb_recv_entry",
    "fxb_recv_exit",
    "fxb_send_entry",
    "fxb_send_exit",
];
/// The same calls from the socket-layer tracepoints sock_recv_length, tcp_sendmsg_locked and
/// sock_send_length (Linux >= 6.12), for kernels that refuse fentry/fexit.
pub const SOCKET_TRACEPOINT_PROGRAMS: [&str; 3] = ["fxb_tp_recv", "fxb_tp_locked", "fxb_tp_send"];
/// The scheduler hooks: tp_btf/sched_wakeup, tp_btf/sched_switch.
pub const SCHED_PROGRAMS: [&str; 2] = ["fxb_wakeup", "fxb_switch"];

/// Which socket hooks a breakdown capture uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SocketHooks {
    /// fentry/fexit ([`SOCKET_FENTRY_PROGRAMS`]): the write's time is tcp_sendmsg's entry.
    Fentry,
    /// Tracepoints ([`SOCKET_TRACEPOINT_PROGRAMS`]): the write's time is taken once
    /// tcp_sendmsg holds the socket lock, before it queues a byte.
    Tracepoints,
}

impl SocketHooks {
    fn programs(self) -> &'static [&'static str] {
        match self {
            SocketHooks::Fentry => &SOCKET_FENTRY_PROGRAMS,
            SocketHooks::Tracepoints => &SOCKET_TRACEPOINT_PROGRAMS,
        }
    }
}

/// What is tried, best first: each socket hook set with the scheduler hooks, then without.
const ATTEMPTS: [(SocketHooks, bool); 4] = [
    (SocketHooks::Fentry, true),
    (SocketHooks::Tracepoints, true),
    (SocketHooks::Fentry, false),
    (SocketHooks::Tracepoints, false),
];

/// The loaded and attached breakdown programs and their ring.
pub(crate) struct Breakdown {
    /// The socket calls' ring until the capture takes it into its timestamp merge
    /// ([`Breakdown::take_ring`]); the ring owns a descriptor of its own.
    ring: Option<Ring>,
    counters: MapHandle,
    /// Attached programs; empty once detached.
    links: Vec<Link>,
    /// (name, descriptor) of every loaded program, for run-time statistics.
    progs: Vec<(String, OwnedFd)>,
    /// What this kernel could not hook, and which stages that leaves out.
    limits: Vec<String>,
    socket_hooks: SocketHooks,
}

impl Breakdown {
    /// Loads the breakdown object configured like the TC programs (ports, role, address)
    /// and attaches it. The socket hooks are required; without the scheduler hooks the
    /// capture runs and [`Breakdown::limits`] says what is missing.
    pub(crate) fn open(cfg: &LiveConfig) -> Result<Breakdown, LiveError> {
        if !Path::new("/sys/kernel/btf/vmlinux").exists() {
            return Err(LiveError::NoBtfOrBpf(
                "--breakdown needs the kernel's BTF (/sys/kernel/btf/vmlinux, \
                 CONFIG_DEBUG_INFO_BTF=y) to hook tcp_recvmsg/tcp_sendmsg"
                    .to_string(),
            ));
        }
        let mut first_error = None;
        for (socket, sched) in ATTEMPTS {
            match with_loaded(cfg, socket, sched, attach) {
                Ok((links, progs, ring_map, counters)) => {
                    let owned = ring_map.as_fd().try_clone_to_owned().map_err(|e| {
                        LiveError::load("duplicating the breakdown ring descriptor", e)
                    })?;
                    let ring = Ring::new(owned, ring_map.max_entries() as usize)?;
                    let mut limits = Vec::new();
                    if !sched {
                        limits.push(
                            "--breakdown: this kernel does not let fixscope hook the scheduler \
                             (tp_btf/sched_wakeup, tp_btf/sched_switch): sched_delay is not \
                             measured; wire_to_read, app and write_to_wire are"
                                .to_string(),
                        );
                    }
                    return Ok(Breakdown {
                        ring: Some(ring),
                        counters,
                        links,
                        progs,
                        limits,
                        socket_hooks: socket,
                    });
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        // Refused for want of a capability: say that, not that the kernel lacks hooks.
        if let Some(LiveError::NotPrivileged(why)) = first_error {
            return Err(LiveError::NotPrivileged(format!("--breakdown: {why}")));
        }
        let why = first_error.map_or_else(String::new, |e| crate::error::chain(&e));
        Err(LiveError::NoBtfOrBpf(format!(
            "--breakdown: this kernel lets fixscope hook neither tcp_recvmsg/tcp_sendmsg \
             (fentry/fexit: BPF trampolines, x86_64 Linux >= 5.5, arm64 >= 6.0) nor the \
             socket tracepoints sock_recv_length/tcp_sendmsg_locked/sock_send_length \
             (Linux >= 6.12), so no stage of the breakdown can be measured ({why})"
        )))
    }

    /// Which socket hooks are in use.
    pub(crate) fn socket_hooks(&self) -> SocketHooks {
        self.socket_hooks
    }

    /// The socket calls' ring, for the capture's timestamp merge (`merge.rs`): the calls
    /// then come in time order with the segments. Its records begin with `ts_ns`, as the
    /// merge needs; a write's record is stamped at the write's entry but committed at its
    /// end, so a write that blocks longer than the merge's grace arrives late (counted as
    /// `late_records`, and harmless: the pipeline places calls by sequence number).
    pub(crate) fn take_ring(&mut self) -> Option<Ring> {
        self.ring.take()
    }

    pub(crate) fn counters(&self) -> Result<BreakdownCounters, LiveError> {
        BreakdownCounters::read(&self.counters, self.recursion_misses()?)
    }

    /// Runs of our programs the kernel skipped (their per-program recursion guard), summed:
    /// `bpf_prog_info.recursion_misses`, which the kernel keeps even after a program is
    /// detached, so the summary read after detaching still has every miss.
    fn recursion_misses(&self) -> Result<u64, LiveError> {
        self.progs.iter().try_fold(0u64, |sum, (name, fd)| {
            let info = sys::prog_info_by_fd(fd.as_raw_fd()).map_err(|e| {
                LiveError::bpf(format!("reading {name}'s info (recursion misses)"), e)
            })?;
            Ok(sum + info.recursion_misses)
        })
    }

    pub(crate) fn limits(&self) -> &[String] {
        &self.limits
    }

    /// Detaches every program (closing a tracing link detaches it; that cannot fail).
    pub(crate) fn detach(&mut self) {
        self.links.clear();
    }

    pub(crate) fn program_stats(&self) -> Result<Vec<ProgramStats>, LiveError> {
        self.progs
            .iter()
            .map(|(_, fd)| {
                sys::prog_stats_by_fd(fd.as_raw_fd())
                    .map_err(|e| LiveError::bpf("reading breakdown program info", e))
            })
            .collect()
    }
}

/// Loads the breakdown programs `Breakdown::open` would use on this kernel — the first of
/// the hook sets that loads — into the running kernel, which runs the verifier on them, and
/// unloads them again; attaches nothing. The error is the best set's.
pub fn verify_breakdown_programs(cfg: &LiveConfig) -> Result<Vec<VerifiedProgram>, LiveError> {
    sys::check_privileges()?;
    crate::probe::raise_memlock(ring_bytes(cfg) as u64 + (4 << 20))?;
    let mut first_error = None;
    for (socket, sched) in ATTEMPTS {
        let verified = with_loaded(cfg, socket, sched, |skel, names| {
            names
                .iter()
                .map(|&name| {
                    let p = program(skel, name)?;
                    let info = sys::prog_info_by_fd(p.as_fd().as_raw_fd())
                        .map_err(|e| LiveError::bpf("reading a loaded program's info", e))?;
                    Ok(VerifiedProgram {
                        name: name.to_string(),
                        insns: info.xlated_prog_len / 8,
                        verified_insns: info.verified_insns,
                    })
                })
                .collect::<Result<Vec<_>, LiveError>>()
        });
        match verified {
            Ok(v) => return Ok(v),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    Err(first_error.unwrap_or_else(|| LiveError::Config("no breakdown hook set".to_string())))
}

/// The breakdown ring: an eighth of the TC ring (a socket call is one 88-byte record, a
/// packet at least one 208-byte one), at least 1 MiB, at most 64 MiB.
fn ring_bytes(cfg: &LiveConfig) -> u32 {
    ((cfg.ring_bytes / 8).clamp(1 << 20, 64 << 20)).next_power_of_two() as u32
}

/// Opens the object, keeps only the programs of `socket` (and the scheduler's with
/// `sched`), loads it and hands the skeleton and those program names to `f`.
fn with_loaded<T>(
    cfg: &LiveConfig,
    socket: SocketHooks,
    sched: bool,
    f: impl FnOnce(&BreakdownSkel<'_>, &[&'static str]) -> Result<T, LiveError>,
) -> Result<T, LiveError> {
    let mut names: Vec<&'static str> = socket.programs().to_vec();
    if sched {
        names.extend(SCHED_PROGRAMS);
    }
    let mut storage = MaybeUninit::<OpenObject>::uninit();
    let mut open = BreakdownSkelBuilder::default()
        .open(&mut storage)
        .map_err(|e| LiveError::load("opening the breakdown BPF object", e))?;
    configure(&mut open, cfg)?;
    for mut p in open.open_object_mut().progs_mut() {
        let keep = names.iter().any(|n| p.name().to_str() == Some(n));
        p.set_autoload(keep);
    }
    let skel = open.load().map_err(|e| {
        LiveError::load(
            format!(
                "breakdown.bpf.o ({socket:?} socket hooks{}; the verifier log is printed with -v)",
                if sched { " + scheduler hooks" } else { "" }
            ),
            e,
        )
    })?;
    f(&skel, &names)
}

fn program<'a>(skel: &'a BreakdownSkel<'_>, name: &str) -> Result<ProgramMut<'a>, LiveError> {
    skel.object()
        .progs_mut()
        .find(|p| p.name().to_str() == Some(name))
        .ok_or_else(|| {
            LiveError::load(
                format!("breakdown.bpf.o has no program {name}"),
                std::io::Error::from(std::io::ErrorKind::NotFound),
            )
        })
}

type Attached = (Vec<Link>, Vec<(String, OwnedFd)>, MapHandle, MapHandle);

/// Attaches `names` in order and keeps what outlives the skeleton: the links, program and
/// map descriptors.
fn attach(skel: &BreakdownSkel<'_>, names: &[&'static str]) -> Result<Attached, LiveError> {
    let ring_map = MapHandle::try_from(&skel.maps.fxb_ring)
        .map_err(|e| LiveError::bpf("duplicating the breakdown ring descriptor", e))?;
    let counters = MapHandle::try_from(&skel.maps.fxb_counters)
        .map_err(|e| LiveError::bpf("duplicating the breakdown counters descriptor", e))?;
    let mut links = Vec::with_capacity(names.len());
    let mut progs = Vec::with_capacity(names.len());
    // In the order of the name lists: a write's first hook goes in before its second, so
    // a write in flight when the second came is skipped, never recorded half-seen.
    for &name in names {
        let prog = program(skel, name)?;
        let link = prog
            .attach()
            .map_err(|e| LiveError::attach(format!("--breakdown: attaching {name}"), e))?;
        let fd = prog
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| LiveError::bpf(format!("duplicating {name}'s descriptor"), e))?;
        links.push(link);
        progs.push((name.to_string(), fd));
    }
    Ok((links, progs, ring_map, counters))
}

/// The same filter as the TC programs' ([`crate::filter::WatchFilter`]), written into this object's rodata.
fn configure(open: &mut OpenBreakdownSkel<'_>, cfg: &LiveConfig) -> Result<(), LiveError> {
    crate::filter::write_socket_hooks_config!(
        open.maps.rodata_data.as_deref_mut(),
        cfg,
        "breakdown"
    );
    open.maps
        .fxb_ring
        .set_max_entries(ring_bytes(cfg))
        .map_err(|e| LiveError::load("sizing the breakdown ring", e))?;
    Ok(())
}
