//! fixscope's live source: eBPF programs on TC ingress and egress copy the TCP payload of
//! the watched ports, with a `bpf_ktime_get_ns` timestamp, into one BPF ring buffer; this
//! crate loads and attaches them and turns ring records into [`Segment`]s.
//!
//! * Attachment: TCX links on Linux >= 6.6 (they chain with other programs and vanish with
//!   the process); older kernels get a clsact filter with fixscope's own handle/priority
//!   ([`TC_HANDLE`], [`TC_PRIORITY`]), removed on drop or by [`detach_leftovers`] after a
//!   crash. The programs never change a packet's fate.
//! * Filtering happens in the kernel: ports, role (which hook sees which direction), and
//!   an optional address. Each packet is taken at exactly one hook, even on loopback.
//! * The kernel never wakes user space per record; it wakes only when the ring holds
//!   `wakeup_threshold_bytes`. [`LiveCapture::poll`] busy-polls or backs off.
//!
//! The record layout is defined once, in `src/bpf/fixscope.h`; Rust uses the type
//! libbpf-cargo generates from its BTF.

mod priority;
mod ring;
mod sys;

#[allow(clippy::all, clippy::pedantic, unsafe_op_in_unsafe_fn)]
mod skel {
    include!(concat!(env!("OUT_DIR"), "/fixscope.skel.rs"));
}

use std::mem::{size_of, ManuallyDrop, MaybeUninit};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::{AsFd, AsRawFd};
use std::ptr::NonNull;
use std::time::{Duration, Instant};

use fixscope_core::ports::{PortSet, Role};
use fixscope_core::segment::{Direction, Endpoint, FlowKey, Segment, TcpFlags};
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{libbpf_sys, AsRawLibbpf, Link, MapCore, MapFlags, OpenObject, TcHook};

use crate::priority::YieldingConsumer;
pub use crate::priority::{thread_policy, ConsumerPriority};
use crate::ring::{Ring, RingLevel};
use crate::skel::{types, FixscopeSkel, FixscopeSkelBuilder};

pub use crate::sys::{
    check_privileges, enable_bpf_stats, ifindex_of, ifname_of, kernel_version,
    missing_capabilities, ProgramStats,
};

/// Handle of fixscope's clsact filters (tc fallback), "F1C5".
pub const TC_HANDLE: u32 = 0xF1C5;
/// Priority of fixscope's clsact filters (tc fallback).
pub const TC_PRIORITY: u32 = 0xF1C5;
/// Names of the BPF programs (as the kernel reports them).
pub const PROGRAM_NAMES: [&str; 2] = ["fxs_ingress", "fxs_egress"];
/// Routes libbpf's own messages: only with `verbose` (otherwise harmless notices such as
/// "Parent Qdisc doesn't exists" on a first tc attach would reach the user's terminal;
/// real failures come back as [`LiveError`]s either way).
pub fn set_libbpf_logging(verbose: bool) {
    if verbose {
        libbpf_rs::set_print(Some((
            libbpf_rs::PrintLevel::Warn,
            |_level, msg: String| eprint!("libbpf: {msg}"),
        )));
    } else {
        libbpf_rs::set_print(None);
    }
}

/// Most port ranges the kernel filter takes.
pub const MAX_PORT_RANGES: usize = 8;

const CHUNK_BYTES: usize = 16384; // FXS_CHUNK in fixscope.h
const REC_HDR: usize = size_of::<types::fxs_rec>();

/// With [`IdleStrategy::Backoff`], the shortest time between two drains of the ring.
///
/// A wake-up costs ~5–10 µs of CPU in this VM whatever it finds; draining every record as
/// it comes (at 30k msgs/s the ring is rarely empty for long) cost 18% of a core at 10k
/// orders/s. Letting records gather for 1 ms shares that cost among them. It changes no
/// number — timestamps are taken in the kernel — and the ring absorbs the wait (1 ms of
/// 1M msgs/s is ~0.4 MB against a 64 MiB default ring; past the wakeup threshold, pacing
/// stops).
pub const BATCH_PERIOD: Duration = Duration::from_millis(1);

/// With [`IdleStrategy::Backoff`], the first and the longest sleep while the ring stays
/// empty. The sleep keeps growing across `poll` calls until records come, so an idle
/// capture wakes ~200 times a second, not ~1,250 (as when every 20 ms `poll` restarted
/// at 20 µs); the first records after a quiet spell wait at most 5 ms in the ring, which
/// changes no number (kernel timestamps) and is far below the wakeup threshold.
const IDLE_SLEEP_MIN: Duration = Duration::from_micros(20);
const IDLE_SLEEP_MAX: Duration = Duration::from_millis(5);

