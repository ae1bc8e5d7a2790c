//! What the running kernel can do for fixscope, found by asking it — never by its version
//! number: RHEL 9 calls itself 5.14 and carries 6.x's BPF, RHEL 8.10 says 4.18 and behaves
//! like 5.10, UEK6 says 5.4. Each probe names the feature and the upstream Linux that
//! brought it, so a kernel that lacks one gets an error naming it (as Cilium does), and
//! `fixscope check` prints them all. The deciding check stays loading the real programs
//! (`verify_programs`, `verify_breakdown_programs`): a probe only explains a failure.

use std::io;
use std::mem::size_of;
use std::os::fd::{AsFd, AsRawFd};
use std::path::Path;

use libbpf_rs::btf::types::{Func, FuncProto};
use libbpf_rs::btf::{Btf, ReferencesType};
use libbpf_rs::libbpf_sys;
use libbpf_rs::{MapType, ProgramType};
use serde::Serialize;

use crate::capabilities::{missing_for_load, own_cap_eff};
use crate::LiveError;

/// What a feature is needed for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NeededFor {
    /// Live capture cannot run without it.
    Capture,
    /// Live capture runs without it, differently (TCX: clsact filters instead; memcg
    /// accounting: RLIMIT_MEMLOCK is raised instead).
    CaptureOptional,
    /// `--breakdown` needs it (or, for the alternatives, one of them).
    Breakdown,
}

/// A probe's answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", content = "why", rename_all = "snake_case")]
pub enum Presence {
    Yes,
    No,
    /// The probe itself failed (no privileges, bpf() refused): says nothing either way.
    Unknown(String),
}

/// One kernel feature, probed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Feature {
    /// Stable identifier (`ringbuf`, `tcx`, ...), for scripts reading `fixscope check --json`.
    pub id: &'static str,
    /// What it is, for people.
    pub name: &'static str,
    /// The upstream Linux that brought it (distributions backport: RHEL's 5.14 has 6.x's).
    pub since: &'static str,
    pub needed_for: NeededFor,
    pub present: Presence,
}

impl Feature {
    fn new(
        id: &'static str,
        name: &'static str,
        since: &'static str,
        needed_for: NeededFor,
        present: Presence,
    ) -> Feature {
        Feature {
            id,
            name,
            since,
            needed_for,
            present,
        }
    }

    /// "the BPF ring buffer (Linux >= 5.8)".
    pub fn describe(&self) -> String {
        format!("{} (upstream Linux >= {})", self.name, self.since)
    }
}

fn presence(r: libbpf_rs::Result<bool>) -> Presence {
    match r {
        Ok(true) => Presence::Yes,
        Ok(false) => Presence::No,
        Err(e) => Presence::Unknown(e.to_string()),
    }
}

/// Why a probe that this process may not run says nothing (`unknown (needs root)`).
pub const NEEDS_ROOT: &str = "needs root";

/// Whether this process may make the bpf() calls a probe makes. libbpf's probes cannot
/// tell a refusal for lack of privilege from a missing feature: its program and map type
/// probes then answer no, its helper probes yes (a load that fails without a verifier
/// message is taken as support). A canary of the same kind refused with EPERM or EACCES
/// makes their answer `unknown (needs root)` instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    Allowed,
    Refused,
}

impl Access {
    fn of<T>(canary: io::Result<T>) -> Access {
        match canary {
            Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM | libc::EACCES)) => {
                Access::Refused
            }
            _ => Access::Allowed,
        }
    }

    /// May this process load a `r0 = 0; exit` program of `prog_type`?
    fn prog(prog_type: libbpf_sys::bpf_prog_type) -> Access {
        Access::of(trivial_prog(prog_type, 0))
    }

    /// May this process create a BPF map (a one-entry array, which every kernel has)?
    fn maps() -> Access {
        // SAFETY: the name is NUL-terminated; null options are the defaults. The result is
        // a new fd or a negative errno.
        let fd = unsafe {
            libbpf_sys::bpf_map_create(
                libbpf_sys::BPF_MAP_TYPE_ARRAY,
                c"fxs_probe".as_ptr(),
                4,
                4,
                1,
                std::ptr::null(),
            )
        };
        Access::of(if fd < 0 {
            Err(io::Error::from_raw_os_error(-fd))
        } else {
            // SAFETY: a fresh map descriptor we own.
            Ok(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) })
        })
    }

    /// `probe`'s answer, or `unknown (needs root)` when the canary was refused.
    fn probe(self, probe: impl FnOnce() -> Presence) -> Presence {
        match self {
            Access::Allowed => probe(),
            Access::Refused => Presence::Unknown(NEEDS_ROOT.to_string()),
        }
    }
}

