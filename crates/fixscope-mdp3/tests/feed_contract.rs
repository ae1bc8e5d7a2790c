//! The crate's one test binary: messages of every template read through the encoder and
//! decoder (`decode`), bad input never panicking (`faults`), a channel's packets
//! delivered with losses, A/B duplicates and reordering against the truth the generator
//! knows (`model`), epochs and feed latency (`channel`), and the cross-check against
//! real-logic's SBE tool (`sbe_tool`), and datagrams broken on purpose (`broken`).

#[path = "feed_contract/broken.rs"]
mod broken;
#[path = "feed_contract/channel.rs"]
mod channel;
#[path = "feed_contract/decode.rs"]
mod decode;
#[path = "feed_contract/faults.rs"]
mod faults;
#[path = "feed_contract/model.rs"]
mod model;
#[path = "feed_contract/samples.rs"]
mod samples;
#[path = "feed_contract/sbe_tool.rs"]
mod sbe_tool;
