//! One string column's buffer, filled on the pipeline's thread (a push per value) and
//! handed to the writer: read there value by value for the Parquet pages, or moved whole
//! into an Arrow array for ClickHouse.

use std::borrow::Cow;
use std::sync::Arc;

use arrow_array::{ArrayRef, StringArray};
use arrow_buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};

/// String bytes of one column that end a batch (far below the 2 GiB of 32-bit offsets,
/// whatever the longest value: one FIX message is smaller).
pub(crate) const STRING_BYTES: usize = 1 << 30;

/// Strings of one column, one after another, with each row's end as the Arrow offset it
/// becomes, and which rows have a value: built as the Arrow array's own buffers, handed
/// over without a copy.
#[derive(Clone)]
pub(crate) struct Strings {
    pub(crate) bytes: Vec<u8>,
    /// Arrow's offsets: 0, then each row's end (below 2 GiB: a batch is handed over at
    /// [`STRING_BYTES`], and one value is part of one FIX message).
    offsets: Vec<i32>,
    /// Which rows have a value (a plain vector: the pipeline's push is one store; the
    /// writer packs it into bits).
    present: Vec<bool>,
}

impl Default for Strings {
    fn default() -> Self {
        Strings {
            bytes: Vec::new(),
            offsets: vec![0],
            present: Vec::new(),
        }
    }
}

impl Strings {
    pub(crate) fn push(&mut self, v: &[u8]) {
        self.bytes.extend_from_slice(v);
        self.offsets.push(self.bytes.len() as i32);
        self.present.push(true);
    }

    /// Every value gone, the buffers kept.
    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.offsets.clear();
        self.offsets.push(0);
        self.present.clear();
    }

    /// An empty value is absent (null).
    pub(crate) fn push_or_null(&mut self, v: &[u8]) {
        if v.is_empty() {
            self.offsets.push(self.bytes.len() as i32);
            self.present.push(false);
        } else {
            self.push(v);
        }
    }

    /// Row `row`'s value, `None` when absent.
    #[inline]
    pub(crate) fn value(&self, row: usize) -> Option<&[u8]> {
        self.present[row]
            .then(|| &self.bytes[self.offsets[row] as usize..self.offsets[row + 1] as usize])
    }

    /// Arrow's offsets: 0, then each row's end in [`Self::bytes`].
    pub(crate) fn offsets(&self) -> &[i32] {
        &self.offsets
    }

    /// Which rows have a value.
    pub(crate) fn present(&self) -> &[bool] {
        &self.present
    }

    /// The same values with every byte sequence that is not UTF-8 replaced (U+FFFD).
    pub(crate) fn lossy_utf8(&self) -> Strings {
        let mut out = Strings::default();
        for row in 0..self.present.len() {
            match self.value(row) {
                Some(v) => out.push(String::from_utf8_lossy(v).as_bytes()),
                None => out.push_or_null(b""),
            }
        }
        out
    }

    /// The column as an Arrow string array, its buffers moved (the column is left empty):
    /// FIX values are ASCII, so they are valid UTF-8 where they stand; a column with any
    /// other byte (FIX allows them) is rebuilt value by value as lossy UTF-8, which Parquet
    /// strings must be.
    pub(crate) fn array(&mut self) -> ArrayRef {
        let offsets = std::mem::replace(&mut self.offsets, vec![0]);
        let bytes = std::mem::take(&mut self.bytes);
        let present = std::mem::take(&mut self.present);
        let present = (!present.iter().all(|&p| p)).then(|| NullBuffer::from(present));
        if bytes.is_ascii() {
            return Arc::new(
                StringArray::try_new(
                    OffsetBuffer::new(ScalarBuffer::from(offsets)),
                    Buffer::from_vec(bytes),
                    present,
                )
                .expect("ASCII values at rising offsets, one presence bit per row"),
            );
        }
        let values: Vec<Option<Cow<'_, str>>> = offsets
            .windows(2)
            .enumerate()
            .map(|(i, w)| {
                let absent = present.as_ref().is_some_and(|p| p.is_null(i));
                (!absent).then(|| String::from_utf8_lossy(&bytes[w[0] as usize..w[1] as usize]))
            })
            .collect();
        Arc::new(values.iter().map(|v| v.as_deref()).collect::<StringArray>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;

    fn values(a: &ArrayRef) -> Vec<Option<String>> {
        let s = a.as_any().downcast_ref::<StringArray>().expect("strings");
        (0..s.len())
            .map(|i| s.is_valid(i).then(|| s.value(i).to_string()))
            .collect()
    }

    /// Values and absences survive the hand-over; a column with a byte that is not UTF-8
    /// keeps every other value and its nulls; the column is empty and usable afterwards.
    #[test]
    fn strings_become_arrow_arrays_whole() {
        let mut s = Strings::default();
        s.push(b"AAPL");
        s.push_or_null(b"");
        s.push(b"MSFT");
        assert_eq!(
            values(&s.array()),
            [Some("AAPL".into()), None, Some("MSFT".into())]
        );
        s.push(b"A\xffB");
        s.push_or_null(b"");
        s.push(b"caf\xc3\xa9");
        assert_eq!(
            values(&s.array()),
            [Some("A\u{fffd}B".into()), None, Some("café".into())]
        );
        s.push(b"X");
        assert_eq!(values(&s.array()), [Some("X".into())]);
        assert_eq!(values(&s.array()), Vec::<Option<String>>::new());
    }
}
