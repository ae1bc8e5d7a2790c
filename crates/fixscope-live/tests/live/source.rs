//! The live capture through the core's `Source` seam, on `lo`: segments in order with
//! `Flow::Stop` honoured, the clock and its UNIX offset, counters by their contract names,
//! and `close` detaching.

use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use fixscope_core::ports::PortSet;
use fixscope_core::segment::Direction;
use fixscope_core::source::{counters_of, Flow, Polled, Source};
use fixscope_live::{
    fixscope_links_on, fixscope_tc_filters_on, ifindex_of, LiveConfig, LiveCounters, LiveSource,
};
use fixscope_testkit::{require_root, serial};

use crate::common::*;

/// CLOCK_MONOTONIC, the clock of `bpf_ktime_get_ns()`.
fn monotonic_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

fn ours_on_lo(kind: &str) -> usize {
    match kind {
        "tcx" => fixscope_links_on(ifindex_of("lo").expect("lo"))
            .expect("links")
            .len(),
        _ => fixscope_tc_filters_on("lo").expect("filters").len(),
    }
}

#[test]
fn live_source_delivers_segments_clock_counters_and_closes() {
    let _g = serial();
    require_root("live_source_delivers_segments_clock_counters_and_closes");
    let bind: SocketAddr = "127.0.0.1:0".parse().expect("addr");
    let (addr, server) = spawn_server(None, bind);
    let retrans_before = retransmitted_segments(None);
    let mut cfg = LiveConfig::new("lo", PortSet::single(addr.port()));
    cfg.ring_bytes = 32 << 20;
    let mut source = LiveSource::open(&cfg).expect("open");
    let kind = source.capture().attach_kind();
    assert_eq!(ours_on_lo(kind), 2);
    let t0 = source.now_ns().expect("a live source has a clock");

    let client = spawn_client(None, addr, default_plan());
    let clog = client.join().expect("client thread").expect("client");
    let slog = server.join().expect("server thread").expect("server");

    // Everything is in the ring now: a callback that stops after one segment gets one.
    let mut caps = Vec::new();
    let polled = source
        .poll(Duration::from_secs(2), &mut |s| {
            caps.push(Cap::of(s));
            Flow::Stop
        })
        .expect("poll");
    assert_eq!(polled, Polled::Segments(1));
    assert_eq!(caps.len(), 1);
    // The rest follows, without a loss or a repeat (verify_exchange checks every byte).
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline
        && (payload_bytes(&caps, Direction::Request) < clog.sent.len()
            || payload_bytes(&caps, Direction::Response) < slog.sent.len()
            || caps.iter().filter(|c| c.flags.fin()).count() < 2)
    {
        source
            .poll(Duration::from_millis(50), &mut |s| {
                caps.push(Cap::of(s));
                Flow::Continue
            })
            .expect("poll");
    }
    verify_exchange_allowing(
        &caps,
        addr,
        &clog,
        &slog,
        retransmissions_since(retrans_before),
    );

    // The clock is the one of the kernel's timestamps, and the offset makes it UNIX time.
    // `now_ns` is how far records have been handed on: never ahead of CLOCK_MONOTONIC, and
    // behind it by the merge's grace (which a loaded host widens to 100+ ms) and the time
    // since the last poll — so the mapping is checked on CLOCK_MONOTONIC itself.
    let t1 = source.now_ns().expect("clock");
    let mono_now = monotonic_ns();
    assert!(
        caps.iter().all(|c| (t0..=t1).contains(&c.ts)),
        "segment times within [{t0}, {t1}]"
    );
    assert!(
        t1 <= mono_now,
        "handed on up to {t1}, ahead of CLOCK_MONOTONIC {mono_now}"
    );
    // UNIX time read before and after the monotonic one brackets it, however long this
    // thread stopped between the reads: the mapping must land inside, give or take the
    // offset's own error (50 ms). A wall-clock step since the open still fails it (the 7.3
    // guest under TCG, 70 ms: docs/kernels.md, round 2).
    let unix = || {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("after 1970")
            .as_nanos() as i128
    };
    let unix_before = unix();
    let mono = monotonic_ns();
    let unix_after = unix();
    let mapped = i128::from(mono) + i128::from(source.unix_offset_ns());
    assert!(
        unix_before - 50_000_000 < mapped && mapped < unix_after + 50_000_000,
        "monotonic + offset = {mapped}, UNIX time read around it {unix_before}..{unix_after}"
    );

    std::thread::sleep(Duration::from_millis(250)); // past the counters' cache period
    let summary = source.counters();
    // The names of the one definition (its unit test holds the contract list).
    let names: Vec<&str> = summary.iter().map(|(n, _)| n.as_str()).collect();
    let defined = counters_of(&LiveCounters::default());
    let defined: Vec<&str> = defined.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, defined);
    let value = |all: &[(String, u64)], name: &str| {
        all.iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("no counter {name}"))
    };
    assert!(value(&summary, "kernel_records") >= caps.len() as u64);
    assert_eq!(value(&summary, "malformed_records"), 0);
    let interval = source.interval_counters();
    let names: Vec<&str> = interval.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["kernel_records", "kernel_ring_drops", "kernel_cut_bytes"]
    );
    assert_eq!(
        value(&interval, "kernel_records"),
        value(&summary, "kernel_records")
    );
    assert_eq!(value(&interval, "kernel_ring_drops"), 0);

    source.close().expect("close detaches");
    assert_eq!(ours_on_lo(kind), 0, "nothing of ours on lo after close");
    source.close().expect("a second close does nothing");
    let k = source.kernel_counters();
    assert!(k.records >= caps.len() as u64, "final counters: {k:?}");
}