/// Helpers the TC programs call, with the Linux that brought each.
const CAPTURE_HELPERS: [(&str, libbpf_sys::bpf_func_id, &str); 6] = [
    (
        "helper bpf_map_lookup_elem",
        libbpf_sys::BPF_FUNC_map_lookup_elem,
        "3.19",
    ),
    (
        "helper bpf_ktime_get_ns",
        libbpf_sys::BPF_FUNC_ktime_get_ns,
        "4.1",
    ),
    (
        "helper bpf_get_smp_processor_id",
        libbpf_sys::BPF_FUNC_get_smp_processor_id,
        "4.1",
    ),
    (
        "helper bpf_skb_load_bytes",
        libbpf_sys::BPF_FUNC_skb_load_bytes,
        "4.5",
    ),
    (
        "helper bpf_ringbuf_reserve",
        libbpf_sys::BPF_FUNC_ringbuf_reserve,
        "5.8",
    ),
    (
        "helper bpf_ringbuf_submit",
        libbpf_sys::BPF_FUNC_ringbuf_submit,
        "5.8",
    ),
];
const CAPTURE_HELPER_IDS: [&str; 6] = [
    "helper_map_lookup_elem",
    "helper_ktime_get_ns",
    "helper_get_smp_processor_id",
    "helper_skb_load_bytes",
    "helper_ringbuf_reserve",
    "helper_ringbuf_submit",
];

/// The features live capture needs, probed (each a bpf() call or two; no program of ours
/// is loaded, nothing is attached).
pub fn capture_features() -> Vec<Feature> {
    use NeededFor::Capture;
    let sched_cls = Access::prog(libbpf_sys::BPF_PROG_TYPE_SCHED_CLS);
    let maps = Access::maps();
    let mut out = vec![
        Feature::new(
            "prog_sched_cls",
            "BPF program type sched_cls (TC classifier)",
            "4.1",
            Capture,
            sched_cls.probe(|| presence(ProgramType::SchedCls.is_supported())),
        ),
        Feature::new(
            "map_ringbuf",
            "BPF map type ringbuf (BPF ring buffer)",
            "5.8",
            Capture,
            maps.probe(|| presence(MapType::RingBuf.is_supported())),
        ),
        Feature::new(
            "map_array_of_maps",
            "BPF map type array_of_maps",
            "4.12",
            Capture,
            maps.probe(|| presence(MapType::ArrayOfMaps.is_supported())),
        ),
        Feature::new(
            "map_percpu_array",
            "BPF map type percpu_array",
            "4.6",
            Capture,
            maps.probe(|| presence(MapType::PercpuArray.is_supported())),
        ),
    ];
    for ((name, helper, since), id) in CAPTURE_HELPERS.into_iter().zip(CAPTURE_HELPER_IDS) {
        out.push(Feature::new(
            id,
            name,
            since,
            Capture,
            sched_cls.probe(|| presence(ProgramType::SchedCls.is_helper_supported(helper))),
        ));
    }
    out.push(Feature::new(
        "tcx",
        "TCX links (else: clsact qdisc + cls_bpf filters)",
        "6.6",
        NeededFor::CaptureOptional,
        tcx(),
    ));
    out.push(Feature::new(
        "memcg_accounting",
        "BPF memory charged to the memory cgroup (else: to RLIMIT_MEMLOCK)",
        "5.11",
        NeededFor::CaptureOptional,
        memcg_accounting(),
    ));
    out
}

