//! Keeps the ring consumer out of the measured applications' way without losing records.
//!
//! On a host whose CPUs the applications keep busy, every microsecond the consumer runs at
//! normal priority is taken from them (over veth, closed loop, both vCPUs busy: 0.65 of the
//! simulator's order rate without fixscope, 0.70 with this; BENCHMARKS.md §4c). With
//! [`ConsumerPriority::Yield`] the consumer thread
//! runs as `SCHED_IDLE`: it gets the CPU time nobody else wants. Starved for long, it would
//! let the ring fill up and lose records, so a guard thread at normal priority, which
//! sleeps almost all the time, looks at the ring every [`GUARD_PERIOD`] and lifts the
//! consumer to `SCHED_OTHER` when
//! - any CPU's ring holds more than its high mark (1/8 of that ring), or
//! - the consumer is overdue back at the ring by more than [`MAX_LAG`] (so interval
//!   reports, keys and signals stay timely on a saturated host).
//!
//! The consumer lowers itself to `SCHED_IDLE` again once a drain leaves every ring below
//! its low mark (1/64 of it). Timestamps are taken in the kernel, so none of this changes a number.
//!
//! Raising a thread out of `SCHED_IDLE` needs CAP_SYS_NICE; without it we stay at normal
//! priority (checked once, on a throwaway thread, before anything is lowered).

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::ring::RingLevel;

/// How often the guard looks at the ring. A timer wakeup costs ~25 µs of CPU in this VM,
/// so every 10 ms is 0.25% of a core.
pub(crate) const GUARD_PERIOD: Duration = Duration::from_millis(10);
/// The smallest ring memory (all CPUs' rings together) a yielding consumer is allowed
/// with: from the high mark (1/8) to full, 32 MiB hold ~40 ms of 1.7 M msgs/s of 300-byte
/// messages (~460 bytes of ring each, ~800 MB/s) spread over the CPUs, ample for the
/// guard's 10 ms period plus a scheduling delay. (A single CPU taking all of that traffic
/// has only its share; its drops are counted.)
pub(crate) const MIN_YIELD_RING_BYTES: u64 = 32 << 20;
/// How long past its due time the consumer may stay away from the ring before it is raised.
pub(crate) const MAX_LAG: Duration = Duration::from_millis(50);

/// How the ring consumer competes for CPU with everything else on the host.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ConsumerPriority {
    /// `SCHED_IDLE`, raised to normal only while the ring fills up or the consumer falls
    /// behind (see the module documentation).
    #[default]
    Yield,
    /// Ordinary `SCHED_OTHER` all the time.
    Normal,
}

/// What the guard decides from one look at the ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GuardVerdict {
    Leave,
    Raise,
}

/// The guard's rule, kept free of clocks and syscalls so it can be tested directly.
/// `overdue` is how long past its due time the consumer is (zero if not yet due).
pub(crate) fn guard_verdict(
    raised: bool,
    pending_bytes: u64,
    high_bytes: u64,
    overdue: Duration,
) -> GuardVerdict {
    if !raised && (pending_bytes >= high_bytes || overdue >= MAX_LAG) {
        GuardVerdict::Raise
    } else {
        GuardVerdict::Leave
    }
}

/// Whether the consumer, raised, may lower itself after a drain.
pub(crate) fn may_lower(raised: bool, pending_bytes: u64, low_bytes: u64) -> bool {
    raised && pending_bytes < low_bytes
}

struct Shared {
    /// The consumer's thread id (0 until its first poll).
    tid: AtomicI32,
    /// Nanoseconds since `epoch` by which the consumer is due back at the ring (u64::MAX:
    /// not yet polling).
    due_back_ns: AtomicU64,
    /// Set by the guard after raising the consumer, cleared by the consumer as it lowers
    /// itself. No lock: a consumer that lowered itself to SCHED_IDLE while holding one
    /// could be starved right there and block the guard (priority inversion, seen as the
    /// ring filling up for 100+ ms). Instead the guard checks the thread's actual policy
    /// each period, so a lost race costs at most one period.
    raised: AtomicBool,
    raises: AtomicU64,
    stop: AtomicBool,
    epoch: Instant,
}

