//! Datagrams broken on purpose, each counted where the counters say: a packet cut short,
//! a MsgSize past the datagram, a corrupt SBE header, a group running past its message,
//! MsgSeqNum at the top of its range and wrapping, an instrument never defined.

use fixscope_mdp3::feed::Class;
use fixscope_mdp3::packet::{self, PacketError};
use fixscope_mdp3::sbe::DecodeError;
use fixscope_mdp3::{decode, encode, schema, ChannelTracker, Instruments, Mdp3Counters};

use super::faults::assert_every_count_adds_up;
use super::samples;

const T0: u64 = 1_700_000_000_000_000_000;

fn book(seq: u32, sent: u64, entries: &[(i32, u32)]) -> Vec<u8> {
    encode::packet(seq, sent, &[&samples::book(entries)])
}

fn class(t: &mut ChannelTracker, d: &[u8], capture_ns: u64) -> Class {
    t.on_datagram(d, capture_ns, |_| {}).class
}

/// Each datagram cut at every length short of whole (and the MsgSize pointing past the
/// end) is rejected whole — none of its messages counted — and its MsgSeqNum shows as
/// the gap the next whole packet reveals, until a good copy fills it.
#[test]
fn a_packet_cut_short_or_sized_past_its_end_is_rejected_whole_and_shows_as_a_gap() {
    let good = encode::packet(
        2,
        T0 + 2,
        &[&samples::book(&[(1, 2)]), &encode::heartbeat()],
    );
    let first_message = packet::PACKET_HEADER_LEN + usize::from(good[12]);
    for cut in 0..good.len() {
        if cut == packet::PACKET_HEADER_LEN || cut == first_message {
            continue; // a whole packet of fewer messages
        }
        let mut t = ChannelTracker::default();
        class(&mut t, &book(1, T0 + 1, &[(1, 1)]), 1);
        let c = class(&mut t, &good[..cut], 2);
        assert!(matches!(c, Class::Undecodable(_)), "cut at {cut}: {c:?}");
        let o = t.on_datagram(&book(3, T0 + 3, &[(1, 3)]), 3, |_| {});
        assert_eq!(
            o.gap.map(|g| (g.first, g.last)),
            Some((2, 2)),
            "cut at {cut}"
        );
        assert_eq!(class(&mut t, &good, 4), Class::Recovered);
        let c = t.counters();
        assert_eq!(
            (c.mdp3_undecodable_packets, c.mdp3_messages),
            (1, 4),
            "{cut}"
        );
        assert_eq!(t.missing_packets(), 0);
        assert_every_count_adds_up(c);
    }
    let mut past = good.clone();
    past[12..14].copy_from_slice(&(good.len() as u16).to_le_bytes());
    assert!(matches!(
        packet::parse(&past),
        Err(PacketError::MessageOverrun { at: 12, .. })
    ));
}

/// A message whose SBE header names another schema, whose BlockLength is shorter than
/// its template's root (a required field cut) or runs past it, or whose group says more
/// entries than it holds: counted `mdp3_undecodable_messages`, its packet still new and
/// its other messages read.
#[test]
fn a_corrupt_sbe_header_or_group_is_an_undecodable_message_in_a_good_packet() {
    use schema::md_incremental_refresh_book_46 as m;
    let good = samples::book(&[(1, 1), (2, 1)]);
    let mut other_schema = good.clone();
    other_schema[6..8].copy_from_slice(&2u16.to_le_bytes());
    let short_root = encode::book_builder(T0, 0x80, &[samples::book_entry(1, 1, None)], &[])
        .block_length(4)
        .finish();
    let mut long_root = good.clone();
    long_root[2..4].copy_from_slice(&u16::MAX.to_le_bytes());
    let mut group_past = good.clone();
    let dim = m::no_md_entries::GROUP.dimension;
    let at = 10 + usize::from(m::BLOCK_LENGTH) + dim.num_in_group.offset;
    group_past[at] = 3;
    let expected = [
        ("schema", &other_schema, DecodeError::Schema(2)),
        (
            "short root",
            &short_root,
            DecodeError::MissingField {
                template_id: m::ID,
                field: "TransactTime",
            },
        ),
    ];
    for (what, m, e) in expected {
        assert_eq!(decode(m).map(|_| ()), Err(e), "{what}");
    }
    assert!(matches!(
        decode(&long_root),
        Err(DecodeError::BlockLength { .. })
    ));
    assert!(matches!(
        decode(&group_past),
        Err(DecodeError::GroupOverrun {
            group: "NoMDEntries",
            ..
        })
    ));
    let mut t = ChannelTracker::default();
    let broken = [&other_schema, &short_root, &long_root, &group_past];
    for (i, b) in broken.iter().enumerate() {
        let d = encode::packet(i as u32 + 1, T0 + i as u64, &[b, &encode::heartbeat()]);
        let mut read = Vec::new();
        let o = t.on_datagram(&d, i as u64, |m| read.push(m.message.is_ok()));
        assert_eq!((o.class, read), (Class::New, vec![false, true]), "{i}");
    }
    let c = t.counters();
    assert_eq!(
        (
            c.mdp3_undecodable_messages,
            c.mdp3_heartbeats,
            c.mdp3_rptseq_updates
        ),
        (4, 4, 0)
    );
    assert_every_count_adds_up(c);
}

