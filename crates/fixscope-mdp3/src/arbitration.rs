//! A/B arbitration of one incremental channel: CME sends each incremental packet on two
//! feeds, "Any given packet sent on both feeds can arrive first on either feed", and the
//! rule is "Process packets by incremental sequence number. Discard a packet if the
//! sequence number has already been processed" (CME "MDP 3.0 - Incremental Feed
//! Arbitration"). [`AbArbiter`] is fed the packet headers of both feeds of one channel in
//! capture order and pairs the copies by MsgSeqNum:
//!
//! - The first copy waits; the second, from the other feed, makes an [`AbEvent::Both`]
//!   with both capture times (`b_minus_a_ns` > 0: A was first), the figure for a
//!   histogram of the feeds' difference. A further copy from either feed is counted
//!   (`mdp3_ab_same_feed_duplicates`) and arbitrated no more.
//! - **Window.** Each feed's highest MsgSeqNum + 1 is kept. A waiting packet more than
//!   `window` packets below *both* feeds' highest is decided: still alone, it is an
//!   [`AbEvent::Only`] of its feed — the other feed went past it without delivering it.
//!   The window is the slack for one feed lagging or reordering behind the other; a copy
//!   arriving after its number was decided is counted late (`mdp3_ab_late_packets`).
//! - **Epochs.** A packet numbered below what either feed reached, with a SendingTime
//!   later than every packet's seen, is a new epoch of the channel's numbering (a weekly
//!   restart, a channel reset that restarts MsgSeqNum): everything waiting is decided,
//!   the numbering starts again with it (`mdp3_ab_epochs`). A copy of an old packet
//!   carries its old SendingTime and fails the test.
//! - **Bounded memory.** At most `max_pending` packets are kept; past it the lowest is
//!   decided as if the window had passed it (a feed that went silent would otherwise keep
//!   everything). [`AbArbiter::flush`], at the end of a capture, decides what waits.

use std::collections::BTreeMap;

use crate::feed::signed_difference;
use crate::packet::PacketHeader;
use fixscope_model::counters::Mdp3Counters;

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
    /// Packets both feeds must be past a waiting packet before it is decided.
    pub window: u32,
    /// Packets kept.
    pub max_pending: usize,
}

impl Default for ArbiterConfig {
    fn default() -> Self {
        ArbiterConfig {
            window: 10_000,
            max_pending: 100_000,
        }
    }
}

