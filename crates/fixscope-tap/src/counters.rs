//! The mirror-port capture's own counters (beside the classifier's `capture_*`).

/// What libpcap and the merge saw, summed over the interfaces. Serde names are the JSON
/// names (docs/output-json.md), a contract.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TapCounters {
    /// Packets the kernel's filter passed to the capture sockets (`ps_recv`).
    #[serde(rename = "tap_received")]
    pub received: u64,
    /// Packets the capture sockets dropped because their buffer was full (`ps_drop`):
    /// fixscope did not keep up; raise `--tap-buffer-mb`.
    #[serde(rename = "tap_drops")]
    pub drops: u64,
    /// Packets the interfaces or their drivers dropped (`ps_ifdrop`): the monitor NIC did
    /// not keep up.
    #[serde(rename = "tap_interface_drops")]
    pub interface_drops: u64,
    /// Frames that reached user space after a frame stamped later had been handed on (an
    /// interface or CPU held back longer than the merge's grace): handed on anyway, in the
    /// order they came; should stay 0.
    #[serde(rename = "tap_late_frames")]
    pub late_frames: u64,
}
