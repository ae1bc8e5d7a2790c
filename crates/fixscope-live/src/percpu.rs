//! Reading the BPF objects' per-CPU counter arrays: each CPU has its own copy of the
//! counters, user space adds them up.
//!
//! Its own module because both objects' counters use it: the capture's (`counters`) and
//! `--breakdown`'s (`breakdown::counters`), and the capture's counters also carry the
//! breakdown's.

use libbpf_rs::{MapCore, MapFlags};

use crate::LiveError;

/// The per-CPU values of entry 0 of a `BPF_MAP_TYPE_PERCPU_ARRAY` of `N` u64 counters
/// (`what` names the map in errors), summed over CPUs. One syscall: callers cache it.
pub(crate) fn sum_per_cpu<const N: usize>(
    map: &dyn MapCore,
    what: &str,
) -> Result<[u64; N], LiveError> {
    let per_cpu = map
        .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)
        .map_err(|e| LiveError::bpf(format!("looking up the {what}"), e))?
        .ok_or_else(|| {
            LiveError::bpf(
                format!("the {what} entry is missing"),
                std::io::Error::from(std::io::ErrorKind::NotFound),
            )
        })?;
    let mut sums = [0u64; N];
    for value in &per_cpu {
        if value.len() < N * 8 {
            return Err(LiveError::bpf(
                format!("a {what} value of {} bytes (want {})", value.len(), N * 8),
                std::io::Error::from(std::io::ErrorKind::InvalidData),
            ));
        }
        for (sum, bytes) in sums.iter_mut().zip(value.chunks_exact(8)) {
            let mut b = [0u8; 8];
            b.copy_from_slice(bytes);
            *sum += u64::from_ne_bytes(b);
        }
    }
    Ok(sums)
}
