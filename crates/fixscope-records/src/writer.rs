//! The writer thread: each batch the pipeline hands over goes to the Parquet files (orders
//! and messages encoded from their columns) and, as one Arrow batch, to ClickHouse.

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
    let mut files = dir.map(ParquetFiles::new).transpose()?;
    let mut sender = clickhouse
        .map(|(target, failed)| ClickHouseSender::start(target, failed))
        .transpose()?;
    let mut written = Written::default();
    let result = (|| -> Result<()> {
        for what in &from_pipeline {
            // The files are written from the columns first; the Arrow batch, which takes
            // the columns' strings, is built only for ClickHouse (and a router's links).
            let (table, batch) = match what {
                ToWriter::Orders(mut o) => {
                    written.order_rows += o.len() as u64;
                    if let Some(f) = files.as_mut() {
                        f.write_columns(Table::Orders, &o.columns(), o.times())?;
                    }
                    (Table::Orders, sender.is_some().then(|| o.batch()))
                }
                ToWriter::Messages(mut m) => {
                    written.message_rows += m.len() as u64;
                    if let Some(f) = files.as_mut() {
                        f.write_columns(Table::Messages, &m.columns(), &m.times())?;
                    }
                    (Table::Messages, sender.is_some().then(|| m.batch()))
                }
                ToWriter::Links(mut l) => {
                    written.link_rows += l.len() as u64;
                    let batch = l.batch();
                    if let Some(f) = files.as_mut() {
                        f.write(Table::Links, &batch, l.times())?;
                    }
                    (Table::Links, Some(batch))
                }
                ToWriter::Rotate => {
                    if let Some(f) = files.as_mut() {
                        f.close_all()?;
                    }
                    continue;
                }
            };
            if let (Some(s), Some(batch)) = (sender.as_ref(), batch) {
                s.send(table, Arc::new(batch));
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
