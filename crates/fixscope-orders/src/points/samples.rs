//! The same TCP segments seen at two points: each pair is a delay sample `δ = t_B − t_A`
//! (B's stamp minus A's). A segment travelling from A to B says `offset ≤ δ` (it cannot
//! arrive before it left); one travelling from B to A says `offset ≥ δ`.
//!
//! A segment is known by its flow, sequence and acknowledgement numbers, flags, length and
//! payload (hashed): handshake, data and pure ACKs alike. One seen twice at a point (a
//! retransmission, a duplicate ACK) cannot say which copy the other point saw: it is
//! `repeated`, not a sample.

use std::hash::{BuildHasher, Hasher};

use hashbrown::HashMap;

use fixscope_model::segment::{Direction, Segment};

/// One point's segments, by identity: when it saw each and which way it went.
#[derive(Default)]
pub struct SegmentStamps {
    seen: HashMap<u64, Stamp>,
    /// Segments this point saw more than once (every copy after the first).
    pub repeated: u64,
    pub segments: u64,
    /// A stamp not a whole microsecond was seen: the capture keeps nanoseconds.
    finer_than_micros: bool,
}

#[derive(Clone, Copy)]
struct Stamp {
    ts_ns: u64,
    toward_acceptor: bool,
    repeated: bool,
}

/// A fixed hasher: the same segment hashes the same at both points and in every run.
fn identity(seg: &Segment<'_>) -> u64 {
    let mut h = foldhash::quality::FixedState::with_seed(0x5eed_f1c5).build_hasher();
    std::hash::Hash::hash(&seg.flow, &mut h);
    h.write_u32(seg.seq);
    h.write_u32(seg.ack);
    h.write_u8(seg.flags.0);
    h.write_usize(seg.payload.len());
    h.write(seg.payload);
    h.finish()
}

impl SegmentStamps {
    pub fn add(&mut self, seg: &Segment<'_>) {
        self.segments += 1;
        self.finer_than_micros |= !seg.ts_ns.is_multiple_of(1_000);
        let stamp = Stamp {
            ts_ns: seg.ts_ns,
            toward_acceptor: seg.direction == Direction::Request,
            repeated: false,
        };
        match self.seen.entry(identity(seg)) {
            hashbrown::hash_map::Entry::Vacant(v) => {
                v.insert(stamp);
            }
            hashbrown::hash_map::Entry::Occupied(mut o) => {
                o.get_mut().repeated = true;
                self.repeated += 1;
            }
        }
    }
}

impl SegmentStamps {
    /// How finely this point's captures stamp: 1 ns, or 1,000 ns when every stamp was a
    /// whole microsecond (a classic pcap): a stamp is its true time less up to this.
    pub fn resolution_ns(&self) -> i64 {
        if self.finer_than_micros || self.segments == 0 {
            1
        } else {
            1_000
        }
    }
}

/// One segment seen once at each point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PairedSegment {
    /// A's stamp (the time axis of every clock figure).
    pub t_a_ns: i64,
    /// B's stamp minus A's.
    pub delta_ns: i64,
    /// Toward the acceptor (client to server).
    pub toward_acceptor: bool,
}

/// What matching two points' segments found.
#[derive(Debug, Default)]
pub struct Matched {
    /// In A's time order.
    pub pairs: Vec<PairedSegment>,
    /// Segments one point saw and the other did not (either way).
    pub unmatched: u64,
    /// Copies after the first at either point, and the segments they repeat.
    pub repeated: u64,
}

/// Pairs the segments seen once at each point.
pub fn match_points(a: &SegmentStamps, b: &SegmentStamps) -> Matched {
    let mut m = Matched {
        repeated: a.repeated + b.repeated,
        ..Matched::default()
    };
    for (id, sa) in &a.seen {
        match b.seen.get(id) {
            Some(sb)
                if !sa.repeated && !sb.repeated && sa.toward_acceptor == sb.toward_acceptor =>
            {
                m.pairs.push(PairedSegment {
                    t_a_ns: sa.ts_ns as i64,
                    delta_ns: sb.ts_ns as i64 - sa.ts_ns as i64,
                    toward_acceptor: sa.toward_acceptor,
                });
            }
            Some(_) => {}
            None => m.unmatched += 1,
        }
    }
    m.unmatched += b.seen.keys().filter(|id| !a.seen.contains_key(*id)).count() as u64;
    m.pairs.sort_unstable_by_key(|p| (p.t_a_ns, p.delta_ns));
    m
}

/// Which point is nearer the acceptor, told without any clock: a segment toward the
/// acceptor reaches the nearer point last, one away from it first, so within one short
/// stretch of time every `δ` of one direction lies above every `δ` of the other, whatever
/// the offset. Each second votes by its medians; `None` when the votes do not agree (the
/// points are one place, or the segments were mismatched).
pub fn b_is_nearer_acceptor(pairs: &[PairedSegment]) -> Option<bool> {
    const SECOND: i64 = 1_000_000_000;
    let (mut b_votes, mut a_votes) = (0u64, 0u64);
    let mut start = 0;
    while start < pairs.len() {
        let bin = pairs[start].t_a_ns.div_euclid(SECOND);
        let end = start
            + pairs[start..]
                .iter()
                .position(|p| p.t_a_ns.div_euclid(SECOND) != bin)
                .unwrap_or(pairs.len() - start);
        let mut toward: Vec<i64> = Vec::new();
        let mut away: Vec<i64> = Vec::new();
        for p in &pairs[start..end] {
            if p.toward_acceptor {
                toward.push(p.delta_ns);
            } else {
                away.push(p.delta_ns);
            }
        }
        if let (Some(t), Some(a)) = (median(&mut toward), median(&mut away)) {
            match t.cmp(&a) {
                std::cmp::Ordering::Greater => b_votes += 1,
                std::cmp::Ordering::Less => a_votes += 1,
                std::cmp::Ordering::Equal => {}
            }
        }
        start = end;
    }
    let votes = a_votes + b_votes;
    // Nine in ten seconds must agree: a clock step lands in one second only.
    if votes == 0 {
        None
    } else if b_votes * 10 >= votes * 9 {
        Some(true)
    } else if a_votes * 10 >= votes * 9 {
        Some(false)
    } else {
        None
    }
}

fn median(v: &mut [i64]) -> Option<i64> {
    if v.is_empty() {
        return None;
    }
    let mid = v.len() / 2;
    Some(*v.select_nth_unstable(mid).1)
}
