//! Decoding: SoupBinTCP packets into `SoupPacket`, OUCH 4.2 and 5.0 messages into their
//! typed forms, from bytes laid out here by hand (offsets from the spec's tables) and from
//! the encoder, whose output must read back to the same bytes.

use super::samples::{self, APPENDAGE};
use fixscope_ouch::encode;
use fixscope_ouch::ouch42::{self as o42};
use fixscope_ouch::ouch50::{self as o50};
use fixscope_ouch::soupbin::{self, SoupPacket};

#[test]
fn session_packets_read_into_their_fields_and_the_password_is_not_kept() {
    let login = encode::login_request(b"USER01", b"secret", b"SESS1", Some(42));
    assert_eq!(login.len(), 49);
    assert_eq!(
        soupbin::decode(&login),
        Ok(SoupPacket::LoginRequest {
            username: b"USER01",
            requested_session: b"SESS1",
            requested_sequence: Some(42),
        })
    );
    let blank = encode::login_request(b"U", b"", b"", None);
    assert!(matches!(
        soupbin::decode(&blank),
        Ok(SoupPacket::LoginRequest {
            requested_session: b"",
            requested_sequence: None,
            ..
        })
    ));
    assert_eq!(
        soupbin::decode(&encode::login_accepted(b"SESSION042", 9_876_543_210)),
        Ok(SoupPacket::LoginAccepted {
            session: b"SESSION042",
            next_sequence: Some(9_876_543_210),
        })
    );
    assert_eq!(
        soupbin::decode(&encode::login_rejected(b'S')),
        Ok(SoupPacket::LoginRejected { reason: b'S' })
    );
    assert_eq!(
        soupbin::decode(b"\x00\x06+hello"),
        Ok(SoupPacket::Debug { text: b"hello" })
    );
    for (bytes, t) in [
        (&b"\x00\x01H"[..], SoupPacket::ServerHeartbeat),
        (b"\x00\x01Z", SoupPacket::EndOfSession),
        (b"\x00\x01R", SoupPacket::ClientHeartbeat),
        (b"\x00\x01O", SoupPacket::LogoutRequest),
    ] {
        assert_eq!(soupbin::decode(bytes), Ok(t));
        assert_eq!(t.packet_type(), bytes[2]);
    }
    assert_eq!(
        soupbin::decode(b"\x00\x02HH"),
        Err(soupbin::SoupError::BadSize {
            packet_type: b'H',
            len: 2
        })
    );
    assert_eq!(
        soupbin::decode(b"\x00\x01Q"),
        Err(soupbin::SoupError::UnknownType(b'Q'))
    );
    assert_eq!(soupbin::decode(b"\x00"), Err(soupbin::SoupError::Truncated));
}

/// An OUCH 4.2 Enter Order laid out field by field.
fn enter42_by_hand() -> Vec<u8> {
    let mut b = vec![b'O'];
    b.extend_from_slice(b"TOKEN0000000A ");
    b.push(b'B');
    b.extend_from_slice(&300u32.to_be_bytes());
    b.extend_from_slice(b"AAPL    ");
    b.extend_from_slice(&1_895_000u32.to_be_bytes());
    b.extend_from_slice(&99_999u32.to_be_bytes());
    b.extend_from_slice(b"FRM1");
    b.extend_from_slice(b"YAN");
    b.extend_from_slice(&7u32.to_be_bytes());
    b.extend_from_slice(b"NR");
    b
}

#[test]
fn an_ouch42_enter_order_reads_at_the_specs_offsets() {
    let bytes = enter42_by_hand();
    assert_eq!(bytes.len(), o42::size::ENTER_ORDER);
    let Ok(o42::Message::EnterOrder(o)) = o42::decode_request(&bytes) else {
        panic!("not an enter order");
    };
    assert_eq!(o.token, b"TOKEN0000000A ");
    assert_eq!(soupbin::trim_spaces(o.token), b"TOKEN0000000A");
    assert_eq!((o.side, o.shares, o.stock), (b'B', 300, &b"AAPL    "[..]));
    assert_eq!(
        (o.price, o.time_in_force, o.firm),
        (1_895_000, 99_999, &b"FRM1"[..])
    );
    assert_eq!(
        (o.display, o.capacity, o.iso_eligibility),
        (b'Y', b'A', b'N')
    );
    assert_eq!(
        (o.min_quantity, o.cross_type, o.customer_type),
        (7, b'N', b'R')
    );
    assert_eq!(encode::ouch42_message(&o42::Message::EnterOrder(o)), bytes);
}

