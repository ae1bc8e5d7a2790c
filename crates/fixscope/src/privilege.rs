//! `-Z USER` (`--relinquish-privileges`, as tcpdump): once the programs are attached and the
//! ring is mapped, become USER and give up every capability the rest of the run does not
//! need.
//!
//! What a run still needs after attaching (checked on Linux 6.18, see
//! docs/reliability.md):
//! - reading the ring (an mmap made before the drop) and `ppoll` on its fd: nothing;
//! - reading the counters map and detaching TCX links (bpf() on fds we hold): nothing on
//!   Linux >= 6.5, where the `unprivileged_bpf_disabled` check moved to program and map
//!   creation; older kernels refuse every bpf() command without CAP_BPF while that sysctl is
//!   set, so there it is kept — decided by [`bpf_needs_cap_bpf`], a probe, not by the
//!   version (a distribution may carry the change or not);
//! - removing our clsact filters (and the qdisc we created) at exit: CAP_NET_ADMIN, kept
//!   only when attached with tc filters;
//! - the yielding consumer's guard lifting the consumer out of SCHED_IDLE: instead of
//!   CAP_SYS_NICE, RLIMIT_NICE is raised to 20 before attaching (nice 0 at best: nothing
//!   above normal priority, no real-time), which the kernel's `can_nice` accepts. Without
//!   CAP_SYS_RESOURCE to raise it (containers), the consumer runs at normal priority.
//!
//! Capabilities are per thread. The uid/gid/group changes go through glibc, which applies
//! them to every thread of the process; leaving uid 0 without SECBIT_KEEP_CAPS clears the
//! permitted and effective sets of every thread but this one, which then sets its own to
//! what is kept and drops the rest from its bounding set. The process becomes non-dumpable
//! (the kernel does that on the uid change), so USER's other processes cannot ptrace it and
//! take its BPF or netlink descriptors.

use std::ffi::{CStr, CString};
use std::io;

use anyhow::{bail, Context, Result};

use crate::user_db;

/// Capability numbers (linux/capability.h).
pub const CAP_SETGID: u32 = 6;
pub const CAP_SETUID: u32 = 7;
pub const CAP_SETPCAP: u32 = 8;
pub const CAP_NET_ADMIN: u32 = 12;
pub const CAP_SYS_RESOURCE: u32 = 24;
pub const CAP_SYS_ADMIN: u32 = 21;
pub const CAP_BPF: u32 = 39;

/// Names of the capabilities fixscope may keep or need, for messages.
pub fn cap_name(cap: u32) -> String {
    match cap {
        CAP_SETGID => "CAP_SETGID".into(),
        CAP_SETUID => "CAP_SETUID".into(),
        CAP_SETPCAP => "CAP_SETPCAP".into(),
        CAP_NET_ADMIN => "CAP_NET_ADMIN".into(),
        CAP_SYS_RESOURCE => "CAP_SYS_RESOURCE".into(),
        CAP_BPF => "CAP_BPF".into(),
        n => format!("capability {n}"),
    }
}

/// Whom to become.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    /// From the passwd entry: supplementary groups come from the group database.
    pub in_passwd: bool,
}

/// What to keep after the drop, and why (for the message).
#[derive(Clone, Debug, Default)]
pub struct Keep {
    /// Capabilities kept in the permitted and effective sets, each with the reason.
    pub caps: Vec<(u32, &'static str)>,
    /// The yielding consumer's guard must still be able to lift it out of SCHED_IDLE
    /// (checked after the drop; see [`allow_nice_zero`]).
    pub leave_sched_idle: bool,
}

impl Keep {
    fn mask(&self) -> u64 {
        self.caps.iter().fold(0, |m, (c, _)| m | (1u64 << c))
    }
}

/// What the drop did, for one info line.
#[derive(Clone, Debug)]
pub struct Relinquished {
    pub target: Target,
    pub kept: Vec<String>,
}

impl std::fmt::Display for Relinquished {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "running as user {} (uid {}, gid {}) from now on; capabilities kept: {}",
            self.target.name,
            self.target.uid,
            self.target.gid,
            if self.kept.is_empty() {
                "none".to_string()
            } else {
                self.kept.join(", ")
            }
        )
    }
}

