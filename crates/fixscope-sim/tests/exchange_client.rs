//! Exchange + client in-process on 127.0.0.1: end-to-end behaviour and ground truth.

mod common;

use std::collections::{HashMap, HashSet};

use common::*;
use fixscope_sim::truth::{read_client_truth, read_truth};
use fixscope_testkit::serial;

#[test]
fn every_order_acked_and_filled_with_truth() {
    // Load and delay figures on a 2-core machine: one test at a time.
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let truth = dir.path().join("truth.csv");
    let ctruth = dir.path().join("client.csv");
    let t = truth.to_str().unwrap();
    // A small fill delay puts ack and fill in separate writes (distinct timestamps).
    let ex = Exchange::start(&["--truth", t, "--fill-delay", "10us"]);
    let r = client(
        ex.addr,
        &[
            "--count",
            "2000",
            "--window",
            "32",
            "--truth",
            ctruth.to_str().unwrap(),
            "--pad",
            "120",
        ],
    );
    let s = ex.stop();
    assert_eq!(r.sent, 2000);
    assert_eq!(
        (r.acks, r.fills, r.filled_orders),
        (2000, 2000, 2000),
        "{r}"
    );
    assert_eq!((r.incomplete, r.unmatched, r.rejects), (0, 0, 0), "{r}");
    assert_eq!((s.orders, s.acks, s.fills), (2000, 2000, 2000), "{s}");
    assert_eq!(s.logouts, 1, "clean Logout exchange: {s}");
    assert_eq!(s.truth_records, 2000);

    let recs = read_truth(&truth).unwrap();
    assert_eq!(recs.len(), 2000);
    let ids: HashSet<_> = recs.iter().map(|r| r.clordid.clone()).collect();
    assert_eq!(ids.len(), 2000);
    for rec in &recs {
        assert_eq!(rec.msg_type, "D");
        assert_eq!(rec.clordid.len(), 20, "default ClOrdID length");
        let ack = rec.ack_ns.expect("ack");
        let fill = rec.fill_ns.expect("fill");
        assert!(rec.request_ns < ack && ack + 10_000 <= fill, "{rec:?}");
    }
    // The exchange's session is the client's local address, as the client logs it.
    let crecs = read_client_truth(&ctruth).unwrap();
    assert_eq!(crecs.len(), 2000);
    let by_id: HashMap<_, _> = recs.iter().map(|r| (r.clordid.clone(), r)).collect();
    for c in &crecs {
        let e = by_id[&c.clordid];
        assert_eq!(c.session, e.session);
        let (send, first) = (c.send_ns.unwrap(), c.first_ns.unwrap());
        // Same clock on both sides: client write < exchange read < exchange write < client read.
        assert!(
            send <= e.request_ns && e.ack_ns.unwrap() <= first,
            "{c:?} {e:?}"
        );
    }
}

#[test]
fn fixed_ack_delay_is_applied_precisely() {
    // Load and delay figures on a 2-core machine: one test at a time.
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let truth = dir.path().join("truth.csv");
    let ex = Exchange::start(&[
        "--truth",
        truth.to_str().unwrap(),
        "--ack-delay",
        "fixed:200us",
        "--fill-delay",
        "fixed:300us",
    ]);
    let r = client(ex.addr, &["--count", "400", "--rate", "2000"]);
    ex.stop();
    assert_eq!(r.filled_orders, 400, "{r}");
    let recs = read_truth(&truth).unwrap();
    assert_eq!(recs.len(), 400);
    let mut ack: Vec<u64> = recs
        .iter()
        .map(|r| r.ack_ns.unwrap() - r.request_ns)
        .collect();
    let mut fill: Vec<u64> = recs
        .iter()
        .map(|r| r.fill_ns.unwrap() - r.ack_ns.unwrap())
        .collect();
    assert!(ack.iter().all(|&d| d >= 200_000), "ack before its delay");
    assert!(fill.iter().all(|&d| d >= 300_000), "fill before its delay");
    // Never early (above, exact); late by the timer's wake-up only. A millisecond-grained
    // wait (epoll's timeout alone) would be late by 0.5-1 ms at the median; this noisy
    // 2-vCPU VM wakes 60-110 µs late at the median now and then — on the build before
    // #30 as often (3 of 4 runs past the former 60 µs bound, stop 38) — so 250 µs.
    const WAKE_UP_NS: u64 = 250_000;
    let p50 = percentile(&mut ack, 0.5);
    assert!(p50 < 200_000 + WAKE_UP_NS, "ack p50 {p50}ns");
    let p50 = percentile(&mut fill, 0.5);
    assert!(p50 < 300_000 + WAKE_UP_NS, "fill p50 {p50}ns");
    // Client-side latency includes the delays.
    assert!(r.stage("ack", "from write").unwrap().p50_ns >= 200_000);
    assert!(r.stage("fill", "from write").unwrap().p50_ns >= 500_000);
}