/// MsgSeqNum at u32::MAX, then a copy of it (a duplicate, not a second new packet), then
/// the numbering wrapping to 0 and 1 with a later SendingTime: 1 starts a new epoch (as
/// CME's weekly reset does), 0 is no packet CME sends and reads as a duplicate.
#[test]
fn msg_seq_num_at_its_largest_then_a_copy_then_a_wrap() {
    let mut t = ChannelTracker::default();
    let top = book(u32::MAX - 1, T0, &[(1, 1)]);
    let last = book(u32::MAX, T0 + 1, &[(1, 2)]);
    assert_eq!(class(&mut t, &top, 1), Class::New);
    assert_eq!(class(&mut t, &last, 2), Class::New);
    assert_eq!(
        class(&mut t, &last, 3),
        Class::Duplicate,
        "a copy of the last"
    );
    assert_eq!(class(&mut t, &top, 4), Class::Duplicate);
    assert_eq!(
        class(&mut t, &book(0, T0 + 10, &[(1, 3)]), 5),
        Class::Duplicate
    );
    let o = t.on_datagram(&book(1, T0 + 11, &[(1, 1)]), 6, |_| {});
    assert_eq!((o.class, o.new_epoch, o.gap), (Class::New, true, None));
    let c = t.counters();
    assert_eq!(
        (c.mdp3_new_packets, c.mdp3_duplicate_packets, c.mdp3_epochs),
        (3, 3, 1)
    );
    assert_eq!(
        (c.mdp3_gaps, c.mdp3_rptseq_updates),
        (0, 3),
        "copies are not read"
    );
    assert_every_count_adds_up(c);
}

/// An instrument's RptSeq at u32::MAX and a copy of that update: a duplicate update.
#[test]
fn rpt_seq_at_its_largest_then_a_copy_is_a_duplicate_update() {
    let mut t = ChannelTracker::default();
    class(&mut t, &book(1, T0, &[(1, u32::MAX - 1)]), 1);
    class(&mut t, &book(2, T0 + 1, &[(1, u32::MAX)]), 2);
    class(&mut t, &book(3, T0 + 2, &[(1, u32::MAX)]), 3);
    let c: Mdp3Counters = *t.counters();
    assert_eq!(
        (c.mdp3_rptseq_updates, c.mdp3_rptseq_duplicate_updates),
        (3, 1)
    );
    assert_eq!(c.mdp3_rptseq_gaps, 0);
}

/// Updates of an instrument no definition named are tracked all the same (its RptSeq,
/// its gaps) and have no symbol until a definition comes; a deletion forgets it again.
/// (No counter says how many updates named an undefined instrument: the assertion is on
/// the instruments map.)
#[test]
fn an_instrument_never_defined_is_tracked_and_has_no_symbol() {
    let mut t = ChannelTracker::default();
    let mut instruments = Instruments::new();
    let mut learn = |t: &mut ChannelTracker, d: &[u8]| {
        t.on_datagram(d, 1, |m| {
            if let Ok(m) = m.message {
                instruments.learn(&m);
            }
        });
    };
    learn(&mut t, &book(1, T0, &[(77, 1)]));
    learn(&mut t, &book(2, T0 + 1, &[(77, 3)]));
    assert_eq!(t.instrument_gaps(77), vec![(2, 2)]);
    assert_eq!(t.counters().mdp3_rptseq_gaps, 1);
    let def = encode::instrument_definition_future(77, b"ESZ6", b"ES");
    learn(&mut t, &encode::packet(3, T0 + 2, &[&def]));
    assert_eq!(instruments.symbol(77), Some("ESZ6"));
    assert_eq!(instruments.symbol(78), None);
    assert_eq!(t.counters().mdp3_instrument_definitions, 1);
}
