//! What comes out of one direction of a TLS connection, decrypted or placed by calls.

/// What comes out of one direction.
#[derive(Debug, PartialEq, Eq)]
pub enum Plain<'a> {
    /// Plaintext application data readable at `ts_ns` (its record's completing segment).
    Data { bytes: &'a [u8], ts_ns: u64 },
    /// Plaintext is missing here (a record that did not verify, framing lost): what
    /// follows is not contiguous with what came before.
    Gap,
}
