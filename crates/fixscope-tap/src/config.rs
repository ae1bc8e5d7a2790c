//! What a mirror-port capture watches and how it stamps packets.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;
use std::time::Duration;

use fixscope_core::PortSet;

/// Who stamps each packet, as tcpdump's `-j`: every output names it, so nobody compares a
/// host-stamped run with a NIC-stamped one unknowingly.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TimestampSource {
    /// The monitor host's kernel when the packet reached its network stack (CLOCK_REALTIME).
    #[default]
    Host,
    /// The capture NIC, synchronised with the host's clock (PTP/phc2sys).
    Adapter,
    /// The capture NIC's own clock, not synchronised with the host's: latencies are exact,
    /// times of day are the NIC's.
    AdapterUnsynced,
}

impl TimestampSource {
    /// The name in every output and on the command line (tcpdump's names).
    pub fn name(self) -> &'static str {
        match self {
            TimestampSource::Host => "host",
            TimestampSource::Adapter => "adapter",
            TimestampSource::AdapterUnsynced => "adapter_unsynced",
        }
    }

    pub(crate) fn pcap_type(self) -> pcap::TimestampType {
        match self {
            TimestampSource::Host => pcap::TimestampType::Host,
            TimestampSource::Adapter => pcap::TimestampType::Adapter,
            TimestampSource::AdapterUnsynced => pcap::TimestampType::AdapterUnsynced,
        }
    }

    /// Whether the timestamps are on the host's CLOCK_REALTIME (so the wall clock tells
    /// how far the wire has been captured).
    pub fn on_host_clock(self) -> bool {
        self != TimestampSource::AdapterUnsynced
    }
}

impl FromStr for TimestampSource {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "host" => Ok(TimestampSource::Host),
            "adapter" => Ok(TimestampSource::Adapter),
            "adapter_unsynced" => Ok(TimestampSource::AdapterUnsynced),
            other => Err(format!(
                "unknown time stamp type '{other}' (expected host, adapter or adapter_unsynced)"
            )),
        }
    }
}

impl fmt::Display for TimestampSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A mirror-port capture's configuration.
#[derive(Clone, Debug)]
pub struct TapConfig {
    /// The monitor interfaces: one mirror port, or the two ports of a full-duplex tap
    /// (their frames are merged by timestamp).
    pub ifaces: Vec<String>,
    pub ports: PortSet,
    /// Only traffic with this address at either end (inside any tunnel: checked again in
    /// user space by the classifier's flow, the kernel filter passes tunnels whole).
    pub ip_filter: Option<IpAddr>,
    pub timestamps: TimestampSource,
    /// The kernel buffer of each interface (libpcap's `-B`).
    pub buffer_bytes: usize,
    /// Bytes kept of each frame.
    pub snaplen: usize,
    /// How long a frame is held so that frames of the other interfaces (or of other CPUs
    /// of the same one) stamped before it are handed on first. Above libpcap's delivery
    /// delay (TPACKET_V3 hands a block over at least every [`BLOCK_TIMEOUT`]).
    pub grace: Duration,
}

/// libpcap's read timeout, i.e. TPACKET_V3's block retire timeout: a quiet mirror's
/// packets reach user space within it.
pub const BLOCK_TIMEOUT: Duration = Duration::from_millis(1);

impl TapConfig {
    pub fn new(ifaces: Vec<String>, ports: PortSet) -> Self {
        TapConfig {
            ifaces,
            ports,
            ip_filter: None,
            timestamps: TimestampSource::Host,
            buffer_bytes: 256 << 20,
            snaplen: 65535,
            grace: Duration::from_millis(5),
        }
    }
}
