//! Every template read, through the encoder and the decoder; versions by block length.

use fixscope_mdp3::encode::{self, MessageBuilder};
use fixscope_mdp3::messages::{self, OrderEntry, VolumeEntry};
use fixscope_mdp3::sbe::DecodeError;
use fixscope_mdp3::{decode, packet, schema, Message};

use super::samples::{book_entry, trade_entry};

#[test]
fn each_template_read_decodes_what_was_encoded() {
    let entries = [book_entry(11, 5, Some(-3)), book_entry(12, 1, None)];
    let bytes_b = encode::book_builder(9, 0x84, &entries, &[1, 2]).finish();
    let Message::Book(b) = decode(&bytes_b).unwrap() else {
        panic!("a book")
    };
    assert_eq!(
        (
            b.transact_time_ns,
            b.match_event_indicator,
            b.order_id_entries
        ),
        (9, 0x84, 2)
    );
    assert_eq!(b.entries.len(), 2);
    assert_eq!(b.entries.collect::<Vec<_>>(), entries);
    let trades = [trade_entry(11, 6), trade_entry(13, 2)];
    let bytes_t = encode::trade_summary(8, &trades);
    let Message::TradeSummary(t) = decode(&bytes_t).unwrap() else {
        panic!("a trade summary")
    };
    assert_eq!(t.entries.collect::<Vec<_>>(), trades);
    let orders = [OrderEntry {
        order_id: Some(77),
        md_order_priority: None,
        md_entry_px: Some(12),
        md_display_qty: Some(4),
        security_id: 11,
        md_update_action: 1,
        md_entry_type: b'1',
    }];
    let bytes_o = encode::order_book(7, &orders);
    let Message::OrderBook(o) = decode(&bytes_o).unwrap() else {
        panic!()
    };
    assert_eq!(o.entries.collect::<Vec<_>>(), orders);
    let vols = [VolumeEntry {
        md_entry_size: 500,
        security_id: 11,
        rpt_seq: 7,
        md_update_action: 0,
    }];
    let bytes_v = encode::volume(6, &vols);
    let Message::Volume(v) = decode(&bytes_v).unwrap() else {
        panic!()
    };
    assert_eq!(v.entries.collect::<Vec<_>>(), vols);
    let bytes_s = encode::security_status(5, b"ES", None, 17);
    let Message::SecurityStatus(s) = decode(&bytes_s).unwrap() else {
        panic!()
    };
    assert_eq!(
        (s.security_group, s.security_id, s.security_trading_status),
        (&b"ES"[..], None, Some(17))
    );
    let bytes_r = encode::channel_reset(4, 310);
    let Message::ChannelReset(r) = decode(&bytes_r).unwrap() else {
        panic!()
    };
    assert_eq!(
        (r.transact_time_ns, r.appl_ids.collect::<Vec<_>>()),
        (4, vec![Some(310)])
    );
    assert!(matches!(
        decode(&encode::heartbeat()).unwrap(),
        Message::Heartbeat
    ));
    let bytes_d = encode::instrument_definition_future(11, b"ESZ6", b"ES");
    let Message::InstrumentDefinition(d) = decode(&bytes_d).unwrap() else {
        panic!()
    };
    assert_eq!(
        (d.template_id, d.security_id, d.symbol, d.security_group),
        (54, 11, &b"ESZ6"[..], &b"ES"[..])
    );
    let bytes_f = encode::snapshot_full_refresh(99, 11, 5, 3);
    let Message::SnapshotFullRefresh(f) = decode(&bytes_f).unwrap() else {
        panic!()
    };
    assert_eq!(
        (
            f.last_msg_seq_num_processed,
            f.security_id,
            f.rpt_seq,
            f.entries
        ),
        (99, 11, 5, 0)
    );
    // A template the crate does not decode, and one the schema does not know.
    let other = MessageBuilder::new(schema::md_incremental_refresh_book_46::ID + 3, &[]).finish();
    assert!(matches!(
        decode(&other).unwrap(),
        Message::Other { template_id: 49 }
    ));
    let unknown = MessageBuilder::new(999, &[]).block_length(4).finish();
    assert!(matches!(
        decode(&unknown).unwrap(),
        Message::Other { template_id: 999 }
    ));
}