/// The features `--breakdown` needs (one of the two socket hook sets, and for its
/// scheduling stage the tp_btf scheduler hooks), probed from the kernel's BTF and bpf().
pub fn breakdown_features() -> Vec<Feature> {
    use NeededFor::Breakdown;
    let btf = Btf::from_vmlinux();
    let has_btf = Path::new("/sys/kernel/btf/vmlinux").exists();
    let in_btf = |name: &str| match &btf {
        Ok(b) => {
            if b.type_by_name::<libbpf_rs::btf::BtfType<'_>>(name)
                .is_some()
            {
                Presence::Yes
            } else {
                Presence::No
            }
        }
        Err(e) => Presence::Unknown(format!("no kernel BTF: {e}")),
    };
    vec![
        Feature::new(
            "kernel_btf",
            "kernel BTF (/sys/kernel/btf/vmlinux, CONFIG_DEBUG_INFO_BTF)",
            "5.4",
            Breakdown,
            if has_btf { Presence::Yes } else { Presence::No },
        ),
        Feature::new(
            "prog_tracing",
            "BPF program type tracing (fentry/fexit, tp_btf)",
            "5.5",
            Breakdown,
            // libbpf's probe loads an fentry program; a kernel whose policy refuses
            // fentry/fexit may still take tp_btf: only the real load below decides.
            // Without CAP_BPF + CAP_PERFMON (or CAP_SYS_ADMIN) it is refused whatever the
            // kernel has.
            if own_cap_eff().is_some_and(|caps| !missing_for_load(caps).is_empty()) {
                Presence::Unknown(NEEDS_ROOT.to_string())
            } else {
                match presence(ProgramType::Tracing.is_supported()) {
                    Presence::No => Presence::Unknown(
                        "libbpf's fentry probe was refused; the breakdown load decides".to_string(),
                    ),
                    p => p,
                }
            },
        ),
        Feature::new(
            "btf_tcp_recvmsg",
            "tcp_recvmsg in the kernel's BTF (fentry/fexit socket hooks)",
            "5.5",
            Breakdown,
            in_btf("tcp_recvmsg"),
        ),
        Feature::new(
            "tp_sock_recv_length",
            "tracepoints sock_recv_length/sock_send_length (socket hooks without trampolines)",
            "6.4",
            Breakdown,
            in_btf("btf_trace_sock_recv_length"),
        ),
        Feature::new(
            "tp_tcp_sendmsg_locked",
            "tracepoint tcp_sendmsg_locked (socket hooks without trampolines)",
            "6.12",
            Breakdown,
            in_btf("btf_trace_tcp_sendmsg_locked"),
        ),
        Feature::new(
            "tp_sched",
            "tracepoints sched_wakeup/sched_switch as tp_btf (the sched_delay stage)",
            "5.5",
            Breakdown,
            in_btf("btf_trace_sched_switch"),
        ),
    ]
}

/// The first required capture feature this kernel lacks, as the error to show.
pub(crate) fn require_capture_features() -> Result<(), LiveError> {
    let features = capture_features();
    for f in &features {
        if f.needed_for != NeededFor::Capture {
            continue;
        }
        match &f.present {
            Presence::Yes => {}
            Presence::No => {
                return Err(LiveError::NoBtfOrBpf(format!(
                    "this kernel lacks {}; `fixscope check` lists what it has",
                    f.describe()
                )))
            }
            Presence::Unknown(why)
                if why == NEEDS_ROOT || why.contains("ermission") || why.contains("EPERM") =>
            {
                return Err(LiveError::NotPrivileged(format!(
                    "bpf() refused while probing {}: {why}",
                    f.name
                )))
            }
            // A probe that could not decide is left to the real load to settle.
            Presence::Unknown(_) => {}
        }
    }
    Ok(())
}

/// Whether the kernel has TCX: attaches a do-nothing TC program to the loopback of a
/// network namespace made for this probe alone (as Cilium's probe does), so no interface
/// anyone uses is touched. Unknown without the privilege to make a namespace (CAP_SYS_ADMIN):
/// capture then just tries TCX and falls back to clsact.
pub fn tcx() -> Presence {
    match std::thread::spawn(tcx_in_new_netns).join() {
        Ok(p) => p,
        Err(_) => Presence::Unknown("the TCX probe's thread panicked".to_string()),
    }
}

