//! Shared helpers for the live-capture tests: a FIX-ish request/response exchange over real
//! TCP, capture collection, and byte-exact verification of what was captured.
#![allow(dead_code)]

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::mpsc;
use std::sync::{Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use fixscope_core::segment::{Direction, TcpFlags};
use fixscope_live::{LiveCapture, LiveConfig};

/// Tests in one binary attach to the same interfaces with the same tc handle; run them one
/// at a time.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Live capture needs root: a test run without it fails loudly instead of skipping.
pub fn require_root(test: &str) {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        panic!(
            "\n\n!!!!!!!! {test} NEEDS ROOT (CAP_BPF + CAP_NET_ADMIN, network namespaces): \
             run the live tests as root (sudo -E cargo test) !!!!!!!!\n"
        );
    }
}

/// A FIX 4.4 message with a correct BodyLength and CheckSum and `pad` filler bytes.
pub fn fix_msg(msg_type: &str, seq: usize, pad: usize) -> Vec<u8> {
    let filler = "X".repeat(pad);
    let body = format!("35={msg_type}\x0134={seq}\x0149=CLIENT\x0156=SERVER\x0158={filler}\x01");
    let mut m = format!("8=FIX.4.4\x019={}\x01{body}", body.len()).into_bytes();
    let sum: u32 = m.iter().map(|&b| u32::from(b)).sum();
    m.extend_from_slice(format!("10={:03}\x01", sum % 256).as_bytes());
    m
}

/// Splits complete messages off the front of `buf` (ends at "\x0110=NNN\x01").
pub fn take_messages(buf: &mut Vec<u8>) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while let Some(pos) = buf.windows(4).position(|w| w == b"\x0110=") {
        let end = pos + 4 + 4;
        if buf.len() < end {
            break;
        }
        out.push(buf.drain(..end).collect());
    }
    out
}

/// The writes the client makes: each inner vec is the filler sizes of the messages sent in
/// one write() — several per write, small and large, and one ~60 KB message (a GSO-sized
/// skb on loopback and veth).
pub fn default_plan() -> Vec<Vec<usize>> {
    let sizes = [40usize, 250, 1400, 4800, 9, 700, 15000];
    let mut plan = Vec::new();
    for i in 0..40 {
        let n = 1 + i % 4;
        plan.push((0..n).map(|j| sizes[(i * 3 + j) % sizes.len()]).collect());
    }
    plan.insert(20, vec![60_000]);
    plan.push(vec![50, 60, 70, 80, 90, 100, 110, 120]);
    plan
}

fn response_pad(seq: usize) -> usize {
    [30, 180, 900, 3000, 12][seq % 5]
}

#[derive(Default, Debug)]
pub struct Log {
    /// Every byte this side wrote.
    pub sent: Vec<u8>,
    /// Per message: offset of its first byte and one past its last byte in `sent`.
    pub msgs: Vec<(usize, usize)>,
}

