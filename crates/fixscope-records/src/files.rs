//! Parquet files: batches in, files out — one per table and date
//! (`orders/date=YYYY-MM-DD/part-….parquet`), written under a hidden temporary name and
//! renamed once complete, so a reader (DuckDB's glob, a loader watching the directory)
//! never sees half a file.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context, Result};
use arrow_array::RecordBatch;
use arrow_schema::{DataType, Schema};
use parquet::arrow::{add_encoded_arrow_schema_to_metadata, ArrowSchemaConverter, ArrowWriter};
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::ColumnPath;

use crate::chunks::{ChunkEncoder, Column, ZSTD_LEVEL};
use crate::columns::{MessageColumns, OrderColumns};

/// Rows per Parquet row group of a router's links (orders and messages: one batch,
/// [`crate::BATCH_ROWS`]): small enough that a time-range query skips most of a day's
/// file by the groups' min/max request times, large enough to compress well.
const ROW_GROUP_ROWS: usize = 131_072;

/// What the writer wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Written {
    pub order_rows: u64,
    pub message_rows: u64,
    /// A router's links (`--leg`).
    pub link_rows: u64,
    /// Every file completed, in the order they were closed.
    pub files: Vec<PathBuf>,
}

/// The tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Table {
    Orders,
    Messages,
    /// A router's links (`--leg`).
    Links,
}

impl Table {
    /// The table's name: its directory, and its ClickHouse table.
    pub fn name(self) -> &'static str {
        match self {
            Table::Orders => "orders",
            Table::Messages => "messages",
            Table::Links => "links",
        }
    }
}

/// One file being written.
struct OpenFile {
    writer: FileWriter,
    temporary: PathBuf,
    done: PathBuf,
}

/// Orders and messages have their columns encoded by hand (`chunks.rs`); a router's links,
/// far fewer rows, go through the `parquet` crate's Arrow writer.
enum FileWriter {
    Columns(SerializedFileWriter<File>),
    Arrow(ArrowWriter<File>),
}

impl FileWriter {
    fn close(self) -> Result<()> {
        match self {
            FileWriter::Columns(w) => w.close().map(drop)?,
            FileWriter::Arrow(w) => w.close().map(drop)?,
        }
        Ok(())
    }
}

/// The Parquet files of a run.
pub(crate) struct ParquetFiles {
    open: OpenFiles,
    pub(crate) written: Written,
    chunks: ChunkEncoder,
}

impl ParquetFiles {
    pub(crate) fn new(dir: &Path) -> Result<Self> {
        Ok(ParquetFiles {
            open: OpenFiles {
                dir: dir.to_path_buf(),
                files: BTreeMap::new(),
                next_file: 0,
            },
            written: Written::default(),
            chunks: ChunkEncoder::new()?,
        })
    }