/// How [`LiveCapture::poll`] waits while the ring is empty.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IdleStrategy {
    /// Busy-poll the ring (lowest delivery delay; burns the core — see `LiveConfig::cpu`).
    Spin,
    /// Drain at most once per [`BATCH_PERIOD`] (sooner only once the ring holds
    /// `wakeup_threshold_bytes`), and while the ring is empty sleep progressively longer
    /// (20 µs, doubling up to 5 ms) in `ppoll` on the ring descriptor, which the kernel
    /// wakes early once `wakeup_threshold_bytes` are queued.
    #[default]
    Backoff,
}

/// How the programs are attached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AttachMode {
    /// TCX on Linux >= 6.6 (falling back to tc if TCX attach fails), tc filter otherwise.
    #[default]
    Auto,
    /// TCX links only.
    Tcx,
    /// clsact filters with fixscope's handle/priority.
    TcFilter,
}

/// What to capture and how.
#[derive(Clone, Debug)]
pub struct LiveConfig {
    pub iface: String,
    pub ports: PortSet,
    pub role: Role,
    /// Ring-buffer size; rounded up to a power of two, at least one page.
    pub ring_bytes: usize,
    pub idle: IdleStrategy,
    /// Pin the thread that calls `poll` to this CPU (useful with `IdleStrategy::Spin`).
    pub cpu: Option<usize>,
    /// Only packets with this address at either end.
    pub ip_filter: Option<IpAddr>,
    pub attach: AttachMode,
    /// The kernel wakes a sleeping `poll` once this many bytes are queued (0: on every
    /// record, which costs microseconds per record).
    pub wakeup_threshold_bytes: usize,
    /// How the consumer competes for CPU with the measured applications.
    pub priority: ConsumerPriority,
}

impl LiveConfig {
    /// Defaults: role server, 64 MiB ring, backoff idling, auto attach, wake at 1/4 ring,
    /// yielding consumer.
    pub fn new(iface: impl Into<String>, ports: PortSet) -> Self {
        LiveConfig {
            iface: iface.into(),
            ports,
            role: Role::Server,
            ring_bytes: 64 << 20,
            idle: IdleStrategy::Backoff,
            cpu: None,
            ip_filter: None,
            attach: AttachMode::Auto,
            wakeup_threshold_bytes: 16 << 20,
            priority: ConsumerPriority::Yield,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("not privileged: {0}")]
    NotPrivileged(String),
    #[error("no such network interface: {0}")]
    NoSuchInterface(String),
    #[error("kernel lacks BPF support needed for live capture: {0}")]
    NoBtfOrBpf(String),
    #[error("network interface {0} disappeared")]
    InterfaceGone(String),
    #[error("invalid live-capture configuration: {0}")]
    Config(String),
    #[error("loading the BPF programs failed: {0}")]
    Load(String),
    #[error("attaching the BPF programs failed: {0}")]
    Attach(String),
    #[error("reading BPF state failed: {0}")]
    Bpf(String),
    #[error("ring buffer: {0}")]
    Ring(#[from] std::io::Error),
}

/// The kernel-side counters, summed over CPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelCounters {
    /// Program invocations (both hooks, every packet on the interface).
    pub hook_calls: u64,
    /// TCP packets taken as requests / responses (port, role and address filters passed),
    /// including pure ACKs that produce no record.
    pub requests_in_range: u64,
    pub responses_in_range: u64,
    /// TCP payload bytes of the taken packets.
    pub payload_bytes: u64,
    /// Records written to the ring.
    pub records: u64,
    /// Records lost because the ring was full, by direction, and their payload bytes.
    pub ring_drops_request: u64,
    pub ring_drops_response: u64,
    pub dropped_bytes: u64,
    /// Payload bytes not copied (beyond 8 x 16 KiB per skb, or unreadable).
    pub cut_bytes: u64,
    /// Records that woke user space (fill threshold reached).
    pub wakeups: u64,
    /// `bpf_skb_load_bytes` failures on payload (their bytes are in `cut_bytes`).
    pub load_errors: u64,
}

impl KernelCounters {
    pub fn ring_drops(&self) -> u64 {
        self.ring_drops_request + self.ring_drops_response
    }

    fn add(&mut self, c: &types::fxs_counters) {
        self.hook_calls += c.hook_calls;
        self.requests_in_range += c.requests_in_range;
        self.responses_in_range += c.responses_in_range;
        self.payload_bytes += c.payload_bytes;
        self.records += c.records;
        self.ring_drops_request += c.ring_drops_request;
        self.ring_drops_response += c.ring_drops_response;
        self.dropped_bytes += c.dropped_bytes;
        self.cut_bytes += c.cut_bytes;
        self.wakeups += c.wakeups;
        self.load_errors += c.load_errors;
    }
}

/// A TCX link of fixscope's, as found by [`fixscope_links_on`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FixscopeLink {
    pub link_id: u32,
    pub prog_id: u32,
    pub prog_name: String,
    pub ifindex: u32,
    /// "ingress" or "egress".
    pub direction: &'static str,
}

