//! fixscope's vocabulary: the words every layer above speaks, and nothing that does work on
//! them. A segment and its flow (`segment`, `wire`, `ports`), the source that yields them
//! (`source`, `socket_event`, `shutdown`), time (`clock`, `human`), an order's events and
//! stages (`order`), the counters every layer adds to (`counters`) and the sparse histogram
//! the figures are made of (`sparse_hist`). No module here names a module above it: cargo
//! keeps that direction (docs/architecture.md, "The crates").

pub mod clock;
pub mod counters;
pub mod human;
pub mod order;
pub mod ports;
pub mod segment;
pub mod shutdown;
pub mod socket_event;
pub mod source;
pub mod sparse_hist;
pub mod wire;

pub use ports::{PortSet, Role};
pub use segment::{ConnectionKey, Direction, Endpoint, FlowKey, Segment, TcpFlags};
