//! The live capture's tests: the real kernel programs on `lo` and on veth pairs in network
//! namespaces the tests create (and always delete). They need root; without it they fail
//! loudly. One test binary, so `serial()` keeps every attaching test apart.

mod breakdown;
mod clsact_hygiene;
mod common;
mod cross_cpu;
mod lo_capture;
mod netns_veth;
mod probes;
mod residue;
mod source;
mod verifier;
mod vlan_frames;
