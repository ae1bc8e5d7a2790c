//! The merge over synthetic rings: records as (ts, id), positions one per record.

use super::*;

/// A ring of records `ts ++ id`; a record can be reserved (busy) and committed later, as a
/// BPF program interrupted between its timestamp and its commit would leave it.
#[derive(Default)]
struct FakeRing {
    recs: Vec<Option<Vec<u8>>>,
    cons: u64,
    /// Positions of data area (0: 1 << 20); a drain reads at most 1/8 of them.
    size: usize,
}

impl FakeRing {
    fn push(&mut self, ts: u64, id: u32) {
        self.recs.push(Some(record(ts, id)));
    }
    /// Reserves a slot, committed later with `commit`.
    fn reserve(&mut self) -> usize {
        self.recs.push(None);
        self.recs.len() - 1
    }
    fn commit(&mut self, slot: usize, ts: u64, id: u32) {
        self.recs[slot] = Some(record(ts, id));
    }
}

fn record(ts: u64, id: u32) -> Vec<u8> {
    let mut v = ts.to_ne_bytes().to_vec();
    v.extend_from_slice(&id.to_ne_bytes());
    v
}

fn id_of(rec: &[u8]) -> u32 {
    u32::from_ne_bytes(rec[8..12].try_into().expect("12-byte records"))
}

impl RecordRing for FakeRing {
    fn consumer(&self) -> u64 {
        self.cons
    }
    fn producer(&self) -> u64 {
        self.recs.len() as u64
    }
    fn record_at(&self, pos: u64) -> At<'_> {
        match &self.recs[pos as usize] {
            Some(bytes) => At::Record {
                bytes,
                next: pos + 1,
            },
            None => At::Busy,
        }
    }
    fn release(&mut self, pos: u64) {
        assert!(pos >= self.cons, "the consumer position never goes back");
        self.cons = pos;
    }
    fn size(&self) -> usize {
        if self.size == 0 {
            1 << 20
        } else {
            self.size
        }
    }
}

const G: u64 = INITIAL_GRACE_NS;

/// Drains `m` at `now`, returning (tag, id) of what was handed on.
fn drain(m: &mut Merge<FakeRing, char>, now: u64) -> Vec<(char, u32)> {
    let mut out = Vec::new();
    m.drain(now, &mut |tag, rec| {
        out.push((*tag, id_of(rec)));
        Flow::Continue
    });
    out
}

fn ring(recs: &[(u64, u32)]) -> FakeRing {
    let mut r = FakeRing::default();
    for &(ts, id) in recs {
        r.push(ts, id);
    }
    r
}

#[test]
fn a_response_on_a_ring_drained_first_comes_after_its_request() {
    // The response's CPU's ring is added (and scanned) first.
    let mut m = Merge::new(0);
    m.add(ring(&[(2_000, 2)]), 'B');
    m.add(ring(&[(1_000, 1)]), 'A');
    assert_eq!(drain(&mut m, 10 * G), vec![('A', 1), ('B', 2)]);
    assert_eq!(m.rings().map(|r| r.cons).collect::<Vec<_>>(), vec![1, 1]);
    assert_eq!(m.late_records(), 0);
}

#[test]
fn records_newer_than_the_watermark_wait_for_older_ones_still_being_written() {
    let t = 100 * G;
    let mut m = Merge::new(t);
    m.add(ring(&[]), 'A');
    m.add(ring(&[(t + 2_000, 2)]), 'B');
    // The request (stamped t + 1000) is reserved on A but not yet committed.
    let slot = m.lanes[0].ring.reserve();
    let now = t + 3_000;
    assert_eq!(drain(&mut m, now), vec![], "the response waits");
    assert!(
        m.delivered_to() < t + 1_000,
        "the clock does not pass the request"
    );
    m.lanes[0].ring.commit(slot, t + 1_000, 1);
    assert_eq!(drain(&mut m, now + G), vec![('A', 1), ('B', 2)]);
    assert_eq!(m.delivered_to(), now);
    assert_eq!(m.late_records(), 0);
}

#[test]
fn the_delivered_clock_never_runs_ahead_of_a_held_record() {
    let t = 100 * G;
    let mut m = Merge::new(t);
    m.add(ring(&[(t + 10, 1), (t + 30, 3), (t + 20, 2)]), 'A');
    m.add(ring(&[(t + 25, 4)]), 'B');
    // Watermark t + 26: A's record at t + 20 sits behind its t + 30, so nothing at or
    // after t + 20 may go yet (B's t + 25 would pass it).
    assert_eq!(drain(&mut m, t + 26 + G), vec![('A', 1)]);
    assert_eq!(m.delivered_to(), t + 19);
    assert_eq!(
        drain(&mut m, t + 100 + G),
        vec![('A', 2), ('B', 4), ('A', 3)]
    );
    assert_eq!(m.late_records(), 0);
}

