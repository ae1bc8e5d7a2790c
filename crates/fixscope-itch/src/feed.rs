//! One feed's health: [`FeedTracker`] is fed every UDP payload of one feed (one multicast
//! group and port, or the unicast retransmissions to one listener) with its capture time,
//! in capture order, and says what each packet was.
//!
//! The rules, per MoldUDP64 session (each session numbers its messages from its own
//! start; the tracker keeps the next sequence number it expects of each):
//!
//! - The **first packet of a session** sets where its numbering starts: a capture begun
//!   mid-session, or a session begun mid-capture, is no gap. A session not seen before,
//!   after the first, is a **session change** (a new epoch of numbering), never a gap.
//! - A packet (or heartbeat, end of session: their sequence number is the next
//!   message's) numbered **past the next expected** sequence number opens a **gap**: the
//!   numbers in between are missing. The gap is kept (first, last, capture time of the
//!   packet that revealed it) while open, up to a bound; past it the oldest is forgotten
//!   and counted. The count of messages gaps skipped saturates at `u64::MAX` (a header
//!   numbered near 2^64 skips nearly that many).
//! - Each message is **new** (at or past the next expected number), **recovered** (below
//!   it, inside an open gap: the gap shrinks) or a **duplicate** (below it, not missing:
//!   seen before). A retransmission is byte-identical to the original, so the (session,
//!   sequence number) decides, never the bytes.
//! - A packet lands in exactly one class: **new** if any of its messages is new (an
//!   overlapping head counts as duplicate messages), else **recovered** if any is
//!   recovered, else **duplicate**; heartbeats, end of session, requests and undecodable
//!   datagrams have their own classes.
//! - **Microbursts**: every message of every decoded packet (duplicates too: the
//!   receiver had to handle them) is counted in aligned 1 ms windows of capture time
//!   (`capture_ns / 1_000_000`); the fullest window is the peak. A capture time earlier
//!   than the current window's (capture reordering) counts in the current window.

use std::collections::BTreeMap;

use crate::itch50::{self, ItchError, Message};
use crate::moldudp64::{self, Downstream, Kind, Packet, Session};
use fixscope_model::counters::ItchCounters;

const NS_PER_MS: u64 = 1_000_000;

/// Bounds on what a tracker keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeedConfig {
    /// Open gaps kept per session; past it the lowest is forgotten (a later copy of its
    /// messages counts as a duplicate).
    pub max_open_gaps: usize,
    /// Sessions whose numbering is kept; past it the least recently seen is forgotten.
    pub max_sessions: usize,
}

impl Default for FeedConfig {
    fn default() -> Self {
        FeedConfig {
            max_open_gaps: 1024,
            max_sessions: 8,
        }
    }
}

/// Sequence numbers a session is missing: `first..=last`, found at `capture_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gap {
    pub session: Session,
    pub first: u64,
    pub last: u64,
    pub capture_ns: u64,
}

impl Gap {
    pub fn messages(&self) -> u64 {
        self.last - self.first + 1
    }
}

/// The one class a datagram lands in (the module doc has the rules).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    New,
    Duplicate,
    Recovered,
    Heartbeat,
    EndOfSession,
    Request,
    Undecodable(moldudp64::DecodeError),
}

/// What one datagram was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub class: Class,
    pub new_messages: u32,
    pub duplicate_messages: u32,
    pub recovered_messages: u32,
    /// The gap this packet revealed.
    pub gap: Option<Gap>,
    /// Its session was not seen before (and another was).
    pub session_changed: bool,
}

impl Outcome {
    fn of(class: Class) -> Self {
        Outcome {
            class,
            new_messages: 0,
            duplicate_messages: 0,
            recovered_messages: 0,
            gap: None,
            session_changed: false,
        }
    }
}

/// A message seen for the first time on this feed (new or recovered), read as ITCH 5.0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FreshMessage<'a> {
    pub session: Session,
    pub sequence: u64,
    pub bytes: &'a [u8],
    pub message: Result<Message, ItchError>,
    /// It filled a gap (arrived late or retransmitted): its capture time is not when it
    /// was sent.
    pub recovered: bool,
}