/// Looks USER up: a name from the passwd database, or a numeric uid (its passwd entry's
/// group if it has one, else the same number as gid).
pub fn resolve(user: &str) -> Result<Target> {
    let target = lookup(user)?;
    if target.uid == 0 {
        bail!(
            "-Z/--relinquish-privileges {user}: that is root, which keeps every privilege; \
             name an unprivileged user"
        );
    }
    Ok(target)
}

fn lookup(user: &str) -> Result<Target> {
    if user.is_empty() {
        bail!("-Z/--relinquish-privileges needs a user name");
    }
    if let Some(t) = passwd_by_name(user)? {
        return Ok(t);
    }
    if let Ok(uid) = user.parse::<u32>() {
        if STATIC_BINARY {
            // passwd_by_name already looked the number up as a uid too.
            return Ok(Target {
                name: uid.to_string(),
                uid,
                gid: uid,
                in_passwd: false,
            });
        }
        // SAFETY: getpwuid_r below is given buffers it may write; see passwd_lookup.
        return Ok(passwd_lookup(|pw, buf, len, out| unsafe {
            libc::getpwuid_r(uid, pw, buf, len, out)
        })?
        .unwrap_or(Target {
            name: uid.to_string(),
            uid,
            gid: uid,
            in_passwd: false,
        }));
    }
    bail!("-Z/--relinquish-privileges: no such user: {user}")
}

fn passwd_by_name(user: &str) -> Result<Option<Target>> {
    if STATIC_BINARY {
        return Ok(user_db::passwd_entry(&user_db::read("/etc/passwd"), user).map(static_target));
    }
    let c = CString::new(user).context("-Z: user name contains a NUL byte")?;
    // SAFETY: `c` outlives the call; the buffers are those passwd_lookup hands over.
    passwd_lookup(|pw, buf, len, out| unsafe { libc::getpwnam_r(c.as_ptr(), pw, buf, len, out) })
}

/// The static binary (`make dist`) cannot use NSS: it reads the user database's files
/// (user_db.rs); the dynamic build asks glibc.
const STATIC_BINARY: bool = cfg!(target_feature = "crt-static");

fn static_target(entry: user_db::PasswdEntry) -> Target {
    Target {
        name: entry.name,
        uid: entry.uid,
        gid: entry.gid,
        in_passwd: true,
    }
}

/// Runs a getpw*_r call with its buffers and turns the entry into a [`Target`].
fn passwd_lookup(
    call: impl Fn(*mut libc::passwd, *mut libc::c_char, usize, *mut *mut libc::passwd) -> i32,
) -> Result<Option<Target>> {
    let mut buf = vec![0 as libc::c_char; 16384];
    // SAFETY: passwd is plain old data; all-zero is a valid value.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut out: *mut libc::passwd = std::ptr::null_mut();
    let rc = call(&mut pw, buf.as_mut_ptr(), buf.len(), &mut out);
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc)).context("-Z: reading the user database");
    }
    if out.is_null() {
        return Ok(None);
    }
    // SAFETY: on success pw_name points at a NUL-terminated string inside `buf`.
    let name = unsafe { CStr::from_ptr(pw.pw_name) }
        .to_string_lossy()
        .into_owned();
    Ok(Some(Target {
        name,
        uid: pw.pw_uid,
        gid: pw.pw_gid,
        in_passwd: true,
    }))
}

/// The capability sets of the calling thread, from /proc/thread-self/status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CapSets {
    pub eff: u64,
    pub prm: u64,
    pub bnd: u64,
}

pub fn parse_cap_sets(status: &str) -> Option<CapSets> {
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
    };
    Some(CapSets {
        eff: field("CapEff:")?,
        prm: field("CapPrm:")?,
        bnd: field("CapBnd:")?,
    })
}

fn thread_caps() -> Result<CapSets> {
    let status = std::fs::read_to_string("/proc/thread-self/status")
        .context("-Z: reading /proc/thread-self/status")?;
    parse_cap_sets(&status).context("-Z: no capability lines in /proc/thread-self/status")
}

fn last_cap() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(40)
}

fn os_err(what: &str) -> anyhow::Error {
    anyhow::Error::new(io::Error::last_os_error()).context(format!("-Z: {what}"))
}

