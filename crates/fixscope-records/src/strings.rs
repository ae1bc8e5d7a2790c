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
/// becomes: built as the Arrow array's own buffers, handed over without a copy.
///
/// An empty value is an absent one (null): FIX has no empty field (a tag without a value
/// is malformed), so every value the pipeline pushes is absent or not empty, and a row's
/// presence is its length — no third buffer to fill per row.
#[derive(Clone)]
pub(crate) struct Strings {
    /// The values' bytes, `bytes[..end]`; past it, zeroed room a value is copied into.
    bytes: Vec<u8>,
    end: usize,
    /// Arrow's offsets: 0, then each row's end (below 2 GiB: a batch is handed over at
    /// [`STRING_BYTES`], and one value is part of one FIX message).
    offsets: Vec<i32>,
}

impl Default for Strings {
    fn default() -> Self {
        Strings {
            bytes: Vec::new(),
            end: 0,
            offsets: vec![0],
        }
    }
}

impl Strings {
    /// One row: `v`, or absent when empty.
    ///
    /// By hand because it runs for every string of every row on the pipeline's thread (six
    /// per order, one per message): `extend_from_slice` checks the capacity and calls
    /// `memcpy`; here a value of up to 32 bytes is two fixed-size moves that may overlap,
    /// into zeroed room already there (BENCHMARKS.md §2r).
    #[inline]
    pub(crate) fn push(&mut self, v: &[u8]) {
        let n = v.len();
        if self.bytes.len() - self.end < n {
            self.grow(n);
        }
        let dst = &mut self.bytes[self.end..self.end + n];
        match n {
            16..=32 => {
                dst[..16].copy_from_slice(&v[..16]);
                dst[n - 16..].copy_from_slice(&v[n - 16..]);
            }
            8..=15 => {
                dst[..8].copy_from_slice(&v[..8]);
                dst[n - 8..].copy_from_slice(&v[n - 8..]);
            }
            4..=7 => {
                dst[..4].copy_from_slice(&v[..4]);
                dst[n - 4..].copy_from_slice(&v[n - 4..]);
            }
            1..=3 => {
                dst[0] = v[0];
                dst[n / 2] = v[n / 2];
                dst[n - 1] = v[n - 1];
            }
            0 => {}
            _ => dst.copy_from_slice(v),
        }
        self.end += n;
        self.offsets.push(self.end as i32);
    }

    /// Room for `n` more bytes (zeroed once, kept across batches).
    #[cold]
    fn grow(&mut self, n: usize) {
        let want = (self.end + n).max(self.bytes.len() * 2).max(4096);
        self.bytes.resize(want, 0);
    }

    /// Every value gone, the buffers kept.
    pub(crate) fn clear(&mut self) {
        self.end = 0;
        self.offsets.clear();
        self.offsets.push(0);
    }

    /// The values' bytes, one after another.
    #[inline]
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes[..self.end]
    }

    /// Rows.
    pub(crate) fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Which rows of `rows` have a value, into `out` (cleared first).
    pub(crate) fn presence(&self, rows: std::ops::Range<usize>, out: &mut Vec<bool>) {
        out.clear();
        out.extend(
            self.offsets[rows.start..=rows.end]
                .windows(2)
                .map(|w| w[1] != w[0]),
        );
    }

    /// Row `row`'s value, `None` when absent.
    #[inline]
    pub(crate) fn value(&self, row: usize) -> Option<&[u8]> {
        let (start, end) = (self.offsets[row] as usize, self.offsets[row + 1] as usize);
        (end != start).then(|| &self.bytes[start..end])
    }

    /// Arrow's offsets: 0, then each row's end in [`Self::bytes`].
    pub(crate) fn offsets(&self) -> &[i32] {
        &self.offsets
    }

    /// The same values with every byte sequence that is not UTF-8 replaced (U+FFFD).
    pub(crate) fn lossy_utf8(&self) -> Strings {
        let mut out = Strings::default();
        for row in 0..self.len() {
            out.push(
                &String::from_utf8_lossy(self.value(row).unwrap_or_default())
                    .into_owned()
                    .into_bytes(),
            );
        }
        out
    }

    /// The column as an Arrow string array, its buffers moved (the column is left empty):
    /// FIX values are ASCII, so they are valid UTF-8 where they stand; a column with any
    /// other byte (FIX allows them) is rebuilt value by value as lossy UTF-8, which Parquet
    /// strings must be.
    pub(crate) fn array(&mut self) -> ArrayRef {
        let offsets = std::mem::replace(&mut self.offsets, vec![0]);
        let mut bytes = std::mem::take(&mut self.bytes);
        bytes.truncate(std::mem::take(&mut self.end));
        let absent = offsets.windows(2).any(|w| w[1] == w[0]);
        let present = absent.then(|| {
            NullBuffer::from(
                offsets
                    .windows(2)
                    .map(|w| w[1] != w[0])
                    .collect::<Vec<bool>>(),
            )
        });
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
            .map(|w| {
                (w[1] != w[0])
                    .then(|| String::from_utf8_lossy(&bytes[w[0] as usize..w[1] as usize]))
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
        s.push(b"");
        s.push(b"MSFT");
        assert_eq!(
            values(&s.array()),
            [Some("AAPL".into()), None, Some("MSFT".into())]
        );
        s.push(b"A\xffB");
        s.push(b"");
        s.push(b"caf\xc3\xa9");
        assert_eq!(
            values(&s.array()),
            [Some("A\u{fffd}B".into()), None, Some("café".into())]
        );
        s.push(b"X");
        assert_eq!(values(&s.array()), [Some("X".into())]);
        assert_eq!(values(&s.array()), Vec::<Option<String>>::new());
    }

    /// Every length each copy path takes (1–3, 4–7, 8–15, 16–32, longer) and the empty
    /// (absent) value read back as pushed, across a growth and after a clear.
    #[test]
    fn every_length_reads_back() {
        let value = |n: usize| (0..n).map(|i| (i * 7 + n) as u8 | 1).collect::<Vec<u8>>();
        let mut s = Strings::default();
        for round in 0..2 {
            for n in 0..=70 {
                s.push(&value(n));
            }
            assert_eq!(s.len(), 71, "round {round}");
            for n in 0..=70 {
                let expected = (n > 0).then(|| value(n));
                assert_eq!(s.value(n).map(<[u8]>::to_vec), expected, "length {n}");
            }
            let mut present = Vec::new();
            s.presence(0..71, &mut present);
            assert_eq!(present, (0..=70).map(|n| n > 0).collect::<Vec<_>>());
            assert_eq!(s.bytes().len(), (1..=70).sum::<usize>());
            s.clear();
        }
    }
}