#[test]
fn every_ouch42_sample_reads_back_to_its_bytes_with_its_keys() {
    let mut seen = Vec::new();
    for (packets, request) in [(samples::client42(), true), (samples::host42(), false)] {
        for p in packets {
            let packet = soupbin::decode(&p).expect("a packet");
            let Some(message) = o42::decode(&packet) else {
                continue;
            };
            let message = message.expect("a message");
            let bytes = encode::ouch42_message(&message);
            assert_eq!(encode::ouch42_packet(&message), p, "{message:?}");
            let carrier = if request { b'U' } else { b'S' };
            assert_eq!(packet.packet_type(), carrier, "{message:?}");
            seen.push((
                bytes[0],
                request,
                message.token().map(<[u8]>::to_vec),
                message.replaced_token().map(<[u8]>::to_vec),
            ));
        }
    }
    let t1 = Some(b"ORD00000000001".to_vec());
    let t2 = Some(b"ORD00000000002".to_vec());
    assert_eq!(
        seen,
        [
            (b'O', true, t1.clone(), None),
            // A Replace is keyed by its replacement token and names the existing one.
            (b'U', true, t2.clone(), t1.clone()),
            // A Cancel names the order; it has no key of its own.
            (b'X', true, t2.clone(), None),
            (b'M', true, Some(b"ORD3          ".to_vec()), None),
            (b'S', false, None, None),
            (b'A', false, t1.clone(), None),
            // Replaced: the same letter as Replace, told apart by the packet type.
            (b'U', false, t2.clone(), t1.clone()),
            (b'E', false, t2.clone(), None),
            (b'C', false, t2.clone(), None),
            (b'J', false, Some(b"ORD9          ".to_vec()), None),
        ]
    );
}

#[test]
fn ouch42_responses_carry_their_own_fields() {
    let executed = o42::Message::Executed {
        timestamp_ns: 1,
        token: b"T1",
        executed_shares: 100,
        execution_price: 12_3400,
        liquidity_flag: b'R',
        match_number: 987,
    };
    let b = encode::ouch42_message(&executed);
    assert_eq!(b.len(), o42::size::EXECUTED);
    assert_eq!(&b[23..27], &100u32.to_be_bytes(), "executed shares");
    assert_eq!(&b[32..40], &987u64.to_be_bytes(), "match number");
    let aiq = o42::Message::AiqCanceled {
        timestamp_ns: 2,
        token: b"T2",
        decrement_shares: 5,
        reason: b'Q',
        quantity_prevented_from_trading: 6,
        execution_price: 7,
        liquidity_flag: b'A',
    };
    let others = [
        aiq,
        o42::Message::BrokenTrade {
            timestamp_ns: 3,
            token: b"T3",
            match_number: 8,
            reason: b'E',
        },
        o42::Message::PriceCorrection {
            timestamp_ns: 4,
            token: b"T4",
            match_number: 9,
            new_execution_price: 10,
            reason: b'C',
        },
        o42::Message::CancelPending {
            timestamp_ns: 5,
            token: b"T5",
        },
        o42::Message::CancelReject {
            timestamp_ns: 6,
            token: b"T6",
        },
        o42::Message::OrderModified {
            timestamp_ns: 7,
            token: b"T7",
            side: b'B',
            shares: 11,
        },
    ];
    let sizes = [37, 32, 36, 23, 23, 28];
    for (m, size) in others.iter().zip(sizes) {
        let b = encode::ouch42_message(m);
        assert_eq!(b.len(), size, "{m:?}");
        let back = o42::decode_response(&b).expect("reads");
        assert_eq!(encode::ouch42_message(&back), b);
        assert_eq!(back.token().map(soupbin::trim_spaces), m.token());
    }
    let Ok(o42::Message::AiqCanceled { reason, .. }) =
        o42::decode_response(&encode::ouch42_message(&aiq))
    else {
        panic!("AIQ canceled")
    };
    assert_eq!(reason, b'Q');
    // A type the reader does not take apart is kept whole.
    assert_eq!(
        o42::decode_response(b"Gxyz"),
        Ok(o42::Message::Other {
            message_type: b'G',
            bytes: b"Gxyz"
        })
    );
}

/// An OUCH 5.0 Accepted laid out field by field, with `appendage`.
fn accepted50_by_hand(appendage: &[u8]) -> Vec<u8> {
    let mut b = vec![b'A'];
    b.extend_from_slice(&34_200_000_000_123u64.to_be_bytes());
    b.extend_from_slice(&1001u32.to_be_bytes());
    b.push(b'S');
    b.extend_from_slice(&500u32.to_be_bytes());
    b.extend_from_slice(b"MSFT    ");
    b.extend_from_slice(&4_123_400u64.to_be_bytes());
    b.extend_from_slice(b"0Y");
    b.extend_from_slice(&88_000_002u64.to_be_bytes());
    b.extend_from_slice(b"PNNL");
    b.extend_from_slice(b"CL-0001       ");
    b.extend_from_slice(&(appendage.len() as u16).to_be_bytes());
    b.extend_from_slice(appendage);
    b
}

