//! Market-data feeds (`--md`): each watched feed's health — packets, messages, gaps by the
//! protocol's own sequence numbers, duplicates, recoveries, session changes, microbursts —
//! and each A/B pair's arbitration, read from a capture's UDP datagrams apart from its
//! order traffic (`read_feeds`: the captures are read once more). The protocols' rules are
//! their crates' (`fixscope-itch`, `fixscope-mdp3`); this module routes datagrams to them and sums up in the
//! report's neutral words (`report::feeds`).

mod itch;
mod leads;
mod mdp3;
pub mod spec;

use std::path::Path;

use crate::pcap::{read_datagrams, CaptureError, CaptureStats};
use crate::report::feeds::FeedSummary;
use crate::source::Flow;
pub use spec::{check_distinct, FeedAddr, MdProtocol, MdSpec};

/// One feed (or A/B pair) of a protocol.
enum Feed {
    Itch(itch::ItchFeed),
    Mdp3(mdp3::Mdp3Feed),
}

/// The feeds of a run, fed datagrams in capture order.
pub struct FeedMonitor {
    feeds: Vec<(MdSpec, Feed)>,
}

impl FeedMonitor {
    pub fn new(specs: &[MdSpec]) -> Self {
        FeedMonitor {
            feeds: specs
                .iter()
                .map(|s| {
                    let feed = match s.protocol {
                        MdProtocol::Itch50 => Feed::Itch(itch::ItchFeed::new(s.legs.len())),
                        MdProtocol::Mdp3 => Feed::Mdp3(mdp3::Mdp3Feed::new(s.legs.len())),
                    };
                    (s.clone(), feed)
                })
                .collect(),
        }
    }

    /// One UDP datagram captured at `ts_ns`: its feed's, if any watches its destination.
    #[inline]
    pub fn on_datagram(&mut self, ts_ns: u64, d: &crate::decode::UdpPacket<'_>) {
        let (addr, port) = (d.flow.dst.addr, d.flow.dst.port);
        for (spec, feed) in &mut self.feeds {
            if let Some(leg) = spec.legs.iter().position(|l| l.matches(addr, port)) {
                match feed {
                    Feed::Itch(f) => f.on_datagram(leg, ts_ns, d.payload),
                    Feed::Mdp3(f) => f.on_datagram(leg, ts_ns, d.payload),
                }
                return;
            }
        }
    }

    /// The feeds' summaries, at the end of the captures.
    pub fn finish(mut self) -> Vec<FeedSummary> {
        self.feeds
            .iter_mut()
            .map(|(spec, feed)| match feed {
                Feed::Itch(f) => f.summary(spec),
                Feed::Mdp3(f) => f.summary(spec),
            })
            .collect()
    }
}

/// Reads the UDP datagrams of `paths`, in order, into a monitor of `specs`, and sums up.
pub fn read_feeds(
    paths: &[impl AsRef<Path>],
    specs: &[MdSpec],
) -> Result<Vec<FeedSummary>, CaptureError> {
    let mut monitor = FeedMonitor::new(specs);
    let mut stats = CaptureStats::default();
    for p in paths {
        read_datagrams(p.as_ref(), &mut stats, |ts, d| {
            monitor.on_datagram(ts, d);
            Flow::Continue
        })?;
    }
    Ok(monitor.finish())
}