#[test]
fn open_loop_rate_is_achieved() {
    // Load and delay figures on a 2-core machine: one test at a time.
    let _serial = serial();
    let ex = Exchange::start(&[]);
    let r = client(
        ex.addr,
        &["--rate", "5000", "--count", "3000", "--sessions", "2"],
    );
    ex.stop();
    assert_eq!(r.filled_orders, 3000, "{r}");
    let err = (r.achieved_rate - 5000.0).abs() / 5000.0;
    assert!(err < 0.05, "achieved {} /s", r.achieved_rate);
    // Latency from the schedule is never below latency from the actual write.
    let sched = r.stage("first", "from schedule").unwrap();
    let write = r.stage("first", "from write").unwrap();
    assert!(sched.p50_ns >= write.p50_ns && sched.max_ns >= write.max_ns);
    assert_eq!(sched.count, 3000);
}

#[test]
fn slow_exchange_cannot_hide_latency_in_open_loop() {
    // Load and delay figures on a 2-core machine: one test at a time.
    let _serial = serial();
    // Every ack takes 2ms; measured from the schedule the client must see all of it
    // (and any lateness of its own writes), never less.
    let ex = Exchange::start(&["--ack-delay", "fixed:2ms", "--no-fill"]);
    let r = client(ex.addr, &["--rate", "2000", "--count", "200", "--no-fill"]);
    ex.stop();
    assert_eq!(r.acks, 200, "{r}");
    let ack = r.stage("ack", "from schedule").unwrap();
    assert!(ack.p50_ns >= 2_000_000, "{r}");
    assert_eq!(r.stage("fill", "from write").unwrap().count, 0);
}

