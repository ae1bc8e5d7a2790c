//! SIGHUP reopens the files a long run writes line by line (`--hlog`, `--json-file`), as
//! daemons do for logrotate: after logrotate renamed a file, the next report goes to a new
//! file at the same path. Reports are whole (an interval is never split): the switch happens
//! between two of them, so no interval is lost or written twice.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use fixscope_core::hlog::HlogWriter;
use fixscope_core::report::json::JsonReporter;
use fixscope_core::report::{IntervalReport, Reporter, SummaryReport};
use signal_hook::consts::SIGHUP;
use signal_hook::SigId;

use crate::say;

/// A SIGHUP seen since the last look. While one lives, SIGHUP no longer ends the process
/// (its default action would: a live run would leave its tc filters behind).
pub struct Hangup {
    flag: Arc<AtomicBool>,
    id: SigId,
}

impl Hangup {
    pub fn register() -> io::Result<Hangup> {
        let flag = Arc::new(AtomicBool::new(false));
        let id = signal_hook::flag::register(SIGHUP, Arc::clone(&flag))?;
        Ok(Hangup { flag, id })
    }

    /// Whether a SIGHUP came since the last call.
    pub fn take(&self) -> bool {
        self.flag.swap(false, Ordering::Relaxed)
    }
}

impl Drop for Hangup {
    fn drop(&mut self) {
        signal_hook::low_level::unregister(self.id);
    }
}

/// A reporter writing into a file that can go on in another one.
pub trait Reopen {
    /// Flushes the current file and writes into `file` from now on.
    fn reopen(&mut self, file: File) -> io::Result<()>;
}

impl Reopen for HlogWriter<BufWriter<File>> {
    fn reopen(&mut self, file: File) -> io::Result<()> {
        // The new file starts with the run's header (see HlogWriter::switch_to).
        self.switch_to(BufWriter::new(file))?.flush()
    }
}

impl Reopen for JsonReporter<BufWriter<File>> {
    fn reopen(&mut self, file: File) -> io::Result<()> {
        // JSON lines: each line stands alone, nothing to repeat.
        let old = std::mem::replace(self, JsonReporter::new(BufWriter::new(file)));
        old.into_inner().flush()
    }
}

/// (device, inode): which file a path names.
fn identity(meta: &std::fs::Metadata) -> (u64, u64) {
    (meta.dev(), meta.ino())
}

/// `reporter` writing to `path`, switched to a new file at `path` at the first report after
/// a SIGHUP when the file was renamed or removed (a SIGHUP that moved nothing changes
/// nothing).
pub struct ReopenOnHangup<R> {
    inner: R,
    path: PathBuf,
    /// The flag that names it (`--hlog`) in messages.
    flag: &'static str,
    writing_to: (u64, u64),
    hangup: Hangup,
}

impl<R: Reporter + Reopen> ReopenOnHangup<R> {
    /// `file` is the open file at `path` that `inner` writes to.
    pub fn new(inner: R, file: &File, path: &Path, flag: &'static str) -> io::Result<Self> {
        Ok(ReopenOnHangup {
            inner,
            path: path.to_path_buf(),
            flag,
            writing_to: identity(&file.metadata()?),
            hangup: Hangup::register()?,
        })
    }

    fn follow_rename(&mut self) -> io::Result<()> {
        if !self.hangup.take() {
            return Ok(());
        }
        let moved = std::fs::metadata(&self.path).map_or(true, |m| identity(&m) != self.writing_to);
        if !moved {
            return Ok(());
        }
        // Appending: logrotate's `create` may have made the new (empty) file already.
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "SIGHUP: cannot reopen {} {}: {e}",
                        self.flag,
                        self.path.display()
                    ),
                )
            })?;
        self.writing_to = identity(&file.metadata()?);
        self.inner.reopen(file)?;
        say::info(format!(
            "SIGHUP: {} continues in a new {}",
            self.flag,
            self.path.display()
        ));
        Ok(())
    }
}

impl<R: Reporter + Reopen> Reporter for ReopenOnHangup<R> {
    fn interval(&mut self, r: &IntervalReport<'_>) -> io::Result<()> {
        self.follow_rename()?;
        self.inner.interval(r)
    }

    fn summary(&mut self, r: &SummaryReport<'_>) -> io::Result<()> {
        self.follow_rename()?;
        self.inner.summary(r)
    }
}
