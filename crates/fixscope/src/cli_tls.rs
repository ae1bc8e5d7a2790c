//! `--tls-keylog FILE` (repeatable) and the captures' own pcapng Decryption Secrets Blocks:
//! the key logs read into one set of secrets. Offline every line is read up front (no
//! connection waits for one); live the files are followed as engines append to them.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use fixscope_core::tls::{KeyLog, KeyStore};
use fixscope_core::PipelineConfig;

use crate::say;

/// `live`'s TLS flags.
#[derive(Args, Debug, Clone, Default)]
pub struct LiveTlsArgs {
    /// FIX over TLS: decrypt with the secrets of this NSS key log (`SSLKEYLOGFILE`
    /// format; repeatable), followed as it grows: a session that connects after fixscope
    /// started is decrypted from its first record (a connection whose line is not there
    /// yet is held up to 5 s after its ServerHello). A TLS connection without its key is
    /// counted (`tls_no_key`) and not measured. With `-Z`, USER must be able to read it.
    /// docs/tls.md.
    #[arg(long = "tls-keylog", value_name = "FILE")]
    pub tls_keylog: Vec<PathBuf>,
    /// FIX over TLS without keys: hook OpenSSL's SSL_read/SSL_write (and their `_ex`
    /// forms) in the system's libssl (3.x, 1.1) with uprobes — every process that maps it,
    /// already running or started later — and time each message by the TLS record that
    /// carried it on the wire, never by the call. A call that cannot be tied to its
    /// records is counted (`tls_uprobe_unmapped`). With `--tls-keylog` too, a connection
    /// whose key is logged is decrypted and its calls checked against the decryption
    /// (`tls_uprobe_disagreed`); any other is followed by calls. Not with `--tap` (a
    /// mirror port is not this host). docs/tls.md.
    #[arg(long = "tls-uprobes", conflicts_with = "tap")]
    pub tls_uprobes: bool,
    /// Hook this library or binary instead of the system's libssl (an engine linked
    /// statically, or with its own OpenSSL; it needs its symbols); repeatable. Implies
    /// `--tls-uprobes`.
    #[arg(long = "tls-lib", value_name = "PATH", conflicts_with = "tap")]
    pub tls_lib: Vec<PathBuf>,
}

/// The secrets of every key log named and of the captures' Decryption Secrets Blocks
/// (`None`: neither, TLS is not looked for).
pub fn key_log(paths: &[PathBuf], captures: &[PathBuf]) -> Result<Option<Arc<KeyStore>>> {
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
    let store = KeyStore::from(keys);
    said(&store, "TLS connections will not be decrypted");
    Ok(Some(Arc::new(store)))
}

/// `live --tls-keylog`: the files read now and followed as they grow, so a session that
/// connects after fixscope started is decrypted from its first record; with `uprobes`
/// (`--tls-uprobes`), a connection without its key is followed by its application's
/// OpenSSL calls (neither: `config` as it was).
pub fn with_followed_keys(
    paths: &[PathBuf],
    uprobes: bool,
    mut config: PipelineConfig,
) -> Result<PipelineConfig> {
    if paths.is_empty() && !uprobes {
        return Ok(config);
    }
    // Without a key log nothing is followed, so no connection waits for a key line.
    let mut store = if paths.is_empty() {
        KeyStore::from(KeyLog::new())
    } else {
        let store = KeyStore::follow(paths).context("--tls-keylog: cannot read the key log")?;
        said(&store, "waiting for the engines to write their lines");
        store
    };
    if uprobes {
        store = store.and_uprobes();
    }
    config.tls_keys = Some(Arc::new(store));
    // The summary names the TLS connections not decrypted.
    config.tls_undecrypted = Some(Default::default());
    Ok(config)
}

/// What reading the key logs found that the user should know.
fn said(store: &KeyStore, when_empty: &str) {
    let stats = store.stats();
    if stats.malformed > 0 {
        say::warn(format!(
            "--tls-keylog: {} line(s) are not key log lines (LABEL <client random> <secret>): skipped",
            stats.malformed
        ));
    }
    if store.is_empty() {
        say::warn(format!("--tls-keylog: no secret found: {when_empty}"));
    }
}
