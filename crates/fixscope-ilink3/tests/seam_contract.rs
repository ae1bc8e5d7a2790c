//! The SOFH framer keeps the seam's contract (fixscope_protocol::contract) on streams of
//! an iLink 3 session, each direction on its own; the crate's one test binary also holds
//! the decoders' tests (`decode`), bad input (`faults`), the order layer's sessions
//! (`orders`) and the cross-check against real-logic's SBE tool (`sbe_tool`).

#[path = "seam_contract/decode.rs"]
mod decode;
#[path = "seam_contract/faults.rs"]
mod faults;
#[path = "seam_contract/orders.rs"]
mod orders;
#[path = "seam_contract/samples.rs"]
mod samples;
#[path = "seam_contract/sbe_tool.rs"]
mod sbe_tool;

use fixscope_ilink3::sofh::SofhFramer;
use fixscope_protocol::contract;

#[test]
fn frames_do_not_depend_on_where_segments_split_the_stream() {
    for (name, (stream, n)) in samples::streams() {
        eprintln!("{name}: {n} messages, {} bytes", stream.len());
        contract::split_anywhere::<SofhFramer>(&stream, n);
    }
}

#[test]
fn a_hole_cuts_the_message_it_falls_in_and_framing_resyncs_on_the_next_whole_segment() {
    for (_, (stream, _)) in samples::streams() {
        contract::gap_cuts_the_frame_it_falls_in::<SofhFramer>(&stream);
    }
}

#[test]
fn a_message_held_behind_a_hole_starts_when_captured_and_ends_when_readable() {
    for (_, (stream, _)) in samples::streams() {
        contract::held_bytes_keep_their_capture_time::<SofhFramer>(&stream);
    }
}
