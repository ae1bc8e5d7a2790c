//! One incremental channel's health: [`ChannelTracker`] is fed every UDP payload of one
//! feed (one multicast group and port; or both feeds of an A/B pair, whose copies then
//! count as duplicates) with its capture time, in capture order, and says what each
//! packet was.
//!
//! **Packets, by MsgSeqNum** (each channel numbers its packets; CME "MDP 3.0 - Binary
//! Packet Header"):
//!
//! - The **first packet** sets where the numbering starts: a capture begun mid-week is
//!   no gap.
//! - A packet numbered **past the one expected next** opens a **gap** (the numbers in
//!   between), kept with the capture time of the packet that revealed it while open, up
//!   to a bound; past it the oldest is forgotten and counted.
//! - A packet below the expected number is **recovered** if it fills a gap (arrived late),
//!   else a **duplicate**: "Discard a packet if the sequence number has already been
//!   processed" (CME "MDP 3.0 - Incremental Feed Arbitration"). MsgSeqNum decides, never
//!   the bytes. u32::MAX is the last number: once seen, its copies are duplicates (so is
//!   an RptSeq's), and only a new epoch numbers on.
//! - **Epochs.** A packet carrying a ChannelReset4, or numbered 1 while the channel is
//!   past 1 (MsgSeqNum is "reset weekly"), starts a **new epoch**, never a gap: the
//!   numbering starts again at its MsgSeqNum, the old epoch's open gaps are abandoned
//!   (counted) and every instrument's RptSeq starts again. Such a packet below the
//!   expected number starts an epoch only if its SendingTime is later than every packet
//!   of the current epoch — else it is a copy of one already processed (the other feed's
//!   copy of the reset, a repeat of packet 1). A packet whose SendingTime is earlier
//!   than the current epoch's first packet's is of an **earlier epoch** (the slower
//!   feed's copy of a packet sent before the reset): counted, not numbered against the
//!   new epoch. Without a SendingTime neither test can pass: such a packet is numbered
//!   in the current epoch.
//! - Every datagram lands in exactly one class: new, duplicate, recovered, earlier epoch
//!   or undecodable (rejected whole, `packet`), and every message of a decoded packet in
//!   its packet's class.
//!
//! **Instruments, by RptSeq.** Every entry of a fresh (new or recovered) message whose
//! template carries SecurityID and RptSeq (book, trade summary, volume, statistics: the
//! schema's table, whether or not the crate decodes the template) is followed per
//! instrument across the channel: the numbers between the lowest and highest seen of an
//! instrument that were never seen are its open gaps — the updates of that instrument
//! the capture lost — and a late update fills one. The first update of an instrument in
//! an epoch anchors its numbering (no assumption that RptSeq restarts at 1). A packet
//! that is lost costs every instrument it carried entries for: this is where the tracker
//! says which.
//!
//! **Microbursts**: every message of every decoded packet is counted in aligned 1 ms
//! windows of capture time (`capture_ns / 1_000_000`); the fullest window is the peak. A
//! capture time earlier than the current window's counts in the current window.
//!
//! **Feed latency.** Each decoded packet with a SendingTime gives `capture_ns -
//! SendingTime` as a raw signed difference ([`FeedLatency`]): the two clocks are CME's
//! ("synced to a master clock to microsecond accuracy") and the capture's, so only the
//! caller knows the uncertainty to record with it in a histogram.

use std::collections::{BTreeMap, HashMap};

use crate::messages::{self, Message};
use crate::packet::{self, PacketError, PacketHeader};
use crate::sbe::DecodeError;
use crate::schema;
use fixscope_model::counters::Mdp3Counters;

const NS_PER_MS: u64 = 1_000_000;

/// Bounds on what a tracker keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChannelConfig {
    /// Open MsgSeqNum gaps kept; past it the lowest is forgotten.
    pub max_open_gaps: usize,
    /// Instruments whose RptSeq is followed; past it the least recently updated is
    /// forgotten.
    pub max_instruments: usize,
    /// Open RptSeq gaps kept per instrument; past it the lowest is forgotten.
    pub max_instrument_gaps: usize,
}