/// `--stall 20%:2s`: every 5th request of the session waits 2 s before its ack, all 2,000
/// of them at once in the timer queue, while the other 8,000 are answered on time.
#[test]
fn stalled_orders_are_held_while_the_rest_are_answered_on_time() {
    // Serial like the others: its 10,000 orders at 10k/s beside `fixed_ack_delay_...` on 2
    // vCPUs delayed that test's fills past its precision bound (CI, stop 38).
    let _serial = serial();
    const HOLD_NS: u64 = 2_000_000_000;
    let dir = tempfile::tempdir().unwrap();
    let truth = dir.path().join("truth.csv");
    let ex = Exchange::start(&["--truth", truth.to_str().unwrap(), "--stall", "20%:2s"]);
    let r = client(ex.addr, &["--rate", "10000", "--count", "10000"]);
    let s = ex.stop();
    assert_eq!(r.filled_orders, 10_000, "{r}");
    assert_eq!(s.held, 2_000, "{s}");
    // The client sees the holds too.
    assert!(
        r.stage("ack", "from write").unwrap().max_ns >= HOLD_NS,
        "{r}"
    );

    let recs = read_truth(&truth).unwrap();
    assert_eq!(recs.len(), 10_000);
    let (mut held, mut rest) = (Vec::new(), Vec::new());
    for rec in &recs {
        // Request k of the session is S1-<k zero-padded>; 20% holds k = 5, 10, 15, ...
        let k: u64 = rec.clordid.trim_start_matches("S1-").parse().unwrap();
        let latency = rec.ack_ns.expect("ack") - rec.request_ns;
        if k.is_multiple_of(5) {
            assert!(latency >= HOLD_NS, "request {k} held only {latency}ns");
            held.push(rec);
        } else {
            rest.push(latency);
        }
    }
    assert_eq!((held.len(), rest.len()), (2_000, 8_000));
    // All 2,000 were pending together: the first was answered after the last arrived.
    let first_answer = held.iter().map(|h| h.ack_ns.unwrap()).min().unwrap();
    let last_arrival = held.iter().map(|h| h.request_ns).max().unwrap();
    assert!(first_answer > last_arrival, "the holds did not overlap");
    // The others did not wait behind them.
    let p99 = percentile(&mut rest, 0.99);
    let max = *rest.last().unwrap();
    assert!(p99 < 10_000_000, "p99 of the requests not held: {p99}ns");
    assert!(max < HOLD_NS / 2, "a request not held waited {max}ns");
}

#[test]
fn split_clordid_writes_are_still_framed() {
    // Load and delay figures on a 2-core machine: one test at a time.
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let truth = dir.path().join("truth.csv");
    let ex = Exchange::start(&["--truth", truth.to_str().unwrap()]);
    let r = client(
        ex.addr,
        &[
            "--count",
            "300",
            "--rate",
            "3000",
            "--split-clordid",
            "--clordid-len",
            "64",
        ],
    );
    let s = ex.stop();
    assert_eq!(r.filled_orders, 300, "{r}");
    assert_eq!((s.bad_checksum, s.skipped_bytes), (0, 0), "{s}");
    let recs = read_truth(&truth).unwrap();
    assert_eq!(recs.len(), 300);
    assert!(recs.iter().all(|r| r.clordid.len() == 64));
}

#[test]
fn colliding_clordids_on_two_sessions() {
    // Load and delay figures on a 2-core machine: one test at a time.
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let truth = dir.path().join("truth.csv");
    let ex = Exchange::start(&["--truth", truth.to_str().unwrap()]);
    let r = client(
        ex.addr,
        &[
            "--count",
            "400",
            "--rate",
            "4000",
            "--sessions",
            "2",
            "--clordid-prefix",
            "SAME",
        ],
    );
    ex.stop();
    assert_eq!(r.filled_orders, 400, "{r}");
    assert_eq!(r.unmatched, 0);
    let recs = read_truth(&truth).unwrap();
    assert_eq!(recs.len(), 400);
    let sessions: HashSet<_> = recs.iter().map(|r| r.session.clone()).collect();
    assert_eq!(sessions.len(), 2);
    let mut per_id: HashMap<&str, HashSet<&str>> = HashMap::new();
    for rec in &recs {
        assert!(rec.clordid.starts_with("SAME"));
        per_id.entry(&rec.clordid).or_default().insert(&rec.session);
    }
    // Every ClOrdID was used on both connections.
    assert_eq!(per_id.len(), 200);
    assert!(per_id.values().all(|s| s.len() == 2));
}

#[test]
fn all_begin_strings_with_partial_fills() {
    // Load and delay figures on a 2-core machine: one test at a time.
    let _serial = serial();
    for begin in ["FIX.4.2", "FIX.4.4", "FIXT.1.1"] {
        let ex = Exchange::start(&["--partial-fills", "2"]);
        let r = client(
            ex.addr,
            &["--count", "150", "--window", "4", "--begin-string", begin],
        );
        let s = ex.stop();
        assert_eq!(r.filled_orders, 150, "{begin}: {r}");
        assert_eq!(r.fills, 150, "first fills");
        assert_eq!(
            s.fills, 450,
            "{begin}: two partials and a final fill each: {s}"
        );
        assert_eq!(s.protocol_errors, 0);
    }
}