impl Shared {
    fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }
}

/// The consumer side of [`ConsumerPriority::Yield`]: owns the guard thread.
pub(crate) struct YieldingConsumer {
    shared: Arc<Shared>,
    guard: Option<JoinHandle<()>>,
    low_bytes: u64,
    /// The thread that polls (policies are per thread).
    tid: i32,
}

impl YieldingConsumer {
    /// Starts the guard for the rings `levels` watches, each of `ring_bytes`, or returns
    /// why yielding is not possible here (then the caller stays at normal priority). The
    /// rings together must hold [`MIN_YIELD_RING_BYTES`].
    pub(crate) fn start(
        levels: Vec<RingLevel>,
        ring_bytes: u64,
    ) -> Result<YieldingConsumer, String> {
        let total = ring_bytes * levels.len() as u64;
        if total < MIN_YIELD_RING_BYTES {
            return Err(format!(
                "a yielding consumer needs rings of at least {} MiB together to be safe from drops",
                MIN_YIELD_RING_BYTES >> 20
            ));
        }
        can_leave_sched_idle()?;
        let shared = Arc::new(Shared {
            tid: AtomicI32::new(0),
            due_back_ns: AtomicU64::new(u64::MAX),
            raised: AtomicBool::new(false),
            raises: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            epoch: Instant::now(),
        });
        let high_bytes = (ring_bytes / 8).max(1);
        let guard_shared = Arc::clone(&shared);
        let guard = std::thread::Builder::new()
            .name("fixscope-guard".into())
            .spawn(move || guard_loop(&guard_shared, &levels, high_bytes))
            .map_err(|e| format!("cannot start the guard thread: {e}"))?;
        Ok(YieldingConsumer {
            shared,
            guard: Some(guard),
            low_bytes: (ring_bytes / 64).max(1),
            tid: 0,
        })
    }

    /// Called by the consumer as it comes to the ring, about to wait up to `max_wait`:
    /// lowers a new consumer thread, and tells the guard when to expect it back.
    pub(crate) fn on_poll(&mut self, max_wait: Duration) {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        if tid != self.tid && set_policy(0, libc::SCHED_IDLE).is_ok() {
            self.tid = tid;
            self.shared.raised.store(false, Ordering::Release);
            self.shared.tid.store(tid, Ordering::Release);
        }
        let due = self.shared.now_ns() + max_wait.as_nanos() as u64;
        self.shared.due_back_ns.store(due, Ordering::Relaxed);
    }

    /// Called after a drain with what is left in the fullest ring: back to `SCHED_IDLE`
    /// once the backlog is gone.
    pub(crate) fn after_drain(&mut self, pending_bytes: u64) {
        let raised = self.shared.raised.load(Ordering::Acquire);
        if may_lower(raised, pending_bytes, self.low_bytes) {
            self.shared.raised.store(false, Ordering::Release);
            let _ = set_policy(0, libc::SCHED_IDLE);
        }
    }

    /// How many times the guard raised the consumer.
    pub(crate) fn raises(&self) -> u64 {
        self.shared.raises.load(Ordering::Relaxed)
    }
}

impl Drop for YieldingConsumer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(guard) = self.guard.take() {
            guard.thread().unpark();
            let _ = guard.join();
        }
        // The thread that polled goes on with the caller's work (final report, ...): give
        // it its normal priority back.
        // SAFETY: gettid has no preconditions.
        if self.tid != 0 && self.tid == unsafe { libc::gettid() } {
            let _ = set_policy(0, libc::SCHED_OTHER);
        }
    }
}

