//! CME's framing header and SBE's message header, and reading root-block fields by the
//! schema's layout ("iLink 3 Message Header", "iLink 3 - Simple Binary Encoding"; FIX SBE
//! "Message Structure").
//!
//! A frame is the Simple Open Framing Header — Message Length (u16, the whole message
//! *including* this header) and Encoding Type (u16, 0xCAFE), both little-endian, unlike
//! the FIX standard's big-endian SOFH — then the SBE message header (BlockLength,
//! TemplateID, SchemaID, Version, u16 little-endian each), then the root block of
//! BlockLength bytes, then repeating groups and variable-length data.
//!
//! **Versions.** The root block is read by the header's BlockLength, never the schema's:
//! a longer one carries a later version's appended fields (skipped), a shorter one is an
//! earlier version's, and a field is present only when `offset + size <= BlockLength`
//! and its sinceVersion is at most the header's Version. Every read is bounds-checked
//! against the frame: bad input is a [`DecodeError`], never a panic.

use crate::schema::{self, Field};

/// The Simple Open Framing Header's encoding type of CME SBE 1.0 little-endian.
pub const ENCODING_TYPE: u16 = 0xCAFE;
/// SOFH (4) + SBE message header (8).
pub const HEADERS_LEN: usize = 12;

/// Why a frame could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Fewer bytes than the two headers.
    Truncated { need: usize, got: usize },
    /// The SOFH's Message Length is not the frame's length.
    LengthMismatch { declared: usize, actual: usize },
    /// The SOFH's Encoding Type is not 0xCAFE.
    Encoding(u16),
    /// Another schema than iLink 3's (id 8).
    Schema(u16),
    /// The header's BlockLength runs past the frame.
    BlockLength {
        block_length: usize,
        available: usize,
    },
    /// A template the schema does not have.
    UnknownTemplate(u16),
    /// A field the message cannot do without is beyond its BlockLength or version.
    MissingField {
        template_id: u16,
        field: &'static str,
    },
}

/// The SBE message header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub block_length: u16,
    pub template_id: u16,
    pub schema_id: u16,
    pub version: u16,
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

/// The SOFH's (Message Length, Encoding Type) of the 4 bytes at the start of `b`.
pub fn sofh(b: &[u8]) -> Option<(usize, u16)> {
    (b.len() >= 4).then(|| (usize::from(u16_at(b, 0)), u16_at(b, 2)))
}

/// The SBE header of a frame (SOFH first), if it has the bytes.
pub fn header(b: &[u8]) -> Option<Header> {
    (b.len() >= HEADERS_LEN).then(|| Header {
        block_length: u16_at(b, 4),
        template_id: u16_at(b, 6),
        schema_id: u16_at(b, 8),
        version: u16_at(b, 10),
    })
}

/// A checked frame: its header and its root block (exactly BlockLength bytes).
#[derive(Clone, Copy, Debug)]
pub struct Frame<'a> {
    pub header: Header,
    pub block: &'a [u8],
}

impl<'a> Frame<'a> {
    /// Checks a whole frame's headers against its bytes and the schema.
    pub fn parse(frame: &'a [u8]) -> Result<Self, DecodeError> {
        let (Some((declared, encoding)), Some(header)) = (sofh(frame), header(frame)) else {
            return Err(DecodeError::Truncated {
                need: HEADERS_LEN,
                got: frame.len(),
            });
        };
        if encoding != ENCODING_TYPE {
            return Err(DecodeError::Encoding(encoding));
        }
        if declared != frame.len() {
            return Err(DecodeError::LengthMismatch {
                declared,
                actual: frame.len(),
            });
        }
        if header.schema_id != schema::SCHEMA_ID {
            return Err(DecodeError::Schema(header.schema_id));
        }
        let block_length = usize::from(header.block_length);
        let available = frame.len() - HEADERS_LEN;
        if block_length > available {
            return Err(DecodeError::BlockLength {
                block_length,
                available,
            });
        }
        Ok(Frame {
            header,
            block: &frame[HEADERS_LEN..HEADERS_LEN + block_length],
        })
    }

    /// The field's bytes, when this message has it (its block and version, above).
    pub fn bytes(&self, f: Field) -> Option<&'a [u8]> {
        if f.since_version > self.header.version {
            return None;
        }
        self.block.get(f.offset..f.offset.checked_add(f.size)?)
    }

    /// An unsigned integer field (1, 2, 4 or 8 bytes), `None` when absent or null.
    pub fn uint(&self, f: Field) -> Option<u64> {
        let b = self.bytes(f)?;
        let mut le = [0u8; 8];
        le[..b.len().min(8)].copy_from_slice(&b[..b.len().min(8)]);
        let v = u64::from_le_bytes(le);
        (f.null != Some(v)).then_some(v)
    }

    /// A signed integer field (a price's mantissa, a SecurityID), `None` when absent or
    /// null.
    pub fn int(&self, f: Field) -> Option<i64> {
        let v = self.uint(f)?;
        let bits = 8 * f.size.min(8) as u32;
        let shift = 64 - bits;
        Some(((v << shift) as i64) >> shift)
    }

    /// A char array without its trailing NUL padding (empty when absent).
    pub fn text(&self, f: Field) -> &'a [u8] {
        let b = self.bytes(f).unwrap_or(&[]);
        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        &b[..end]
    }

    /// A field the message cannot do without.
    pub fn required(&self, f: Field) -> Result<u64, DecodeError> {
        self.uint(f).ok_or(DecodeError::MissingField {
            template_id: self.header.template_id,
            field: f.name,
        })
    }
}
