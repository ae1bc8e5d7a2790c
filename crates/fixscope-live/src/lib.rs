//! fixscope's live source: eBPF programs on TC ingress and egress copy the TCP payload of
//! the watched ports, with a `bpf_ktime_get_ns` timestamp, into a BPF ring buffer per CPU;
//! this crate loads and attaches them, merges the rings by timestamp, and turns ring
//! records into [`Segment`]s.
//!
//! * Attachment: TCX links where the kernel has them (probed, not read off the version:
//!   [`probe`]; they chain with other programs and vanish with the process); other kernels get a clsact filter with fixscope's own handle/priority
//!   ([`TC_HANDLE`], [`TC_PRIORITY`]), removed on detach/drop — with the clsact qdisc if
//!   the capture created it and nothing else uses it — or by [`detach_leftovers`] after a
//!   crash. The programs never change a packet's fate.
//! * Filtering happens in the kernel: ports, role (which hook sees which direction), and
//!   an optional address. Each packet is taken at exactly one hook, even on loopback.
//! * The kernel never wakes user space per record; it wakes only once a CPU has filled its
//!   share of `wakeup_threshold_bytes`. [`LiveCapture::poll`] busy-polls or backs off.
//! * [`LiveSource`] puts a capture behind the core's `Source` seam.
//!
//! Everything that crosses the kernel/user boundary — the record layout, the counter
//! indices, directions, roles, sizes — is defined once, in `src/bpf/fixscope.h`; Rust uses
//! the types libbpf-cargo generates from its BTF.
//!
//! [`Segment`]: fixscope_core::segment::Segment

mod attach;
mod breakdown;
mod capabilities;
mod capture;
pub mod check;
mod clock;
mod clsact;
mod config;
mod counters;
mod error;
mod filter;
mod load;
mod merge;
mod percpu;
mod priority;
pub mod probe;
mod record;
mod ring;
mod skeleton;
mod source;
mod sys;
mod tls_uprobe;

pub use crate::attach::{
    detach_leftovers, fixscope_links_on, fixscope_tc_filters_on, FixscopeLink, FixscopeTcFilter,
    PROGRAM_NAMES, TC_HANDLE, TC_HANDLE_CREATED_CLSACT, TC_PRIORITY,
};
pub use crate::breakdown::{
    socket_event_from_record, verify_breakdown_programs, BreakdownCounters, SocketHooks,
    SCHED_PROGRAMS, SOCKET_FENTRY_PROGRAMS, SOCKET_RECORD_BYTES, SOCKET_TRACEPOINT_PROGRAMS,
};
pub use crate::capabilities::missing_capabilities;
pub use crate::capture::{LiveCapture, BATCH_PERIOD};
pub use crate::config::{AttachMode, IdleStrategy, LiveConfig, MAX_PORT_RANGES};
pub use crate::counters::{KernelCounters, KernelIntervalCounters, LiveCounters};
pub use crate::error::LiveError;
pub use crate::load::{verify_programs, VerifiedProgram};
pub use crate::priority::{thread_policy, ConsumerPriority};
/// The ring record decoder, for the fuzz targets.
pub use crate::record::{segment_from_record, REC_HDR as RECORD_HEADER_BYTES};
pub use crate::source::{LiveSource, HOUSEKEEPING_EVERY};
pub use crate::sys::{
    check_privileges, enable_bpf_stats, ifindex_of, ifname_of, kernel_version, ProgramStats,
};
pub use crate::tls_uprobe::{
    tls_call_from_record, TlsUprobeCounters, TLS_CALL_HEADER_BYTES, UPROBE_FUNCTIONS,
};

/// Routes libbpf's own messages: only with `verbose` (otherwise harmless notices such as
/// "Exclusivity flag on" when a clsact qdisc exists would reach the user's terminal; real
/// failures come back as [`LiveError`]s either way).
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
