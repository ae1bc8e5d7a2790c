//! The same traffic over TLS (#49): a plaintext capture written again with every TCP
//! connection a rustls connection in-process (a real handshake before its first payload,
//! each segment's payload one TLS record in a segment at the same time), and the NSS key
//! log rustls wrote. Shared by `tests/tls_same_traffic.rs` and the benchmark's generator
//! (`examples/tls_capture.rs`, `make bench-tls`).
#![allow(dead_code)]

use std::io;
use std::path::Path;

use fixscope_core::decode::LinkType;
use fixscope_core::pcap::{read_capture_until, CaptureStats, Flow};
use fixscope_core::pcap_writer::{
    CaptureFormat, CaptureRewriter, CaptureWriter, PayloadRewrite, RewriteSummary,
};
use fixscope_core::{Direction, PortSet};
use fixscope_testkit::tls_session::{Peer, TlsEndpoints, TlsPair, TlsSuite};

/// The suites by the names the generator takes.
pub const SUITES: [(&str, TlsSuite); 6] = [
    ("aes128", TlsSuite::Tls13Aes128Gcm),
    ("aes256", TlsSuite::Tls13Aes256Gcm),
    ("chacha", TlsSuite::Tls13Chacha20),
    ("tls12-aes128", TlsSuite::Tls12Aes128Gcm),
    ("tls12-aes256", TlsSuite::Tls12Aes256Gcm),
    ("tls12-chacha", TlsSuite::Tls12Chacha20),
];

pub fn suite_named(name: &str) -> Option<TlsSuite> {
    SUITES.iter().find(|(n, _)| *n == name).map(|&(_, s)| s)
}

fn peer(d: Direction) -> Peer {
    match d {
        Direction::Request => Peer::Client,
        Direction::Response => Peer::Server,
    }
}

/// One connection's payloads sealed by a rustls connection.
pub struct OverTls(TlsPair);

impl PayloadRewrite for OverTls {
    fn opening(&mut self) -> Vec<(Direction, Vec<u8>)> {
        std::mem::take(&mut self.0.wire)
            .into_iter()
            .map(|(p, bytes)| {
                let d = match p {
                    Peer::Client => Direction::Request,
                    Peer::Server => Direction::Response,
                };
                (d, bytes)
            })
            .collect()
    }

    fn payload(&mut self, direction: Direction, payload: &[u8]) -> Vec<u8> {
        self.0.seal(peer(direction), payload)
    }
}

/// Writes `plain`'s segments of `ports` again to `tls` (nanosecond pcap, Ethernet) over
/// `suite`, and rustls' key log to `keys`.
pub fn tls_copy(
    plain: &Path,
    ports: &PortSet,
    tls: &Path,
    keys: &Path,
    suite: TlsSuite,
) -> io::Result<RewriteSummary> {
    let ends = TlsEndpoints::new(suite);
    let out = io::BufWriter::with_capacity(1 << 20, std::fs::File::create(tls)?);
    let mut w = CaptureWriter::new(out, CaptureFormat::pcap_nanos(), LinkType::Ethernet)?;
    let mut rewriter = CaptureRewriter::new();
    let mut failed = None;
    let mut stats = CaptureStats::default();
    read_capture_until(plain, ports, &mut stats, |seg| {
        match rewriter.segment(seg, &mut w, |_| OverTls(ends.connect())) {
            Ok(()) => Flow::Continue,
            Err(e) => {
                failed = Some(e);
                Flow::Stop
            }
        }
    })
    .map_err(io::Error::other)?;
    if let Some(e) = failed {
        return Err(e);
    }
    w.finish()?.into_inner().map_err(|e| e.into_error())?;
    std::fs::write(keys, ends.key_log.text())?;
    Ok(rewriter.summary())
}