/// Becomes `target`, keeping only `keep`. Call once, from the thread that will detach.
pub fn relinquish(target: &Target, keep: &Keep) -> Result<Relinquished> {
    if target.uid == 0 {
        bail!("-Z: refusing to 'drop' to root");
    }
    let before = thread_caps()?;
    let has = |cap: u32| before.eff & (1u64 << cap) != 0;
    let missing: Vec<String> = [CAP_SETUID, CAP_SETGID]
        .into_iter()
        .filter(|&c| !has(c))
        .map(cap_name)
        .collect();
    if !missing.is_empty() {
        bail!(
            "-Z/--relinquish-privileges needs {} to change user (missing: {}); run as root or add them",
            "CAP_SETUID + CAP_SETGID",
            missing.join(", ")
        );
    }
    let keep_mask = keep.mask() & before.prm;
    // The bounding set needs CAP_SETPCAP, so it goes first, while we still have it.
    if has(CAP_SETPCAP) {
        for cap in 0..=last_cap() {
            if keep_mask & (1u64 << cap) == 0 && before.bnd & (1u64 << cap) != 0 {
                // SAFETY: prctl with integer arguments only.
                if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) } != 0
                {
                    return Err(os_err(&format!(
                        "dropping {} from the bounding set",
                        cap_name(cap)
                    )));
                }
            }
        }
    }
    set_groups(target)?;
    // SAFETY: prctl with integer arguments only; per thread (this one).
    if unsafe { libc::prctl(libc::PR_SET_KEEPCAPS, u64::from(keep_mask != 0), 0, 0, 0) } != 0 {
        return Err(os_err("PR_SET_KEEPCAPS"));
    }
    // glibc applies these to every thread of the process.
    // SAFETY: plain syscall wrappers with integer arguments.
    if unsafe { libc::setresgid(target.gid, target.gid, target.gid) } != 0 {
        return Err(os_err(&format!("setresgid({})", target.gid)));
    }
    // SAFETY: as above.
    if unsafe { libc::setresuid(target.uid, target.uid, target.uid) } != 0 {
        return Err(os_err(&format!("setresuid({})", target.uid)));
    }
    // SAFETY: prctl with integer arguments only.
    unsafe { libc::prctl(libc::PR_SET_KEEPCAPS, 0, 0, 0, 0) };
    set_caps(keep_mask)?;
    // SAFETY: prctl with integer arguments only.
    if unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        )
    } != 0
    {
        return Err(os_err("clearing the ambient capabilities"));
    }
    // SAFETY: prctl with integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(os_err("PR_SET_NO_NEW_PRIVS"));
    }
    verify(target, keep_mask)?;
    if keep.leave_sched_idle {
        can_leave_sched_idle()?;
    }
    Ok(Relinquished {
        target: target.clone(),
        kept: keep
            .caps
            .iter()
            .filter(|(c, _)| keep_mask & (1u64 << c) != 0)
            .map(|(c, why)| format!("{} ({why})", cap_name(*c)))
            .collect(),
    })
}

/// Lets this process's threads go from SCHED_IDLE back to nice 0 without CAP_SYS_NICE
/// (which a dropped guard thread no longer has): RLIMIT_NICE 20 means "nice 0 at best", no
/// more than normal priority. Process-wide; call before the guard thread starts. Raising
/// the hard limit needs CAP_SYS_RESOURCE.
pub fn allow_nice_zero() -> Result<()> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid rlimit to write.
    if unsafe { libc::getrlimit(libc::RLIMIT_NICE, &mut lim) } != 0 {
        return Err(os_err("getrlimit(RLIMIT_NICE)"));
    }
    if lim.rlim_cur >= 20 {
        return Ok(());
    }
    let lim = libc::rlimit {
        rlim_cur: 20,
        rlim_max: lim.rlim_max.max(20),
    };
    // SAFETY: `lim` is a valid rlimit to read.
    if unsafe { libc::setrlimit(libc::RLIMIT_NICE, &lim) } != 0 {
        bail!(
            "raising RLIMIT_NICE to 20 needs CAP_SYS_RESOURCE ({}); or start fixscope with `ulimit -e 20`",
            io::Error::last_os_error()
        );
    }
    Ok(())
}

