//! `--tls-uprobes`: the plaintext of watched TLS connections from the application's own
//! OpenSSL calls, without keys, from a third BPF object (src/bpf/tls_uprobe.bpf.c) with its
//! own ring. Loaded and attached only when `LiveConfig::tls_uprobes` is set.
//!
//! Like the breakdown's, nothing here borrows the skeleton past [`TlsUprobes::open`]: the
//! links, the ring's and counters' map descriptors and the programs' descriptors are what
//! it keeps; dropping it (or a killed process's descriptors closing) detaches everything.

mod counters;
mod event;
mod libs;
mod skel;

use std::mem::MaybeUninit;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapHandle, OpenObject, ProgramMut, UprobeOpts};

pub use self::counters::TlsUprobeCounters;
pub use self::event::{tls_call_from_record, TLS_CALL_HEADER_BYTES};
use self::skel::{OpenTlsUprobeSkel, TlsUprobeSkel, TlsUprobeSkelBuilder};
use crate::config::LiveConfig;
use crate::ring::Ring;
use crate::LiveError;

/// Each OpenSSL function hooked and its entry program; every one also gets the return
/// program [`RETURN_PROGRAM`].
pub const UPROBE_FUNCTIONS: [(&str, &str); 4] = [
    ("SSL_read", "fxt_read_entry"),
    ("SSL_read_ex", "fxt_read_ex_entry"),
    ("SSL_write", "fxt_write_entry"),
    ("SSL_write_ex", "fxt_write_ex_entry"),
];
pub const RETURN_PROGRAM: &str = "fxt_return";
/// The TCP hooks that tie a call to its connection and byte range: fexit on
/// tcp_sendmsg_locked and tcp_recvmsg (BPF trampolines) ...
pub const TCP_FENTRY_PROGRAMS: [&str; 2] = ["fxt_send_exit", "fxt_recv_exit"];
/// ... or, for kernels that refuse those, the socket tracepoints tcp_sendmsg_locked,
/// sock_send_length and sock_recv_length (Linux >= 6.12).
pub const TCP_TRACEPOINT_PROGRAMS: [&str; 3] = ["fxt_tp_locked", "fxt_tp_send", "fxt_tp_recv"];