impl Default for ChannelConfig {
    fn default() -> Self {
        ChannelConfig {
            max_open_gaps: 1024,
            max_instruments: 100_000,
            max_instrument_gaps: 64,
        }
    }
}

/// MsgSeqNums the channel is missing: `first..=last`, found at `capture_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gap {
    pub first: u32,
    pub last: u32,
    pub capture_ns: u64,
}

impl Gap {
    pub fn packets(&self) -> u64 {
        u64::from(self.last - self.first) + 1
    }
}

/// The one class a datagram lands in (the module doc has the rules).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    New,
    Duplicate,
    Recovered,
    PreviousEpoch,
    Undecodable(PacketError),
}

/// A packet's feed latency: capture time minus SendingTime, raw (the caller records it
/// with the clocks' uncertainty it knows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeedLatency {
    pub msg_seq_num: u32,
    pub sending_time_ns: u64,
    pub capture_ns: u64,
    /// `capture_ns - sending_time_ns`, saturated at the i64 range.
    pub capture_minus_sending_ns: i64,
}

/// What one datagram was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub class: Class,
    /// The packet header, when the datagram decoded.
    pub header: Option<PacketHeader>,
    pub messages: usize,
    /// The gap this packet revealed.
    pub gap: Option<Gap>,
    /// It started a new epoch (not the first packet's).
    pub new_epoch: bool,
    /// `None`: undecodable, or no SendingTime.
    pub latency: Option<FeedLatency>,
}

/// A message seen for the first time on this channel (of a new or recovered packet).
#[derive(Clone, Copy, Debug)]
pub struct FreshMessage<'a> {
    pub msg_seq_num: u32,
    /// Its place in the packet.
    pub index: usize,
    pub bytes: &'a [u8],
    pub message: Result<Message<'a>, DecodeError>,
    /// Its packet filled a gap: its capture time is not when it was sent.
    pub recovered: bool,
}

/// Sorted disjoint runs `first -> last` of missing numbers.
#[derive(Clone, Debug, Default)]
struct Holes(BTreeMap<u32, (u32, u64)>);

impl Holes {
    /// Takes `n` out of the run holding it; `false` if none does.
    fn fill(&mut self, n: u32) -> bool {
        let Some((&first, &(last, ts))) = self.0.range(..=n).next_back() else {
            return false;
        };
        if last < n {
            return false;
        }
        self.0.remove(&first);
        if first < n {
            self.0.insert(first, (n - 1, ts));
        }
        if n < last {
            self.0.insert(n + 1, (last, ts));
        }
        true
    }

    /// Adds a run; `true` when the bound made it forget the lowest.
    fn open(&mut self, first: u32, last: u32, ts: u64, max: usize) -> bool {
        self.0.insert(first, (last, ts));
        if self.0.len() > max {
            self.0.pop_first();
            return true;
        }
        false
    }

    fn missing(&self) -> u64 {
        self.0
            .iter()
            .map(|(&f, &(l, _))| u64::from(l - f) + 1)
            .sum()
    }
}

/// One instrument's RptSeq numbering in the current epoch.
#[derive(Clone, Debug)]
struct Instrument {
    lowest: u32,
    /// The RptSeq expected next: past u32::MAX once that was seen.
    next: u64,
    holes: Holes,
    had_gap: bool,
    /// When it was last updated (the tracker's update count), its key in the LRU index.
    touched: u64,
}

/// One channel's health (the module doc has the rules).
#[derive(Debug)]
pub struct ChannelTracker {
    config: ChannelConfig,
    counters: Mdp3Counters,
    /// MsgSeqNum expected next (`None` before the first packet): past u32::MAX once
    /// packet u32::MAX was seen, so a copy of it is a duplicate.
    next: Option<u64>,
    holes: Holes,
    epoch_start_sending_ns: Option<u64>,
    epoch_max_sending_ns: u64,
    instruments: HashMap<i32, Instrument>,
    /// Least recently updated first: (touched, SecurityID).
    lru: BTreeMap<u64, i32>,
    updates: u64,
    window_index: Option<u64>,
    window_messages: u64,
}