#[test]
fn cancel_and_replace_mix() {
    // Load and delay figures on a 2-core machine: one test at a time.
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let truth = dir.path().join("truth.csv");
    // Orders rest 20ms before filling, so F/G find live orders.
    let ex = Exchange::start(&[
        "--truth",
        truth.to_str().unwrap(),
        "--fill-delay",
        "fixed:20ms",
    ]);
    let r = client(
        ex.addr,
        &[
            "--count",
            "600",
            "--rate",
            "4000",
            "--mix",
            "D=60,F=20,G=20",
        ],
    );
    let s = ex.stop();
    assert_eq!(r.incomplete, 0, "{r}");
    assert!(r.sent_f > 0 && r.sent_g > 0, "{r}");
    assert_eq!(r.sent_f, s.cancels);
    assert_eq!(r.sent_g, s.replaces);
    assert!(s.cancelled > 0 && s.replaced > 0, "{s}");
    assert_eq!(
        s.cancelled + s.replaced + s.cancel_rejects,
        s.cancels + s.replaces
    );
    let recs = read_truth(&truth).unwrap();
    assert_eq!(recs.len() as u64, r.sent);
    for rec in &recs {
        assert!(rec.ack_ns.is_some(), "every request answered: {rec:?}");
        if rec.msg_type == "F" {
            assert!(rec.fill_ns.is_none());
        }
    }
}

#[test]
fn exchange_stops_by_duration_and_on_shutdown() {
    // Load and delay figures on a 2-core machine: one test at a time.
    let _serial = serial();
    let args =
        fixscope_sim::ExchangeArgs::from_flags(["--listen", "127.0.0.1:0", "--duration", "0.2"])
            .unwrap();
    let t = std::time::Instant::now();
    let s = fixscope_sim::run_exchange(&args, &fixscope_sim::Shutdown::new(), |_| {}).unwrap();
    assert!(t.elapsed().as_secs_f64() < 2.0);
    assert!(s.elapsed_s >= 0.2);

    // Shutdown with a connected client: the exchange sends Logout and the client ends.
    let ex = Exchange::start(&[]);
    let addr = ex.addr;
    let h = std::thread::spawn(move || client(addr, &["--rate", "1000", "--duration", "20"]));
    std::thread::sleep(std::time::Duration::from_millis(300));
    let s = ex.stop();
    let r = h.join().unwrap();
    assert_eq!(s.logons, 1);
    assert!(r.sent > 100 && r.sent < 5000, "{r}");
}

#[test]
fn ipv6_loopback() {
    // Load and delay figures on a 2-core machine: one test at a time.
    let _serial = serial();
    // One rule for what a test needs: no IPv6 on the host fails loudly, never a silent pass.
    if let Err(e) = std::net::TcpListener::bind("[::1]:0") {
        panic!(
            "\n\n!!!!!!!! ipv6_loopback CANNOT RUN HERE: no IPv6 loopback ([::1]: {e}) !!!!!!!!\n"
        );
    }
    let args = fixscope_sim::ExchangeArgs::from_flags(["--listen", "[::1]:0"]).unwrap();
    let sd = fixscope_sim::Shutdown::new();
    let (tx, rx) = std::sync::mpsc::channel();
    let sd2 = sd.clone();
    let h = std::thread::spawn(move || {
        fixscope_sim::run_exchange(&args, &sd2, |a| {
            let _ = tx.send(a);
        })
    });
    let addr = rx.recv().unwrap();
    let r = client(addr, &["--count", "50", "--window", "2"]);
    sd.trigger();
    h.join().unwrap().unwrap();
    assert_eq!(r.filled_orders, 50);
}