#[derive(Debug)]
struct SessionState {
    session: Session,
    next: u64,
    /// Open gaps by first sequence number: (last, capture time).
    gaps: BTreeMap<u64, (u64, u64)>,
}

impl SessionState {
    /// Takes `n` out of the open gap holding it; `false` if none does.
    fn fill(&mut self, n: u64) -> bool {
        let Some((&first, &(last, ts))) = self.gaps.range(..=n).next_back() else {
            return false;
        };
        if last < n {
            return false;
        }
        self.gaps.remove(&first);
        if first < n {
            self.gaps.insert(first, (n - 1, ts));
        }
        if n < last {
            self.gaps.insert(n + 1, (last, ts));
        }
        true
    }
}

/// One feed's health (the module doc has the rules).
#[derive(Debug)]
pub struct FeedTracker {
    config: FeedConfig,
    counters: ItchCounters,
    /// Least recently seen first.
    sessions: Vec<SessionState>,
    window_index: Option<u64>,
    window_messages: u64,
    first_capture_ns: Option<u64>,
    last_capture_ns: u64,
}

impl Default for FeedTracker {
    fn default() -> Self {
        Self::new(FeedConfig::default())
    }
}

impl FeedTracker {
    pub fn new(config: FeedConfig) -> Self {
        FeedTracker {
            config: FeedConfig {
                max_open_gaps: config.max_open_gaps.max(1),
                max_sessions: config.max_sessions.max(1),
            },
            counters: ItchCounters::default(),
            sessions: Vec::new(),
            window_index: None,
            window_messages: 0,
            first_capture_ns: None,
            last_capture_ns: 0,
        }
    }

    /// What the feed counted (MoldUDP64 and the fresh messages' ITCH counts).
    pub fn counters(&self) -> &ItchCounters {
        &self.counters
    }

