//! fixscope's capture layer: from a link-layer frame to a [`fixscope_model::Segment`] and
//! from a file to a [`fixscope_model::source::Source`]. Encapsulations (`encap`, `decode`),
//! hardware and switch time stamps (`wire_stamp`), pcap and pcapng reading (`pcap`) and its
//! read-ahead (`prefetch`), the classification of a capture's connections (`classify`,
//! `acceptor`, `mirror_dup`, `capture_stats`), and the writer the tests build captures with
//! (`pcap_writer`). Nothing here reassembles a stream or reads a protocol's messages.

pub mod acceptor;
pub mod capture_stats;
pub mod classify;
pub mod decode;
pub mod encap;
pub mod mirror_dup;
pub mod pcap;
#[cfg(any(test, feature = "capture-writer"))]
pub mod pcap_writer;
pub mod prefetch;
pub mod wire_stamp;
