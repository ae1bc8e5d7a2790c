//! The writer thread: each batch the pipeline hands over goes to the Parquet files (orders
//! and messages encoded from their columns) and, as one Arrow batch, to ClickHouse.

use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
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

/// Column buffers the writer is done with, cleared, on their way back to be filled again
/// (one channel per table, so one table's spares never crowd out the other's).
pub(crate) struct Spares {
    pub(crate) orders: Receiver<Box<OrderColumns>>,
    pub(crate) messages: Receiver<Box<MessageColumns>>,
}

/// The writer's end of [`Spares`].
pub(crate) struct Returns {
    orders: SyncSender<Box<OrderColumns>>,
    messages: SyncSender<Box<MessageColumns>>,
}

/// Spare sets waiting at most per table (more are freed): with four batches in flight,
/// enough that the pipeline's side finds one whenever the writer keeps up.
const SPARES: usize = 4;

pub(crate) fn spares() -> (Spares, Returns) {
    let (orders_tx, orders) = sync_channel(SPARES);
    let (messages_tx, messages) = sync_channel(SPARES);
    (
        Spares { orders, messages },
        Returns {
            orders: orders_tx,
            messages: messages_tx,
        },
    )
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
    returns: Returns,
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
                    let batch = sender.is_some().then(|| o.batch());
                    o.clear();
                    let _ = returns.orders.try_send(o);
                    (Table::Orders, batch)
                }
                ToWriter::Messages(mut m) => {
                    written.message_rows += m.len() as u64;
                    if let Some(f) = files.as_mut() {
                        f.write_columns(Table::Messages, &m.columns(), m.times())?;
                    }
                    let batch = sender.is_some().then(|| m.batch());
                    m.clear();
                    let _ = returns.messages.try_send(m);
                    (Table::Messages, batch)
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
