//! `--leg`/`--link` (#31) against `fixscope sim router`'s own truth: a client, the router
//! and the exchange on 127.0.0.1; the router writes its capture of both sessions stamped
//! with the very times of its truth file (its reads and writes), so every hop stage must
//! equal the truth to the nanosecond (count, min, max, mean exact; percentiles within the
//! histogram's 0.1%), and every parent land in its ledger count. Cancels and replaces
//! (`--mix`) cross the hop too. Live on lo, each stage's median lies inside the medians of
//! its items' wire brackets, from the router's calls and its peers' ([`wire_bounds`]).

mod support;
#[allow(unused_imports)]
mod support_live;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Duration;

use fixscope_sim::router::truth::{read_router_truth, RouterTruthRecord};
use support::{assert_stage, counter};
use support_live::*;

#[derive(Default)]
struct Truth {
    hop_out: Vec<u64>,
    venue_rtt: Vec<u64>,
    hop_back: Vec<u64>,
    client_rtt: Vec<u64>,
    parents: u64,
    children: u64,
    linked: u64,
    rejected: u64,
    fanout: u64,
}

/// The router's truth rows by parent request: (session, ClOrdID, read time) → its rows.
type ByParent = BTreeMap<(String, String, u64), Vec<RouterTruthRecord>>;

fn by_parent(rows: Vec<RouterTruthRecord>) -> ByParent {
    let mut parents = ByParent::new();
    for r in rows {
        let key = (
            r.parent_session.clone(),
            r.parent_clordid.clone(),
            r.parent_read_ns,
        );
        parents.entry(key).or_default().push(r);
    }
    parents
}

fn truth_of(path: &Path) -> Truth {
    let rows = read_router_truth(path).expect("router truth");
    let parents = by_parent(rows);
    let mut t = Truth::default();
    for ((_, _, read), rows) in &parents {
        t.parents += 1;
        let first = &rows[0];
        if let Some(w) = first.parent_first_written_ns {
            t.client_rtt.push(w - read);
        }
        if first.rejected {
            t.rejected += 1;
            continue;
        }
        let children: Vec<_> = rows
            .iter()
            .filter(|r| r.child_written_ns.is_some())
            .collect();
        t.children += children.len() as u64;
        if children.is_empty() {
            continue;
        }
        t.linked += 1;
        t.fanout += u64::from(children.len() > 1);
        for c in &children {
            let out = c.child_written_ns.unwrap();
            t.hop_out.push(out - read);
            if let Some(v) = c.venue_first_ns {
                t.venue_rtt.push(v - out);
            }
        }
        // hop_back: the venue's earliest first answer → the router's answer to it.
        if let Some(v) = children.iter().filter_map(|c| c.venue_first_ns).min() {
            if let Some(w) = children
                .iter()
                .filter(|c| c.venue_first_ns == Some(v))
                .find_map(|c| c.parent_response_written_ns)
            {
                t.hop_back.push(w - v);
            }
        }
    }
    t
}

/// A client → `sim router` → `sim exchange` chain on 127.0.0.1 that ran for a second; the
/// router's truth and capture in `dir`.
struct ChainRun {
    dir: tempfile::TempDir,
    router_port: u16,
    venue_port: u16,
}

impl ChainRun {
    fn truth(&self) -> Truth {
        truth_of(&self.dir.path().join("router.csv"))
    }
    fn pcap(&self) -> String {
        self.dir.path().join("router.pcap").display().to_string()
    }
    fn legs(&self) -> [String; 2] {
        [
            format!("--leg=up={}", self.router_port),
            format!("--leg=down={}/client", self.venue_port),
        ]
    }
}

