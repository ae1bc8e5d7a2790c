//! `--records DIR`: the pipeline's order records and messages to the Parquet writer
//! (`fixscope_records`), and what was written, said at the end.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use anyhow::Result;
use fixscope_core::pipeline::{LinkRow, MessageEvent, OrderRow, RecordSink};
use fixscope_core::Pipeline;

use fixscope_records::{ClickHouseTarget, Records, RecordsOptions, RecordsSummary};

use crate::cli_records::RecordsArgs;
use crate::say;

/// What the writer did, once the pipeline ended the records (before its summary): set on
/// the pipeline's thread, read on the calling thread.
type Ended = Arc<Mutex<Option<Result<RecordsSummary>>>>;

/// The records of a run, attached to its pipeline; [`RecordsFile::finish`] writes the rest.
pub struct RecordsFile {
    /// The records, when their pipeline runs on this thread (ended here if it did not end
    /// them).
    records: Option<Rc<RefCell<Records>>>,
    ended: Ended,
    dir: Option<std::path::PathBuf>,
    clickhouse: Option<String>,
}

/// Started records not yet attached to a pipeline: sent to the thread their pipeline runs
/// on (stage B of a two-stage run).
pub struct RecordsToAttach {
    records: Records,
    ended: Ended,
}

impl RecordsToAttach {
    /// Hooks the records to `pipeline`: its orders' rows and its messages.
    pub fn attach(self, pipeline: &mut Pipeline) -> Rc<RefCell<Records>> {
        let records = Rc::new(RefCell::new(self.records));
        pipeline.set_record_sink(Box::new(Sink {
            records: Rc::clone(&records),
            ended: self.ended,
        }));
        let messages = Rc::clone(&records);
        pipeline.set_message_observer(Box::new(move |e: &MessageEvent<'_>| {
            messages.borrow_mut().message(e);
        }));
        records
    }
}

/// The pipeline's order records into the writer's columns.
struct Sink {
    records: Rc<RefCell<Records>>,
    ended: Ended,
}

impl RecordSink for Sink {
    fn order(&mut self, row: &OrderRow<'_>) {
        self.records.borrow_mut().order(row);
    }

    fn link(&mut self, row: &LinkRow<'_>) {
        self.records.borrow_mut().link(row);
    }

    fn idle(&mut self) {
        self.records.borrow_mut().idle();
    }

    fn end(&mut self) {
        let mut ended = self.ended.lock().expect("records' end not poisoned");
        if ended.is_none() {
            *ended = Some(self.records.borrow_mut().finish());
        }
    }

    fn counters(&self) -> Vec<(String, u64)> {
        self.records.borrow().counters()
    }
}

impl RecordsFile {
    /// Starts the writer and hooks it to the pipeline when `--records` is given. `live`:
    /// files rotate and a writer behind drops batches (counted) instead of slowing capture.
    pub fn attach(args: &RecordsArgs, pipeline: &mut Pipeline, live: bool) -> Result<Option<Self>> {
        let Some((mut file, to_attach)) = RecordsFile::start(args, live)? else {
            return Ok(None);
        };
        file.records = Some(to_attach.attach(pipeline));
        Ok(Some(file))
    }

    /// Starts the writer when `--records` (or `--clickhouse`) is given, for a pipeline on
    /// another thread: the records go there to be attached.
    pub fn start(args: &RecordsArgs, live: bool) -> Result<Option<(Self, RecordsToAttach)>> {
        if args.records.is_none() && args.clickhouse.is_none() {
            return Ok(None);
        }
        let clickhouse = match &args.clickhouse {
            Some(url) => Some(ClickHouseTarget::parse(
                url,
                std::env::var("FIXSCOPE_CLICKHOUSE_PASSWORD").ok(),
            )?),
            None => None,
        };
        // Said without the password.
        let clickhouse_said = clickhouse
            .as_ref()
            .map(|t| format!("{} (database {}, user {})", t.endpoint, t.database, t.user));
        let records = Records::start(&RecordsOptions {
            dir: args.records.clone(),
            clickhouse,
            rotate: live.then_some(args.records_rotate),
            drop_when_behind: live,
        })?;
        let ended: Ended = Arc::new(Mutex::new(None));
        Ok(Some((
            RecordsFile {
                records: None,
                ended: Arc::clone(&ended),
                dir: args.records.clone(),
                clickhouse: clickhouse_said,
            },
            RecordsToAttach { records, ended },
        )))
    }

    /// Writes what is buffered and closes every file (after the pipeline finished, so the
    /// last orders are in), and says what was written.
    pub fn finish(self) -> Result<()> {
        let ended = self.ended.lock().expect("records' end not poisoned").take();
        let summary = match (ended, &self.records) {
            (Some(s), _) => s?,
            (None, Some(records)) => records.borrow_mut().finish()?,
            (None, None) => anyhow::bail!(
                "records: the pipeline stopped before its last orders reached the writer"
            ),
        };
        if let Some(dir) = &self.dir {
            let links = match summary.written.link_rows {
                0 => String::new(),
                n => format!(", {n} router links"),
            };
            say::info(format!(
                "records: {} orders and {} messages{links} in {} Parquet files under {}",
                summary.written.order_rows,
                summary.written.message_rows,
                summary.written.files.len(),
                dir.display()
            ));
        }
        if let (Some(d), Some(to)) = (summary.clickhouse, &self.clickhouse) {
            say::info(format!(
                "clickhouse: {} rows inserted into {to}",
                d.inserted_rows
            ));
            if d.failed_rows > 0 {
                say::warn(format!(
                    "clickhouse: {} rows could not be delivered to {to} (clickhouse_failed_rows)",
                    d.failed_rows
                ));
            }
        }
        if summary.dropped_rows > 0 {
            say::warn(format!(
                "records: {} rows dropped because the writer fell behind (records_dropped_rows)",
                summary.dropped_rows
            ));
        }
        Ok(())
    }
}

/// `fixscope check`: the ClickHouse URL parses (no connection is made).
pub fn check_clickhouse_url(url: &str) -> Result<()> {
    ClickHouseTarget::parse(url, None).map(|_| ())
}