fn tcx_in_new_netns() -> Presence {
    // unshare(CLONE_NEWNET) moves only this thread (a fresh one, which ends with the probe)
    // into the new namespace; it dies with the thread's exit.
    // SAFETY: plain syscall on the calling thread; the result is checked.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        let e = io::Error::last_os_error();
        return Presence::Unknown(if e.raw_os_error() == Some(libc::EPERM) {
            // CAP_SYS_ADMIN, to make a network namespace for the probe.
            NEEDS_ROOT.to_string()
        } else {
            format!("cannot make a network namespace for the probe: {e}")
        });
    }
    let prog = match trivial_prog(
        libbpf_sys::BPF_PROG_TYPE_SCHED_CLS,
        libbpf_sys::BPF_TCX_INGRESS,
    ) {
        Ok(p) => p,
        // Kernels before TCX refuse the expected attach type for sched_cls.
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => return Presence::No,
        Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM | libc::EACCES)) => {
            return Presence::Unknown(NEEDS_ROOT.to_string())
        }
        Err(e) => return Presence::Unknown(format!("loading a probe program: {e}")),
    };
    let opts = libbpf_sys::bpf_link_create_opts {
        sz: size_of::<libbpf_sys::bpf_link_create_opts>() as libbpf_sys::size_t,
        ..Default::default()
    };
    // ifindex 1 is the new namespace's loopback.
    // SAFETY: `prog` is a valid program fd; `opts` is a valid, sized options struct.
    let link = unsafe {
        libbpf_sys::bpf_link_create(
            prog.as_fd().as_raw_fd(),
            1,
            libbpf_sys::BPF_TCX_INGRESS,
            &opts,
        )
    };
    if link >= 0 {
        // SAFETY: a fresh link descriptor we own; closing it detaches the program.
        drop(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(link) });
        return Presence::Yes;
    }
    match -link {
        libc::EINVAL | libc::EOPNOTSUPP => Presence::No,
        e => Presence::Unknown(format!(
            "TCX link create: {}",
            io::Error::from_raw_os_error(e)
        )),
    }
}

/// Loads `r0 = 0; exit` as a `prog_type` program with `attach_type` as expected attach type.
fn trivial_prog(
    prog_type: libbpf_sys::bpf_prog_type,
    attach_type: libbpf_sys::bpf_attach_type,
) -> io::Result<std::os::fd::OwnedFd> {
    let insns = [
        libbpf_sys::bpf_insn {
            code: (libbpf_sys::BPF_ALU64 | libbpf_sys::BPF_MOV | libbpf_sys::BPF_K) as u8,
            ..Default::default()
        },
        libbpf_sys::bpf_insn {
            code: (libbpf_sys::BPF_JMP | libbpf_sys::BPF_EXIT) as u8,
            ..Default::default()
        },
    ];
    let mut opts = libbpf_sys::bpf_prog_load_opts {
        sz: size_of::<libbpf_sys::bpf_prog_load_opts>() as libbpf_sys::size_t,
        expected_attach_type: attach_type,
        ..Default::default()
    };
    // SAFETY: `insns` holds 2 valid instructions; the strings are NUL-terminated; `opts`
    // is a valid, sized options struct. The result is a new fd or a negative errno.
    let fd = unsafe {
        libbpf_sys::bpf_prog_load(
            prog_type,
            c"fxs_probe".as_ptr(),
            c"GPL".as_ptr(),
            insns.as_ptr(),
            insns.len() as libbpf_sys::size_t,
            &mut opts,
        )
    };
    if fd < 0 {
        return Err(io::Error::from_raw_os_error(-fd));
    }
    // SAFETY: a fresh program descriptor we own.
    Ok(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) })
}

/// Whether BPF memory is charged to the memory cgroup (Linux 5.11) rather than to
/// RLIMIT_MEMLOCK — found as libbpf finds it: by the helper that came in the same release
/// (bpf_ktime_get_coarse_ns).
pub fn memcg_accounting() -> Presence {
    Access::prog(libbpf_sys::BPF_PROG_TYPE_SOCKET_FILTER).probe(|| {
        presence(
            ProgramType::SocketFilter.is_helper_supported(libbpf_sys::BPF_FUNC_ktime_get_coarse_ns),
        )
    })
}