/// A tc (clsact) filter of fixscope's, as found by [`fixscope_tc_filters_on`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FixscopeTcFilter {
    pub prog_id: u32,
    pub prog_name: String,
    /// "ingress" or "egress".
    pub direction: &'static str,
}

enum Attached {
    Tcx(Vec<Link>),
    Tc(Vec<TcHook>),
}

/// A loaded and attached capture. Dropping it detaches everything it attached.
pub struct LiveCapture {
    // Field order matters for drop: the priority guard stops first; the ring (which uses
    // the map fd) and the links go before the skeleton, the skeleton before its backing
    // storage (freed in Drop).
    yielding: Option<YieldingConsumer>,
    /// Why `ConsumerPriority::Yield` was asked for but is not in effect.
    priority_fallback: Option<String>,
    ring: Ring,
    attached: Attached,
    skel: ManuallyDrop<FixscopeSkel<'static>>,
    storage: NonNull<MaybeUninit<OpenObject>>,
    iface: String,
    ifindex: u32,
    idle: IdleStrategy,
    cpu: Option<usize>,
    pinned: Option<std::thread::ThreadId>,
    malformed: u64,
    /// Backoff pacing: when the last drain that found records started, and the fill level
    /// that ends pacing early.
    last_drain: Option<Instant>,
    wakeup_threshold_bytes: u64,
    /// Backoff: the next sleep while the ring stays empty.
    idle_sleep: Duration,
}

// SAFETY: every field is owned by the capture (the skeleton's storage is a heap block only
// it references); libbpf objects may be used from any thread, one at a time, which `&mut`
// on poll ensures.
unsafe impl Send for LiveCapture {}

fn lerr(e: libbpf_rs::Error) -> String {
    format!("{e:#}")
}

fn tcx_supported() -> bool {
    kernel_version().is_some_and(|v| v >= (6, 6))
}

impl LiveCapture {
    /// Checks privileges, the interface and kernel support (each with its own error), then
    /// loads the programs configured for `cfg` and attaches them to `cfg.iface` in the
    /// calling thread's network namespace.
    pub fn open(cfg: &LiveConfig) -> Result<Self, LiveError> {
        sys::check_privileges()?;
        let ifindex = sys::ifindex_of(&cfg.iface)?;
        let l2_len = sys::l2_header_len(&cfg.iface)?;
        sys::check_bpf_support()?;
        if cfg.ports.ranges().len() > MAX_PORT_RANGES {
            return Err(LiveError::Config(format!(
                "at most {MAX_PORT_RANGES} port ranges can be watched live (got {})",
                cfg.ports.ranges().len()
            )));
        }
        match cfg.attach {
            AttachMode::Tcx => Self::open_with(cfg, ifindex, l2_len, true),
            AttachMode::TcFilter => Self::open_with(cfg, ifindex, l2_len, false),
            AttachMode::Auto if tcx_supported() => {
                match Self::open_with(cfg, ifindex, l2_len, true) {
                    Err(LiveError::Attach(_)) => Self::open_with(cfg, ifindex, l2_len, false),
                    other => other,
                }
            }
            AttachMode::Auto => Self::open_with(cfg, ifindex, l2_len, false),
        }
    }

