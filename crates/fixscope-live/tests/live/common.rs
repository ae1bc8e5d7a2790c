//! What the live tests share beyond the testkit: a FIX-ish request/response exchange over
//! real TCP, capture collection, and byte-exact verification of what was captured.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use fixscope_core::segment::{Direction, Segment, TcpFlags};
use fixscope_core::source::Flow;
use fixscope_live::{LiveCapture, LiveConfig};
use fixscope_testkit::enter_netns;
use fixscope_testkit::fix::padded_message;

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
                let resp = padded_message("8", seq, response_pad(seq));
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
                let m = padded_message("D", seq, *pad);
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

impl Cap {
    pub fn of(s: &Segment<'_>) -> Cap {
        Cap {
            ts: s.ts_ns,
            dir: s.direction,
            src: SocketAddr::new(s.flow.src.addr, s.flow.src.port),
            dst: SocketAddr::new(s.flow.dst.addr, s.flow.dst.port),
            seq: s.seq,
            flags: s.flags,
            payload: s.payload.to_vec(),
            missing: s.missing_tail,
        }
    }
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
            out.push(Cap::of(s));
            Flow::Continue
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
/// What a byte-exact check may accept beyond "every byte once, in order", each only as
/// often as something outside the capture proves it happened.
#[derive(Clone, Copy, Debug, Default)]
pub struct Allow {
    /// Segments the senders' kernels retransmitted (TCP's RetransSegs, tail loss probes
    /// included): the wire carried those bytes twice, so the capture must show them twice,
    /// identical. Under QEMU's TCG an ACK can take longer than the sender's loss-probe
    /// timer, which a real veth pair never does in this test.
    pub retransmitted: u64,
    /// Records the capture's merge counted late (`late_records`). Only under emulation
    /// (FIXSCOPE_TEST_EMULATED_CPU=1) may a late record come out of timestamp order: on real
    /// hardware a reorder stays a failure whatever the counter says.
    pub late: u64,
}

impl Allow {
    /// The capture's late records, counted as allowed only under emulation.
    pub fn late_records(mut self, late: u64) -> Allow {
        println!("late_records {late}");
        if emulated_cpu() {
            self.late = late;
        }
        self
    }
}

/// FIXSCOPE_TEST_EMULATED_CPU=1: the tests run under QEMU's TCG (`make test-kernel`).
pub fn emulated_cpu() -> bool {
    std::env::var_os("FIXSCOPE_TEST_EMULATED_CPU").is_some_and(|v| v == "1")
}

/// TCP segments retransmitted so far by the kernel of network namespace `netns` (`None`:
/// this thread's), from the RetransSegs column of /proc/net/snmp.
pub fn retransmitted_segments(netns: Option<&str>) -> u64 {
    let text = match netns {
        None => std::fs::read_to_string("/proc/net/snmp").expect("/proc/net/snmp"),
        Some(ns) => {
            let out = std::process::Command::new("ip")
                .args(["netns", "exec", ns, "cat", "/proc/net/snmp"])
                .output()
                .expect("ip netns exec");
            assert!(out.status.success(), "reading /proc/net/snmp in {ns}");
            String::from_utf8(out.stdout).expect("utf-8")
        }
    };
    let mut tcp = text.lines().filter(|l| l.starts_with("Tcp:"));
    let (names, values) = (
        tcp.next().expect("Tcp header"),
        tcp.next().expect("Tcp values"),
    );
    let col = names
        .split_whitespace()
        .position(|n| n == "RetransSegs")
        .expect("RetransSegs column");
    values
        .split_whitespace()
        .nth(col)
        .and_then(|v| v.parse().ok())
        .expect("RetransSegs value")
}

/// Checks one direction byte by byte (strict: see [`verify_direction_allowing`]).
pub fn verify_direction(caps: &[Cap], dir: Direction, expected: &[u8]) -> Vec<usize> {
    verify_direction_allowing(caps, dir, expected, Allow::default())
}

/// Checks that the captured segments of `dir` carry `expected` exactly: every byte, in
/// order, in timestamp order, nothing lost — except what `allow` proves happened on the
/// wire or in the merge. Returns, per expected byte, the index of the segment that first
/// carried it.
pub fn verify_direction_allowing(
    caps: &[Cap],
    dir: Direction,
    expected: &[u8],
    allow: Allow,
) -> Vec<usize> {
    let mine: Vec<usize> = (0..caps.len()).filter(|&i| caps[i].dir == dir).collect();
    let syn = mine
        .iter()
        .find(|&&i| caps[i].flags.syn())
        .unwrap_or_else(|| panic!("{dir:?}: no SYN captured"));
    let isn = caps[*syn].seq.wrapping_add(1);
    let mut next = 0usize;
    let mut last_ts = 0u64;
    let mut owner = vec![usize::MAX; expected.len()];
    let (mut repeated, mut back_in_time) = (0u64, 0u64);
    for &i in &mine {
        let c = &caps[i];
        if c.ts < last_ts {
            back_in_time += 1;
            assert!(
                back_in_time <= allow.late,
                "{dir:?}: timestamp went back at segment {i} ({} ns; allowed: {allow:?})",
                last_ts - c.ts
            );
        }
        last_ts = last_ts.max(c.ts);
        assert_eq!(c.missing, 0, "{dir:?}: segment {i} lost bytes");
        if c.payload.is_empty() {
            continue;
        }
        let off = c.seq.wrapping_sub(isn) as usize;
        if off < next {
            // Bytes already captured: a retransmission (the wire carried them again, the
            // same bytes), allowed as often as the senders' kernels retransmitted.
            repeated += 1;
            assert!(
                repeated <= allow.retransmitted,
                "{dir:?}: segment {i} at stream offset {off}, expected {next} (duplicate, gap \
                 or reorder; allowed: {allow:?})"
            );
            let end = (off + c.payload.len()).min(expected.len());
            assert_eq!(
                &c.payload[..end - off],
                &expected[off..end],
                "{dir:?}: retransmitted segment {i} differs from the bytes at offset {off}"
            );
            if off + c.payload.len() <= next {
                continue;
            }
            // It also carries new bytes (a retransmission merged with what followed).
            let skip = next - off;
            let fresh = &c.payload[skip..];
            assert!(
                next + fresh.len() <= expected.len(),
                "{dir:?}: more bytes than sent"
            );
            assert_eq!(fresh, &expected[next..next + fresh.len()]);
            owner[next..next + fresh.len()].fill(i);
            next += fresh.len();
            continue;
        }
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
    if repeated + back_in_time > 0 {
        println!("{dir:?}: {repeated} retransmitted segment(s), {back_in_time} late record(s) out of order");
    }
    owner
}

/// Everything the exchange promises: both directions complete and ordered, directions and
/// ports right, and each request captured before the response it caused — accepting only
/// what `allow` proves happened.
pub fn verify_exchange_allowing(
    caps: &[Cap],
    server: SocketAddr,
    client: &Log,
    srv: &Log,
    allow: Allow,
) {
    for c in caps {
        match c.dir {
            Direction::Request => assert_eq!(c.dst, server, "request not towards the server"),
            Direction::Response => assert_eq!(c.src, server, "response not from the server"),
        }
    }
    let req_owner = verify_direction_allowing(caps, Direction::Request, &client.sent, allow);
    let resp_owner = verify_direction_allowing(caps, Direction::Response, &srv.sent, allow);
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
    let retrans_before = retransmitted_segments(None);
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
    let allow = Allow {
        retransmitted: retransmitted_segments(None) - retrans_before,
        late: 0,
    }
    .late_records(cap.late_records());
    verify_exchange_allowing(&caps, addr, &clog, &slog, allow);
    let k = cap.counters().expect("counters");
    assert_eq!(k.ring_drops(), 0, "no ring drops: {k:?}");
    assert_eq!(k.cut_bytes, 0, "nothing cut: {k:?}");
    assert_eq!(cap.malformed_records(), 0);
    (caps, cap)
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

/// Runs `f` on a thread inside network namespace `ns` (where an ifindex means what the
/// test wants, and where `tc` and `ip` commands spawned by `f` run), and returns its result.
pub fn in_netns<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let ns = ns.to_string();
    std::thread::spawn(move || {
        enter_netns(&ns).expect("enter the test's namespace");
        f()
    })
    .join()
    .unwrap_or_else(|e| std::panic::resume_unwind(e))
}

/// The byte-exact check itself, on made-up segments (no kernel): a repeated segment or a
/// timestamp going back fails unless something outside the capture accounts for it.
mod allowances {
    use super::*;

    fn seg(ts: u64, seq: u32, flags: u8, payload: &[u8]) -> Cap {
        let a: SocketAddr = "127.0.0.1:1".parse().expect("addr");
        Cap {
            ts,
            dir: Direction::Request,
            src: a,
            dst: a,
            seq,
            flags: TcpFlags(flags),
            payload: payload.to_vec(),
            missing: 0,
        }
    }

    /// SYN (isn 99), "abcd", "ef", then "cd" again (a tail retransmission), "gh".
    fn retransmitted() -> Vec<Cap> {
        vec![
            seg(1, 99, TcpFlags::SYN, b""),
            seg(2, 100, 0, b"abcd"),
            seg(3, 104, 0, b"ef"),
            seg(4, 102, 0, b"cd"),
            seg(5, 106, 0, b"gh"),
        ]
    }

    #[test]
    #[should_panic(expected = "duplicate, gap or reorder")]
    fn a_repeated_segment_fails_without_a_counted_retransmission() {
        verify_direction(&retransmitted(), Direction::Request, b"abcdefgh");
    }

    #[test]
    fn a_counted_retransmission_is_accepted_with_identical_bytes() {
        let allow = Allow {
            retransmitted: 1,
            late: 0,
        };
        let owner =
            verify_direction_allowing(&retransmitted(), Direction::Request, b"abcdefgh", allow);
        assert_eq!(owner, vec![1, 1, 1, 1, 2, 2, 4, 4]);
    }

    #[test]
    #[should_panic(expected = "differs")]
    fn a_retransmission_must_carry_the_same_bytes() {
        let mut caps = retransmitted();
        caps[3].payload = b"cX".to_vec();
        let allow = Allow {
            retransmitted: 1,
            late: 0,
        };
        verify_direction_allowing(&caps, Direction::Request, b"abcdefgh", allow);
    }

    #[test]
    #[should_panic(expected = "timestamp went back")]
    fn a_reorder_fails_unless_late_records_allow_it() {
        let caps = vec![
            seg(1, 99, TcpFlags::SYN, b""),
            seg(5, 100, 0, b"ab"),
            seg(4, 102, 0, b"cd"),
        ];
        // Accepted only with a late record allowed (emulation), refused without.
        let late = Allow {
            retransmitted: 0,
            late: 1,
        };
        verify_direction_allowing(&caps, Direction::Request, b"abcd", late);
        verify_direction(&caps, Direction::Request, b"abcd");
    }
}
