//! `--breakdown`'s socket and scheduler hooks against a server and client of the test's own,
//! in two network namespaces joined by a veth pair: several messages per write, a message
//! split across writes, partial reads and reads spanning messages, a peek. Every socket
//! call must sit exactly on the byte stream the TC programs captured in the same run.

use std::collections::HashSet;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use fixscope_core::ports::{PortSet, Role};
use fixscope_core::segment::Direction;
use fixscope_core::socket_event::{SocketCall, SocketEvent};
use fixscope_core::source::{Captured, Flow};
use fixscope_live::{LiveCapture, LiveConfig, LiveError, SocketHooks};
use fixscope_testkit::fix::padded_message;
use fixscope_testkit::{enter_netns, require_root, require_tool, serial, Netns, NetnsPair};

use crate::common::*;

/// The client's writes (each a list of byte ranges of the request stream) and the
/// server's, with a pause before each client write so the server's blocking read sleeps.
struct Plan {
    requests: Vec<u8>,
    client_writes: Vec<(usize, usize)>,
    responses: Vec<u8>,
    server_writes: Vec<(usize, usize)>,
}

fn plan() -> Plan {
    let msgs = |t: &str, pads: &[usize]| -> Vec<Vec<u8>> {
        pads.iter()
            .enumerate()
            .map(|(i, &p)| padded_message(t, i, p))
            .collect()
    };
    let req = msgs("D", &[40, 250, 1400, 600, 90, 3000]);
    let resp = msgs("8", &[30, 180, 900, 2500, 12]);
    let cat = |m: &[Vec<u8>]| m.concat();
    let requests = cat(&req);
    let r = |i: usize| req[..i].iter().map(Vec::len).sum::<usize>();
    // 3 messages in one write; message 3 split across two writes (the second also carries
    // message 4); message 5 alone.
    let half3 = r(3) + req[3].len() / 2;
    let client_writes = vec![(0, r(3)), (r(3), half3), (half3, r(5)), (r(5), r(6))];
    let responses = cat(&resp);
    let s = |i: usize| resp[..i].iter().map(Vec::len).sum::<usize>();
    let half3 = s(3) + resp[3].len() / 2;
    let server_writes = vec![(0, s(3)), (s(3), half3), (half3, s(4)), (s(4), s(5))];
    Plan {
        requests,
        client_writes,
        responses,
        server_writes,
    }
}

const PAUSE: Duration = Duration::from_millis(40);

/// The server: reports its address and thread id, reads the whole request stream with
/// small, varying buffers (partial reads, reads spanning messages), peeks once, then
/// writes the responses as planned.
fn spawn_server(ns: String, bind: SocketAddr) -> (SocketAddr, u32, JoinHandle<io::Result<()>>) {
    let (tx, rx) = mpsc::channel();
    let p = plan();
    let h = std::thread::spawn(move || -> io::Result<()> {
        enter_netns(&ns)?;
        let l = TcpListener::bind(bind)?;
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() } as u32;
        let _ = tx.send(l.local_addr().map(|a| (a, tid)));
        let (mut s, _) = l.accept()?;
        s.set_read_timeout(Some(Duration::from_secs(20)))?;
        let mut got = 0;
        let sizes = [100usize, 37, 4096, 7];
        let mut buf = [0u8; 4096];
        let mut peeked = false;
        let mut k = 0;
        while got < p.requests.len() {
            if got > 0 && !peeked {
                // A peek returns bytes without consuming them: no read event.
                let n = unsafe {
                    // SAFETY: `buf` is writable for its length; the fd is the open socket.
                    libc::recv(s.as_raw_fd(), buf.as_mut_ptr().cast(), 10, libc::MSG_PEEK)
                };
                if n <= 0 {
                    return Err(io::Error::last_os_error());
                }
                peeked = true;
            }
            let n = s.read(&mut buf[..sizes[k % sizes.len()]])?;
            k += 1;
            if n == 0 {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "client left"));
            }
            if buf[..n] != p.requests[got..got + n] {
                return Err(io::Error::other("request bytes differ"));
            }
            got += n;
        }
        for &(a, b) in &p.server_writes {
            // The pause lets the client's blocking read sleep (client role's wakeups).
            std::thread::sleep(PAUSE);
            s.write_all(&p.responses[a..b])?;
        }
        s.shutdown(Shutdown::Write)?;
        while s.read(&mut buf)? > 0 {}
        Ok(())
    });
    let (addr, tid) = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("server thread reports its address")
        .expect("server binds");
    (addr, tid, h)
}

