//! Helpers shared by the simulator's integration tests: an in-process exchange and a raw FIX
//! peer. What every crate's tests share (serial runs, what a test needs) is in
//! fixscope-testkit.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use fixscope_core::fix::encode::FixEncoder;
use fixscope_core::fix::framing::{frame_one, Frame};
use fixscope_core::fix::message::find_field;
use fixscope_sim::{
    run_client, run_exchange, ClientArgs, ClientReport, ExchangeArgs, ExchangeSummary, Shutdown,
};

pub struct Exchange {
    pub addr: SocketAddr,
    pub shutdown: Shutdown,
    handle: Option<JoinHandle<anyhow::Result<ExchangeSummary>>>,
}

impl Exchange {
    pub fn start(flags: &[&str]) -> Exchange {
        let mut all = vec!["--listen", "127.0.0.1:0"];
        all.extend_from_slice(flags);
        let args = ExchangeArgs::from_flags(all).expect("exchange flags");
        let shutdown = Shutdown::new();
        let (tx, rx) = mpsc::channel();
        let sd = shutdown.clone();
        let handle = thread::spawn(move || {
            run_exchange(&args, &sd, |a| {
                let _ = tx.send(a);
            })
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(5))
            .expect("exchange ready");
        Exchange {
            addr,
            shutdown,
            handle: Some(handle),
        }
    }

    pub fn stop(mut self) -> ExchangeSummary {
        self.shutdown.trigger();
        let h = self.handle.take().expect("running");
        h.join().expect("exchange thread").expect("exchange result")
    }
}

impl Drop for Exchange {
    fn drop(&mut self) {
        self.shutdown.trigger();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

pub fn client(addr: SocketAddr, flags: &[&str]) -> ClientReport {
    let a = addr.to_string();
    let mut all = vec!["--connect", a.as_str(), "--drain-timeout", "5"];
    all.extend_from_slice(flags);
    let args = ClientArgs::from_flags(all).expect("client flags");
    run_client(&args, &Shutdown::new()).expect("client run")
}

/// A hand-driven FIX peer over a blocking socket.
pub struct RawPeer {
    pub stream: TcpStream,
    pub begin: String,
    pub seq: u64,
    buf: Vec<u8>,
    enc: FixEncoder,
}

impl RawPeer {
    pub fn connect(addr: SocketAddr, begin: &str) -> RawPeer {
        let stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_millis(100)))
            .expect("timeout");
        stream.set_nodelay(true).expect("nodelay");
        RawPeer {
            stream,
            begin: begin.to_string(),
            seq: 1,
            buf: Vec::new(),
            enc: FixEncoder::new(),
        }
    }

    /// Sends a message with header 35/49/56/34 (using and advancing our seq unless `seq` given).
    pub fn send(&mut self, msg_type: &str, fields: &[(u32, &str)], seq: Option<u64>) {
        let s = seq.unwrap_or_else(|| {
            self.seq += 1;
            self.seq - 1
        });
        self.enc
            .start(msg_type.as_bytes())
            .field_str(49, "RAW")
            .field_str(56, "EXCH")
            .field_uint(34, s)
            .field_str(52, "20240101-00:00:00.000");
        for &(t, v) in fields {
            self.enc.field_str(t, v);
        }
        let mut out = Vec::new();
        self.enc.finish(self.begin.as_bytes(), &mut out);
        self.stream.write_all(&out).expect("write");
    }

    pub fn logon(&mut self) -> Vec<u8> {
        let mut f = vec![(98, "0"), (108, "30"), (141, "Y")];
        if self.begin == "FIXT.1.1" {
            f.push((1137, "9"));
        }
        self.send("A", &f, None);
        self.expect("A")
    }

    /// Next message (any type), or None after `wait`.
    pub fn next(&mut self, wait: Duration) -> Option<Vec<u8>> {
        let deadline = Instant::now() + wait;
        loop {
            if let Frame::Message { len, checksum_ok } = frame_one(&self.buf) {
                assert!(checksum_ok, "bad checksum from the exchange");
                let m: Vec<u8> = self.buf.drain(..len).collect();
                return Some(m);
            }
            if Instant::now() >= deadline {
                return None;
            }
            let mut tmp = [0u8; 4096];
            match self.stream.read(&mut tmp) {
                Ok(0) => return None,
                Ok(n) => self.buf.extend_from_slice(&tmp[..n]),
                Err(_) => {}
            }
        }
    }

    /// Next message of `msg_type`, skipping heartbeats; panics after 3 s.
    pub fn expect(&mut self, msg_type: &str) -> Vec<u8> {
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Some(m) = self.next(Duration::from_millis(200)) {
                if field(&m, 35) == msg_type {
                    return m;
                }
                assert_eq!(field(&m, 35), "0", "unexpected {}", show(&m));
            }
        }
        panic!("no {msg_type} within 3s");
    }
}

pub fn field(m: &[u8], tag: u32) -> String {
    find_field(m, tag)
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .unwrap_or_default()
}

pub fn show(m: &[u8]) -> String {
    fixscope_core::fix::message::display(m)
}

pub fn percentile(v: &mut [u64], p: f64) -> u64 {
    v.sort_unstable();
    v[((v.len() - 1) as f64 * p).round() as usize]
}