/// After the drop: SCHED_IDLE -> SCHED_OTHER must still work (on a throwaway thread).
fn can_leave_sched_idle() -> Result<()> {
    let set = |policy| {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: a valid sched_param; pid 0 is the calling thread.
        (unsafe { libc::sched_setscheduler(0, policy, &param) } == 0)
            .then_some(())
            .ok_or_else(io::Error::last_os_error)
    };
    std::thread::spawn(move || set(libc::SCHED_IDLE).and_then(|()| set(libc::SCHED_OTHER)))
        .join()
        .map_err(|_| anyhow::anyhow!("-Z: the priority probe panicked"))?
        .context("-Z: after the drop the consumer could not leave SCHED_IDLE")
}

fn set_groups(target: &Target) -> Result<()> {
    if target.in_passwd && STATIC_BINARY {
        let groups = user_db::group_list(&user_db::read("/etc/group"), &target.name, target.gid);
        // SAFETY: `groups` holds groups.len() gids and outlives the call.
        if unsafe { libc::setgroups(groups.len(), groups.as_ptr()) } != 0 {
            return Err(os_err("setgroups"));
        }
    } else if target.in_passwd {
        let c = CString::new(target.name.as_str()).context("-Z: user name")?;
        // SAFETY: `c` is NUL-terminated and outlives the call.
        if unsafe { libc::initgroups(c.as_ptr(), target.gid) } != 0 {
            return Err(os_err(&format!("initgroups({})", target.name)));
        }
    } else {
        let groups = [target.gid];
        // SAFETY: `groups` holds the one gid we pass.
        if unsafe { libc::setgroups(1, groups.as_ptr()) } != 0 {
            return Err(os_err("setgroups"));
        }
    }
    Ok(())
}

/// Whether this kernel refuses bpf() commands on descriptors we already hold to a process
/// without CAP_BPF (and CAP_SYS_ADMIN): before Linux 6.5 `kernel.unprivileged_bpf_disabled`
/// was checked at the top of bpf() for every command; since, only where programs and maps
/// are created. Probed, not inferred from the version: a throwaway thread drops both
/// capabilities (capabilities are per thread; the others keep theirs) and asks for the
/// info of descriptor -1 — EPERM if the kernel checks privilege first, EBADFD if it looks
/// at the descriptor. Any other failure keeps CAP_BPF (the safe side).
pub fn bpf_needs_cap_bpf() -> Result<bool> {
    std::thread::spawn(|| -> Result<bool> {
        let caps = thread_caps()?;
        set_caps(caps.prm & !((1u64 << CAP_BPF) | (1u64 << CAP_SYS_ADMIN)))?;
        // The kernel's "not a descriptor" is EBADFD here (EBADF on some paths).
        Ok(!matches!(
            bpf_info_of_bad_fd(),
            Some(libc::EBADFD) | Some(libc::EBADF)
        ))
    })
    .join()
    .map_err(|_| anyhow::anyhow!("-Z: the bpf() privilege probe panicked"))?
}

/// errno of bpf(BPF_OBJ_GET_INFO_BY_FD) on descriptor -1 (None if it succeeded).
fn bpf_info_of_bad_fd() -> Option<i32> {
    const BPF_OBJ_GET_INFO_BY_FD: libc::c_long = 15;
    // union bpf_attr's info member: { u32 bpf_fd, u32 info_len, u64 info }.
    let attr: [u64; 2] = [u64::from(u32::MAX), 0];
    // SAFETY: a 16-byte attribute the kernel reads as `info` with a null buffer of length
    // 0; it writes nothing.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_OBJ_GET_INFO_BY_FD,
            attr.as_ptr(),
            std::mem::size_of_val(&attr) as libc::c_uint,
        )
    };
    (rc != 0).then(|| io::Error::last_os_error().raw_os_error().unwrap_or(0))
}

/// capset(2) on the calling thread: effective = permitted = `mask`, inheritable none.
fn set_caps(mask: u64) -> Result<()> {
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    // struct __user_cap_header_struct { version, pid } and two __user_cap_data_struct
    // { effective, permitted, inheritable } (low and high 32 bits).
    let header: [u32; 2] = [LINUX_CAPABILITY_VERSION_3, 0];
    let (lo, hi) = (mask as u32, (mask >> 32) as u32);
    let data: [u32; 6] = [lo, lo, 0, hi, hi, 0];
    // SAFETY: header and data have the layout capset(2) reads for version 3; pid 0 is the
    // calling thread.
    let rc = unsafe { libc::syscall(libc::SYS_capset, header.as_ptr(), data.as_ptr()) };
    if rc != 0 {
        return Err(os_err("capset"));
    }
    Ok(())
}

