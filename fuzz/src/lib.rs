//! fixscope's fuzz targets: one function per parser, each taking arbitrary bytes and
//! checking what must hold for any input (no panic, no hang, figures that add up, and
//! where an oracle exists, the same answer as the oracle).
//!
//! `make fuzz` builds them into libFuzzer binaries (`fuzz_targets/`) with stable rustc's
//! SanitizerCoverage flags; the workspace tests (`tests/replay.rs`) run them over the
//! committed seeds and every input a fuzzer ever crashed (`regressions/`). Why this way:
//! docs/reliability.md.

mod check;
mod decode;
mod feed_seeds;
mod fix;
mod framed;
mod mdp3;
mod moldudp64_itch;
mod order_seeds;
mod pcap;
mod reassembly;
mod record;
pub mod script;
pub mod seeds;
mod socket_record;
mod sofh_ilink3;
mod soupbin_ouch;
mod tls;

pub use decode::decode;
pub use fix::fix;
pub use mdp3::mdp3;
pub use moldudp64_itch::moldudp64_itch;
pub use pcap::pcap;
pub use reassembly::reassembly;
pub use record::record;
pub use socket_record::socket_record;
pub use sofh_ilink3::sofh_ilink3;
pub use soupbin_ouch::soupbin_ouch;
pub use tls::tls;

/// A fuzz target: any bytes in, a panic when something that must hold does not.
pub type Target = fn(&[u8]);

/// Every target, by the name of its seed and regression directories.
pub const TARGETS: [(&str, Target); 11] = [
    ("pcap", pcap),
    ("decode", decode),
    ("reassembly", reassembly),
    ("fix", fix),
    ("record", record),
    ("socket_record", socket_record),
    ("tls", tls),
    ("soupbin_ouch", soupbin_ouch),
    ("sofh_ilink3", sofh_ilink3),
    ("moldudp64_itch", moldudp64_itch),
    ("mdp3", mdp3),
];
