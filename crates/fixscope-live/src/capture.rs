//! [`LiveCapture`]: the loaded and attached programs plus the consumer of the per-CPU
//! rings, merged by timestamp (`merge.rs`) — open, poll, counters, detach.

use std::mem::size_of;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use fixscope_core::segment::Segment;
use fixscope_core::source::{Captured, Flow};
use rustix::net::{AddressFamily, SocketFlags, SocketType};

use crate::attach::{self, Attached};
use crate::breakdown::{socket_event_from_record, Breakdown, BreakdownCounters, SocketHooks};
use crate::clock;
use crate::config::{AttachMode, IdleStrategy, LiveConfig};
use crate::counters::KernelCounters;
use crate::merge::Merge;
use crate::priority::{ConsumerPriority, YieldingConsumer};
use crate::probe::{self, Presence};
use crate::record::segment_from_record;
use crate::ring::{At, Ring, RingLevel};
use crate::skeleton::OwnedSkel;
use crate::sys::{self, ProgramStats};
use crate::tls_uprobe::{tls_call_from_record, TlsUprobeCounters, TlsUprobes};
use crate::{load, LiveError};

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

/// What a ring's records are, and so how the consumer decodes them. Each ring added to the
/// merge comes with one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RecordKind {
    /// `struct fxs_rec` + payload (fixscope.h), from the TC programs' per-CPU rings.
    Packet,
    /// `struct fxb_rec` (breakdown.h): a socket call, from `--breakdown`'s ring.
    Socket,
    /// `struct fxt_rec` + plaintext (tls_uprobe.h): an OpenSSL call, from
    /// `--tls-uprobes`' ring.
    TlsCall,
}

/// A loaded and attached capture. Dropping it detaches everything it attached (call
/// [`LiveCapture::detach`] first to see whether that worked).
pub struct LiveCapture {
    // Field order matters for drop: the priority guard stops first, then the rings.
    yielding: Option<YieldingConsumer>,
    /// Why `ConsumerPriority::Yield` was asked for but is not in effect.
    priority_fallback: Option<String>,
    /// Every CPU's ring, merged by timestamp.
    merge: Merge<Ring, RecordKind>,
    /// One per ring, for sleeping in ppoll on all of them.
    pollfds: Vec<libc::pollfd>,
    /// `None` once detached.
    attached: Option<Attached>,
    /// CLOCK_MONOTONIC just before the programs were attached: no record is older.
    attached_at_ns: u64,
    /// CLOCK_MONOTONIC once they were detached (`None` before).
    detached_at_ns: Option<u64>,
    attach_kind: &'static str,
    skel: OwnedSkel,
    iface: String,
    ifindex: u32,
    /// A socket of the namespace `open` ran in: asks it whether the interface still exists,
    /// whatever namespace the polling thread is in.
    netns_socket: OwnedFd,
    idle: IdleStrategy,
    cpu: Option<usize>,
    pinned: Option<std::thread::ThreadId>,
    malformed: u64,
    /// Backoff pacing: when the last drain that found records started, and the fill level
    /// of any one ring that ends pacing early (the kernel's per-ring wakeup threshold).
    last_drain: Option<Instant>,
    wakeup_threshold_bytes: u64,
    /// Backoff: the next sleep while the ring stays empty.
    idle_sleep: Duration,
    /// `--breakdown`'s socket and scheduler hooks (`None` without it).
    breakdown: Option<Breakdown>,
    /// `--tls-uprobes`' OpenSSL hooks (`None` without it).
    tls_uprobes: Option<TlsUprobes>,
}