#[test]
fn a_late_record_is_handed_on_counted_and_raises_the_grace() {
    let t = 100 * G;
    let mut m = Merge::new(t);
    m.add(ring(&[(t + 1_000, 1)]), 'A');
    m.add(ring(&[]), 'B');
    assert_eq!(drain(&mut m, t + 10 * G), vec![('A', 1)]);
    m.lanes[1].ring.push(t + 500, 2); // stamped before what was handed on
    assert_eq!(drain(&mut m, t + 11 * G), vec![('B', 2)]);
    assert_eq!(m.late_records(), 1);
    assert!(m.grace_ns() >= 2 * (t + 10 * G - G - (t + 500)));
}

#[test]
fn a_stopped_drain_loses_and_repeats_nothing() {
    let mut m = Merge::new(0);
    // A's second record is out of ring order, so a stop after it leaves a gap in A.
    m.add(ring(&[(30, 3), (10, 1), (50, 5)]), 'A');
    m.add(ring(&[(20, 2), (40, 4)]), 'B');
    let mut out = Vec::new();
    m.drain(10 * G, &mut |tag, rec| {
        out.push((*tag, id_of(rec)));
        if out.len() == 2 {
            Flow::Stop
        } else {
            Flow::Continue
        }
    });
    assert_eq!(out, vec![('A', 1), ('B', 2)]);
    out.extend(drain(&mut m, 10 * G));
    let ids: Vec<u32> = out.iter().map(|&(_, id)| id).collect();
    assert_eq!(ids, vec![1, 2, 3, 4, 5]);
    assert!(m.rings().all(|r| r.cons == r.recs.len() as u64));
}

#[test]
fn a_backlog_is_worked_off_an_eighth_of_the_ring_at_a_time_in_order() {
    let mut m = Merge::new(0);
    let mut a = ring(&(1..=20).map(|i| (i * 10, i as u32)).collect::<Vec<_>>());
    a.size = 64; // 8 records per drain
    m.add(a, 'A');
    m.add(ring(&[(95, 100)]), 'B');
    let mut all = Vec::new();
    for _ in 0..10 {
        let got = drain(&mut m, 10 * G);
        assert!(got.len() <= 8 + 1, "{got:?}");
        all.extend(got);
    }
    let ids: Vec<u32> = all.iter().map(|&(_, id)| id).collect();
    let mut want: Vec<u32> = (1..=9).collect();
    want.push(100);
    want.extend(10..=20);
    assert_eq!(ids, want);
}

#[test]
fn short_records_are_stepped_over_and_counted() {
    let mut m = Merge::new(0);
    let mut a = ring(&[(10, 1)]);
    a.recs.push(Some(vec![1, 2, 3]));
    a.push(20, 2);
    m.add(a, 'A');
    assert_eq!(drain(&mut m, 10 * G), vec![('A', 1), ('A', 2)]);
    assert_eq!(m.short_records(), 1);
    assert_eq!(m.rings().next().map(|r| r.cons), Some(3));
}

/// Many records on 4 rings, each committed up to ~grace after its timestamp, drained at
/// random times: everything comes out once, in timestamp order, with no late record.
#[test]
fn random_interleavings_come_out_in_timestamp_order() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let lanes = 4;
    let mut m = Merge::new(0);
    for c in ['a', 'b', 'c', 'd'] {
        m.add(FakeRing::default(), c);
    }
    // (commit time, lane, ts, id), made in ts order and committed in commit order.
    let mut pending: Vec<(u64, usize, u64, u32)> = Vec::new();
    let mut ts = G;
    for id in 0..5_000u32 {
        ts += rnd(3_000);
        pending.push((ts + rnd(G * 9 / 10), rnd(lanes) as usize, ts, id));
    }
    // Slots are reserved in ts order per lane (as kernel programs do), committed later.
    pending.sort_by_key(|p| p.2);
    let mut slots: Vec<(u64, usize, usize, u64, u32)> = pending
        .iter()
        .map(|&(at, lane, ts, id)| (at, lane, m.lanes[lane].ring.reserve(), ts, id))
        .collect();
    // Reservation order per lane is ts order, but nothing is visible until committed.
    slots.sort_by_key(|s| s.0);
    let mut out: Vec<(u64, u32)> = Vec::new();
    let mut now = 0;
    let mut k = 0;
    while k < slots.len() || out.len() < slots.len() {
        now += rnd(20_000);
        while k < slots.len() && slots[k].0 <= now {
            let (_, lane, slot, ts, id) = slots[k];
            m.lanes[lane].ring.commit(slot, ts, id);
            k += 1;
        }
        let mut got = Vec::new();
        m.drain(now, &mut |_, rec| {
            got.push(id_of(rec));
            Flow::Continue
        });
        assert!(m.delivered_to() <= now);
        for id in got {
            out.push((pending[id as usize].2, id));
        }
        assert!(now < 1 << 40, "bounded");
    }
    assert_eq!(m.late_records(), 0);
    assert_eq!(out.len(), pending.len());
    assert!(
        out.windows(2).all(|w| w[0].0 <= w[1].0),
        "out of timestamp order"
    );
}