    /// The gaps still open, every session's, in session then sequence order.
    pub fn open_gaps(&self) -> impl Iterator<Item = Gap> + '_ {
        self.sessions.iter().flat_map(|s| {
            s.gaps.iter().map(|(&first, &(last, capture_ns))| Gap {
                session: s.session,
                first,
                last,
                capture_ns,
            })
        })
    }

    /// Messages inside the open gaps: never seen (yet).
    /// Saturates at `u64::MAX` (gaps of headers numbered near 2^64).
    pub fn missing_messages(&self) -> u64 {
        self.open_gaps()
            .fold(0u64, |n, g| n.saturating_add(g.messages()))
    }

    /// The next sequence number expected of `session`, if it was seen.
    pub fn next_sequence(&self, session: &Session) -> Option<u64> {
        self.sessions
            .iter()
            .find(|s| s.session == *session)
            .map(|s| s.next)
    }

    /// Messages per second over the capture times seen (first to last datagram); `None`
    /// before two distinct times.
    pub fn message_rate_per_s(&self) -> Option<f64> {
        let span = self.last_capture_ns.checked_sub(self.first_capture_ns?)?;
        (span > 0).then(|| self.counters.moldudp64_messages as f64 * 1e9 / span as f64)
    }

    /// Reads and tracks one datagram; `on_fresh` gets each message seen for the first
    /// time, in packet order, read as ITCH 5.0 (and counted in the ITCH counters).
    pub fn on_datagram<F>(&mut self, datagram: &[u8], capture_ns: u64, on_fresh: F) -> Outcome
    where
        F: FnMut(FreshMessage<'_>),
    {
        self.counters.moldudp64_packets += 1;
        if self.first_capture_ns.is_none() {
            self.first_capture_ns = Some(capture_ns);
        }
        self.last_capture_ns = self.last_capture_ns.max(capture_ns);
        match moldudp64::decode(datagram) {
            Err(e) => {
                self.counters.moldudp64_undecodable_packets += 1;
                Outcome::of(Class::Undecodable(e))
            }
            Ok(Packet::Request(_)) => {
                self.counters.moldudp64_requests += 1;
                Outcome::of(Class::Request)
            }
            Ok(Packet::Downstream(p)) => self.on_downstream(&p, capture_ns, on_fresh),
        }
    }

    /// The state of `session`, made most recently seen; `true` if it is a new session
    /// after another.
    fn session(&mut self, session: Session, first_sequence: u64) -> (&mut SessionState, bool) {
        let mut changed = false;
        match self.sessions.iter().position(|s| s.session == session) {
            Some(i) => {
                let s = self.sessions.remove(i);
                self.sessions.push(s);
            }
            None => {
                changed = !self.sessions.is_empty();
                if self.sessions.len() >= self.config.max_sessions {
                    self.sessions.remove(0);
                }
                self.sessions.push(SessionState {
                    session,
                    next: first_sequence,
                    gaps: BTreeMap::new(),
                });
            }
        }
        let last = self.sessions.len() - 1;
        (&mut self.sessions[last], changed)
    }

    fn on_downstream<F>(&mut self, p: &Downstream<'_>, capture_ns: u64, mut on_fresh: F) -> Outcome
    where
        F: FnMut(FreshMessage<'_>),
    {
        let h = p.header;
        let max_gaps = self.config.max_open_gaps;
        let (state, changed) = self.session(h.session, h.sequence);
        let mut c = ItchCounters {
            moldudp64_session_changes: u64::from(changed),
            ..ItchCounters::default()
        };
        let mut gap = None;
        if h.sequence > state.next {
            let g = Gap {
                session: h.session,
                first: state.next,
                last: h.sequence - 1,
                capture_ns,
            };
            state.gaps.insert(g.first, (g.last, g.capture_ns));
            if state.gaps.len() > max_gaps {
                state.gaps.pop_first();
                c.moldudp64_gaps_forgotten += 1;
            }
            c.moldudp64_gaps += 1;
            c.moldudp64_gap_messages += g.messages();
            state.next = h.sequence;
            gap = Some(g);
        }
        let mut out = Outcome::of(match h.kind() {
            Kind::Heartbeat => Class::Heartbeat,
            Kind::EndOfSession => Class::EndOfSession,
            Kind::Messages => Class::Duplicate,
        });
        out.gap = gap;
        out.session_changed = changed;
        for (sequence, bytes) in p.messages() {
            let recovered = if sequence >= state.next {
                out.new_messages += 1;
                false
            } else if state.fill(sequence) {
                out.recovered_messages += 1;
                true
            } else {
                out.duplicate_messages += 1;
                continue;
            };
            let message = itch50::decode(bytes);
            itch50::tally(&mut c, &message);
            on_fresh(FreshMessage {
                session: h.session,
                sequence,
                bytes,
                message,
                recovered,
            });
        }
        state.next = state.next.max(h.next_sequence());
        match out.class {
            Class::Heartbeat => c.moldudp64_heartbeats += 1,
            Class::EndOfSession => c.moldudp64_end_of_session += 1,
            _ if out.new_messages > 0 => {
                out.class = Class::New;
                c.moldudp64_new_packets += 1;
            }
            _ if out.recovered_messages > 0 => {
                out.class = Class::Recovered;
                c.moldudp64_recovered_packets += 1;
            }
            _ => c.moldudp64_duplicate_packets += 1,
        }
        // A header numbered near 2^64 skips nearly 2^64 messages: the sum saturates rather
        // than overflow (the other counts grow by at most a packet's 65,535 messages).
        c.moldudp64_gap_messages = c
            .moldudp64_gap_messages
            .min(u64::MAX - self.counters.moldudp64_gap_messages);
        let messages = u64::from(h.message_count());
        c.moldudp64_messages = messages;
        c.moldudp64_new_messages = u64::from(out.new_messages);
        c.moldudp64_recovered_messages = u64::from(out.recovered_messages);
        c.moldudp64_duplicate_messages = u64::from(out.duplicate_messages);
        self.counters.merge_from(&c);
        self.count_window(capture_ns, messages);
        out
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
        let peak = &mut self.counters.moldudp64_peak_messages_per_ms;
        *peak = (*peak).max(self.window_messages);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode;

    const S: &[u8] = b"SESSION001";

    /// `n` System Event messages as blocks.
    fn blocks(n: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| {
                encode::message(&Message::SystemEvent {
                    header: encode::itch_header_of(b'S', 0, i as u64),
                    event_code: b'O',
                })
            })
            .collect()
    }

    fn packet(session: &[u8], seq: u64, n: usize) -> Vec<u8> {
        let b = blocks(n);
        let refs: Vec<&[u8]> = b.iter().map(|m| m.as_slice()).collect();
        encode::downstream(session, seq, &refs)
    }

    fn feed(t: &mut FeedTracker, d: &[u8], ts: u64) -> (Outcome, Vec<u64>) {
        let mut fresh = Vec::new();
        let o = t.on_datagram(d, ts, |m| fresh.push(m.sequence));
        (o, fresh)
    }

    #[test]
    fn in_order_packets_are_new_and_a_skip_is_a_gap_a_late_copy_recovers() {
        let mut t = FeedTracker::default();
        let (o, fresh) = feed(&mut t, &packet(S, 1, 3), 0);
        assert_eq!((o.class, o.new_messages, o.gap), (Class::New, 3, None));
        assert_eq!(fresh, vec![1, 2, 3]);
        // 4..=6 lost.
        let (o, _) = feed(&mut t, &packet(S, 7, 2), 10);
        let gap = o.gap.expect("a gap");
        assert_eq!((gap.first, gap.last, gap.capture_ns), (4, 6, 10));
        assert_eq!(t.missing_messages(), 3);
        // 5 arrives late: the gap splits.
        let (o, fresh) = feed(&mut t, &packet(S, 5, 1), 20);
        assert_eq!((o.class, o.recovered_messages), (Class::Recovered, 1));
        assert_eq!(fresh, vec![5]);
        let open: Vec<_> = t.open_gaps().map(|g| (g.first, g.last)).collect();
        assert_eq!(open, vec![(4, 4), (6, 6)]);
        // A retransmission of 3..=6: 3 and 5 duplicates, 4 and 6 recovered.
        let (o, fresh) = feed(&mut t, &packet(S, 3, 4), 30);
        assert_eq!(o.class, Class::Recovered);
        assert_eq!((o.recovered_messages, o.duplicate_messages), (2, 2));
        assert_eq!(fresh, vec![4, 6]);
        assert_eq!(t.missing_messages(), 0);
        // A byte-identical copy of the first: a duplicate.
        let (o, fresh) = feed(&mut t, &packet(S, 1, 3), 40);
        assert_eq!((o.class, o.duplicate_messages), (Class::Duplicate, 3));
        assert!(fresh.is_empty());
        // Overlapping the frontier: 8 a duplicate, 9 and 10 new.
        let (o, fresh) = feed(&mut t, &packet(S, 8, 3), 50);
        assert_eq!(
            (o.class, o.new_messages, o.duplicate_messages),
            (Class::New, 2, 1)
        );
        assert_eq!(fresh, vec![9, 10]);
        let c = t.counters();
        assert_eq!(c.moldudp64_packets, 6);
        assert_eq!(
            (
                c.moldudp64_new_packets,
                c.moldudp64_recovered_packets,
                c.moldudp64_duplicate_packets
            ),
            (3, 2, 1)
        );
        assert_eq!((c.moldudp64_gaps, c.moldudp64_gap_messages), (1, 3));
        assert_eq!(c.moldudp64_messages, 3 + 2 + 1 + 4 + 3 + 3);
        assert_eq!(
            c.moldudp64_new_messages
                + c.moldudp64_recovered_messages
                + c.moldudp64_duplicate_messages,
            c.moldudp64_messages
        );
        assert_eq!(
            c.itch_messages,
            c.moldudp64_new_messages + c.moldudp64_recovered_messages
        );
        assert_eq!(t.next_sequence(&Session::new(S)), Some(11));
    }

    #[test]
    fn heartbeats_reveal_gaps_a_new_session_is_an_epoch_not_a_gap() {
        let mut t = FeedTracker::default();
        // Joined mid-session: no gap before 1000.
        assert_eq!(feed(&mut t, &packet(S, 1000, 2), 0).0.gap, None);
        let (o, _) = feed(&mut t, &encode::heartbeat(S, 1002), 1);
        assert_eq!((o.class, o.gap), (Class::Heartbeat, None));
        // A heartbeat numbered 1005: 1002..=1004 were sent and lost.
        let (o, _) = feed(&mut t, &encode::heartbeat(S, 1005), 2);
        assert_eq!(o.gap.map(|g| (g.first, g.last)), Some((1002, 1004)));
        let (o, _) = feed(&mut t, &encode::end_of_session(S, 1005), 3);
        assert_eq!((o.class, o.gap), (Class::EndOfSession, None));
        let (o, fresh) = feed(&mut t, &packet(b"SESSION002", 1, 1), 4);
        assert_eq!(
            (o.class, o.session_changed, o.gap),
            (Class::New, true, None)
        );
        assert_eq!(fresh, vec![1]);
        let (o, _) = feed(&mut t, &encode::request(b"SESSION002", 1, 5), 5);
        assert_eq!(o.class, Class::Request);
        let (o, _) = feed(&mut t, b"not mold", 6);
        assert!(matches!(o.class, Class::Undecodable(_)));
        let c = t.counters();
        assert_eq!(
            (
                c.moldudp64_heartbeats,
                c.moldudp64_end_of_session,
                c.moldudp64_session_changes,
                c.moldudp64_requests,
                c.moldudp64_undecodable_packets,
                c.moldudp64_gaps
            ),
            (2, 1, 1, 1, 1, 1)
        );
    }

    #[test]
    fn the_peak_is_the_fullest_aligned_millisecond() {
        let mut t = FeedTracker::default();
        feed(&mut t, &packet(S, 1, 5), 999_999);
        // A new window: 5 then 4 more.
        feed(&mut t, &packet(S, 6, 5), 1_000_000);
        feed(&mut t, &packet(S, 11, 4), 1_999_999);
        // Duplicates count: the receiver handled them.
        feed(&mut t, &packet(S, 11, 4), 1_500_000);
        feed(&mut t, &packet(S, 15, 12), 2_000_000);
        assert_eq!(t.counters().moldudp64_peak_messages_per_ms, 13);
        let rate = t.message_rate_per_s().expect("a rate");
        assert!((rate - 30.0 * 1e9 / 1_000_001.0).abs() < 1e-6, "{rate}");
    }

    #[test]
    fn gaps_past_the_bound_are_forgotten_and_counted() {
        let mut t = FeedTracker::new(FeedConfig {
            max_open_gaps: 2,
            max_sessions: 1,
        });
        for (i, seq) in [1u64, 3, 5, 7].into_iter().enumerate() {
            feed(&mut t, &packet(S, seq, 1), i as u64);
        }
        let open: Vec<_> = t.open_gaps().map(|g| g.first).collect();
        assert_eq!(open, vec![4, 6]);
        assert_eq!(t.counters().moldudp64_gaps_forgotten, 1);
        // The forgotten gap's message now reads as a duplicate.
        assert_eq!(feed(&mut t, &packet(S, 2, 1), 9).0.class, Class::Duplicate);
        // One session kept: another forgets the first.
        feed(&mut t, &packet(b"OTHER", 1, 1), 10);
        assert_eq!(t.next_sequence(&Session::new(S)), None);
    }

    #[test]
    fn sequence_numbers_jumping_near_2_pow_64_are_gaps_whose_counts_saturate() {
        // Two sessions, each jumping from its start to the top of the numbering: the
        // messages those gaps skip add up past u64::MAX (a fuzzer's find: a panic in the
        // counters' sum).
        let mut t = FeedTracker::default();
        let top = u64::MAX - 2;
        for (i, s) in [&b"SESSION001"[..], b"SESSION002"].into_iter().enumerate() {
            feed(&mut t, &packet(s, 1, 1), 4 * i as u64);
            let (o, fresh) = feed(&mut t, &packet(s, top, 2), 4 * i as u64 + 1);
            assert_eq!((o.class, fresh), (Class::New, vec![top, top + 1]));
            assert_eq!(o.gap.map(|g| g.messages()), Some(top - 2));
        }
        let c = t.counters();
        assert_eq!((c.moldudp64_gaps, c.moldudp64_gap_messages), (2, u64::MAX));
        assert_eq!(t.missing_messages(), u64::MAX);
        // Numbered past 2^64: no packet, counted (the sequence numbers would overflow).
        let (o, _) = feed(&mut t, &packet(S, u64::MAX, 1), 9);
        assert!(matches!(o.class, Class::Undecodable(_)));
        assert_eq!(t.counters().moldudp64_undecodable_packets, 1);
    }
}
