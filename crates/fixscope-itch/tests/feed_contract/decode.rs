//! Every ITCH 5.0 type through the encoder and back: the fields read whole come back as
//! written, at the spec's sizes, and a byte more or less is refused.

use super::samples;
use fixscope_itch::encode;
use fixscope_itch::itch50::{self, ItchError, Message};

#[test]
fn every_type_read_whole_round_trips_at_its_size() {
    for m in samples::every_read_type() {
        let bytes = encode::message(&m);
        let t = m.header().message_type;
        assert_eq!(
            Some(bytes.len()),
            itch50::expected_size(t),
            "{}",
            char::from(t)
        );
        assert_eq!(itch50::decode(&bytes), Ok(m));
    }
}

#[test]
fn the_other_types_are_read_to_their_header_at_their_size() {
    for &t in samples::OTHER_TYPES {
        let m = Message::Other {
            header: samples::header(t, 9, samples::OPEN),
        };
        let bytes = encode::message(&m);
        assert_eq!(Some(bytes.len()), itch50::expected_size(t));
        assert_eq!(itch50::decode(&bytes), Ok(m), "{}", char::from(t));
    }
}

#[test]
fn one_byte_more_or_less_is_refused_for_every_type() {
    let all = samples::every_read_type()
        .into_iter()
        .chain(samples::OTHER_TYPES.iter().map(|&t| Message::Other {
            header: samples::header(t, 1, 1),
        }));
    for m in all {
        let bytes = encode::message(&m);
        let t = bytes[0];
        let expected = bytes.len();
        let mut long = bytes.clone();
        long.push(b' ');
        for (b, got) in [
            (&bytes[..expected - 1], expected - 1),
            (&long[..], expected + 1),
        ] {
            assert_eq!(
                itch50::decode(b),
                Err(ItchError::Length {
                    message_type: t,
                    expected,
                    got
                })
            );
        }
    }
}