/// The soft and hard RLIMIT_MEMLOCK, in bytes (`None`: unlimited).
pub fn memlock_limit() -> io::Result<(Option<u64>, Option<u64>)> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `r` is a valid rlimit to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut r) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let lim = |v: libc::rlim_t| (v != libc::RLIM_INFINITY).then_some(v);
    Ok((lim(r.rlim_cur), lim(r.rlim_max)))
}

/// Before Linux 5.11 every BPF map and program is charged to RLIMIT_MEMLOCK (64 KiB by
/// default on most distributions: not even one ring). Raises it to unlimited — root, or
/// CAP_SYS_RESOURCE, may exceed the hard limit — or else to the hard limit; then fails,
/// naming what to change, if `needed` bytes still do not fit. Does nothing where the
/// kernel charges the memory cgroup instead.
pub(crate) fn raise_memlock(needed: u64) -> Result<(), LiveError> {
    if memcg_accounting() == Presence::Yes {
        return Ok(());
    }
    let unlimited = libc::rlimit {
        rlim_cur: libc::RLIM_INFINITY,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: `unlimited` is a valid rlimit.
    if unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &unlimited) } == 0 {
        return Ok(());
    }
    let (_, hard) = memlock_limit().map_err(|e| LiveError::load("reading RLIMIT_MEMLOCK", e))?;
    let Some(hard) = hard else {
        return Ok(()); // unlimited hard limit: the soft one goes up below
    };
    let to_hard = libc::rlimit {
        rlim_cur: hard,
        rlim_max: hard,
    };
    // SAFETY: `to_hard` is a valid rlimit (the soft limit may always rise to the hard one).
    unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &to_hard) };
    if hard >= needed {
        return Ok(());
    }
    Err(LiveError::NotPrivileged(memlock_message(hard, needed)))
}

fn memlock_message(hard: u64, needed: u64) -> String {
    format!(
        "this kernel charges BPF maps to RLIMIT_MEMLOCK (memory-cgroup accounting came in \
         Linux 5.11) and its hard limit here is {} KiB, below the {} MiB the rings need: run \
         as root, give the binary CAP_SYS_RESOURCE as well (`setcap \
         cap_bpf,cap_perfmon,cap_net_admin,cap_sys_resource+ep`), or raise the hard limit \
         (`LimitMEMLOCK=infinity` in a systemd unit, `memlock` in \
         /etc/security/limits.conf), or use a smaller --ring-mb",
        hard / 1024,
        needed.div_ceil(1 << 20)
    )
}

/// The running kernel's `tcp_recvmsg` signature, from its BTF: (number of arguments,
/// index of `flags`). (sk, msg, len, nonblock, flags, addr_len) before Linux 5.19 — (6, 4);
/// (sk, msg, len, flags, addr_len) since — (5, 3); (sk, msg, len, flags) since addr_len
/// went (6.18) — (4, 3). `None` without BTF, without the function, or without a `flags`.
pub fn tcp_recvmsg_args() -> Option<(u32, u32)> {
    let btf = Btf::from_vmlinux().ok()?;
    let func = btf.type_by_name::<Func<'_>>("tcp_recvmsg")?;
    let proto = FuncProto::try_from(func.referenced_type()).ok()?;
    let flags = proto
        .iter()
        .position(|p| p.name.is_some_and(|n| n == "flags"))?;
    Some((proto.len() as u32, flags as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memlock_message_names_the_limit_and_the_ways_out() {
        let m = memlock_message(64 << 10, 64 << 20);
        assert!(m.contains("64 KiB"), "{m}");
        assert!(m.contains("64 MiB"), "{m}");
        assert!(m.contains("5.11"), "{m}");
        assert!(m.contains("cap_sys_resource"), "{m}");
        assert!(m.contains("LimitMEMLOCK=infinity"), "{m}");
    }

    #[test]
    fn a_feature_is_described_with_its_upstream_version() {
        let f = Feature::new(
            "map_ringbuf",
            "BPF map type ringbuf",
            "5.8",
            NeededFor::Capture,
            Presence::No,
        );
        assert_eq!(f.describe(), "BPF map type ringbuf (upstream Linux >= 5.8)");
        let json = serde_json::to_string(&f).expect("serialises");
        assert!(json.contains(r#""present":{"state":"no"}"#), "{json}");
    }
}
