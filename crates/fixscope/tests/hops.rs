//! `--leg`/`--link` (#31) against a router's traffic whose every time is known: a client
//! session into the router, the router's session out to a venue, written as a real capture.
//! Each hop stage equals the generator's truth (count, min, max and mean exact,
//! percentiles within the histogram's 0.1%) and every order lands in its ledger count.

mod support;
mod support_hlog;

use fixscope_core::pcap_writer::SyntheticConnection;
use support::{analyse_packets, assert_stage, at, counter, endpoint, fix_message, TimedPacket};

const CLIENT_PORT: u16 = 9879;
const VENUE_PORT: u16 = 9878;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum IdMap {
    /// The child's ClOrdID is the parent's.
    Same,
    /// The router's own ClOrdID, the parent's in SecondaryClOrdID (526).
    Secondary,
    /// The router's own ClOrdID; OnBehalfOfCompID and the NoHops group name the parent.
    Hops,
    /// The router's own ClOrdID and nothing naming the parent.
    Counter,
    /// The router's own ClOrdID, the parent's in a tag of its own (9002).
    Custom,
}

struct Spec {
    id_map: IdMap,
    clients: usize,
    parents: usize,
    slices: usize,
    /// Every n-th parent is rejected by the router itself (0: none).
    reject_every: usize,
    /// Every n-th parent is acked by the router before it routes (0: none).
    local_ack_every: usize,
    seed: u64,
}

#[derive(Default, Debug)]
struct Truth {
    hop_out: Vec<u64>,
    venue_rtt: Vec<u64>,
    hop_back: Vec<u64>,
    client_rtt: Vec<u64>,
    parents: u64,
    children: u64,
    linked: u64,
    unlinked_parent: u64,
    local_ack: u64,
    fanout: u64,
    /// Per linked parent answered after the venue: (client_rtt, hop_out, venue_rtt,
    /// hop_back) of the child the venue answered first.
    chains: std::collections::HashMap<String, [u64; 4]>,
}

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// One message on one connection (0..clients: client sessions; `clients`: the venue's),
/// from the initiator (`up`) or the acceptor.
struct Event {
    ts: u64,
    conn: usize,
    from_initiator: bool,
    bytes: Vec<u8>,
}

