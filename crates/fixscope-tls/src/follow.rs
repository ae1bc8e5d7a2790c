//! Key log files followed as they grow (`live --tls-keylog`): engines append a line per new
//! connection, during its handshake. Each file is re-read from where the last read stopped;
//! a file that shrank (truncated) or whose name now points at another file (rotated) is
//! read again from its start. A line is taken only once its newline is there: an engine
//! may write one line in two writes, and half a line would be lost as malformed.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::keylog::KeyLog;

#[derive(Debug)]
struct FollowedFile {
    path: PathBuf,
    /// Bytes of the file already read.
    offset: u64,
    /// (device, inode) of the file last read by this name.
    id: Option<(u64, u64)>,
    /// The bytes of a line whose newline has not been written yet.
    partial: Vec<u8>,
}

/// Every key log file named, with how far each was read.
#[derive(Debug, Default)]
pub struct KeyLogFiles {
    files: Vec<FollowedFile>,
}

impl KeyLogFiles {
    pub fn new<P: AsRef<Path>>(paths: &[P]) -> Self {
        KeyLogFiles {
            files: paths
                .iter()
                .map(|p| FollowedFile {
                    path: p.as_ref().to_path_buf(),
                    offset: 0,
                    id: None,
                    partial: Vec::new(),
                })
                .collect(),
        }
    }

    /// Reads what was appended to every file since the last call into `keys`; returns the
    /// bytes read. A file missing now (being rotated) is looked for again next time.
    pub fn read_new(&mut self, keys: &mut KeyLog) -> usize {
        self.files
            .iter_mut()
            .map(|f| f.read_new(keys).unwrap_or(0))
            .sum()
    }

    /// [`KeyLogFiles::read_new`] for the first read: an unreadable file is an error.
    pub fn read_all(&mut self, keys: &mut KeyLog) -> io::Result<usize> {
        let mut total = 0;
        for f in &mut self.files {
            total += f
                .read_new(keys)
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", f.path.display())))?;
        }
        Ok(total)
    }
}

impl FollowedFile {
    fn read_new(&mut self, keys: &mut KeyLog) -> io::Result<usize> {
        let mut file = File::open(&self.path)?;
        let meta = file.metadata()?;
        let id = Some((meta.dev(), meta.ino()));
        if id != self.id || meta.len() < self.offset {
            // Rotated or truncated: the file now holds other lines, from its start.
            self.id = id;
            self.offset = 0;
            self.partial.clear();
        }
        if meta.len() == self.offset {
            return Ok(0);
        }
        file.seek(SeekFrom::Start(self.offset))?;
        let mut fresh = Vec::new();
        let n = file.read_to_end(&mut fresh)?;
        self.offset += n as u64;
        match fresh.iter().rposition(|&b| b == b'\n') {
            Some(last) => {
                self.partial.extend_from_slice(&fresh[..=last]);
                keys.add_text(&self.partial[..self.partial.len() - 1]);
                self.partial.clear();
                self.partial.extend_from_slice(&fresh[last + 1..]);
            }
            None => self.partial.extend_from_slice(&fresh),
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn line(random: u8, secret: u8) -> String {
        format!(
            "CLIENT_RANDOM {} {}\n",
            hex(&[random; 32]),
            hex(&[secret; 48])
        )
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn append(path: &Path, text: &str) {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
    }

    #[test]
    fn appended_lines_truncation_and_rotation_are_read() {
        let dir = std::env::temp_dir().join(format!("fixscope-follow-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("keys.log");
        let _ = std::fs::remove_file(&path);
        append(&path, &line(1, 1));
        let mut files = KeyLogFiles::new(&[&path]);
        let mut keys = KeyLog::new();
        files.read_all(&mut keys).unwrap();
        assert!(keys.get(&[1; 32]).is_some());

        // Half a line: not taken (nor counted malformed) until its newline comes.
        let second = line(2, 2);
        append(&path, &second[..40]);
        files.read_new(&mut keys);
        assert!(keys.get(&[2; 32]).is_none());
        append(&path, &second[40..]);
        files.read_new(&mut keys);
        assert_eq!(keys.get(&[2; 32]).unwrap().master, Some(vec![2; 48]));
        assert_eq!(keys.stats().malformed, 0);

        // Truncated and rewritten shorter: read from the start.
        std::fs::write(&path, line(3, 3)).unwrap();
        files.read_new(&mut keys);
        assert!(keys.get(&[3; 32]).is_some());

        // Rotated: the name now points at a new file, longer than the offset or not.
        std::fs::rename(&path, dir.join("keys.log.1")).unwrap();
        append(&path, &(line(4, 4) + &line(5, 5)));
        files.read_new(&mut keys);
        assert!(keys.get(&[4; 32]).is_some() && keys.get(&[5; 32]).is_some());
        assert_eq!(keys.stats().malformed, 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