/// The client: reports its thread id, connects, writes the requests as planned (a pause
/// before each write), then reads the responses to the end.
fn spawn_client(ns: String, server: SocketAddr) -> (u32, JoinHandle<io::Result<()>>) {
    let p = plan();
    let (tx, rx) = mpsc::channel();
    let h = std::thread::spawn(move || -> io::Result<()> {
        enter_netns(&ns)?;
        // SAFETY: gettid has no preconditions.
        let _ = tx.send(unsafe { libc::gettid() } as u32);
        let mut s = TcpStream::connect_timeout(&server, Duration::from_secs(10))?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(Duration::from_secs(20)))?;
        for &(a, b) in &p.client_writes {
            std::thread::sleep(PAUSE);
            s.write_all(&p.requests[a..b])?;
        }
        // The responses as they come, but for the last write: that one, and the server's
        // FIN right behind it, are both queued when one large read takes them — a read that
        // consumes the FIN too (copied_seq moves one more than the bytes returned).
        let last = p.server_writes.last().map_or(0, |w| w.0);
        let mut got = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        while got.len() < last {
            let n = s.read(&mut buf[..last - got.len()])?;
            if n == 0 {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "server left"));
            }
            got.extend_from_slice(&buf[..n]);
        }
        std::thread::sleep(PAUSE * 3);
        loop {
            let n = s.read(&mut buf)?;
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        if got != p.responses {
            return Err(io::Error::other("response bytes differ"));
        }
        s.shutdown(Shutdown::Write)
    });
    let tid = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("client thread reports its id");
    (tid, h)
}

/// The ids of the BPF programs named `fxb_*` (the breakdown's) that process `pid` holds.
pub fn breakdown_programs_held(pid: u32) -> HashSet<u32> {
    programs_held(pid, "fxb_")
}

/// The ids of the BPF programs whose names start with `prefix` that process `pid` holds
/// (program or link descriptors), from /proc/PID/fdinfo and the kernel's program list.
pub fn programs_held(pid: u32, prefix: &str) -> HashSet<u32> {
    let names: std::collections::HashMap<u32, String> = libbpf_rs::query::ProgInfoIter::default()
        .map(|p| (p.id, p.name.to_string_lossy().into_owned()))
        .collect();
    let mut held = HashSet::new();
    let dir = format!("/proc/{pid}/fdinfo");
    for entry in std::fs::read_dir(&dir).expect("fdinfo").flatten() {
        let Ok(info) = std::fs::read_to_string(entry.path()) else {
            continue;
        };
        for line in info.lines() {
            if let Some(id) = line.strip_prefix("prog_id:") {
                let id: u32 = id.trim().parse().expect("prog id");
                if names.get(&id).is_some_and(|n| n.starts_with(prefix)) {
                    held.insert(id);
                }
            }
        }
    }
    held
}

/// How many breakdown programs an open capture holds: its socket hook set and the
/// scheduler's.
fn expected_programs(cap: &LiveCapture) -> usize {
    let socket = match cap.breakdown_socket_hooks() {
        Some(SocketHooks::Fentry) => fixscope_live::SOCKET_FENTRY_PROGRAMS.len(),
        Some(SocketHooks::Tracepoints) => fixscope_live::SOCKET_TRACEPOINT_PROGRAMS.len(),
        None => 0,
    };
    socket + fixscope_live::SCHED_PROGRAMS.len()
}

/// The TC-captured stream of one direction: its first byte's sequence number and, per byte
/// offset, the timestamp of the segment that carried it.
fn stream(caps: &[Cap], dir: Direction, expected: &[u8], allow: Allow) -> (u32, Vec<u64>) {
    let owner = verify_direction_allowing(caps, dir, expected, allow);
    let syn = caps
        .iter()
        .find(|c| c.dir == dir && c.flags.syn())
        .expect("SYN");
    (
        syn.seq.wrapping_add(1),
        owner.iter().map(|&i| caps[i].ts).collect(),
    )
}

/// Events of one call tile the stream from its first byte, in order, with no gap or
/// overlap, and cover all of it.
fn assert_tiles(events: &[&SocketEvent], first_seq: u32, total: usize, what: &str) {
    let mut next = first_seq;
    for (i, e) in events.iter().enumerate() {
        assert_eq!(
            e.seq,
            next,
            "{what} {i}: seq {} at stream offset {}, expected offset {}",
            e.seq,
            e.seq.wrapping_sub(first_seq),
            next.wrapping_sub(first_seq)
        );
        next = next.wrapping_add(e.len);
    }
    assert_eq!(
        next.wrapping_sub(first_seq) as usize,
        total,
        "{what}s cover the whole stream"
    );
}