/// What the arbiter decided of a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbEvent {
    /// Seen on both feeds: `b_minus_a_ns` is B's capture time minus A's (positive: A was
    /// first).
    Both {
        msg_seq_num: u32,
        a_ns: u64,
        b_ns: u64,
        b_minus_a_ns: i64,
    },
    /// Seen on `feed` only: the other feed lost it.
    Only {
        feed: Feed,
        msg_seq_num: u32,
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

/// Arbitrates one channel's A/B pair (the module doc has the rule).
#[derive(Debug)]
pub struct AbArbiter {
    config: ArbiterConfig,
    counters: Mdp3Counters,
    /// Each feed's highest MsgSeqNum + 1 (0: nothing yet).
    high: [u64; 2],
    packets: BTreeMap<u32, Seen>,
    /// Below it everything was decided and forgotten.
    floor: u64,
    max_sending_ns: u64,
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
                ..config
            },
            counters: Mdp3Counters::default(),
            high: [0, 0],
            packets: BTreeMap::new(),
            floor: 0,
            max_sending_ns: 0,
        }
    }

    /// The `mdp3_ab_` counters (the others stay 0).
    pub fn counters(&self) -> &Mdp3Counters {
        &self.counters
    }

    /// Packets waiting for their other copy.
    pub fn pending(&self) -> usize {
        self.packets
            .values()
            .filter(|s| matches!(s, Seen::Waiting { .. }))
            .count()
    }

    /// A decoded packet's header, from `feed`.
    pub fn on_header<F>(&mut self, feed: Feed, header: &PacketHeader, capture_ns: u64, on_event: F)
    where
        F: FnMut(AbEvent),
    {
        self.on_packet(
            feed,
            header.msg_seq_num,
            header.sending_time(),
            capture_ns,
            on_event,
        );
    }

    /// Packet `msg_seq_num` (sent at `sending_time_ns`, if known), captured on `feed` at
    /// `capture_ns`.
    pub fn on_packet<F>(
        &mut self,
        feed: Feed,
        msg_seq_num: u32,
        sending_time_ns: Option<u64>,
        capture_ns: u64,
        mut on_event: F,
    ) where
        F: FnMut(AbEvent),
    {
        let seq = u64::from(msg_seq_num);
        let reached = self.high[0].max(self.high[1]);
        if let Some(s) = sending_time_ns {
            if seq < reached && s > self.max_sending_ns {
                self.flush(&mut on_event);
                self.high = [0, 0];
                self.floor = 0;
                self.counters.mdp3_ab_epochs += 1;
            }
            self.max_sending_ns = self.max_sending_ns.max(s);
        }
        let c = &mut self.counters;
        self.high[feed.index()] = self.high[feed.index()].max(seq + 1);
        if seq < self.floor {
            c.mdp3_ab_late_packets += 1;
        } else {
            match self.packets.get_mut(&msg_seq_num) {
                None => {
                    self.packets
                        .insert(msg_seq_num, Seen::Waiting { feed, capture_ns });
                }
                Some(seen) => match *seen {
                    Seen::Paired => c.mdp3_ab_same_feed_duplicates += 1,
                    Seen::Waiting { feed: f, .. } if f == feed => {
                        c.mdp3_ab_same_feed_duplicates += 1
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
                            msg_seq_num,
                            a_ns,
                            b_ns,
                            b_minus_a_ns: signed_difference(b_ns, a_ns),
                        };
                        match event.first() {
                            Some(Feed::A) => c.mdp3_ab_first_a += 1,
                            Some(Feed::B) => c.mdp3_ab_first_b += 1,
                            None => c.mdp3_ab_same_time += 1,
                        }
                        *seen = Seen::Paired;
                        on_event(event);
                    }
                },
            }
        }
        let passed = self.high[0]
            .min(self.high[1])
            .saturating_sub(u64::from(self.config.window));
        while let Some((&first, _)) = self.packets.first_key_value() {
            let decided = u64::from(first) < passed || self.packets.len() > self.config.max_pending;
            if !decided {
                break;
            }
            self.decide_first(&mut on_event);
        }
    }

    /// Decides every waiting packet (the end of a capture): each is an `Only`.
    pub fn flush<F>(&mut self, mut on_event: F)
    where
        F: FnMut(AbEvent),
    {
        while !self.packets.is_empty() {
            self.decide_first(&mut on_event);
        }
    }

    /// Forgets the lowest packet: alone, it is an `Only` of its feed.
    fn decide_first<F>(&mut self, on_event: &mut F)
    where
        F: FnMut(AbEvent),
    {
        let Some((msg_seq_num, seen)) = self.packets.pop_first() else {
            return;
        };
        self.floor = self.floor.max(u64::from(msg_seq_num) + 1);
        if let Seen::Waiting { feed, capture_ns } = seen {
            match feed {
                Feed::A => self.counters.mdp3_ab_only_a += 1,
                Feed::B => self.counters.mdp3_ab_only_b += 1,
            }
            on_event(AbEvent::Only {
                feed,
                msg_seq_num,
                capture_ns,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(arb: &mut AbArbiter, packets: &[(Feed, u32, u64, u64)]) -> Vec<AbEvent> {
        let mut events = Vec::new();
        for &(feed, seq, sent, ts) in packets {
            arb.on_packet(feed, seq, Some(sent), ts, |e| events.push(e));
        }
        events
    }

    #[test]
    fn each_pair_says_which_feed_was_first_and_by_how_much() {
        let mut arb = AbArbiter::default();
        let events = run(
            &mut arb,
            &[
                (Feed::A, 1, 10, 100),
                (Feed::B, 1, 10, 130),
                (Feed::B, 2, 20, 200),
                (Feed::A, 2, 20, 250),
                (Feed::A, 3, 30, 300),
                (Feed::B, 3, 30, 300),
                // A repeat on A: not arbitrated again.
                (Feed::A, 1, 10, 400),
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
                c.mdp3_ab_first_a,
                c.mdp3_ab_first_b,
                c.mdp3_ab_same_time,
                c.mdp3_ab_same_feed_duplicates
            ),
            (1, 1, 1, 1)
        );
        assert_eq!(arb.pending(), 0);
    }

    #[test]
    fn a_packet_the_other_feed_passed_by_the_window_is_single_feed() {
        let mut arb = AbArbiter::new(ArbiterConfig {
            window: 10,
            max_pending: 1000,
        });
        // B loses 5; A loses 20.
        let mut packets = Vec::new();
        for seq in 1..40u32 {
            let t = u64::from(seq) * 10;
            if seq != 20 {
                packets.push((Feed::A, seq, t, t));
            }
            if seq != 5 {
                packets.push((Feed::B, seq, t, t + 1));
            }
        }
        let events = run(&mut arb, &packets);
        let only: Vec<_> = events
            .iter()
            .filter_map(|e| match *e {
                AbEvent::Only {
                    feed, msg_seq_num, ..
                } => Some((feed, msg_seq_num)),
                _ => None,
            })
            .collect();
        assert_eq!(only, vec![(Feed::A, 5), (Feed::B, 20)]);
        assert_eq!(arb.counters().mdp3_ab_first_a, 37);
        // Both feeds are at 40: everything below 30 is decided and forgotten.
        assert!(run(&mut arb, &[(Feed::B, 5, 50, 999)]).is_empty());
        assert_eq!(arb.counters().mdp3_ab_late_packets, 1);
        let mut rest = Vec::new();
        arb.flush(|e| rest.push(e));
        assert!(rest.is_empty(), "paired packets decide silently: {rest:?}");
        assert_eq!(arb.pending(), 0);
    }

    #[test]
    fn a_restart_with_a_later_sending_time_is_a_new_epoch_and_an_old_copy_is_not() {
        let mut arb = AbArbiter::new(ArbiterConfig {
            window: 100,
            max_pending: 1000,
        });
        let mut events = run(
            &mut arb,
            &[
                (Feed::A, 7, 70, 1),
                (Feed::B, 7, 70, 2),
                (Feed::A, 8, 80, 3),
            ],
        );
        // A's copy of 7 again (old SendingTime): a duplicate, not an epoch.
        events.extend(run(&mut arb, &[(Feed::A, 7, 70, 4)]));
        assert_eq!(arb.counters().mdp3_ab_epochs, 0);
        // The weekly restart: 1 with a later SendingTime; 8 waited alone on A.
        events.extend(run(
            &mut arb,
            &[(Feed::B, 1, 1000, 5), (Feed::A, 1, 1000, 6)],
        ));
        assert_eq!(arb.counters().mdp3_ab_epochs, 1);
        assert!(events.contains(&AbEvent::Only {
            feed: Feed::A,
            msg_seq_num: 8,
            capture_ns: 3
        }));
        assert!(matches!(
            events.last(),
            Some(AbEvent::Both {
                msg_seq_num: 1,
                b_minus_a_ns: -1,
                ..
            })
        ));
    }

    #[test]
    fn a_silent_feed_is_bounded_by_max_pending() {
        let mut arb = AbArbiter::new(ArbiterConfig {
            window: 0,
            max_pending: 3,
        });
        let packets: Vec<_> = (1..=5)
            .map(|q| (Feed::A, q, u64::from(q), u64::from(q)))
            .collect();
        let events = run(&mut arb, &packets);
        assert_eq!(events.len(), 2, "{events:?}");
        assert_eq!(arb.pending(), 3);
    }
}
