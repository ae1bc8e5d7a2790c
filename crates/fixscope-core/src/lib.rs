//! fixscope's plans and the facade of the layers' crates, shared by every source:
//!
//! ```text
//! source (pcap / live eBPF) ──Segment──▶ reassembly ──bytes+ts──▶ fix::framing ──message──▶
//!   correlate ──latency──▶ stats (HDR histograms, counters) ──snapshot──▶ report (text, JSON, …)
//! ```
//!
//! The plans are this crate's own: one pipeline (`pipeline`), one pipeline in two stages
//! (`twostage`) and sharded workers (`shard`). Every layer below is a crate of its own
//! (docs/architecture.md, "Crates"), re-exported here at the paths its modules always had,
//! while the split lasts. No root, BPF or terminal dependencies: every stage is tested alone.

pub mod feeds;
pub mod pipeline;
pub mod shard;
pub mod twostage;

/// The vocabulary (fixscope-model).
pub use fixscope_model::{
    clock, counters, human, order, ports, segment, shutdown, socket_event, source, sparse_hist,
    wire,
};

/// The capture layer (fixscope-capture).
pub use fixscope_capture::{
    acceptor, capture_stats, classify, decode, encap, mirror_dup, pcap, prefetch, wire_stamp,
};

/// The capture writer, for tests, benchmarks and generated captures.
#[cfg(any(test, feature = "capture-writer"))]
pub use fixscope_capture::pcap_writer;

/// The stream layer: reassembly, TLS (fixscope-streams).
pub use fixscope_streams::{reassembly, tls};

/// FIX, the first protocol on the seam (fixscope-fix).
pub use fixscope_fix as fix;
pub use fixscope_protocol as protocol;

/// The order layer: correlation, the session layer, consumers, joins, sinks (fixscope-orders).
pub use fixscope_orders::{
    breakdown, consumer, consumers, correlate, group, microburst, points, recorder, session, sink,
    slowest, ticks,
};

/// A router's legs: hops, links, `--link discover` (fixscope-hops).
pub use fixscope_hops as hops;

/// The figures (fixscope-figures).
pub use fixscope_figures::{figures, stats};

/// The reporters (fixscope-report).
pub use fixscope_report::{hlog, report};

pub use pipeline::{Pipeline, PipelineConfig};
pub use ports::{PortSet, Role};
pub use segment::{ConnectionKey, Direction, Endpoint, FlowKey, Segment, TcpFlags};
