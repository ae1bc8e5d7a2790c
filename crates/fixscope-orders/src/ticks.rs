//! Tick-to-trade by an id the trading application writes into its orders (`--tick-link`):
//! the digits of each order's key (FIX ClOrdID, OUCH token or UserRefNum, iLink 3
//! OrderRequestID) at the positions the rule names are the sequence number of the
//! market-data packet (MoldUDP64 message sequence number, MDP 3.0 packet MsgSeqNum) the
//! order answers. The tick is that packet's first copy on the wire (A or B, whichever came
//! first); `tick_to_order` runs from it to the order's request, `tick_to_ack` to the order's
//! first response. Every answered order lands in exactly one [`TickCounters`] count: no
//! link is ever guessed (docs/market-data.md, "Tick-to-trade").

use std::fmt;
use std::str::FromStr;

use fixscope_model::counters::TickCounters;

/// Where in an order's key its tick's sequence number is written: `key[:START[:LEN]]`
/// (0-based; to the key's end without LEN).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TickRule {
    pub start: usize,
    pub len: Option<usize>,
}

impl TickRule {
    /// The sequence number `key` names, if its digits are where the rule reads them
    /// (leading zeros allowed; at most 19 digits).
    pub fn sequence_of(&self, key: &[u8]) -> Option<u64> {
        let rest = key.get(self.start..)?;
        let digits = match self.len {
            Some(n) => rest.get(..n)?,
            None => rest,
        };
        if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        Some(
            digits
                .iter()
                .fold(0u64, |n, d| n * 10 + u64::from(d - b'0')),
        )
    }
}

impl FromStr for TickRule {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let mut parts = s.split(':');
        if parts.next() != Some("key") {
            return Err(format!(
                "{s:?}: the rule is key[:START[:LEN]] (the order key's digits naming the \
                 market-data packet's sequence number)"
            ));
        }
        let number = |p: Option<&str>, what: &str| -> Result<Option<usize>, String> {
            p.map(|v| {
                v.parse::<usize>()
                    .map_err(|_| format!("{s:?}: {what} {v:?} is no number"))
            })
            .transpose()
        };
        let start = number(parts.next(), "START")?.unwrap_or(0);
        let len = number(parts.next(), "LEN")?;
        if len == Some(0) || parts.next().is_some() {
            return Err(format!("{s:?}: expected key[:START[:LEN]], LEN above 0"));
        }
        Ok(TickRule { start, len })
    }
}

impl fmt::Display for TickRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.len {
            Some(n) => write!(f, "key:{}:{n}", self.start),
            None => write!(f, "key:{}", self.start),
        }
    }
}

/// One market-data packet's first arrival: the sequence numbers it carries (`first`, and
/// `count` of them), the feed's epoch (a MoldUDP64 session, an MDP 3.0 channel reset),
/// and its earliest capture time over the A/B copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Packet {
    first: u64,
    count: u64,
    epoch: u64,
    ts_ns: u64,
}

/// The ticks of one feed (or A/B pair), by sequence number.
#[derive(Clone, Debug, Default)]
pub struct TickTable {
    /// Sorted by (first, epoch) once [`TickTable::seal`]ed.
    packets: Vec<Packet>,
    /// The most sequence numbers one packet carries (bounds the search back).
    max_count: u64,
    sealed: bool,
}

impl TickTable {
    /// One copy of a packet carrying `count` sequence numbers from `first`, in `epoch`,
    /// captured at `ts_ns` (copies of one packet keep the earliest).
    pub fn add(&mut self, epoch: u64, first: u64, count: u64, ts_ns: u64) {
        self.sealed = false;
        self.max_count = self.max_count.max(count.max(1));
        self.packets.push(Packet {
            first,
            count: count.max(1),
            epoch,
            ts_ns,
        });
    }

    /// Sorts the packets and keeps each one's first copy.
    pub fn seal(&mut self) {
        self.packets
            .sort_unstable_by_key(|p| (p.first, p.epoch, p.ts_ns));
        self.packets
            .dedup_by(|later, first| later.first == first.first && later.epoch == first.epoch);
        self.sealed = true;
    }

    /// How many packets it holds (after [`TickTable::seal`]).
    pub fn len(&self) -> usize {
        self.packets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    /// The first arrival of every packet carrying `sequence`, one per epoch.
    fn carrying(&self, sequence: u64) -> impl Iterator<Item = u64> + '_ {
        debug_assert!(self.sealed, "a tick table is sealed before it is read");
        let end = self.packets.partition_point(|p| p.first <= sequence);
        let lowest = sequence.saturating_sub(self.max_count - 1);
        self.packets[..end]
            .iter()
            .rev()
            .take_while(move |p| p.first >= lowest)
            .filter(move |p| sequence < p.first + p.count)
            .map(|p| p.ts_ns)
    }
}

