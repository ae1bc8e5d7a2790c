//! One MDP 3.0 message's SBE structure ("MDP 3.0 - SBE Technical Headers"; FIX SBE
//! "Message Structure"): MsgSize (u16, the whole message including itself), the SBE
//! message header (BlockLength, TemplateID, SchemaID, Version, u16 little-endian each),
//! the root block of BlockLength bytes, then the repeating groups, each a dimension
//! header (its entries' blockLength and numInGroup) and numInGroup entries of
//! blockLength bytes.
//!
//! **Versions.** Every block is read by the length the wire gives, never the schema's: a
//! longer root block or entry carries a later version's appended fields (skipped), a
//! shorter one is an earlier version's, and a field is present only when `offset + size
//! <= length` and its sinceVersion is at most the header's Version. A group appended in a
//! later version than the message's is absent. Bytes after the last group known to the
//! schema (a later version's appended group) are left unread: the packet steps by
//! MsgSize. Every read is bounds-checked: bad input is a [`DecodeError`], never a panic.

use crate::schema::{self, Field, Group};

/// MsgSize's bytes.
pub const MSG_SIZE_LEN: usize = 2;
/// The SBE message header's bytes.
pub const HEADER_LEN: usize = 8;
/// MsgSize + the SBE header: the shortest message.
pub const MIN_MESSAGE_LEN: usize = MSG_SIZE_LEN + HEADER_LEN;

/// Why a message could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Fewer bytes than MsgSize and the SBE header.
    Truncated { need: usize, got: usize },
    /// Another schema than MDP 3.0's (id 1).
    Schema(u16),
    /// The header's BlockLength runs past the message.
    BlockLength {
        block_length: usize,
        available: usize,
    },
    /// A group's dimension header or entries run past the message.
    GroupOverrun {
        group: &'static str,
        need: usize,
        available: usize,
    },
    /// A group's entries are too short to hold a field the decoder cannot do without.
    GroupBlockLength {
        group: &'static str,
        block_length: usize,
        field: &'static str,
    },
    /// A group the decoder reads is of a later schema version than the message.
    MissingGroup {
        template_id: u16,
        group: &'static str,
    },
    /// A root field the message cannot do without is beyond its BlockLength or version.
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

/// The SBE header of a message (MsgSize first), if it has the bytes.
pub fn header(message: &[u8]) -> Option<Header> {
    (message.len() >= MIN_MESSAGE_LEN).then(|| Header {
        block_length: u16_at(message, 2),
        template_id: u16_at(message, 4),
        schema_id: u16_at(message, 6),
        version: u16_at(message, 8),
    })
}

/// A block (a root block or one group entry) of a message of `version`.
#[derive(Clone, Copy, Debug)]
pub struct Block<'a> {
    pub bytes: &'a [u8],
    pub version: u16,
}

impl<'a> Block<'a> {
    /// Whether this block holds `f` (its length and version, above).
    pub fn has(&self, f: Field) -> bool {
        f.since_version <= self.version && f.offset + f.size <= self.bytes.len()
    }

    /// The field's bytes, when this block has it.
    pub fn bytes(&self, f: Field) -> Option<&'a [u8]> {
        if !self.has(f) {
            return None;
        }
        self.bytes.get(f.offset..f.offset + f.size)
    }

    /// An unsigned integer field (1, 2, 4 or 8 bytes), `None` when absent or null.
    pub fn uint(&self, f: Field) -> Option<u64> {
        let b = self.bytes(f)?;
        let n = b.len().min(8);
        let mut le = [0u8; 8];
        le[..n].copy_from_slice(&b[..n]);
        let v = u64::from_le_bytes(le);
        (f.null != Some(v)).then_some(v)
    }

    /// A signed integer field (a price's mantissa, a SecurityID), `None` when absent or
    /// null.
    pub fn int(&self, f: Field) -> Option<i64> {
        let v = self.uint(f)?;
        let shift = 64 - 8 * f.size.clamp(1, 8) as u32;
        Some(((v << shift) as i64) >> shift)
    }

    /// A char array without its trailing NUL padding (empty when absent).
    pub fn text(&self, f: Field) -> &'a [u8] {
        let b = self.bytes(f).unwrap_or(&[]);
        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        &b[..end]
    }
}

/// A checked message: its header, its root block (exactly BlockLength bytes) and what
/// follows it (the groups).
#[derive(Clone, Copy, Debug)]
pub struct Frame<'a> {
    pub header: Header,
    pub root: Block<'a>,
    pub tail: &'a [u8],
}