#[test]
fn an_ouch50_accepted_reads_at_the_specs_offsets_with_its_appendage() {
    let bytes = accepted50_by_hand(APPENDAGE);
    assert_eq!(bytes.len(), o50::size::ACCEPTED + APPENDAGE.len());
    let Ok(o50::Message::Accepted(a)) = o50::decode_response(&bytes) else {
        panic!("not accepted");
    };
    assert_eq!((a.timestamp_ns, a.user_ref_num), (34_200_000_000_123, 1001));
    assert_eq!((a.side, a.quantity, a.price), (b'S', 500, 4_123_400));
    assert_eq!(
        (a.order_reference_number, a.order_state),
        (88_000_002, b'L')
    );
    assert_eq!(a.cl_ord_id, b"CL-0001       ");
    let elements: Vec<(u8, &[u8])> = a.appendage.elements().collect();
    assert_eq!(elements, [(2, &b"FRM1"[..]), (3, &[0, 0, 0, 100][..])]);
    assert!(a.appendage.well_formed());
    let mine = samples::accepted50(1001, APPENDAGE);
    assert_eq!(encode::ouch50_message(&o50::Message::Accepted(mine)), bytes);
}

#[test]
fn every_ouch50_sample_reads_back_to_its_bytes_with_its_keys() {
    let mut seen = Vec::new();
    for packets in [samples::client50(), samples::host50()] {
        for p in packets {
            let packet = soupbin::decode(&p).expect("a packet");
            let Some(message) = o50::decode(&packet) else {
                continue;
            };
            let message = message.expect("a message");
            assert_eq!(encode::ouch50_packet(&message), p, "{message:?}");
            seen.push((
                p[3],
                packet.packet_type(),
                message.user_ref_num(),
                message.orig_user_ref_num(),
            ));
        }
    }
    assert_eq!(
        seen,
        [
            (b'O', b'U', Some(1001), None),
            (b'O', b'U', Some(1002), None),
            (b'U', b'U', Some(1003), Some(1001)),
            (b'X', b'U', Some(1003), None),
            (b'A', b'S', Some(1001), None),
            (b'A', b'S', Some(1002), None),
            (b'U', b'S', Some(1003), Some(1001)),
            (b'E', b'S', Some(1003), None),
            (b'J', b'S', Some(1004), None),
        ]
    );
}

#[test]
fn ouch50_fixed_size_responses_round_trip() {
    let messages = [
        o50::Message::Canceled {
            timestamp_ns: 1,
            user_ref_num: 2,
            quantity: 3,
            reason: b'I',
        },
        o50::Message::AiqCanceled {
            timestamp_ns: 1,
            user_ref_num: 2,
            decrement_shares: 3,
            reason: b'Q',
            quantity_prevented_from_trading: 4,
            execution_price: 5,
            liquidity_flag: b'A',
        },
        o50::Message::BrokenTrade {
            timestamp_ns: 1,
            user_ref_num: 2,
            match_number: 3,
            reason: b'E',
            cl_ord_id: b"CL-9          ",
        },
        o50::Message::CancelPending {
            timestamp_ns: 1,
            user_ref_num: 2,
        },
        o50::Message::CancelReject {
            timestamp_ns: 1,
            user_ref_num: 2,
        },
        o50::Message::OrderModified {
            timestamp_ns: 1,
            user_ref_num: 2,
            side: b'B',
            quantity: 3,
        },
        o50::Message::SystemEvent {
            timestamp_ns: 1,
            event_code: b'E',
        },
    ];
    let sizes = [18, 31, 36, 13, 13, 18, 10];
    for (m, size) in messages.iter().zip(sizes) {
        let b = encode::ouch50_message(m);
        assert_eq!(b.len(), size, "{m:?}");
        assert_eq!(o50::decode_response(&b), Ok(*m));
    }
    let modify = o50::Message::ModifyOrder {
        user_ref_num: 7,
        side: b'S',
        quantity: 8,
    };
    let b = encode::ouch50_message(&modify);
    assert_eq!(b.len(), o50::size::MODIFY_ORDER);
    assert_eq!(o50::decode_request(&b), Ok(modify));
}