/// Server role: the server's reads of the requests and writes of the responses.
#[test]
fn socket_calls_sit_on_the_stream_and_between_the_wire_times() {
    let _g = serial();
    require_root("socket_calls_sit_on_the_stream_and_between_the_wire_times");
    socket_calls_on_the_stream(Role::Server, 91);
}

/// Client role, the mirror image: the client's writes of the requests and reads of the
/// responses.
#[test]
fn client_role_socket_calls_sit_on_the_stream() {
    let _g = serial();
    require_root("client_role_socket_calls_sit_on_the_stream");
    socket_calls_on_the_stream(Role::Client, 93);
}

fn socket_calls_on_the_stream(role: Role, tag: u8) {
    let net = NetnsPair::create(tag);
    let p = plan();
    let bind: SocketAddr = format!("{}:0", net.ip_a).parse().expect("addr");
    let (addr, server_tid, server) = spawn_server(net.ns_a.clone(), bind);
    let retransmitted =
        || retransmitted_segments(Some(&net.ns_a)) + retransmitted_segments(Some(&net.ns_b));
    let retrans_before = retransmitted();

    // The watched host: the server's namespace in server role, the client's in client role.
    let (ns, dev) = match role {
        Role::Server => (net.ns_a.clone(), net.veth_a.clone()),
        Role::Client => (net.ns_b.clone(), net.veth_b.clone()),
    };
    let mut cap = in_netns(&ns, move || -> Result<LiveCapture, LiveError> {
        let mut cfg = LiveConfig::new(dev, PortSet::single(addr.port()));
        cfg.role = role;
        cfg.ring_bytes = 4 << 20;
        cfg.breakdown = true;
        LiveCapture::open(&cfg)
    })
    .expect("open with --breakdown");
    eprintln!(
        "{role:?}: socket hooks {:?}; limits: {:?}",
        cap.breakdown_socket_hooks(),
        cap.breakdown_limits()
    );
    assert!(cap.breakdown_limits().is_empty(), "every hook attached");
    let held = breakdown_programs_held(std::process::id());
    assert_eq!(
        held.len(),
        expected_programs(&cap),
        "socket + scheduler programs held: {held:?}"
    );

    let (client_tid, client) = spawn_client(net.ns_b.clone(), addr);
    let mut caps = Vec::new();
    let mut events: Vec<SocketEvent> = Vec::new();
    let bytes = |evs: &[SocketEvent], call| -> usize {
        evs.iter()
            .filter(|e| e.call == call)
            .map(|e| e.len as usize)
            .sum()
    };
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut linger_until: Option<Instant> = None;
    while Instant::now() < linger_until.unwrap_or(deadline) {
        cap.poll_captured(Duration::from_millis(20), &mut |c| {
            match c {
                Captured::Segment(s) => caps.push(Cap::of(s)),
                Captured::Socket(e) => events.push(*e),
                Captured::TlsCall(_) => panic!("no --tls-uprobes here"),
            }
            Flow::Continue
        })
        .expect("poll");
        let done = payload_bytes(&caps, Direction::Request) >= p.requests.len()
            && payload_bytes(&caps, Direction::Response) >= p.responses.len()
            && bytes(&events, SocketCall::Read) + bytes(&events, SocketCall::Write)
                >= p.requests.len() + p.responses.len();
        if done && linger_until.is_none() {
            linger_until = Some(Instant::now() + Duration::from_millis(200));
        }
    }
    client.join().expect("client thread").expect("client");
    server.join().expect("server thread").expect("server");

    // A segment twice only as often as the two kernels retransmitted (under TCG an ACK can
    // be later than a loss probe's timer), with the same bytes; its first copy owns them.
    let allow = Allow {
        retransmitted: retransmitted() - retrans_before,
        late: 0,
    };
    let (req_isn, req_ts) = stream(&caps, Direction::Request, &p.requests, allow);
    let (resp_isn, resp_ts) = stream(&caps, Direction::Response, &p.responses, allow);
    let client_addr = caps
        .iter()
        .find(|c| c.dir == Direction::Request)
        .expect("a request")
        .src;
    // What the watched side reads and writes, and its thread.
    struct Side<'a> {
        dir: Direction,
        isn: u32,
        ts: &'a [u64],
        bytes: &'a [u8],
        src: SocketAddr,
        dst: SocketAddr,
        /// The peer's writes: each found the watched thread asleep in read.
        peer_writes: &'a [(usize, usize)],
    }
    let requests = Side {
        dir: Direction::Request,
        isn: req_isn,
        ts: &req_ts,
        bytes: &p.requests,
        src: client_addr,
        dst: addr,
        peer_writes: &p.client_writes,
    };
    let responses = Side {
        dir: Direction::Response,
        isn: resp_isn,
        ts: &resp_ts,
        bytes: &p.responses,
        src: addr,
        dst: client_addr,
        peer_writes: &p.server_writes,
    };
    let (read, written, own_writes, tid) = match role {
        Role::Server => (&requests, &responses, &p.server_writes, server_tid),
        Role::Client => (&responses, &requests, &p.client_writes, client_tid),
    };
    let reads: Vec<&SocketEvent> = events
        .iter()
        .filter(|e| e.call == SocketCall::Read)
        .collect();
    let writes: Vec<&SocketEvent> = events
        .iter()
        .filter(|e| e.call == SocketCall::Write)
        .collect();
    for e in &events {
        assert_eq!(e.tid, tid, "only the watched side's thread: {e:?}");
        let side = match e.call {
            SocketCall::Read => read,
            SocketCall::Write => written,
        };
        let (src, dst) = (
            SocketAddr::new(e.flow.src.addr, e.flow.src.port),
            SocketAddr::new(e.flow.dst.addr, e.flow.dst.port),
        );
        assert_eq!(
            (src, dst, e.direction),
            (side.src, side.dst, side.dir),
            "flow as on the wire: {e:?}"
        );
    }

    // ---- Exactly on the stream: the reads (small buffers, a peek) and the writes (several
    // messages, a split message) tile their streams from the first byte.
    assert_tiles(&reads, read.isn, read.bytes.len(), "read");
    assert_tiles(&writes, written.isn, written.bytes.len(), "write");
    assert_eq!(writes.len(), own_writes.len(), "one event per write");
    assert!(
        reads.len() >= read.peer_writes.len(),
        "at least a read per peer write: {}",
        reads.len()
    );

    // ---- Between the wire times: a read returns after its last byte came in, a write
    // starts before its first byte goes out.
    for (i, r) in reads.iter().enumerate() {
        let last = (r.seq.wrapping_sub(read.isn) + r.len - 1) as usize;
        assert!(
            read.ts[last] <= r.ts_ns,
            "read {i} returned at {} before its last byte reached TC ingress at {}",
            r.ts_ns,
            read.ts[last]
        );
    }
    for (i, w) in writes.iter().enumerate() {
        let first = w.seq.wrapping_sub(written.isn) as usize;
        assert!(
            w.ts_ns <= written.ts[first],
            "write {i} entered at {} after its first byte left at TC egress at {}",
            w.ts_ns,
            written.ts[first]
        );
    }

    // ---- Wakeups: each peer write but the first and the last (the client reads that one
    // late, see spawn_client) found the watched thread asleep in read; the read that
    // returned its first byte carries the wakeup its arrival caused.
    for &(start, _) in &read.peer_writes[1..read.peer_writes.len() - 1] {
        let r = reads
            .iter()
            .find(|r| r.seq.wrapping_sub(read.isn) as usize == start)
            .unwrap_or_else(|| panic!("a read starts at offset {start} (blocking reads)"));
        let w = r
            .wakeup
            .unwrap_or_else(|| panic!("the read at offset {start} carries no wakeup: {r:?}"));
        assert!(
            read.ts[start] <= w.woken_ns && w.woken_ns <= w.on_cpu_ns && w.on_cpu_ns <= r.ts_ns,
            "offset {start}: arrival {} <= woken {} <= on cpu {} <= read {}",
            read.ts[start],
            w.woken_ns,
            w.on_cpu_ns,
            r.ts_ns
        );
    }

    let b = cap
        .breakdown_counters()
        .expect("counters")
        .expect("breakdown counters");
    assert_eq!(b.breakdown_reads as usize, reads.len(), "{b:?}");
    assert_eq!(b.breakdown_writes as usize, writes.len(), "{b:?}");
    assert_eq!(b.breakdown_ring_drops, 0, "{b:?}");
    if role == Role::Server {
        assert!(
            b.breakdown_skipped >= 1,
            "the server's peek was skipped: {b:?}"
        );
    }
    assert!(b.breakdown_sched_calls > 0, "{b:?}");
    assert_eq!(cap.malformed_records(), 0);

    // ---- Detach: the links go, and with the capture every program.
    let cap = in_netns(&ns, move || {
        let mut cap = cap;
        cap.detach().expect("detach");
        cap
    });
    assert!(
        cap.breakdown_program_stats().is_ok(),
        "program descriptors stay readable after detach"
    );
    drop(cap);
    let held = breakdown_programs_held(std::process::id());
    assert!(held.is_empty(), "nothing held after drop: {held:?}");
    let names = net.names().to_vec();
    drop(net);
    assert!(!Netns::any_listed(&names), "namespaces left");
}

