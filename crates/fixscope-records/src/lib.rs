//! Every order kept (`--records DIR`): one Parquet row per request under
//! `DIR/orders/date=YYYY-MM-DD/`, one per FIX request and response under
//! `DIR/messages/date=YYYY-MM-DD/`, and with `--leg` one per router link under
//! `DIR/links/date=YYYY-MM-DD/` — files DuckDB, ClickHouse, pandas, Polars and kdb+ read.
//!
//! The pipeline's thread only appends values to column buffers ([`Records::order`],
//! [`Records::message`]); every 65,536 rows the buffers go over a bounded channel to a
//! writer thread that builds Arrow arrays, encodes Parquet (zstd) and writes. A file is
//! written under a hidden temporary name and renamed when complete, so a reader never sees
//! half a file; live runs close their files every `--records-rotate` and at the stop.
//! Live, a writer that falls behind makes the pipeline drop batches (counted
//! `records_dropped_rows`), never wait; offline, the pipeline waits for the writer.
//!
//! | file | concern |
//! |---|---|
//! | `columns.rs` | the column buffers the pipeline fills, and their Arrow schema |
//! | `strings.rs` | one string column's buffer: bytes and offsets (an empty value is absent) |
//! | `codes.rs` | a column of a fixed vocabulary (outcome, request type, direction, message type): a byte a row |
//! | `chunks.rs` | orders' and messages' row groups: each column chunk's pages and metadata |
//! | `encode.rs` | Parquet's value encodings, by hand (bit-packing, RLE, deltas, dictionaries) |
//! | `writer.rs` | the writer thread: each batch to the files and to ClickHouse |
//! | `links.rs` | the `links` table's columns (`--leg`) |
//! | `files.rs` | Parquet files: partitions by date, temporary names, rotation |
//! | `clickhouse.rs` | `--clickhouse`: tables, `INSERT … FORMAT ArrowStream`, retries |
//! | `name_lookup.rs` | the static binary's host name resolver: `/etc/hosts`, then DNS (no NSS) |

mod chunks;
mod clickhouse;
mod codes;
mod columns;
mod encode;
mod files;
mod links;
pub mod name_lookup;
mod strings;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use fixscope_core::pipeline::{LinkRow, MessageEvent, OrderRow};

pub use clickhouse::{ClickHouseTarget, Delivered};
pub use columns::{MessageColumns, OrderColumns};
pub use files::{Table, Written};
pub use links::LinkColumns;
use writer::{Spares, ToWriter};

/// Rows per batch handed to the writer thread (and per Parquet row group at most).
pub const BATCH_ROWS: usize = 65_536;

/// How records are written.
#[derive(Clone, Debug)]
pub struct RecordsOptions {
    /// Parquet files under this directory (`--records`).
    pub dir: Option<PathBuf>,
    /// Rows sent to ClickHouse too (`--clickhouse`): batches handed over at least every
    /// second, so rows reach it soon after their orders end.
    pub clickhouse: Option<ClickHouseTarget>,
    /// Close the files and start new ones this often (live); `None`: one set per run.
    pub rotate: Option<Duration>,
    /// Drop a batch rather than wait when the writer is behind (live).
    pub drop_when_behind: bool,
}

/// The pipeline's side of the records: column buffers and the channel to the writer.
pub struct Records {
    orders: Box<OrderColumns>,
    messages: Box<MessageColumns>,
    /// Buffers the writer is done with, cleared, to fill again.
    spares: Spares,
    links: LinkColumns,
    to_writer: Option<SyncSender<ToWriter>>,
    writer: Option<JoinHandle<Result<writer::WriterEnd>>>,
    rotate: Option<Duration>,
    last_rotation: Instant,
    /// Hand the buffers over at least this often (ClickHouse).
    flush_every: Option<Duration>,
    last_flush: Instant,
    drop_when_behind: bool,
    dropped_rows: Arc<AtomicU64>,
    /// Rows ClickHouse did not get (its sender adds them as it gives up), when asked.
    clickhouse_failed: Option<Arc<AtomicU64>>,
}

