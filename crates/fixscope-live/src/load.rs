//! What the loader writes into the BPF object before loading it: the configuration as
//! `const volatile` rodata (the verifier prunes on it), the ring's size, and the programs'
//! attach type.

use std::net::IpAddr;

use fixscope_core::ports::Role;

use crate::config::{LiveConfig, MAX_PORT_RANGES};
use crate::ring;
use crate::skeleton::types::fxs_role;
use crate::skeleton::OpenFixscopeSkel;
use crate::LiveError;

/// The largest ring the loader asks for.
const MAX_RING_BYTES: usize = 1 << 30;

/// Configures an opened object for `cfg`: `l2_len` bytes of link-layer header in front of
/// IP, programs loaded for TCX links (`tcx`) or for classic cls_bpf filters.
pub(crate) fn configure(
    open: &mut OpenFixscopeSkel<'_>,
    cfg: &LiveConfig,
    l2_len: u32,
    tcx: bool,
) -> Result<(), LiveError> {
    let ranges = cfg.ports.ranges();
    if ranges.len() > MAX_PORT_RANGES {
        return Err(LiveError::Config(format!(
            "at most {MAX_PORT_RANGES} port ranges can be watched live (got {})",
            ranges.len()
        )));
    }
    let ring_bytes = ring_size(cfg.ring_bytes)?;
    let ro = open.maps.rodata_data.as_deref_mut().ok_or_else(|| {
        LiveError::load(
            "the BPF object has no .rodata",
            std::io::Error::from(std::io::ErrorKind::InvalidData),
        )
    })?;
    ro.cfg_role = match cfg.role {
        Role::Server => fxs_role::FXS_ROLE_SERVER,
        Role::Client => fxs_role::FXS_ROLE_CLIENT,
    };
    ro.cfg_nranges = ranges.len() as u32;
    for (i, r) in ranges.iter().enumerate() {
        ro.cfg_port_lo[i] = r.lo;
        ro.cfg_port_hi[i] = r.hi;
    }
    ro.cfg_l2_len = l2_len;
    match cfg.ip_filter {
        None => ro.cfg_ip_family = 0,
        Some(IpAddr::V4(a)) => {
            ro.cfg_ip_family = 4;
            ro.cfg_ip = [u32::from_ne_bytes(a.octets()), 0, 0, 0];
        }
        Some(IpAddr::V6(a)) => {
            ro.cfg_ip_family = 6;
            let o = a.octets();
            for (i, w) in ro.cfg_ip.iter_mut().enumerate() {
                *w = u32::from_ne_bytes([o[4 * i], o[4 * i + 1], o[4 * i + 2], o[4 * i + 3]]);
            }
        }
    }
    ro.cfg_wakeup_bytes = cfg.wakeup_threshold_bytes as u64;

    open.maps
        .fxs_ring
        .set_max_entries(ring_bytes as u32)
        .map_err(|e| LiveError::load("sizing the ring", e))?;
    if !tcx {
        // SEC("tcx/...") sets expected_attach_type BPF_TCX_*; classic cls_bpf programs
        // load with 0, which older kernels insist on.
        for p in [&mut open.progs.fxs_ingress, &mut open.progs.fxs_egress] {
            p.set_attach_type(libbpf_rs::ProgramAttachType::CgroupInetIngress);
        }
    }
    Ok(())
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
}