pub fn enter_netns(ns: &str) -> io::Result<()> {
    let f = std::fs::File::open(format!("/var/run/netns/{ns}"))?;
    // SAFETY: setns on a valid netns fd only affects the calling thread.
    if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Spawns the server: binds `bind` (in `netns` if given), reports the bound address, then
/// answers every request message of one connection with one response message.
pub fn spawn_server(
    netns: Option<String>,
    bind: SocketAddr,
) -> (SocketAddr, JoinHandle<io::Result<Log>>) {
    let (tx, rx) = mpsc::channel();
    let h = std::thread::spawn(move || -> io::Result<Log> {
        if let Some(ns) = &netns {
            enter_netns(ns)?;
        }
        let l = TcpListener::bind(bind)?;
        let _ = tx.send(l.local_addr());
        l.set_nonblocking(true)?;
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut s = loop {
            match l.accept() {
                Ok((s, _)) => break s,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                Err(e) => return Err(e),
            }
        };
        s.set_nonblocking(false)?;
        s.set_read_timeout(Some(Duration::from_secs(20)))?;
        let mut log = Log::default();
        let mut buf = Vec::new();
        let mut chunk = vec![0u8; 256 * 1024];
        let mut seq = 0;
        loop {
            let n = s.read(&mut chunk)?;
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
            for _req in take_messages(&mut buf) {
                let resp = fix_msg("8", seq, response_pad(seq));
                seq += 1;
                let start = log.sent.len();
                s.write_all(&resp)?;
                log.sent.extend_from_slice(&resp);
                log.msgs.push((start, log.sent.len()));
            }
        }
        s.shutdown(Shutdown::Write)?;
        Ok(log)
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("server thread reports its address")
        .expect("server binds");
    (addr, h)
}

/// Spawns the client (in `netns` if given): per plan entry, one write of that many
/// requests, then waits for as many responses.
pub fn spawn_client(
    netns: Option<String>,
    server: SocketAddr,
    plan: Vec<Vec<usize>>,
) -> JoinHandle<io::Result<Log>> {
    std::thread::spawn(move || -> io::Result<Log> {
        if let Some(ns) = &netns {
            enter_netns(ns)?;
        }
        let mut s = TcpStream::connect_timeout(&server, Duration::from_secs(10))?;
        s.set_read_timeout(Some(Duration::from_secs(20)))?;
        s.set_nodelay(true)?;
        let mut log = Log::default();
        let mut seq = 0;
        let mut inbuf = Vec::new();
        let mut chunk = vec![0u8; 256 * 1024];
        for group in plan {
            let mut w = Vec::new();
            for pad in &group {
                let m = fix_msg("D", seq, *pad);
                seq += 1;
                let start = log.sent.len() + w.len();
                w.extend_from_slice(&m);
                log.msgs.push((start, start + m.len()));
            }
            s.write_all(&w)?;
            log.sent.extend_from_slice(&w);
            let mut got = 0;
            while got < group.len() {
                let n = s.read(&mut chunk)?;
                if n == 0 {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "server closed",
                    ));
                }
                inbuf.extend_from_slice(&chunk[..n]);
                got += take_messages(&mut inbuf).len();
            }
        }
        s.shutdown(Shutdown::Write)?;
        while s.read(&mut chunk)? > 0 {}
        Ok(log)
    })
}

/// One captured segment, copied out of the ring.
#[derive(Clone, Debug)]
pub struct Cap {
    pub ts: u64,
    pub dir: Direction,
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub seq: u32,
    pub flags: TcpFlags,
    pub payload: Vec<u8>,
    pub missing: u32,
}

/// Polls until `done` says so (checked after each poll) or `timeout`, then drains for
/// `linger` more to catch anything extra (duplicates).
pub fn collect(
    cap: &mut LiveCapture,
    timeout: Duration,
    linger: Duration,
    mut done: impl FnMut(&[Cap]) -> bool,
) -> Vec<Cap> {
    let mut out = Vec::new();
    let deadline = Instant::now() + timeout;
    let push = |out: &mut Vec<Cap>, cap: &mut LiveCapture, wait| {
        cap.poll(wait, &mut |s| {
            out.push(Cap {
                ts: s.ts_ns,
                dir: s.direction,
                src: SocketAddr::new(s.flow.src.addr, s.flow.src.port),
                dst: SocketAddr::new(s.flow.dst.addr, s.flow.dst.port),
                seq: s.seq,
                flags: s.flags,
                payload: s.payload.to_vec(),
                missing: s.missing_tail,
            })
        })
        .expect("poll");
    };
    while Instant::now() < deadline && !done(&out) {
        push(&mut out, cap, Duration::from_millis(50));
    }
    let end = Instant::now() + linger;
    while Instant::now() < end {
        push(&mut out, cap, Duration::from_millis(20));
    }
    out
}

pub fn payload_bytes(caps: &[Cap], dir: Direction) -> usize {
    caps.iter()
        .filter(|c| c.dir == dir)
        .map(|c| c.payload.len())
        .sum()
}

/// Checks one direction: a SYN was captured; payload segments arrive in stream order,
/// each byte exactly once, and reassemble to `expected`; timestamps never go back.
/// Returns, per byte offset of the stream, the index into `caps` of its segment.
pub fn verify_direction(caps: &[Cap], dir: Direction, expected: &[u8]) -> Vec<usize> {
    let mine: Vec<usize> = (0..caps.len()).filter(|&i| caps[i].dir == dir).collect();
    let syn = mine
        .iter()
        .find(|&&i| caps[i].flags.syn())
        .unwrap_or_else(|| panic!("{dir:?}: no SYN captured"));
    let isn = caps[*syn].seq.wrapping_add(1);
    let mut next = 0usize;
    let mut last_ts = 0u64;
    let mut owner = vec![usize::MAX; expected.len()];
    for &i in &mine {
        let c = &caps[i];
        assert!(
            c.ts >= last_ts,
            "{dir:?}: timestamp went back at segment {i}"
        );
        last_ts = c.ts;
        assert_eq!(c.missing, 0, "{dir:?}: segment {i} lost bytes");
        if c.payload.is_empty() {
            continue;
        }
        let off = c.seq.wrapping_sub(isn) as usize;
        assert_eq!(
            off, next,
            "{dir:?}: segment {i} at stream offset {off}, expected {next} (duplicate, gap or reorder)"
        );
        assert!(
            next + c.payload.len() <= expected.len(),
            "{dir:?}: more bytes than sent"
        );
        assert_eq!(
            &c.payload[..],
            &expected[next..next + c.payload.len()],
            "{dir:?}: bytes differ at offset {next}"
        );
        owner[next..next + c.payload.len()].fill(i);
        next += c.payload.len();
    }
    assert_eq!(
        next,
        expected.len(),
        "{dir:?}: captured {next} of {} bytes",
        expected.len()
    );
    owner
}

/// Everything the exchange promises: both directions complete and ordered, directions and
/// ports right, and each request captured before the response it caused.
pub fn verify_exchange(caps: &[Cap], server: SocketAddr, client: &Log, srv: &Log) {
    for c in caps {
        match c.dir {
            Direction::Request => assert_eq!(c.dst, server, "request not towards the server"),
            Direction::Response => assert_eq!(c.src, server, "response not from the server"),
        }
    }
    let req_owner = verify_direction(caps, Direction::Request, &client.sent);
    let resp_owner = verify_direction(caps, Direction::Response, &srv.sent);
    assert_eq!(
        client.msgs.len(),
        srv.msgs.len(),
        "one response per request"
    );
    for (k, (req, resp)) in client.msgs.iter().zip(&srv.msgs).enumerate() {
        let req_ts = caps[req_owner[req.1 - 1]].ts;
        let resp_ts = caps[resp_owner[resp.0]].ts;
        assert!(
            req_ts <= resp_ts,
            "message {k}: response captured before its request"
        );
    }
    let fins = |d| caps.iter().filter(|c| c.dir == d && c.flags.fin()).count();
    assert!(
        fins(Direction::Request) >= 1 && fins(Direction::Response) >= 1,
        "FINs captured"
    );
}

/// Runs the default exchange against a capture configured by `cfg` (ports are filled in
/// with the server's) and verifies it. Returns the captured segments.
pub fn exchange_and_verify(bind: SocketAddr, mut cfg: LiveConfig) -> (Vec<Cap>, LiveCapture) {
    let (addr, server) = spawn_server(None, bind);
    cfg.ports = fixscope_core::ports::PortSet::single(addr.port());
    let mut cap = LiveCapture::open(&cfg).expect("open capture");
    let plan = default_plan();
    let client = spawn_client(None, addr, plan);
    let clog = client.join().expect("client thread").expect("client");
    let slog = server.join().expect("server thread").expect("server");
    let (rq, rs) = (clog.sent.len(), slog.sent.len());
    let caps = collect(
        &mut cap,
        Duration::from_secs(15),
        Duration::from_millis(200),
        |c| {
            payload_bytes(c, Direction::Request) >= rq
                && payload_bytes(c, Direction::Response) >= rs
        },
    );
    verify_exchange(&caps, addr, &clog, &slog);
    let k = cap.counters().expect("counters");
    assert_eq!(k.ring_drops(), 0, "no ring drops: {k:?}");
    assert_eq!(k.cut_bytes, 0, "nothing cut: {k:?}");
    assert_eq!(cap.malformed_records(), 0);
    (caps, cap)
}

/// Runs a command, panicking with its output on failure.
pub fn run(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    assert!(
        out.status.success(),
        "{cmd} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Network namespaces that are deleted when this guard drops (even on panic).
pub struct NetnsGuard(pub Vec<String>);

impl NetnsGuard {
    pub fn create(names: &[String]) -> NetnsGuard {
        let g = NetnsGuard(Vec::new());
        let mut g = g;
        for n in names {
            let _ = Command::new("ip").args(["netns", "del", n]).output();
            run("ip", &["netns", "add", n]);
            g.0.push(n.clone());
        }
        g
    }
}

impl Drop for NetnsGuard {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", n]).output();
        }
    }
}

/// The example binary `name`, built by `cargo test` next to the test binaries.
pub fn example_bin(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let dir = exe.parent().and_then(|p| p.parent()).expect("target dir");
    let p = dir.join("examples").join(name);
    assert!(
        p.exists(),
        "{} missing: run `cargo build -p fixscope-live --examples` first",
        p.display()
    );
    p
}

#[path = "tc_hygiene.rs"]
mod tc_hygiene;
#[allow(unused_imports)]
pub use tc_hygiene::{tc_filter_show, ClsactCleanup};
