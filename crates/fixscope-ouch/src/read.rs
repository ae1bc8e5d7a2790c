//! Reading fixed-offset big-endian fields out of a message whose length was checked, and
//! the decoders' error.

/// Why a message inside a data packet could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// No message type byte.
    Empty,
    /// Shorter than the message type's fixed part.
    Truncated {
        message_type: u8,
        need: usize,
        got: usize,
    },
    /// An OUCH 4.2 message (fixed-length) of another length than its type's.
    Length {
        message_type: u8,
        expected: usize,
        got: usize,
    },
    /// An OUCH 5.0 Optional Appendage longer than the bytes the packet has for it.
    AppendageLength { declared: usize, available: usize },
}

/// A cursor over a message at least as long as every read made of it (checked first):
/// a read past the end gives zeros rather than a panic, which the length checks rule out.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// Reads `bytes` from offset 1, past the message type byte.
    pub(crate) fn after_type(bytes: &'a [u8]) -> Self {
        Reader { bytes, at: 1 }
    }

    pub(crate) fn take(&mut self, n: usize) -> &'a [u8] {
        let start = self.at.min(self.bytes.len());
        let end = self.at.saturating_add(n).min(self.bytes.len());
        self.at = self.at.saturating_add(n);
        &self.bytes[start..end]
    }

    fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        let got = self.take(N);
        out[..got.len()].copy_from_slice(got);
        out
    }

    pub(crate) fn u8(&mut self) -> u8 {
        self.array::<1>()[0]
    }

    pub(crate) fn u16(&mut self) -> u16 {
        u16::from_be_bytes(self.array())
    }

    pub(crate) fn u32(&mut self) -> u32 {
        u32::from_be_bytes(self.array())
    }

    pub(crate) fn u64(&mut self) -> u64 {
        u64::from_be_bytes(self.array())
    }

    /// Everything not read yet.
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        self.take(self.bytes.len().saturating_sub(self.at))
    }
}

/// `Ok` if `bytes` (message type first) is at least `need` long.
pub(crate) fn at_least(bytes: &[u8], need: usize) -> Result<(), DecodeError> {
    if bytes.len() < need {
        return Err(DecodeError::Truncated {
            message_type: bytes.first().copied().unwrap_or(0),
            need,
            got: bytes.len(),
        });
    }
    Ok(())
}