/// Without `--breakdown` nothing beyond the TC programs is loaded.
#[test]
fn without_breakdown_no_socket_or_scheduler_program_is_loaded() {
    let _g = serial();
    require_root("without_breakdown_no_socket_or_scheduler_program_is_loaded");
    let net = NetnsPair::create(92);
    let dev = net.veth_a.clone();
    let cap = in_netns(&net.ns_a, move || {
        LiveCapture::open(&LiveConfig::new(dev, PortSet::single(9878)))
    })
    .expect("open without --breakdown");
    assert!(!cap.has_breakdown());
    assert!(cap
        .breakdown_program_stats()
        .expect("no programs to read")
        .is_empty());
    let pid = std::process::id();
    assert!(
        !programs_held(pid, "fxs_").is_empty(),
        "the scan finds the TC programs it holds"
    );
    assert!(
        breakdown_programs_held(pid).is_empty(),
        "no breakdown program held without --breakdown"
    );
    let cap = in_netns(&net.ns_a, move || {
        let mut cap = cap;
        cap.detach().expect("detach");
        cap
    });
    drop(cap);
    drop(net);
}

/// SIGKILL of a process holding `--breakdown`'s hooks leaves none of them: the links (and
/// so the programs) die with its descriptors.
#[test]
fn breakdown_hooks_die_with_a_killed_process() {
    let _g = serial();
    require_root("breakdown_hooks_die_with_a_killed_process");
    // With tc filters (Linux < 6.6) the TC programs outlive a SIGKILL until detached: the
    // test removes them below, and this guard the clsact qdisc it caused.
    let _clean = fixscope_testkit::tc::ClsactCleanup::new("lo");
    let mut child = std::process::Command::new(example_bin("hold_attached"))
        .args(["lo", "47191", "auto", "30", "breakdown"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("spawn hold_attached");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    io::BufRead::read_line(&mut io::BufReader::new(stdout), &mut line).expect("read");
    if !line.starts_with("ATTACHED ") {
        let _ = child.kill();
        let _ = child.wait();
        panic!("hold_attached said {line:?}");
    }
    let held = breakdown_programs_held(child.id());
    // Either socket hook set (3 tracepoints or 4 fentry/fexit) and the 2 scheduler hooks.
    if !(held.len() == 5 || held.len() == 6) {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the holder has the breakdown programs: {held:?}");
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    fixscope_live::detach_leftovers("lo").expect("remove the killed holder's tc filters");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let alive: Vec<u32> = libbpf_rs::query::ProgInfoIter::default()
            .map(|p| p.id)
            .filter(|id| held.contains(id))
            .collect();
        if alive.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "programs of the killed process still loaded: {alive:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A kernel without BTF cannot have the socket hooks: `--breakdown` fails saying so (the
/// kernel's BTF hidden behind an empty tmpfs in a private mount namespace), while the same
/// capture without it still opens.
#[test]
fn without_kernel_btf_breakdown_fails_clearly() {
    let _g = serial();
    require_root("without_kernel_btf_breakdown_fails_clearly");
    require_tool("without_kernel_btf_breakdown_fails_clearly", "unshare");
    let holder = example_bin("hold_attached");
    let run = |extra: &[&str]| {
        let out = std::process::Command::new("unshare")
            .args([
                "-m",
                "sh",
                "-c",
                "mount -t tmpfs none /sys/kernel/btf && exec \"$0\" \"$@\"",
            ])
            .arg(&holder)
            .args(["lo", "47192", "auto", "0"])
            .args(extra)
            .output()
            .expect("run hold_attached in a private mount namespace");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stdout, stderr) = run(&[]);
    assert_eq!(code, Some(0), "without --breakdown: {stdout}{stderr}");
    assert!(stdout.starts_with("ATTACHED "), "{stdout}");
    let (code, stdout, stderr) = run(&["breakdown"]);
    assert_eq!(code, Some(4), "with --breakdown: {stdout}{stderr}");
    assert!(
        stderr.contains("--breakdown needs the kernel's BTF (/sys/kernel/btf/vmlinux"),
        "{stderr}"
    );
}
