//! The framing half of the seam: a protocol's recognition of its connections and its
//! framer of one direction's stream.

use fixscope_model::counters::framing::FramingCounters;
use fixscope_model::segment::ByteTimes;

/// A complete message with its times: the capture time of the segment that carried its
/// first byte (a response is timed by it), and when its last byte became readable (a
/// request by that): the same but for bytes held behind a hole ([`ByteTimes`]).
#[derive(Clone, Copy, Debug)]
pub struct FramedMessage<'a> {
    pub bytes: &'a [u8],
    pub first_byte_ts_ns: u64,
    pub last_byte_ts_ns: u64,
    /// TCP sequence numbers of the first and last byte (`--breakdown`; relative to the seq
    /// given to [`Framer::push_at`]).
    pub first_byte_seq: u32,
    pub last_byte_seq: u32,
}

/// Frames one direction of one connection: in-order bytes in, complete messages out.
pub trait Framer: Default {
    /// Feeds in-order stream bytes with their `times`, the first of them with TCP sequence
    /// number `seq`; calls `on_message` for every message they complete (in stream order).
    /// Messages that fail the protocol's own integrity checks are counted in `counters`,
    /// not delivered.
    fn push_at<F>(
        &mut self,
        data: &[u8],
        times: ByteTimes,
        seq: u32,
        counters: &mut FramingCounters,
        on_message: F,
    ) where
        F: FnMut(FramedMessage<'_>);

    /// A hole in the stream: the message begun before it (if any) can never be completed —
    /// counted in `gap_cut_messages` and dropped; framing resyncs as the protocol allows.
    fn gap(&mut self, counters: &mut FramingCounters);

    /// Bytes held for a message not yet complete.
    fn pending_bytes(&self) -> usize;
}

/// What a connection's first bytes say of a protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recognition {
    /// The bytes begin one of this protocol's messages.
    Yes,
    /// They cannot begin one.
    No,
    /// Too few bytes to tell.
    NeedMore,
}

/// One protocol on the seam.
pub trait Protocol {
    /// Its name as `--protocol` and the session table write it (`fix`).
    const NAME: &'static str;
    /// Its framer of one direction's stream.
    type Framer: Framer;
    /// Whether a direction's first bytes begin one of its messages.
    fn recognise(first_bytes: &[u8]) -> Recognition;
}
