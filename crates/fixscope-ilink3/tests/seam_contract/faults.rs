//! Bad input: counted, never a panic — frames that are not iLink 3, a framer that lost
//! sync, and random bytes cut anywhere.

use fixscope_ilink3::orders::{Ilink3Connection, SessionBook};
use fixscope_ilink3::sofh::SofhFramer;
use fixscope_ilink3::{encode, Side};
use fixscope_protocol::{ByteTimes, Framer, FramingCounters};
use proptest::prelude::*;

use crate::samples::{self, FIRM, UUID};

#[test]
fn frames_that_do_not_decode_or_come_the_wrong_way_are_counted() {
    let mut book = SessionBook::new();
    let mut conn = Ilink3Connection::new();
    conn.on_message(
        &mut book,
        Side::Client,
        &encode::establish(UUID, FIRM, 1, 1),
        1,
    );
    let good = samples::nos(1, 1001);
    let mut bad_encoding = good.clone();
    bad_encoding[3] = 0xCB;
    let mut other_schema = good.clone();
    other_schema[8] = 1;
    let mut unknown = good.clone();
    unknown[6..8].copy_from_slice(&4242u16.to_le_bytes());
    for bad in [
        &good[..11],
        &good[..40],
        &bad_encoding[..],
        &other_schema,
        &unknown,
        &[][..],
    ] {
        let out = conn.on_message(&mut book, Side::Client, bad, 2);
        assert_eq!(out, Default::default());
    }
    // A request from CME, an execution report from the client.
    conn.on_message(&mut book, Side::Host, &good, 3);
    let ack = encode::report(&samples::report(522, 1, Some(1001), 7001, 10));
    conn.on_message(&mut book, Side::Client, &ack, 4);
    let c = conn.counters();
    assert_eq!(c.ilink3_undecodable_messages, 6);
    assert_eq!(c.ilink3_wrong_side_messages, 2);
    assert_eq!(c.ilink3_requests + c.ilink3_business_messages, 0);
}

#[test]
fn a_bad_framing_header_loses_sync_until_an_aligned_segment() {
    let mut framer = SofhFramer::new();
    let mut counters = FramingCounters::default();
    let mut got = 0;
    let a = samples::nos(1, 1001);
    let mut garbage = a.clone();
    garbage[2] = 0;
    let chain = [samples::nos(2, 1002), samples::nos(3, 1003)].concat();
    for (i, piece) in [&a[..], &garbage, &a[5..], &chain].into_iter().enumerate() {
        framer.push_at(piece, ByteTimes::at(i as u64), 0, &mut counters, |_| {
            got += 1
        });
    }
    assert_eq!(got, 3, "the first message and the aligned chain");
    assert_eq!(counters.bad_body_length, 1);
    assert_eq!(counters.skipped_bytes as usize, garbage.len() + a.len() - 5);
    assert!(!framer.is_resyncing());
    // A length below the two headers loses sync too.
    let mut short = a.clone();
    short[..2].copy_from_slice(&11u16.to_le_bytes());
    framer.push_at(&short, ByteTimes::at(9), 0, &mut counters, |_| got += 1);
    assert_eq!((counters.bad_body_length, got), (2, 3));
    assert!(framer.is_resyncing());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_bytes_cut_anywhere_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..600),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..6),
        host in any::<bool>(),
    ) {
        feed(&bytes, &cuts, host);
    }

    #[test]
    fn a_real_stream_with_bytes_flipped_never_panics(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..6),
        host in any::<bool>(),
    ) {
        let (mut stream, _) = samples::concat(&if host {
            samples::host_stream()
        } else {
            samples::client_stream()
        });
        for (at, b) in flips {
            let i = at.index(stream.len());
            stream[i] = b;
        }
        feed(&stream, &cuts, host);
    }
}

/// Frames `bytes` cut at `cuts` and reads every frame through a connection.
fn feed(bytes: &[u8], cuts: &[prop::sample::Index], host: bool) {
    let mut at: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
    at.sort_unstable();
    let mut framer = SofhFramer::new();
    let mut counters = FramingCounters::default();
    let mut book = SessionBook::new();
    let mut conn = Ilink3Connection::new();
    let side = if host { Side::Host } else { Side::Client };
    let mut start = 0;
    for (i, end) in at.into_iter().chain([bytes.len()]).enumerate() {
        framer.push_at(
            &bytes[start..end],
            ByteTimes::at(i as u64),
            0,
            &mut counters,
            |m| {
                conn.on_message(&mut book, side, m.bytes, m.first_byte_ts_ns);
            },
        );
        if i == 2 {
            framer.gap(&mut counters);
        }
        start = end;
    }
}

