//! The kernel's counters: indices named once, by `enum fxs_counter` in fixscope.h (the
//! Rust side reads them from the skeleton's generated `types::fxs_counter`), and their
//! names in every output given once, by the serde names of [`KernelCounters`].

use serde::Serialize;

use crate::breakdown::BreakdownCounters;
use crate::percpu::sum_per_cpu;
use crate::skeleton::types::fxs_counter as C;
use crate::skeleton::FixscopeSkel;
use crate::tls_uprobe::TlsUprobeCounters;
use crate::LiveError;

/// How many counters the kernel keeps (`FXS_CNT_NR`).
const NR: usize = C::FXS_CNT_NR.0 as usize;

/// The kernel-side counters, summed over CPUs. Serialised (see
/// `fixscope_core::source::counters_of`) under the `kernel_*` names every output uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KernelCounters {
    /// Program invocations (both hooks, every packet on the interface).
    #[serde(rename = "kernel_hook_calls")]
    pub hook_calls: u64,
    /// TCP packets taken as requests / responses (port, role and address filters passed),
    /// including pure ACKs that produce no record.
    #[serde(rename = "kernel_requests_in_range")]
    pub requests_in_range: u64,
    #[serde(rename = "kernel_responses_in_range")]
    pub responses_in_range: u64,
    /// TCP payload bytes of the taken packets.
    #[serde(rename = "kernel_payload_bytes")]
    pub payload_bytes: u64,
    /// Records written to the ring.
    #[serde(rename = "kernel_records")]
    pub records: u64,
    /// Records lost because the ring was full, by direction, and their payload bytes.
    #[serde(rename = "kernel_ring_drops_request")]
    pub ring_drops_request: u64,
    #[serde(rename = "kernel_ring_drops_response")]
    pub ring_drops_response: u64,
    #[serde(rename = "kernel_dropped_bytes")]
    pub dropped_bytes: u64,
    /// Payload bytes not copied (beyond 8 x 16 KiB per skb, or unreadable).
    #[serde(rename = "kernel_cut_bytes")]
    pub cut_bytes: u64,
    /// Records that woke user space (fill threshold reached).
    #[serde(rename = "kernel_wakeups")]
    pub wakeups: u64,
    /// `bpf_skb_load_bytes` failures on payload (their bytes are in `cut_bytes`).
    #[serde(rename = "kernel_load_errors")]
    pub load_errors: u64,
}

impl KernelCounters {
    pub fn ring_drops(&self) -> u64 {
        self.ring_drops_request + self.ring_drops_response
    }

    /// Names the summed `fxs_counters.n` array by the header's enum.
    fn from_sums(n: &[u64; NR]) -> KernelCounters {
        let at = |c: C| n[c.0 as usize];
        KernelCounters {
            hook_calls: at(C::FXS_CNT_HOOK_CALLS),
            requests_in_range: at(C::FXS_CNT_REQUESTS_IN_RANGE),
            responses_in_range: at(C::FXS_CNT_RESPONSES_IN_RANGE),
            payload_bytes: at(C::FXS_CNT_PAYLOAD_BYTES),
            records: at(C::FXS_CNT_RECORDS),
            ring_drops_request: at(C::FXS_CNT_RING_DROPS_REQUEST),
            ring_drops_response: at(C::FXS_CNT_RING_DROPS_RESPONSE),
            dropped_bytes: at(C::FXS_CNT_DROPPED_BYTES),
            cut_bytes: at(C::FXS_CNT_CUT_BYTES),
            wakeups: at(C::FXS_CNT_WAKEUPS),
            load_errors: at(C::FXS_CNT_LOAD_ERRORS),
        }
    }

    /// Sums the per-CPU values of the counters map (one syscall per CPU's worth of data:
    /// callers cache the result).
    pub(crate) fn read(skel: &FixscopeSkel<'_>) -> Result<KernelCounters, LiveError> {
        let sums = sum_per_cpu::<NR>(&skel.maps.fxs_counters, "counters")?;
        Ok(KernelCounters::from_sums(&sums))
    }
}

