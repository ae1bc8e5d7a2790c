//! The writer thread: each batch the pipeline hands over becomes an Arrow batch once, for
//! the Parquet files and for ClickHouse.

use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::mpsc::Receiver;
use std::sync::Arc;

use anyhow::Result;

use crate::clickhouse::{ClickHouseSender, ClickHouseTarget, Delivered};
use crate::columns::{MessageColumns, OrderColumns};
use crate::files::{ParquetFiles, Table, Written};
use crate::links::LinkColumns;

/// What goes to the writer thread.
pub(crate) enum ToWriter {
    Orders(Box<OrderColumns>),
    Messages(Box<MessageColumns>),
    Links(Box<LinkColumns>),
    /// Close every open file (rotation).
    Rotate,
}

/// The writer thread's loop, until the pipeline's side hangs up: what was written to
/// files and delivered to ClickHouse.
/// What the writer thread did: rows to files, and to ClickHouse when asked.
pub(crate) type WriterEnd = (Written, Option<Delivered>);

/// `live`: at the end, what is queued for ClickHouse gets one attempt (the exit is not
/// held by a ClickHouse that is down).
pub(crate) fn run(
    dir: Option<&Path>,
    clickhouse: Option<(ClickHouseTarget, Arc<AtomicU64>)>,
    live: bool,
    from_pipeline: Receiver<ToWriter>,
) -> Result<WriterEnd> {
    let mut files = dir.map(ParquetFiles::new);
    let mut sender = clickhouse
        .map(|(target, failed)| ClickHouseSender::start(target, failed))
        .transpose()?;
    let mut written = Written::default();
    let result = (|| -> Result<()> {
        for what in &from_pipeline {
            let (table, batch, times, rows) = match what {
                ToWriter::Orders(mut o) => {
                    let (times, rows) = (o.times().to_vec(), o.len());
                    (Table::Orders, o.batch(), times, rows)
                }
                ToWriter::Messages(mut m) => {
                    let (times, rows) = (m.times(), m.len());
                    (Table::Messages, m.batch(), times, rows)
                }
                ToWriter::Links(mut l) => {
                    let (times, rows) = (l.times().to_vec(), l.len());
                    (Table::Links, l.batch(), times, rows)
                }
                ToWriter::Rotate => {
                    if let Some(f) = files.as_mut() {
                        f.close_all()?;
                    }
                    continue;
                }
            };
            match table {
                Table::Orders => written.order_rows += rows as u64,
                Table::Messages => written.message_rows += rows as u64,
                Table::Links => written.link_rows += rows as u64,
            }
            let batch = Arc::new(batch);
            if let Some(s) = sender.as_ref() {
                s.send(table, Arc::clone(&batch));
            }
            if let Some(f) = files.as_mut() {
                f.write(table, &batch, &times)?;
            }
        }
        if let Some(f) = files.as_mut() {
            f.close_all()?;
        }
        Ok(())
    })();
    let delivered = sender.as_mut().map(|s| s.finish(live));
    result?;
    if let Some(f) = files {
        written.files = f.written.files;
    }
    Ok((written, delivered))
}
