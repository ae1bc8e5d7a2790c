//! Two points, two clocks (#32) on real traffic: the simulator's client in one network
//! namespace, its exchange in another, a third routing between them, and real tcpdump
//! capturing at the client's end and at the exchange's — real TCP stacks, delayed ACKs,
//! the kernel's own stamps. (No delay is added: this kernel has no netem.) Both captures
//! are stamped by this host's one clock, so the truth of the offset is 0:
//!
//! - the nearer point is told, every order is joined, none guessed;
//! - the estimated interval holds 0 in every window, and is as narrow as the two ways'
//!   minima through a router (microseconds);
//! - `--clock trust` is accepted (a single clock cannot break causality), its one-way
//!   figures are exact (uncertainty 0), positive, and add up to `wire_rtt`;
//! - the near point alone measures the same residence.

mod support;
// Not every helper is used here.
#[allow(unused_imports)]
mod support_live;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use fixscope_testkit::netns::{run, Netns};
use fixscope_testkit::{require_root, require_tool, serial};
use serde_json::Value;
use support::{counter, fixscope, stage};
use support_live::{run_client, start_exchange, stop_tcpdump, Proc};

const TEST: &str = "points_netns";
const ORDERS: u64 = 1_500;

/// Client (C) — middle (M, routing) — server (S).
struct Chain {
    _netns: Netns,
    c: String,
    s: String,
    vc: String,
    vs: String,
    s_ip: String,
}

impl Chain {
    fn create() -> Chain {
        let pid = std::process::id() % 10_000_000;
        let [c, m, s] = ["c", "m", "s"].map(|x| format!("fxp-{pid}-{x}"));
        let netns = Netns::create(&[c.clone(), m.clone(), s.clone()]);
        // IFNAMSIZ is 16.
        let [vc, vmc, vs, vms] = ["c", "mc", "s", "ms"].map(|x| format!("fp{pid}{x}"));
        run(
            "ip",
            &[
                "-n", &c, "link", "add", &vc, "type", "veth", "peer", "name", &vmc, "netns", &m,
            ],
        );
        run(
            "ip",
            &[
                "-n", &s, "link", "add", &vs, "type", "veth", "peer", "name", &vms, "netns", &m,
            ],
        );
        let addr = |ns: &str, dev: &str, ip: &str| {
            run("ip", &["-n", ns, "addr", "add", ip, "dev", dev]);
            run("ip", &["-n", ns, "link", "set", dev, "up"]);
            run("ip", &["-n", ns, "link", "set", "lo", "up"]);
        };
        addr(&c, &vc, "10.232.7.1/24");
        addr(&m, &vmc, "10.232.7.2/24");
        addr(&m, &vms, "10.233.7.2/24");
        addr(&s, &vs, "10.233.7.1/24");
        run(
            "ip",
            &["-n", &c, "route", "add", "default", "via", "10.232.7.2"],
        );
        run(
            "ip",
            &["-n", &s, "route", "add", "default", "via", "10.233.7.2"],
        );
        run(
            "ip",
            &[
                "netns",
                "exec",
                &m,
                "sysctl",
                "-qw",
                "net.ipv4.ip_forward=1",
            ],
        );
        Chain {
            _netns: netns,
            c,
            s,
            vc,
            vs,
            s_ip: "10.233.7.1".into(),
        }
    }
}

/// tcpdump on `dev` in namespace `ns`, nanosecond stamps, into `file`.
fn tcpdump(ns: &str, dev: &str, file: &Path, port: u16) -> Proc {
    let mut cmd = Command::new("ip");
    cmd.args([
        "netns",
        "exec",
        ns,
        "tcpdump",
        "-i",
        dev,
        "--immediate-mode",
        "-U",
        "-s",
        "0",
    ])
    .args(["--time-stamp-precision", "nano", "-B", "65536", "-w"])
    .arg(file)
    .arg(format!("tcp port {port}"));
    let mut p = Proc::spawn("tcpdump", cmd);
    p.wait_for_stderr("listening on", Duration::from_secs(10));
    p
}

fn points(cli: &Path, gw: &Path, port: u16, extra: &[&str]) -> Value {
    let (c, g, p) = (
        format!("cli={}", cli.display()),
        format!("gw={}", gw.display()),
        port.to_string(),
    );
    let mut args = vec!["pcap", "--point", &c, "--point", &g, "-p", &p, "--json"];
    args.extend(extra);
    let out = fixscope(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.lines().last().expect("a summary")).unwrap()
}

