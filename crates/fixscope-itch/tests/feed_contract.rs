//! The crate's one test binary: ITCH 5.0 messages of every type through the encoder and
//! decoder (`decode`), bad input never panicking (`faults`), a feed cut into packets any
//! way and delivered with losses, duplicates and reordering against the truth the
//! generator knows (`model`), and the cross-check against Wireshark's MoldUDP64 dissector
//! (`tshark`), and datagrams broken on purpose (`broken`).

#[path = "feed_contract/broken.rs"]
mod broken;
#[path = "feed_contract/decode.rs"]
mod decode;
#[path = "feed_contract/faults.rs"]
mod faults;
#[path = "feed_contract/model.rs"]
mod model;
#[path = "feed_contract/samples.rs"]
mod samples;
#[path = "feed_contract/tshark.rs"]
mod tshark;