/// The kernel counters worth a place on every interval line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KernelIntervalCounters {
    pub kernel_records: u64,
    /// Both directions.
    pub kernel_ring_drops: u64,
    pub kernel_cut_bytes: u64,
}

impl From<&KernelCounters> for KernelIntervalCounters {
    fn from(k: &KernelCounters) -> Self {
        KernelIntervalCounters {
            kernel_records: k.records,
            kernel_ring_drops: k.ring_drops(),
            kernel_cut_bytes: k.cut_bytes,
        }
    }
}

/// Every counter of the live source, for the summary: the kernel's, then the consumer's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LiveCounters {
    #[serde(flatten)]
    pub kernel: KernelCounters,
    /// Ring records too short or inconsistent to decode (should stay 0).
    pub malformed_records: u64,
    /// How often the guard raised the yielding consumer to normal priority.
    pub consumer_raises: u64,
    /// Records handed on after records stamped later (out of order across CPUs; should
    /// stay 0).
    pub late_records: u64,
    /// Records still in the rings when the drain after a stop ended (at most
    /// `driver::MAX_DRAIN`, 5 s): captured, but in no figure. 0 unless the consumer was
    /// that far behind.
    pub unread_records_at_exit: u64,
    /// `--breakdown`'s counters; absent (no names at all) without it.
    #[serde(flatten)]
    pub breakdown: Option<BreakdownCounters>,
    /// `--tls-uprobes`' counters; absent without it.
    #[serde(flatten)]
    pub tls_uprobes: Option<TlsUprobeCounters>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use fixscope_core::source::counters_of;

    /// The JSON names are a contract: exactly these, in this order.
    const SUMMARY_NAMES: [&str; 15] = [
        "kernel_hook_calls",
        "kernel_requests_in_range",
        "kernel_responses_in_range",
        "kernel_payload_bytes",
        "kernel_records",
        "kernel_ring_drops_request",
        "kernel_ring_drops_response",
        "kernel_dropped_bytes",
        "kernel_cut_bytes",
        "kernel_wakeups",
        "kernel_load_errors",
        "malformed_records",
        "consumer_raises",
        "late_records",
        "unread_records_at_exit",
    ];

    #[test]
    fn every_kernel_counter_is_named_exactly_once() {
        // Counter i holds 2^i: each field must show a distinct power of two, and together
        // all of them — a missing or doubled index in `from_sums` fails here.
        let mut n = [0u64; NR];
        for (i, v) in n.iter_mut().enumerate() {
            *v = 1 << i;
        }
        let named = counters_of(&KernelCounters::from_sums(&n));
        assert_eq!(named.len(), NR, "one field per FXS_CNT_* index: {named:?}");
        let bits = named.iter().fold(0u64, |acc, (name, v)| {
            assert!(v.is_power_of_two(), "{name} = {v}");
            assert_eq!(acc & v, 0, "{name} reads an index another field reads too");
            acc | v
        });
        assert_eq!(bits, (1 << NR) - 1);
        // The order of the header's enum is the order of the outputs.
        assert!(named.windows(2).all(|w| w[0].1 < w[1].1), "{named:?}");
    }

    #[test]
    fn counter_names_are_the_contract() {
        let all = LiveCounters {
            kernel: KernelCounters::default(),
            malformed_records: 1,
            consumer_raises: 2,
            late_records: 3,
            unread_records_at_exit: 4,
            breakdown: None,
            tls_uprobes: None,
        };
        let names: Vec<String> = counters_of(&all).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, SUMMARY_NAMES);
        let k = KernelCounters {
            records: 7,
            ring_drops_request: 2,
            ring_drops_response: 3,
            cut_bytes: 9,
            ..KernelCounters::default()
        };
        assert_eq!(
            counters_of(&KernelIntervalCounters::from(&k)),
            vec![
                ("kernel_records".to_string(), 7),
                ("kernel_ring_drops".to_string(), 5),
                ("kernel_cut_bytes".to_string(), 9),
            ]
        );
    }
}