    fn open_with(
        cfg: &LiveConfig,
        ifindex: u32,
        l2_len: u32,
        tcx: bool,
    ) -> Result<Self, LiveError> {
        let storage = NonNull::from(Box::leak(Box::new(MaybeUninit::<OpenObject>::uninit())));
        // From here on, `storage` must be freed on every path: `Guard` does it unless the
        // capture takes ownership.
        struct Guard(Option<NonNull<MaybeUninit<OpenObject>>>);
        impl Drop for Guard {
            fn drop(&mut self) {
                if let Some(p) = self.0.take() {
                    // SAFETY: `p` came from Box::leak above and nothing refers to it any
                    // more (the skeleton that borrowed it has been dropped).
                    drop(unsafe { Box::from_raw(p.as_ptr()) });
                }
            }
        }
        let mut guard = Guard(Some(storage));
        // SAFETY: the block lives until `Guard` or `LiveCapture::drop` frees it, which
        // happens only after the skeleton borrowing it is gone (the skeleton is declared
        // after the guard below, so it drops first on error paths).
        let obj: &'static mut MaybeUninit<OpenObject> = unsafe { &mut *storage.as_ptr() };
        let skel = Self::load(cfg, l2_len, tcx, obj)?;
        let mut skel = ManuallyDrop::new(skel);
        // On failure below the skeleton must be dropped before the storage.
        let result = (|| {
            let attached = if tcx {
                Attached::Tcx(attach_tcx_both(&skel, ifindex)?)
            } else {
                Attached::Tc(attach_tc_both(&skel, ifindex)?)
            };
            let ring_fd = skel.maps.fxs_ring.as_fd().as_raw_fd();
            let ring_size = skel.maps.fxs_ring.max_entries() as usize;
            let ring = match Ring::new(ring_fd, ring_size) {
                Ok(r) => r,
                Err(e) => {
                    detach(attached);
                    return Err(LiveError::Ring(e));
                }
            };
            Ok((ring, attached))
        })();
        match result {
            Ok((ring, attached)) => {
                guard.0 = None;
                let (yielding, priority_fallback) = match cfg.priority {
                    ConsumerPriority::Normal => (None, None),
                    ConsumerPriority::Yield => {
                        let ring_fd = skel.maps.fxs_ring.as_fd().as_raw_fd();
                        match RingLevel::new(ring_fd)
                            .map_err(|e| format!("cannot map the ring positions: {e}"))
                            .and_then(|level| YieldingConsumer::start(level, ring.size() as u64))
                        {
                            Ok(y) => (Some(y), None),
                            Err(why) => (None, Some(why)),
                        }
                    }
                };
                Ok(LiveCapture {
                    yielding,
                    priority_fallback,
                    ring,
                    attached,
                    skel,
                    storage,
                    iface: cfg.iface.clone(),
                    ifindex,
                    idle: cfg.idle,
                    cpu: cfg.cpu,
                    pinned: None,
                    malformed: 0,
                    last_drain: None,
                    wakeup_threshold_bytes: cfg.wakeup_threshold_bytes as u64,
                    idle_sleep: IDLE_SLEEP_MIN,
                })
            }
            Err(e) => {
                // SAFETY: dropped exactly once, before `guard` frees its storage.
                unsafe { ManuallyDrop::drop(&mut skel) };
                Err(e)
            }
        }
    }

    fn load(
        cfg: &LiveConfig,
        l2_len: u32,
        tcx: bool,
        obj: &'static mut MaybeUninit<OpenObject>,
    ) -> Result<FixscopeSkel<'static>, LiveError> {
        let mut open = FixscopeSkelBuilder::default()
            .open(obj)
            .map_err(|e| LiveError::Load(format!("opening the BPF object: {}", lerr(e))))?;
        let ro = open
            .maps
            .rodata_data
            .as_deref_mut()
            .ok_or_else(|| LiveError::Load("BPF object has no .rodata".to_string()))?;
        ro.cfg_role = match cfg.role {
            Role::Server => 0,
            Role::Client => 1,
        };
        let ranges = cfg.ports.ranges();
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

