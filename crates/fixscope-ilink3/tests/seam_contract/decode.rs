//! The decoders against the encoder and the schema's rules: every template read decodes
//! what was written; a root block longer than the schema's (a later version) decodes the
//! same, a shorter one lacks the fields past its end; sinceVersion is honoured.

use fixscope_ilink3::encode::{self, Builder};
use fixscope_ilink3::messages::Message;
use fixscope_ilink3::sbe::{self, DecodeError};
use fixscope_ilink3::{decode, schema};

use crate::samples::{self, report, UUID};

#[test]
fn the_framing_header_is_little_endian_and_counts_itself() {
    let f = samples::nos(1, 1001);
    let len = f.len() as u16;
    assert_eq!(
        &f[..2],
        &len.to_le_bytes(),
        "Message Length includes the SOFH"
    );
    assert_eq!(&f[2..4], &[0xFE, 0xCA], "0xCAFE little-endian");
    let h = sbe::header(&f).unwrap();
    assert_eq!(
        (h.block_length, h.template_id, h.schema_id, h.version),
        (132, 514, 8, 8)
    );
    // CME's published offsets (research notes, OMI layouts): the generated ones agree.
    assert_eq!(schema::new_order_single_514::SEQ_NUM.offset, 17);
    assert_eq!(schema::new_order_single_514::SENDING_TIME_EPOCH.offset, 77);
    assert_eq!(
        schema::execution_report_new_522::SENDING_TIME_EPOCH.offset,
        132
    );
}

#[test]
fn every_request_and_report_decodes_what_was_written() {
    let r = samples::request(7, 1001, None);
    assert_eq!(
        decode(&encode::new_order(&r)).unwrap(),
        Message::NewOrder(r)
    );
    let r = samples::request(8, 1002, Some(7001));
    assert_eq!(decode(&encode::replace(&r)).unwrap(), Message::Replace(r));
    let frame = samples::cancel(9, 1003, 7001);
    let cancel = decode(&frame).unwrap();
    let Message::Cancel(c) = cancel else {
        panic!("{cancel:?}")
    };
    assert_eq!(
        (c.seq_num, c.order_request_id, c.order_id),
        (9, 1003, Some(7001))
    );
    assert_eq!((c.price, c.order_qty), (None, None), "a cancel has neither");
    // Every report template of the host sample: the fields every one has.
    for t in samples::host_stream() {
        if let Message::Report(r) = decode(&t).unwrap() {
            let sent = report(r.template_id, r.seq_num, None, 7001, 0).sending_time_ns;
            assert_eq!(r.uuid, UUID, "{}", r.template_id);
            assert_eq!(r.cl_ord_id, b"CL-0001", "{}", r.template_id);
            assert_eq!(r.order_id, Some(7001), "{}", r.template_id);
            assert_eq!(r.sending_time_ns, sent, "{}", r.template_id);
        }
    }
    let trade = report(
        schema::execution_report_trade_outright_525::ID,
        4,
        Some(1001),
        7001,
        3,
    );
    let frame = encode::report(&trade);
    let Message::Report(got) = decode(&frame).unwrap() else {
        panic!()
    };
    assert_eq!(got, trade, "a trade report has every field of the sample");
    let leg = report(
        schema::execution_report_trade_spread_leg_527::ID,
        5,
        Some(1),
        7001,
        3,
    );
    let frame = encode::report(&leg);
    let Message::Report(got) = decode(&frame).unwrap() else {
        panic!()
    };
    assert_eq!(got.order_request_id, None, "527 has no OrderRequestID");
    assert_eq!(got.leaves_qty, None, "nor LeavesQty");
}

#[test]
fn a_longer_block_is_a_later_version_and_decodes_the_same() {
    let r = samples::request(7, 1001, None);
    let schema_len = usize::from(schema::new_order_single_514::BLOCK_LENGTH);
    let longer = encode::request_builder(514, &r)
        .block_length(schema_len + 24)
        .version(9)
        .finish();
    assert_eq!(
        sbe::header(&longer).unwrap().block_length as usize,
        schema_len + 24
    );
    assert_eq!(decode(&longer).unwrap(), Message::NewOrder(r));
    let t = report(
        schema::execution_report_trade_outright_525::ID,
        4,
        Some(1001),
        7001,
        3,
    );
    let longer = encode::report_builder(&t).block_length(400).finish();
    assert_eq!(decode(&longer).unwrap(), Message::Report(t));
}

