//! Parquet files: batches in, files out — one per table and date
//! (`orders/date=YYYY-MM-DD/part-….parquet`), written under a hidden temporary name and
//! renamed once complete, so a reader (DuckDB's glob, a loader watching the directory)
//! never sees half a file.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use arrow_array::RecordBatch;
use arrow_schema::{DataType, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;

use crate::columns::{MessageColumns, OrderColumns};

/// Rows per Parquet row group: small enough that a time-range query skips most of a day's
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
    writer: ArrowWriter<File>,
    temporary: PathBuf,
    done: PathBuf,
}

/// The Parquet files of a run.
pub(crate) struct ParquetFiles {
    dir: PathBuf,
    open: BTreeMap<(Table, String), OpenFile>,
    pub(crate) written: Written,
    next_file: u64,
}

impl ParquetFiles {
    pub(crate) fn new(dir: &Path) -> Self {
        ParquetFiles {
            dir: dir.to_path_buf(),
            open: BTreeMap::new(),
            written: Written::default(),
            next_file: 0,
        }
    }

    /// Writes a batch, each run of rows of one date into that date's file. A row with no
    /// time (a request seen only after its response) goes with the rows before it.
    pub(crate) fn write(
        &mut self,
        table: Table,
        batch: &RecordBatch,
        times: &[Option<i64>],
    ) -> Result<()> {
        // Days compared as numbers; a date is formatted only where the day changes.
        let mut day = times
            .iter()
            .flatten()
            .next()
            .map(|&t| t.div_euclid(NS_PER_DAY));
        let mut date = day.map_or_else(|| "unknown".to_string(), |d| utc_date(d * NS_PER_DAY));
        let mut start = 0;
        for (i, t) in times.iter().enumerate() {
            let Some(t) = t else { continue };
            let d = t.div_euclid(NS_PER_DAY);
            if Some(d) != day {
                if i > start {
                    self.file(table, &date, *t)?
                        .write(&batch.slice(start, i - start))?;
                }
                start = i;
                day = Some(d);
                date = utc_date(*t);
            }
        }
        if times.len() > start {
            let first = times[start..].iter().flatten().next().copied().unwrap_or(0);
            self.file(table, &date, first)?
                .write(&batch.slice(start, times.len() - start))?;
        }
        Ok(())
    }

    /// The open file of `table` for `date`, opened now when there is none.
    fn file(&mut self, table: Table, date: &str, first_ns: i64) -> Result<&mut ArrowWriter<File>> {
        let key = (table, date.to_string());
        if !self.open.contains_key(&key) {
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
            let (schema, id, time) = match table {
                Table::Orders => (OrderColumns::schema(), "clordid", "request_time"),
                Table::Messages => (MessageColumns::schema(), "key", "time"),
                Table::Links => (
                    crate::links::LinkColumns::schema(),
                    "parent_clordid",
                    "request_time",
                ),
            };
            let props = properties(&schema, id, time);
            let writer = new_writer(file, schema, props)?;
            self.open.insert(
                key.clone(),
                OpenFile {
                    writer,
                    temporary,
                    done,
                },
            );
        }
        Ok(&mut self.open.get_mut(&key).expect("opened").writer)
    }

    /// Completes every open file and gives it its name.
    pub(crate) fn close_all(&mut self) -> Result<()> {
        for (_, f) in std::mem::take(&mut self.open) {
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

fn new_writer(file: File, schema: SchemaRef, props: WriterProperties) -> Result<ArrowWriter<File>> {
    ArrowWriter::try_new(file, schema, Some(props)).context("cannot start a Parquet file")
}

/// How each column is written (BENCHMARKS.md §2o measured each choice):
/// - zstd at level 1: the Parquet crate starts a new zstd stream for every page, and level
///   3's tables (768 KB, cleared at every start) cost the writer more than compressing did.
/// - Strings: dictionaries for the columns of few values (the default); the id column
///   with a Bloom filter (one order found without reading the rest), delta-encoded
///   (sequential ids share their prefixes). No min/max statistics: nothing is sorted by a
///   string, so they would let a reader skip nothing, and comparing every value to them
///   was 14% of the writer.
/// - The time column: delta-encoded (it rises), with page statistics (time-range scans
///   skip by them).
/// - Latencies and sequence numbers: delta-encoded — nearly every value differs, so a
///   dictionary only costs, and bit-packed deltas are a third of plain 64-bit values —
///   with min/max statistics ("slower than 1 ms" skips groups by them). The time column
///   and these are not compressed: bit-packed deltas leave zstd almost nothing.
fn properties(schema: &Schema, id_column: &str, time_column: &str) -> WriterProperties {
    let id = ColumnPath::from(id_column);
    let mut builder = WriterProperties::builder()
        .set_compression(Compression::ZSTD(
            ZstdLevel::try_new(1).expect("valid level"),
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

/// Number columns besides the time whose values nearly all differ (any table's).
const MANY_VALUES: &[&str] = &[
    "msg_seq_num",
    "first_response_ns",
    "ack_ns",
    "fill_ns",
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
}
