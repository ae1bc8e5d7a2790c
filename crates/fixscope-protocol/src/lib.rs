//! The protocol seam: where a connection's reassembled (and decrypted) bytes stop being
//! bytes. Below it, nothing knows a protocol (fixscope-model, -capture, -streams); above it,
//! the correlator, the session table and the reporters. A protocol crate (fixscope-fix
//! today) implements [`Protocol`]: it recognises its connections from their first bytes and
//! gives a [`Framer`], which cuts one direction's byte stream into [`FramedMessage`]s, each
//! with the capture times of the segments that carried its first and last bytes.
//!
//! The framer's rules are the same for every protocol, and [`contract`] checks them:
//! - the frames do not depend on where the segments split the stream;
//! - a frame's first-byte time is the capture time of the segment that carried its first
//!   byte, its last-byte time when the segment that completed it became readable (later
//!   only for bytes held behind a hole, [`ByteTimes`]): a request is timed by the latter,
//!   a response by the former;
//! - a hole in the stream (`StreamEvent::Gap`) cuts the frame it falls in: that frame is
//!   counted (`gap_cut_messages`) and never delivered, never glued to bytes after the hole.
//!
//! The order half ([`order`]): what a message means to the correlator — a request of a
//! type under a key, or a response of a [`ResponseKind`] to a key — in no protocol's words.
//!
//! Field access by name ([`fields`]): the fields of a protocol's order messages that
//! `--by` groups by and the records keep, by its spec's names, read only when asked.
//!
//! docs/architecture.md ("The crates", "Adding a protocol") says what moves here next:
//! the session rules.

pub mod contract;
pub mod fields;
mod framer;
pub mod name;
pub mod order;

pub use fields::{FieldName, FieldSelection, FieldValues, OrderFields, Role};
pub use fixscope_model::counters::framing::FramingCounters;
pub use fixscope_model::segment::ByteTimes;
pub use framer::{FramedMessage, Framer, Protocol, Recognition};
pub use name::{ProtocolAssignment, ProtocolName, ProtocolPorts};
pub use order::{OrderEvent, RequestType, ResponseCode, ResponseKind};