        let page = ring::page_size();
        let ring = cfg
            .ring_bytes
            .max(page)
            .checked_next_power_of_two()
            .filter(|&r| r <= 1 << 30)
            .ok_or_else(|| LiveError::Config("ring_bytes must be at most 1 GiB".to_string()))?;
        open.maps
            .fxs_ring
            .set_max_entries(ring as u32)
            .map_err(|e| LiveError::Load(format!("sizing the ring: {}", lerr(e))))?;
        if !tcx {
            // SEC("tcx/...") sets expected_attach_type BPF_TCX_*; classic cls_bpf programs
            // load with 0, which older kernels insist on.
            for p in [&mut open.progs.fxs_ingress, &mut open.progs.fxs_egress] {
                p.set_attach_type(libbpf_rs::ProgramAttachType::CgroupInetIngress);
            }
        }
        open.load().map_err(|e| LiveError::Load(lerr(e)))
    }

    /// Drains the ring, handing each record to `on_segment` as a [`Segment`] borrowing the
    /// ring memory, and returns how many were handled. When the ring is empty, waits per
    /// the idle strategy for up to `max_wait`, returning `Ok(0)` if nothing came.
    ///
    /// A skb larger than 16 KiB (GSO/GRO) arrives as several segments, each with the
    /// sequence number of its own first byte.
    pub fn poll(
        &mut self,
        max_wait: Duration,
        on_segment: &mut dyn FnMut(&Segment<'_>),
    ) -> Result<usize, LiveError> {
        self.pin_if_needed()?;
        if let Some(y) = &mut self.yielding {
            y.on_poll(max_wait);
        }
        if self.idle == IdleStrategy::Backoff {
            self.pace(max_wait);
        }
        let mut start: Option<Instant> = None;
        loop {
            let drain_started = Instant::now();
            let n = self.drain(on_segment);
            if let Some(y) = &mut self.yielding {
                y.after_drain(self.ring.avail());
            }
            if n > 0 {
                self.last_drain = Some(drain_started);
                self.idle_sleep = IDLE_SLEEP_MIN;
                return Ok(n);
            }
            let t0 = *start.get_or_insert_with(Instant::now);
            let elapsed = t0.elapsed();
            if elapsed >= max_wait {
                return Ok(0);
            }
            match self.idle {
                IdleStrategy::Spin => std::hint::spin_loop(),
                // No spinning here: a consumer hammering the producer position steals the
                // ring's cache lines from the BPF programs (measured: ~+200 ns per record).
                IdleStrategy::Backoff => {
                    let wait = self.idle_sleep.min(max_wait - elapsed);
                    self.wait_readable(wait)?;
                    self.idle_sleep = (self.idle_sleep * 2).min(IDLE_SLEEP_MAX);
                }
            }
        }
    }

    /// Backoff: sleeps until [`BATCH_PERIOD`] after the last drain that found records
    /// (at most `max_wait`), unless the ring already holds the wakeup threshold.
    fn pace(&mut self, max_wait: Duration) {
        let Some(last) = self.last_drain else {
            return;
        };
        let since = last.elapsed();
        if since >= BATCH_PERIOD || self.ring.avail() >= self.wakeup_threshold_bytes {
            return;
        }
        std::thread::sleep((BATCH_PERIOD - since).min(max_wait));
    }

    fn drain(&mut self, on_segment: &mut dyn FnMut(&Segment<'_>)) -> usize {
        let malformed = &mut self.malformed;
        self.ring
            .consume(&mut |rec: &[u8]| match segment_from_record(rec) {
                Some(seg) => on_segment(&seg),
                None => *malformed += 1,
            })
    }

    /// Sleeps up to `wait` in ppoll on the ring fd (readable when data is queued; the
    /// kernel only sends wakeups past the fill threshold).
    fn wait_readable(&self, wait: Duration) -> Result<(), LiveError> {
        let mut pfd = libc::pollfd {
            fd: self.ring.fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ts = libc::timespec {
            tv_sec: wait.as_secs() as libc::time_t,
            tv_nsec: wait.subsec_nanos() as libc::c_long,
        };
        // SAFETY: one valid pollfd and a valid timespec, no signal mask.
        let rc = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
        if rc < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(LiveError::Ring(e));
            }
        }
        Ok(())
    }

    fn pin_if_needed(&mut self) -> Result<(), LiveError> {
        let Some(cpu) = self.cpu else { return Ok(()) };
        let me = std::thread::current().id();
        if self.pinned == Some(me) {
            return Ok(());
        }
        // SAFETY: cpu_set_t is plain old data; all-zero is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(LiveError::Config(format!("cpu {cpu} out of range")));
        }
        // SAFETY: `cpu` is within the set's size (checked above).
        unsafe { libc::CPU_SET(cpu, &mut set) };
        // SAFETY: pid 0 is the calling thread; `set` is a valid cpu_set_t.
        let rc = unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) };
        if rc != 0 {
            return Err(LiveError::Config(format!(
                "cannot pin to cpu {cpu}: {}",
                std::io::Error::last_os_error()
            )));
        }
        self.pinned = Some(me);
        Ok(())
    }

    /// The consumer priority in effect (`Yield` can fall back to `Normal`; see
    /// [`LiveCapture::priority_fallback`]).
    pub fn priority(&self) -> ConsumerPriority {
        if self.yielding.is_some() {
            ConsumerPriority::Yield
        } else {
            ConsumerPriority::Normal
        }
    }

    /// Why a yielding consumer was asked for and could not be had (e.g. no CAP_SYS_NICE).
    pub fn priority_fallback(&self) -> Option<&str> {
        self.priority_fallback.as_deref()
    }

    /// How many times the guard raised the yielding consumer to normal priority because
    /// the ring filled up or it fell behind (0 at normal priority).
    pub fn consumer_raises(&self) -> u64 {
        self.yielding.as_ref().map_or(0, |y| y.raises())
    }

    /// Bytes queued in the ring and not yet consumed.
    pub fn ring_pending_bytes(&self) -> u64 {
        self.ring.avail()
    }

    /// Records that were too short or inconsistent to decode (should stay 0).
    pub fn malformed_records(&self) -> u64 {
        self.malformed
    }

    /// The kernel counters, summed over CPUs.
    pub fn counters(&self) -> Result<KernelCounters, LiveError> {
        let per_cpu = self
            .skel
            .maps
            .fxs_counters
            .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| LiveError::Bpf(lerr(e)))?
            .ok_or_else(|| LiveError::Bpf("counters entry missing".to_string()))?;
        let mut total = KernelCounters::default();
        for v in &per_cpu {
            if v.len() < size_of::<types::fxs_counters>() {
                return Err(LiveError::Bpf("short counters value".to_string()));
            }
            // SAFETY: `v` holds at least size_of::<fxs_counters>() bytes, and fxs_counters
            // is plain u64s (any bit pattern valid); read_unaligned needs no alignment.
            let c = unsafe { std::ptr::read_unaligned(v.as_ptr() as *const types::fxs_counters) };
            total.add(&c);
        }
        Ok(total)
    }

    /// `InterfaceGone` once the interface we attached to has vanished (TCX links go with
    /// it). Call it from a thread in the same network namespace as `open`.
    pub fn check_interface(&self) -> Result<(), LiveError> {
        match sys::ifname_of(self.ifindex) {
            Some(_) => Ok(()),
            None => Err(LiveError::InterfaceGone(self.iface.clone())),
        }
    }

    /// "tcx" or "tc".
    pub fn attach_kind(&self) -> &'static str {
        match self.attached {
            Attached::Tcx(_) => "tcx",
            Attached::Tc(_) => "tc",
        }
    }

    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    /// run_time_ns / run_cnt of the ingress and egress programs (they only advance while
    /// BPF stats are enabled, see [`enable_bpf_stats`]).
    pub fn program_stats(&self) -> Result<Vec<ProgramStats>, LiveError> {
        [
            self.skel.progs.fxs_ingress.as_fd().as_raw_fd(),
            self.skel.progs.fxs_egress.as_fd().as_raw_fd(),
        ]
        .into_iter()
        .map(|fd| sys::prog_stats_by_fd(fd).map_err(|e| LiveError::Bpf(e.to_string())))
        .collect()
    }
}

