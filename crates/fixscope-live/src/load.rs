//! What the loader writes into the BPF object before loading it: the configuration as
//! `const volatile` rodata (the verifier prunes on it), the number of per-CPU ring slots,
//! and the programs' attach type; the per-CPU rings it puts into those slots after loading;
//! and loading without attaching, to ask the running kernel's verifier.
//!
//! Ring sizes: `LiveConfig::ring_bytes` is the memory of all rings together, split evenly
//! among the online CPUs (each CPU's ring rounded down to a power of two, at least a page),
//! so `--ring-mb` keeps meaning how much memory the capture takes. A CPU's ring must hold
//! the bursts of the flows that CPU handles; on a host with many CPUs, raise `--ring-mb`
//! (drops are counted per direction either way). The wakeup threshold is split the same
//! way: each CPU wakes the consumer once it has filled its share since its last wakeup.
//!
//! Kernel features the programs use, and the oldest Linux that has each: ring buffer and
//! its wakeup flags (5.8), ring buffers inside an array of maps (5.8; the libbpf selftest
//! `ringbuf_multi`), `bpf_get_smp_processor_id`, `bpf_ktime_get_ns`, `bpf_skb_load_bytes` and direct packet
//! access (4.x), 32-bit jumps of `-mcpu=v3` (5.1), global data in rodata (5.2). No kfunc,
//! no CO-RE relocation, so the kernel's own BTF (`/sys/kernel/btf/vmlinux`) is not needed;
//! where the kernel lacks a BTF kind the object uses, libbpf leaves it out. TCX (6.6) is
//! used only where the kernel has it, with clsact filters as the fallback. None of this is
//! decided by the kernel's version number: `probe.rs` asks the kernel, and the load decides. The verifier
//! constraint that shapes the C code: see docs/architecture.md ("Verifier").

use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use crate::config::{AttachMode, LiveConfig};
use crate::filter::WatchFilter;
use libbpf_rs::{MapCore, MapFlags, MapHandle, MapType};

use crate::probe::{self, Presence};
use crate::ring::{self, Ring};
use crate::skeleton::{FixscopeSkel, OpenFixscopeSkel, OwnedSkel};
use crate::{sys, LiveError};

/// The largest ring the loader asks for.
const MAX_RING_BYTES: usize = 1 << 30;

/// One program as the running kernel's verifier accepted it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifiedProgram {
    pub name: String,
    /// Instructions after the verifier's rewrites (`xlated_prog_len / 8`).
    pub insns: u32,
    /// Instructions the verifier walked to accept it, over all paths (`verified_insns`,
    /// Linux >= 5.16; 0 before): the program's verification complexity, against the
    /// kernel's limit of 1,000,000.
    pub verified_insns: u32,
}

/// Loads the programs configured for `cfg` into the running kernel — which runs the
/// verifier on them — and unloads them again; attaches nothing (`cfg.iface` is not used).
/// `l2_len` is the link-layer header in front of IP: 14 (Ethernet, loopback) or 0 (L3
/// devices); the verifier prunes on it. The programs load for TCX links with
/// [`AttachMode::Tcx`], for clsact filters with [`AttachMode::TcFilter`], and with
/// [`AttachMode::Auto`] as `LiveCapture::open` would first try on this kernel.
pub fn verify_programs(cfg: &LiveConfig, l2_len: u32) -> Result<Vec<VerifiedProgram>, LiveError> {
    sys::check_privileges()?;
    prepare_kernel(cfg)?;
    let tcx = match cfg.attach {
        AttachMode::Tcx => true,
        AttachMode::TcFilter => false,
        AttachMode::Auto => probe::tcx() == Presence::Yes,
    };
    let skel = OwnedSkel::load(|open| configure(open, cfg, l2_len, tcx))?;
    let progs = &skel.get().progs;
    [&progs.fxs_ingress, &progs.fxs_egress]
        .into_iter()
        .map(|p| {
            let info = sys::prog_info_by_fd(p.as_fd().as_raw_fd())
                .map_err(|e| LiveError::bpf("reading a loaded program's info", e))?;
            Ok(VerifiedProgram {
                name: p.name().to_string_lossy().into_owned(),
                insns: info.xlated_prog_len / 8,
                verified_insns: info.verified_insns,
            })
        })
        .collect()
}

/// What must hold before loading: the features the programs need (each missing one named
/// with the Linux that brought it), and RLIMIT_MEMLOCK raised where the kernel charges BPF
/// maps to it (before 5.11).
pub(crate) fn prepare_kernel(cfg: &LiveConfig) -> Result<(), LiveError> {
    probe::require_capture_features()?;
    // The rings, plus the breakdown ring and room for the small maps and programs.
    let breakdown = if cfg.breakdown { 64 << 20 } else { 0 };
    probe::raise_memlock((ring_size(cfg.ring_bytes)? + breakdown + (4 << 20)) as u64)
}