/// What a run's records came to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordsSummary {
    pub written: Written,
    /// What ClickHouse got, when it was asked for.
    pub clickhouse: Option<Delivered>,
    /// Rows dropped because the writer was behind (live only).
    pub dropped_rows: u64,
}

impl Records {
    /// Creates `dir` if needed and starts the writer thread.
    pub fn start(options: &RecordsOptions) -> Result<Self> {
        if let Some(dir) = &options.dir {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            check_writable(dir)?;
        }
        // Four batches in flight: the pipeline never waits on one slow write.
        let (tx, rx) = sync_channel::<ToWriter>(4);
        let dir = options.dir.clone();
        let clickhouse_failed = options
            .clickhouse
            .as_ref()
            .map(|_| Arc::new(AtomicU64::new(0)));
        let clickhouse = options.clickhouse.clone().zip(clickhouse_failed.clone());
        let flush_every = clickhouse.is_some().then_some(Duration::from_secs(1));
        let live = options.drop_when_behind;
        // Emptied buffers come back to be filled again: a batch's columns reach tens of
        // megabytes, and fresh ones every batch cost a page fault per 4 KiB and a copy at
        // every doubling (BENCHMARKS.md §2q).
        let (spares, returns) = writer::spares();
        let writer = std::thread::Builder::new()
            .name("fixscope-records".into())
            .spawn(move || writer::run(dir.as_deref(), clickhouse, live, rx, returns))
            .context("cannot start the records writer")?;
        Ok(Records {
            orders: Box::default(),
            messages: Box::default(),
            spares,
            links: LinkColumns::default(),
            to_writer: Some(tx),
            writer: Some(writer),
            rotate: options.rotate,
            last_rotation: Instant::now(),
            flush_every,
            last_flush: Instant::now(),
            drop_when_behind: options.drop_when_behind,
            dropped_rows: Arc::new(AtomicU64::new(0)),
            clickhouse_failed,
        })
    }

    /// One order's record.
    pub fn order(&mut self, row: &OrderRow<'_>) {
        self.orders.push(row);
        if self.orders.full() {
            self.send_orders();
        }
        self.maybe_rotate();
    }

    /// One parent → child link of a router (`--leg`).
    pub fn link(&mut self, row: &LinkRow<'_>) {
        self.links.push(row);
        if self.links.full() {
            let full = std::mem::take(&mut self.links);
            self.send(ToWriter::Links(Box::new(full)));
        }
        self.maybe_rotate();
    }

    /// One FIX request or response.
    pub fn message(&mut self, event: &MessageEvent<'_>) {
        self.messages.push(event);
        if self.messages.full() {
            self.send_messages();
        }
        self.maybe_rotate();
    }

    /// Nothing arrived: files still close every rotation, rows still reach ClickHouse every
    /// second.
    pub fn idle(&mut self) {
        self.maybe_rotate();
    }

    /// What was lost so far, as counters beside the source's: `records_dropped_rows` (the
    /// writer was behind), `clickhouse_failed_rows` (not delivered, so far: the sender
    /// may still be retrying).
    pub fn counters(&self) -> Vec<(String, u64)> {
        let mut c = vec![("records_dropped_rows".to_string(), self.dropped_rows())];
        if let Some(f) = &self.clickhouse_failed {
            c.push((
                "clickhouse_failed_rows".to_string(),
                f.load(Ordering::Relaxed),
            ));
        }
        c
    }

    /// Rows dropped so far because the writer was behind.
    pub fn dropped_rows(&self) -> u64 {
        self.dropped_rows.load(Ordering::Relaxed)
    }