impl Drop for LiveCapture {
    fn drop(&mut self) {
        let attached = std::mem::replace(&mut self.attached, Attached::Tcx(Vec::new()));
        detach(attached);
        // SAFETY: the skeleton is dropped exactly once, here, before its storage is freed;
        // the ring's mappings stay valid without the fd (munmap'ed when `ring` drops).
        unsafe { ManuallyDrop::drop(&mut self.skel) };
        // SAFETY: `storage` came from Box::leak in open_with and the skeleton that borrowed
        // it is gone.
        drop(unsafe { Box::from_raw(self.storage.as_ptr()) });
    }
}

fn detach(attached: Attached) {
    match attached {
        Attached::Tcx(links) => drop(links), // closing the link fds detaches
        Attached::Tc(hooks) => {
            for mut h in hooks {
                let _ = h.detach();
            }
        }
    }
}

fn attach_tcx_both(skel: &FixscopeSkel<'static>, ifindex: u32) -> Result<Vec<Link>, LiveError> {
    let mut links = Vec::with_capacity(2);
    for prog in [&skel.progs.fxs_ingress, &skel.progs.fxs_egress] {
        let opts = libbpf_sys::bpf_tcx_opts {
            sz: size_of::<libbpf_sys::bpf_tcx_opts>() as libbpf_sys::size_t,
            ..Default::default()
        };
        // SAFETY: the program pointer is valid and loaded while `skel` lives; `opts` is a
        // valid, sized bpf_tcx_opts. libbpf returns NULL and sets errno on failure.
        let ptr = unsafe {
            libbpf_sys::bpf_program__attach_tcx(
                prog.as_libbpf_object().as_ptr(),
                ifindex as i32,
                &opts,
            )
        };
        match NonNull::new(ptr) {
            // SAFETY: a non-NULL result is a link we now own.
            Some(p) => links.push(unsafe { Link::from_ptr(p) }),
            None => {
                let e = std::io::Error::last_os_error();
                return Err(LiveError::Attach(format!(
                    "TCX attach of {} to ifindex {ifindex}: {e}",
                    prog.name().to_string_lossy()
                )));
            }
        }
    }
    Ok(links)
}

