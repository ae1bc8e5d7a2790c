use super::*;
use crate::suite;

const TLS13_AES128: u16 = 0x1301;

fn suite13() -> Suite {
    suite::find(TLS13_AES128, Version::Tls13).unwrap()
}

/// A protected TLS 1.3 record carrying `plain` bytes of application data (contents are
/// not looked at: only the header and the length).
fn record13(plain: usize) -> Vec<u8> {
    let len = plain + 17;
    let mut r = vec![APPLICATION_DATA, 3, 3];
    r.extend_from_slice(&(len as u16).to_be_bytes());
    r.resize(5 + len, 0xAA);
    r
}

#[derive(Default)]
struct Got {
    data: Vec<(Vec<u8>, u64)>,
    gaps: usize,
}

impl Got {
    fn sink(&mut self) -> impl FnMut(Plain<'_>) + '_ {
        |p| match p {
            Plain::Data { bytes, ts_ns } => self.data.push((bytes.to_vec(), ts_ns)),
            Plain::Gap => self.gaps += 1,
        }
    }
}

fn join() -> CallJoin {
    let mut j = CallJoin::default();
    j.set_suite(&suite13());
    j
}

fn call(kind: CallKind, tcp: Option<(u32, u32)>, bytes: &[u8], ts_ns: u64) -> TlsCall<'_> {
    TlsCall {
        kind,
        tcp,
        bytes,
        truncated: false,
        ts_ns,
    }
}

#[test]
fn the_framer_times_each_record_by_the_segment_that_completed_it_across_cuts() {
    let mut wire = record13(100);
    wire.extend(record13(3));
    wire.extend(record13(50));
    let mut spans = Vec::new();
    let mut f = SpanFramer::default();
    let base = u32::MAX - 60; // wraps inside the second record
                              // Cut inside the first header, inside the second body, at the third's end.
    let cuts = [3, 130, wire.len()];
    let mut from = 0;
    for (i, &to) in cuts.iter().enumerate() {
        f.push(
            base.wrapping_add(from as u32),
            &wire[from..to],
            10 + i as u64,
            &mut |s| spans.push(s),
        );
        from = to;
    }
    let ends: Vec<(u32, u64)> = spans
        .iter()
        .map(|s| (s.end.wrapping_sub(base), s.ts_ns))
        .collect();
    assert_eq!(ends, vec![(122, 11), (122 + 25, 12), (122 + 25 + 72, 12)]);
    assert_eq!(spans[1].start, spans[0].end);
}

#[test]
fn a_write_before_its_record_waits_and_gets_the_record_time_not_the_call_time() {
    let mut j = join();
    let mut counters = TlsCounters::default();
    let mut got = Got::default();
    let msg = b"8=FIX.4.4|35=D|";
    let rec = record13(msg.len());
    let (s0, s1) = (1000u32, 1000 + rec.len() as u32);
    // The handshake's records were framed before (the framer starts at the first byte).
    j.wire(900, &[23, 3, 3, 0, 95], 1, &mut counters, &mut got.sink());
    j.wire(905, &[0; 95], 2, &mut counters, &mut got.sink());
    j.call(
        &call(CallKind::Write, Some((s0, s1)), msg, 50),
        &mut counters,
        &mut got.sink(),
    );
    assert!(got.data.is_empty(), "held until its record is on the wire");
    j.wire(s0, &rec[..10], 60, &mut counters, &mut got.sink());
    assert!(got.data.is_empty());
    j.wire(s0 + 10, &rec[10..], 70, &mut counters, &mut got.sink());
    assert_eq!(got.data, vec![(msg.to_vec(), 70)]);
    assert_eq!((counters.tls_uprobe_unmapped, got.gaps), (0, 0));
}

#[test]
fn a_write_over_several_records_splits_by_capacity_and_a_mismatch_is_unmapped() {
    let mut j = join();
    let mut counters = TlsCounters::default();
    let mut got = Got::default();
    let plain: Vec<u8> = (0..300u32).map(|i| i as u8).collect();
    let mut wire = record13(200);
    wire.extend(record13(100));
    let first_end = record13(200).len();
    j.wire(0, &wire[..first_end], 5, &mut counters, &mut got.sink());
    j.wire(
        first_end as u32,
        &wire[first_end..],
        6,
        &mut counters,
        &mut got.sink(),
    );
    j.call(
        &call(CallKind::Write, Some((0, wire.len() as u32)), &plain, 7),
        &mut counters,
        &mut got.sink(),
    );
    assert_eq!(
        got.data,
        vec![(plain[..200].to_vec(), 5), (plain[200..].to_vec(), 6)]
    );

    // The next call's records do not hold its bytes (padding, a KeyUpdate): not guessed.
    let at = wire.len() as u32;
    let rec = record13(40);
    j.wire(at, &rec, 8, &mut counters, &mut got.sink());
    j.call(
        &call(
            CallKind::Write,
            Some((at, at + rec.len() as u32)),
            &[1; 39],
            9,
        ),
        &mut counters,
        &mut got.sink(),
    );
    assert_eq!(
        (counters.tls_uprobe_unmapped, got.gaps, got.data.len()),
        (1, 1, 2)
    );
}

