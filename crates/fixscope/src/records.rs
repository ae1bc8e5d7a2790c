//! `--records DIR`: the pipeline's order records and messages to the Parquet writer
//! (`fixscope_records`), and what was written, said at the end.

use std::cell::RefCell;
use std::rc::Rc;

use anyhow::Result;
use fixscope_core::pipeline::{MessageEvent, OrderRow, RecordSink};
use fixscope_core::Pipeline;

use fixscope_records::{Records, RecordsOptions};

use crate::cli_records::RecordsArgs;
use crate::say;

/// The records of a run, attached to its pipeline; [`RecordsFile::finish`] writes the rest.
pub struct RecordsFile {
    records: Rc<RefCell<Records>>,
    dir: std::path::PathBuf,
}

/// The pipeline's order records into the writer's columns.
struct Sink(Rc<RefCell<Records>>);

impl RecordSink for Sink {
    fn order(&mut self, row: &OrderRow<'_>) {
        self.0.borrow_mut().order(row);
    }
}

impl RecordsFile {
    /// Starts the writer and hooks it to the pipeline when `--records` is given. `live`:
    /// files rotate and a writer behind drops batches (counted) instead of slowing capture.
    pub fn attach(args: &RecordsArgs, pipeline: &mut Pipeline, live: bool) -> Result<Option<Self>> {
        let Some(dir) = &args.records else {
            return Ok(None);
        };
        let records = Records::start(&RecordsOptions {
            dir: dir.clone(),
            rotate: live.then_some(args.records_rotate),
            drop_when_behind: live,
        })?;
        let records = Rc::new(RefCell::new(records));
        pipeline.set_record_sink(Box::new(Sink(Rc::clone(&records))));
        let messages = Rc::clone(&records);
        pipeline.set_message_observer(Box::new(move |e: &MessageEvent<'_>| {
            messages.borrow_mut().message(e);
        }));
        Ok(Some(RecordsFile {
            records,
            dir: dir.clone(),
        }))
    }

    /// Writes what is buffered and closes every file (after the pipeline finished, so the
    /// last orders are in), and says what was written.
    pub fn finish(self) -> Result<()> {
        let summary = self.records.borrow_mut().finish()?;
        say::info(format!(
            "records: {} orders and {} messages in {} Parquet files under {}",
            summary.written.order_rows,
            summary.written.message_rows,
            summary.written.files.len(),
            self.dir.display()
        ));
        if summary.dropped_rows > 0 {
            say::warn(format!(
                "records: {} rows dropped because the writer fell behind (records_dropped_rows)",
                summary.dropped_rows
            ));
        }
        Ok(())
    }
}
