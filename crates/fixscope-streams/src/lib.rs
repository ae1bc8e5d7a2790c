//! fixscope's stream layer: what a connection's segments become before any protocol reads
//! them. `reassembly` puts each direction's bytes in order, each run with the time of the
//! segment that carried it, and says where a hole is (`StreamEvent::{Data, Gap}`); `tls`
//! turns a TLS connection's records into plaintext timed the same way. The protocol seam
//! (fixscope-protocol) takes over from here.

pub mod reassembly;
pub mod tls;