fn router_capture(spec: &Spec) -> (Vec<TimedPacket>, Truth) {
    let mut rng = Rng(spec.seed);
    let mut truth = Truth::default();
    let mut events = Vec::new();
    let t0 = 1_700_000_000_000_000_000u64;
    let mut client_seq = vec![1u64; spec.clients];
    let mut venue_seq = 1u64;
    let mut router_seq = vec![1u64; spec.clients];
    let mut exch_seq = 1u64;
    let mut next_child = 1u64;
    let logon = |sender: &str, target: &str| {
        fix_message(
            "FIX.4.4",
            &[
                (35, "A"),
                (49, sender),
                (56, target),
                (34, "1"),
                (98, "0"),
                (108, "30"),
            ],
        )
    };
    for c in 0..spec.clients {
        let name = format!("CLIENT{c}");
        events.push(Event {
            ts: t0 + 10,
            conn: c,
            from_initiator: true,
            bytes: logon(&name, "ROUTER"),
        });
        events.push(Event {
            ts: t0 + 20,
            conn: c,
            from_initiator: false,
            bytes: logon("ROUTER", &name),
        });
        client_seq[c] = 2;
        router_seq[c] = 2;
    }
    events.push(Event {
        ts: t0 + 30,
        conn: spec.clients,
        from_initiator: true,
        bytes: logon("ROUTER", "EXCH"),
    });
    events.push(Event {
        ts: t0 + 40,
        conn: spec.clients,
        from_initiator: false,
        bytes: logon("EXCH", "ROUTER"),
    });
    venue_seq += 1;
    exch_seq += 1;
    let venue = spec.clients;
    for i in 0..spec.parents {
        let c = i % spec.clients;
        let client = format!("CLIENT{c}");
        let parent_id = format!("C{c}-{i:06}");
        let tp = t0 + 1_000_000 + i as u64 * 20_000 + rng.below(3_000);
        let pseq = client_seq[c].to_string();
        client_seq[c] += 1;
        events.push(Event {
            ts: tp,
            conn: c,
            from_initiator: true,
            bytes: fix_message(
                "FIX.4.4",
                &[
                    (35, "D"),
                    (49, &client),
                    (56, "ROUTER"),
                    (34, &pseq),
                    (11, &parent_id),
                    (55, "MSFT"),
                    (54, "1"),
                    (38, "200"),
                    (40, "2"),
                    (44, "10.5"),
                ],
            ),
        });
        truth.parents += 1;
        let mut answer = |ts: u64, exec: &str, status: &str, events: &mut Vec<Event>| {
            let seq = router_seq[c].to_string();
            router_seq[c] += 1;
            events.push(Event {
                ts,
                conn: c,
                from_initiator: false,
                bytes: fix_message(
                    "FIX.4.4",
                    &[
                        (35, "8"),
                        (49, "ROUTER"),
                        (56, &client),
                        (34, &seq),
                        (11, &parent_id),
                        (37, "O"),
                        (17, "E"),
                        (150, exec),
                        (39, status),
                    ],
                ),
            });
        };
        if spec.reject_every > 0 && i % spec.reject_every == 0 {
            let r = 500 + rng.below(2_000);
            answer(tp + r, "8", "8", &mut events);
            truth.client_rtt.push(r);
            truth.unlinked_parent += 1;
            continue;
        }
        let local = spec.local_ack_every > 0 && i % spec.local_ack_every == 1;
        let mut first_answer = None;
        if local {
            let r = 100 + rng.below(200);
            answer(tp + r, "0", "0", &mut events);
            first_answer = Some(tp + r);
            truth.local_ack += 1;
        }
        let mut venue_acks = Vec::new();
        let mut child_outs = Vec::new();
        let mut last_fill = 0;
        let mut child_out = tp + 400 + rng.below(1_500);
        for k in 0..spec.slices {
            let child_id = match spec.id_map {
                IdMap::Same => parent_id.clone(),
                _ => {
                    next_child += 1;
                    format!("R{next_child:07}")
                }
            };
            let vseq = venue_seq.to_string();
            venue_seq += 1;
            let mut fields: Vec<(u32, String)> = vec![
                (35, "D".into()),
                (49, "ROUTER".into()),
                (56, "EXCH".into()),
                (34, vseq),
            ];
            if spec.id_map == IdMap::Hops {
                fields.extend([
                    (115, client.clone()),
                    (627, "1".into()),
                    (628, "ROUTER".into()),
                    (629, "20261127-08:00:00.000".into()),
                    (630, pseq.clone()),
                ]);
            }
            fields.push((11, child_id.clone()));
            if spec.id_map == IdMap::Secondary {
                fields.push((526, parent_id.clone()));
            }
            if spec.id_map == IdMap::Custom {
                fields.push((9002, parent_id.clone()));
            }
            fields.extend([
                (55, "MSFT".into()),
                (54, "1".into()),
                (38, "100".into()),
                (40, "2".into()),
                (44, "10.5".into()),
            ]);
            let borrowed: Vec<(u32, &str)> = fields.iter().map(|(t, v)| (*t, v.as_str())).collect();
            events.push(Event {
                ts: child_out,
                conn: venue,
                from_initiator: true,
                bytes: fix_message("FIX.4.4", &borrowed),
            });
            truth.children += 1;
            truth.hop_out.push(child_out - tp);
            let venue_rtt = 3_000 + rng.below(20_000) + k as u64 * 7;
            let ack_at = child_out + venue_rtt;
            let fill_at = ack_at + 1_000 + rng.below(5_000);
            for (ts, exec, status) in [(ack_at, "0", "0"), (fill_at, "F", "2")] {
                let seq = exch_seq.to_string();
                exch_seq += 1;
                events.push(Event {
                    ts,
                    conn: venue,
                    from_initiator: false,
                    bytes: fix_message(
                        "FIX.4.4",
                        &[
                            (35, "8"),
                            (49, "EXCH"),
                            (56, "ROUTER"),
                            (34, &seq),
                            (11, &child_id),
                            (37, "V"),
                            (17, "X"),
                            (150, exec),
                            (39, status),
                        ],
                    ),
                });
            }
            truth.venue_rtt.push(venue_rtt);
            venue_acks.push(ack_at);
            child_outs.push(child_out);
            last_fill = last_fill.max(fill_at);
            child_out += 300 + rng.below(700);
        }
        let linked = spec.id_map != IdMap::Counter;
        let first_venue = *venue_acks.iter().min().unwrap();
        if !local {
            let back = 200 + rng.below(1_800);
            answer(first_venue + back, "0", "0", &mut events);
            first_answer = Some(first_venue + back);
            if linked {
                truth.hop_back.push(back);
                let k = venue_acks.iter().position(|&a| a == first_venue).unwrap();
                let (out, venue) = (child_outs[k] - tp, first_venue - child_outs[k]);
                truth
                    .chains
                    .insert(parent_id.clone(), [out + venue + back, out, venue, back]);
            }
        }
        // The router forwards the fill after its ack.
        let fill_after = last_fill.max(first_answer.unwrap());
        answer(fill_after + 300 + rng.below(500), "F", "2", &mut events);
        truth.client_rtt.push(first_answer.unwrap() - tp);
        if linked {
            truth.linked += 1;
            truth.fanout += u64::from(spec.slices > 1);
        } else {
            truth.unlinked_parent += 1;
            truth.local_ack -= u64::from(local);
        }
    }
    if spec.id_map == IdMap::Counter {
        truth.hop_out.clear();
    }
    // TCP segments in time order per connection (sequence numbers follow the time).
    events.sort_by_key(|e| e.ts);
    let mut conns: Vec<SyntheticConnection> = (0..spec.clients)
        .map(|c| {
            SyntheticConnection::new(
                endpoint(false, 10 + c as u8, 41_000 + c as u16),
                endpoint(false, 2, CLIENT_PORT),
            )
        })
        .collect();
    conns.push(SyntheticConnection::new(
        endpoint(false, 2, 50_000),
        endpoint(false, 3, VENUE_PORT),
    ));
    let mut packets = Vec::new();
    for conn in &mut conns {
        for p in conn.handshake() {
            packets.push(at(t0, p));
        }
    }
    for e in events {
        let conn = &mut conns[e.conn];
        let spec = if e.from_initiator {
            conn.client_sends(&e.bytes)
        } else {
            conn.server_sends(&e.bytes)
        };
        packets.push(at(e.ts, spec));
    }
    packets.sort_by_key(|p| p.ts_ns);
    (packets, truth)
}

