//! The router's own capture (`--pcap`): every byte it read or wrote on both sessions, as
//! TCP segments of synthetic connections, stamped with the CLOCK_REALTIME value the truth
//! uses for that read()/write().
//!
//! Built on the core's capture writer; a write error is counted, never fatal (the capture
//! is a by-product, the routing goes on).

use std::fs::File;
use std::io::BufWriter;
use std::net::SocketAddr;
use std::path::Path;

use anyhow::Context;
use fixscope_core::decode::LinkType;
use fixscope_core::pcap_writer::{CaptureFormat, CaptureWriter, SyntheticConnection};
use fixscope_core::Endpoint;

/// Largest payload per segment (a 1500-byte MTU less IPv4 and TCP headers with timestamps).
const MAX_SEGMENT: usize = 1448;

/// One captured TCP connection: its sequence numbers and which side the router is.
pub struct Tcp {
    conn: SyntheticConnection,
    router_is_client: bool,
}

impl Tcp {
    pub fn new(client: SocketAddr, server: SocketAddr, router_is_client: bool) -> Self {
        let ep = |a: SocketAddr| Endpoint {
            addr: a.ip(),
            port: a.port(),
        };
        Tcp {
            conn: SyntheticConnection::new(ep(client), ep(server)),
            router_is_client,
        }
    }
}

pub struct Capture {
    w: CaptureWriter<BufWriter<File>>,
    pub packets: u64,
    pub errors: u64,
}

impl Capture {
    pub fn create(path: &Path) -> anyhow::Result<Self> {
        let f = File::create(path).with_context(|| format!("creating {}", path.display()))?;
        let w = CaptureWriter::new(
            BufWriter::with_capacity(1 << 20, f),
            CaptureFormat::pcap_nanos(),
            LinkType::Ethernet,
        )
        .with_context(|| format!("writing {}", path.display()))?;
        Ok(Capture {
            w,
            packets: 0,
            errors: 0,
        })
    }

    /// The three-way handshake of a connection just made.
    pub fn open(&mut self, tcp: &mut Tcp, ts_ns: u64) {
        for spec in tcp.conn.handshake() {
            self.put(ts_ns, &spec);
        }
    }

    /// Bytes the router wrote (`outbound`) or read on `tcp`, all stamped `ts_ns`.
    pub fn data(&mut self, tcp: &mut Tcp, outbound: bool, ts_ns: u64, bytes: &[u8]) {
        for chunk in bytes.chunks(MAX_SEGMENT) {
            let spec = if outbound == tcp.router_is_client {
                tcp.conn.client_sends(chunk)
            } else {
                tcp.conn.server_sends(chunk)
            };
            self.put(ts_ns, &spec);
        }
    }

    /// The connection closed: both FINs (the router's first; the peer's closing is not
    /// seen apart from the read that returned 0), so readers see it ended.
    pub fn close(&mut self, tcp: &mut Tcp, ts_ns: u64) {
        let (ours, theirs) = if tcp.router_is_client {
            (tcp.conn.client_fin(), tcp.conn.server_fin())
        } else {
            (tcp.conn.server_fin(), tcp.conn.client_fin())
        };
        self.put(ts_ns, &ours);
        self.put(ts_ns, &theirs);
    }

    fn put(&mut self, ts_ns: u64, spec: &fixscope_core::pcap_writer::TcpPacketSpec) {
        match self.w.write_tcp(ts_ns, spec) {
            Ok(()) => self.packets += 1,
            Err(_) => self.errors += 1,
        }
    }

    pub fn finish(self) -> anyhow::Result<()> {
        self.w.finish().context("writing the capture")?;
        Ok(())
    }
}