/// Checks what the kernel says now: every id is the target's, no thread holds a capability
/// beyond `keep_mask`, and root cannot be regained.
fn verify(target: &Target, keep_mask: u64) -> Result<()> {
    let mine = thread_caps()?;
    if mine.eff != keep_mask || mine.prm != keep_mask {
        bail!(
            "-Z: capabilities after the drop are {:#x}/{:#x} (effective/permitted), expected {keep_mask:#x}",
            mine.eff,
            mine.prm
        );
    }
    for entry in std::fs::read_dir("/proc/self/task").context("-Z: /proc/self/task")? {
        let path = entry.context("-Z: /proc/self/task")?.path().join("status");
        let Ok(status) = std::fs::read_to_string(&path) else {
            continue; // the thread ended meanwhile
        };
        let caps = parse_cap_sets(&status).context("-Z: thread status")?;
        if (caps.eff | caps.prm) & !keep_mask != 0 {
            bail!("-Z: {path:?} still holds capabilities {:#x}", caps.prm);
        }
    }
    // SAFETY: plain syscall wrapper; it must fail now.
    if unsafe { libc::setuid(0) } == 0 {
        bail!(
            "-Z: could become root again after dropping to {}",
            target.name
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_capability_lines() {
        let status = "Name:\tx\nCapInh:\t0000000000000000\nCapPrm:\t0000000000001000\n\
                      CapEff:\t0000000000001000\nCapBnd:\t000001ffffffffff\n";
        assert_eq!(
            parse_cap_sets(status),
            Some(CapSets {
                eff: 1 << CAP_NET_ADMIN,
                prm: 1 << CAP_NET_ADMIN,
                bnd: 0x1ff_ffff_ffff
            })
        );
        assert_eq!(parse_cap_sets("CapEff:\t0\n"), None);
    }

    #[test]
    fn resolves_names_and_numbers() {
        let root = lookup("root").expect("root is in every passwd");
        assert_eq!((root.uid, root.gid, root.in_passwd), (0, 0, true));
        let by_number = lookup("0").expect("uid 0");
        assert_eq!(by_number.name, "root");
        let err = resolve("root").unwrap_err().to_string();
        assert!(err.contains("that is root"), "{err}");
        let nobody = resolve("nobody").expect("nobody");
        assert_eq!(nobody.uid, 65534);
        let unknown = resolve("4000000001").expect("a bare uid");
        assert_eq!(
            (unknown.uid, unknown.gid, unknown.in_passwd),
            (4_000_000_001, 4_000_000_001, false)
        );
        let err = resolve("no-such-user-fxs").unwrap_err().to_string();
        assert!(err.contains("no such user: no-such-user-fxs"), "{err}");
    }

    /// The probe against the kernel's own rule (Debian's kernels in `make test-kernel`
    /// carry no backport of the 6.5 change, so there the version is a fair oracle; a test
    /// may use it, the program does not).
    #[test]
    fn bpf_privilege_probe_matches_the_kernel() {
        if thread_caps().map_or(true, |c| c.eff & (1 << CAP_SYS_ADMIN) == 0) {
            panic!("bpf_privilege_probe_matches_the_kernel needs root (capset of its own thread)");
        }
        let restricted = std::fs::read_to_string("/proc/sys/kernel/unprivileged_bpf_disabled")
            .map_or(true, |v| v.trim() != "0");
        let before_6_5 = fixscope_live::kernel_version().is_some_and(|v| v < (6, 5));
        assert_eq!(bpf_needs_cap_bpf().unwrap(), restricted && before_6_5);
        // The probing thread's drop did not touch this one.
        assert!(thread_caps().unwrap().eff & (1 << CAP_BPF) != 0);
    }

    #[test]
    fn keep_mask_and_message() {
        let keep = Keep {
            caps: vec![(CAP_NET_ADMIN, "to remove the tc filters at exit")],
            leave_sched_idle: false,
        };
        assert_eq!(keep.mask(), 1 << 12);
        let r = Relinquished {
            target: Target {
                name: "nobody".into(),
                uid: 65534,
                gid: 65534,
                in_passwd: true,
            },
            kept: vec![],
        };
        assert!(r.to_string().ends_with("capabilities kept: none"), "{r}");
    }
}
