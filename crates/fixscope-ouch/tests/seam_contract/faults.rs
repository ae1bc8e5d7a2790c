//! Bad input: headers that cannot be packets, holes, garbage, short messages. Each is
//! counted or returned as an error value, never a panic, and framing resumes only where
//! the resync rule (soupbin's module doc) allows.

use super::samples;
use fixscope_ouch::encode;
use fixscope_ouch::soupbin::{self, SoupBinFramer};
use fixscope_ouch::{ouch42, ouch50, DecodeError};
use fixscope_protocol::{ByteTimes, Framer, FramingCounters};
use proptest::prelude::*;

/// Feeds `pieces` in order (`None`: a hole) and returns the frames and counters.
fn feed(pieces: &[Option<&[u8]>]) -> (Vec<Vec<u8>>, FramingCounters, SoupBinFramer) {
    let mut framer = SoupBinFramer::default();
    let mut counters = FramingCounters::default();
    let mut out = Vec::new();
    for (i, piece) in pieces.iter().enumerate() {
        match piece {
            Some(bytes) => framer.push_at(bytes, ByteTimes::at(i as u64), 0, &mut counters, |m| {
                out.push(m.bytes.to_vec())
            }),
            None => framer.gap(&mut counters),
        }
    }
    (out, counters, framer)
}

#[test]
fn a_zero_or_oversized_length_or_an_unknown_type_is_counted_and_framing_waits_for_a_whole_segment()
{
    let packets = samples::host42();
    let good = packets[1].as_slice();
    let next = packets[2..].concat();
    for bad in [
        &b"\x00\x00S"[..],
        b"\xff\xffS",
        b"\x08\x01S",
        b"\x00\x05Qabcd",
        b"\x00\x01L",
    ] {
        let mut first = good.to_vec();
        first.extend_from_slice(bad);
        first.extend_from_slice(&next);
        let (frames, c, framer) = feed(&[Some(&first), Some(&next)]);
        assert_eq!(c.bad_body_length, 1, "{bad:?}");
        assert_eq!(frames.len(), 1 + packets.len() - 2, "{bad:?}: {c:?}");
        assert_eq!(frames[0], good);
        assert_eq!(c.skipped_bytes as usize, bad.len() + next.len(), "{bad:?}");
        assert_eq!(
            framer.pending_bytes(),
            0,
            "an oversized length is not waited for"
        );
        assert!(!framer.is_resyncing());
    }
}

#[test]
fn a_bad_header_completing_a_held_start_is_counted_with_the_held_bytes() {
    let (frames, c, framer) = feed(&[Some(b"\x00"), Some(b"\x00Sxyz")]);
    assert!(frames.is_empty());
    assert_eq!((c.bad_body_length, c.skipped_bytes), (1, 6));
    assert!(framer.is_resyncing());
}

#[test]
fn after_a_hole_segments_that_start_or_end_inside_a_packet_are_skipped_whole() {
    let packets = samples::host50();
    let stream = packets.concat();
    let second_at = packets[0].len();
    let third_at = second_at + packets[1].len();
    let fourth_at = third_at + packets[2].len();
    let (frames, c, framer) = feed(&[
        Some(&stream[..second_at + 5]),
        None,
        // Starts inside the second packet, ends at a boundary.
        Some(&stream[second_at + 20..third_at]),
        // Starts at a boundary, ends inside the third packet.
        Some(&stream[third_at..third_at + 7]),
        // Whole packets: framing resumes.
        Some(&stream[fourth_at..]),
    ]);
    assert_eq!(c.gap_cut_messages, 1);
    assert_eq!(frames.len(), 1 + packets.len() - 3, "{c:?}");
    assert_eq!(frames[1], packets[3]);
    assert_eq!(c.skipped_bytes as usize, (third_at - second_at - 20) + 7);
    assert_eq!(c.bad_body_length, 0);
    assert!(!framer.is_resyncing());
}

#[test]
fn a_segment_of_another_sides_packets_does_not_resync_a_direction() {
    let client = samples::client42();
    let host = samples::host42();
    let (frames, c, framer) = feed(&[
        Some(&client[0]),
        None,
        Some(&host[5]), // a server heartbeat in the client's direction
        Some(&client[5]),
    ]);
    assert_eq!(frames, [client[0].clone(), client[5].clone()]);
    assert_eq!(c.skipped_bytes as usize, host[5].len());
    assert!(!framer.is_resyncing());
}

