//! `fixscope pcap --point cli=A.pcap --point gw=B.pcap --clock …`: one FIX session
//! captured at two points, each with its own clock. The generator (support_points) knows
//! every segment's true send and arrival time and point B's true clock offset, so each
//! figure is checked against that truth: residence and wire round trip exact, the offset
//! interval holding the true offset at every order, one-way delays within the reported
//! uncertainty (or withheld, with bounds holding the truth), steps found and named.
//!
//! `generator_*` check the generator itself (with the existing single-capture analysis).

mod support;
mod support_points;

use support::{assert_stage, counter};
use support_points::{Carries, Point, PointsSpec, TwoPoints, STEP_AFTER_NS, T0, TAI_UTC_NS};

const NS_PER_S: u64 = 1_000_000_000;

fn mean(v: &[u64]) -> f64 {
    v.iter().sum::<u64>() as f64 / v.len() as f64
}

// ---------------------------------------------------------------- the generator

/// The truth holds together: stamps follow the clocks, each direction's segments keep
/// their order at both points, nothing is in flight at a step, and every second has
/// one-way delays within 0.5 µs of the minimum (both directions).
#[test]
fn generator_truth_is_consistent() {
    for spec in [PointsSpec::drift_and_step(), PointsSpec::tai_step()] {
        let tp = TwoPoints::generate(&spec);
        assert_eq!(tp.orders.len(), spec.orders);
        for p in &tp.packets {
            let (a, b) = if p.c2s {
                (p.send_ns, p.arrive_ns)
            } else {
                (p.arrive_ns, p.send_ns)
            };
            assert_eq!(p.ts_cli, a);
            assert_eq!(p.ts_gw as i64, b as i64 + spec.theta(b));
            for &(after, _) in &spec.steps {
                let t1 = T0 + after;
                assert!(
                    !(p.send_ns < t1 && t1 <= p.arrive_ns),
                    "in flight at the step"
                );
            }
        }
        for c2s in [true, false] {
            let dir: Vec<_> = tp.packets.iter().filter(|p| p.c2s == c2s).collect();
            for w in dir.windows(2) {
                assert!(w[0].ts_cli < w[1].ts_cli && w[0].ts_gw < w[1].ts_gw);
            }
            let base = if c2s {
                spec.fwd_base_ns
            } else {
                spec.rev_base_ns
            };
            let seconds = spec.orders as u64 * spec.order_every_ns / NS_PER_S;
            for sec in 0..seconds {
                let start = T0 + sec * NS_PER_S;
                let min = dir
                    .iter()
                    .filter(|p| p.send_ns >= start && p.send_ns < start + NS_PER_S)
                    .map(|p| p.owd())
                    .min()
                    .unwrap();
                assert!(min >= base && min - base < 500, "second {sec}: min {min}");
            }
        }
        for o in &tp.orders {
            assert!((20_000..=310_000).contains(&o.residence_ns));
            // The stamps' wire round trip is the true one, but for B's drift over the
            // residence (and a step never falls inside an order).
            let true_rtt = o.one_way_fwd_ns + o.one_way_rev_ns;
            assert!(o.wire_rtt_ns.abs_diff(true_rtt) <= 10, "{o:?}");
            let k: usize = o.clordid[3..].parse().unwrap();
            assert_eq!(tp.packets[o.request_packet].carries, Carries::Request(k));
            assert_eq!(tp.packets[o.response_packet].carries, Carries::Response(k));
        }
        let mean_fwd = mean(&tp.one_way_fwds());
        let mean_rev = mean(&tp.one_way_revs());
        assert!((33_000.0..43_000.0).contains(&mean_fwd), "{mean_fwd}");
        assert!((48_000.0..58_000.0).contains(&mean_rev), "{mean_rev}");
    }
    // The jittery link: few samples, none near the base.
    let spec = PointsSpec::jittery();
    let tp = TwoPoints::generate(&spec);
    let min_f = tp.one_way_fwds().into_iter().min().unwrap();
    let min_r = tp.one_way_revs().into_iter().min().unwrap();
    assert!(min_f + min_r > spec.fwd_base_ns + spec.rev_base_ns);
}

