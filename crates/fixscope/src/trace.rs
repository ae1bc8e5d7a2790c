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
        let points = pipeline.config().points.clone();
        write!(out.borrow_mut(), "ts_ns,session,direction,msg_type,key")?;
        if let Some(p) = &points {
            write!(out.borrow_mut(), ",ts_{}_ns,ts_{}_ns", p.a, p.b)?;
        }
        writeln!(out.borrow_mut())?;
        let sink = Rc::clone(&out);
        let mut scratch = Vec::new();
        pipeline.set_message_observer(Box::new(move |e: &MessageEvent<'_>| {
            // Write errors surface at `finish` (BufWriter keeps failing once it failed).
            let out = &mut *sink.borrow_mut();
            let _ = write_event(out, e, points.is_some());
            if let Some(p) = &points {
                let _ = write_point_columns(out, e, p, &mut scratch);
            }
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

/// `--point`: each point's stamp of the message (the near point's is the row's `ts_ns`;
/// the far point's empty when it did not see the message once).
fn write_point_columns(
    out: &mut impl Write,
    e: &MessageEvent<'_>,
    points: &fixscope_core::points::PointsSetup,
    scratch: &mut Vec<u8>,
) -> std::io::Result<()> {
    let far = points
        .far_messages
        .as_ref()
        .and_then(|m| m.stamp_of(e, scratch))
        .map_or(String::new(), |ts| ts.to_string());
    let near = e.ts_ns.to_string();
    let (a, b) = if points.b_near {
        (far, near)
    } else {
        (near, far)
    };
    writeln!(out, ",{a},{b}")
}

fn write_event(out: &mut impl Write, e: &MessageEvent<'_>, more: bool) -> std::io::Result<()> {
    let direction = match e.direction {
        Direction::Request => "request",
        Direction::Response => "response",
    };
    let key: String = String::from_utf8_lossy(e.key).replace('\x01', "|");
    let msg_type = String::from_utf8_lossy(e.msg_type);
    write!(out, "{},{},{},{},", e.ts_ns, e.session, direction, msg_type)?;
    if key.contains([',', '"', '\n']) {
        write!(out, "\"{}\"", key.replace('"', "\"\""))?;
    } else {
        write!(out, "{key}")?;
    }
    if more {
        Ok(())
    } else {
        writeln!(out)
    }
}
