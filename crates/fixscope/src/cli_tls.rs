//! `--tls-keylog FILE` (repeatable) and the captures' own pcapng Decryption Secrets Blocks:
//! the key logs read into one set of secrets.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use fixscope_core::tls::KeyLog;

use crate::say;

/// The secrets of every key log named and of the captures' Decryption Secrets Blocks
/// (`None`: neither, TLS is not looked for).
pub fn key_log(paths: &[PathBuf], captures: &[PathBuf]) -> Result<Option<Arc<KeyLog>>> {
    // Only regular files are looked into: a capture on stdin is read once, by the run.
    let blocks: Vec<Vec<u8>> = captures
        .iter()
        .filter(|c| std::fs::metadata(c).is_ok_and(|m| m.is_file()))
        .flat_map(|c| fixscope_core::pcap::tls_key_log_blocks(c))
        .collect();
    if paths.is_empty() && blocks.is_empty() {
        return Ok(None);
    }
    let mut keys = KeyLog::new();
    for path in paths {
        let text =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        keys.add_text(&text);
    }
    for text in &blocks {
        keys.add_text(text);
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
