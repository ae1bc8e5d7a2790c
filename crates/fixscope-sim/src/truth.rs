//! Ground-truth CSV files.
//!
//! Exchange side, one line per request:
//! `clordid,session,msg_type,request_ns,ack_ns,fill_ns,read_call_ns,ack_written_ns`
//! where session is the client's `ip:port` as the exchange sees it, `request_ns` is
//! CLOCK_MONOTONIC right after the read() that returned the request's last byte, and
//! `ack_ns`/`fill_ns` are taken just before the write() that sent the first response /
//! the first fill (empty when there was none). `read_call_ns` is taken just before that
//! read() was called and `ack_written_ns` just after the ack's write() returned: with
//! them each syscall is bracketed, so a kernel-side timestamp of the read's return lies in
//! [read_call_ns, request_ns] and of the write's entry before ack_written_ns, however long
//! the exchange was preempted around its own clock reads. Files of the six-column
//! format (before those two) are still read; the two are then empty.
//!
//! Client side: `clordid,session,msg_type,scheduled_ns,send_ns,first_ns,ack_ns,fill_ns`,
//! session being the client's local `ip:port` (the same string the exchange logs).

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use anyhow::Context;
use fixscope_core::fix::encode::push_uint;

pub const EXCHANGE_HEADER: &str =
    "clordid,session,msg_type,request_ns,ack_ns,fill_ns,read_call_ns,ack_written_ns";
/// The exchange's truth files before `read_call_ns` and `ack_written_ns`.
const EXCHANGE_HEADER_V1: &str = "clordid,session,msg_type,request_ns,ack_ns,fill_ns";
pub const CLIENT_HEADER: &str =
    "clordid,session,msg_type,scheduled_ns,send_ns,first_ns,ack_ns,fill_ns";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TruthRecord {
    pub clordid: String,
    pub session: String,
    pub msg_type: String,
    pub request_ns: u64,
    pub ack_ns: Option<u64>,
    pub fill_ns: Option<u64>,
    /// Just before the read() that returned the request's last byte (None: an old file).
    pub read_call_ns: Option<u64>,
    /// Just after the ack's write() returned (None: no ack, or an old file).
    pub ack_written_ns: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientTruthRecord {
    pub clordid: String,
    pub session: String,
    pub msg_type: String,
    pub scheduled_ns: u64,
    pub send_ns: Option<u64>,
    pub first_ns: Option<u64>,
    pub ack_ns: Option<u64>,
    pub fill_ns: Option<u64>,
}

fn opt(v: &str, what: &str, line: usize) -> anyhow::Result<Option<u64>> {
    if v.is_empty() {
        return Ok(None);
    }
    v.parse()
        .map(Some)
        .with_context(|| format!("line {line}: bad {what} {v:?}"))
}

fn read_lines<T>(
    path: &Path,
    header: &str,
    mut parse: impl FnMut(&[&str], usize) -> anyhow::Result<T>,
) -> anyhow::Result<Vec<T>> {
    let path_s = path.display().to_string();
    let file = File::open(path).with_context(|| format!("opening {path_s}"))?;
    let mut cols = header.split(',').count();
    let mut out = Vec::new();
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let line = line.with_context(|| format!("reading {path_s}"))?;
        if i == 0 {
            if header == EXCHANGE_HEADER && line == EXCHANGE_HEADER_V1 {
                cols = EXCHANGE_HEADER_V1.split(',').count();
                continue;
            }
            anyhow::ensure!(line == header, "{path_s}: unexpected header {line:?}");
            continue;
        }
        if line.is_empty() {
            continue;
        }
        // ClOrdIDs may contain commas in theory; the other fields never do.
        let parts: Vec<&str> = line.rsplitn(cols, ',').collect();
        anyhow::ensure!(
            parts.len() == cols,
            "{path_s} line {}: want {cols} fields",
            i + 1
        );
        let fields: Vec<&str> = parts.into_iter().rev().collect();
        out.push(parse(&fields, i + 1)?);
    }
    Ok(out)
}