fn legs() -> Vec<String> {
    vec![
        format!("--leg=up={CLIENT_PORT}"),
        format!("--leg=down={VENUE_PORT}/client"),
    ]
}

fn run(name: &str, spec: &Spec, extra: &[&str]) -> (serde_json::Value, Truth) {
    let dir = tempfile::tempdir().unwrap();
    let (packets, truth) = router_capture(spec);
    let mut args: Vec<String> = legs();
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let summary = analyse_packets(
        dir.path(),
        name,
        &packets,
        &[&["-p", &CLIENT_PORT.to_string()], &args[..]].concat(),
    );
    (summary, truth)
}

/// Every parent and every child in exactly one count, and the counts the truth has.
fn assert_ledger(s: &serde_json::Value, t: &Truth) {
    let c = |n| counter(s, n);
    assert_eq!(c("parents"), t.parents);
    assert_eq!(c("children"), t.children);
    assert_eq!(c("linked"), t.linked, "linked");
    assert_eq!(c("unlinked_parent"), t.unlinked_parent, "unlinked_parent");
    assert_eq!(c("local_ack"), t.local_ack, "local_ack");
    assert_eq!(c("fanout_parents"), t.fanout, "fanout_parents");
    assert_eq!(
        (c("ambiguous"), c("ambiguous_child"), c("late_link")),
        (0, 0, 0)
    );
    assert_eq!((c("parents_pending"), c("children_pending")), (0, 0));
    assert_eq!(
        c("parents"),
        c("linked") + c("unlinked_parent") + c("ambiguous")
    );
    assert_eq!(
        c("children"),
        c("linked_children") + c("unlinked_child") + c("ambiguous_child") + c("late_link")
    );
}

