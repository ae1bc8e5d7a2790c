//! Every order kept (`--records DIR`): one Parquet row per request under
//! `DIR/orders/date=YYYY-MM-DD/`, one per FIX request and response under
//! `DIR/messages/date=YYYY-MM-DD/` — files DuckDB, ClickHouse, pandas, Polars and kdb+ read.
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
//! | `files.rs` | the writer thread: partitions by date, Parquet files, temporary names, rotation |

mod columns;
mod files;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use fixscope_core::pipeline::{MessageEvent, OrderRow};

pub use columns::{MessageColumns, OrderColumns};
use files::ToWriter;
pub use files::Written;

/// Rows per batch handed to the writer thread (and per Parquet row group at most).
pub const BATCH_ROWS: usize = 65_536;

/// How records are written.
#[derive(Clone, Debug)]
pub struct RecordsOptions {
    pub dir: PathBuf,
    /// Close the files and start new ones this often (live); `None`: one set per run.
    pub rotate: Option<Duration>,
    /// Drop a batch rather than wait when the writer is behind (live).
    pub drop_when_behind: bool,
}

/// The pipeline's side of the records: column buffers and the channel to the writer.
pub struct Records {
    orders: OrderColumns,
    messages: MessageColumns,
    to_writer: Option<SyncSender<ToWriter>>,
    writer: Option<JoinHandle<Result<Written>>>,
    rotate: Option<Duration>,
    last_rotation: Instant,
    drop_when_behind: bool,
    dropped_rows: Arc<AtomicU64>,
}

/// What a run's records came to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordsSummary {
    pub written: Written,
    /// Rows dropped because the writer was behind (live only).
    pub dropped_rows: u64,
}

impl Records {
    /// Creates `dir` if needed and starts the writer thread.
    pub fn start(options: &RecordsOptions) -> Result<Self> {
        std::fs::create_dir_all(&options.dir)
            .with_context(|| format!("cannot create {}", options.dir.display()))?;
        check_writable(&options.dir)?;
        // Four batches in flight: the pipeline never waits on one slow write.
        let (tx, rx) = sync_channel::<ToWriter>(4);
        let dir = options.dir.clone();
        let writer = std::thread::Builder::new()
            .name("fixscope-records".into())
            .spawn(move || files::run(&dir, rx))
            .context("cannot start the records writer")?;
        Ok(Records {
            orders: OrderColumns::default(),
            messages: MessageColumns::default(),
            to_writer: Some(tx),
            writer: Some(writer),
            rotate: options.rotate,
            last_rotation: Instant::now(),
            drop_when_behind: options.drop_when_behind,
            dropped_rows: Arc::new(AtomicU64::new(0)),
        })
    }

    /// One order's record.
    pub fn order(&mut self, row: &OrderRow<'_>) {
        self.orders.push(row);
        if self.orders.len() >= BATCH_ROWS {
            let full = std::mem::take(&mut self.orders);
            self.send(ToWriter::Orders(Box::new(full)));
        }
        self.maybe_rotate();
    }

    /// One FIX request or response.
    pub fn message(&mut self, event: &MessageEvent<'_>) {
        self.messages.push(event);
        if self.messages.len() >= BATCH_ROWS {
            let full = std::mem::take(&mut self.messages);
            self.send(ToWriter::Messages(Box::new(full)));
        }
        self.maybe_rotate();
    }

    /// Rows dropped so far because the writer was behind.
    pub fn dropped_rows(&self) -> u64 {
        self.dropped_rows.load(Ordering::Relaxed)
    }

    /// Live: the files are closed and new ones begun every `--records-rotate`.
    fn maybe_rotate(&mut self) {
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
            let o = std::mem::take(&mut self.orders);
            self.send(ToWriter::Orders(Box::new(o)));
        }
        if !self.messages.is_empty() {
            let m = std::mem::take(&mut self.messages);
            self.send(ToWriter::Messages(Box::new(m)));
        }
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
        let written = writer
            .join()
            .map_err(|_| anyhow!("the records writer panicked"))??;
        Ok(RecordsSummary {
            written,
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