/// The attached uprobes and TCP hooks, and their ring.
pub(crate) struct TlsUprobes {
    /// The calls' ring until the capture takes it into its timestamp merge.
    ring: Option<Ring>,
    counters: MapHandle,
    /// Attached programs; empty once detached.
    links: Vec<Link>,
    /// The libraries hooked, each with the functions found in it.
    hooked: Vec<(PathBuf, Vec<&'static str>)>,
}

impl TlsUprobes {
    /// Loads the object configured like the TC programs (ports, role, address) and
    /// attaches the TCP hooks, then the uprobes on every library (`--tls-lib`, else the
    /// system's libssl). A library without at least one read and one write function is an
    /// error naming it.
    pub(crate) fn open(cfg: &LiveConfig) -> Result<TlsUprobes, LiveError> {
        let libraries = libs::libraries(&cfg.tls_libs).map_err(LiveError::Config)?;
        let mut first_error = None;
        for tcp in [&TCP_FENTRY_PROGRAMS[..], &TCP_TRACEPOINT_PROGRAMS[..]] {
            match with_loaded(cfg, tcp, |skel| attach(skel, tcp, &libraries)) {
                Ok(opened) => return Ok(opened),
                // A library without the functions, or a refused uprobe, fails either way.
                Err(e @ (LiveError::Config(_) | LiveError::NotPrivileged(_))) => return Err(e),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        Err(first_error.expect("two attempts were made"))
    }

    /// The calls' ring, for the capture's timestamp merge (`merge.rs`): each record is
    /// stamped at the call's return and committed right after.
    pub(crate) fn take_ring(&mut self) -> Option<Ring> {
        self.ring.take()
    }

    pub(crate) fn counters(&self) -> Result<TlsUprobeCounters, LiveError> {
        TlsUprobeCounters::read(&self.counters)
    }

    /// Each library hooked, with the functions found in it.
    pub(crate) fn hooked(&self) -> &[(PathBuf, Vec<&'static str>)] {
        &self.hooked
    }

    /// Detaches every program (closing a link detaches it).
    pub(crate) fn detach(&mut self) {
        self.links.clear();
    }
}

/// Opens the object, keeps the uprobe programs and the `tcp` hooks, loads it and hands
/// the skeleton to `f`.
fn with_loaded<T>(
    cfg: &LiveConfig,
    tcp: &[&str],
    f: impl FnOnce(&TlsUprobeSkel<'_>) -> Result<T, LiveError>,
) -> Result<T, LiveError> {
    let mut storage = MaybeUninit::<OpenObject>::uninit();
    let mut open = TlsUprobeSkelBuilder::default()
        .open(&mut storage)
        .map_err(|e| LiveError::load("opening the TLS uprobe BPF object", e))?;
    configure(&mut open, cfg)?;
    for mut p in open.open_object_mut().progs_mut() {
        let name = p.name().to_str().unwrap_or_default().to_string();
        let uprobe = name == RETURN_PROGRAM || UPROBE_FUNCTIONS.iter().any(|(_, e)| *e == name);
        p.set_autoload(uprobe || tcp.contains(&name.as_str()));
    }
    let skel = open.load().map_err(|e| {
        LiveError::load(
            format!(
                "tls_uprobe.bpf.o with the TCP hooks {tcp:?} (the verifier log is printed with -v)"
            ),
            e,
        )
    })?;
    f(&skel)
}

/// Attaches the `tcp` hooks, then the uprobes on every library.
fn attach(
    skel: &TlsUprobeSkel<'_>,
    tcp: &[&str],
    libraries: &[PathBuf],
) -> Result<TlsUprobes, LiveError> {
    let ring_map = MapHandle::try_from(&skel.maps.fxt_ring)
        .map_err(|e| LiveError::bpf("duplicating the TLS uprobe ring descriptor", e))?;
    let counters = MapHandle::try_from(&skel.maps.fxt_counters)
        .map_err(|e| LiveError::bpf("duplicating the TLS uprobe counters descriptor", e))?;
    let mut links = Vec::new();
    // The TCP hooks first: a call whose entry comes before them would have no range.
    for &name in tcp {
        let link = program(skel, name)?
            .attach()
            .map_err(|e| LiveError::attach(format!("--tls-uprobes: attaching {name}"), e))?;
        links.push(link);
    }
    let mut hooked = Vec::new();
    for lib in libraries {
        let functions = attach_library(skel, lib, &mut links)?;
        hooked.push((lib.clone(), functions));
    }
    let owned = ring_map
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| LiveError::load("duplicating the TLS uprobe ring descriptor", e))?;
    let ring = Ring::new(owned, ring_map.max_entries() as usize)?;
    Ok(TlsUprobes {
        ring: Some(ring),
        counters,
        links,
        hooked,
    })
}

/// Sets the entry and return probes of every [`UPROBE_FUNCTIONS`] entry `lib` has; the
/// names of those it has.
fn attach_library(
    skel: &TlsUprobeSkel<'_>,
    lib: &Path,
    links: &mut Vec<Link>,
) -> Result<Vec<&'static str>, LiveError> {
    let mut found = Vec::new();
    for (function, entry) in UPROBE_FUNCTIONS {
        let attach = |name: &str, retprobe: bool| {
            program(skel, name)?
                .attach_uprobe_with_opts(
                    -1,
                    lib,
                    0,
                    UprobeOpts {
                        retprobe,
                        func_name: Some(function.to_string()),
                        ..Default::default()
                    },
                )
                .map_err(|e| {
                    LiveError::attach(format!("--tls-uprobes: {function} in {}", lib.display()), e)
                })
        };
        // The entry first: a return without its entry is skipped, never half-seen.
        let entry_link = match attach(entry, false) {
            Ok(link) => link,
            // Not in this library (1.1.0 has no _ex functions): the others may be.
            Err(e) if is_kind(&e, libbpf_rs::ErrorKind::NotFound) => continue,
            // The kernel lets only CAP_SYS_ADMIN create uprobes (perf_uprobe_event_init,
            // since a 2025 fix backported to the stable kernels): CAP_PERFMON is not enough.
            Err(e) if is_kind(&e, libbpf_rs::ErrorKind::PermissionDenied) => {
                return Err(LiveError::NotPrivileged(format!(
                    "--tls-uprobes: the kernel refused a uprobe on {function} in {}: it lets \
                     only CAP_SYS_ADMIN set uprobes (docs/deploy.md)",
                    lib.display()
                )))
            }
            Err(e) => return Err(e),
        };
        links.push(entry_link);
        links.push(attach(RETURN_PROGRAM, true)?);
        found.push(function);
    }
    let reads = found.iter().any(|f| f.starts_with("SSL_read"));
    let writes = found.iter().any(|f| f.starts_with("SSL_write"));
    if !(reads && writes) {
        return Err(LiveError::Config(format!(
            "--tls-uprobes: {} has no SSL_read/SSL_read_ex and SSL_write/SSL_write_ex \
             symbols (found: {}); is it OpenSSL's libssl, or an engine binary stripped of \
             its symbols?",
            lib.display(),
            if found.is_empty() {
                "none".to_string()
            } else {
                found.join(", ")
            }
        )));
    }
    Ok(found)
}

/// Whether attaching failed with libbpf's error `kind`: NotFound when the library has no
/// such symbol (ENOENT), PermissionDenied when the kernel refused (EACCES).
fn is_kind(e: &LiveError, kind: libbpf_rs::ErrorKind) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(lib) = err.downcast_ref::<libbpf_rs::Error>() {
            return lib.kind() == kind;
        }
        source = err.source();
    }
    false
}

fn program<'a>(skel: &'a TlsUprobeSkel<'_>, name: &str) -> Result<ProgramMut<'a>, LiveError> {
    skel.object()
        .progs_mut()
        .find(|p| p.name().to_str() == Some(name))
        .ok_or_else(|| {
            LiveError::load(
                format!("tls_uprobe.bpf.o has no program {name}"),
                std::io::Error::from(std::io::ErrorKind::NotFound),
            )
        })
}

/// The same filter as the TC programs' ([`crate::filter::WatchFilter`]) and this kernel's tcp_recvmsg
/// signature, written into the object's rodata; the ring sized.
fn configure(open: &mut OpenTlsUprobeSkel<'_>, cfg: &LiveConfig) -> Result<(), LiveError> {
    crate::filter::write_socket_hooks_config!(
        open.maps.rodata_data.as_deref_mut(),
        cfg,
        "TLS uprobe"
    );
    open.maps
        .fxt_ring
        .set_max_entries(ring_bytes(cfg))
        .map_err(|e| LiveError::load("sizing the TLS uprobe ring", e))?;
    Ok(())
}

/// The calls' ring: a quarter of the TC ring (a call's record is its plaintext in a size
/// class, at least 256 bytes), at least 4 MiB, at most 64 MiB.
fn ring_bytes(cfg: &LiveConfig) -> u32 {
    ((cfg.ring_bytes / 4).clamp(4 << 20, 64 << 20)).next_power_of_two() as u32
}
