//! The router's ground truth (`--truth`): one CSV row per child request, one for a parent
//! request the router rejected itself (child columns empty).
//!
//! All times are CLOCK_REALTIME nanoseconds, taken once per read()/write() and shared by
//! every message in it, the same stamps as the router's capture (`--pcap`):
//! - `parent_read_ns`: the read() holding the parent request's last byte returned;
//! - `child_written_ns`: just before the write() that sent the child's last byte;
//! - `venue_first_ns`: the read() holding the child's first venue response returned;
//! - `venue_first_exec_type`: that response's 150, or `9` for an OrderCancelReject;
//! - `parent_response_written_ns`: the write() of the parent response sent because of that
//!   venue response (empty when it was swallowed, e.g. the second slice's ack);
//! - `parent_first_written_ns`, `parent_first_exec_type`: the parent request's first
//!   response, whatever caused it (`9` for an OrderCancelReject).
//!
//! `child_index` counts from 0 within the request; `rejected` is 1 when the router
//! rejected the request itself. [`read_router_truth`] reads a file back. ClOrdIDs with a
//! comma would break the columns (the simulator's never have one).

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use anyhow::Context;
use fixscope_core::fix::encode::push_uint;

use super::book::Req;

pub const ROUTER_HEADER: &str = "parent_session,parent_clordid,parent_msg_type,parent_read_ns,\
rejected,child_index,child_clordid,child_written_ns,venue_first_ns,venue_first_exec_type,\
parent_response_written_ns,parent_first_written_ns,parent_first_exec_type";

pub struct RouterTruth {
    out: BufWriter<File>,
    line: Vec<u8>,
    pub rows: u64,
}

fn push_opt(line: &mut Vec<u8>, v: u64) {
    line.push(b',');
    if v != 0 {
        push_uint(line, v);
    }
}

fn push_code(line: &mut Vec<u8>, c: u8) {
    line.push(b',');
    if c != 0 {
        line.push(c);
    }
}

impl RouterTruth {
    pub fn create(path: &Path) -> anyhow::Result<Self> {
        let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        out.write_all(ROUTER_HEADER.as_bytes())?;
        out.write_all(b"\n")?;
        Ok(RouterTruth {
            out,
            line: Vec::with_capacity(512),
            rows: 0,
        })
    }

    /// Writes the rows of `req`.
    pub fn write(&mut self, req: &Req) -> std::io::Result<()> {
        if req.rejected || req.nchildren == 0 {
            return self.row(req, None);
        }
        for k in 0..req.nchildren {
            self.row(req, Some(k))?;
        }
        Ok(())
    }

    fn row(&mut self, req: &Req, child: Option<usize>) -> std::io::Result<()> {
        let l = &mut self.line;
        l.clear();
        l.extend_from_slice(&req.session);
        l.push(b',');
        l.extend_from_slice(&req.parent_id);
        l.push(b',');
        l.push(req.msg_type);
        push_opt(l, req.read_ns);
        l.extend_from_slice(if req.rejected { b",1" } else { b",0" });
        match child.map(|k| (k, &req.children()[k])) {
            Some((k, c)) => {
                l.push(b',');
                push_uint(l, k as u64);
                l.push(b',');
                l.extend_from_slice(&c.id);
                push_opt(l, c.written_ns);
                push_opt(l, c.venue_first_ns);
                push_code(l, c.venue_first_type);
                push_opt(l, c.resp_written_ns);
            }
            None => l.extend_from_slice(b",,,,,,"),
        }
        push_opt(l, req.first_written_ns);
        push_code(
            l,
            if req.first_written_ns != 0 {
                req.first_type
            } else {
                0
            },
        );
        l.push(b'\n');
        self.rows += 1;
        self.out.write_all(l)
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// One row of a router truth file, as [`read_router_truth`] gives it back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouterTruthRecord {
    pub parent_session: String,
    pub parent_clordid: String,
    pub parent_msg_type: String,
    pub parent_read_ns: u64,
    pub rejected: bool,
    pub child_index: Option<u64>,
    pub child_clordid: String,
    pub child_written_ns: Option<u64>,
    pub venue_first_ns: Option<u64>,
    pub venue_first_exec_type: String,
    pub parent_response_written_ns: Option<u64>,
    pub parent_first_written_ns: Option<u64>,
    pub parent_first_exec_type: String,
}

/// Reads a router truth file (`--truth`).
pub fn read_router_truth(path: impl AsRef<Path>) -> anyhow::Result<Vec<RouterTruthRecord>> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let file = File::open(path).with_context(|| format!("opening {name}"))?;
    let mut out = Vec::new();
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let line = line.with_context(|| format!("reading {name}"))?;
        if i == 0 {
            anyhow::ensure!(line == ROUTER_HEADER, "{name}: unexpected header {line:?}");
            continue;
        }
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').collect();
        anyhow::ensure!(f.len() == 13, "{name} line {}: want 13 fields", i + 1);
        let num = |k: usize| -> anyhow::Result<Option<u64>> {
            if f[k].is_empty() {
                return Ok(None);
            }
            let v = f[k]
                .parse()
                .with_context(|| format!("{name} line {}: bad number {:?}", i + 1, f[k]))?;
            Ok(Some(v))
        };
        out.push(RouterTruthRecord {
            parent_session: f[0].to_string(),
            parent_clordid: f[1].to_string(),
            parent_msg_type: f[2].to_string(),
            parent_read_ns: num(3)?.context("empty parent_read_ns")?,
            rejected: f[4] == "1",
            child_index: num(5)?,
            child_clordid: f[6].to_string(),
            child_written_ns: num(7)?,
            venue_first_ns: num(8)?,
            venue_first_exec_type: f[9].to_string(),
            parent_response_written_ns: num(10)?,
            parent_first_written_ns: num(11)?,
            parent_first_exec_type: f[12].to_string(),
        });
    }
    Ok(out)
}