fn captures() -> (PathBuf, PathBuf, u16) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(TEST);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let chain = Chain::create();
    let port = 19_877;
    let (cli, gw) = (dir.join("cli.pcap"), dir.join("gw.pcap"));
    let t_cli = tcpdump(&chain.c, &chain.vc, &cli, port);
    let t_gw = tcpdump(&chain.s, &chain.vs, &gw, port);
    let mut exchange = start_exchange(
        Some(&chain.s),
        &format!("{}:{port}", chain.s_ip),
        &dir.join("exchange.csv"),
        &[],
    );
    let count = ORDERS.to_string();
    run_client(
        Some(&chain.c),
        &exchange,
        &["--rate", "500", "--count", &count, "--drain-timeout", "10"],
        Duration::from_secs(60),
    );
    exchange.proc.signal(libc::SIGTERM);
    let e = exchange.proc.finish(Duration::from_secs(10));
    assert!(e.status.success(), "exchange: {}", e.stderr);
    stop_tcpdump(t_cli, &cli);
    stop_tcpdump(t_gw, &gw);
    (cli, gw, port)
}

#[test]
fn real_captures_at_two_ends_of_a_routed_path_bound_one_clock_and_its_one_ways() {
    require_root(TEST);
    require_tool(TEST, "tcpdump");
    let _serial = serial();
    let (cli, gw, port) = captures();

    let s = points(&cli, &gw, port, &[]);
    let clock = &s["clock"];
    assert_eq!(clock["near_acceptor"], "gw", "{clock}");
    assert_eq!(counter(&s, "points_orders_joined"), ORDERS);
    for c in [
        "points_orders_near_only",
        "points_orders_far_only",
        "points_orders_ambiguous",
        "points_time_reversed",
    ] {
        assert_eq!(counter(&s, c), 0, "{c}");
    }
    assert_eq!(stage(&s, "residence")["count"].as_u64(), Some(ORDERS));
    for w in clock["windows"].as_array().unwrap() {
        // One clock: the truth is 0, at both ends of every window.
        for (lo, hi) in [("start_lo_ns", "start_hi_ns"), ("end_lo_ns", "end_hi_ns")] {
            let (lo, hi) = (w[lo].as_i64().unwrap(), w[hi].as_i64().unwrap());
            assert!(lo <= 0 && 0 <= hi, "[{lo}, {hi}] holds 0: {w}");
        }
        if w["transition"] == true {
            continue;
        }
        let width = w["width_ns"].as_i64().unwrap();
        assert!(width > 0 && width <= 200_000, "two hops' minima: {w}");
        assert!(w["samples_forward"].as_u64().unwrap() > 100, "{w}");
    }
    assert!(clock["steps"].as_array().unwrap().is_empty(), "{clock}");

    // The clock trusted: accepted, exact, positive each way, adding up.
    let t = points(&cli, &gw, port, &["--clock", "trust"]);
    assert_eq!(t["clock"]["mode"], "trust");
    let fwd = stage(&t, "one_way_fwd");
    let rev = stage(&t, "one_way_rev");
    assert_eq!(fwd["offset_uncertainty_ns"], 0);
    assert_eq!(fwd["withheld"], false);
    assert!(fwd["min_ns"].as_u64().unwrap() > 0, "{fwd}");
    assert!(rev["min_ns"].as_u64().unwrap() > 0, "{rev}");
    assert_eq!(fwd["count"].as_u64(), Some(ORDERS));
    let mean = |v: &Value| v["mean_ns"].as_f64().unwrap();
    let wire = stage(&t, "wire_rtt");
    assert!(
        (mean(fwd) + mean(rev) - mean(wire)).abs() < 1e-3 * ORDERS as f64,
        "fwd + rev = wire_rtt: {} + {} vs {}",
        mean(fwd),
        mean(rev),
        mean(wire)
    );
    // The near point alone measures the same residence.
    let (_, alone) = support::analyse(&[&gw], &["-p", &port.to_string()]);
    for f in ["count", "min_ns", "max_ns", "mean_ns"] {
        assert_eq!(
            stage(&alone, "first_response")[f],
            stage(&t, "residence")[f],
            "{f}"
        );
    }
}
