//! A CME MDP 3.0 incremental channel's feed or A/B pair (`fixscope-mdp3` has the rules):
//! each leg's `ChannelTracker`, the pair's `AbArbiter` (by MsgSeqNum), the leads.

use fixscope_mdp3::packet;
use fixscope_mdp3::{AbArbiter, AbEvent, ChannelTracker, Feed, Mdp3Counters};

use super::delay::DelayCollector;
use super::leads::Leads;
use super::spec::MdSpec;
use super::Tick;
use crate::report::feeds::{Arbitration, FeedLeg, FeedSummary, GapSummary};
use crate::source::{counters_of, Counter};

/// Open gaps a summary lists per leg, at most (every one is counted).
const GAPS_LISTED: usize = 20;

pub(super) struct Mdp3Feed {
    legs: Vec<ChannelTracker>,
    /// Each leg's epochs begun (a channel reset): a packet's epoch.
    epochs: Vec<u64>,
    /// Each leg's delay against SendingTime.
    delays: Vec<DelayCollector>,
    pair: Option<(AbArbiter, Leads)>,
}

impl Mdp3Feed {
    pub(super) fn new(legs: usize) -> Self {
        Mdp3Feed {
            legs: (0..legs).map(|_| ChannelTracker::default()).collect(),
            epochs: vec![0; legs],
            delays: (0..legs).map(|_| DelayCollector::default()).collect(),
            pair: (legs == 2).then(|| (AbArbiter::default(), Leads::new())),
        }
    }

    /// One datagram of leg `leg`; a packet new on that leg (not a copy, not recovered
    /// late, not of an earlier epoch) is returned as a tick, its epoch the leg's count of
    /// channel resets.
    pub(super) fn on_datagram(&mut self, leg: usize, ts_ns: u64, datagram: &[u8]) -> Option<Tick> {
        let outcome = self.legs[leg].on_datagram(datagram, ts_ns, |_| {});
        if outcome.new_epoch {
            self.epochs[leg] += 1;
        }
        if let Some((arbiter, leads)) = self.pair.as_mut() {
            if let Ok(p) = packet::parse(datagram) {
                let feed = if leg == 0 { Feed::A } else { Feed::B };
                arbiter.on_header(feed, &p.header, ts_ns, |e| record(leads, e));
            }
        }
        let header = outcome
            .header
            .filter(|_| outcome.class == fixscope_mdp3::feed::Class::New)?;
        if let Some(sent) = header.sending_time() {
            self.delays[leg].record(ts_ns, sent);
        }
        Some(Tick {
            epoch: self.epochs[leg],
            first: u64::from(header.msg_seq_num),
            count: 1,
            ts_ns,
        })
    }

    pub(super) fn summary(&mut self, spec: &MdSpec) -> FeedSummary {
        let arbitration = self.pair.as_mut().map(|(arbiter, leads)| {
            arbiter.flush(|e| record(leads, e));
            let c = arbiter.counters();
            Arbitration {
                only_a: c.mdp3_ab_only_a,
                only_b: c.mdp3_ab_only_b,
                counters: named(c, |n| n.starts_with("mdp3_ab_")),
                a_first: leads.a_first(),
                b_first: leads.b_first(),
            }
        });
        let legs = self
            .legs
            .iter()
            .zip(&spec.legs)
            .zip(self.delays.iter_mut())
            .map(|((t, addr), delay)| {
                let c = t.counters();
                FeedLeg {
                    address: addr.to_string(),
                    packets: c.mdp3_packets,
                    messages: c.mdp3_messages,
                    gaps: c.mdp3_gaps,
                    lost: c.mdp3_gap_packets,
                    lost_unit: "packets".into(),
                    duplicate_packets: c.mdp3_duplicate_packets,
                    recovered_packets: c.mdp3_recovered_packets,
                    peak_messages_per_ms: c.mdp3_peak_messages_per_ms,
                    counters: named(c, |n| !n.starts_with("mdp3_ab_")),
                    message_rate_per_s: None,
                    open_gaps: t
                        .open_gaps()
                        .take(GAPS_LISTED)
                        .map(|g| GapSummary {
                            session: None,
                            first: u64::from(g.first),
                            last: u64::from(g.last),
                            detected_ns: g.capture_ns,
                        })
                        .collect(),
                    delay: delay.summary("SendingTime", true),
                }
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

fn record(leads: &mut Leads, e: AbEvent) {
    if let AbEvent::Both { b_minus_a_ns, .. } = e {
        leads.record(b_minus_a_ns);
    }
}

fn named(c: &Mdp3Counters, keep: impl Fn(&str) -> bool) -> Vec<Counter> {
    counters_of(c)
        .into_iter()
        .filter(|(n, _)| keep(n))
        .collect()
}