/// Runs the chain; `during` is called once the router listens and before the client starts
/// (a live fixscope attaches then), and gets the ports.
fn run_chain(id_map: &str, slice: &str, during: impl FnOnce(u16, u16)) -> ChainRun {
    let dir = tempfile::tempdir().unwrap();
    let exchange = start_exchange(
        None,
        "127.0.0.1:0",
        &dir.path().join("exchange.csv"),
        &[
            "--ack-delay",
            "uniform:20us-200us",
            "--fill-delay",
            "uniform:50us-300us",
        ],
    );
    let truth_path = dir.path().join("router.csv");
    let client_truth = dir.path().join("client.csv");
    let pcap = dir.path().join("router.pcap");
    let venue = exchange.addr.to_string();
    let router_port = free_port();
    let listen = format!("127.0.0.1:{router_port}");
    let mut router = Proc::spawn(
        "sim router",
        fixscope_cmd(
            None,
            &[
                "sim",
                "router",
                "--listen",
                &listen,
                "--venue",
                &venue,
                "--id-map",
                id_map,
                "--slice",
                slice,
                "--reject-rate",
                "0.05",
                "--route-delay",
                "uniform:5us-40us",
                "--back-delay",
                "uniform:5us-40us",
                "--truth",
                truth_path.to_str().unwrap(),
                "--pcap",
                pcap.to_str().unwrap(),
            ],
        ),
    );
    router.wait_for_stderr("listening on ", Duration::from_secs(10));
    during(router_port, exchange.addr.port());
    let c = Proc::spawn(
        "sim client",
        fixscope_cmd(
            None,
            &[
                "sim",
                "client",
                "--connect",
                &listen,
                "--rate",
                "1500",
                "--duration",
                "1",
                "--mix",
                "D=80,F=10,G=10",
                "--truth",
                client_truth.to_str().unwrap(),
            ],
        ),
    )
    .finish(Duration::from_secs(30));
    assert!(c.status.success(), "client: {}\n{}", c.stderr, c.stdout);
    router.signal(libc::SIGINT);
    let r = router.finish(Duration::from_secs(10));
    assert!(r.status.success(), "router: {}", r.stderr);
    // Stopped, not killed: its truth file is written out.
    let mut exchange = exchange;
    exchange.proc.signal(libc::SIGTERM);
    let e = exchange.proc.finish(Duration::from_secs(10));
    assert!(e.status.success(), "exchange: {}", e.stderr);
    ChainRun {
        dir,
        router_port,
        venue_port: exchange.addr.port(),
    }
}

/// The ledger a router's run must show: every routed parent linked, its own rejects
/// unlinked, nothing ambiguous, guessed or late.
fn assert_ledger(s: &serde_json::Value, t: &Truth) {
    let c = |n| counter(s, n);
    assert_eq!((c("parents"), c("children")), (t.parents, t.children));
    assert_eq!(c("linked"), t.linked, "every routed parent linked");
    assert_eq!(c("unlinked_parent"), t.rejected, "the router's own rejects");
    assert_eq!(
        (
            c("ambiguous"),
            c("late_link"),
            c("unlinked_child"),
            c("local_ack")
        ),
        (0, 0, 0, 0)
    );
    assert_eq!(c("fanout_parents"), t.fanout);
    assert_eq!(c("linked_children"), t.children);
}