/// Configures an opened object for `cfg`: `l2_len` bytes of link-layer header in front of
/// IP, programs loaded for TCX links (`tcx`) or for classic cls_bpf filters.
pub(crate) fn configure(
    open: &mut OpenFixscopeSkel<'_>,
    cfg: &LiveConfig,
    l2_len: u32,
    tcx: bool,
) -> Result<(), LiveError> {
    let filter = WatchFilter::new(cfg)?;
    ring_size(cfg.ring_bytes)?;
    let cpus = sys::online_cpus().map_err(|e| LiveError::load("reading the online CPUs", e))?;
    let slots = libbpf_rs::num_possible_cpus()
        .map_err(|e| LiveError::load("counting the possible CPUs", e))?
        .max(cpus.iter().max().map_or(1, |&c| c + 1));
    let ro = open.maps.rodata_data.as_deref_mut().ok_or_else(|| {
        LiveError::load(
            "the BPF object has no .rodata",
            std::io::Error::from(std::io::ErrorKind::InvalidData),
        )
    })?;
    crate::filter::write_watch_filter!(&mut *ro, &filter);
    ro.cfg_l2_len = l2_len;
    ro.cfg_wakeup_bytes = (cfg.wakeup_threshold_bytes / cpus.len().max(1)) as u64;

    open.maps
        .fxs_rings
        .set_max_entries(slots as u32)
        .map_err(|e| LiveError::load("sizing the array of rings", e))?;
    if !tcx {
        // SEC("tcx/...") sets expected_attach_type BPF_TCX_*; classic cls_bpf programs
        // load with 0, which older kernels insist on.
        for p in [&mut open.progs.fxs_ingress, &mut open.progs.fxs_egress] {
            p.set_attach_type(libbpf_rs::ProgramAttachType::CgroupInetIngress);
        }
    }
    Ok(())
}

/// Makes one ring per online CPU, each of its share of `cfg.ring_bytes`, and puts it into
/// the loaded object's slot for that CPU. Returns (CPU, ring) pairs.
pub(crate) fn make_rings(
    skel: &FixscopeSkel<'_>,
    cfg: &LiveConfig,
) -> Result<Vec<(usize, Ring)>, LiveError> {
    let cpus = sys::online_cpus().map_err(|e| LiveError::load("reading the online CPUs", e))?;
    let each = per_cpu_ring_size(ring_size(cfg.ring_bytes)?, cpus.len());
    let opts = libbpf_rs::libbpf_sys::bpf_map_create_opts {
        sz: std::mem::size_of::<libbpf_rs::libbpf_sys::bpf_map_create_opts>() as _,
        ..Default::default()
    };
    let slots = skel.maps.fxs_rings.max_entries() as usize;
    cpus.into_iter()
        .filter(|&cpu| cpu < slots)
        .map(|cpu| {
            let map = MapHandle::create(
                MapType::RingBuf,
                Some(format!("fxs_ring{cpu}")),
                0,
                0,
                each as u32,
                &opts,
            )
            .map_err(|e| LiveError::load(format!("creating the ring of CPU {cpu}"), e))?;
            let fd = map.as_fd().as_raw_fd();
            skel.maps
                .fxs_rings
                .update(
                    &(cpu as u32).to_ne_bytes(),
                    &(fd as u32).to_ne_bytes(),
                    MapFlags::ANY,
                )
                .map_err(|e| LiveError::load(format!("installing the ring of CPU {cpu}"), e))?;
            let owned: OwnedFd = map
                .as_fd()
                .try_clone_to_owned()
                .map_err(|e| LiveError::load("duplicating a ring descriptor", e))?;
            Ok((cpu, Ring::new(owned, each)?))
        })
        .collect()
}

/// Each CPU's ring for `total` bytes among `cpus` CPUs: a power of two, at least a page.
fn per_cpu_ring_size(total: usize, cpus: usize) -> usize {
    let share = (total / cpus.max(1)).max(ring::page_size());
    1 << (usize::BITS - 1 - share.leading_zeros())
}

/// The ring size for a requested one: a power of two, at least a page, at most 1 GiB.
fn ring_size(requested: usize) -> Result<usize, LiveError> {
    requested
        .max(ring::page_size())
        .checked_next_power_of_two()
        .filter(|&r| r <= MAX_RING_BYTES)
        .ok_or_else(|| LiveError::Config("ring_bytes must be at most 1 GiB".to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_sizes_round_up_within_bounds() {
        let page = ring::page_size();
        assert_eq!(ring_size(1).expect("tiny"), page);
        assert_eq!(ring_size(3 << 20).expect("3 MiB"), 4 << 20);
        assert_eq!(ring_size(1 << 30).expect("1 GiB"), 1 << 30);
        assert!(matches!(
            ring_size((1 << 30) + 1),
            Err(LiveError::Config(_))
        ));
    }

    #[test]
    fn the_ring_memory_is_split_among_the_cpus() {
        let page = ring::page_size();
        assert_eq!(per_cpu_ring_size(64 << 20, 1), 64 << 20);
        assert_eq!(per_cpu_ring_size(64 << 20, 2), 32 << 20);
        assert_eq!(per_cpu_ring_size(64 << 20, 3), 16 << 20, "rounded down");
        assert_eq!(per_cpu_ring_size(page, 8), page, "at least a page");
        assert_eq!(per_cpu_ring_size(64 << 20, 0), 64 << 20);
    }
}