impl Default for ChannelTracker {
    fn default() -> Self {
        Self::new(ChannelConfig::default())
    }
}

impl ChannelTracker {
    pub fn new(config: ChannelConfig) -> Self {
        ChannelTracker {
            config: ChannelConfig {
                max_open_gaps: config.max_open_gaps.max(1),
                max_instruments: config.max_instruments.max(1),
                max_instrument_gaps: config.max_instrument_gaps.max(1),
            },
            counters: Mdp3Counters::default(),
            next: None,
            holes: Holes::default(),
            epoch_start_sending_ns: None,
            epoch_max_sending_ns: 0,
            instruments: HashMap::new(),
            lru: BTreeMap::new(),
            updates: 0,
            window_index: None,
            window_messages: 0,
        }
    }

    /// What the channel counted.
    pub fn counters(&self) -> &Mdp3Counters {
        &self.counters
    }

    /// The MsgSeqNum gaps still open, lowest first.
    pub fn open_gaps(&self) -> impl Iterator<Item = Gap> + '_ {
        self.holes
            .0
            .iter()
            .map(|(&first, &(last, capture_ns))| Gap {
                first,
                last,
                capture_ns,
            })
    }

    /// Packets inside the open gaps: never seen (yet).
    pub fn missing_packets(&self) -> u64 {
        self.holes.missing()
    }

    /// The MsgSeqNum expected next, once a packet was seen (u32::MAX once packet u32::MAX
    /// was: no MsgSeqNum follows it).
    pub fn next_msg_seq_num(&self) -> Option<u32> {
        self.next.map(|n| u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// Each instrument with updates missing (RptSeq gaps still open): (SecurityID,
    /// updates missing), in no particular order.
    pub fn instruments_missing(&self) -> impl Iterator<Item = (i32, u64)> + '_ {
        self.instruments
            .iter()
            .map(|(&sid, i)| (sid, i.holes.missing()))
            .filter(|&(_, n)| n > 0)
    }

    /// The open RptSeq gaps of `security_id`: (first, last) runs, lowest first.
    pub fn instrument_gaps(&self, security_id: i32) -> Vec<(u32, u32)> {
        self.instruments.get(&security_id).map_or(Vec::new(), |i| {
            i.holes.0.iter().map(|(&f, &(l, _))| (f, l)).collect()
        })
    }

    /// Reads and tracks one datagram; `on_fresh` gets each message of a new or recovered
    /// packet, in packet order, decoded.
    pub fn on_datagram<F>(&mut self, datagram: &[u8], capture_ns: u64, mut on_fresh: F) -> Outcome
    where
        F: FnMut(FreshMessage<'_>),
    {
        self.counters.mdp3_packets += 1;
        let p = match packet::parse(datagram) {
            Ok(p) => p,
            Err(e) => {
                self.counters.mdp3_undecodable_packets += 1;
                return Outcome {
                    class: Class::Undecodable(e),
                    header: None,
                    messages: 0,
                    gap: None,
                    new_epoch: false,
                    latency: None,
                };
            }
        };
        let h = p.header;
        let n = p.message_count();
        let carries_reset = packet::headers(&p)
            .any(|m| m.is_some_and(|m| m.template_id == schema::channel_reset_4::ID));
        let (class, gap, new_epoch) = self.classify(h, carries_reset, capture_ns);
        let c = &mut self.counters;
        let n64 = n as u64;
        c.mdp3_messages += n64;
        match class {
            Class::New => (c.mdp3_new_packets += 1, c.mdp3_new_messages += n64),
            Class::Recovered => (
                c.mdp3_recovered_packets += 1,
                c.mdp3_recovered_messages += n64,
            ),
            Class::Duplicate => (
                c.mdp3_duplicate_packets += 1,
                c.mdp3_duplicate_messages += n64,
            ),
            _ => (
                c.mdp3_previous_epoch_packets += 1,
                c.mdp3_previous_epoch_messages += n64,
            ),
        };
        let latency = match h.sending_time() {
            Some(s) => Some(FeedLatency {
                msg_seq_num: h.msg_seq_num,
                sending_time_ns: s,
                capture_ns,
                capture_minus_sending_ns: signed_difference(capture_ns, s),
            }),
            None => {
                self.counters.mdp3_sending_time_absent += 1;
                None
            }
        };
        if matches!(class, Class::New | Class::Recovered) {
            if let Some(s) = h.sending_time() {
                self.epoch_max_sending_ns = self.epoch_max_sending_ns.max(s);
            }
            for (index, bytes) in p.messages().enumerate() {
                let message = self.fresh(bytes);
                on_fresh(FreshMessage {
                    msg_seq_num: h.msg_seq_num,
                    index,
                    bytes,
                    message,
                    recovered: class == Class::Recovered,
                });
            }
        }
        self.count_window(capture_ns, n64);
        Outcome {
            class,
            header: Some(h),
            messages: n,
            gap,
            new_epoch,
            latency,
        }
    }

    /// The packet's class by its MsgSeqNum and SendingTime (the module doc's rules), the
    /// numbering updated.
    fn classify(
        &mut self,
        h: PacketHeader,
        carries_reset: bool,
        capture_ns: u64,
    ) -> (Class, Option<Gap>, bool) {
        let seq = h.msg_seq_num;
        let sending = h.sending_time();
        let Some(next) = self.next else {
            self.start_epoch(h, false);
            return (Class::New, None, false);
        };
        let earlier_epoch =
            matches!((sending, self.epoch_start_sending_ns), (Some(s), Some(start)) if s < start);
        if earlier_epoch {
            return (Class::PreviousEpoch, None, false);
        }
        let later_than_epoch = sending.is_some_and(|s| s > self.epoch_max_sending_ns);
        if u64::from(seq) >= next {
            if carries_reset {
                self.start_epoch(h, true);
                return (Class::New, None, true);
            }
            let mut gap = None;
            if u64::from(seq) > next {
                let g = Gap {
                    // Below `seq` here, so within u32.
                    first: next as u32,
                    last: seq - 1,
                    capture_ns,
                };
                if self
                    .holes
                    .open(g.first, g.last, capture_ns, self.config.max_open_gaps)
                {
                    self.counters.mdp3_gaps_forgotten += 1;
                }
                self.counters.mdp3_gaps += 1;
                self.counters.mdp3_gap_packets += g.packets();
                gap = Some(g);
            }
            self.next = Some(u64::from(seq) + 1);
            return (Class::New, gap, false);
        }
        if self.holes.fill(seq) {
            return (Class::Recovered, None, false);
        }
        if (carries_reset || seq == 1) && later_than_epoch {
            self.start_epoch(h, true);
            return (Class::New, None, true);
        }
        (Class::Duplicate, None, false)
    }

    /// A new epoch of numbering starting at packet `h` (`counted`: not the first).
    fn start_epoch(&mut self, h: PacketHeader, counted: bool) {
        if counted {
            self.counters.mdp3_epochs += 1;
            self.counters.mdp3_gap_packets_abandoned += self.holes.missing();
        }
        self.holes = Holes::default();
        self.next = Some(u64::from(h.msg_seq_num) + 1);
        self.epoch_start_sending_ns = h.sending_time();
        self.epoch_max_sending_ns = h.sending_time().unwrap_or(0);
        self.instruments.clear();
        self.lru.clear();
    }

    /// Decodes and counts one fresh message, following its instruments' RptSeq.
    fn fresh<'a>(&mut self, bytes: &'a [u8]) -> Result<Message<'a>, DecodeError> {
        let read =
            messages::decode(bytes).and_then(|m| messages::rpt_seq_updates(bytes).map(|u| (m, u)));
        let c = &mut self.counters;
        let (decoded, updates) = match read {
            Ok(r) => r,
            Err(e) => {
                c.mdp3_undecodable_messages += 1;
                return Err(e);
            }
        };
        match decoded {
            Message::Book(_) => c.mdp3_book_messages += 1,
            Message::OrderBook(_) => c.mdp3_order_book_messages += 1,
            Message::TradeSummary(_) => c.mdp3_trade_summary_messages += 1,
            Message::Volume(_) => c.mdp3_volume_messages += 1,
            Message::SecurityStatus(_) => c.mdp3_security_status_messages += 1,
            Message::ChannelReset(_) => c.mdp3_channel_resets += 1,
            Message::Heartbeat => c.mdp3_heartbeats += 1,
            Message::InstrumentDefinition(_) => c.mdp3_instrument_definitions += 1,
            Message::SnapshotFullRefresh(_) => c.mdp3_snapshot_messages += 1,
            Message::Other { .. } => c.mdp3_other_messages += 1,
        }
        for (sid, rpt) in updates.into_iter().flatten() {
            self.rpt_seq(sid, rpt);
        }
        Ok(decoded)
    }

    /// One instrument update (the module doc's RptSeq rule).
    fn rpt_seq(&mut self, sid: i32, rpt: u32) {
        self.updates += 1;
        let touched = self.updates;
        let max_gaps = self.config.max_instrument_gaps;
        let c = &mut self.counters;
        c.mdp3_rptseq_updates += 1;
        let Some(i) = self.instruments.get_mut(&sid) else {
            if self.instruments.len() >= self.config.max_instruments {
                if let Some((_, old)) = self.lru.pop_first() {
                    self.instruments.remove(&old);
                    c.mdp3_rptseq_instruments_forgotten += 1;
                }
            }
            let i = Instrument {
                lowest: rpt,
                next: u64::from(rpt) + 1,
                holes: Holes::default(),
                had_gap: false,
                touched,
            };
            self.instruments.insert(sid, i);
            self.lru.insert(touched, sid);
            return;
        };
        self.lru.remove(&i.touched);
        i.touched = touched;
        self.lru.insert(touched, sid);
        let opened = if u64::from(rpt) >= i.next {
            // `i.next` is at most `rpt` here, so within u32.
            let run = (u64::from(rpt) > i.next).then(|| (i.next as u32, rpt - 1));
            i.next = u64::from(rpt) + 1;
            run
        } else if rpt < i.lowest {
            let run = (rpt + 1 < i.lowest).then(|| (rpt + 1, i.lowest - 1));
            i.lowest = rpt;
            run
        } else {
            if i.holes.fill(rpt) {
                c.mdp3_rptseq_recovered_updates += 1;
            } else {
                c.mdp3_rptseq_duplicate_updates += 1;
            }
            None
        };
        if let Some((first, last)) = opened {
            if i.holes.open(first, last, 0, max_gaps) {
                c.mdp3_rptseq_gaps_forgotten += 1;
            }
            c.mdp3_rptseq_gaps += 1;
            c.mdp3_rptseq_gap_updates += u64::from(last - first) + 1;
            if !i.had_gap {
                i.had_gap = true;
                c.mdp3_rptseq_gap_instruments += 1;
            }
        }
    }

    /// Counts `messages` in the aligned 1 ms window of `capture_ns` (module doc).
    fn count_window(&mut self, capture_ns: u64, messages: u64) {
        if messages == 0 {
            return;
        }
        let index = capture_ns / NS_PER_MS;
        match self.window_index {
            Some(current) if index <= current => self.window_messages += messages,
            _ => {
                self.window_index = Some(index);
                self.window_messages = messages;
            }
        }
        let peak = &mut self.counters.mdp3_peak_messages_per_ms;
        *peak = (*peak).max(self.window_messages);
    }
}

/// `later - earlier` as a signed count, saturated at the i64 range.
pub(crate) fn signed_difference(later: u64, earlier: u64) -> i64 {
    if later >= earlier {
        i64::try_from(later - earlier).unwrap_or(i64::MAX)
    } else {
        i64::try_from(earlier - later).map_or(i64::MIN, |d| -d)
    }
}