    /// Writes a batch of orders or messages, each run of rows of one date as a row group
    /// of that date's file.
    pub(crate) fn write_columns<T: Copy + Into<Option<i64>>>(
        &mut self,
        table: Table,
        columns: &[Column<'_>],
        times: &[T],
    ) -> Result<()> {
        for (date, rows, first_ns) in date_runs(times) {
            let FileWriter::Columns(file) = self.open.get(table, &date, first_ns)? else {
                bail!("the {} table is written from columns", table.name());
            };
            self.chunks.write_row_group(file, columns, rows)?;
        }
        Ok(())
    }

    /// Writes a batch (a router's links), each run of rows of one date into that date's
    /// file.
    pub(crate) fn write(
        &mut self,
        table: Table,
        batch: &RecordBatch,
        times: &[Option<i64>],
    ) -> Result<()> {
        for (date, rows, first_ns) in date_runs(times) {
            let FileWriter::Arrow(file) = self.open.get(table, &date, first_ns)? else {
                bail!("the {} table is written from Arrow", table.name());
            };
            file.write(&batch.slice(rows.start, rows.len()))?;
        }
        Ok(())
    }

    /// Completes every open file and gives it its name.
    pub(crate) fn close_all(&mut self) -> Result<()> {
        for (_, f) in std::mem::take(&mut self.open.files) {
            f.writer
                .close()
                .with_context(|| format!("cannot write {}", f.temporary.display()))?;
            std::fs::rename(&f.temporary, &f.done)
                .with_context(|| format!("cannot rename {}", f.temporary.display()))?;
            self.written.files.push(f.done);
        }
        Ok(())
    }
}

/// The files being written, one per table and date.
struct OpenFiles {
    dir: PathBuf,
    files: BTreeMap<(Table, String), OpenFile>,
    next_file: u64,
}

impl OpenFiles {
    /// The open file of `table` for `date`, opened now when there is none.
    fn get(&mut self, table: Table, date: &str, first_ns: i64) -> Result<&mut FileWriter> {
        let key = (table, date.to_string());
        if !self.files.contains_key(&key) {
            let dir = self.dir.join(table.name()).join(format!("date={date}"));
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            self.next_file += 1;
            let name = format!(
                "part-{first_ns}-{}-{:04}.parquet",
                std::process::id(),
                self.next_file
            );
            let temporary = dir.join(format!(".{name}.inprogress"));
            let done = dir.join(&name);
            let file = File::create(&temporary)
                .with_context(|| format!("cannot create {}", temporary.display()))?;
            let writer = match table {
                Table::Orders => columns_writer(file, &OrderColumns::schema())?,
                Table::Messages => columns_writer(file, &MessageColumns::schema())?,
                Table::Links => {
                    let schema = crate::links::LinkColumns::schema();
                    let props = properties(&schema, "parent_clordid", "request_time");
                    FileWriter::Arrow(
                        ArrowWriter::try_new(file, schema, Some(props))
                            .context("cannot start a Parquet file")?,
                    )
                }
            };
            self.files.insert(
                key.clone(),
                OpenFile {
                    writer,
                    temporary,
                    done,
                },
            );
        }
        Ok(&mut self.files.get_mut(&key).expect("opened").writer)
    }
}

/// Each run of rows of one UTC date: the date, the rows, the run's first time. A row with
/// no time (a request seen only after its response) goes with the rows before it. Each
/// time is compared with its run's day (no division per row); a date is formatted only
/// where the day changes.
fn date_runs<T: Copy + Into<Option<i64>>>(times: &[T]) -> Vec<(String, Range<usize>, i64)> {
    let mut runs = Vec::new();
    let mut start = 0;
    let mut first: Option<i64> = None;
    let mut day = 0..=0;
    for (i, t) in times.iter().enumerate() {
        let Some(t) = (*t).into() else { continue };
        match first {
            None => {
                first = Some(t);
                day = day_of(t);
            }
            Some(f) if !day.contains(&t) => {
                runs.push((utc_date(f), start..i, f));
                start = i;
                first = Some(t);
                day = day_of(t);
            }
            Some(_) => {}
        }
    }
    if times.len() > start {
        let date = first.map_or_else(|| "unknown".to_string(), utc_date);
        runs.push((date, start..times.len(), first.unwrap_or(0)));
    }
    runs
}

/// The UTC day `t` falls in, in nanoseconds.
fn day_of(t: i64) -> std::ops::RangeInclusive<i64> {
    let midnight = t.div_euclid(NS_PER_DAY) * NS_PER_DAY;
    midnight..=midnight.saturating_add(NS_PER_DAY - 1)
}

/// A file of hand-encoded row groups, with the Arrow schema in its metadata as the Arrow
/// writer puts it (pyarrow and Polars read the same types back).
fn columns_writer(file: File, schema: &Schema) -> Result<FileWriter> {
    Ok(FileWriter::Columns(parquet_writer(file, schema)?))
}

/// The `parquet` crate's file writer for `schema`, for row groups encoded by `chunks.rs`.
pub(crate) fn parquet_writer<W: Write + Send>(
    out: W,
    schema: &Schema,
) -> Result<SerializedFileWriter<W>> {
    let descriptor = ArrowSchemaConverter::new()
        .convert(schema)
        .context("the records' schema in Parquet")?;
    let mut props = WriterProperties::builder()
        .set_max_row_group_size(crate::BATCH_ROWS)
        .build();
    add_encoded_arrow_schema_to_metadata(schema, &mut props);
    SerializedFileWriter::new(out, descriptor.root_schema_ptr(), Arc::new(props))
        .context("cannot start a Parquet file")
}

/// How each column of a router's links is written through the crate's Arrow writer — the
/// same choices `chunks.rs` makes by hand for orders and messages (BENCHMARKS.md §2o
/// measured each):
/// - zstd at level 1: the Parquet crate starts a new zstd stream for every page, and level
///   3's tables (768 KB, cleared at every start) cost the writer more than compressing did.
/// - Strings: dictionaries for the columns of few values (the default); the id column
///   with a Bloom filter (one order found without reading the rest), delta-encoded
///   (sequential ids share their prefixes). No min/max statistics: nothing is sorted by a
///   string, so they would let a reader skip nothing, and comparing every value to them
///   was 14% of the writer.
/// - The time column: delta-encoded (it rises), with page statistics (time-range scans
///   skip by them).
/// - Latencies: delta-encoded — nearly every value differs, so a
///   dictionary only costs, and bit-packed deltas are a third of plain 64-bit values —
///   with min/max statistics ("slower than 1 ms" skips groups by them). The time column
///   and these are not compressed: bit-packed deltas leave zstd almost nothing.
fn properties(schema: &Schema, id_column: &str, time_column: &str) -> WriterProperties {
    let id = ColumnPath::from(id_column);
    let mut builder = WriterProperties::builder()
        .set_compression(Compression::ZSTD(
            ZstdLevel::try_new(ZSTD_LEVEL).expect("valid level"),
        ))
        .set_max_row_group_size(ROW_GROUP_ROWS)
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_column_bloom_filter_enabled(id.clone(), true)
        // Sized for one row group's ids (the default, a million, made the filters most of
        // the messages' bytes).
        .set_column_bloom_filter_ndv(id.clone(), ROW_GROUP_ROWS as u64)
        .set_column_dictionary_enabled(id.clone(), false)
        .set_column_encoding(id, Encoding::DELTA_BYTE_ARRAY);
    for field in schema.fields() {
        let column = ColumnPath::from(field.name().as_str());
        if *field.data_type() == DataType::Utf8 {
            builder = builder.set_column_statistics_enabled(column, EnabledStatistics::None);
        } else if field.name() == time_column || MANY_VALUES.contains(&field.name().as_str()) {
            builder = builder
                .set_column_dictionary_enabled(column.clone(), false)
                .set_column_encoding(column.clone(), Encoding::DELTA_BINARY_PACKED)
                .set_column_compression(column, Compression::UNCOMPRESSED);
        }
    }
    builder.build()
}

/// The links' number columns besides the time whose values nearly all differ.
const MANY_VALUES: &[&str] = &[
    "child_time",
    "hop_out_ns",
    "venue_rtt_ns",
    "hop_back_ns",
    "client_rtt_ns",
];

const NS_PER_DAY: i64 = 86_400_000_000_000;

/// `YYYY-MM-DD` of a UTC time in nanoseconds (before 1970: the epoch's date).
fn utc_date(ns: i64) -> String {
    let t = SystemTime::UNIX_EPOCH + Duration::from_nanos(ns.max(0) as u64);
    humantime::format_rfc3339_seconds(t).to_string()[..10].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc_days() {
        assert_eq!(utc_date(0), "1970-01-01");
        assert_eq!(utc_date(1_764_201_599_999_999_999), "2025-11-26");
        assert_eq!(utc_date(1_764_201_600_000_000_000), "2025-11-27");
        assert_eq!(utc_date(-5), "1970-01-01");
    }

    /// Runs split where the UTC day changes, rows without a time stay with the run before
    /// them, and each run names its own first time.
    #[test]
    fn runs_split_at_midnight() {
        let midnight = 1_764_201_600_000_000_000; // 2025-11-27
        let times = [
            None,
            Some(midnight - 2),
            None,
            Some(midnight - 1),
            Some(midnight),
            None,
            Some(midnight + NS_PER_DAY),
            Some(i64::MAX),
        ];
        let runs: Vec<(String, Range<usize>, i64)> = date_runs(&times);
        assert_eq!(
            runs,
            [
                ("2025-11-26".to_string(), 0..4, midnight - 2),
                ("2025-11-27".to_string(), 4..6, midnight),
                ("2025-11-28".to_string(), 6..7, midnight + NS_PER_DAY),
                ("2262-04-11".to_string(), 7..8, i64::MAX),
            ]
        );
        assert_eq!(date_runs(&[None, None]), [("unknown".to_string(), 0..2, 0)]);
        assert!(date_runs::<Option<i64>>(&[]).is_empty());
    }
}
