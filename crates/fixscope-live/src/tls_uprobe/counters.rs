//! The TLS uprobe object's counters (`enum fxt_counter` in tls_uprobe.h), named once by
//! the serde names of [`TlsUprobeCounters`].

use libbpf_rs::MapHandle;
use serde::Serialize;

use super::skel::types::fxt_counter as C;
use crate::percpu::sum_per_cpu;
use crate::LiveError;

const NR: usize = C::FXT_CNT_NR.0 as usize;

/// `--tls-uprobes`' kernel counters, summed over CPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TlsUprobeCounters {
    /// OpenSSL read/write returns seen (every process using the hooked libraries).
    pub tls_uprobe_calls: u64,
    /// Calls of watched connections that returned plaintext, handed to user space.
    pub tls_uprobe_records: u64,
    /// Such calls lost because the ring was full (their bytes are a gap).
    pub tls_uprobe_ring_drops: u64,
    /// Returns whose call began before the probes were attached.
    pub tls_uprobe_no_entry: u64,
    /// Returns with no plaintext (an error, `SSL_ERROR_WANT_READ`, 0 bytes).
    pub tls_uprobe_empty: u64,
    /// Plaintext of connections not watched (another port; the role not measured).
    pub tls_uprobe_unwatched: u64,
    /// Plaintext on SSL objects none of whose calls touched a TCP socket: an engine that
    /// feeds OpenSSL through memory BIOs (Node.js, Netty's tcnative). Such calls cannot be
    /// tied to a connection by their socket calls: not measured (`--tls-keylog` is).
    pub tls_uprobe_memory_bio: u64,
    /// Plaintext the kernel could not copy from the application (a paged-out buffer).
    pub tls_uprobe_copy_failed: u64,
}

impl TlsUprobeCounters {
    fn from_sums(n: &[u64; NR]) -> TlsUprobeCounters {
        let at = |c: C| n[c.0 as usize];
        TlsUprobeCounters {
            tls_uprobe_calls: at(C::FXT_CNT_CALLS),
            tls_uprobe_records: at(C::FXT_CNT_RECORDS),
            tls_uprobe_ring_drops: at(C::FXT_CNT_RING_DROPS),
            tls_uprobe_no_entry: at(C::FXT_CNT_NO_ENTRY),
            tls_uprobe_empty: at(C::FXT_CNT_EMPTY),
            tls_uprobe_unwatched: at(C::FXT_CNT_UNWATCHED),
            tls_uprobe_memory_bio: at(C::FXT_CNT_MEMORY_BIO),
            tls_uprobe_copy_failed: at(C::FXT_CNT_COPY_FAILED),
        }
    }

    /// Calls in none of the counts after `tls_uprobe_calls` (0 once every return has been
    /// counted: the kernel adds each return to `calls` first, then to exactly one other).
    pub fn calls_unaccounted(&self) -> u64 {
        let parts = self.tls_uprobe_records
            + self.tls_uprobe_ring_drops
            + self.tls_uprobe_no_entry
            + self.tls_uprobe_empty
            + self.tls_uprobe_unwatched
            + self.tls_uprobe_memory_bio
            + self.tls_uprobe_copy_failed;
        self.tls_uprobe_calls.saturating_sub(parts)
    }

    pub(crate) fn read(map: &MapHandle) -> Result<TlsUprobeCounters, LiveError> {
        let sums = sum_per_cpu::<NR>(map, "TLS uprobe counters")?;
        Ok(TlsUprobeCounters::from_sums(&sums))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fixscope_core::source::counters_of;

    #[test]
    fn every_tls_uprobe_counter_is_named_exactly_once() {
        let mut n = [0u64; NR];
        for (i, v) in n.iter_mut().enumerate() {
            *v = 1 << i;
        }
        let named = counters_of(&TlsUprobeCounters::from_sums(&n));
        assert_eq!(named.len(), NR, "{named:?}");
        assert!(named.windows(2).all(|w| w[0].1 < w[1].1), "{named:?}");
        assert_eq!(named.iter().map(|(_, v)| v).sum::<u64>(), (1 << NR) - 1);
    }

    #[test]
    fn every_call_lands_in_exactly_one_count() {
        let c = TlsUprobeCounters {
            tls_uprobe_calls: 28,
            tls_uprobe_records: 1,
            tls_uprobe_ring_drops: 2,
            tls_uprobe_no_entry: 3,
            tls_uprobe_empty: 4,
            tls_uprobe_unwatched: 5,
            tls_uprobe_memory_bio: 6,
            tls_uprobe_copy_failed: 7,
        };
        assert_eq!(c.calls_unaccounted(), 0);
        let short = TlsUprobeCounters {
            tls_uprobe_calls: 29,
            ..c
        };
        assert_eq!(short.calls_unaccounted(), 1);
    }
}
