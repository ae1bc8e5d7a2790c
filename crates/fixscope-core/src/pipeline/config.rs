//! What the pipeline can be tuned by.

use crate::consumer::ConsumerConfig;
use crate::correlate::{CorrelatorLimits, KeySpec};
use crate::reassembly::ReassemblyLimits;

/// Everything the pipeline can be tuned by.
#[derive(Clone, Debug)]
pub struct PipelineConfig {
    pub key: KeySpec,
    pub correlation: CorrelatorLimits,
    pub reassembly: ReassemblyLimits,
    /// Top of the histograms' range (`-x`); larger values are counted as over range.
    pub highest_ns: u64,
    /// Interval report period (`-r`); 0 disables interval reports.
    pub interval_ns: u64,
    /// Connections silent this long are forgotten (FIX heartbeats are typically 30 s).
    pub idle_connection_ns: u64,
    /// Connections tracked at once; beyond it the least recently active half is dropped
    /// (a port scan or SYN flood must not grow memory without bound).
    pub max_connections: usize,
    /// The slowest orders kept per stage (`--slowest`; 0: none).
    pub slowest: usize,
    /// Split orders' latency by the source's socket calls (`--breakdown`): the
    /// `wire_to_read`, `app`, `write_to_wire` and `sched_delay` stages.
    pub breakdown: bool,
    /// Which end the breakdown times (`--role`): the acceptor's reads of requests and
    /// writes of responses, or the initiator's writes of requests and reads of responses.
    /// On loopback both ends' calls are seen; only the watched end's are used.
    pub breakdown_role: crate::Role,
    /// Latency by the orders' own fields (`--by`, `--by-limit`).
    pub by: Option<crate::group::GroupSpec>,
    /// Who stamped the packets, named in every report (`live --tap`'s `-j`; a capture's
    /// hardware clock, e.g. `metawatch (device 7)`); `None`: the source's own.
    pub timestamp_source: Option<&'static str>,
    /// Hop by hop (`--leg`, `--link`, `--link-window`): a router's sessions linked.
    pub hops: Option<crate::hops::HopConfig>,
    /// Two points, two clocks (`--point`): this pipeline reads the point nearer the
    /// acceptor and joins its orders with the far point's.
    pub points: Option<std::sync::Arc<crate::points::PointsSetup>>,
    /// `--tls-keylog`: TLS connections are decrypted with these secrets (`None`: no
    /// connection is taken for TLS, and the plaintext path is as without TLS support).
    /// Offline every line is read up front; live the files are followed as they grow.
    pub tls_keys: Option<std::sync::Arc<crate::tls::KeyStore>>,
    /// With `tls_keys`: where the TLS connections not decrypted are named.
    pub tls_undecrypted: Option<std::sync::Arc<crate::tls::UndecryptedConnections>>,
    /// The protocol of each watched port (`--protocol PORTS=NAME`; FIX where none is named).
    pub protocols: fixscope_protocol::ProtocolPorts,
    /// `--md`: the market-data feeds' health, read from the captures before the run; the
    /// summary carries it.
    pub feeds: std::sync::Arc<Vec<crate::report::feeds::FeedSummary>>,
    /// `--tick-link`: tick-to-trade by the rule, over the linked feed's ticks (read with
    /// `feeds`).
    pub ticks: Option<std::sync::Arc<fixscope_orders::ticks::TickLinker>>,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        PipelineConfig {
            key: KeySpec::default(),
            correlation: CorrelatorLimits::default(),
            reassembly: ReassemblyLimits::default(),
            highest_ns: 10_000_000_000,
            interval_ns: 1_000_000_000,
            idle_connection_ns: 600_000_000_000,
            max_connections: 1 << 16,
            slowest: crate::slowest::DEFAULT_SLOWEST,
            breakdown: false,
            breakdown_role: crate::Role::Server,
            by: None,
            timestamp_source: None,
            hops: None,
            points: None,
            tls_keys: None,
            tls_undecrypted: None,
            protocols: fixscope_protocol::ProtocolPorts::default(),
            feeds: Default::default(),
            ticks: None,
        }
    }
}

impl PipelineConfig {
    /// What the consumers of order events are built from (`crate::consumers`).
    pub fn consumers(&self) -> ConsumerConfig {
        ConsumerConfig {
            highest_ns: self.highest_ns,
            slowest: self.slowest,
            breakdown: self.breakdown,
            hops: self.hops.is_some(),
            points: self.points.is_some(),
            by: self.by.clone(),
            ticks: self.ticks.clone(),
        }
    }
}