/// What an answered order's tick is, by the rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TickLink {
    /// The named packet's first arrival.
    Linked {
        tick_ns: u64,
    },
    NoSequence,
    NotInFeed,
    Ambiguous,
    AfterOrder,
}

/// A run's tick-to-trade rule and the ticks of the feed it names.
#[derive(Debug)]
pub struct TickLinker {
    pub rule: TickRule,
    /// The feed whose sequence numbers the orders name (its name, for the reports).
    pub feed: String,
    pub table: TickTable,
}

impl TickLinker {
    /// The tick of the order with `key` whose request was seen at `request_ts_ns`, counted.
    pub fn link(&self, key: &[u8], request_ts_ns: u64, counters: &mut TickCounters) -> TickLink {
        counters.ticks_orders += 1;
        let link = match self.rule.sequence_of(key) {
            None => TickLink::NoSequence,
            Some(sequence) => {
                // Whether any copy carries it, and the copies that came before the order.
                let (mut any, mut tick, mut before) = (false, 0, 0);
                for t in self.table.carrying(sequence) {
                    any = true;
                    if t <= request_ts_ns {
                        (tick, before) = (t, before + 1);
                    }
                }
                match before {
                    1 => TickLink::Linked { tick_ns: tick },
                    0 if any => TickLink::AfterOrder,
                    0 => TickLink::NotInFeed,
                    _ => TickLink::Ambiguous,
                }
            }
        };
        let count = match link {
            TickLink::Linked { .. } => &mut counters.ticks_linked,
            TickLink::NoSequence => &mut counters.ticks_no_sequence,
            TickLink::NotInFeed => &mut counters.ticks_not_in_feed,
            TickLink::Ambiguous => &mut counters.ticks_ambiguous,
            TickLink::AfterOrder => &mut counters.ticks_after_order,
        };
        *count += 1;
        link
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn linker(rule: &str, packets: &[(u64, u64, u64, u64)]) -> TickLinker {
        let mut table = TickTable::default();
        for &(epoch, first, count, ts) in packets {
            table.add(epoch, first, count, ts);
        }
        table.seal();
        TickLinker {
            rule: rule.parse().unwrap(),
            feed: "f".into(),
            table,
        }
    }

    #[test]
    fn the_rule_reads_digits_where_it_says() {
        let r: TickRule = "key:2:4".parse().unwrap();
        assert_eq!(r.sequence_of(b"T-0042-x"), Some(42));
        assert_eq!(r.sequence_of(b"T-00"), None, "too short");
        assert_eq!(r.sequence_of(b"T-00a2"), None, "not digits");
        let whole: TickRule = "key".parse().unwrap();
        assert_eq!(whole.sequence_of(b"1234"), Some(1234));
        assert_eq!(whole.to_string(), "key:0");
        assert!("tag:9717".parse::<TickRule>().is_err());
        assert!("key:1:0".parse::<TickRule>().is_err());
        assert!("key:x".parse::<TickRule>().is_err());
    }

    #[test]
    fn each_order_lands_in_one_count() {
        // Packets: 10..15 at 100 (A) and 90 (B, first); 15..17 at 200; 20 twice (a
        // session change) at 300 and 500.
        let l = linker(
            "key",
            &[
                (0, 10, 5, 100),
                (0, 10, 5, 90),
                (0, 15, 2, 200),
                (0, 20, 1, 300),
                (1, 20, 1, 500),
            ],
        );
        let mut c = TickCounters::default();
        assert_eq!(l.link(b"12", 150, &mut c), TickLink::Linked { tick_ns: 90 });
        assert_eq!(
            l.link(b"16", 250, &mut c),
            TickLink::Linked { tick_ns: 200 }
        );
        assert_eq!(l.link(b"16", 150, &mut c), TickLink::AfterOrder);
        assert_eq!(l.link(b"17", 250, &mut c), TickLink::NotInFeed);
        assert_eq!(l.link(b"9", 250, &mut c), TickLink::NotInFeed);
        assert_eq!(
            l.link(b"20", 400, &mut c),
            TickLink::Linked { tick_ns: 300 }
        );
        assert_eq!(l.link(b"20", 600, &mut c), TickLink::Ambiguous);
        assert_eq!(l.link(b"ORD", 600, &mut c), TickLink::NoSequence);
        assert_eq!(c.ticks_orders, 8);
        assert_eq!(
            c.ticks_linked
                + c.ticks_no_sequence
                + c.ticks_not_in_feed
                + c.ticks_ambiguous
                + c.ticks_after_order,
            c.ticks_orders
        );
        assert_eq!(
            (c.ticks_linked, c.ticks_ambiguous, c.ticks_after_order),
            (3, 1, 1)
        );
    }
}
