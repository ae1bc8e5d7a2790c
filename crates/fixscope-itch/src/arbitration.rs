//! A/B arbitration of a redundant feed pair: Nasdaq sends every MoldUDP64 packet twice,
//! byte-identical, on two multicast feeds (A and B) over separate paths; a receiver takes
//! whichever copy comes first. [`AbArbiter`] is fed each decoded downstream packet of
//! either feed with its capture time, in capture order, and says for every packet seen on
//! both which came first and by how much, and which packets only one feed delivered.
//!
//! The rules, per MoldUDP64 session:
//!
//! - A packet is named by (session, sequence number of its first message). The two feeds
//!   carry the same packets, so the copies of a packet share that name; a pair whose
//!   packetisation differed would show as two single-feed packets.
//! - The first copy waits; the second, from the other feed, makes an [`AbEvent::Both`]
//!   with both capture times (`b_minus_a_ns` > 0: A was first). A further copy from
//!   either feed (a retransmission, a duplicated datagram) is counted
//!   (`ab_same_feed_duplicates`) and arbitrated no more.
//! - **Window.** Each feed's highest next sequence number is kept (heartbeats count: a
//!   heartbeat numbered N says the feed has sent everything below N). A waiting packet
//!   whose last message is more than `window` messages below *both* feeds' highest is
//!   decided: still alone, it is an [`AbEvent::Only`] of its feed — the other feed went
//!   past it without delivering it. The window is the slack for one feed lagging or
//!   reordering behind the other; what is below it is forgotten, and a copy arriving
//!   after that is counted late (`ab_late_packets`), not arbitrated.
//! - **Bounded memory.** At most `max_pending` packets are kept per session; past it the
//!   lowest is decided as if the window had passed it (a feed that went silent would
//!   otherwise keep everything). [`AbArbiter::flush`], at the end of a capture, decides
//!   everything still waiting.

use std::collections::BTreeMap;

use crate::moldudp64::{Header, Session};
use fixscope_model::counters::ItchCounters;

/// Which feed of the pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Feed {
    A,
    B,
}

impl Feed {
    fn index(self) -> usize {
        match self {
            Feed::A => 0,
            Feed::B => 1,
        }
    }
}

/// Bounds of an arbiter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArbiterConfig {
    /// Messages both feeds must be past a waiting packet before it is decided.
    pub window: u64,
    /// Packets kept per session.
    pub max_pending: usize,
    /// Sessions kept; past it the least recently seen is flushed.
    pub max_sessions: usize,
}

impl Default for ArbiterConfig {
    fn default() -> Self {
        ArbiterConfig {
            window: 10_000,
            max_pending: 100_000,
            max_sessions: 4,
        }
    }
}

/// What the arbiter decided of a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbEvent {
    /// Seen on both feeds: `b_minus_a_ns` is B's capture time minus A's (positive: A was
    /// first), the figure for a histogram of the feeds' difference.
    Both {
        session: Session,
        sequence: u64,
        count: u16,
        a_ns: u64,
        b_ns: u64,
        b_minus_a_ns: i64,
    },
    /// Seen on `feed` only: the other feed lost it.
    Only {
        feed: Feed,
        session: Session,
        sequence: u64,
        count: u16,
        capture_ns: u64,
    },
}

