//! #48: `make dist`'s static binary, on its own. Each test runs it in an empty root — the
//! binary, `/proc`, `/sys` and `/dev` bound from the host, and a `/tmp` with the test's
//! files — made by the test in a private mount namespace (`unshare -m` + `chroot`), so no
//! library, loader, NSS module or config file of the host can be reached.
//!
//! Run by `make test-dist`, which builds the binary and points `FIXSCOPE_DIST_BIN` at it
//! (ignored in `make test`: the static build takes minutes). Without the variable each test
//! fails, naming it.

mod support;
mod support_dist;
// Not every helper is used here.
#[allow(unused_imports)]
mod support_live;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use support::counter;
use support_dist::{dist_bin, EmptyRoot};
use support_live::{
    parse_report, require_root, run_client, serial, start_exchange, stop_live_proc, Proc,
};

const SIM_CAPTURE: &str = "../../testdata/captures/sim/sim_orders.pcap";
const SIM_PORT: &str = "19478";

fn run_ok(what: &str, mut cmd: Command) -> (String, String) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "{what}: {}\n{stderr}", out.status);
    (stdout, stderr)
}

#[test]
#[ignore = "make test-dist: needs the static binary (FIXSCOPE_DIST_BIN)"]
fn the_binary_needs_no_library_and_keeps_its_debug_info_beside_it() {
    let test = "the_binary_needs_no_library_and_keeps_its_debug_info_beside_it";
    let bin = dist_bin(test);
    let ldd = Command::new("ldd").arg(&bin).output().expect("ldd");
    let said =
        String::from_utf8_lossy(&ldd.stdout).to_string() + &String::from_utf8_lossy(&ldd.stderr);
    assert!(
        said.contains("not a dynamic executable"),
        "ldd says: {said}"
    );
    let (headers, _) = run_ok("readelf", {
        let mut c = Command::new("readelf");
        c.arg("-lSW").arg(&bin);
        c
    });
    assert!(
        !headers.contains("INTERP"),
        "no program interpreter: {headers}"
    );
    assert!(
        !headers.contains(".debug_info"),
        "debug info is not inside the binary"
    );
    assert!(
        headers.contains(".gnu_debuglink"),
        "the binary names its debug file"
    );
    let size = std::fs::metadata(&bin).unwrap().len();
    assert!(size <= 20 * 1024 * 1024, "{size} bytes is over 20 MiB");
    let debug = bin.parent().unwrap().join("fixscope.debug");
    let (sections, _) = run_ok("readelf on fixscope.debug", {
        let mut c = Command::new("readelf");
        c.arg("-SW").arg(&debug);
        c
    });
    assert!(sections.contains(".debug_info"), "{}", debug.display());
}

#[test]
#[ignore = "make test-dist: needs the static binary (FIXSCOPE_DIST_BIN)"]
fn pcap_in_an_empty_root_gives_the_dynamic_builds_json_byte_for_byte() {
    let test = "pcap_in_an_empty_root_gives_the_dynamic_builds_json_byte_for_byte";
    require_root(test);
    let root = EmptyRoot::new(test);
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Every committed capture (ports as golden.rs has them), on the default plan and one
    // thread.
    let captures = [
        (SIM_CAPTURE, vec!["-p", SIM_PORT]),
        (SIM_CAPTURE, vec!["-p", SIM_PORT, "--threads", "1"]),
        (
            "../../testdata/captures/ndpi/ndpi_fix.pcap",
            vec!["-p", "4000"],
        ),
        (
            "../../testdata/captures/ndpi/ndpi_fix2.pcap",
            vec!["-p", "1-65535"],
        ),
    ];
    for (capture, flags) in captures {
        let src = here.join(capture);
        if !src.exists() {
            panic!("{test}: {} is missing", src.display());
        }
        let name = src.file_name().unwrap().to_str().unwrap();
        root.put(&format!("/tmp/{name}"), &std::fs::read(&src).unwrap());
        // The same relative path on both sides, so the JSON names the same file.
        let rel = format!("tmp/{name}");
        let mut args = vec!["pcap", rel.as_str(), "--json"];
        args.extend_from_slice(&flags);
        let (inside, _) = run_ok("static pcap", root.command(&args));
        let (dynamic, _) = run_ok("dynamic pcap", {
            let mut c = Command::new(env!("CARGO_BIN_EXE_fixscope"));
            c.current_dir(root.path()).args(&args);
            c
        });
        assert!(inside.contains("\"type\":\"summary\""), "{inside}");
        assert_eq!(
            inside, dynamic,
            "{capture}: the static binary's JSON differs"
        );
    }
}

#[test]
#[ignore = "make test-dist: needs the static binary (FIXSCOPE_DIST_BIN)"]
fn check_in_an_empty_root_reports_the_kernel() {
    let test = "check_in_an_empty_root_reports_the_kernel";
    require_root(test);
    let root = EmptyRoot::new(test);
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let (stdout, stderr) = run_ok("check", root.command(&["check"]));
    let all = stdout + &stderr;
    assert!(
        all.contains(release.trim()),
        "check names kernel {release}: {all}"
    );
    assert!(!all.contains("libbpf:"), "no libbpf dump: {all}");
}