fn assert_hops(s: &serde_json::Value, t: &Truth) {
    assert_stage(s, "hop_out", &t.hop_out);
    assert_stage(s, "venue_rtt", &t.venue_rtt);
    assert_stage(s, "hop_back", &t.hop_back);
    assert_stage(s, "client_rtt", &t.client_rtt);
    assert_ledger(s, t);
    assert_chains(s, t);
}

/// The summary's `links`: linked parents per rule, and where the time went — each band's
/// mean hops adding up to its mean client_rtt, the slowest orders' hops exact per order.
fn assert_chains(s: &serde_json::Value, t: &Truth) {
    let links = &s["links"];
    let by_rule: u64 = links["rules"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(by_rule, t.linked);
    let bands = links["where_time_went"].as_array().unwrap();
    let orders: u64 = bands.iter().map(|b| b["orders"].as_u64().unwrap()).sum();
    assert_eq!(
        orders as usize,
        t.chains.len(),
        "every linked order answered after the venue"
    );
    for b in bands {
        let f = |k: &str| b[k].as_f64().unwrap();
        let sum = f("hop_out_mean_ns") + f("venue_rtt_mean_ns") + f("hop_back_mean_ns");
        assert!((sum - f("client_rtt_mean_ns")).abs() < 1e-3, "{b}");
    }
    let mut want: Vec<u64> = t.chains.values().map(|c| c[0]).collect();
    want.sort_unstable_by(|a, b| b.cmp(a));
    let slowest = links["slowest"].as_array().unwrap();
    assert_eq!(slowest.len(), want.len().min(10));
    for (i, ch) in slowest.iter().enumerate() {
        let key = ch["key"].as_str().unwrap();
        let truth = t.chains[key];
        let rule = ch["rule"].as_str().unwrap();
        assert!(
            links["rules"][rule].as_u64().unwrap() > 0,
            "{key} linked by {rule}"
        );
        let got = ["client_rtt_ns", "hop_out_ns", "venue_rtt_ns", "hop_back_ns"]
            .map(|k| ch[k].as_u64().unwrap());
        assert_eq!(got, truth, "{key}");
        assert_eq!(got[0], want[i], "the {i}th slowest");
    }
}

#[test]
fn same_ids_link_by_11_and_every_hop_is_exact() {
    let spec = Spec {
        id_map: IdMap::Same,
        clients: 3,
        parents: 600,
        slices: 1,
        reject_every: 10,
        local_ack_every: 0,
        seed: 1,
    };
    let (s, t) = run("same.pcap", &spec, &[]);
    assert_hops(&s, &t);
    assert_eq!(counter(&s, "unlinked_child"), 0);
}

#[test]
fn secondary_ids_with_slices_and_local_acks_link_by_526() {
    let spec = Spec {
        id_map: IdMap::Secondary,
        clients: 2,
        parents: 600,
        slices: 2,
        reject_every: 9,
        local_ack_every: 7,
        seed: 2,
    };
    let (s, t) = run("526.pcap", &spec, &["--link", "526=11"]);
    assert_hops(&s, &t);
    assert_eq!(counter(&s, "linked_children"), t.children);
}

#[test]
fn hops_groups_link_by_sender_and_sequence_under_auto() {
    let spec = Spec {
        id_map: IdMap::Hops,
        clients: 4,
        parents: 600,
        slices: 1,
        reject_every: 8,
        local_ack_every: 0,
        seed: 3,
    };
    let (s, t) = run("hops.pcap", &spec, &[]);
    assert_hops(&s, &t);
}

#[test]
fn a_router_s_own_ids_are_never_guessed() {
    let spec = Spec {
        id_map: IdMap::Counter,
        clients: 2,
        parents: 300,
        slices: 1,
        reject_every: 10,
        local_ack_every: 0,
        seed: 4,
    };
    let (s, t) = run("counter.pcap", &spec, &[]);
    // Nothing names the parent: no hop, every order unlinked, the round trips still measured.
    assert_eq!(support::stage(&s, "hop_out")["count"], 0);
    assert_eq!(support::stage(&s, "hop_back")["count"], 0);
    assert_stage(&s, "venue_rtt", &t.venue_rtt);
    assert_stage(&s, "client_rtt", &t.client_rtt);
    assert_eq!(counter(&s, "unlinked_child"), t.children);
    assert_ledger(&s, &t);
}

#[test]
fn without_legs_no_hop_stage_or_counter_appears() {
    let spec = Spec {
        id_map: IdMap::Secondary,
        clients: 1,
        parents: 50,
        slices: 1,
        reject_every: 0,
        local_ack_every: 0,
        seed: 5,
    };
    let dir = tempfile::tempdir().unwrap();
    let (packets, _) = router_capture(&spec);
    let s = analyse_packets(dir.path(), "plain.pcap", &packets, &["-p", "9878,9879"]);
    let names: Vec<&str> = s["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["stage"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["first_response", "ack", "fill", "ack_to_fill"]);
    assert!(s["counters"].get("linked").is_none());
}

/// `--link discover` on a router's capture: its report.
fn discover(spec: &Spec) -> String {
    let dir = tempfile::tempdir().unwrap();
    let (packets, _) = router_capture(spec);
    let path = dir.path().join("discover.pcap");
    support::write_pcap(&path, &packets);
    let mut args = vec!["pcap".to_string(), path.display().to_string()];
    args.extend(legs());
    args.extend(["--link".into(), "discover".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = support::fixscope(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn discovery_names_the_true_rule_of_each_mapping_and_none_for_made_up_ids() {
    for (id_map, slices, want) in [
        (IdMap::Same, 1, "suggested: --link 11\n"),
        (IdMap::Secondary, 3, "suggested: --link 526=11\n"),
        (IdMap::Hops, 1, "suggested: --link hops\n"),
        (IdMap::Counter, 1, "fixscope will not guess"),
    ] {
        let spec = Spec {
            id_map,
            clients: 3,
            parents: 400,
            slices,
            reject_every: 10,
            local_ack_every: 0,
            seed: 6,
        };
        let report = discover(&spec);
        assert!(report.contains(want), "{id_map:?}: {report}");
        assert!(report.contains("400 parents"), "{report}");
        assert!(
            !report.contains("first_response"),
            "no latency report: {report}"
        );
    }
}

/// The hop stages reach the other outputs as stages: a Prometheus textfile's `stage` label,
/// and an HdrHistogram log that `fixscope report` reads back with the same counts.
#[test]
fn hop_stages_reach_prometheus_and_the_hdrhistogram_log() {
    let spec = Spec {
        id_map: IdMap::Secondary,
        clients: 2,
        parents: 300,
        slices: 2,
        reject_every: 10,
        local_ack_every: 0,
        seed: 7,
    };
    let dir = tempfile::tempdir().unwrap();
    let (packets, t) = router_capture(&spec);
    let (log, prom) = (dir.path().join("run.hlog"), dir.path().join("run.prom"));
    let (log_s, prom_s) = (log.display().to_string(), prom.display().to_string());
    let mut args = vec![
        "-p",
        "9879",
        "--hlog",
        &log_s,
        "--prometheus-textfile",
        &prom_s,
    ];
    let legs = legs();
    args.extend(legs.iter().map(String::as_str));
    let s = analyse_packets(dir.path(), "outputs.pcap", &packets, &args);
    assert_stage(&s, "hop_out", &t.hop_out);
    let text = std::fs::read_to_string(&prom).unwrap();
    for stage in ["hop_out", "venue_rtt", "hop_back", "client_rtt"] {
        assert!(
            text.contains(&format!("stage=\"{stage}\"")),
            "{stage} in the textfile"
        );
    }
    let out = support::fixscope(&["report", &log_s, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let r: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    for stage in ["hop_out", "venue_rtt", "hop_back", "client_rtt"] {
        assert_eq!(
            support::stage(&r, stage)["count"],
            support::stage(&s, stage)["count"],
            "{stage}"
        );
    }
}

/// `--leg md`: a host trading on market data — a feed session (35=W snapshots, 35=X
/// incremental refreshes naming several symbols) and the orders it sends with no parent.
/// Each child's `tick_to_order` is from the last update of its symbol within the window.
#[test]
fn tick_to_order_is_timed_from_the_last_update_of_the_child_s_symbol() {
    const MD_PORT: u16 = 9100;
    let t0 = 1_700_000_000_000_000_000u64;
    let mut rng = Rng(11);
    let symbols = ["AAPL", "MSFT", "IBM", "ORCL"];
    let mut events: Vec<(u64, bool, bool, Vec<u8>)> = Vec::new(); // (ts, md?, from_initiator, bytes)
    let mut last_tick = std::collections::HashMap::new();
    let mut truth = Vec::new();
    let mut missing = 0u64;
    let mut ts = t0 + 1_000_000;
    for i in 0..400u64 {
        ts += 5_000 + rng.below(20_000);
        let a = symbols[rng.below(4) as usize];
        if i % 3 == 0 {
            let b = symbols[rng.below(4) as usize];
            let m = fix_message(
                "FIX.4.4",
                &[
                    (35, "X"),
                    (49, "FEED"),
                    (56, "HOST"),
                    (268, "2"),
                    (279, "0"),
                    (55, a),
                    (270, "1.5"),
                    (279, "1"),
                    (55, b),
                    (270, "2.5"),
                ],
            );
            events.push((ts, true, false, m));
            last_tick.insert(a, ts);
            last_tick.insert(b, ts);
        } else {
            let m = fix_message(
                "FIX.4.4",
                &[
                    (35, "W"),
                    (49, "FEED"),
                    (56, "HOST"),
                    (55, a),
                    (268, "1"),
                    (269, "0"),
                    (270, "1.5"),
                ],
            );
            events.push((ts, true, false, m));
            last_tick.insert(a, ts);
        }
        if i % 2 == 1 {
            let sym = symbols[rng.below(4) as usize];
            let at = ts + 300 + rng.below(3_000);
            let id = format!("H{i:05}");
            events.push((
                at,
                false,
                true,
                fix_message(
                    "FIX.4.4",
                    &[
                        (35, "D"),
                        (49, "HOST"),
                        (56, "EXCH"),
                        (11, &id),
                        (55, sym),
                        (54, "1"),
                        (38, "10"),
                        (40, "2"),
                        (44, "1"),
                    ],
                ),
            ));
            // The only update between `ts` and `at` is none (the next comes after `at`).
            match last_tick.get(sym) {
                Some(&tick) => truth.push(at - tick),
                None => missing += 1,
            }
            ts = at;
        }
    }
    let mut md = SyntheticConnection::new(endpoint(false, 2, 45_000), endpoint(false, 7, MD_PORT));
    let mut orders =
        SyntheticConnection::new(endpoint(false, 2, 50_000), endpoint(false, 3, VENUE_PORT));
    let mut packets: Vec<TimedPacket> = md
        .handshake()
        .into_iter()
        .chain(orders.handshake())
        .map(|p| at(t0, p))
        .collect();
    for (ts, is_md, from_initiator, bytes) in events {
        let conn = if is_md { &mut md } else { &mut orders };
        let p = if from_initiator {
            conn.client_sends(&bytes)
        } else {
            conn.server_sends(&bytes)
        };
        packets.push(at(ts, p));
    }
    let dir = tempfile::tempdir().unwrap();
    let s = analyse_packets(
        dir.path(),
        "md.pcap",
        &packets,
        &[
            "-p",
            "9878",
            &format!("--leg=md={MD_PORT}"),
            &format!("--leg=down={VENUE_PORT}"),
        ],
    );
    assert!(
        missing < 20 && truth.len() > 150,
        "{missing} {}",
        truth.len()
    );
    assert_stage(&s, "tick_to_order", &truth);
    assert_eq!(counter(&s, "unlinked_child"), truth.len() as u64 + missing);
    assert_eq!(counter(&s, "tick_missing"), missing);
}

/// `--link auto` on a capture: a router that names the parent in a tag of its own is linked
/// by the rule discovery finds (tried after hops, 11 and 526=11), every order exact.
#[test]
fn auto_adopts_the_rule_discovery_finds() {
    let spec = Spec {
        id_map: IdMap::Custom,
        clients: 2,
        parents: 500,
        slices: 1,
        reject_every: 10,
        local_ack_every: 0,
        seed: 8,
    };
    let (s, t) = run("custom.pcap", &spec, &[]);
    assert_hops(&s, &t);
    assert_eq!(s["links"]["rules"]["9002=11"], t.linked);
    // Named, it links the same; with auto's three alone, nothing.
    let (named, _) = run("custom-named.pcap", &spec, &["--link", "9002=11"]);
    assert_eq!(named["stages"], s["stages"]);
    let (fixed, _) = run("custom-fixed.pcap", &spec, &["--link", "hops,11,526=11"]);
    assert_eq!(counter(&fixed, "linked"), 0);
}

/// `--html`: the hop section's figures are the JSON summary's `links` and counters.
#[test]
fn the_html_report_shows_where_the_time_went_as_the_json_does() {
    let spec = Spec {
        id_map: IdMap::Hops,
        clients: 2,
        parents: 400,
        slices: 1,
        reject_every: 10,
        local_ack_every: 0,
        seed: 9,
    };
    let dir = tempfile::tempdir().unwrap();
    let (packets, _) = router_capture(&spec);
    let page = dir.path().join("report.html");
    let page_s = page.display().to_string();
    let mut args = vec!["-p", "9879", "--html", &page_s];
    let legs = legs();
    args.extend(legs.iter().map(String::as_str));
    let s = analyse_packets(dir.path(), "html.pcap", &packets, &args);
    let html = std::fs::read_to_string(&page).unwrap();
    let mut compared = 0;
    let mut rest = html.as_str();
    while let Some(i) = rest.find("data-k=\"") {
        rest = &rest[i + 8..];
        let key = &rest[..rest.find('"').unwrap()];
        let open = rest.find('>').unwrap();
        let text = &rest[open + 1..open + 1 + rest[open + 1..].find('<').unwrap()];
        if !(key.starts_with("links.")
            || ["counters.parents", "counters.linked", "counters.local_ack"].contains(&key))
        {
            continue;
        }
        let want = key.split('.').fold(&s, |v, p| match p.parse::<usize>() {
            Ok(i) if v.is_array() => &v[i],
            _ => &v[p],
        });
        let field = key.rsplit('.').next().unwrap();
        if field == "key" {
            assert_eq!(want.as_str().unwrap(), text, "{key}");
        } else if field.ends_with("_ns") {
            let got: f64 = text.parse().unwrap();
            assert!(
                (got - want.as_f64().unwrap() / 1000.0).abs() <= 0.0005 + 1e-9,
                "{key}: {text} vs {want}"
            );
        } else {
            assert_eq!(want.as_u64().unwrap().to_string(), text, "{key}");
        }
        compared += usize::from(key.starts_with("links."));
    }
    let bands = s["links"]["where_time_went"].as_array().unwrap().len();
    assert_eq!(
        compared,
        bands * 5 + 10 * 5,
        "every figure of the section compared"
    );
    let linked = format!("data-k=\"counters.linked\">{}<", counter(&s, "linked"));
    assert!(
        html.contains(&linked) && counter(&s, "linked") > 0,
        "the ledger line"
    );
}

/// `--records` with `--leg`: the `links` table has one row per linked child, read back with
/// DuckDB — each link's hop_out, and each parent's client_rtt and hop_back, the generator's
/// own; fan-out and local acks as the truth has them.
#[test]
fn records_keep_one_row_per_link_with_its_hops() {
    let test = "records_keep_one_row_per_link_with_its_hops";
    let spec = Spec {
        id_map: IdMap::Secondary,
        clients: 2,
        parents: 400,
        slices: 2,
        reject_every: 9,
        local_ack_every: 7,
        seed: 12,
    };
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("rec");
    let rec_s = rec.display().to_string();
    let (s, t) = run(
        "links.pcap",
        &spec,
        &["--link", "526=11", "--records", &rec_s],
    );
    assert_hops(&s, &t);
    let py = support_hlog::python(test);
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/links_check.py");
    let out = std::process::Command::new(py)
        .arg(&script)
        .arg(&rec)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        rows.len() as u64,
        counter(&s, "linked_children"),
        "a row per linked child"
    );
    let mut hop_out: Vec<u64> = rows
        .iter()
        .map(|r| r["hop_out_ns"].as_u64().unwrap())
        .collect();
    hop_out.sort_unstable();
    let mut want = t.hop_out.clone();
    want.sort_unstable();
    assert_eq!(hop_out, want, "every link's hop_out");
    let mut parents: std::collections::HashMap<&str, Vec<&serde_json::Value>> = Default::default();
    for r in &rows {
        assert_eq!(r["rule"], "526=11");
        parents
            .entry(r["parent_clordid"].as_str().unwrap())
            .or_default()
            .push(r);
    }
    assert_eq!(parents.len() as u64, t.linked, "a linked parent's rows");
    let mut locals = 0;
    for (key, rs) in &parents {
        assert!(
            rs.iter()
                .all(|r| r["children"].as_u64() == Some(rs.len() as u64)),
            "{key}"
        );
        if rs[0]["local_ack"] == true {
            locals += 1;
            assert!(
                rs.iter().all(|r| r["hop_back_ns"].is_null()),
                "{key}: no hop_back"
            );
        }
        if let Some(c) = t.chains.get(*key) {
            // [client_rtt, hop_out, venue_rtt, hop_back] of the child the venue answered first.
            assert!(
                rs.iter().all(|r| r["client_rtt_ns"].as_u64() == Some(c[0])),
                "{key}"
            );
            assert!(
                rs.iter().all(|r| r["hop_back_ns"].as_u64() == Some(c[3])),
                "{key}"
            );
            assert!(
                rs.iter().any(|r| r["hop_out_ns"].as_u64() == Some(c[1])
                    && r["venue_rtt_ns"].as_u64() == Some(c[2])),
                "{key}: the first-answered child's hops"
            );
        }
    }
    assert_eq!(locals, t.local_ack, "local acks");
}
