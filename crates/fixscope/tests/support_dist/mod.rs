//! The static binary of `make dist` (#48) in an empty root: what `dist_binary.rs` and the
//! `--ignored` shipped-form checks of other test files (`tls_offline.rs`) share. Run by
//! `make test-dist`, which sets `FIXSCOPE_DIST_BIN`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn dist_bin(test: &str) -> PathBuf {
    let path = std::env::var_os("FIXSCOPE_DIST_BIN").unwrap_or_else(|| {
        panic!("{test}: FIXSCOPE_DIST_BIN is not set; run `make test-dist` (it builds the static binary)")
    });
    let path = PathBuf::from(path);
    assert!(path.is_file(), "{test}: {} does not exist", path.display());
    path
}

/// A root holding only the static binary (as /fixscope), empty /proc /sys /dev mount
/// points, and /tmp and /etc with what the test puts there.
pub struct EmptyRoot {
    dir: tempfile::TempDir,
}

impl EmptyRoot {
    pub fn new(test: &str) -> EmptyRoot {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::copy(dist_bin(test), dir.path().join("fixscope")).expect("copy the binary");
        for d in ["proc", "sys", "dev", "tmp"] {
            std::fs::create_dir(dir.path().join(d)).unwrap();
        }
        EmptyRoot { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Puts `contents` at `inside` (an absolute path within the root).
    pub fn put(&self, inside: &str, contents: &[u8]) {
        let path = self.path().join(inside.trim_start_matches('/'));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    }

    /// `/fixscope ARGS` inside the root, the working directory `/`. One process: the shell
    /// execs chroot, which execs the binary, so the child's pid is fixscope's.
    pub fn command(&self, args: &[&str]) -> Command {
        let root = self.path().display().to_string();
        let script = format!(
            "set -e; for d in proc sys dev; do mount --rbind /$d '{root}'/$d; done; \
             exec chroot '{root}' /fixscope \"$@\""
        );
        let mut c = Command::new("unshare");
        c.args([
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            &script,
            "sh",
        ]);
        c.args(args);
        c
    }
}