/// `live` (eBPF on lo, after `-Z` to a user of the root's own /etc/passwd) or
/// `live --tap` in the empty root, against the simulator run outside it: every order the
/// client sent is measured.
fn live_counts_every_order(test: &str, tap: bool) {
    require_root(test);
    let _g = serial();
    let root = EmptyRoot::new(test);
    root.put(
        "/etc/passwd",
        b"root:x:0:0::/:/fixscope\nfixwatch:x:4711:4711::/:/nonexistent\n",
    );
    root.put("/etc/group", b"fixwatch:x:4711:\n");
    let dir = tempfile::tempdir().unwrap();
    let exchange = start_exchange(None, "127.0.0.1:0", &dir.path().join("truth.csv"), &[]);
    let port = exchange.addr.port().to_string();
    let mut args = vec!["live", "-i", "lo", "-p", port.as_str(), "--json"];
    if tap {
        args.push("--tap");
    } else {
        args.extend_from_slice(&["-Z", "fixwatch"]);
    }
    let mut live = Proc::spawn("static fixscope live", root.command(&args));
    let watching = live.wait_for_stderr("fixscope: watching", Duration::from_secs(20));
    if !tap {
        let said = live.wait_for_stderr("running as user", Duration::from_secs(10));
        assert!(said.contains("fixwatch (uid 4711, gid 4711)"), "{said}");
    }
    let orders = 2000;
    run_client(
        None,
        &exchange,
        &["--rate", "4000", "--count", &orders.to_string()],
        Duration::from_secs(60),
    );
    // Stopped once the intervals show every order matched (or after 20 s): under an
    // emulated CPU (the kernel matrix VMs) the tap's reader can trail the client by
    // seconds, and a stop does not wait for frames the kernel has not handed over yet.
    let caught_up = |out: &str| {
        out.lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .any(|v| v["counters"]["matched"] == orders)
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !caught_up(&live.stdout()) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    let finished = stop_live_proc(&mut live, libc::SIGINT);
    let (_, summary) = parse_report(&finished.stdout);
    let said: Vec<String> = [
        "requests",
        "matched",
        "response_before_request",
        "unmatched_responses",
        "timed_out",
        "unanswered",
        "tcp_gaps",
        "segments",
    ]
    .iter()
    .map(|c| format!("{c} {}", summary["counters"][c]))
    .collect();
    assert_eq!(
        (counter(&summary, "requests"), counter(&summary, "matched")),
        (orders, orders),
        "{watching}\n{}\ncounters: {}\nsource: {}",
        finished.stderr,
        said.join(", "),
        summary["source"]
    );
}

#[test]
#[ignore = "make test-dist: needs the static binary (FIXSCOPE_DIST_BIN)"]
fn live_in_an_empty_root_counts_every_order() {
    live_counts_every_order("live_in_an_empty_root_counts_every_order", false);
}

#[test]
#[ignore = "make test-dist: needs the static binary (FIXSCOPE_DIST_BIN)"]
fn live_tap_in_an_empty_root_counts_every_order() {
    live_counts_every_order("live_tap_in_an_empty_root_counts_every_order", true);
}

/// An HTTP listener on 127.0.0.1 answering every request 200 and keeping its Host header
/// and first body line (the query).
fn http_ok_server() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(64) {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let (mut host, mut length, mut line) = (String::new(), 0usize, String::new());
            let mut request = String::new();
            reader.read_line(&mut request).ok();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                let lower = line.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("host:") {
                    host = v.trim().to_string();
                }
                if let Some(v) = lower.strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                line.clear();
            }
            let mut body = vec![0u8; length];
            reader.read_exact(&mut body).ok();
            log.lock()
                .unwrap()
                .push(format!("{host} {}", request.trim()));
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    (port, seen)
}

#[test]
#[ignore = "make test-dist: needs the static binary (FIXSCOPE_DIST_BIN)"]
fn clickhouse_host_names_resolve_without_nss() {
    let test = "clickhouse_host_names_resolve_without_nss";
    require_root(test);
    let root = EmptyRoot::new(test);
    root.put(
        "/etc/hosts",
        b"# the root's own hosts file\n127.0.0.1 clickhouse.venue1.test\n",
    );
    let capture = Path::new(env!("CARGO_MANIFEST_DIR")).join(SIM_CAPTURE);
    root.put("/tmp/sim.pcap", &std::fs::read(capture).unwrap());
    let (port, seen) = http_ok_server();
    let url = format!("http://clickhouse.venue1.test:{port}/latency");
    let (_, stderr) = run_ok(
        "static pcap --clickhouse",
        root.command(&[
            "pcap",
            "/tmp/sim.pcap",
            "-p",
            SIM_PORT,
            "--json",
            "--clickhouse",
            &url,
        ]),
    );
    assert!(stderr.contains("rows inserted"), "{stderr}");
    let seen = seen.lock().unwrap();
    assert!(!seen.is_empty(), "no request reached the server: {stderr}");
    assert!(
        seen.iter()
            .all(|s| s.starts_with(&format!("clickhouse.venue1.test:{port} POST"))),
        "{seen:?}"
    );
}
