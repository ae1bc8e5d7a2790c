//! Row groups of the orders and messages tables, each column encoded by hand
//! (`encode.rs`) into its pages and handed to the `parquet` crate's file writer as a
//! finished column chunk (`append_column`), which writes the pages' place, the footer and
//! the Bloom filters.
//!
//! | kind | Parquet | why |
//! |---|---|---|
//! | [`Column::Numbers`] | INT64, DELTA_BINARY_PACKED, uncompressed, min/max | times rise, latencies differ: deltas are small; zstd found nothing left in them; "slower than X" and time ranges skip groups by min/max |
//! | [`Column::Sessions`] | INT64 (unsigned), dictionary, zstd, min/max | few values |
//! | [`Column::Words`] | strings, dictionary, zstd | few values (CompIDs, symbols, accounts, outcomes) |
//! | [`Column::Ids`] | strings, DELTA_BYTE_ARRAY, zstd, Bloom filter | sequential ids share prefixes; one order found without reading the rest |
//! | [`Column::Flags`] | booleans, PLAIN, zstd, min/max | one bit a row |
//! | [`Column::Codes`] | strings, dictionary, zstd | a fixed vocabulary (outcomes, directions): the same pages as [`Column::Words`] of those names |
//!
//! Strings carry no min/max: nothing is sorted by one, so they would let a reader skip
//! nothing. Each column chunk is one page: a row group is at most one batch, 65,536 rows.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Write;
use std::ops::Range;

