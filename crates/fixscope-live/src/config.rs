//! What to capture and how: the typed configuration a caller builds before `open`.

use std::net::IpAddr;

use fixscope_core::ports::{PortSet, Role};

use crate::priority::ConsumerPriority;
use crate::skeleton::types::fxs_limit;

/// Most port ranges the kernel filter takes (`FXS_MAX_RANGES` in fixscope.h).
pub const MAX_PORT_RANGES: usize = fxs_limit::FXS_MAX_RANGES.0 as usize;

/// How [`LiveCapture::poll`](crate::LiveCapture::poll) waits while the ring is empty.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IdleStrategy {
    /// Busy-poll the ring (lowest delivery delay; burns the core — see `LiveConfig::cpu`).
    Spin,
    /// Drain at most once per [`BATCH_PERIOD`](crate::BATCH_PERIOD) (sooner only once the
    /// ring holds `wakeup_threshold_bytes`), and while the ring is empty sleep
    /// progressively longer (20 µs, doubling up to 5 ms) in `ppoll` on the ring descriptor,
    /// which the kernel wakes early once `wakeup_threshold_bytes` are queued.
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
    /// Ports whose role is not `role` (a router's legs: its client sessions served, its
    /// venue sessions initiated), by the first entry holding a range's low port.
    pub port_roles: Vec<(PortSet, Role)>,
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
    /// Also hook the watched connections' socket calls and the scheduler (`--breakdown`);
    /// without it nothing beyond the TC programs is loaded or attached.
    pub breakdown: bool,
    /// Also hook OpenSSL's SSL_read/SSL_write (`--tls-uprobes`): the plaintext of watched
    /// TLS connections without keys. Without it nothing of the kind is loaded.
    pub tls_uprobes: bool,
    /// The libraries to hook (`--tls-lib`); empty: the system's libssl.
    pub tls_libs: Vec<std::path::PathBuf>,
}

impl LiveConfig {
    /// Defaults: role server, 64 MiB ring, backoff idling, auto attach, wake at 1/4 ring,
    /// yielding consumer.
    pub fn new(iface: impl Into<String>, ports: PortSet) -> Self {
        LiveConfig {
            iface: iface.into(),
            ports,
            role: Role::Server,
            port_roles: Vec::new(),
            ring_bytes: 64 << 20,
            idle: IdleStrategy::Backoff,
            cpu: None,
            ip_filter: None,
            attach: AttachMode::Auto,
            wakeup_threshold_bytes: 16 << 20,
            priority: ConsumerPriority::Yield,
            breakdown: false,
            tls_uprobes: false,
            tls_libs: Vec::new(),
        }
    }
}