impl LiveCapture {
    /// Checks privileges, the interface and kernel support (each with its own error), then
    /// loads the programs configured for `cfg` and attaches them to `cfg.iface` in the
    /// calling thread's network namespace.
    pub fn open(cfg: &LiveConfig) -> Result<Self, LiveError> {
        sys::check_privileges()?;
        let ifindex = sys::ifindex_of(&cfg.iface)?;
        let l2_len = sys::l2_header_len(&cfg.iface)?;
        load::prepare_kernel(cfg)?;
        match cfg.attach {
            AttachMode::Tcx => Self::open_with(cfg, ifindex, l2_len, true),
            AttachMode::TcFilter => Self::open_with(cfg, ifindex, l2_len, false),
            // TCX first, unless the probe is sure the kernel has none; on any failure to
            // load or attach for TCX, the clsact filters (a verifier refusal then shows
            // again, from the classic load).
            AttachMode::Auto if probe::tcx() != Presence::No => {
                match Self::open_with(cfg, ifindex, l2_len, true) {
                    Err(LiveError::Attach { .. } | LiveError::Load { .. }) => {
                        Self::open_with(cfg, ifindex, l2_len, false)
                    }
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
        let netns_socket = rustix::net::socket_with(
            AddressFamily::INET,
            SocketType::DGRAM,
            SocketFlags::CLOEXEC,
            None,
        )
        .map_err(|e| {
            LiveError::attach("a socket for the interface checks", std::io::Error::from(e))
        })?;
        // Loaded and attached only with --breakdown; before the TC programs, so that a
        // failure here leaves nothing attached.
        let mut breakdown = if cfg.breakdown {
            Some(Breakdown::open(cfg)?)
        } else {
            None
        };
        let mut tls_uprobes = if cfg.tls_uprobes {
            Some(TlsUprobes::open(cfg)?)
        } else {
            None
        };
        let skel = OwnedSkel::load(|open| load::configure(open, cfg, l2_len, tcx))?;
        // The rings are made and mapped before anything is attached, so no failure after
        // attaching needs an undo.
        let rings = load::make_rings(skel.get(), cfg)?;
        let ring_size = rings.first().map_or(0, |(_, r)| r.size());
        let n_rings = rings.len().max(1);
        let levels: std::io::Result<Vec<RingLevel>> =
            rings.iter().map(|(_, r)| RingLevel::new(r.fd())).collect();
        let mut merge = Merge::new(clock::monotonic_ns());
        for (_, ring) in rings {
            merge.add(ring, RecordKind::Packet);
        }
        // The socket calls join the same merge, so they come in time order with the
        // segments carrying their bytes.
        if let Some(ring) = breakdown.as_mut().and_then(Breakdown::take_ring) {
            merge.add(ring, RecordKind::Socket);
        }
        if let Some(ring) = tls_uprobes.as_mut().and_then(TlsUprobes::take_ring) {
            merge.add(ring, RecordKind::TlsCall);
        }
        let attached_at_ns = clock::monotonic_ns();
        let attached = if tcx {
            attach::attach_tcx(skel.get(), ifindex)?
        } else {
            attach::attach_tc(skel.get(), ifindex)?
        };
        let (yielding, priority_fallback) = match cfg.priority {
            ConsumerPriority::Normal => (None, None),
            ConsumerPriority::Yield => {
                match levels
                    .map_err(|e| format!("cannot map the ring positions: {e}"))
                    .and_then(|levels| YieldingConsumer::start(levels, ring_size as u64))
                {
                    Ok(y) => (Some(y), None),
                    Err(why) => (None, Some(why)),
                }
            }
        };
        let pollfds = merge
            .rings()
            .map(|r| libc::pollfd {
                fd: r.fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        Ok(LiveCapture {
            yielding,
            priority_fallback,
            merge,
            pollfds,
            attach_kind: attached.kind(),
            attached: Some(attached),
            attached_at_ns,
            detached_at_ns: None,
            skel,
            iface: cfg.iface.clone(),
            ifindex,
            netns_socket,
            idle: cfg.idle,
            cpu: cfg.cpu,
            pinned: None,
            malformed: 0,
            last_drain: None,
            wakeup_threshold_bytes: (cfg.wakeup_threshold_bytes / n_rings) as u64,
            idle_sleep: IDLE_SLEEP_MIN,
            breakdown,
            tls_uprobes,
        })
    }

    /// Drains the rings in timestamp order, handing each record to `on_segment` as a
    /// [`Segment`] borrowing the ring memory, until they hold nothing old enough to hand on
    /// (see `merge.rs`: records wait until no older one can still come, about half a
    /// millisecond) or `on_segment` says [`Flow::Stop`], and returns how many segments it
    /// handed over. When there is nothing to hand on, waits per the idle strategy for up to
    /// `max_wait` — longer by at most the merge's grace when records are held back, so that
    /// a caller draining with `max_wait` zero still gets the last records.
    ///
    /// A skb larger than 16 KiB (GSO/GRO) arrives as several segments, each with the
    /// sequence number of its own first byte.
    pub fn poll(
        &mut self,
        max_wait: Duration,
        on_segment: &mut dyn FnMut(&Segment<'_>) -> Flow,
    ) -> Result<usize, LiveError> {
        let mut segments = 0;
        self.poll_captured(max_wait, &mut |captured| match captured {
            Captured::Segment(seg) => {
                segments += 1;
                on_segment(seg)
            }
            Captured::Socket(_) | Captured::TlsCall(_) => Flow::Continue,
        })?;
        Ok(segments)
    }

    /// Like [`LiveCapture::poll`], but also hands over `--breakdown`'s socket calls as
    /// [`Captured::Socket`], merged in timestamp order with the segments
    /// ([`Captured::Segment`]); returns how many of both it handed over. With
    /// `--breakdown` call this, not `poll`, which skips the socket calls.
    pub fn poll_captured(
        &mut self,
        max_wait: Duration,
        on_captured: &mut dyn FnMut(Captured<'_, '_>) -> Flow,
    ) -> Result<usize, LiveError> {
        self.pin_if_needed()?;
        if let Some(y) = &mut self.yielding {
            y.on_poll(max_wait);
        }
        if self.idle == IdleStrategy::Backoff {
            self.pace(max_wait);
        }
        let start = Instant::now();
        loop {
            let drain_started = Instant::now();
            let (drained, handed) = self.drain(on_captured);
            let fullest = self.fullest_ring();
            if let Some(y) = &mut self.yielding {
                y.after_drain(fullest);
            }
            if drained.delivered > 0 {
                self.last_drain = Some(drain_started);
                self.idle_sleep = IDLE_SLEEP_MIN;
                return Ok(handed);
            }
            let elapsed = start.elapsed();
            // Held records: wait for them (at most the grace past `max_wait`).
            let held_for = drained.release_at_ns.map(|at| {
                Duration::from_nanos(at.saturating_sub(clock::monotonic_ns()))
                    .min(Duration::from_nanos(self.merge.grace_ns()))
            });
            let limit = match held_for {
                Some(_) => max_wait + Duration::from_nanos(self.merge.grace_ns()),
                None => max_wait,
            };
            if elapsed >= limit {
                return Ok(0);
            }
            match self.idle {
                IdleStrategy::Spin => std::hint::spin_loop(),
                // A ring that holds records is always readable: sleep, do not ppoll.
                IdleStrategy::Backoff if held_for.is_some() => {
                    std::thread::sleep(held_for.unwrap_or_default().max(IDLE_SLEEP_MIN));
                }
                // No spinning here: a consumer hammering the producer positions steals the
                // rings' cache lines from the BPF programs (measured: ~+200 ns per record).
                IdleStrategy::Backoff => {
                    let wait = self.idle_sleep.min(limit - elapsed);
                    self.wait_readable(wait)?;
                    self.idle_sleep = (self.idle_sleep * 2).min(IDLE_SLEEP_MAX);
                }
            }
        }
    }

    /// Whether the capture has `--breakdown`'s hooks.
    pub fn has_breakdown(&self) -> bool {
        self.breakdown.is_some()
    }

    /// Which socket hooks `--breakdown` uses (`None` without it).
    pub fn breakdown_socket_hooks(&self) -> Option<SocketHooks> {
        self.breakdown.as_ref().map(Breakdown::socket_hooks)
    }

    /// What `--breakdown` could not hook on this kernel and which stages that leaves
    /// unmeasured, one message each (empty when everything is hooked, or without it).
    pub fn breakdown_limits(&self) -> &[String] {
        self.breakdown.as_ref().map_or(&[], |b| b.limits())
    }

    /// `--tls-uprobes`' kernel counters (`None` without it).
    pub fn tls_uprobe_counters(&self) -> Result<Option<TlsUprobeCounters>, LiveError> {
        self.tls_uprobes
            .as_ref()
            .map(TlsUprobes::counters)
            .transpose()
    }

    /// `--tls-uprobes`: each library hooked with the OpenSSL functions found in it (empty
    /// without it).
    pub fn tls_uprobe_libraries(&self) -> &[(std::path::PathBuf, Vec<&'static str>)] {
        self.tls_uprobes.as_ref().map_or(&[], |t| t.hooked())
    }

    /// `--breakdown`'s kernel counters (`None` without it).
    pub fn breakdown_counters(&self) -> Result<Option<BreakdownCounters>, LiveError> {
        self.breakdown.as_ref().map(Breakdown::counters).transpose()
    }

    /// run_time_ns / run_cnt of the breakdown programs that are loaded (empty without
    /// `--breakdown`).
    pub fn breakdown_program_stats(&self) -> Result<Vec<ProgramStats>, LiveError> {
        self.breakdown
            .as_ref()
            .map_or(Ok(Vec::new()), Breakdown::program_stats)
    }

    /// Bytes queued in the fullest ring.
    fn fullest_ring(&self) -> u64 {
        self.merge.rings().map(Ring::avail).max().unwrap_or(0)
    }

    /// Backoff: sleeps until [`BATCH_PERIOD`] after the last drain that found records
    /// (at most `max_wait`), unless a ring already holds its wakeup threshold.
    fn pace(&mut self, max_wait: Duration) {
        let Some(last) = self.last_drain else {
            return;
        };
        let since = last.elapsed();
        if since >= BATCH_PERIOD || self.fullest_ring() >= self.wakeup_threshold_bytes {
            return;
        }
        std::thread::sleep((BATCH_PERIOD - since).min(max_wait));
    }

    /// (what the merge did, segments and socket calls handed over).
    fn drain(
        &mut self,
        on_captured: &mut dyn FnMut(Captured<'_, '_>) -> Flow,
    ) -> (crate::merge::Drained, usize) {
        let malformed = &mut self.malformed;
        let mut handed = 0;
        let now = clock::monotonic_ns();
        let drained = self.merge.drain(now, &mut |kind, rec: &[u8]| {
            let flow = match kind {
                RecordKind::Packet => {
                    segment_from_record(rec).map(|seg| on_captured(Captured::Segment(&seg)))
                }
                RecordKind::Socket => {
                    socket_event_from_record(rec).map(|ev| on_captured(Captured::Socket(&ev)))
                }
                RecordKind::TlsCall => {
                    tls_call_from_record(rec).map(|ev| on_captured(Captured::TlsCall(&ev)))
                }
            };
            match flow {
                Some(flow) => {
                    handed += 1;
                    flow
                }
                None => {
                    *malformed += 1;
                    Flow::Continue
                }
            }
        });
        (drained, handed)
    }

    /// Sleeps up to `wait` in ppoll on the ring fds (readable when data is queued; the
    /// kernel only sends wakeups past a ring's fill threshold).
    fn wait_readable(&mut self, wait: Duration) -> Result<(), LiveError> {
        let ts = libc::timespec {
            tv_sec: wait.as_secs() as libc::time_t,
            tv_nsec: wait.subsec_nanos() as libc::c_long,
        };
        // SAFETY: `pollfds` is a valid array of its length, `ts` a valid timespec, no
        // signal mask.
        let rc = unsafe {
            libc::ppoll(
                self.pollfds.as_mut_ptr(),
                self.pollfds.len() as libc::nfds_t,
                &ts,
                std::ptr::null(),
            )
        };
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

    /// Bytes queued in the rings and not yet consumed.
    pub fn ring_pending_bytes(&self) -> u64 {
        self.merge.rings().map(Ring::avail).sum()
    }

    /// How many rings the capture reads (one per online CPU).
    pub fn rings(&self) -> usize {
        self.merge.rings().count()
    }

    /// Records handed on so far from each CPU's ring, in CPU order (for tests and
    /// diagnostics: where the traffic was taken).
    pub fn records_per_ring(&self) -> Vec<u64> {
        self.merge.records_per_ring()
    }

    /// Records that were too short or inconsistent to decode (should stay 0).
    pub fn malformed_records(&self) -> u64 {
        self.malformed + self.merge.short_records()
    }

    /// Records that reached user space after records stamped later had been handed on
    /// (their program was held up between its timestamp and its ring reservation for
    /// longer than the merge waited; should stay 0).
    pub fn late_records(&self) -> u64 {
        self.merge.late_records()
    }

    /// Committed records still in the rings, not handed on: after a stop, what the drain
    /// left (their segments are in no figure). Walks the rings; once detached the count is
    /// final.
    pub fn unread_records(&self) -> u64 {
        self.merge.rings().map(committed_records).sum()
    }

    /// CLOCK_MONOTONIC time up to which every record has been handed on: the capture's
    /// clock for timeouts, which never runs ahead of the records.
    pub fn delivered_to_ns(&self) -> u64 {
        self.merge.delivered_to()
    }

    /// The kernel counters, summed over CPUs (one lookup per call: cache it; the live
    /// [`Source`](crate::LiveSource) does). Still readable after [`LiveCapture::detach`].
    pub fn counters(&self) -> Result<KernelCounters, LiveError> {
        KernelCounters::read(self.skel.get())
    }

    /// `InterfaceGone` once the interface we attached to has vanished (TCX links and tc
    /// filters go with it). Asks the namespace `open` ran in, from any thread.
    pub fn check_interface(&self) -> Result<(), LiveError> {
        match rustix::net::netdevice::index_to_name(&self.netns_socket, self.ifindex) {
            Ok(_) => Ok(()),
            Err(e) if e == rustix::io::Errno::NODEV || e == rustix::io::Errno::NXIO => {
                Err(LiveError::InterfaceGone(self.iface.clone()))
            }
            Err(e) => Err(LiveError::InterfaceCheck(e.into())),
        }
    }

    /// "tcx" or "tc".
    pub fn attach_kind(&self) -> &'static str {
        self.attach_kind
    }

    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    /// The interface name the capture was opened on.
    pub fn iface(&self) -> &str {
        &self.iface
    }

    /// Takes the programs off the interface (TCX links, or our tc filters and the clsact
    /// qdisc if this capture created it and nothing else uses it). Reports what failed;
    /// a second call does nothing. tc filters must be detached from a thread in the network
    /// namespace `open` ran in.
    pub fn detach(&mut self) -> Result<(), LiveError> {
        if let Some(b) = &mut self.breakdown {
            b.detach();
        }
        if let Some(t) = &mut self.tls_uprobes {
            t.detach();
        }
        match self.attached.take() {
            Some(a) => {
                let detached = a.detach();
                self.detached_at_ns = Some(clock::monotonic_ns());
                detached
            }
            None => Ok(()),
        }
    }

    /// CLOCK_MONOTONIC just before the programs were attached: the capture's window starts
    /// here (no record is older).
    pub fn attached_at_ns(&self) -> u64 {
        self.attached_at_ns
    }

    /// CLOCK_MONOTONIC once [`LiveCapture::detach`] took the programs off (`None` before):
    /// the capture's window ends here.
    pub fn detached_at_ns(&self) -> Option<u64> {
        self.detached_at_ns
    }

    /// run_time_ns / run_cnt of the ingress and egress programs (they only advance while
    /// BPF stats are enabled, see [`enable_bpf_stats`](crate::enable_bpf_stats)).
    pub fn program_stats(&self) -> Result<Vec<ProgramStats>, LiveError> {
        let skel = self.skel.get();
        [
            skel.progs.fxs_ingress.as_fd().as_raw_fd(),
            skel.progs.fxs_egress.as_fd().as_raw_fd(),
        ]
        .into_iter()
        .map(|fd| sys::prog_stats_by_fd(fd).map_err(|e| LiveError::bpf("reading program info", e)))
        .collect()
    }
}

/// Committed records between a ring's consumer position and its producer position (up to
/// the first one still being written). Each step moves forward by at least a record
/// header, so the walk ends.
fn committed_records(ring: &Ring) -> u64 {
    let end = ring.producer();
    let mut pos = ring.consumer();
    let mut records = 0;
    while pos < end {
        match ring.record_at(pos) {
            At::Record { next, .. } => {
                records += 1;
                pos = next;
            }
            At::Skip { next } => pos = next,
            At::Busy => break,
        }
    }
    records
}

impl Drop for LiveCapture {
    fn drop(&mut self) {
        // The last resort when nobody called `detach`: a library cannot return an error
        // from Drop, and ignoring it would hide something left attached.
        if let Err(e) = self.detach() {
            eprintln!("fixscope-live: {}", crate::error::chain(&e));
        }
    }
}