use anyhow::{anyhow, bail, Context, Result};
use bytes::Bytes;
use parquet::basic::{Compression, Encoding, PageType, ZstdLevel};
use parquet::bloom_filter::Sbbf;
use parquet::column::page::{CompressedPage, Page, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::statistics::Statistics;
use parquet::file::writer::{SerializedFileWriter, SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;

use crate::encode;
use crate::strings::Strings;

/// zstd's level for every compressed page: level 1 compressed the records as well as 3
/// within 2% (BENCHMARKS.md §2o) at a fraction of the time.
pub(crate) const ZSTD_LEVEL: i32 = 1;

/// One column of a batch, as the table holds it.
pub(crate) enum Column<'a> {
    /// Nearly every value differs (times, latencies, sequence numbers).
    Numbers(Numbers<'a>),
    /// Session ids (unsigned).
    Sessions(&'a [u64]),
    /// Strings of few values.
    Words(&'a Strings),
    /// Strings that identify a row (ClOrdID, the correlation key).
    Ids(&'a Strings),
    Flags(&'a [bool]),
    /// A fixed vocabulary: each row's code, the place of its name in `names`.
    Codes {
        codes: &'a [u8],
        names: &'static [&'static str],
        /// The values of the rows whose code is `names.len()` (outside the vocabulary), in
        /// row order.
        others: Option<&'a Strings>,
    },
}

/// 64-bit numbers, every row with one or some absent.
pub(crate) enum Numbers<'a> {
    All(&'a [i64]),
    Some(&'a [Option<i64>]),
}

/// The encoder's state kept between row groups (one per writer thread).
pub(crate) struct ChunkEncoder {
    /// One zstd context for every page: starting a new one per page was most of the
    /// `parquet` crate's compression time on pages this size.
    zstd: zstd::bulk::Compressor<'static>,
    /// A page's bytes before compression (reused).
    body: Vec<u8>,
    /// An optional number column's presence and values (reused).
    present: Vec<bool>,
    numbers: Vec<i64>,
    ids: encode::IdBuffers,
}

impl ChunkEncoder {
    pub(crate) fn new() -> Result<Self> {
        Ok(ChunkEncoder {
            zstd: zstd::bulk::Compressor::new(ZSTD_LEVEL).context("cannot start zstd")?,
            body: Vec::new(),
            present: Vec::new(),
            numbers: Vec::new(),
            ids: encode::IdBuffers::default(),
        })
    }

    /// Rows `rows` of `columns` (in the schema's order) as one row group of `file`.
    pub(crate) fn write_row_group<W: Write + Send>(
        &mut self,
        file: &mut SerializedFileWriter<W>,
        columns: &[Column<'_>],
        rows: Range<usize>,
    ) -> Result<()> {
        let descriptors: Vec<ColumnDescPtr> = file.schema_descr().columns().to_vec();
        if descriptors.len() != columns.len() {
            bail!(
                "{} columns for a schema of {}",
                columns.len(),
                descriptors.len()
            );
        }
        let mut group = file.next_row_group()?;
        for (column, descr) in columns.iter().zip(descriptors) {
            let (bytes, close) = self.chunk(column, descr, rows.clone())?;
            group.append_column(&bytes, close)?;
        }
        group.close()?;
        Ok(())
    }

    /// One column chunk: its pages (with their headers) and its metadata.
    fn chunk(
        &mut self,
        column: &Column<'_>,
        descr: ColumnDescPtr,
        rows: Range<usize>,
    ) -> Result<(Bytes, ColumnCloseResult)> {
        let row_count = rows.len();
        let mut chunk = Chunk::new(descr);
        self.body.clear();
        match column {
            Column::Numbers(Numbers::All(values)) => {
                let values = &values[rows];
                self.levels(&chunk, row_count, None)?;
                self.numbers(&mut chunk, row_count, values)?;
            }
            Column::Numbers(Numbers::Some(values)) => {
                let values = &values[rows];
                let mut present = std::mem::take(&mut self.present);
                let mut numbers = std::mem::take(&mut self.numbers);
                present.clear();
                numbers.clear();
                present.extend(values.iter().map(Option::is_some));
                numbers.reserve(values.len());
                for v in values.iter().flatten() {
                    numbers.push(*v);
                }
                self.levels(&chunk, row_count, Some(&present))?;
                self.numbers(&mut chunk, row_count, &numbers)?;
                (self.present, self.numbers) = (present, numbers);
            }
            Column::Sessions(sessions) => self.sessions(&mut chunk, &sessions[rows])?,
            Column::Words(strings) => self.words(&mut chunk, &utf8(strings), rows)?,
            Column::Ids(strings) => self.ids(&mut chunk, &utf8(strings), rows)?,
            Column::Codes {
                codes,
                names,
                others,
            } => {
                // The others before the group's first row are not its own.
                let skip = match others {
                    Some(_) => codes[..rows.start]
                        .iter()
                        .filter(|&&c| usize::from(c) >= names.len())
                        .count(),
                    None => 0,
                };
                let others = others.map(utf8);
                let others = others.as_deref().map(|o| (o, skip));
                self.codes(&mut chunk, &codes[rows], names, others)?
            }
            Column::Flags(flags) => {
                let flags = &flags[rows];
                self.levels(&chunk, row_count, None)?;
                encode::plain_booleans(&mut self.body, flags);
                let (min, max) = (flags.iter().min(), flags.iter().max());
                chunk.statistics = Some(Statistics::boolean(
                    min.copied(),
                    max.copied(),
                    None,
                    Some(0),
                    false,
                ));
                chunk.data_page(&self.body, row_count, Encoding::PLAIN, Some(&mut self.zstd))?;
            }
        }
        chunk.finish(row_count)
    }

    /// The page's definition levels when the column is optional (`present`: which rows
    /// have a value, `None`: all); a required column must have every row.
    fn levels(&mut self, chunk: &Chunk, rows: usize, present: Option<&[bool]>) -> Result<()> {
        let all = present.is_none_or(|p| p.iter().all(|&p| p));
        if chunk.descr.max_def_level() > 0 {
            encode::definition_levels(&mut self.body, rows, present.filter(|_| !all));
        } else if !all {
            bail!("a row without {}, which every row has", chunk.descr.name());
        }
        Ok(())
    }

    /// Numbers delta-encoded, not compressed, with min/max and the count of absent rows.
    fn numbers(&mut self, chunk: &mut Chunk, rows: usize, values: &[i64]) -> Result<()> {
        // No values: an empty PLAIN page, which every reader takes.
        let encoding = if values.is_empty() {
            Encoding::PLAIN
        } else {
            encode::delta_binary_packed(&mut self.body, values);
            Encoding::DELTA_BINARY_PACKED
        };
        let min_max = encode::min_max(values);
        chunk.statistics = Some(Statistics::int64(
            min_max.map(|m| m.0),
            min_max.map(|m| m.1),
            None,
            Some((rows - values.len()) as u64),
            false,
        ));
        chunk.data_page(&self.body, rows, encoding, None)
    }

    /// Session ids: a dictionary of the few there are.
    fn sessions(&mut self, chunk: &mut Chunk, sessions: &[u64]) -> Result<()> {
        self.levels(chunk, sessions.len(), None)?;
        let mut dictionary = SessionDictionary::default();
        let indices: Vec<u32> = sessions.iter().map(|&s| dictionary.index(s)).collect();
        let mut page = Vec::with_capacity(dictionary.values.len() * 8);
        for v in &dictionary.values {
            page.extend_from_slice(&v.to_le_bytes());
        }
        chunk.dictionary_page(&page, dictionary.values.len(), &mut self.zstd)?;
        dictionary_indices(&mut self.body, &indices, dictionary.values.len());
        // Unsigned order: the ids are stored as INT64 bit patterns.
        let (min, max) = (sessions.iter().min(), sessions.iter().max());
        chunk.statistics = Some(Statistics::int64(
            min.map(|&v| v as i64),
            max.map(|&v| v as i64),
            None,
            Some(0),
            false,
        ));
        chunk.data_page(
            &self.body,
            sessions.len(),
            Encoding::RLE_DICTIONARY,
            Some(&mut self.zstd),
        )
    }

    /// Strings of few values: a dictionary page, then each row's index.
    fn words(&mut self, chunk: &mut Chunk, strings: &Strings, rows: Range<usize>) -> Result<()> {
        let mut present = std::mem::take(&mut self.present);
        strings.presence(rows.clone(), &mut present);
        self.levels(chunk, rows.len(), Some(&present))?;
        self.present = present;
        let (bytes, offsets) = (strings.bytes(), strings.offsets());
        let mut dictionary = Dictionary::default();
        let mut indices = Vec::with_capacity(rows.len());
        for r in rows.clone() {
            let (start, end) = (offsets[r] as usize, offsets[r + 1] as usize);
            if end != start {
                indices.push(dictionary.index(bytes, start, end));
            }
        }
        self.dictionary_pages(chunk, &dictionary.values, &indices, rows.len())
    }

    /// A fixed vocabulary's codes: the dictionary of the names seen, in the order first
    /// seen — the pages [`Self::words`] makes of the same names. A code past the names is
    /// the next of `others` (their values from row `skip` on).
    fn codes(
        &mut self,
        chunk: &mut Chunk,
        codes: &[u8],
        names: &'static [&'static str],
        others: Option<(&Strings, usize)>,
    ) -> Result<()> {
        self.levels(chunk, codes.len(), None)?;
        let mut index = [u32::MAX; 256];
        let mut dictionary = Dictionary::default();
        let mut other_rows = others.map(|(o, skip)| (o, skip..o.len()));
        let mut indices = Vec::with_capacity(codes.len());
        for &c in codes {
            let c = usize::from(c);
            if let Some(name) = names.get(c) {
                if index[c] == u32::MAX {
                    index[c] = dictionary.index(name.as_bytes(), 0, name.len());
                }
                indices.push(index[c]);
                continue;
            }
            let Some((strings, row)) = other_rows.as_mut().and_then(|(s, r)| Some((*s, r.next()?)))
            else {
                bail!("code {c} of {} has no name", chunk.descr.name());
            };
            let offsets = strings.offsets();
            let (start, end) = (offsets[row] as usize, offsets[row + 1] as usize);
            indices.push(dictionary.index(strings.bytes(), start, end));
        }
        self.dictionary_pages(chunk, &dictionary.values, &indices, codes.len())
    }

    /// A dictionary page of `values` and a data page of each row's index (after the levels
    /// already in the body).
    fn dictionary_pages(
        &mut self,
        chunk: &mut Chunk,
        values: &[&[u8]],
        indices: &[u32],
        rows: usize,
    ) -> Result<()> {
        let mut page = Vec::new();
        encode::plain_strings(&mut page, values.iter().copied());
        chunk.dictionary_page(&page, values.len(), &mut self.zstd)?;
        dictionary_indices(&mut self.body, indices, values.len());
        chunk.data_page(
            &self.body,
            rows,
            Encoding::RLE_DICTIONARY,
            Some(&mut self.zstd),
        )
    }

    /// Ids: delta-encoded against the row before, with a Bloom filter.
    fn ids(&mut self, chunk: &mut Chunk, strings: &Strings, rows: Range<usize>) -> Result<()> {
        let mut present = std::mem::take(&mut self.present);
        strings.presence(rows.clone(), &mut present);
        self.levels(chunk, rows.len(), Some(&present))?;
        let count = present.iter().filter(|&&p| p).count();
        self.present = present;
        let values = rows.clone().filter_map(|r| strings.value(r));
        let mut bloom = bloom_filter(count)?;
        // A message's key is most often its order's, as the row before had it: it goes in
        // the filter once.
        encode::delta_byte_array(&mut self.body, values, &mut self.ids, |v| bloom.insert(v));
        chunk.bloom_filter = Some(bloom);
        chunk.data_page(
            &self.body,
            rows.len(),
            Encoding::DELTA_BYTE_ARRAY,
            Some(&mut self.zstd),
        )
    }
}

/// The column's values as valid UTF-8, which Parquet strings must be: FIX values are
/// ASCII, so nearly always as they are; a column with any other byte has each value
/// replaced lossily.
fn utf8(strings: &Strings) -> Cow<'_, Strings> {
    if strings.bytes().is_ascii() {
        Cow::Borrowed(strings)
    } else {
        Cow::Owned(strings.lossy_utf8())
    }
}

/// Dictionary indices in a data page: their bit width, then the RLE/bit-packing hybrid.
fn dictionary_indices(out: &mut Vec<u8>, indices: &[u32], dictionary_len: usize) {
    // At least one bit: a one-value dictionary would need none, and not every reader
    // takes width 0.
    let width = encode::width_of(dictionary_len.saturating_sub(1) as u64).max(1);
    out.push(width as u8);
    encode::rle_hybrid(out, indices, width);
}

/// A Bloom filter for `values` distinct values at most, at a 5% false-positive rate (the
/// `parquet` crate's default), its size rounded up to a power of two as the crate does.
fn bloom_filter(values: usize) -> Result<Sbbf> {
    const FPP: f64 = 0.05;
    let bits = -8.0 * values.max(1) as f64 / (1.0 - FPP.powf(1.0 / 8.0)).ln();
    let bytes = ((bits / 8.0) as usize)
        .clamp(32, 128 << 20)
        .next_power_of_two();
    // BloomFilterHeader in Thrift's compact protocol: numBytes, then the only algorithm,
    // hash and compression the format has (split blocks, xxHash64, uncompressed).
    let mut header = vec![0x15];
    encode::zigzag(&mut header, bytes as i64);
    header.extend_from_slice(&[0x1c, 0x1c, 0x00, 0x00, 0x1c, 0x1c, 0x00, 0x00]);
    header.extend_from_slice(&[0x1c, 0x1c, 0x00, 0x00, 0x00]);
    header.resize(header.len() + bytes, 0);
    Sbbf::from_bytes(&header).map_err(|e| anyhow!("bloom filter: {e}"))
}

/// Distinct values of one column chunk in first-seen order, and each value's index.
///
/// By hand because it runs for every value of every string column: a value of up to 15
/// bytes (CompIDs, symbols, sides, outcomes, most accounts) is one 16-byte key — its bytes
/// and its length — found by one multiply in an open-addressed table; longer values go to
/// a general map. A general map for every value was a third of the writer.
#[derive(Default)]
struct Dictionary<'a> {
    slots: Slots,
    long: HashMap<&'a [u8], u32>,
    values: Vec<&'a [u8]>,
}

impl<'a> Dictionary<'a> {
    /// The index of `bytes[start..end]`.
    #[inline]
    fn index(&mut self, bytes: &'a [u8], start: usize, end: usize) -> u32 {
        let value = &bytes[start..end];
        let len = value.len();
        let next = self.values.len() as u32;
        let i = if len > 15 {
            *self.long.entry(value).or_insert(next)
        } else {
            // The 16 bytes from the value's start, masked to its length (one load, no
            // copy), or copied at the buffer's end.
            let raw = match bytes.get(start..start + 16) {
                Some(b) => u128::from_le_bytes(b.try_into().expect("16 bytes")),
                None => {
                    let mut b = [0u8; 16];
                    b[..len].copy_from_slice(value);
                    u128::from_le_bytes(b)
                }
            };
            let key = (raw & LENGTH_MASKS[len]) | ((len as u128) << 120);
            self.slots.find_or_insert(key, next)
        };
        if i == next {
            self.values.push(value);
        }
        i
    }
}

/// The low `n` bytes of a 128-bit word, for `n` below 16.
const LENGTH_MASKS: [u128; 16] = {
    let mut masks = [0u128; 16];
    let mut n = 1;
    while n < 16 {
        masks[n] = (1u128 << (8 * n)) - 1;
        n += 1;
    }
    masks
};

/// Session ids' dictionary.
#[derive(Default)]
struct SessionDictionary {
    slots: Slots,
    values: Vec<u64>,
}

impl SessionDictionary {
    #[inline]
    fn index(&mut self, session: u64) -> u32 {
        let next = self.values.len() as u32;
        let i = self.slots.find_or_insert(u128::from(session), next);
        if i == next {
            self.values.push(session);
        }
        i
    }
}

/// An open-addressed table of 128-bit keys to indices: a power of two long, at most half
/// full, linear probing.
struct Slots {
    /// (key, index); index `u32::MAX`: empty.
    slots: Vec<(u128, u32)>,
    filled: usize,
}

impl Default for Slots {
    fn default() -> Self {
        Slots {
            slots: vec![(0, u32::MAX); 64],
            filled: 0,
        }
    }
}

impl Slots {
    /// `key`'s index, or `next` after putting `key` in with it.
    #[inline(always)]
    fn find_or_insert(&mut self, key: u128, next: u32) -> u32 {
        let mask = self.slots.len() - 1;
        let mut slot = slot_of(key, mask);
        loop {
            let (k, i) = self.slots[slot];
            if i == u32::MAX {
                break;
            }
            if k == key {
                return i;
            }
            slot = (slot + 1) & mask;
        }
        self.slots[slot] = (key, next);
        self.filled += 1;
        if self.filled * 2 > self.slots.len() {
            self.grow();
        }
        next
    }

    fn grow(&mut self) {
        let doubled = vec![(0, u32::MAX); self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, doubled);
        let mask = self.slots.len() - 1;
        for (key, i) in old.into_iter().filter(|&(_, i)| i != u32::MAX) {
            let mut slot = slot_of(key, mask);
            while self.slots[slot].1 != u32::MAX {
                slot = (slot + 1) & mask;
            }
            self.slots[slot] = (key, i);
        }
    }
}

/// A key's first slot: its halves folded and multiplied (Fibonacci hashing), top bits.
#[inline]
fn slot_of(key: u128, mask: usize) -> usize {
    let folded = (key as u64) ^ ((key >> 64) as u64).rotate_left(29);
    (folded.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) as usize & mask
}

/// A column chunk being written: its pages in memory, and what its metadata needs.
struct Chunk {
    descr: ColumnDescPtr,
    sink: TrackedWrite<Vec<u8>>,
    compression: Compression,
    dictionary_offset: Option<i64>,
    data_offset: i64,
    uncompressed: i64,
    values: i64,
    encodings: Vec<Encoding>,
    statistics: Option<Statistics>,
    bloom_filter: Option<Sbbf>,
}

impl Chunk {
    fn new(descr: ColumnDescPtr) -> Self {
        Chunk {
            descr,
            sink: TrackedWrite::new(Vec::new()),
            compression: Compression::UNCOMPRESSED,
            dictionary_offset: None,
            data_offset: 0,
            uncompressed: 0,
            values: 0,
            encodings: vec![Encoding::RLE],
            statistics: None,
            bloom_filter: None,
        }
    }

    fn dictionary_page(
        &mut self,
        values: &[u8],
        count: usize,
        zstd: &mut zstd::bulk::Compressor<'static>,
    ) -> Result<()> {
        self.compression = Compression::ZSTD(ZstdLevel::try_new(ZSTD_LEVEL)?);
        let buf = Bytes::from(zstd.compress(values).context("zstd")?);
        let page = Page::DictionaryPage {
            buf,
            num_values: count as u32,
            encoding: Encoding::PLAIN,
            is_sorted: false,
        };
        let spec = SerializedPageWriter::new(&mut self.sink)
            .write_page(CompressedPage::new(page, values.len()))?;
        self.dictionary_offset = Some(spec.offset as i64);
        self.uncompressed += spec.uncompressed_size as i64;
        self.encodings.push(Encoding::PLAIN);
        Ok(())
    }

    /// The chunk's one data page (v1): `body` is its levels and values.
    fn data_page(
        &mut self,
        body: &[u8],
        rows: usize,
        encoding: Encoding,
        zstd: Option<&mut zstd::bulk::Compressor<'static>>,
    ) -> Result<()> {
        let buf = match zstd {
            Some(z) => {
                self.compression = Compression::ZSTD(ZstdLevel::try_new(ZSTD_LEVEL)?);
                Bytes::from(z.compress(body).context("zstd")?)
            }
            None => Bytes::copy_from_slice(body),
        };
        let page = Page::DataPage {
            buf,
            num_values: rows as u32,
            encoding,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        };
        let spec = SerializedPageWriter::new(&mut self.sink)
            .write_page(CompressedPage::new(page, body.len()))?;
        debug_assert_eq!(spec.page_type, PageType::DATA_PAGE);
        self.data_offset = spec.offset as i64;
        self.uncompressed += spec.uncompressed_size as i64;
        self.values += rows as i64;
        if !self.encodings.contains(&encoding) {
            self.encodings.push(encoding);
        }
        Ok(())
    }

    fn finish(self, rows: usize) -> Result<(Bytes, ColumnCloseResult)> {
        let bytes = Bytes::from(self.sink.into_inner()?);
        let mut metadata = ColumnChunkMetaData::builder(self.descr)
            .set_compression(self.compression)
            .set_encodings(self.encodings)
            .set_num_values(self.values)
            .set_total_compressed_size(bytes.len() as i64)
            .set_total_uncompressed_size(self.uncompressed)
            .set_data_page_offset(self.data_offset)
            .set_dictionary_page_offset(self.dictionary_offset);
        if let Some(s) = self.statistics {
            metadata = metadata.set_statistics(s);
        }
        let close = ColumnCloseResult {
            bytes_written: bytes.len() as u64,
            rows_written: rows as u64,
            metadata: metadata.build()?,
            bloom_filter: self.bloom_filter,
            column_index: None,
            offset_index: None,
        };
        Ok((bytes, close))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{
        Array, BooleanArray, Int64Array, RecordBatch, StringArray, TimestampNanosecondArray,
        UInt64Array,
    };
    use arrow_schema::{DataType, Field, Schema};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::file::properties::ReaderProperties;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::file::serialized_reader::ReadOptionsBuilder;
    use proptest::prelude::*;
    use std::sync::Arc;

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("some", DataType::Int64, true),
            Field::new("all", crate::columns::utc_ns(), false),
            Field::new("session", DataType::UInt64, false),
            Field::new("word", DataType::Utf8, true),
            Field::new("id", DataType::Utf8, true),
            Field::new("flag", DataType::Boolean, false),
        ])
    }

    #[derive(Debug, Clone)]
    struct Rows {
        some: Vec<Option<i64>>,
        all: Vec<i64>,
        session: Vec<u64>,
        word: Vec<Option<Vec<u8>>>,
        id: Vec<Option<Vec<u8>>>,
        flag: Vec<bool>,
    }

    fn strings(values: &[Option<Vec<u8>>]) -> Strings {
        let mut s = Strings::default();
        for v in values {
            match v {
                Some(v) => s.push(v),
                None => s.push(b""),
            }
        }
        s
    }

    /// Numbers that stress the deltas: extremes, wraps, runs, small steps.
    fn number() -> impl Strategy<Value = i64> {
        prop_oneof![
            Just(i64::MIN),
            Just(i64::MAX),
            Just(0i64),
            -1000i64..1000,
            any::<i64>(),
            1_700_000_000_000_000_000i64..1_700_000_000_001_000_000,
        ]
    }

    /// Strings of few values, some long (over 15 bytes), some not UTF-8, some empty.
    fn word() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            Just(b"AAPL".to_vec()),
            Just(b"MSFT".to_vec()),
            Just(Vec::new()),
            Just(b"A-VERY-LONG-ACCOUNT-NAME".to_vec()),
            Just(b"caf\xc3\xa9".to_vec()),
            Just(b"bad\xff".to_vec()),
            proptest::collection::vec(any::<u8>(), 0..20),
        ]
    }

    fn rows() -> impl Strategy<Value = Rows> {
        (0usize..1200).prop_flat_map(|n| {
            (
                proptest::collection::vec(proptest::option::of(number()), n),
                proptest::collection::vec(number(), n),
                proptest::collection::vec(prop_oneof![Just(1u64), Just(u64::MAX), any::<u64>()], n),
                proptest::collection::vec(proptest::option::weighted(0.9, word()), n),
                proptest::collection::vec(
                    proptest::option::weighted(0.95, proptest::collection::vec(any::<u8>(), 0..30)),
                    n,
                ),
                proptest::collection::vec(any::<bool>(), n),
            )
                .prop_map(|(some, all, session, word, id, flag)| Rows {
                    some,
                    all,
                    session,
                    word,
                    id,
                    flag,
                })
        })
    }

    /// What a column of `values` reads back as: not UTF-8 replaced, empty absent.
    fn lossy(values: &[Option<Vec<u8>>]) -> Vec<Option<String>> {
        values
            .iter()
            .map(|v| {
                v.as_ref()
                    .filter(|v| !v.is_empty())
                    .map(|v| String::from_utf8_lossy(v).into_owned())
            })
            .collect()
    }

    fn read_strings(batch: &RecordBatch, column: usize) -> Vec<Option<String>> {
        let a = batch
            .column(column)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        (0..a.len())
            .map(|i| a.is_valid(i).then(|| a.value(i).to_string()))
            .collect()
    }

    /// Writes `rows` as row groups split at `split` and reads them back with the `parquet`
    /// crate's reader: every value, absence and type as written, per-group min/max right,
    /// and every id found by its group's Bloom filter.
    fn round_trip(rows: &Rows, split: usize) {
        let schema = schema();
        let (word, id) = (strings(&rows.word), strings(&rows.id));
        let columns = [
            Column::Numbers(Numbers::Some(&rows.some)),
            Column::Numbers(Numbers::All(&rows.all)),
            Column::Sessions(&rows.session),
            Column::Words(&word),
            Column::Ids(&id),
            Column::Flags(&rows.flag),
        ];
        let n = rows.all.len();
        let mut file = crate::files::parquet_writer(Vec::new(), &schema).unwrap();
        let mut encoder = ChunkEncoder::new().unwrap();
        for range in [0..split.min(n), split.min(n)..n] {
            if !range.is_empty() {
                encoder.write_row_group(&mut file, &columns, range).unwrap();
            }
        }
        let bytes = Bytes::from(file.into_inner().unwrap());

        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes.clone())
            .unwrap()
            .build()
            .unwrap();
        let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
        let batch = arrow_select_concat(&batches, &schema);
        assert_eq!(batch.num_rows(), n);
        let some = batch
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        assert_eq!(some.iter().collect::<Vec<_>>(), rows.some);
        let all = batch
            .column(1)
            .as_any()
            .downcast_ref::<TimestampNanosecondArray>()
            .unwrap();
        assert_eq!(all.values().to_vec(), rows.all);
        let session = batch
            .column(2)
            .as_any()
            .downcast_ref::<UInt64Array>()
            .unwrap();
        assert_eq!(session.values().to_vec(), rows.session);
        assert_eq!(read_strings(&batch, 3), lossy(&rows.word));
        assert_eq!(read_strings(&batch, 4), lossy(&rows.id));
        let flag = batch
            .column(5)
            .as_any()
            .downcast_ref::<BooleanArray>()
            .unwrap();
        assert_eq!(
            flag.iter().map(Option::unwrap).collect::<Vec<_>>(),
            rows.flag
        );

        let options = ReadOptionsBuilder::new()
            .with_reader_properties(
                ReaderProperties::builder()
                    .set_read_bloom_filter(true)
                    .build(),
            )
            .build();
        let reader = SerializedFileReader::new_with_options(bytes, options).unwrap();
        let mut start = 0;
        for g in 0..reader.num_row_groups() {
            let group = reader.get_row_group(g).unwrap();
            let meta = group.metadata();
            let rows_here = meta.num_rows() as usize;
            let range = start..start + rows_here;
            start += rows_here;
            let present: Vec<i64> = rows.some[range.clone()].iter().flatten().copied().collect();
            let stats = meta.column(0).statistics().unwrap();
            assert_eq!(
                stats
                    .min_bytes_opt()
                    .map(|b| i64::from_le_bytes(b.try_into().unwrap())),
                present.iter().min().copied()
            );
            assert_eq!(
                stats
                    .max_bytes_opt()
                    .map(|b| i64::from_le_bytes(b.try_into().unwrap())),
                present.iter().max().copied()
            );
            assert_eq!(
                stats.null_count_opt(),
                Some((rows_here - present.len()) as u64)
            );
            let bloom = group
                .get_column_bloom_filter(4)
                .expect("a Bloom filter on ids");
            for v in lossy(&rows.id[range]).into_iter().flatten() {
                assert!(bloom.check(&v.as_str()), "{v:?} not in the filter");
            }
        }
        assert_eq!(start, n);
    }

    fn arrow_select_concat(batches: &[RecordBatch], schema: &Schema) -> RecordBatch {
        if batches.len() == 1 {
            return batches[0].clone();
        }
        let schema = Arc::new(schema.clone());
        if batches.is_empty() {
            return RecordBatch::new_empty(schema);
        }
        let columns = (0..schema.fields().len())
            .map(|c| {
                let arrays: Vec<&dyn Array> =
                    batches.iter().map(|b| b.column(c).as_ref()).collect();
                arrow_select::concat::concat(&arrays).unwrap()
            })
            .collect();
        RecordBatch::try_new(schema, columns).unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn every_value_reads_back_as_written(rows in rows(), split in 0usize..1200) {
            round_trip(&rows, split);
        }
    }

    /// Long repeats and long unrepeated stretches (RLE runs, bit-packed runs split at 504
    /// values, a one-value dictionary, indices wider than a byte) read back.
    /// Codes read back as their names, and a code past the names as its own value, in
    /// whichever row group its row falls (the others before a group are skipped).
    #[test]
    fn codes_and_their_others_read_back_in_every_row_group() {
        use crate::codes::MessageTypes;
        let schema = Schema::new(vec![Field::new("t", DataType::Utf8, false)]);
        let values: Vec<&[u8]> = vec![b"8", b"AE", b"D", b"9", b"x\xff", b"AE", b"G", b"F", b"8"];
        let mut types = MessageTypes::default();
        for v in &values {
            types.push(v);
        }
        let expected: Vec<String> = values
            .iter()
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .collect();
        for split in 0..=values.len() {
            let columns = [Column::Codes {
                codes: types.codes(),
                names: MessageTypes::NAMES,
                others: Some(types.others()),
            }];
            let mut file = crate::files::parquet_writer(Vec::new(), &schema).unwrap();
            let mut encoder = ChunkEncoder::new().unwrap();
            for range in [0..split, split..values.len()] {
                if !range.is_empty() {
                    encoder.write_row_group(&mut file, &columns, range).unwrap();
                }
            }
            let bytes = Bytes::from(file.into_inner().unwrap());
            let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
                .unwrap()
                .build()
                .unwrap();
            let read: Vec<String> = reader
                .flat_map(|b| read_strings(&b.unwrap(), 0))
                .map(Option::unwrap)
                .collect();
            assert_eq!(read, expected, "split at {split}");
        }
    }

    #[test]
    fn long_runs_read_back() {
        let n = 5000;
        let rows = Rows {
            some: (0..n)
                .map(|i| (i % 700 < 600).then_some(i as i64 * 3))
                .collect(),
            all: (0..n)
                .map(|i| 1_700_000_000_000_000_000 + i as i64 * 1000)
                .collect(),
            session: vec![7; n],
            word: (0..n)
                .map(|i| {
                    Some(if i < 3000 {
                        b"X".to_vec()
                    } else {
                        format!("w{}", i % 1500).into_bytes()
                    })
                })
                .collect(),
            id: (0..n)
                .map(|i| Some(format!("ORD-{i:012}").into_bytes()))
                .collect(),
            flag: (0..n).map(|i| i % 3 == 0).collect(),
        };
        round_trip(&rows, 4096);
    }
}
