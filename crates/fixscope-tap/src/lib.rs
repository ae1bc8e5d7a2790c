//! fixscope's mirror-port source: a copy of the wire (a switch's SPAN port, an optical tap,
//! a remote mirror in a GRE/ERSPAN/VXLAN tunnel) captured with libpcap on a monitor host,
//! handed to the core pipeline as [`fixscope_core::Segment`]s. Nothing runs on the watched
//! gateways: no BPF program, no qdisc — which is how hosts that bypass the kernel (Onload,
//! VMA, DPDK, AF_XDP) are measured.
//!
//! Parts: `config` (interfaces, ports, timestamp source), `filter` (the kernel BPF filter
//! compiled from `-p`), `capture` (one interface's libpcap handle), `merge` (frames of all
//! interfaces in timestamp order), `counters`, `source` ([`TapSource`], the core's
//! `Source`). Decoding, tunnels and a mirror's second copies are the core's (`decode`,
//! `encap`, `mirror_dup` through `classify`), so `fixscope pcap` of a capture recorded on
//! the same mirror gives the same figures.

mod capture;
mod config;
mod counters;
mod error;
mod filter;
mod merge;
mod source;

pub use config::{TapConfig, TimestampSource};
pub use counters::TapCounters;
pub use error::TapError;
pub use filter::filter_expression;
pub use source::TapSource;
