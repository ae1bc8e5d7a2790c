//! fixscope's pipeline, shared by every source:
//!
//! ```text
//! source (pcap / live eBPF) ──Segment──▶ reassembly ──bytes+ts──▶ fix::framing ──message──▶
//!   correlate ──latency──▶ stats (HDR histograms, counters) ──snapshot──▶ report (text, JSON, …)
//! ```
//!
//! The crate has no root, BPF or terminal dependencies: every stage is tested alone.

pub mod figures;
pub mod hlog;
pub mod pipeline;
pub mod report;
pub mod shard;
pub mod stats;
pub mod twostage;

// The vocabulary lives in fixscope-model; its modules keep their paths here while the core
// is split into its layers' crates.
pub use fixscope_model::{
    clock, counters, human, order, ports, segment, shutdown, socket_event, source, sparse_hist,
    wire,
};
// The capture layer lives in fixscope-capture.
#[cfg(any(test, feature = "capture-writer"))]
pub use fixscope_capture::pcap_writer;
// The stream layer (reassembly, TLS) lives in fixscope-streams.
pub use fixscope_capture::{
    acceptor, capture_stats, classify, decode, encap, mirror_dup, pcap, prefetch, wire_stamp,
};
pub use fixscope_streams::{reassembly, tls};
// FIX, the first protocol on the seam, is fixscope-fix.
pub use fixscope_fix as fix;
// The order layer (correlation, session layer, consumers, joins, sinks) is fixscope-orders.
pub use fixscope_orders::{
    breakdown, consumer, consumers, correlate, group, hops, microburst, points, recorder, session,
    sink, slowest,
};

pub use pipeline::{Pipeline, PipelineConfig};
pub use ports::{PortSet, Role};
pub use segment::{ConnectionKey, Direction, Endpoint, FlowKey, Segment, TcpFlags};