fn guard_loop(shared: &Shared, levels: &[RingLevel], high_bytes: u64) {
    while !shared.stop.load(Ordering::Acquire) {
        std::thread::park_timeout(GUARD_PERIOD);
        let tid = shared.tid.load(Ordering::Acquire);
        if tid == 0 {
            continue;
        }
        let due = shared.due_back_ns.load(Ordering::Relaxed);
        let overdue = Duration::from_nanos(shared.now_ns().saturating_sub(due));
        // `raised` is what we believe; the thread's policy is the truth (the consumer may
        // have lowered itself since, or be about to).
        let at_idle = thread_policy(tid).is_ok_and(|p| p == libc::SCHED_IDLE);
        let fullest = levels.iter().map(RingLevel::pending).max().unwrap_or(0);
        if guard_verdict(!at_idle, fullest, high_bytes, overdue) == GuardVerdict::Raise
            && set_policy(tid, libc::SCHED_OTHER).is_ok()
        {
            shared.raised.store(true, Ordering::Release);
            shared.raises.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn set_policy(tid: i32, policy: libc::c_int) -> std::io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: a valid sched_param; tid 0 is the calling thread.
    if unsafe { libc::sched_setscheduler(tid, policy, &param) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Policy of thread `tid` (0: the caller), for tests and diagnostics.
pub fn thread_policy(tid: i32) -> std::io::Result<libc::c_int> {
    // SAFETY: no pointers involved.
    let p = unsafe { libc::sched_getscheduler(tid) };
    if p < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(p)
    }
}

/// Leaving SCHED_IDLE needs CAP_SYS_NICE (or RLIMIT_NICE): try the round trip on a
/// throwaway thread, so a failure cannot strand a thread we care about at idle priority.
fn can_leave_sched_idle() -> Result<(), String> {
    std::thread::Builder::new()
        .name("fixscope-probe".into())
        .spawn(|| {
            set_policy(0, libc::SCHED_IDLE).map_err(|e| format!("cannot use SCHED_IDLE: {e}"))?;
            set_policy(0, libc::SCHED_OTHER)
                .map_err(|e| format!("cannot leave SCHED_IDLE (needs CAP_SYS_NICE): {e}"))
        })
        .map_err(|e| format!("cannot start a thread: {e}"))?
        .join()
        .map_err(|_| "priority probe panicked".to_string())?
}

#[cfg(test)]
mod tests {
    use super::*;

    const HIGH: u64 = 8 << 20;

    #[test]
    fn guard_raises_on_a_filling_ring_or_an_overdue_consumer_only() {
        let ok = Duration::ZERO;
        assert_eq!(guard_verdict(false, 0, HIGH, ok), GuardVerdict::Leave);
        assert_eq!(
            guard_verdict(false, HIGH - 1, HIGH, ok),
            GuardVerdict::Leave
        );
        assert_eq!(guard_verdict(false, HIGH, HIGH, ok), GuardVerdict::Raise);
        assert_eq!(
            guard_verdict(false, 0, HIGH, MAX_LAG - Duration::from_millis(1)),
            GuardVerdict::Leave
        );
        assert_eq!(guard_verdict(false, 0, HIGH, MAX_LAG), GuardVerdict::Raise);
        // Already raised: nothing more to do, whatever the ring holds.
        assert_eq!(
            guard_verdict(true, HIGH * 4, HIGH, MAX_LAG * 10),
            GuardVerdict::Leave
        );
    }

    #[test]
    fn consumer_lowers_itself_only_once_raised_and_drained() {
        assert!(!may_lower(false, 0, 100));
        assert!(!may_lower(true, 100, 100));
        assert!(may_lower(true, 99, 100));
    }

    #[test]
    fn probe_reports_whether_sched_idle_can_be_left() {
        let is_root = unsafe { libc::geteuid() } == 0;
        match can_leave_sched_idle() {
            Ok(()) => {}
            Err(e) => assert!(!is_root, "root must be able to leave SCHED_IDLE: {e}"),
        }
        // The probe ran on its own thread: this one is untouched.
        assert_eq!(thread_policy(0).unwrap(), libc::SCHED_OTHER);
    }
}
