//! FIX's framer keeps the seam's contract (fixscope_protocol::contract): the checks every
//! protocol's framer runs, here on FIX messages of several shapes.

use fixscope_fix::encode::FixEncoder;
use fixscope_fix::framing::StreamFramer;
use fixscope_fix::{tag, Fix};
use fixscope_protocol::{contract, Protocol, Recognition};

/// A logon, orders and reports of different lengths, FIX.4.2 and FIXT.1.1.
fn stream() -> Vec<u8> {
    let mut out = Vec::new();
    let mut enc = FixEncoder::new();
    enc.start(b"A")
        .field(tag::MSG_SEQ_NUM, b"1")
        .field(tag::HEART_BT_INT, b"30");
    enc.finish(b"FIX.4.2", &mut out);
    for i in 0..4u64 {
        enc.start(b"D")
            .field_uint(tag::MSG_SEQ_NUM, i + 2)
            .field_str(tag::CL_ORD_ID, &format!("ORD{}", 10u64.pow(i as u32)))
            .field(tag::SYMBOL, b"AAPL")
            .field(tag::SIDE, b"1");
        enc.finish(if i % 2 == 0 { b"FIX.4.2" } else { b"FIXT.1.1" }, &mut out);
        enc.start(b"8")
            .field_uint(tag::MSG_SEQ_NUM, i + 2)
            .field(tag::EXEC_TYPE, b"0")
            .field(tag::ORD_STATUS, b"0");
        enc.finish(b"FIX.4.2", &mut out);
    }
    out
}

#[test]
fn frames_do_not_depend_on_where_segments_split_the_stream() {
    contract::split_anywhere::<StreamFramer>(&stream(), 9);
}

#[test]
fn a_hole_cuts_the_message_it_falls_in_and_no_other() {
    contract::gap_cuts_the_frame_it_falls_in::<StreamFramer>(&stream());
}

#[test]
fn a_fix_connection_is_recognised_by_its_first_bytes() {
    assert_eq!(Fix::NAME, "fix");
    assert_eq!(Fix::recognise(b"8=FIX.4.4\x019=5\x01"), Recognition::Yes);
    assert_eq!(Fix::recognise(b"8=FI"), Recognition::NeedMore);
    assert_eq!(Fix::recognise(b""), Recognition::NeedMore);
    assert_eq!(Fix::recognise(b"\x00\x2a\x53"), Recognition::No);
    assert_eq!(Fix::recognise(b"9=FIX"), Recognition::No);
}

#[test]
fn a_message_held_behind_a_hole_starts_when_captured_and_ends_when_readable() {
    contract::held_bytes_keep_their_capture_time::<StreamFramer>(&stream());
}
