//! Parquet's value encodings, written by hand for the records' columns: bit-packing, the
//! RLE/bit-packing hybrid (definition levels, dictionary indices), DELTA_BINARY_PACKED
//! (times, latencies, lengths), DELTA_BYTE_ARRAY (ids) and PLAIN dictionaries.
//!
//! Why by hand: the `parquet` crate's writer interned every string of every column through
//! a general hash table, built levels and statistics for any nesting, and started a new
//! zstd stream for every page — together more CPU than the whole analysis of an order
//! (BENCHMARKS.md §2p). The records' columns are flat and of five kinds, and each kind's
//! encoding is a short loop. The crate still writes the file: pages' headers, footers,
//! Bloom filters (`chunks.rs`), and reads every file back in the tests.

/// Appends `v` as an unsigned LEB128 varint (Parquet's ULEB128).
pub(crate) fn uleb(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends `v` zigzag-encoded, as a varint.
pub(crate) fn zigzag(out: &mut Vec<u8>, v: i64) {
    uleb(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// Bits needed for `max` (0 for 0).
pub(crate) fn width_of(max: u64) -> u32 {
    64 - max.leading_zeros()
}

/// Values bit-packed least significant bit first, as Parquet packs them.
pub(crate) struct BitWriter<'a> {
    out: &'a mut Vec<u8>,
    acc: u64,
    bits: u32,
}

impl<'a> BitWriter<'a> {
    pub(crate) fn new(out: &'a mut Vec<u8>) -> Self {
        BitWriter {
            out,
            acc: 0,
            bits: 0,
        }
    }

    /// `v` in `width` bits (`v` below 2^width; `width` at most 64).
    #[inline]
    pub(crate) fn put(&mut self, v: u64, width: u32) {
        if width == 0 {
            return;
        }
        self.acc |= v << self.bits;
        let end = self.bits + width;
        if end >= 64 {
            self.out.extend_from_slice(&self.acc.to_le_bytes());
            let taken = 64 - self.bits;
            self.acc = if taken == 64 { 0 } else { v >> taken };
            self.bits = end - 64;
        } else {
            self.bits = end;
        }
    }

    /// The last bits, padded with zeros to a whole byte.
    pub(crate) fn finish(self) {
        let bytes = self.bits.div_ceil(8) as usize;
        self.out.extend_from_slice(&self.acc.to_le_bytes()[..bytes]);
    }
}

/// Values per bit-packed run at most: 63 groups of 8, a one-byte header — what other
/// writers produce, so no reader meets a longer run from us.
const BIT_PACKED_RUN: usize = 63 * 8;

/// Repeats this long or longer (after a group boundary) become an RLE run.
const MIN_REPEAT: usize = 8;

/// `values` in the RLE/bit-packing hybrid at `width` bits (1 to 32): repeats as RLE runs,
/// the rest bit-packed in groups of 8 (the last group padded; the reader knows the count).
pub(crate) fn rle_hybrid(out: &mut Vec<u8>, values: &[u32], width: u32) {
    let n = values.len();
    let mut packed_from = 0;
    let mut i = 0;
    while i < n {
        let v = values[i];
        let mut j = i + 1;
        while j < n && values[j] == v {
            j += 1;
        }
        if j - i < MIN_REPEAT {
            // Too short to be a run wherever the groups fall (most values).
            i = j;
            continue;
        }
        // A bit-packed run must end on a group of 8: the repeat's first values before the
        // next boundary stay packed.
        let boundary = packed_from + (i - packed_from).div_ceil(8) * 8;
        if j >= boundary + MIN_REPEAT {
            bit_packed(out, &values[packed_from..boundary], width);
            uleb(out, ((j - boundary) as u64) << 1);
            let bytes = width.div_ceil(8) as usize;
            out.extend_from_slice(&v.to_le_bytes()[..bytes]);
            packed_from = j;
        }
        i = j;
    }
    bit_packed(out, &values[packed_from..], width);
}

/// Bit-packed runs of `values` (a multiple of 8 but for the last run of a page).
fn bit_packed(out: &mut Vec<u8>, values: &[u32], width: u32) {
    for run in values.chunks(BIT_PACKED_RUN) {
        let groups = run.len().div_ceil(8);
        uleb(out, ((groups as u64) << 1) | 1);
        if width <= 8 {
            // A group of 8 values in at most 8 bits each is one 64-bit word: `width`
            // bytes of it (most dictionaries and every definition level).
            for group in run.chunks(8) {
                let mut word = 0u64;
                for (i, &v) in group.iter().enumerate() {
                    word |= u64::from(v) << (i as u32 * width);
                }
                // All 8 bytes, then the unused cut: a copy of a constant size, not a
                // call to `memcpy` per group.
                out.extend_from_slice(&word.to_le_bytes());
                out.truncate(out.len() - (8 - width as usize));
            }
            continue;
        }
        let mut bits = BitWriter::new(out);
        for &v in run {
            bits.put(u64::from(v), width);
        }
        for _ in run.len()..groups * 8 {
            bits.put(0, width);
        }
        bits.finish();
    }
}

/// Definition levels of an optional column in a v1 data page, after their length in 4
/// bytes: 1 where a value is present, RLE/bit-packed at one bit. `present: None`: every
/// one of the `rows` (one RLE run).
pub(crate) fn definition_levels(out: &mut Vec<u8>, rows: usize, present: Option<&[bool]>) {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    match present {
        None => {
            uleb(out, (rows as u64) << 1);
            out.push(1);
        }
        Some(present) => {
            let levels: Vec<u32> = present.iter().map(|&p| u32::from(p)).collect();
            rle_hybrid(out, &levels, 1);
        }
    }
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
}

/// DELTA_BINARY_PACKED's block: 128 values in 4 miniblocks of 32 (the usual layout).
const BLOCK: usize = 128;
const MINIBLOCKS: usize = 4;
const MINIBLOCK: usize = BLOCK / MINIBLOCKS;

/// `values` DELTA_BINARY_PACKED: the first value, then per block of 128 the smallest delta
/// and each miniblock's deltas above it, bit-packed at the miniblock's own width. INT32
/// columns (lengths) are written the same way: their values and deltas fit in 32 bits.
pub(crate) fn delta_binary_packed(out: &mut Vec<u8>, values: &[i64]) {
    uleb(out, BLOCK as u64);
    uleb(out, MINIBLOCKS as u64);
    uleb(out, values.len() as u64);
    zigzag(out, values.first().copied().unwrap_or(0));
    let mut deltas = [0i64; BLOCK];
    let mut from = 1;
    while from < values.len() {
        let n = (values.len() - from).min(BLOCK);
        // Each value less the one before it: no carried state, so the loop vectorizes.
        for (k, d) in deltas[..n].iter_mut().enumerate() {
            *d = values[from + k].wrapping_sub(values[from + k - 1]);
        }
        delta_block(out, &deltas[..n]);
        from += n;
    }
}

/// The smallest and largest of `values`, `None` for none.
pub(crate) fn min_max(values: &[i64]) -> Option<(i64, i64)> {
    let first = *values.first()?;
    Some(
        values
            .iter()
            .fold((first, first), |(lo, hi), &v| (lo.min(v), hi.max(v))),
    )
}

/// One block of deltas (128, or fewer in the last block: its missing miniblocks have width
/// 0 and no bytes; its last miniblock is padded).
fn delta_block(out: &mut Vec<u8>, deltas: &[i64]) {
    // Each miniblock's smallest and largest in one pass; the block's smallest is theirs.
    let mut lows = [i64::MAX; MINIBLOCKS];
    let mut highs = [i64::MIN; MINIBLOCKS];
    for (m, chunk) in deltas.chunks(MINIBLOCK).enumerate() {
        let (mut low, mut high) = (i64::MAX, i64::MIN);
        for &d in chunk {
            low = low.min(d);
            high = high.max(d);
        }
        (lows[m], highs[m]) = (low, high);
    }
    let min = lows.iter().copied().min().unwrap_or(0);
    zigzag(out, min);
    // Every delta lies between the block's smallest and the miniblock's largest, so each
    // `d - min` fits in u64 whatever wrapped.
    let mut widths = [0u32; MINIBLOCKS];
    for (m, chunk) in deltas.chunks(MINIBLOCK).enumerate() {
        if !chunk.is_empty() {
            widths[m] = width_of(highs[m].wrapping_sub(min) as u64);
        }
    }
    out.extend(widths.iter().map(|&w| w as u8));
    for (m, chunk) in deltas.chunks(MINIBLOCK).enumerate() {
        let mut above = [0u64; MINIBLOCK];
        for (a, &d) in above.iter_mut().zip(chunk) {
            *a = d.wrapping_sub(min) as u64;
        }
        pack_miniblock(out, &above, widths[m]);
    }
}

/// 32 values at `width` bits each: `4 * width` bytes.
///
/// By hand, one unrolled body per width: a bit writer's test and store per value was most
/// of what the deltas cost (BENCHMARKS.md §2q); with the width a constant every shift and
/// store is known before the loop runs.
fn pack_miniblock(out: &mut Vec<u8>, values: &[u64; MINIBLOCK], width: u32) {
    macro_rules! widths {
        ($($w:literal)*) => {
            match width {
                0 => {}
                $($w => pack32::<$w>(out, values),)*
                _ => unreachable!("a width above 64 bits"),
            }
        };
    }
    widths!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30
        31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58
        59 60 61 62 63 64);
}

/// [`pack_miniblock`] at a width known when compiled (1 to 64; each value below 2^W),
/// written out value by value so that every position is a constant.
#[inline(always)]
fn pack32<const W: usize>(out: &mut Vec<u8>, values: &[u64; MINIBLOCK]) {
    let mut words = [0u64; MINIBLOCK];
    macro_rules! put {
        ($($i:literal)*) => {$(
            let (word, shift) = ($i * W / 64, $i * W % 64);
            words[word] |= values[$i] << shift;
            if shift + W > 64 {
                words[word + 1] |= values[$i] >> (64 - shift);
            }
        )*};
    }
    put!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
    let mut bytes = [0u8; MINIBLOCK * 8];
    for (dst, word) in bytes.chunks_exact_mut(8).zip(words) {
        dst.copy_from_slice(&word.to_le_bytes());
    }
    out.extend_from_slice(&bytes[..MINIBLOCK * W / 8]);
}

/// How many leading bytes `a` and `b` share (8 at a time).
#[inline]
fn shared_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = u64::from_le_bytes(a[i..i + 8].try_into().expect("8 bytes"))
            ^ u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        if x != 0 {
            return i + (x.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

/// [`delta_byte_array`]'s working buffers, kept from page to page.
#[derive(Default)]
pub(crate) struct IdBuffers {
    prefixes: Vec<i64>,
    suffix_lengths: Vec<i64>,
    suffixes: Vec<u8>,
}

/// `values` DELTA_BYTE_ARRAY: each value's prefix shared with the one before, then the
/// rest (DELTA_LENGTH_BYTE_ARRAY: the lengths, then the bytes). `on_new` sees each value
/// that differs from the one before it (the first included).
pub(crate) fn delta_byte_array<'v>(
    out: &mut Vec<u8>,
    values: impl Iterator<Item = &'v [u8]>,
    buffers: &mut IdBuffers,
    mut on_new: impl FnMut(&[u8]),
) {
    let IdBuffers {
        prefixes,
        suffix_lengths,
        suffixes,
    } = buffers;
    prefixes.clear();
    suffix_lengths.clear();
    suffixes.clear();
    let mut last: Option<&[u8]> = None;
    for v in values {
        let previous = last.unwrap_or_default();
        let shared = shared_prefix(v, previous);
        if last.is_none() || shared != v.len() || shared != previous.len() {
            on_new(v);
        }
        prefixes.push(shared as i64);
        suffix_lengths.push((v.len() - shared) as i64);
        suffixes.extend_from_slice(&v[shared..]);
        last = Some(v);
    }
    delta_binary_packed(out, prefixes);
    delta_binary_packed(out, suffix_lengths);
    out.extend_from_slice(suffixes);
}

/// A dictionary page's values, PLAIN: each string's length in 4 bytes, then its bytes.
pub(crate) fn plain_strings<'v>(out: &mut Vec<u8>, values: impl Iterator<Item = &'v [u8]>) {
    for v in values {
        out.extend_from_slice(&(v.len() as u32).to_le_bytes());
        out.extend_from_slice(v);
    }
}

/// Booleans PLAIN: one bit each, least significant first.
pub(crate) fn plain_booleans(out: &mut Vec<u8>, values: &[bool]) {
    let mut bits = BitWriter::new(out);
    for &v in values {
        bits.put(u64::from(v), 1);
    }
    bits.finish();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_are_leb128() {
        let mut out = Vec::new();
        uleb(&mut out, 300);
        zigzag(&mut out, -1);
        zigzag(&mut out, 1);
        assert_eq!(out, [0xac, 0x02, 0x01, 0x02]);
    }

    /// Parquet's own example of bit-packing 0..7 at width 3.
    #[test]
    fn bit_packing_is_lsb_first() {
        let mut out = Vec::new();
        let mut bits = BitWriter::new(&mut out);
        for v in 0..8 {
            bits.put(v, 3);
        }
        bits.finish();
        assert_eq!(out, [0b1000_1000, 0b1100_0110, 0b1111_1010]);
        let mut out = Vec::new();
        let mut bits = BitWriter::new(&mut out);
        bits.put(1, 1);
        bits.put(u64::MAX, 64);
        bits.finish();
        assert_eq!(out.len(), 9);
        assert_eq!(out[0], 0xff);
        assert_eq!(out[8], 0x01);
    }

    /// The unrolled packing of every width writes what the bit writer writes.
    #[test]
    fn miniblocks_pack_as_the_bit_writer_does() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for width in 0..=64u32 {
            let mut values = [0u64; MINIBLOCK];
            for v in &mut values {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                *v = if width == 64 {
                    seed
                } else {
                    seed & ((1u64 << width) - 1)
                };
            }
            let mut expected = Vec::new();
            let mut bits = BitWriter::new(&mut expected);
            for &v in &values {
                bits.put(v, width);
            }
            bits.finish();
            let mut packed = vec![0xaa];
            pack_miniblock(&mut packed, &values, width);
            assert_eq!(packed[1..], expected[..], "width {width}");
        }
    }

    /// A long repeat is one RLE run; the values before it are packed up to a boundary.
    #[test]
    fn repeats_become_rle_runs() {
        let mut values = vec![1, 2, 3];
        values.extend([7; 20]);
        let mut out = Vec::new();
        rle_hybrid(&mut out, &values, 3);
        // One packed group (1, 2, 3 and five 7s), then 15 sevens as RLE.
        assert_eq!(out[0], 0b11);
        assert_eq!(&out[4..], [15 << 1, 7]);
    }
}
