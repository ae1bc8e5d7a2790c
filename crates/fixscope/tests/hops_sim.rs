//! `--leg`/`--link` (#31) against `fixscope sim router`'s own truth: a client, the router
//! and the exchange on 127.0.0.1; the router writes its capture of both sessions stamped
//! with the very times of its truth file (its reads and writes), so every hop stage must
//! equal the truth to the nanosecond (count, min, max, mean exact; percentiles within the
//! histogram's 0.1%), and every parent land in its ledger count. Cancels and replaces
//! (`--mix`) cross the hop too.

mod support;
mod support_live;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use fixscope_sim::router::truth::read_router_truth;
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

fn truth_of(path: &Path) -> Truth {
    let rows = read_router_truth(path).expect("router truth");
    let mut parents: BTreeMap<(String, String, u64), Vec<_>> = BTreeMap::new();
    for r in rows {
        parents
            .entry((
                r.parent_session.clone(),
                r.parent_clordid.clone(),
                r.parent_read_ns,
            ))
            .or_default()
            .push(r);
    }
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

fn run_router_chain(id_map: &str, slice: &str) {
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
    let (truth_path, pcap) = (
        dir.path().join("router.csv"),
        dir.path().join("router.pcap"),
    );
    let venue = exchange.addr.to_string();
    let mut router = Proc::spawn(
        "sim router",
        fixscope_cmd(
            None,
            &[
                "sim",
                "router",
                "--listen",
                "127.0.0.1:0",
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
    let line = router.wait_for_stderr("listening on ", Duration::from_secs(10));
    let listen: std::net::SocketAddr = line
        .split("listening on ")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .and_then(|a| a.trim().parse().ok())
        .unwrap_or_else(|| panic!("router address in {line:?}"));
    let connect = listen.to_string();
    let c = Proc::spawn(
        "sim client",
        fixscope_cmd(
            None,
            &[
                "sim",
                "client",
                "--connect",
                &connect,
                "--rate",
                "1500",
                "--duration",
                "1",
                "--mix",
                "D=80,F=10,G=10",
            ],
        ),
    )
    .finish(Duration::from_secs(30));
    assert!(c.status.success(), "client: {}\n{}", c.stderr, c.stdout);
    router.signal(libc::SIGINT);
    let r = router.finish(Duration::from_secs(10));
    assert!(r.status.success(), "router: {}", r.stderr);

    let t = truth_of(&truth_path);
    assert!(
        t.parents > 1000 && t.rejected > 0 && t.linked > 900,
        "{} parents",
        t.parents
    );
    let out = support::fixscope(&[
        "pcap",
        pcap.to_str().unwrap(),
        "--json",
        &format!("--leg=up={}", listen.port()),
        &format!("--leg=down={}/client", exchange.addr.port()),
    ]);
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
    let c = |n| counter(&s, n);
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