fn attach_tc_both(skel: &FixscopeSkel<'static>, ifindex: u32) -> Result<Vec<TcHook>, LiveError> {
    let mut hooks = Vec::with_capacity(2);
    for (prog, ap) in [
        (&skel.progs.fxs_ingress, libbpf_rs::TC_INGRESS),
        (&skel.progs.fxs_egress, libbpf_rs::TC_EGRESS),
    ] {
        let mut hook = TcHook::new(prog.as_fd());
        hook.ifindex(ifindex as i32)
            .replace(false)
            .handle(TC_HANDLE)
            .priority(TC_PRIORITY)
            .attach_point(ap);
        // Attach first (quiet when clsact exists); create the clsact qdisc only when that
        // fails for another reason than a clash. We never delete it: others may use it.
        let res = match hook.attach() {
            Err(e) if e.kind() != libbpf_rs::ErrorKind::AlreadyExists => {
                hook.create().and_then(|mut h| h.attach())
            }
            other => other,
        };
        match res {
            Ok(h) => hooks.push(h),
            Err(e) => {
                for mut h in hooks {
                    let _ = h.detach();
                }
                let hint = if e.kind() == libbpf_rs::ErrorKind::AlreadyExists {
                    " (a fixscope filter is already there: another capture, or a leftover \
                     from a killed one — see detach_leftovers)"
                } else {
                    ""
                };
                return Err(LiveError::Attach(format!(
                    "tc filter on ifindex {ifindex}: {}{hint}",
                    lerr(e)
                )));
            }
        }
    }
    Ok(hooks)
}

/// Decodes one ring record (header + payload) into a segment borrowing the record.
fn segment_from_record(rec: &[u8]) -> Option<Segment<'_>> {
    if rec.len() < REC_HDR {
        return None;
    }
    // SAFETY: `rec` holds at least size_of::<fxs_rec>() bytes and fxs_rec consists of
    // integers and byte arrays (every bit pattern valid); read_unaligned needs no alignment.
    let h = unsafe { std::ptr::read_unaligned(rec.as_ptr() as *const types::fxs_rec) };
    let len = h.len as usize;
    if len > CHUNK_BYTES || REC_HDR + len > rec.len() {
        return None;
    }
    let (src, dst) = match h.family {
        4 => (
            IpAddr::V4(Ipv4Addr::new(
                h.saddr[0], h.saddr[1], h.saddr[2], h.saddr[3],
            )),
            IpAddr::V4(Ipv4Addr::new(
                h.daddr[0], h.daddr[1], h.daddr[2], h.daddr[3],
            )),
        ),
        6 => (
            IpAddr::V6(Ipv6Addr::from(h.saddr)),
            IpAddr::V6(Ipv6Addr::from(h.daddr)),
        ),
        _ => return None,
    };
    Some(Segment {
        ts_ns: h.ts_ns,
        flow: FlowKey {
            src: Endpoint {
                addr: src,
                port: h.sport,
            },
            dst: Endpoint {
                addr: dst,
                port: h.dport,
            },
        },
        direction: if h.dir == 0 {
            Direction::Request
        } else {
            Direction::Response
        },
        seq: h.seq,
        ack: h.ack,
        flags: TcpFlags(h.flags),
        payload: &rec[REC_HDR..REC_HDR + len],
        missing_tail: h.cut,
    })
}

fn tc_hook_raw(ifindex: u32, ap: libbpf_sys::bpf_tc_attach_point) -> libbpf_sys::bpf_tc_hook {
    libbpf_sys::bpf_tc_hook {
        sz: size_of::<libbpf_sys::bpf_tc_hook>() as libbpf_sys::size_t,
        ifindex: ifindex as i32,
        attach_point: ap,
        ..Default::default()
    }
}

fn tc_opts_ours() -> libbpf_sys::bpf_tc_opts {
    libbpf_sys::bpf_tc_opts {
        sz: size_of::<libbpf_sys::bpf_tc_opts>() as libbpf_sys::size_t,
        handle: TC_HANDLE,
        priority: TC_PRIORITY,
        ..Default::default()
    }
}

/// fixscope's clsact filters (our handle/priority running one of our programs) on `iface`.
pub fn fixscope_tc_filters_on(iface: &str) -> Result<Vec<FixscopeTcFilter>, LiveError> {
    let ifindex = sys::ifindex_of(iface)?;
    let mut out = Vec::new();
    for (ap, direction) in [
        (libbpf_sys::BPF_TC_INGRESS, "ingress"),
        (libbpf_sys::BPF_TC_EGRESS, "egress"),
    ] {
        let hook = tc_hook_raw(ifindex, ap);
        let mut opts = tc_opts_ours();
        // SAFETY: valid, sized hook and opts structs; the kernel fills opts.prog_id.
        let rc = unsafe { libbpf_sys::bpf_tc_query(&hook, &mut opts) };
        if rc != 0 {
            continue; // no clsact qdisc, or no filter with our handle/priority
        }
        let Ok(info) = sys::prog_stats_by_id(opts.prog_id) else {
            continue;
        };
        if PROGRAM_NAMES.contains(&info.name.as_str()) {
            out.push(FixscopeTcFilter {
                prog_id: opts.prog_id,
                prog_name: info.name,
                direction,
            });
        }
    }
    Ok(out)
}