impl<'a> Frame<'a> {
    /// Checks a whole message's header (MsgSize first) against its bytes and the schema.
    pub fn parse(message: &'a [u8]) -> Result<Self, DecodeError> {
        let Some(header) = header(message) else {
            return Err(DecodeError::Truncated {
                need: MIN_MESSAGE_LEN,
                got: message.len(),
            });
        };
        if header.schema_id != schema::SCHEMA_ID {
            return Err(DecodeError::Schema(header.schema_id));
        }
        let block_length = usize::from(header.block_length);
        let body = &message[MIN_MESSAGE_LEN..];
        if block_length > body.len() {
            return Err(DecodeError::BlockLength {
                block_length,
                available: body.len(),
            });
        }
        let (root, tail) = body.split_at(block_length);
        Ok(Frame {
            header,
            root: Block {
                bytes: root,
                version: header.version,
            },
            tail,
        })
    }

    /// A root field the message cannot do without.
    pub fn required(&self, f: Field) -> Result<u64, DecodeError> {
        self.root.uint(f).ok_or(DecodeError::MissingField {
            template_id: self.header.template_id,
            field: f.name,
        })
    }

    /// The group at `index` of the template's `groups` (wire order), the groups before it
    /// stepped over by their own headers; `None` when the message's version predates it.
    pub fn group(
        &self,
        groups: &[Group],
        index: usize,
    ) -> Result<Option<GroupView<'a>>, DecodeError> {
        let mut rest = self.tail;
        for (i, g) in groups.iter().enumerate().take(index + 1) {
            if g.since_version > self.header.version {
                if i == index {
                    return Ok(None);
                }
                continue;
            }
            let view = GroupView::parse(g, rest, self.header.version)?;
            if i == index {
                return Ok(Some(view));
            }
            rest = &rest[view.encoded_len..];
        }
        Ok(None)
    }
}

/// One repeating group of a message: its entries, each `block_length` bytes.
#[derive(Clone, Copy, Debug)]
pub struct GroupView<'a> {
    pub group: &'static str,
    entries: &'a [u8],
    pub block_length: usize,
    pub count: usize,
    version: u16,
    /// Dimension header and entries.
    encoded_len: usize,
}

impl<'a> GroupView<'a> {
    /// Reads the group `g` at the start of `b`.
    fn parse(g: &Group, b: &'a [u8], version: u16) -> Result<Self, DecodeError> {
        let dim = g.dimension;
        let overrun = |need: usize| DecodeError::GroupOverrun {
            group: g.name,
            need,
            available: b.len(),
        };
        if b.len() < dim.size {
            return Err(overrun(dim.size));
        }
        let head = Block {
            bytes: &b[..dim.size],
            version,
        };
        let block_length = head.uint(dim.block_length).unwrap_or(0) as usize;
        let count = head.uint(dim.num_in_group).unwrap_or(0) as usize;
        let need = dim.size + block_length * count;
        if b.len() < need {
            return Err(overrun(need));
        }
        Ok(GroupView {
            group: g.name,
            entries: &b[dim.size..need],
            block_length,
            count,
            version,
            encoded_len: need,
        })
    }

    /// Checks that the entries (if any) hold each field of `fields` (a field of a later
    /// version than the message's is not asked for).
    pub fn require(self, fields: &[Field]) -> Result<Self, DecodeError> {
        if self.count == 0 {
            return Ok(self);
        }
        for &f in fields {
            if f.since_version <= self.version && f.offset + f.size > self.block_length {
                return Err(DecodeError::GroupBlockLength {
                    group: self.group,
                    block_length: self.block_length,
                    field: f.name,
                });
            }
        }
        Ok(self)
    }

    /// Entry `i`.
    pub fn entry(&self, i: usize) -> Option<Block<'a>> {
        let start = i.checked_mul(self.block_length)?;
        let bytes = self.entries.get(start..start + self.block_length)?;
        (i < self.count).then_some(Block {
            bytes,
            version: self.version,
        })
    }

    /// The entries, each read by `read`, lazily.
    pub fn entries<T>(self, read: fn(Block<'a>) -> T) -> Entries<'a, T> {
        Entries {
            group: self,
            next: 0,
            read,
        }
    }
}

/// A group's entries read lazily, one at a time, without allocating.
#[derive(Clone, Copy)]
pub struct Entries<'a, T> {
    group: GroupView<'a>,
    next: usize,
    read: fn(Block<'a>) -> T,
}

impl<T> std::fmt::Debug for Entries<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entries")
            .field("group", &self.group.group)
            .field("count", &self.group.count)
            .field("next", &self.next)
            .finish()
    }
}

impl<'a, T> Entries<'a, T> {
    /// The group's entry block length on the wire.
    pub fn block_length(&self) -> usize {
        self.group.block_length
    }
}

impl<T> Iterator for Entries<'_, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        let e = self.group.entry(self.next)?;
        self.next += 1;
        Some((self.read)(e))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.group.count.saturating_sub(self.next);
        (n, Some(n))
    }
}

impl<T> ExactSizeIterator for Entries<'_, T> {}