#[test]
fn a_read_takes_the_last_record_it_read_and_leftovers_keep_that_record() {
    let mut j = join();
    let mut counters = TlsCounters::default();
    let mut got = Got::default();
    // A session ticket (no data for the application), then a 100-byte record.
    let mut wire = record13(60);
    let ticket_end = wire.len() as u32;
    wire.extend(record13(100));
    j.wire(
        0,
        &wire[..ticket_end as usize],
        3,
        &mut counters,
        &mut got.sink(),
    );
    j.wire(
        ticket_end,
        &wire[ticket_end as usize..],
        4,
        &mut counters,
        &mut got.sink(),
    );
    let end = wire.len() as u32;
    // The application reads 64 bytes, then the other 36 from OpenSSL's buffer.
    j.call(
        &call(CallKind::Read, Some((0, end)), &[7; 64], 90),
        &mut counters,
        &mut got.sink(),
    );
    j.call(
        &call(CallKind::Read, None, &[8; 36], 91),
        &mut counters,
        &mut got.sink(),
    );
    assert_eq!(got.data, vec![(vec![7; 64], 4), (vec![8; 36], 4)]);
    // A third read with no TCP would be more than the record holds: unmapped.
    j.call(
        &call(CallKind::Read, None, &[9], 92),
        &mut counters,
        &mut got.sink(),
    );
    assert_eq!((counters.tls_uprobe_unmapped, got.gaps), (1, 1));
}

#[test]
fn a_read_ending_inside_a_record_is_read_ahead_and_unmapped() {
    let mut j = join();
    let mut counters = TlsCounters::default();
    let mut got = Got::default();
    let mut wire = record13(10);
    wire.extend(record13(10));
    j.wire(0, &wire, 3, &mut counters, &mut got.sink());
    j.call(
        &call(CallKind::Read, Some((0, 40)), &[1; 10], 5),
        &mut counters,
        &mut got.sink(),
    );
    assert_eq!((counters.tls_uprobe_unmapped, got.data.len()), (1, 0));
}

#[test]
fn the_other_ends_calls_are_ignored_once_a_kind_feeds_the_direction() {
    let mut j = join();
    let mut counters = TlsCounters::default();
    let mut got = Got::default();
    let rec = record13(5);
    let end = rec.len() as u32;
    j.call(
        &call(CallKind::Write, Some((0, end)), b"hello", 1),
        &mut counters,
        &mut got.sink(),
    );
    j.wire(0, &rec, 2, &mut counters, &mut got.sink());
    // The peer's SSL_read of the same bytes, on the same host.
    j.call(
        &call(CallKind::Read, Some((0, end)), b"hello", 3),
        &mut counters,
        &mut got.sink(),
    );
    assert_eq!(got.data, vec![(b"hello".to_vec(), 2)]);
    assert_eq!(counters.tls_uprobe_unmapped, 0);
}

#[test]
fn a_write_whose_record_never_shows_is_unmapped_after_the_wait_and_at_the_end() {
    let mut j = join();
    let mut counters = TlsCounters::default();
    let mut got = Got::default();
    j.wire(0, &record13(1), 1, &mut counters, &mut got.sink());
    j.call(
        &call(CallKind::Write, Some((1000, 1100)), &[1; 83], 10),
        &mut counters,
        &mut got.sink(),
    );
    j.call(
        &call(CallKind::Write, Some((1100, 1200)), &[1; 83], 11),
        &mut counters,
        &mut got.sink(),
    );
    assert_eq!(counters.tls_uprobe_unmapped, 0);
    // Another record of the stream, but the clock passes the wait: the first call gives up.
    j.wire(
        23,
        &record13(1),
        12 + CALL_WAIT_NS,
        &mut counters,
        &mut got.sink(),
    );
    assert_eq!(counters.tls_uprobe_unmapped, 2);
    j.settle(&mut counters, &mut got.sink());
    assert_eq!((counters.tls_uprobe_unmapped, got.data.len()), (2, 0));
}

