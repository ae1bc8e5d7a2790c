//! An ITCH 5.0 over MoldUDP64 feed or A/B pair (`fixscope-itch` has the rules): each
//! leg's `FeedTracker`, the pair's `AbArbiter`, and the leads' distributions.

use fixscope_itch::moldudp64::{self, Packet};
use fixscope_itch::{AbArbiter, AbEvent, Feed, FeedTracker, ItchCounters};

use super::delay::DelayCollector;
use super::leads::Leads;
use super::spec::MdSpec;
use super::Tick;
use crate::report::feeds::{Arbitration, FeedLeg, FeedSummary, GapSummary};
use crate::source::{counters_of, Counter};

/// Open gaps a summary lists per leg, at most (every one is counted).
const GAPS_LISTED: usize = 20;

pub(super) struct ItchFeed {
    legs: Vec<FeedTracker>,
    /// The MoldUDP64 sessions seen, in order: a packet's epoch is its session's index.
    sessions: Vec<moldudp64::Session>,
    /// Each leg's delay against its first message's timestamp.
    delays: Vec<DelayCollector>,
    /// An A/B pair's arbiter and how much earlier A's (B's) copies were.
    pair: Option<Pair>,
}

struct Pair {
    arbiter: AbArbiter,
    leads: Leads,
}

impl ItchFeed {
    pub(super) fn new(legs: usize) -> Self {
        ItchFeed {
            legs: (0..legs).map(|_| FeedTracker::default()).collect(),
            sessions: Vec::new(),
            delays: (0..legs).map(|_| DelayCollector::default()).collect(),
            pair: (legs == 2).then(|| Pair {
                arbiter: AbArbiter::default(),
                leads: Leads::new(),
            }),
        }
    }

    /// One datagram of leg `leg`; a packet new on that leg (none of its messages seen
    /// there before, none recovered late) is returned as a tick.
    pub(super) fn on_datagram(&mut self, leg: usize, ts_ns: u64, datagram: &[u8]) -> Option<Tick> {
        let mut sent_ns = None;
        let outcome = self.legs[leg].on_datagram(datagram, ts_ns, |m| {
            if sent_ns.is_none() && !m.recovered {
                sent_ns = m.message.as_ref().ok().map(|msg| msg.header().timestamp_ns);
            }
        });
        let Ok(Packet::Downstream(p)) = moldudp64::decode(datagram) else {
            return None;
        };
        if let Some(pair) = self.pair.as_mut() {
            let feed = if leg == 0 { Feed::A } else { Feed::B };
            let Pair { arbiter, leads } = pair;
            arbiter.on_header(feed, &p.header, ts_ns, |e| {
                if let AbEvent::Both { b_minus_a_ns, .. } = e {
                    leads.record(b_minus_a_ns);
                }
            });
        }
        let fresh = outcome.new_messages > 0
            && outcome.duplicate_messages == 0
            && outcome.recovered_messages == 0;
        if !fresh {
            return None;
        }
        if let Some(sent) = sent_ns {
            self.delays[leg].record(ts_ns, sent);
        }
        let h = p.header;
        let epoch = match self.sessions.iter().position(|s| *s == h.session) {
            Some(i) => i,
            None => {
                self.sessions.push(h.session);
                self.sessions.len() - 1
            }
        };
        Some(Tick {
            epoch: epoch as u64,
            first: h.sequence,
            count: u64::from(h.count),
            ts_ns,
        })
    }

    pub(super) fn summary(&mut self, spec: &MdSpec) -> FeedSummary {
        let arbitration = self.pair.as_mut().map(|pair| {
            let Pair { arbiter, leads } = pair;
            arbiter.flush(|e| {
                if let AbEvent::Both { b_minus_a_ns, .. } = e {
                    leads.record(b_minus_a_ns);
                }
            });
            let c = arbiter.counters();
            Arbitration {
                only_a: c.ab_only_a,
                only_b: c.ab_only_b,
                counters: only(c, "ab_"),
                a_first: leads.a_first(),
                b_first: leads.b_first(),
            }
        });
        let legs = self
            .legs
            .iter()
            .zip(&spec.legs)
            .zip(self.delays.iter_mut())
            .map(|((t, addr), delay)| FeedLeg {
                address: addr.to_string(),
                packets: t.counters().moldudp64_packets,
                messages: t.counters().moldudp64_messages,
                gaps: t.counters().moldudp64_gaps,
                lost: t.counters().moldudp64_gap_messages,
                lost_unit: "messages".into(),
                duplicate_packets: t.counters().moldudp64_duplicate_packets,
                recovered_packets: t.counters().moldudp64_recovered_packets,
                peak_messages_per_ms: t.counters().moldudp64_peak_messages_per_ms,
                counters: counters_of(t.counters())
                    .into_iter()
                    .filter(|(n, _)| !n.starts_with("ab_"))
                    .collect(),
                message_rate_per_s: t.message_rate_per_s(),
                open_gaps: t
                    .open_gaps()
                    .take(GAPS_LISTED)
                    .map(|g| GapSummary {
                        session: Some(String::from_utf8_lossy(&g.session.0).trim_end().into()),
                        first: g.first,
                        last: g.last,
                        detected_ns: g.capture_ns,
                    })
                    .collect(),
                // ns since the venue's midnight: only the figure above the minimum means
                // anything without the venue's time zone.
                delay: delay.summary("timestamp", false),
            })
            .collect();
        FeedSummary {
            name: spec.name.clone(),
            protocol: spec.protocol.name().into(),
            legs,
            arbitration,
        }
    }
}

/// The counters whose names start with `prefix`.
fn only(c: &ItchCounters, prefix: &str) -> Vec<Counter> {
    counters_of(c)
        .into_iter()
        .filter(|(n, _)| n.starts_with(prefix))
        .collect()
}