#[test]
fn a_shorter_block_lacks_the_fields_past_its_end() {
    use schema::execution_report_new_522 as m;
    let r = report(m::ID, 1, Some(1001), 7001, 10);
    let cut = encode::report_builder(&r)
        .block_length(m::SENDING_TIME_EPOCH.offset + 4)
        .finish();
    let Message::Report(got) = decode(&cut).unwrap() else {
        panic!()
    };
    assert_eq!(got.sending_time_ns, None, "cut inside SendingTimeEpoch");
    assert_eq!(got.transact_time_ns, r.transact_time_ns, "before the cut");
    assert_eq!(got.order_request_id, None, "after the cut");
    let cut = encode::report_builder(&r).block_length(3).finish();
    assert_eq!(
        decode(&cut),
        Err(DecodeError::MissingField {
            template_id: 522,
            field: "SeqNum"
        })
    );
}

#[test]
fn a_field_is_absent_below_the_version_that_appended_it() {
    use schema::execution_report_new_522 as m;
    assert_eq!(m::DELAY_TO_TIME.since_version, 4);
    let r = fixscope_ilink3::messages::Report {
        delay_to_time_ns: Some(250),
        ..report(m::ID, 1, Some(1001), 7001, 10)
    };
    let frame = encode::report_builder(&r).version(4).finish();
    let Message::Report(v4) = decode(&frame).unwrap() else {
        panic!()
    };
    assert_eq!(v4.delay_to_time_ns, Some(250));
    let frame = encode::report_builder(&r).version(3).finish();
    let Message::Report(v3) = decode(&frame).unwrap() else {
        panic!()
    };
    assert_eq!(v3.delay_to_time_ns, None);
    assert_eq!(v3.seq_num, 1, "fields of every version stay");
}

#[test]
fn session_messages_decode_and_other_templates_are_named_not_read() {
    let frame = encode::establish(UUID, b"FRM01", 5, 17);
    let Message::Establish(e) = decode(&frame).unwrap() else {
        panic!()
    };
    assert_eq!(
        (e.uuid, e.firm, e.next_seq_no),
        (UUID, &b"FRM01"[..], Some(17))
    );
    let frame = encode::retransmit_request(UUID, None, 9, 3, 4);
    let m = decode(&frame).unwrap();
    let Message::RetransmitRequest(s) = m else {
        panic!()
    };
    assert_eq!(
        (s.last_uuid, s.from_seq_no, s.msg_count),
        (None, Some(3), Some(4))
    );
    // MassQuote517 (client, not read); PartyDetailsDefinitionRequestAck519 (CME, numbered).
    assert_eq!(
        decode(&Builder::new(517).finish()).unwrap(),
        Message::Other {
            template_id: 517,
            numbered: None
        }
    );
    let ack519 = Builder::new(519)
        .put(
            schema::SEQUENCED
                .iter()
                .find(|s| s.id == 519)
                .unwrap()
                .seq_num,
            12,
        )
        .finish();
    let Message::Other {
        numbered: Some(n), ..
    } = decode(&ack519).unwrap()
    else {
        panic!()
    };
    assert_eq!(n.seq_num, 12);
}

#[test]
fn bad_headers_are_errors() {
    let good = samples::nos(1, 1001);
    let mut schema9 = good.clone();
    schema9[8] = 9;
    assert_eq!(decode(&schema9), Err(DecodeError::Schema(9)));
    let mut enc = good.clone();
    enc[2] = 0;
    assert!(matches!(decode(&enc), Err(DecodeError::Encoding(_))));
    assert!(matches!(
        decode(&good[..20]),
        Err(DecodeError::LengthMismatch { .. })
    ));
    assert!(matches!(
        decode(&good[..5]),
        Err(DecodeError::Truncated { .. })
    ));
    let mut unknown = good.clone();
    unknown[6..8].copy_from_slice(&999u16.to_le_bytes());
    assert_eq!(decode(&unknown), Err(DecodeError::UnknownTemplate(999)));
    let mut long_block = good.clone();
    long_block[4..6].copy_from_slice(&500u16.to_le_bytes());
    assert!(matches!(
        decode(&long_block),
        Err(DecodeError::BlockLength { .. })
    ));
}