/// The counter `name` of `all`.
fn counter(all: &[(String, u64)], name: &str) -> u64 {
    all.iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| *v)
        .unwrap_or_else(|| panic!("no counter {name}"))
}

/// One exchange on lo with a source attached and nothing read meanwhile: all of it waits
/// in the rings. Returns the source, the server address and the client's and server's logs.
/// What a byte-exact check must accept: the retransmissions lo's kernel (this namespace's)
/// counted since `before` (under QEMU's TCG an ACK can be later than a loss probe's timer).
fn retransmissions_since(before: u64) -> Allow {
    Allow {
        retransmitted: retransmitted_segments(None) - before,
        late: 0,
    }
}

/// An exchange on lo under a fresh source, not yet read; with lo's retransmissions count
/// from before it.
fn exchange_unread() -> (LiveSource, SocketAddr, Log, Log, u64) {
    let retrans_before = retransmitted_segments(None);
    let bind: SocketAddr = "127.0.0.1:0".parse().expect("addr");
    let (addr, server) = spawn_server(None, bind);
    let mut cfg = LiveConfig::new("lo", PortSet::single(addr.port()));
    cfg.ring_bytes = 32 << 20;
    let source = LiveSource::open(&cfg).expect("open");
    let client = spawn_client(None, addr, default_plan());
    let clog = client.join().expect("client thread").expect("client");
    let slog = server.join().expect("server thread").expect("server");
    (source, addr, clog, slog, retrans_before)
}

#[test]
fn a_stop_detaches_and_leaves_the_backlog_readable_and_what_stays_unread_is_counted() {
    let _g = serial();
    require_root(
        "a_stop_detaches_and_leaves_the_backlog_readable_and_what_stays_unread_is_counted",
    );

    // Stopped, then drained: every byte captured before the stop is still there.
    let (mut source, addr, clog, slog, retrans_before) = exchange_unread();
    let kind = source.capture().attach_kind();
    assert!(
        source.stop_capture().expect("stop"),
        "a live source has a backlog to drain"
    );
    assert_eq!(ours_on_lo(kind), 0, "stopping detached the programs");
    let mut caps = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let polled = source
            .poll(Duration::from_millis(50), &mut |s| {
                caps.push(Cap::of(s));
                Flow::Continue
            })
            .expect("poll after the stop");
        if polled == Polled::Segments(0) || Instant::now() >= deadline {
            break;
        }
    }
    verify_exchange_allowing(
        &caps,
        addr,
        &clog,
        &slog,
        retransmissions_since(retrans_before),
    );
    source.close().expect("close");
    let summary = source.counters();
    assert_eq!(counter(&summary, "unread_records_at_exit"), 0);

    // Closed without reading: every record is counted as unread, none silently lost.
    let (mut source, _, _, _, _) = exchange_unread();
    source.close().expect("close");
    let summary = source.counters();
    let records = counter(&summary, "kernel_records");
    assert!(records > 0, "the exchange was captured");
    assert_eq!(counter(&summary, "unread_records_at_exit"), records);
    assert_eq!(source.unread_records_at_exit(), records);
}