/// Reads an exchange truth file.
pub fn read_truth(path: impl AsRef<Path>) -> anyhow::Result<Vec<TruthRecord>> {
    read_lines(path.as_ref(), EXCHANGE_HEADER, |f, line| {
        Ok(TruthRecord {
            clordid: f[0].to_string(),
            session: f[1].to_string(),
            msg_type: f[2].to_string(),
            request_ns: opt(f[3], "request_ns", line)?.context("empty request_ns")?,
            ack_ns: opt(f[4], "ack_ns", line)?,
            fill_ns: opt(f[5], "fill_ns", line)?,
            read_call_ns: f
                .get(6)
                .map_or(Ok(None), |v| opt(v, "read_call_ns", line))?,
            ack_written_ns: f
                .get(7)
                .map_or(Ok(None), |v| opt(v, "ack_written_ns", line))?,
        })
    })
}

/// Reads a client truth file.
pub fn read_client_truth(path: impl AsRef<Path>) -> anyhow::Result<Vec<ClientTruthRecord>> {
    read_lines(path.as_ref(), CLIENT_HEADER, |f, line| {
        Ok(ClientTruthRecord {
            clordid: f[0].to_string(),
            session: f[1].to_string(),
            msg_type: f[2].to_string(),
            scheduled_ns: opt(f[3], "scheduled_ns", line)?.context("empty scheduled_ns")?,
            send_ns: opt(f[4], "send_ns", line)?,
            first_ns: opt(f[5], "first_ns", line)?,
            ack_ns: opt(f[6], "ack_ns", line)?,
            fill_ns: opt(f[7], "fill_ns", line)?,
        })
    })
}

/// Buffered CSV writer that formats lines without allocating.
pub struct TruthWriter {
    out: BufWriter<File>,
    line: Vec<u8>,
    pub records: u64,
}

impl TruthWriter {
    pub fn create(path: &Path, header: &str) -> anyhow::Result<Self> {
        let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        out.write_all(header.as_bytes())?;
        out.write_all(b"\n")?;
        Ok(TruthWriter {
            out,
            line: Vec::with_capacity(256),
            records: 0,
        })
    }

    /// Writes `text,text,text,num-or-empty...`.
    pub fn write(&mut self, texts: [&[u8]; 3], nums: &[Option<u64>]) -> std::io::Result<()> {
        self.line.clear();
        for (i, t) in texts.iter().enumerate() {
            if i > 0 {
                self.line.push(b',');
            }
            self.line.extend_from_slice(t);
        }
        for n in nums {
            self.line.push(b',');
            if let Some(n) = n {
                push_uint(&mut self.line, *n);
            }
        }
        self.line.push(b'\n');
        self.records += 1;
        self.out.write_all(&self.line)
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.csv");
        let mut w = TruthWriter::create(&p, EXCHANGE_HEADER).unwrap();
        w.write(
            [b"A1", b"127.0.0.1:5000", b"D"],
            &[Some(1), Some(2), None, Some(0), Some(3)],
        )
        .unwrap();
        w.write(
            [b"A,2", b"[::1]:5001", b"F"],
            &[Some(3), None, None, Some(2), None],
        )
        .unwrap();
        w.flush().unwrap();
        let recs = read_truth(&p).unwrap();
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[0].ack_ns, Some(2));
        assert_eq!(recs[0].fill_ns, None);
        assert_eq!(recs[1].clordid, "A,2");
        assert_eq!(recs[1].session, "[::1]:5001");
        assert_eq!(
            (recs[0].read_call_ns, recs[0].ack_written_ns),
            (Some(0), Some(3))
        );
        assert_eq!(
            (recs[1].read_call_ns, recs[1].ack_written_ns),
            (Some(2), None)
        );
    }

    #[test]
    fn reads_the_six_column_format_too() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.csv");
        std::fs::write(
            &p,
            format!("{EXCHANGE_HEADER_V1}\nA1,127.0.0.1:5000,D,1,2,\n"),
        )
        .unwrap();
        let recs = read_truth(&p).unwrap();
        assert_eq!(recs[0].ack_ns, Some(2));
        assert_eq!((recs[0].read_call_ns, recs[0].ack_written_ns), (None, None));
    }
}