/// Removes fixscope's clsact filters from `iface` (left behind when a tc-fallback capture
/// was killed) and returns how many it removed. Only filters with fixscope's handle and
/// priority that run a fixscope program are touched; the clsact qdisc stays. TCX links
/// need no cleanup: they die with the process that made them.
pub fn detach_leftovers(iface: &str) -> Result<usize, LiveError> {
    sys::check_privileges()?;
    let ifindex = sys::ifindex_of(iface)?;
    let mut removed = 0;
    for f in fixscope_tc_filters_on(iface)? {
        let ap = if f.direction == "ingress" {
            libbpf_sys::BPF_TC_INGRESS
        } else {
            libbpf_sys::BPF_TC_EGRESS
        };
        let hook = tc_hook_raw(ifindex, ap);
        let opts = tc_opts_ours();
        // SAFETY: valid, sized hook and opts; detach needs handle+priority, no prog.
        let rc = unsafe { libbpf_sys::bpf_tc_detach(&hook, &opts) };
        if rc != 0 {
            return Err(LiveError::Attach(format!(
                "removing the {} filter on {iface}: {}",
                f.direction,
                std::io::Error::from_raw_os_error(-rc)
            )));
        }
        removed += 1;
    }
    Ok(removed)
}

/// fixscope's TCX links on `ifindex` (Debian's bpftool 7.1 / tc 6.1 cannot show them).
pub fn fixscope_links_on(ifindex: u32) -> Result<Vec<FixscopeLink>, LiveError> {
    let mut out = Vec::new();
    for link in libbpf_rs::query::LinkInfoIter::default() {
        let libbpf_rs::query::LinkTypeInfo::Tcx(tcx) = &link.info else {
            continue;
        };
        if tcx.ifindex != ifindex {
            continue;
        }
        let Ok(info) = sys::prog_stats_by_id(link.prog_id) else {
            continue; // went away meanwhile
        };
        if !PROGRAM_NAMES.contains(&info.name.as_str()) {
            continue;
        }
        let direction = match tcx.attach_type {
            libbpf_rs::ProgramAttachType::TcxIngress => "ingress",
            _ => "egress",
        };
        out.push(FixscopeLink {
            link_id: link.id,
            prog_id: link.prog_id,
            prog_name: info.name,
            ifindex,
            direction,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(h: types::fxs_rec, payload: &[u8]) -> Vec<u8> {
        let mut v = vec![0u8; REC_HDR + payload.len()];
        // SAFETY: `v` has room for the header; write_unaligned needs no alignment.
        unsafe { std::ptr::write_unaligned(v.as_mut_ptr() as *mut types::fxs_rec, h) };
        v[REC_HDR..].copy_from_slice(payload);
        v
    }

    #[test]
    fn decodes_v4_and_v6_records() {
        let mut h = types::fxs_rec {
            ts_ns: 42,
            seq: 1000,
            len: 3,
            cut: 5,
            sport: 50000,
            dport: 9878,
            family: 4,
            dir: 0,
            flags: 0x18,
            ..Default::default()
        };
        h.saddr[..4].copy_from_slice(&[127, 0, 0, 1]);
        h.daddr[..4].copy_from_slice(&[10, 1, 2, 3]);
        let rec = record(h, b"8=F");
        let seg = segment_from_record(&rec).expect("decodes");
        assert_eq!(seg.ts_ns, 42);
        assert_eq!(seg.seq, 1000);
        assert_eq!(seg.payload, b"8=F");
        assert_eq!(seg.missing_tail, 5);
        assert_eq!(seg.direction, Direction::Request);
        assert_eq!(seg.flow.src.to_string(), "127.0.0.1:50000");
        assert_eq!(seg.flow.dst.to_string(), "10.1.2.3:9878");

        h.family = 6;
        h.dir = 1;
        h.saddr = Ipv6Addr::LOCALHOST.octets();
        h.daddr = Ipv6Addr::LOCALHOST.octets();
        let rec = record(h, b"8=F");
        let seg = segment_from_record(&rec).expect("decodes");
        assert_eq!(seg.direction, Direction::Response);
        assert_eq!(seg.flow.src.to_string(), "[::1]:50000");
    }

    #[test]
    fn rejects_malformed_records() {
        assert!(segment_from_record(&[0u8; 10]).is_none());
        let h = types::fxs_rec {
            len: 100,
            family: 4,
            ..Default::default()
        };
        assert!(segment_from_record(&record(h, b"short")).is_none());
        let h = types::fxs_rec {
            family: 7,
            ..Default::default()
        };
        assert!(segment_from_record(&record(h, b"")).is_none());
    }

    #[test]
    fn header_matches_c_layout() {
        assert_eq!(REC_HDR, 80);
        assert_eq!(size_of::<types::fxs_counters>(), 11 * 8);
    }
}