#[test]
fn later_versions_longer_blocks_and_appended_groups_are_skipped_earlier_ones_read_what_they_hold() {
    use schema::md_incremental_refresh_book_46 as m;
    let entries = [book_entry(11, 5, Some(1)), book_entry(12, 2, Some(2))];
    let later = encode::book_builder(1, 0, &entries, &[3])
        .block_length(40)
        .group_block_length(m::no_md_entries::INDEX, 48)
        .trailing(&[9; 13])
        .finish();
    let Message::Book(b) = decode(&later).unwrap() else {
        panic!()
    };
    assert_eq!((b.entries.block_length(), b.order_id_entries), (48, 1));
    assert_eq!(b.entries.collect::<Vec<_>>(), entries);
    // Entries too short for RptSeq: an error, not a guess.
    let short = encode::book_builder(1, 0, &entries, &[])
        .group_block_length(m::no_md_entries::INDEX, 18)
        .finish();
    assert!(matches!(
        decode(&short),
        Err(DecodeError::GroupBlockLength {
            field: "RptSeq",
            ..
        })
    ));
    // ChannelReset's ApplID came in version 3.
    let v2 = encode::channel_reset(1, 310);
    let mut v2 = v2;
    v2[8..10].copy_from_slice(&2u16.to_le_bytes());
    let Message::ChannelReset(r) = decode(&v2).unwrap() else {
        panic!()
    };
    assert_eq!(r.appl_ids.collect::<Vec<_>>(), vec![None]);
    // A root block too short for TransactTime.
    let cut = encode::book_builder(1, 0, &[], &[])
        .block_length(4)
        .finish();
    assert!(matches!(
        decode(&cut),
        Err(DecodeError::MissingField {
            template_id: 46,
            ..
        })
    ));
}

#[test]
fn rpt_seq_is_read_from_every_template_the_schema_gives_it_to() {
    use schema::md_incremental_refresh_book_46 as m;
    let b = encode::book(1, &[book_entry(11, 5, Some(1)), book_entry(12, 9, None)]);
    let u: Vec<_> = messages::rpt_seq_updates(&b).unwrap().unwrap().collect();
    assert_eq!(u, [(11, 5), (12, 9)]);
    // Daily statistics (49), not decoded by the crate: its layout from the schema table.
    let l = schema::rpt_seq_layout(49).expect("49 carries RptSeq");
    let stats = MessageBuilder::new(49, std::slice::from_ref(&l.group))
        .entry(0, |e| {
            e.put_signed(l.security_id, 11).put(l.rpt_seq, 6);
        })
        .finish();
    let u: Vec<_> = messages::rpt_seq_updates(&stats)
        .unwrap()
        .unwrap()
        .collect();
    assert_eq!(u, [(11, 6)]);
    assert!(messages::rpt_seq_updates(&encode::heartbeat())
        .unwrap()
        .is_none());
    assert!(messages::rpt_seq_updates(&encode::order_book(1, &[]))
        .unwrap()
        .is_none());
    assert_eq!(
        m::no_md_entries::GROUP,
        schema::rpt_seq_layout(46).unwrap().group
    );
}

#[test]
fn a_packet_carries_its_header_and_messages() {
    let d = encode::packet(
        42,
        1_700_000_000_123_456_789,
        &[&encode::heartbeat(), &encode::book(1, &[])],
    );
    let p = packet::parse(&d).unwrap();
    assert_eq!(
        (p.header.msg_seq_num, p.header.sending_time()),
        (42, Some(1_700_000_000_123_456_789))
    );
    let ids: Vec<_> = p
        .messages()
        .map(|m| fixscope_mdp3::sbe::header(m).unwrap().template_id)
        .collect();
    assert_eq!(ids, [12, 46]);
}
