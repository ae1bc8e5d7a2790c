//! The breakdown object's counters (`enum fxb_counter` in breakdown.h, plus the kernel's
//! own count of the programs' skipped runs), named once by the serde names of
//! [`BreakdownCounters`].

use libbpf_rs::MapHandle;
use serde::Serialize;

use super::skel::types::fxb_counter as C;
use crate::percpu::sum_per_cpu;
use crate::LiveError;

const NR: usize = C::FXB_CNT_NR.0 as usize;

/// `--breakdown`'s kernel counters, summed over CPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct BreakdownCounters {
    /// Runs of the read hook (tcp_recvmsg returns, every socket of the host).
    pub breakdown_recv_calls: u64,
    /// Runs of the write hook (tcp_sendmsg entries, every socket of the host).
    pub breakdown_send_calls: u64,
    /// Runs of the scheduler hooks (sched_switch + sched_wakeup, every thread).
    pub breakdown_sched_calls: u64,
    /// Read / write events recorded (watched connections).
    pub breakdown_reads: u64,
    pub breakdown_writes: u64,
    /// Events lost because the breakdown ring was full.
    pub breakdown_ring_drops: u64,
    /// Watched calls not recorded: MSG_PEEK / MSG_ERRQUEUE reads, writes whose entry was
    /// not seen.
    pub breakdown_skipped: u64,
    /// Runs of the breakdown programs the kernel skipped because the same program was
    /// already running on that CPU (the BPF trampoline's and raw tracepoint's per-program
    /// recursion guard): on a preemptible or PREEMPT_RT kernel a task preempted inside one
    /// of our programs makes that hook skip every other task on its CPU until it resumes.
    /// Each skipped socket-hook run is a socket call not recorded. The kernel's own count
    /// (`recursion_misses` of each program's `bpf_prog_info`, Linux >= 5.12; 0 before,
    /// where the kernel had no such guard), summed over the programs.
    pub breakdown_recursion_misses: u64,
}

impl BreakdownCounters {
    fn from_sums(n: &[u64; NR], recursion_misses: u64) -> BreakdownCounters {
        let at = |c: C| n[c.0 as usize];
        BreakdownCounters {
            breakdown_recv_calls: at(C::FXB_CNT_RECV_CALLS),
            breakdown_send_calls: at(C::FXB_CNT_SEND_CALLS),
            breakdown_sched_calls: at(C::FXB_CNT_SCHED_CALLS),
            breakdown_reads: at(C::FXB_CNT_READS),
            breakdown_writes: at(C::FXB_CNT_WRITES),
            breakdown_ring_drops: at(C::FXB_CNT_RING_DROPS),
            breakdown_skipped: at(C::FXB_CNT_SKIPPED),
            breakdown_recursion_misses: recursion_misses,
        }
    }

    /// The per-CPU counters of `map` summed, with the programs' recursion misses.
    pub(crate) fn read(
        map: &MapHandle,
        recursion_misses: u64,
    ) -> Result<BreakdownCounters, LiveError> {
        let sums = sum_per_cpu::<NR>(map, "breakdown counters")?;
        Ok(BreakdownCounters::from_sums(&sums, recursion_misses))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fixscope_core::source::counters_of;

    #[test]
    fn every_breakdown_counter_is_named_exactly_once() {
        let mut n = [0u64; NR];
        for (i, v) in n.iter_mut().enumerate() {
            *v = 1 << i;
        }
        let named = counters_of(&BreakdownCounters::from_sums(&n, 1 << NR));
        // The header's counters, then the kernel's recursion misses.
        assert_eq!(named.len(), NR + 1, "{named:?}");
        // Distinct powers of two, in the header's order.
        assert!(named.windows(2).all(|w| w[0].1 < w[1].1), "{named:?}");
        assert_eq!(
            named.iter().map(|(_, v)| v).sum::<u64>(),
            (1 << (NR + 1)) - 1
        );
        assert_eq!(named[NR].0, "breakdown_recursion_misses");
    }
}