/// Message Lengths of 0, 1, one below the two headers, the largest accepted and one past
/// it — each whole and with its SOFH split across two segments at every byte: the bad
/// ones are counted once (`bad_body_length`) with every byte skipped, the good one framed.
#[test]
fn message_lengths_of_0_1_below_the_headers_and_past_the_max_lose_sync_split_or_not() {
    use fixscope_ilink3::sofh::MAX_MESSAGE_LEN;
    let nos = samples::nos(1, 1001);
    let largest = encode::Builder::new(fixscope_ilink3::schema::new_order_single_514::ID)
        .block_length(MAX_MESSAGE_LEN - 12)
        .finish();
    assert_eq!(largest.len(), MAX_MESSAGE_LEN);
    let with_len = |len: usize| {
        let mut f = if len <= nos.len() {
            nos.clone()
        } else {
            largest.clone()
        };
        f.resize(len.max(4), 0);
        f[..2].copy_from_slice(&(len as u16).to_le_bytes());
        f
    };
    for (len, good) in [
        (0, false),
        (1, false),
        (11, false),
        (MAX_MESSAGE_LEN, true),
        (MAX_MESSAGE_LEN + 1, false),
    ] {
        let frame = if good { largest.clone() } else { with_len(len) };
        for cut in [frame.len(), 1, 2, 3] {
            let mut framer = SofhFramer::new();
            let mut counters = FramingCounters::default();
            let mut got = Vec::new();
            for (i, piece) in [&frame[..cut], &frame[cut..]].into_iter().enumerate() {
                framer.push_at(piece, ByteTimes::at(i as u64), 0, &mut counters, |m| {
                    got.push(m.bytes.len())
                });
            }
            let what = format!("length {len}, cut at {cut}");
            if good {
                assert_eq!(got, [MAX_MESSAGE_LEN], "{what}");
                assert_eq!(
                    counters.bad_body_length + counters.skipped_bytes,
                    0,
                    "{what}"
                );
            } else {
                assert!(got.is_empty(), "{what}");
                assert_eq!(counters.bad_body_length, 1, "{what}");
                assert_eq!(counters.skipped_bytes as usize, frame.len(), "{what}");
                assert!(framer.is_resyncing(), "{what}");
            }
            assert_eq!(framer.pending_bytes(), 0, "{what}");
        }
    }
}

/// A BlockLength shorter than the template's root (a required field cut off), one running
/// past the frame, and a repeating group whose dimension says more entries than the frame
/// holds. The first two are counted undecodable by the order layer; the group is past
/// the root block, which is all the decoder reads (the SOFH, not the group, bounds the
/// frame), so the report reads as it was written and pairs.
#[test]
fn a_corrupt_block_length_is_counted_and_a_group_running_past_the_frame_is_never_read() {
    use fixscope_ilink3::schema::{
        execution_report_trade_outright_525 as fill, new_order_single_514 as m,
    };
    use fixscope_ilink3::{decode, sbe, DecodeError, Message};
    let short = encode::Builder::new(m::ID)
        .put(m::SEQ_NUM, 2)
        .block_length(m::ORDER_REQUEST_ID.offset + 4)
        .finish();
    assert_eq!(
        decode(&short),
        Err(DecodeError::MissingField {
            template_id: m::ID,
            field: "OrderRequestID"
        })
    );
    let mut past = samples::nos(3, 1003);
    let len = past.len() as u16;
    past[4..6].copy_from_slice(&len.to_le_bytes());
    assert!(matches!(
        decode(&past),
        Err(DecodeError::BlockLength { .. })
    ));
    let report = encode::report(&samples::report(fill::ID, 1, Some(1001), 7001, 9));
    let root_end = sbe::HEADERS_LEN + usize::from(sbe::header(&report).unwrap().block_length);
    assert!(
        report.len() >= root_end + 3,
        "the fills group's dimension follows the root"
    );
    let mut group_past = report.clone();
    group_past[root_end + 2] = 200; // numInGroup: 200 entries the frame has no room for
    assert_eq!(decode(&group_past), decode(&report));
    assert!(matches!(decode(&group_past), Ok(Message::Report(_))));

    let mut book = SessionBook::new();
    let mut conn = Ilink3Connection::new();
    conn.on_message(
        &mut book,
        Side::Client,
        &encode::establish(UUID, FIRM, 1, 1),
        1,
    );
    conn.on_message(
        &mut book,
        Side::Host,
        &encode::establishment_ack(UUID, 1, 1),
        1,
    );
    conn.on_message(&mut book, Side::Client, &samples::nos(1, 1001), 2);
    conn.on_message(&mut book, Side::Client, &short, 2);
    conn.on_message(&mut book, Side::Client, &past, 2);
    let out = conn.on_message(&mut book, Side::Host, &group_past, 3);
    assert!(out.event.is_some(), "the fill pairs with its order");
    let c = conn.counters();
    assert_eq!(c.ilink3_undecodable_messages, 2);
    assert_eq!((c.ilink3_requests, c.ilink3_business_messages), (1, 1));
    assert_eq!(c.ilink3_unknown_order_responses, 0);
}
