//! `--trace FILE`: every request and response as CSV, to check fixscope message by message
//! against an engine's own logs or another tool.

use std::cell::RefCell;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::rc::Rc;

use anyhow::{Context, Result};
use fixscope_core::pipeline::MessageEvent;
use fixscope_core::{Direction, Pipeline};

/// The open trace file; flush it with [`TraceFile::finish`].
pub struct TraceFile {
    out: Rc<RefCell<BufWriter<File>>>,
    path: std::path::PathBuf,
}

impl TraceFile {
    /// Creates the file and hooks it to the pipeline.
    pub fn attach(path: &Path, pipeline: &mut Pipeline) -> Result<Self> {
        let file =
            File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
        let out = Rc::new(RefCell::new(BufWriter::new(file)));
        writeln!(out.borrow_mut(), "ts_ns,session,direction,msg_type,key")?;
        let sink = Rc::clone(&out);
        pipeline.set_message_observer(Box::new(move |e: &MessageEvent<'_>| {
            // Write errors surface at `finish` (BufWriter keeps failing once it failed).
            let _ = write_event(&mut *sink.borrow_mut(), e);
        }));
        Ok(TraceFile {
            out,
            path: path.to_path_buf(),
        })
    }

    pub fn finish(self) -> Result<()> {
        self.out
            .borrow_mut()
            .flush()
            .with_context(|| format!("cannot write {}", self.path.display()))
    }
}

fn write_event(out: &mut impl Write, e: &MessageEvent<'_>) -> std::io::Result<()> {
    let direction = match e.direction {
        Direction::Request => "request",
        Direction::Response => "response",
    };
    let key: String = String::from_utf8_lossy(e.key).replace('\x01', "|");
    let msg_type = String::from_utf8_lossy(e.msg_type);
    write!(out, "{},{},{},{},", e.ts_ns, e.session, direction, msg_type)?;
    if key.contains([',', '"', '\n']) {
        writeln!(out, "\"{}\"", key.replace('"', "\"\""))
    } else {
        writeln!(out, "{key}")
    }
}
