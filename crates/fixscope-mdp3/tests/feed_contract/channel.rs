//! Epochs, RptSeq gaps, microbursts and feed latency of one channel.

use fixscope_mdp3::feed::Class;
use fixscope_mdp3::{encode, ChannelTracker};

use super::faults::assert_every_count_adds_up;
use super::samples;

const T0: u64 = 1_700_000_000_000_000_000;

fn book(seq: u32, sent: u64, entries: &[(i32, u32)]) -> Vec<u8> {
    encode::packet(seq, sent, &[&samples::book(entries)])
}

fn reset(seq: u32, sent: u64) -> Vec<u8> {
    encode::packet(seq, sent, &[&encode::channel_reset(sent, 310)])
}

fn feed(t: &mut ChannelTracker, d: &[u8], capture_ns: u64) -> (Class, bool) {
    let o = t.on_datagram(d, capture_ns, |_| {});
    (o.class, o.new_epoch)
}

#[test]
fn a_channel_reset_is_a_new_epoch_never_a_gap_and_the_other_feeds_copies_are_not() {
    let mut t = ChannelTracker::default();
    assert_eq!(
        feed(&mut t, &book(100, T0 + 1, &[(1, 50)]), 1),
        (Class::New, false)
    );
    assert_eq!(
        feed(&mut t, &book(101, T0 + 2, &[(1, 51)]), 2),
        (Class::New, false)
    );
    // 102 lost; the reset restarts MsgSeqNum at 1 (and RptSeq with it).
    assert_eq!(feed(&mut t, &reset(1, T0 + 10), 10), (Class::New, true));
    assert_eq!(
        feed(&mut t, &book(2, T0 + 11, &[(1, 1)]), 11),
        (Class::New, false)
    );
    // B's copies: of the reset (a duplicate), of 101 (an earlier epoch's).
    assert_eq!(
        feed(&mut t, &reset(1, T0 + 10), 12),
        (Class::Duplicate, false)
    );
    assert_eq!(
        feed(&mut t, &book(101, T0 + 2, &[(1, 51)]), 13),
        (Class::PreviousEpoch, false)
    );
    // A reset that keeps the numbering: still an epoch, no gap even if it skips.
    assert_eq!(feed(&mut t, &reset(5, T0 + 20), 20), (Class::New, true));
    assert_eq!(
        feed(&mut t, &book(6, T0 + 21, &[(1, 1)]), 21),
        (Class::New, false)
    );
    let c = t.counters();
    assert_eq!(
        (
            c.mdp3_epochs,
            c.mdp3_gaps,
            c.mdp3_channel_resets,
            c.mdp3_rptseq_gaps
        ),
        (2, 0, 2, 0)
    );
    assert_eq!(
        (c.mdp3_duplicate_packets, c.mdp3_previous_epoch_packets),
        (1, 1)
    );
    assert_eq!(t.missing_packets(), 0);
    assert_every_count_adds_up(c);
}

#[test]
fn the_weekly_restart_at_1_is_an_epoch_and_a_repeat_of_packet_1_is_not() {
    let mut t = ChannelTracker::default();
    feed(&mut t, &book(1, T0, &[(1, 1)]), 1);
    feed(&mut t, &book(2, T0 + 1, &[(1, 2)]), 2);
    assert_eq!(
        feed(&mut t, &book(1, T0, &[(1, 1)]), 3),
        (Class::Duplicate, false)
    );
    // 4 ahead: 3 missing, then the restart.
    feed(&mut t, &book(4, T0 + 3, &[(1, 4)]), 4);
    assert_eq!(t.missing_packets(), 1);
    assert_eq!(
        feed(&mut t, &book(1, T0 + 1000, &[(1, 1)]), 5),
        (Class::New, true)
    );
    let c = t.counters();
    assert_eq!(
        (
            c.mdp3_epochs,
            c.mdp3_gap_packets_abandoned,
            c.mdp3_rptseq_gaps
        ),
        (1, 1, 1)
    );
    assert_eq!(t.missing_packets(), 0);
    // Without a SendingTime a restart cannot be told from a repeat: a duplicate.
    assert_eq!(
        feed(&mut t, &book(1, 0, &[(1, 1)]), 6),
        (Class::Duplicate, false)
    );
}

#[test]
fn a_lost_packet_costs_the_instruments_it_carried_and_a_late_one_gives_them_back() {
    let mut t = ChannelTracker::default();
    feed(&mut t, &book(1, T0, &[(7, 10), (8, 3)]), 1);
    // Packet 2 (7's RptSeq 11, 9's 1) arrives after 3 and 4.
    feed(&mut t, &book(3, T0 + 2, &[(7, 12), (9, 2)]), 3);
    feed(&mut t, &book(4, T0 + 3, &[(8, 4)]), 4);
    assert_eq!(t.instrument_gaps(7), [(11, 11)]);
    assert_eq!(t.instrument_gaps(9), []);
    let mut missing: Vec<_> = t.instruments_missing().collect();
    missing.sort();
    assert_eq!(missing, [(7, 1)]);
    assert_eq!(
        feed(&mut t, &book(2, T0 + 1, &[(7, 11), (9, 1)]), 5),
        (Class::Recovered, false)
    );
    assert_eq!(t.instruments_missing().count(), 0);
    let c = t.counters();
    // 9's RptSeq 1 arrived after its 2: below its first sight, no hole between.
    assert_eq!(
        (
            c.mdp3_rptseq_gaps,
            c.mdp3_rptseq_recovered_updates,
            c.mdp3_rptseq_gap_instruments
        ),
        (1, 1, 1)
    );
    assert_eq!((c.mdp3_gaps, c.mdp3_recovered_packets), (1, 1));
}

#[test]
fn feed_latency_is_the_raw_difference_and_the_peak_counts_1ms_windows() {
    let mut t = ChannelTracker::default();
    let o = t.on_datagram(&book(1, T0 + 5_000, &[(1, 1)]), T0 + 2_000, |_| {});
    let l = o.latency.expect("a SendingTime");
    assert_eq!(
        (l.sending_time_ns, l.capture_minus_sending_ns),
        (T0 + 5_000, -3_000)
    );
    let o = t.on_datagram(&book(2, 0, &[(1, 2)]), T0 + 3_000, |_| {});
    assert_eq!(o.latency, None);
    for i in 0..5u32 {
        t.on_datagram(
            &book(3 + i, T0, &[(2, 1 + i)]),
            T0 + 2_000_000 + u64::from(i),
            |_| {},
        );
    }
    let c = t.counters();
    assert_eq!(
        (c.mdp3_sending_time_absent, c.mdp3_peak_messages_per_ms),
        (1, 5)
    );
}