    /// Live: the files are closed and new ones begun every `--records-rotate`.
    #[inline]
    fn maybe_rotate(&mut self) {
        if self.flush_every.is_none() && self.rotate.is_none() {
            return; // offline: one set of files, nothing on a clock
        }
        self.rotate_when_due();
    }

    fn rotate_when_due(&mut self) {
        if let Some(every) = self.flush_every {
            if self.last_flush.elapsed() >= every {
                self.last_flush = Instant::now();
                self.flush_buffers();
            }
        }
        if let Some(every) = self.rotate {
            if self.last_rotation.elapsed() >= every {
                self.last_rotation = Instant::now();
                self.flush_buffers();
                self.send(ToWriter::Rotate);
            }
        }
    }

    fn flush_buffers(&mut self) {
        if !self.orders.is_empty() {
            self.send_orders();
        }
        if !self.messages.is_empty() {
            self.send_messages();
        }
        if !self.links.is_empty() {
            let l = std::mem::take(&mut self.links);
            self.send(ToWriter::Links(Box::new(l)));
        }
    }

    /// The orders' buffers to the writer; a spare set (or a new one) to fill next.
    fn send_orders(&mut self) {
        let next = self.spares.orders.try_recv().unwrap_or_default();
        let full = std::mem::replace(&mut self.orders, next);
        self.send(ToWriter::Orders(full));
    }

    /// The messages' buffers to the writer, as [`Self::send_orders`].
    fn send_messages(&mut self) {
        let next = self.spares.messages.try_recv().unwrap_or_default();
        let full = std::mem::replace(&mut self.messages, next);
        self.send(ToWriter::Messages(full));
    }

    fn send(&mut self, what: ToWriter) {
        let Some(tx) = self.to_writer.as_ref() else {
            return;
        };
        let result = if self.drop_when_behind {
            match tx.try_send(what) {
                Err(TrySendError::Full(ToWriter::Rotate)) => {
                    // A rotation is never dropped: it only closes files.
                    tx.send(ToWriter::Rotate).map_err(|_| ())
                }
                Err(TrySendError::Full(batch)) => {
                    let rows = match &batch {
                        ToWriter::Orders(o) => o.len(),
                        ToWriter::Messages(m) => m.len(),
                        ToWriter::Links(l) => l.len(),
                        ToWriter::Rotate => 0,
                    };
                    self.dropped_rows.fetch_add(rows as u64, Ordering::Relaxed);
                    Ok(())
                }
                Err(TrySendError::Disconnected(_)) => Err(()),
                Ok(()) => Ok(()),
            }
        } else {
            tx.send(what).map_err(|_| ())
        };
        if result.is_err() {
            // The writer stopped (its error is reported by `finish`): nothing more is sent.
            self.to_writer = None;
        }
    }

    /// Writes what is buffered, closes every file and waits for the writer (rows given
    /// after this are not written).
    pub fn finish(&mut self) -> Result<RecordsSummary> {
        self.flush_buffers();
        drop(self.to_writer.take());
        let writer = self
            .writer
            .take()
            .ok_or_else(|| anyhow!("the records were already finished"))?;
        let (written, clickhouse) = writer
            .join()
            .map_err(|_| anyhow!("the records writer panicked"))??;
        Ok(RecordsSummary {
            written,
            clickhouse,
            dropped_rows: self.dropped_rows(),
        })
    }
}