impl AbEvent {
    /// The feed whose copy came first (`None`: same time, or a single-feed packet).
    pub fn first(&self) -> Option<Feed> {
        match *self {
            AbEvent::Both { b_minus_a_ns, .. } if b_minus_a_ns > 0 => Some(Feed::A),
            AbEvent::Both { b_minus_a_ns, .. } if b_minus_a_ns < 0 => Some(Feed::B),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Seen {
    Waiting { feed: Feed, capture_ns: u64 },
    Paired,
}

#[derive(Debug)]
struct SessionArb {
    session: Session,
    /// Each feed's highest next sequence number (0: nothing yet).
    high: [u64; 2],
    /// By first sequence number: (message count, state).
    packets: BTreeMap<u64, (u16, Seen)>,
    /// Below it everything was decided and forgotten.
    floor: u64,
}

/// Arbitrates one A/B pair (the module doc has the rule).
#[derive(Debug)]
pub struct AbArbiter {
    config: ArbiterConfig,
    counters: ItchCounters,
    /// Least recently seen first.
    sessions: Vec<SessionArb>,
}

impl Default for AbArbiter {
    fn default() -> Self {
        Self::new(ArbiterConfig::default())
    }
}

impl AbArbiter {
    pub fn new(config: ArbiterConfig) -> Self {
        AbArbiter {
            config: ArbiterConfig {
                max_pending: config.max_pending.max(1),
                max_sessions: config.max_sessions.max(1),
                ..config
            },
            counters: ItchCounters::default(),
            sessions: Vec::new(),
        }
    }

    /// The `ab_` counters (the others stay 0).
    pub fn counters(&self) -> &ItchCounters {
        &self.counters
    }

    /// Packets waiting for their other copy.
    pub fn pending(&self) -> usize {
        self.sessions
            .iter()
            .map(|s| {
                s.packets
                    .values()
                    .filter(|(_, seen)| matches!(seen, Seen::Waiting { .. }))
                    .count()
            })
            .sum()
    }

    /// A decoded downstream packet's header, from `feed`.
    pub fn on_header<F>(&mut self, feed: Feed, header: &Header, capture_ns: u64, on_event: F)
    where
        F: FnMut(AbEvent),
    {
        self.on_packet(
            feed,
            header.session,
            header.sequence,
            header.message_count(),
            capture_ns,
            on_event,
        );
    }

    /// A packet of `count` messages from `sequence` (0: a heartbeat or end of session,
    /// numbered `sequence` next), captured on `feed` at `capture_ns`.
    pub fn on_packet<F>(
        &mut self,
        feed: Feed,
        session: Session,
        sequence: u64,
        count: u16,
        capture_ns: u64,
        mut on_event: F,
    ) where
        F: FnMut(AbEvent),
    {
        let i = self.session_index(session, &mut on_event);
        let config = self.config;
        let s = &mut self.sessions[i];
        let c = &mut self.counters;
        let next = sequence.saturating_add(u64::from(count));
        s.high[feed.index()] = s.high[feed.index()].max(next);
        if count > 0 {
            if sequence < s.floor {
                c.ab_late_packets += 1;
            } else {
                match s.packets.get_mut(&sequence) {
                    None => {
                        s.packets
                            .insert(sequence, (count, Seen::Waiting { feed, capture_ns }));
                    }
                    Some((n, seen)) => match *seen {
                        Seen::Paired => c.ab_same_feed_duplicates += 1,
                        Seen::Waiting { feed: f, .. } if f == feed => {
                            c.ab_same_feed_duplicates += 1
                        }
                        Seen::Waiting {
                            capture_ns: other_ns,
                            ..
                        } => {
                            let (a_ns, b_ns) = match feed {
                                Feed::A => (capture_ns, other_ns),
                                Feed::B => (other_ns, capture_ns),
                            };
                            let event = AbEvent::Both {
                                session,
                                sequence,
                                count: *n,
                                a_ns,
                                b_ns,
                                b_minus_a_ns: signed_difference(b_ns, a_ns),
                            };
                            match event.first() {
                                Some(Feed::A) => c.ab_first_a += 1,
                                Some(Feed::B) => c.ab_first_b += 1,
                                None => c.ab_same_time += 1,
                            }
                            *seen = Seen::Paired;
                            on_event(event);
                        }
                    },
                }
            }
        }
        let passed = s.high[0].min(s.high[1]).saturating_sub(config.window);
        while let Some((&first, &(n, _))) = s.packets.first_key_value() {
            let decided = first.saturating_add(u64::from(n)) <= passed
                || s.packets.len() > config.max_pending;
            if !decided {
                break;
            }
            decide_first(s, c, &mut on_event);
        }
    }

    /// Decides every waiting packet (the end of a capture): each is an `Only`.
    pub fn flush<F>(&mut self, mut on_event: F)
    where
        F: FnMut(AbEvent),
    {
        for s in &mut self.sessions {
            while !s.packets.is_empty() {
                decide_first(s, &mut self.counters, &mut on_event);
            }
        }
    }

    fn session_index<F>(&mut self, session: Session, on_event: &mut F) -> usize
    where
        F: FnMut(AbEvent),
    {
        if let Some(i) = self.sessions.iter().position(|s| s.session == session) {
            let s = self.sessions.remove(i);
            self.sessions.push(s);
        } else {
            if self.sessions.len() >= self.config.max_sessions {
                let mut old = self.sessions.remove(0);
                while !old.packets.is_empty() {
                    decide_first(&mut old, &mut self.counters, on_event);
                }
            }
            self.sessions.push(SessionArb {
                session,
                high: [0, 0],
                packets: BTreeMap::new(),
                floor: 0,
            });
        }
        self.sessions.len() - 1
    }
}

/// Forgets the session's lowest packet: alone, it is an `Only` of its feed.
fn decide_first<F>(s: &mut SessionArb, c: &mut ItchCounters, on_event: &mut F)
where
    F: FnMut(AbEvent),
{
    let Some((sequence, (count, seen))) = s.packets.pop_first() else {
        return;
    };
    s.floor = s.floor.max(sequence.saturating_add(u64::from(count)));
    if let Seen::Waiting { feed, capture_ns } = seen {
        match feed {
            Feed::A => {
                c.ab_only_a += 1;
                c.ab_only_a_messages += u64::from(count);
            }
            Feed::B => {
                c.ab_only_b += 1;
                c.ab_only_b_messages += u64::from(count);
            }
        }
        on_event(AbEvent::Only {
            feed,
            session: s.session,
            sequence,
            count,
            capture_ns,
        });
    }
}

/// `later - earlier` as a signed count, saturated at the i64 range.
fn signed_difference(later: u64, earlier: u64) -> i64 {
    if later >= earlier {
        i64::try_from(later - earlier).unwrap_or(i64::MAX)
    } else {
        i64::try_from(earlier - later).map_or(i64::MIN, |d| -d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s() -> Session {
        Session::new(b"SESSION001")
    }

    fn run(arb: &mut AbArbiter, packets: &[(Feed, u64, u16, u64)]) -> Vec<AbEvent> {
        let mut events = Vec::new();
        for &(feed, seq, count, ts) in packets {
            arb.on_packet(feed, s(), seq, count, ts, |e| events.push(e));
        }
        events
    }

    #[test]
    fn each_pair_says_which_feed_was_first_and_by_how_much() {
        let mut arb = AbArbiter::default();
        let events = run(
            &mut arb,
            &[
                (Feed::A, 1, 3, 100),
                (Feed::B, 1, 3, 130),
                (Feed::B, 4, 2, 200),
                (Feed::A, 4, 2, 250),
                (Feed::A, 6, 1, 300),
                (Feed::B, 6, 1, 300),
                // A retransmitted copy on A: not arbitrated again.
                (Feed::A, 1, 3, 400),
            ],
        );
        let diffs: Vec<_> = events
            .iter()
            .map(|e| match e {
                AbEvent::Both { b_minus_a_ns, .. } => (*b_minus_a_ns, e.first()),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            diffs,
            vec![(30, Some(Feed::A)), (-50, Some(Feed::B)), (0, None)]
        );
        let c = arb.counters();
        assert_eq!(
            (
                c.ab_first_a,
                c.ab_first_b,
                c.ab_same_time,
                c.ab_same_feed_duplicates
            ),
            (1, 1, 1, 1)
        );
        assert_eq!(arb.pending(), 0);
    }

    #[test]
    fn a_packet_the_other_feed_passed_by_the_window_is_single_feed() {
        let mut arb = AbArbiter::new(ArbiterConfig {
            window: 10,
            ..Default::default()
        });
        // B loses 5..=6; A loses 20.
        let mut packets = vec![(Feed::A, 1, 4, 0), (Feed::B, 1, 4, 1), (Feed::A, 5, 2, 2)];
        for seq in 7..40u64 {
            if seq != 20 {
                packets.push((Feed::A, seq, 1, seq * 10));
            }
            packets.push((Feed::B, seq, 1, seq * 10 + 1));
        }
        let events = run(&mut arb, &packets);
        let only: Vec<_> = events
            .iter()
            .filter_map(|e| match *e {
                AbEvent::Only {
                    feed,
                    sequence,
                    count,
                    ..
                } => Some((feed, sequence, count)),
                _ => None,
            })
            .collect();
        assert_eq!(only, vec![(Feed::A, 5, 2), (Feed::B, 20, 1)]);
        let c = arb.counters();
        assert_eq!((c.ab_only_a, c.ab_only_a_messages), (1, 2));
        assert_eq!((c.ab_only_b, c.ab_only_b_messages), (1, 1));
        assert_eq!(c.ab_first_a, 33);
        // Both feeds are at 40: everything below 30 is decided and forgotten.
        let late = run(&mut arb, &[(Feed::B, 5, 2, 999)]);
        assert!(late.is_empty());
        assert_eq!(arb.counters().ab_late_packets, 1);
        // What waits is decided at the end.
        let flushed = run(&mut arb, &[(Feed::A, 40, 1, 1000)]);
        assert!(flushed.is_empty());
        let mut rest = Vec::new();
        arb.flush(|e| rest.push(e));
        assert_eq!(rest.len(), 1);
        assert_eq!(arb.pending(), 0);
    }

    #[test]
    fn a_silent_feed_is_bounded_by_max_pending_and_heartbeats_move_the_window() {
        let mut arb = AbArbiter::new(ArbiterConfig {
            window: 0,
            max_pending: 3,
            max_sessions: 1,
        });
        let packets: Vec<_> = (1..=5).map(|q| (Feed::A, q, 1, q)).collect();
        let events = run(&mut arb, &packets);
        assert_eq!(events.len(), 2, "{events:?}");
        assert_eq!(arb.pending(), 3);
        // B's heartbeat numbered 6: it sent everything below, and A's 3..=5 alone.
        let events = run(&mut arb, &[(Feed::B, 6, 0, 10)]);
        assert_eq!(events.len(), 3);
        assert_eq!(arb.counters().ab_only_a, 5);
        // Another session flushes the first (one session kept).
        run(&mut arb, &[(Feed::A, 7, 1, 11)]);
        let mut other = Vec::new();
        arb.on_packet(Feed::A, Session::new(b"NEXT"), 1, 1, 12, |e| other.push(e));
        assert_eq!(other.len(), 1);
    }

    #[test]
    fn the_difference_saturates() {
        assert_eq!(signed_difference(u64::MAX, 0), i64::MAX);
        assert_eq!(signed_difference(0, u64::MAX), i64::MIN);
        assert_eq!(signed_difference(5, 7), -2);
    }
}
