//! Why a mirror-port capture could not start or went on failing.

/// A mirror-port capture's failure, said so the user can act on it.
#[derive(Debug, thiserror::Error)]
pub enum TapError {
    #[error("no interface given to --tap -i")]
    NoInterface,
    #[error("interface {0} given twice")]
    DuplicateInterface(String),
    #[error("cannot capture on {iface}: {detail}")]
    Open { iface: String, detail: String },
    #[error(
        "{iface} cannot stamp packets with --time-stamp-type {wanted} (it offers: {offers}); \
         hardware time stamps need a NIC and driver that have them (`ethtool -T {iface}`)"
    )]
    TimestampTypeUnsupported {
        iface: String,
        wanted: &'static str,
        offers: String,
    },
    #[error("{iface}: link type {linktype} is not one fixscope decodes (Ethernet, Linux cooked, raw IP, BSD loopback)")]
    UnsupportedLinkType { iface: String, linktype: i32 },
    #[error("cannot set the capture filter on {iface} ({expression}): {detail}")]
    Filter {
        iface: String,
        expression: String,
        detail: String,
    },
    #[error("reading {iface} failed: {detail}")]
    Read { iface: String, detail: String },
}
