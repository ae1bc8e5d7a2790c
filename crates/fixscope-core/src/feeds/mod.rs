//! Market-data feeds (`--md`): each watched feed's health — packets, messages, gaps by the
//! protocol's own sequence numbers, duplicates, recoveries, session changes, microbursts —
//! and each A/B pair's arbitration, read from a capture's UDP datagrams apart from its
//! order traffic (`read_feeds`: the captures are read once more). The protocols' rules are
//! their crates' (`fixscope-itch`, `fixscope-mdp3`); this module routes datagrams to them and sums up in the
//! report's neutral words (`report::feeds`).

mod delay;
mod itch;
mod leads;
mod mdp3;
pub mod spec;

use std::path::Path;

use crate::pcap::{read_datagrams, CaptureError, CaptureStats};
use crate::report::feeds::FeedSummary;
use crate::source::Flow;
use fixscope_orders::ticks::TickTable;
pub use spec::{check_distinct, FeedAddr, MdProtocol, MdSpec};

/// One feed (or A/B pair) of a protocol.
enum Feed {
    Itch(itch::ItchFeed),
    Mdp3(mdp3::Mdp3Feed),
}

/// A market-data packet new on its leg: the sequence numbers it carries, its epoch, and
/// when it was captured (the tick table keeps the earliest copy).
pub(crate) struct Tick {
    epoch: u64,
    first: u64,
    count: u64,
    ts_ns: u64,
}

/// The feeds of a run, fed datagrams in capture order.
pub struct FeedMonitor {
    feeds: Vec<(MdSpec, Feed)>,
    /// `--tick-link`: the feed whose packets orders name (an index of `feeds`), its ticks.
    ticks: Option<(usize, TickTable)>,
}

impl FeedMonitor {
    /// Also keeps the ticks of feed `specs[linked]` when given (`--tick-link`).
    pub fn with_ticks(specs: &[MdSpec], linked: Option<usize>) -> Self {
        let mut m = FeedMonitor::new(specs);
        m.ticks = linked.map(|i| (i, TickTable::default()));
        m
    }

    pub fn new(specs: &[MdSpec]) -> Self {
        FeedMonitor {
            ticks: None,
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
        for (i, (spec, feed)) in self.feeds.iter_mut().enumerate() {
            if let Some(leg) = spec.legs.iter().position(|l| l.matches(addr, port)) {
                let tick = match feed {
                    Feed::Itch(f) => f.on_datagram(leg, ts_ns, d.payload),
                    Feed::Mdp3(f) => f.on_datagram(leg, ts_ns, d.payload),
                };
                if let (Some(t), Some((linked, table))) = (tick, self.ticks.as_mut()) {
                    if *linked == i {
                        table.add(t.epoch, t.first, t.count, t.ts_ns);
                    }
                }
                return;
            }
        }
    }

    /// The linked feed's ticks, sealed (`None` without `--tick-link`).
    pub fn take_ticks(&mut self) -> Option<TickTable> {
        self.ticks.take().map(|(_, mut table)| {
            table.seal();
            table
        })
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
    Ok(read_feeds_and_ticks(paths, specs, None)?.0)
}

/// [`read_feeds`], keeping the ticks of feed `specs[linked]` too (`--tick-link`).
pub fn read_feeds_and_ticks(
    paths: &[impl AsRef<Path>],
    specs: &[MdSpec],
    linked: Option<usize>,
) -> Result<(Vec<FeedSummary>, Option<TickTable>), CaptureError> {
    let mut monitor = FeedMonitor::with_ticks(specs, linked);
    let mut stats = CaptureStats::default();
    for p in paths {
        read_datagrams(p.as_ref(), &mut stats, |ts, d| {
            monitor.on_datagram(ts, d);
            Flow::Continue
        })?;
    }
    let ticks = monitor.take_ticks();
    Ok((monitor.finish(), ticks))
}