fn run_router_chain(id_map: &str, slice: &str) {
    let run = run_chain(id_map, slice, |_, _| {});
    let t = run.truth();
    assert!(
        t.parents > 1000 && t.rejected > 0 && t.linked > 900,
        "{} parents",
        t.parents
    );
    let pcap = run.pcap();
    let legs = run.legs();
    let out = support::fixscope(&["pcap", &pcap, "--json", &legs[0], &legs[1]]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let s: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_stage(&s, "hop_out", &t.hop_out);
    assert_stage(&s, "venue_rtt", &t.venue_rtt);
    assert_stage(&s, "hop_back", &t.hop_back);
    assert_stage(&s, "client_rtt", &t.client_rtt);
    assert_ledger(&s, &t);
}

#[test]
fn sim_router_526_with_slices_every_hop_exact() {
    run_router_chain("526", "2");
}

#[test]
fn sim_router_hops_every_hop_exact() {
    run_router_chain("hops", "1");
}

#[test]
fn sim_router_same_ids_every_hop_exact() {
    run_router_chain("same", "1");
}

/// Where the wire must put each item of each hop stage, as (shortest, longest): the
/// kernel stamps a message on lo inside the write() that sends it, so between its sender's
/// clock read before that write and its receiver's after the read. The router's own calls
/// give one end of each bracket (its truth: a stretch it spends is longer on the wire, one
/// it waits out shorter), its peers' calls the other — the client's write of a parent and
/// read of its first answer, the exchange's read of a child and write of its first answer
/// (each difference taken within one process's clock: the router's is CLOCK_REALTIME, the
/// others' CLOCK_MONOTONIC). However long the router sleeps before it reads (a loaded host:
/// milliseconds), the live figure stays inside. `u64::MAX` where a peer did not stamp the
/// message the bracket needs (counted and printed).
#[derive(Default)]
struct WireBounds {
    hop_out: Vec<(u64, u64)>,
    venue_rtt: Vec<(u64, u64)>,
    hop_back: Vec<(u64, u64)>,
    client_rtt: Vec<(u64, u64)>,
}

fn wire_bounds(dir: &Path) -> WireBounds {
    use fixscope_sim::truth::{read_client_truth, read_truth};
    let rows = read_router_truth(dir.join("router.csv")).expect("router truth");
    let client: HashMap<String, (Option<u64>, Option<u64>)> =
        read_client_truth(dir.join("client.csv"))
            .expect("client truth")
            .into_iter()
            .map(|c| (c.clordid, (c.send_ns, c.first_ns)))
            .collect();
    // A child's read by the exchange (after it returned) and its first answer's write
    // (before it).
    let venue: HashMap<String, (u64, Option<u64>)> = read_truth(dir.join("exchange.csv"))
        .expect("exchange truth")
        .into_iter()
        .map(|t| (t.clordid, (t.request_ns, t.ack_ns)))
        .collect();
    let parents = by_parent(rows);
    let span = |from: Option<u64>, to: Option<u64>| match (from, to) {
        (Some(f), Some(t)) if t >= f => t - f,
        _ => u64::MAX,
    };
    let mut b = WireBounds::default();
    for ((_, clordid, read), rows) in &parents {
        let first = &rows[0];
        let (sent, answered) = client.get(clordid).copied().unwrap_or((None, None));
        if let Some(w) = first.parent_first_written_ns {
            b.client_rtt.push((w - read, span(sent, answered)));
        }
        if first.rejected {
            continue;
        }
        let children: Vec<_> = rows
            .iter()
            .filter(|r| r.child_written_ns.is_some())
            .collect();
        for c in &children {
            let out = c.child_written_ns.unwrap();
            let (venue_read, venue_answer) = venue
                .get(&c.child_clordid)
                .map_or((None, None), |&(r, a)| (Some(r), a));
            b.hop_out.push((out - read, span(sent, venue_read)));
            if let Some(v) = c.venue_first_ns {
                let shortest = match (venue_read, venue_answer) {
                    (Some(r), Some(a)) if a >= r => a - r,
                    _ => 0,
                };
                b.venue_rtt.push((shortest, v - out));
            }
        }
        if let Some(v) = children.iter().filter_map(|c| c.venue_first_ns).min() {
            let earliest = children.iter().filter(|c| c.venue_first_ns == Some(v));
            if let Some((c, w)) = earliest
                .clone()
                .find_map(|c| Some((c, c.parent_response_written_ns?)))
            {
                // The client's first answer is this one only when the router answered
                // nothing before it.
                let answer = venue.get(&c.child_clordid).and_then(|v| v.1);
                let longest = if first.parent_first_written_ns == Some(w) {
                    span(answer, answered)
                } else {
                    u64::MAX
                };
                b.hop_back.push((w - v, longest));
            }
        }
    }
    b
}

/// The median of `stage` live inside the medians of its items' wire brackets (a median of
/// values each inside its bracket lies between the brackets' medians), within the
/// histogram's precision.
fn assert_live_median(s: &serde_json::Value, stage: &str, bounds: &[(u64, u64)]) {
    let st = support::stage(s, stage);
    assert_eq!(
        st["count"].as_u64().unwrap(),
        bounds.len() as u64,
        "{stage} count"
    );
    let mut lo: Vec<u64> = bounds.iter().map(|b| b.0).collect();
    let mut hi: Vec<u64> = bounds.iter().map(|b| b.1).collect();
    lo.sort_unstable();
    hi.sort_unstable();
    let (want_lo, want_hi) = (
        support::exact_percentile(&lo, 0.5),
        support::exact_percentile(&hi, 0.5),
    );
    let got = st["p50_ns"].as_u64().unwrap();
    let unbounded = hi.iter().filter(|&&h| h == u64::MAX).count();
    eprintln!(
        "{stage}: live p50 {got} ns, the wire's brackets' medians [{want_lo}, {want_hi}] ns \
         ({unbounded} of {} items without a peer's stamp)",
        bounds.len()
    );
    let precision = |v: u64| v / 500 + 1;
    assert!(
        got + precision(want_lo) >= want_lo && got <= want_hi.saturating_add(precision(want_hi)),
        "{stage}: live p50 {got} ns outside the wire's [{want_lo}, {want_hi}] ns"
    );
    assert!(
        unbounded * 10 <= bounds.len(),
        "{stage}: {unbounded} of {} items without a peer's stamp",
        bounds.len()
    );
}

#[test]
fn live_on_lo_links_every_order_of_a_router() {
    require_root("live_on_lo_links_every_order_of_a_router");
    let _g = serial();
    let live = std::cell::RefCell::new(None);
    let run = run_chain("hops", "2", |router, venue| {
        let up = format!("--leg=up={router}");
        let down = format!("--leg=down={venue}/client");
        *live.borrow_mut() = Some(start_live(
            None,
            "lo",
            router,
            &["--json", "-r", "0", &up, &down],
        ));
    });
    let mut live = live.into_inner().expect("live started");
    let f = stop_live_proc(&mut live.proc, libc::SIGINT);
    let (_, s) = parse_report(&f.stdout);
    let t = run.truth();
    assert_ledger(&s, &t);
    let b = wire_bounds(run.dir.path());
    assert_live_median(&s, "hop_out", &b.hop_out);
    assert_live_median(&s, "hop_back", &b.hop_back);
    assert_live_median(&s, "venue_rtt", &b.venue_rtt);
    assert_live_median(&s, "client_rtt", &b.client_rtt);
}
