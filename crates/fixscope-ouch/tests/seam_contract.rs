//! The SoupBinTCP framer keeps the seam's contract (fixscope_protocol::contract) on
//! streams of OUCH 4.2 and 5.0 sessions, each direction on its own; the crate's one test
//! binary also holds the decoders' tests (`decode`), bad input (`faults`), the
//! cross-check against Wireshark's dissectors (`tshark`) and the order layer's sessions
//! (`orders`).

#[path = "seam_contract/decode.rs"]
mod decode;
#[path = "seam_contract/detect.rs"]
mod detect;
#[path = "seam_contract/faults.rs"]
mod faults;
#[path = "seam_contract/orders.rs"]
mod orders;
#[path = "seam_contract/samples.rs"]
mod samples;
#[path = "seam_contract/tshark.rs"]
mod tshark;

use fixscope_ouch::soupbin::SoupBinFramer;
use fixscope_protocol::contract;

#[test]
fn frames_do_not_depend_on_where_segments_split_the_stream() {
    for (name, (stream, n)) in samples::streams() {
        eprintln!("{name}: {n} packets, {} bytes", stream.len());
        contract::split_anywhere::<SoupBinFramer>(&stream, n);
    }
}

#[test]
fn a_hole_cuts_the_packet_it_falls_in_and_framing_resyncs_on_the_next_whole_segment() {
    for (_, (stream, _)) in samples::streams() {
        contract::gap_cuts_the_frame_it_falls_in::<SoupBinFramer>(&stream);
    }
}

#[test]
fn a_packet_held_behind_a_hole_starts_when_captured_and_ends_when_readable() {
    for (_, (stream, _)) in samples::streams() {
        contract::held_bytes_keep_their_capture_time::<SoupBinFramer>(&stream);
    }
}