/// Fails early, with the path, when records cannot be written where asked.
fn check_writable(dir: &Path) -> Result<()> {
    let probe = dir.join(".fixscope-write-check");
    std::fs::write(&probe, b"").with_context(|| format!("cannot write in {}", dir.display()))?;
    let _ = std::fs::remove_file(probe);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use fixscope_core::correlate::{OrderRecord, Outcome, RequestFields, RequestType};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    fn record(key: &[u8], ts: u64) -> OrderRecord {
        OrderRecord {
            scope: 1,
            key: key.to_vec(),
            request_type: RequestType::NewOrder,
            request_ts_ns: Some(ts),
            msg_seq: 7,
            fields: RequestFields::default(),
            first_response_ns: Some(1_234),
            ack_ns: None,
            fill_ns: None,
            outcome: Outcome::Matched,
            timed_out: false,
        }
    }

    fn push(r: &mut Records, rec: &OrderRecord) {
        r.order(&OrderRow {
            record: rec,
            session: 1,
            sender_comp_id: "C",
            target_comp_id: "X",
            request_time_ns: rec.request_ts_ns.map(|t| t as i64),
        });
    }

    fn rows_of(files: &[PathBuf]) -> usize {
        files
            .iter()
            .map(|f| {
                let reader =
                    ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(f).unwrap())
                        .unwrap()
                        .build()
                        .unwrap();
                reader.map(|b| b.unwrap().num_rows()).sum::<usize>()
            })
            .sum()
    }

    /// Rows either side of midnight UTC go to their dates' files; a key that is not UTF-8
    /// is written (replaced), not lost; nothing is left under a temporary name.
    #[test]
    fn rows_go_to_their_dates_and_every_file_is_complete() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = Records::start(&RecordsOptions {
            dir: Some(dir.path().to_path_buf()),
            clickhouse: None,
            rotate: None,
            drop_when_behind: false,
        })
        .unwrap();
        let midnight = 1_764_201_600_000_000_000u64; // 2025-11-27T00:00:00Z
        push(&mut r, &record(b"A", midnight - 1));
        push(&mut r, &record(b"B\xff", midnight));
        push(&mut r, &record(b"C", midnight + 5));
        let s = r.finish().unwrap();
        assert_eq!(s.written.order_rows, 3);
        let names: Vec<String> = s
            .written
            .files
            .iter()
            .map(|f| {
                f.strip_prefix(dir.path())
                    .unwrap()
                    .parent()
                    .unwrap()
                    .display()
                    .to_string()
            })
            .collect();
        assert_eq!(names, ["orders/date=2025-11-26", "orders/date=2025-11-27"]);
        assert_eq!(rows_of(&s.written.files), 3);
        let left: Vec<_> = walk(dir.path())
            .into_iter()
            .filter(|p| !p.ends_with(".parquet"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    /// Rotation closes the files and begins new ones; every row is in a complete file.
    #[test]
    fn rotation_closes_files_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = Records::start(&RecordsOptions {
            dir: Some(dir.path().to_path_buf()),
            clickhouse: None,
            rotate: Some(Duration::ZERO),
            drop_when_behind: false,
        })
        .unwrap();
        for i in 0..5u64 {
            push(
                &mut r,
                &record(format!("K{i}").as_bytes(), 1_764_201_600_000_000_000 + i),
            );
        }
        let s = r.finish().unwrap();
        assert_eq!(s.dropped_rows, 0);
        assert!(s.written.files.len() >= 5, "{:?}", s.written.files);
        assert_eq!(rows_of(&s.written.files), 5);
        assert_eq!(walk(dir.path()).len(), s.written.files.len());
    }

    /// A quiet wire still closes the files every rotation (the driver's `idle`).
    #[test]
    fn a_quiet_period_still_rotates() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = Records::start(&RecordsOptions {
            dir: Some(dir.path().to_path_buf()),
            clickhouse: None,
            rotate: Some(Duration::from_millis(100)),
            drop_when_behind: true,
        })
        .unwrap();
        push(&mut r, &record(b"Q", 1_764_201_600_000_000_000));
        let complete = || {
            walk(dir.path())
                .iter()
                .filter(|p| p.ends_with(".parquet"))
                .count()
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while complete() == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            r.idle();
        }
        assert_eq!(
            complete(),
            1,
            "closed without another row: {:?}",
            walk(dir.path())
        );
        assert_eq!(r.finish().unwrap().written.order_rows, 1);
    }

    fn walk(dir: &Path) -> Vec<String> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p.display().to_string());
            }
        }
        out
    }
}