#[test]
fn a_hole_or_a_truncated_call_is_unmapped_never_timed() {
    let mut j = join();
    let mut counters = TlsCounters::default();
    let mut got = Got::default();
    let rec = record13(5);
    j.wire(0, &rec, 1, &mut counters, &mut got.sink());
    let truncated = TlsCall {
        truncated: true,
        ..call(CallKind::Write, Some((0, rec.len() as u32)), b"hello", 2)
    };
    j.call(&truncated, &mut counters, &mut got.sink());
    assert_eq!(counters.tls_uprobe_unmapped, 1);
    j.wire_hole();
    let at = rec.len() as u32;
    j.wire(at + 100, &rec, 3, &mut counters, &mut got.sink());
    j.call(
        &call(
            CallKind::Write,
            Some((at + 100, at + 100 + rec.len() as u32)),
            b"hello",
            4,
        ),
        &mut counters,
        &mut got.sink(),
    );
    assert_eq!((counters.tls_uprobe_unmapped, got.data.len()), (2, 0));
}

#[test]
fn a_direction_whose_calls_never_come_is_silent_after_more_records_than_a_handshake() {
    let mut j = join();
    let mut counters = TlsCounters::default();
    let mut got = Got::default();
    let rec = record13(40);
    let mut seq = 0u32;
    for i in 0..=MAX_RECORDS_BEFORE_A_CALL {
        assert!(!j.is_silent(), "{i} records");
        j.wire(seq, &rec, 100, &mut counters, &mut got.sink());
        seq += rec.len() as u32;
    }
    assert!(j.is_silent());
    // A direction whose calls come is never silent, however many records it has.
    let mut j = join();
    j.call(
        &call(CallKind::Read, None, b"x", 1),
        &mut counters,
        &mut got.sink(),
    );
    for _ in 0..=MAX_RECORDS_BEFORE_A_CALL * 2 {
        j.wire(seq, &rec, 100, &mut counters, &mut got.sink());
        seq += rec.len() as u32;
    }
    assert!(!j.is_silent());
}

#[test]
fn the_check_counts_same_bytes_at_the_same_time_as_verified_and_anything_else_not() {
    let mut counters = TlsCounters::default();
    let mut check = CallCheck::default();
    check.decrypted(b"8=FIX.4.4|35=D|", 10);
    check.decrypted(b"8=FIX.4.4|35=F|", 20);
    // Placed across the decryption's chunk boundary: bytes and times compared per byte.
    check.placed(
        Plain::Data {
            bytes: b"8=FIX.4.4|",
            ts_ns: 10,
        },
        &mut counters,
    );
    check.placed(
        Plain::Data {
            bytes: b"35=D|",
            ts_ns: 10,
        },
        &mut counters,
    );
    assert_eq!(
        (counters.tls_uprobe_verified, counters.tls_uprobe_disagreed),
        (2, 0)
    );
    // The right bytes at the wrong time (the call's, not the record's): disagreed.
    check.placed(
        Plain::Data {
            bytes: b"8=FIX.4.4|35=F|",
            ts_ns: 21,
        },
        &mut counters,
    );
    assert_eq!(counters.tls_uprobe_disagreed, 1);
    // More than was decrypted: disagreed; a gap is counted where it was found, not here.
    check.placed(
        Plain::Data {
            bytes: b"x",
            ts_ns: 30,
        },
        &mut counters,
    );
    check.placed(Plain::Gap, &mut counters);
    assert_eq!(
        (counters.tls_uprobe_verified, counters.tls_uprobe_disagreed),
        (2, 2)
    );
}

/// A call that could not be placed (unmapped: its bytes a gap) leaves its record's
/// decryption unmatched: the next calls, placed right, are still verified — one unplaced
/// call must not turn every later comparison into `disagreed`.
#[test]
fn the_check_skips_the_records_of_calls_not_placed() {
    let mut counters = TlsCounters::default();
    let mut check = CallCheck::default();
    check.decrypted(b"A-first", 10);
    check.decrypted(b"B-second", 20);
    check.decrypted(b"C-third", 20);
    check.decrypted(b"D-fourth", 30);
    let placed = |check: &mut CallCheck, bytes: &[u8], ts_ns, counters: &mut TlsCounters| {
        check.placed(Plain::Data { bytes, ts_ns }, counters)
    };
    // A's and B's calls were unmapped; C (same segment as B) and D are placed right.
    check.placed(Plain::Gap, &mut counters);
    placed(&mut check, b"C-third", 20, &mut counters);
    placed(&mut check, b"D-", 30, &mut counters);
    placed(&mut check, b"fourth", 30, &mut counters);
    assert_eq!(
        (counters.tls_uprobe_verified, counters.tls_uprobe_disagreed),
        (3, 0)
    );
    // Wrong bytes at a time something was decrypted, and bytes at a time nothing was.
    check.decrypted(b"E-fifth", 40);
    placed(&mut check, b"X-fifth", 40, &mut counters);
    placed(&mut check, b"E-fifth", 41, &mut counters);
    assert_eq!(counters.tls_uprobe_disagreed, 2);
    assert_eq!(check.compared(), 5);
}