/// Each capture alone, with the existing analysis: `gw.pcap` measures each order's
/// residence exactly, `cli.pcap` its residence plus its wire round trip; the cli capture
/// missing 50 orders measures the others.
#[test]
fn generator_each_capture_alone_measures_its_truth() {
    for spec in [PointsSpec::drift_and_step(), PointsSpec::tai_step()] {
        let dir = tempfile::tempdir().unwrap();
        let tp = TwoPoints::generate(&spec);
        let (cli, gw) = tp.write(dir.path());
        let (_, s) = support::analyse(&[&gw], &[]);
        assert_stage(&s, "first_response", &tp.residences());
        assert_eq!(counter(&s, "requests"), spec.orders as u64);
        let (_, s) = support::analyse(&[&cli], &[]);
        let round_trips: Vec<u64> = tp
            .orders
            .iter()
            .map(|o| o.residence_ns + o.wire_rtt_ns)
            .collect();
        assert_eq!(round_trips, tp.cli_round_trips());
        assert_stage(&s, "first_response", &round_trips);
        assert_eq!(counter(&s, "requests"), spec.orders as u64);
    }
    let (spec, dropped) = with_holes();
    let tp = TwoPoints::generate(&spec);
    let dir = tempfile::tempdir().unwrap();
    let (cli, gw) = tp.write_without(dir.path(), &dropped);
    let (_, s) = support::analyse(&[&cli], &[]);
    let kept: Vec<u64> = tp
        .orders
        .iter()
        .enumerate()
        .filter(|(k, _)| !dropped.contains(k))
        .map(|(_, o)| o.resp_cli_ns - o.req_cli_ns)
        .collect();
    assert_stage(&s, "first_response", &kept);
    assert_eq!(counter(&s, "requests"), spec.orders as u64 - 50);
    assert_eq!(
        counter(&s, "unmatched_responses"),
        50,
        "the fills of the holes"
    );
    assert_eq!(counter(&s, "answered_after_capture_hole"), 0);
    let (_, s) = support::analyse(&[&gw], &[]);
    assert_stage(&s, "first_response", &tp.residences());
    let fills: Vec<u64> = tp
        .orders
        .iter()
        .map(|o| tp.packets[o.fill_packet.unwrap()].ts_gw - o.req_gw_ns)
        .collect();
    assert_stage(&s, "fill", &fills);
}

/// Each point's capture holds every packet, in the order of that point's own stamps (a
/// pcap's packets in its time order); B's jumps 37 s at a 37 s step, A's does not.
#[test]
fn generator_writes_each_capture_in_its_own_time_order() {
    let spec = PointsSpec::tai_step();
    let tp = TwoPoints::generate(&spec);
    for point in [Point::Cli, Point::Gw] {
        let cap = tp.capture(point, |_| true);
        assert_eq!(cap.len(), tp.packets.len());
        assert!(cap.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns));
    }
    // B's capture jumps 37 s forward at the step; A's does not.
    let gw = tp.capture(Point::Gw, |_| true);
    let biggest = gw
        .windows(2)
        .map(|w| w[1].ts_ns - w[0].ts_ns)
        .max()
        .unwrap();
    assert!(biggest > TAI_UTC_NS as u64);
    let cli = tp.capture(Point::Cli, |_| true);
    let biggest = cli
        .windows(2)
        .map(|w| w[1].ts_ns - w[0].ts_ns)
        .max()
        .unwrap();
    assert!(biggest < NS_PER_S);
    assert!(STEP_AFTER_NS < spec.orders as u64 * spec.order_every_ns);
}

/// 2,000 orders, each filled 1–2 ms after its ack, and 50 of them spread over the
/// capture, to drop from the cli capture (their request and ack, not their fill). The
/// fill after each hole is a response after it: at cli the next order is measured as
/// usual (not `answered_after_capture_hole`: nothing it sent before it was answered in
/// the hole).
fn with_holes() -> (PointsSpec, Vec<usize>) {
    let spec = PointsSpec {
        fill_after_ns: Some((1_000_000, 2_000_000)),
        ..PointsSpec::drift_and_step().with_orders(2_000)
    };
    let n = spec.orders;
    (spec, (0..50).map(|k| 7 + k * (n - 10) / 50).collect())
}
