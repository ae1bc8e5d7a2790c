//! `--tls-keylog FILE` (repeatable): the key logs read into one set of secrets.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use fixscope_core::tls::KeyLog;

use crate::say;

/// The secrets of every key log named (`None`: no `--tls-keylog`, TLS is not looked for).
pub fn key_log(paths: &[PathBuf]) -> Result<Option<Arc<KeyLog>>> {
    if paths.is_empty() {
        return Ok(None);
    }
    let mut keys = KeyLog::new();
    for path in paths {
        let text =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        keys.add_text(&text);
    }
    let stats = keys.stats();
    if stats.malformed > 0 {
        say::warn(format!(
            "--tls-keylog: {} line(s) are not key log lines (LABEL <client random> <secret>): skipped",
            stats.malformed
        ));
    }
    if keys.is_empty() {
        say::warn("--tls-keylog: no secret found: TLS connections will not be decrypted");
    }
    Ok(Some(Arc::new(keys)))
}
