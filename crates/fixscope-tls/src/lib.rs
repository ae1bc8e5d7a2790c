//! FIX over TLS: the plaintext of captured TLS streams, given the endpoints' key log.
//!
//! Pure and pipeline-free: bytes of each direction of one TCP connection go in, in stream
//! order and tagged with the capture time of the segment that carried them; plaintext
//! application data comes out, each chunk tagged with the time of the segment that
//! **completed the TLS record carrying it** — the moment the receiver could first read it.
//!
//! Layers, lowest first: [`keylog`] (NSS `SSLKEYLOGFILE` lines → secrets by client random),
//! [`suite`] (what each cipher suite is), [`schedule`] (TLS 1.3 HKDF-Expand-Label, TLS 1.2
//! PRF), [`cipher`] (one direction's AEAD: nonces, additional data, inner content type),
//! [`handshake`] (ClientHello/ServerHello read by hand, handshake messages framed),
//! [`record`] (records framed across arbitrary TCP chunks, with completion times),
//! [`direction`] (one direction's epoch, sequence number and resynchronisation), and
//! [`connection`] (both directions: from the handshake to application data); [`follow`]
//! and [`store`] are where secrets come from while running (key log files followed as
//! they grow, connections held for a key not there yet). Everything
//! that cannot be decrypted is counted in [`TlsCounters`], never guessed.

pub mod cipher;
pub mod connection;
pub mod counters;
pub mod direction;
pub mod follow;
pub mod handshake;
pub mod keylog;
pub mod plain;
pub mod record;
pub mod schedule;
pub mod store;
pub mod suite;
pub mod uprobe;

pub use connection::{Plain, Side, TlsConnection, Undecryptable};
pub use counters::TlsCounters;
pub use keylog::{KeyLog, KeyLogStats, Secrets};
pub use store::{HoldPermit, KeySource, KeyStore};
pub use uprobe::{CallKind, TlsCall};