#[test]
fn ouch42_messages_of_another_length_are_errors() {
    for packets in [samples::client42(), samples::host42()] {
        for p in packets {
            let packet = soupbin::decode(&p).expect("a packet");
            let (message, request) = match packet {
                soupbin::SoupPacket::UnsequencedData { message } => (message, true),
                soupbin::SoupPacket::SequencedData { message } => (message, false),
                _ => continue,
            };
            let read = if request {
                ouch42::decode_request
            } else {
                ouch42::decode_response
            };
            for n in 1..message.len() {
                assert_eq!(
                    read(&message[..n]),
                    Err(DecodeError::Length {
                        message_type: message[0],
                        expected: message.len(),
                        got: n
                    })
                );
            }
            let mut longer = message.to_vec();
            longer.push(0);
            assert!(read(&longer).is_err());
            assert_eq!(read(&[]), Err(DecodeError::Empty));
        }
    }
}

#[test]
fn ouch50_messages_shorter_than_their_fixed_part_or_appendage_are_errors() {
    let enter = encode::ouch50_message(&samples::enter50(1, samples::APPENDAGE));
    let fixed = ouch50::size::ENTER_ORDER;
    for n in 1..fixed {
        assert_eq!(
            ouch50::decode_request(&enter[..n]),
            Err(DecodeError::Truncated {
                message_type: b'O',
                need: fixed,
                got: n
            })
        );
    }
    // The appendage length says 12; fewer bytes follow.
    for n in fixed..enter.len() {
        assert_eq!(
            ouch50::decode_request(&enter[..n]),
            Err(DecodeError::AppendageLength {
                declared: samples::APPENDAGE.len(),
                available: n - fixed
            })
        );
    }
    // A malformed element: the appendage reads up to it and says it is not well formed.
    let mut odd = enter[..fixed - 2].to_vec();
    odd.extend_from_slice(&[0, 3, 9, 2, b'x']);
    let Ok(ouch50::Message::EnterOrder(o)) = ouch50::decode_request(&odd) else {
        panic!("the fixed part reads");
    };
    assert_eq!(o.appendage.elements().count(), 0);
    assert!(!o.appendage.well_formed());
    // Bytes past the appendage are left for later revisions of the spec.
    let mut longer = enter.clone();
    longer.extend_from_slice(b"zz");
    assert!(ouch50::decode_request(&longer).is_ok());
    for packets in [samples::client50(), samples::host50()] {
        for p in packets {
            for n in 0..p.len() {
                if let Ok(packet) = soupbin::decode(&p[..n]) {
                    let _ = ouch50::decode(&packet);
                }
                let _ = ouch50::decode_request(&p[3.min(n)..n]);
                let _ = ouch50::decode_response(&p[3.min(n)..n]);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any bytes in any pieces, with holes: no panic; every frame delivered is a
    /// SoupBinTCP packet that reads, and its OUCH message reads or is an error value;
    /// without holes every byte is delivered, skipped or held.
    #[test]
    fn any_bytes_frame_without_panic_and_every_byte_is_accounted_for(
        seed in proptest::collection::vec(any::<u8>(), 0..600),
        cuts in proptest::collection::vec(0usize..600, 0..12),
        holes in any::<bool>(),
        valid_prefix in any::<bool>(),
    ) {
        let mut stream = if valid_prefix { samples::host42().concat() } else { Vec::new() };
        stream.extend_from_slice(&seed);
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (stream.len() + 1)).collect();
        cuts.sort_unstable();
        let mut framer = SoupBinFramer::default();
        let mut counters = FramingCounters::default();
        let mut delivered = 0usize;
        let mut start = 0;
        for (i, &end) in cuts.iter().chain([&stream.len()]).enumerate() {
            if holes && i % 3 == 2 {
                framer.gap(&mut counters);
            }
            framer.push_at(&stream[start..end], ByteTimes::at(i as u64), 0, &mut counters, |m| {
                delivered += m.bytes.len();
                let packet = soupbin::decode(m.bytes).expect("a framed packet reads");
                let _ = ouch42::decode(&packet);
                let _ = ouch50::decode(&packet);
            });
            start = end;
        }
        if !holes {
            prop_assert_eq!(
                delivered + counters.skipped_bytes as usize + framer.pending_bytes(),
                stream.len()
            );
        }
    }
}

/// A Login Accepted whose sequence number is the largest SoupBinTCP's 20 digits hold:
/// the host's packets after it, and a re-login's gap up to it, cannot be numbered past
/// 2^64 - 1. They are counted (replays of the last number; a gap saturating), never an
/// overflow.
#[test]
fn a_login_numbered_at_the_top_of_the_sequence_counts_what_follows_as_replays() {
    use fixscope_ouch::orders::{OuchConnection, SessionBook, Version};
    use fixscope_ouch::soupbin::Side;
    let mut book = SessionBook::new();
    let mut conn = OuchConnection::new(Version::Ouch42);
    let exec = encode::ouch42_packet(&ouch42::Message::SystemEvent {
        timestamp_ns: 1,
        event_code: b'S',
    });
    let mut host =
        |conn: &mut OuchConnection, p: &[u8]| conn.on_packet(&mut book, Side::Host, p, 1);
    host(&mut conn, &encode::login_accepted(b"SESSIONA", 1));
    host(&mut conn, &exec);
    // A re-login skipping to the top: a gap of u64::MAX - 2 packets.
    host(&mut conn, &encode::login_accepted(b"SESSIONA", u64::MAX));
    host(&mut conn, &exec);
    assert_eq!(conn.next_sequence(), Some(u64::MAX));
    host(&mut conn, &exec);
    host(&mut conn, &exec);
    // Another logical session skipping as far: the gap count saturates.
    host(&mut conn, &encode::login_accepted(b"SESSIONB", 1));
    host(&mut conn, &exec);
    host(&mut conn, &encode::login_accepted(b"SESSIONB", u64::MAX));
    host(&mut conn, &encode::login_accepted(b"SESSIONA", u64::MAX));
    let c = conn.counters();
    assert_eq!(c.soupbin_logins, 5);
    assert_eq!(
        (c.soupbin_sequenced_packets, c.soupbin_replayed_packets),
        (3, 2)
    );
    assert_eq!(c.soupbin_sequence_gaps, 2);
    assert_eq!(c.soupbin_sequence_gap_packets, u64::MAX);
}

/// A length prefix split across segments at each of its bytes, and lengths of 0, 1
/// (a type byte only) and one past [`soupbin::MAX_PACKET_LEN`].
#[test]
fn a_length_prefix_split_anywhere_and_lengths_of_0_1_and_over_the_max() {
    let packet = encode::packet(b'S', &[b'x'; 40]);
    for cut in 1..4 {
        let (frames, c, framer) = feed(&[Some(&packet[..cut]), Some(&packet[cut..])]);
        assert_eq!(frames, std::slice::from_ref(&packet), "cut at {cut}");
        assert_eq!((c.messages, c.skipped_bytes, c.bad_body_length), (1, 0, 0));
        assert_eq!(framer.pending_bytes(), 0);
    }
    // 1: a heartbeat is the type byte alone; an `S` of no message frames, and its empty
    // message is an error value.
    let (frames, c, _) = feed(&[Some(b"\x00\x01H\x00\x01S")]);
    assert_eq!((frames.len(), c.bad_body_length), (2, 0));
    assert_eq!(ouch42::decode_response(b""), Err(DecodeError::Empty));
    let over = (soupbin::MAX_PACKET_LEN as u16 + 1).to_be_bytes();
    let max = (soupbin::MAX_PACKET_LEN as u16).to_be_bytes();
    for (len, framed) in [([0u8, 0], 0), (over, 0), (max, 1)] {
        let mut p = len.to_vec();
        p.push(b'+');
        p.resize(2 + usize::from(u16::from_be_bytes(len)).max(1), b'.');
        // The length split from the rest: the held start is judged when complete.
        let (frames, c, framer) = feed(&[Some(&p[..1]), Some(&p[1..])]);
        assert_eq!(frames.len(), framed, "{len:?}");
        assert_eq!(c.bad_body_length as usize, 1 - framed, "{len:?}");
        assert_eq!(framer.is_resyncing(), framed == 0);
    }
}

/// Every OUCH message type of both versions cut short, inside its packet: the order layer
/// counts it undecodable, never reads it at a guessed offset.
#[test]
fn truncated_ouch_messages_of_every_type_are_counted_undecodable() {
    use fixscope_ouch::orders::{OuchConnection, SessionBook, Version};
    use fixscope_ouch::soupbin::Side;
    let all = [
        (Version::Ouch42, samples::client42(), samples::host42()),
        (Version::Ouch50, samples::client50(), samples::host50()),
    ];
    for (version, client, host) in all {
        let mut book = SessionBook::new();
        let mut conn = OuchConnection::new(version);
        conn.on_packet(&mut book, Side::Client, &client[0], 0);
        conn.on_packet(&mut book, Side::Host, &host[0], 0);
        let mut cut = 0u64;
        for (side, packets) in [(Side::Client, &client), (Side::Host, &host)] {
            for p in packets.iter() {
                let Ok(
                    soupbin::SoupPacket::UnsequencedData { message }
                    | soupbin::SoupPacket::SequencedData { message },
                ) = soupbin::decode(p)
                else {
                    continue;
                };
                // Its first byte, and one byte short of whole.
                for keep in [1, message.len() - 1] {
                    let short = encode::packet(p[2], &message[..keep]);
                    let before = conn.counters().ouch_undecodable_messages;
                    let out = conn.on_packet(&mut book, side, &short, 1);
                    assert_eq!(out.event, None, "{version:?} {:?}", char::from(message[0]));
                    assert_eq!(
                        conn.counters().ouch_undecodable_messages,
                        before + 1,
                        "{version:?} {} cut to {keep}",
                        char::from(message[0])
                    );
                    cut += 1;
                }
            }
        }
        assert!(cut >= 16, "{version:?}: {cut}");
    }
}
