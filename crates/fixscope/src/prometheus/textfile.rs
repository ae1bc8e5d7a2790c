//! `--prometheus-textfile FILE`: the final metrics for node_exporter's textfile collector,
//! in the text format it reads (0.0.4), written to a temporary file beside FILE and renamed
//! over it, so the collector never reads half a file.

use std::fs::Permissions;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use anyhow::{Context, Result};

use super::model::Snapshot;
use super::text::{self, Flavour};

pub fn write(path: &Path, snapshot: &Snapshot) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".fixscope-")
        .suffix(".prom.tmp")
        .tempfile_in(dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    tmp.write_all(text::encode(snapshot, Flavour::Prometheus).as_bytes())
        .and_then(|()| tmp.as_file().sync_all())
        // node_exporter usually runs as its own user: the file must be readable by others.
        .and_then(|()| tmp.as_file().set_permissions(Permissions::from_mode(0o644)))
        .with_context(|| format!("cannot write {}", tmp.path().display()))?;
    tmp.persist(path)
        .with_context(|| format!("cannot rename the metrics into {}", path.display()))?;
    Ok(())
}
