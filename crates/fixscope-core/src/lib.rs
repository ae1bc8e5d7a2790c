//! fixscope's pipeline, shared by every source:
//!
//! ```text
//! source (pcap / live eBPF) ──Segment──▶ reassembly ──bytes+ts──▶ fix::framing ──message──▶
//!   correlate ──latency──▶ stats (HDR histograms, counters) ──snapshot──▶ report (text, JSON, …)
//! ```
//!
//! The crate has no root, BPF or terminal dependencies: every stage is tested alone.

pub mod acceptor;
pub mod breakdown;
pub mod capture_stats;
pub mod classify;
pub mod clock;
pub mod consumer;
pub mod consumers;
pub mod correlate;
pub mod counters;
pub mod decode;
pub mod encap;
pub mod figures;
pub mod fix;
pub mod group;
pub mod hlog;
pub mod hops;
pub mod human;
pub mod microburst;
pub mod mirror_dup;
pub mod order;
pub mod pcap;
#[cfg(any(test, feature = "capture-writer"))]
pub mod pcap_writer;
pub mod pipeline;
pub mod points;
pub mod ports;
pub mod prefetch;
pub mod reassembly;
pub mod recorder;
pub mod report;
pub mod segment;
pub mod session;
pub mod shard;
pub mod shutdown;
pub mod sink;
pub mod slowest;
pub mod socket_event;
pub mod source;
pub mod sparse_hist;
pub mod stats;
pub mod tls;
pub mod twostage;
pub mod wire;
pub mod wire_stamp;

pub use pipeline::{Pipeline, PipelineConfig};
pub use ports::{PortSet, Role};
pub use segment::{ConnectionKey, Direction, Endpoint, FlowKey, Segment, TcpFlags};
