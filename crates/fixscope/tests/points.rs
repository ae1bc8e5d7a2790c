//! `fixscope pcap --point cli=A.pcap --point gw=B.pcap --clock …`: one FIX session
//! captured at two points, each with its own clock. The generator (support_points) knows
//! every segment's true send and arrival time and point B's true clock offset, so each
//! figure is checked against that truth: residence and wire round trip exact, the offset
//! interval holding the true offset at every order, one-way delays within the reported
//! uncertainty (or withheld, with bounds holding the truth), steps found and named.
//!
//! `generator_*` check the generator itself (with the existing single-capture analysis)
//! and `assertions_accept_a_reference_estimate` the assertions (against an honest estimate
//! built here from the stamps): they pass without `--point`. The others need the feature.

mod support;
mod support_points;

use std::path::Path;
use std::process::Output;

use serde_json::Value;
use support::{assert_stage, counter, exact_percentile, fixscope, stage};
use support_points::{Carries, Point, PointsSpec, TwoPoints, STEP_AFTER_NS, T0, TAI_UTC_NS};

const PORT: &str = "9878";
const NS_PER_S: u64 = 1_000_000_000;

// ---------------------------------------------------------------- running fixscope

/// `fixscope pcap --point cli=… --point gw=… -p 9878 EXTRA…`.
fn run_points(cli: &Path, gw: &Path, extra: &[&str]) -> Output {
    let (c, g) = (
        format!("cli={}", cli.display()),
        format!("gw={}", gw.display()),
    );
    let mut args = vec!["pcap", "--point", &c, "--point", &g, "-p", PORT];
    args.extend(extra);
    fixscope(&args)
}

fn stdout_json_summary(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "fixscope failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    let last = text.lines().last().expect("a summary line");
    let summary: Value = serde_json::from_str(last).expect("the summary is JSON");
    assert_eq!(summary["type"], "summary");
    summary
}

/// The `--json` summary of a two-point run.
fn points_json(cli: &Path, gw: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["--json"];
    args.extend(extra);
    stdout_json_summary(&run_points(cli, gw, &args))
}

/// A run that must fail and name a causality violation on stderr.
fn assert_refused_for_causality(out: &Output, what: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "{what}: must exit non-zero; stdout:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        stderr.to_lowercase().contains("causality"),
        "{what}: stderr names the causality violation: {stderr}"
    );
}

// ---------------------------------------------------------------- truth helpers

fn mean(v: &[u64]) -> f64 {
    v.iter().sum::<u64>() as f64 / v.len() as f64
}

fn sorted(v: &[u64]) -> Vec<u64> {
    let mut s = v.to_vec();
    s.sort_unstable();
    s
}

/// The quantile of a `p*_ns` field name (`p99_9_ns` → 0.999).
fn quantile_of(field: &str) -> Option<f64> {
    Some(match field {
        "p50_ns" => 0.5,
        "p90_ns" => 0.9,
        "p99_ns" => 0.99,
        "p99_9_ns" => 0.999,
        "p99_99_ns" => 0.9999,
        "p99_999_ns" => 0.99999,
        _ => return None,
    })
}

const PERCENTILES: [&str; 6] = [
    "p50_ns",
    "p90_ns",
    "p99_ns",
    "p99_9_ns",
    "p99_99_ns",
    "p99_999_ns",
];

/// The truth figure a stage field stands for: a percentile, min, max or mean.
fn truth_figure(sorted: &[u64], field: &str) -> f64 {
    match field {
        "min_ns" => sorted[0] as f64,
        "max_ns" => *sorted.last().unwrap() as f64,
        "mean_ns" => mean(sorted),
        f => exact_percentile(sorted, quantile_of(f).expect("a figure field")) as f64,
    }
}

fn i(v: &Value, what: &str) -> i64 {
    v.as_i64()
        .unwrap_or_else(|| panic!("{what} is an integer: {v}"))
}

// ---------------------------------------------------------------- assertions

/// The point stages name their points.
fn assert_point_stage_names(s: &Value) {
    for (name, points) in [
        ("residence", vec!["gw"]),
        ("wire_rtt", vec!["cli", "gw"]),
        ("one_way_fwd", vec!["cli", "gw"]),
        ("one_way_rev", vec!["gw", "cli"]),
    ] {
        let want: Vec<Value> = points.into_iter().map(Value::from).collect();
        assert_eq!(stage(s, name)["points"], Value::from(want), "{name} points");
    }
}

/// Residence and wire round trip exact; the near point's own stages as `gw.pcap` alone.
fn assert_exact_point_stages(s: &Value, tp: &TwoPoints) {
    assert_stage(s, "residence", &tp.residences());
    assert_stage(s, "wire_rtt", &tp.wire_rtts());
    assert_stage(s, "first_response", &tp.residences());
    assert_stage(s, "ack", &tp.residences());
    assert_point_stage_names(s);
}

/// Every order joined, nothing else.
fn assert_clean_ledger(s: &Value, n: usize) {
    let c = |name| counter(s, name);
    assert_eq!(c("points_orders_joined"), n as u64, "points_orders_joined");
    for zero in [
        "points_orders_near_only",
        "points_orders_far_only",
        "points_orders_ambiguous",
        "points_time_reversed",
        "points_segments_unmatched",
        "points_segments_repeated",
        "points_one_way_unbounded",
    ] {
        assert_eq!(c(zero), 0, "{zero}");
    }
    assert!(
        c("points_segments_matched") >= 2 * n as u64,
        "every request and response segment matched"
    );
    assert_eq!(counter(s, "requests"), n as u64);
    assert_eq!(counter(s, "matched"), n as u64);
}

/// The `clock` object's header.
fn assert_clock_header<'a>(s: &'a Value, mode: &str, n: usize) -> &'a Value {
    let clock = &s["clock"];
    assert!(clock.is_object(), "summary has a clock object: {s}");
    assert_eq!(clock["mode"], mode);
    assert_eq!(clock["of"], "gw");
    assert_eq!(clock["relative_to"], "cli");
    assert_eq!(clock["near_acceptor"], "gw");
    for field in ["samples_forward", "samples_reverse"] {
        assert!(
            clock[field].as_u64().unwrap() >= n as u64,
            "clock.{field}: at least one per order: {}",
            clock[field]
        );
    }
    assert!(clock["max_uncertainty_ns"].as_u64().is_some());
    assert!(clock["tai_utc"].is_boolean());
    assert!(clock["windows"].is_array() && clock["steps"].is_array());
    clock
}

/// A window's bounds at `t` (A's clock), linear between its start and end.
fn bounds_at(w: &Value, t: u64) -> (i64, i64) {
    let (start, end) = (i(&w["start_ns"], "start_ns"), i(&w["end_ns"], "end_ns"));
    let lerp = |a: i64, b: i64| -> i64 {
        if end == start {
            return a;
        }
        (a as i128 + (b as i128 - a as i128) * (t as i128 - start as i128) / (end - start) as i128)
            as i64
    };
    (
        lerp(
            i(&w["start_lo_ns"], "start_lo_ns"),
            i(&w["end_lo_ns"], "end_lo_ns"),
        ),
        lerp(
            i(&w["start_hi_ns"], "start_hi_ns"),
            i(&w["end_hi_ns"], "end_hi_ns"),
        ),
    )
}

/// The window holding `t`: start ≤ t < end (the last one's end included).
fn window_at(windows: &[Value], t: u64) -> &Value {
    let last = windows.len() - 1;
    windows
        .iter()
        .enumerate()
        .find(|(k, w)| {
            let (s, e) = (
                w["start_ns"].as_u64().unwrap(),
                w["end_ns"].as_u64().unwrap(),
            );
            s <= t && (t < e || (*k == last && t == e))
        })
        .map(|(_, w)| w)
        .unwrap_or_else(|| panic!("no clock window holds {t}"))
}

/// The true one-way delays of the orders fixscope measures one-way: all but those in flight
/// while the clock stepped (a request or response stamped inside a `transition` window, at
/// A = cli), which it must count `points_one_way_at_step` instead.
fn measured_one_ways(s: &Value, tp: &TwoPoints) -> [Vec<u64>; 2] {
    let transitions: Vec<(u64, u64)> = s["clock"]["windows"]
        .as_array()
        .map(|ws| {
            ws.iter()
                .filter(|w| w["transition"] == true)
                .map(|w| {
                    (
                        w["start_ns"].as_u64().unwrap(),
                        w["end_ns"].as_u64().unwrap(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let at_step = |t: u64| transitions.iter().any(|&(a, b)| a <= t && t < b);
    let kept: Vec<_> = tp
        .orders
        .iter()
        .filter(|o| !(at_step(o.req_cli_ns) || at_step(o.resp_cli_ns)))
        .collect();
    let skipped = (tp.orders.len() - kept.len()) as u64;
    let counted = s["counters"]["points_one_way_at_step"]
        .as_u64()
        .unwrap_or(0);
    assert_eq!(counted, skipped, "points_one_way_at_step");
    [
        kept.iter().map(|o| o.one_way_fwd_ns).collect(),
        kept.iter().map(|o| o.one_way_rev_ns).collect(),
    ]
}

/// The windows: contiguous, at most `max_window_ns` long, covering every order; the
/// interval holds the true offset at every order's request; each window's width is within
/// 5% of the sum of the true one-way minima in it, its midpoint within half the asymmetry
/// (+2 µs) of the truth, its drift within 1 ppm of the truth (windows of 1 s or more).
fn assert_windows(clock: &Value, tp: &TwoPoints, max_window_ns: u64) {
    let spec = &tp.spec;
    let windows = clock["windows"].as_array().unwrap();
    assert!(!windows.is_empty(), "clock windows");
    for pair in windows.windows(2) {
        assert_eq!(pair[0]["end_ns"], pair[1]["start_ns"], "windows contiguous");
    }
    let half_asymmetry = (spec.rev_base_ns as i64 - spec.fwd_base_ns as i64).abs() / 2;
    for w in windows {
        let (start, end) = (
            w["start_ns"].as_u64().unwrap(),
            w["end_ns"].as_u64().unwrap(),
        );
        assert!(start < end, "window {w}");
        assert!(
            end - start <= max_window_ns,
            "window longer than allowed: {w}"
        );
        assert!(w["start"].is_string() && w["end"].is_string());
        if w["transition"] == true {
            // The stretch a step happened in: the union of both sides' bounds (checked
            // below at every order), no fit of its own.
            continue;
        }
        assert!(
            w["samples_forward"].as_u64().unwrap() > 0
                && w["samples_reverse"].as_u64().unwrap() > 0,
            "window has samples both ways: {w}"
        );
        let (lo, mid, hi) = (
            i(&w["offset_lo_ns"], "offset_lo_ns"),
            i(&w["offset_mid_ns"], "offset_mid_ns"),
            i(&w["offset_hi_ns"], "offset_hi_ns"),
        );
        assert!(lo <= mid && mid <= hi, "lo ≤ mid ≤ hi: {w}");
        let middle = start + (end - start) / 2;
        let truth = spec.theta(middle);
        assert!(
            (mid - truth).abs() <= half_asymmetry + 2_000,
            "midpoint {mid} vs true offset {truth} (window {start}..{end})"
        );
        assert!(
            lo <= truth + 2 && truth <= hi + 2,
            "[{lo}, {hi}] holds {truth}"
        );
        if let Some((min_f, min_r)) = tp.min_owd_between(start, end) {
            let sum = (min_f + min_r) as f64;
            let width = w["width_ns"].as_f64().unwrap();
            assert!(
                (width - sum).abs() <= 0.05 * sum,
                "width {width} vs the true minima's sum {sum} (window {start}..{end})"
            );
        }
        if end - start >= NS_PER_S {
            let drift = w["drift_ppm"].as_f64().unwrap();
            let truth = spec.drift_ppb as f64 / 1000.0;
            assert!(
                (drift - truth).abs() <= 1.0,
                "drift {drift} ppm vs {truth} ppm (window {start}..{end})"
            );
        }
    }
    let mut misses = Vec::new();
    for o in &tp.orders {
        let t = o.request_ns;
        let (lo, hi) = bounds_at(window_at(windows, t), t);
        let truth = spec.theta(t);
        if !(lo - 2 <= truth && truth <= hi + 2) {
            misses.push(format!("{}: [{lo}, {hi}] misses {truth}", o.clordid));
        }
    }
    assert!(
        misses.is_empty(),
        "{} orders outside the interval, e.g. {:?}",
        misses.len(),
        &misses[..misses.len().min(5)]
    );
}

/// The steps the generator made, found: as many, each within one window (10 s) of its
/// time, its size within 10 µs, named TAI−UTC when it is ~37 s.
fn assert_steps(clock: &Value, spec: &PointsSpec) {
    let steps = clock["steps"].as_array().unwrap();
    assert_eq!(steps.len(), spec.steps.len(), "steps: {steps:?}");
    for (got, &(after, size)) in steps.iter().zip(&spec.steps) {
        let at = got["at_ns"].as_u64().unwrap();
        let t1 = T0 + after;
        assert!(
            at.abs_diff(t1) <= 10 * NS_PER_S,
            "step at {at} vs true {t1}"
        );
        assert!(got["at"].is_string());
        let got_size = i(&got["size_ns"], "size_ns");
        assert!(
            (got_size - size).abs() <= 10_000,
            "step size {got_size} vs {size}"
        );
        assert_eq!(
            got["tai_utc"].as_bool().unwrap(),
            size == TAI_UTC_NS,
            "step tai_utc: {got}"
        );
    }
}

/// A one-way stage not withheld: every figure within U (+ HDR 0.1% + 1 ns) of the truth.
fn assert_one_way_within(s: &Value, name: &str, truth: &[u64]) -> u64 {
    let st = stage(s, name);
    assert_eq!(st["withheld"], false, "{name} not withheld: {st}");
    let u = st["offset_uncertainty_ns"].as_u64().unwrap();
    let truth = sorted(truth);
    assert_eq!(
        st["count"].as_u64().unwrap(),
        truth.len() as u64,
        "{name} count"
    );
    for field in PERCENTILES
        .iter()
        .copied()
        .chain(["min_ns", "max_ns", "mean_ns"])
    {
        let want = truth_figure(&truth, field);
        let got = st[field]
            .as_f64()
            .unwrap_or_else(|| panic!("{name} {field} is a number: {st}"));
        let hdr = if quantile_of(field).is_some() {
            want * 0.001
        } else {
            0.0
        };
        assert!(
            (got - want).abs() <= u as f64 + hdr + 1.0,
            "{name} {field}: {got} vs true {want}, U {u}"
        );
    }
    u
}

/// A one-way stage withheld: no percentile, and its bounds hold the truth's.
fn assert_one_way_withheld(s: &Value, name: &str, truth: &[u64]) -> u64 {
    let st = stage(s, name);
    assert_eq!(st["withheld"], true, "{name} withheld: {st}");
    for field in PERCENTILES {
        assert!(st[field].is_null(), "{name} {field} null when withheld");
    }
    let truth = sorted(truth);
    let bounds = st["bounds_ns"]
        .as_object()
        .unwrap_or_else(|| panic!("{name} bounds_ns: {st}"));
    for key in ["p50_ns", "p90_ns", "p99_ns"] {
        assert!(bounds.contains_key(key), "{name} bounds_ns.{key}");
    }
    for (field, b) in bounds {
        let (lo, hi) = (b[0].as_f64().unwrap(), b[1].as_f64().unwrap());
        let want = truth_figure(&truth, field);
        let slack = want * 0.001 + 1.0;
        assert!(
            lo - slack <= want && want <= hi + slack,
            "{name} bounds_ns.{field} [{lo}, {hi}] holds the true {want}"
        );
    }
    st["offset_uncertainty_ns"].as_u64().unwrap()
}

/// Per order on average, one_way_fwd + one_way_rev ≈ wire_rtt: within 2 ns, plus what the
/// drift adds over a residence (the one-ways use the offset at the request and at the
/// response; the residence is in B's clock).
fn assert_one_ways_add_up(s: &Value, tp: &TwoPoints) {
    let m = |name| stage(s, name)["mean_ns"].as_f64().unwrap();
    let drift_over_residence =
        (tp.spec.drift_ppb.unsigned_abs() as f64) * 1e-9 * mean(&tp.residences());
    let gap = (m("one_way_fwd") + m("one_way_rev") - m("wire_rtt")).abs();
    assert!(
        gap <= 2.0 + drift_over_residence,
        "one_way_fwd + one_way_rev − wire_rtt = {gap} ns per order"
    );
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

// ---------------------------------------------------------------- two points

/// The main case: B 250 µs ahead, drifting 20 ppm, stepping +400 µs at 33.3 s. The
/// interval holds the true offset at every order, the windows are as narrow as the data
/// allows, the drift and the step are found; residence and wire round trip exact; the
/// one-ways (U ≈ 37.5 µs, far above 10% of their median) withheld with bounds holding the
/// truth.
#[test]
fn points_drift_and_step_estimate() {
    let spec = PointsSpec::drift_and_step();
    let tp = TwoPoints::generate(&spec);
    let dir = tempfile::tempdir().unwrap();
    let (cli, gw) = tp.write(dir.path());
    let s = points_json(&cli, &gw, &[]);
    assert_exact_point_stages(&s, &tp);
    assert_clean_ledger(&s, spec.orders);
    let clock = assert_clock_header(&s, "estimate", spec.orders);
    assert_eq!(clock["tai_utc"], false);
    assert_windows(clock, &tp, 10 * NS_PER_S);
    assert_steps(clock, &spec);
    // No interval can be narrower than the two directions' minima allow: 30 + 45 µs.
    let max_u = clock["max_uncertainty_ns"].as_u64().unwrap();
    assert!(max_u >= 37_500, "max_uncertainty_ns {max_u}");
    for (name, truth) in [
        ("one_way_fwd", measured_one_ways(&s, &tp)[0].clone()),
        ("one_way_rev", measured_one_ways(&s, &tp)[1].clone()),
    ] {
        let u = assert_one_way_withheld(&s, name, &truth);
        assert!((37_500..=max_u).contains(&u), "{name} U {u}");
    }
}

/// The main case with `--max-clock-uncertainty 1ms`: the one-ways are reported, each
/// figure within U of the truth, and they add up to the wire round trip.
#[test]
fn points_one_ways_within_uncertainty_when_allowed() {
    let spec = PointsSpec::drift_and_step();
    let tp = TwoPoints::generate(&spec);
    let dir = tempfile::tempdir().unwrap();
    let (cli, gw) = tp.write(dir.path());
    let s = points_json(&cli, &gw, &["--max-clock-uncertainty", "1ms"]);
    assert_exact_point_stages(&s, &tp);
    let max_u = s["clock"]["max_uncertainty_ns"].as_u64().unwrap();
    for (name, truth) in [
        ("one_way_fwd", measured_one_ways(&s, &tp)[0].clone()),
        ("one_way_rev", measured_one_ways(&s, &tp)[1].clone()),
    ] {
        let u = assert_one_way_within(&s, name, &truth);
        assert!((37_500..=max_u).contains(&u), "{name} U {u}");
    }
    assert_one_ways_add_up(&s, &tp);
}

/// No drift, no step (B 250 µs ahead) with `--clock-window 5s`: windows of at most 5 s,
/// drift ≈ 0, no step, not TAI.
#[test]
fn points_constant_offset_with_shorter_windows() {
    let spec = PointsSpec::constant().with_orders(3_000);
    let tp = TwoPoints::generate(&spec);
    let dir = tempfile::tempdir().unwrap();
    let (cli, gw) = tp.write(dir.path());
    let s = points_json(&cli, &gw, &["--clock-window", "5s"]);
    assert_exact_point_stages(&s, &tp);
    assert_clean_ledger(&s, spec.orders);
    let clock = assert_clock_header(&s, "estimate", spec.orders);
    assert_eq!(clock["tai_utc"], false);
    assert_windows(clock, &tp, 5 * NS_PER_S);
    assert!(clock["windows"].as_array().unwrap().len() >= 6);
    assert_steps(clock, &spec);
}

/// B keeps TAI, A UTC: the offset is 37 s (and 1 ppm): `clock.tai_utc`, no step, the
/// interval holds the truth, residence and wire round trip exact.
#[test]
fn points_tai_offset_is_named() {
    let spec = PointsSpec::tai().with_orders(3_000);
    let tp = TwoPoints::generate(&spec);
    let dir = tempfile::tempdir().unwrap();
    let (cli, gw) = tp.write(dir.path());
    let s = points_json(&cli, &gw, &[]);
    assert_exact_point_stages(&s, &tp);
    assert_clean_ledger(&s, spec.orders);
    let clock = assert_clock_header(&s, "estimate", spec.orders);
    assert_eq!(clock["tai_utc"], true);
    assert_windows(clock, &tp, 10 * NS_PER_S);
    assert_steps(clock, &spec);
}

/// B steps by +37 s in the middle of the capture: the step is found, its size is 37 s and
/// it is named TAI−UTC; the windows on both sides hold the truth.
#[test]
fn points_tai_step_is_named() {
    let spec = PointsSpec::tai_step();
    let tp = TwoPoints::generate(&spec);
    let dir = tempfile::tempdir().unwrap();
    let (cli, gw) = tp.write(dir.path());
    let s = points_json(&cli, &gw, &[]);
    assert_exact_point_stages(&s, &tp);
    assert_clean_ledger(&s, spec.orders);
    let clock = assert_clock_header(&s, "estimate", spec.orders);
    assert_windows(clock, &tp, 10 * NS_PER_S);
    assert_steps(clock, &spec);
    assert_eq!(clock["steps"][0]["tai_utc"], true);
}

/// A jittery, asymmetric link with few samples: the offset is known to ±~250 µs, far above
/// 10% of the one-ways' median, so both are withheld, their bounds holding the truth; the
/// text report says so.
#[test]
fn points_jittery_link_withholds_one_ways() {
    let spec = PointsSpec::jittery();
    let tp = TwoPoints::generate(&spec);
    let dir = tempfile::tempdir().unwrap();
    let (cli, gw) = tp.write(dir.path());
    let s = points_json(&cli, &gw, &[]);
    assert_exact_point_stages(&s, &tp);
    assert_clean_ledger(&s, spec.orders);
    let clock = assert_clock_header(&s, "estimate", spec.orders);
    let max_u = clock["max_uncertainty_ns"].as_u64().unwrap();
    let physics = (spec.fwd_base_ns + spec.rev_base_ns) / 2;
    assert!(max_u >= physics, "max_uncertainty_ns {max_u}");
    let mut offsets_hold = 0;
    let windows = clock["windows"].as_array().unwrap();
    for o in &tp.orders {
        let (lo, hi) = bounds_at(window_at(windows, o.request_ns), o.request_ns);
        let truth = spec.theta(o.request_ns);
        offsets_hold += usize::from(lo - 2 <= truth && truth <= hi + 2);
    }
    assert_eq!(
        offsets_hold,
        tp.orders.len(),
        "the interval holds the truth"
    );
    for (name, truth) in [
        ("one_way_fwd", measured_one_ways(&s, &tp)[0].clone()),
        ("one_way_rev", measured_one_ways(&s, &tp)[1].clone()),
    ] {
        let u = assert_one_way_withheld(&s, name, &truth);
        assert!(u >= physics, "{name} U {u}");
    }
    // A duration threshold above U reports them, within U.
    let s = points_json(&cli, &gw, &["--max-clock-uncertainty", "5ms"]);
    assert_one_way_within(&s, "one_way_fwd", &measured_one_ways(&s, &tp)[0]);
    assert_one_way_within(&s, "one_way_rev", &measured_one_ways(&s, &tp)[1]);

    let out = run_points(&cli, &gw, &[]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("withheld"),
        "text names withheld one-ways:\n{text}"
    );
}

/// 50 orders missing from the cli capture (their request and response segments): they
/// are `points_orders_near_only`, the others joined; residence covers the joined orders,
/// first_response every order. `--trace` gives each message both points' stamps, empty
/// for the point that did not see it.
#[test]
fn points_orders_missing_at_the_far_point_and_trace() {
    let (spec, dropped) = with_holes();
    let tp = TwoPoints::generate(&spec);
    let dir = tempfile::tempdir().unwrap();
    let (cli, gw) = tp.write_without(dir.path(), &dropped);
    let trace = dir.path().join("trace.csv");
    let s = points_json(&cli, &gw, &["--trace", trace.to_str().unwrap()]);
    let c = |name| counter(&s, name);
    let n = spec.orders as u64;
    assert_eq!(c("points_orders_near_only"), 50);
    assert_eq!(c("points_orders_joined"), n - 50);
    assert_eq!(c("points_orders_far_only"), 0);
    assert_eq!(c("points_orders_ambiguous"), 0);
    assert_eq!(c("points_time_reversed"), 0);
    assert!(c("points_segments_unmatched") >= 100);
    assert_eq!(
        stage(&s, "residence")["count"].as_u64().unwrap(),
        c("points_orders_joined")
    );
    assert_eq!(
        stage(&s, "first_response")["count"].as_u64().unwrap(),
        c("points_orders_joined")
            + c("points_orders_near_only")
            + c("points_orders_ambiguous")
            + c("points_time_reversed")
    );
    let joined = |f: fn(&support_points::OrderTruth) -> u64| -> Vec<u64> {
        tp.orders
            .iter()
            .enumerate()
            .filter(|(k, _)| !dropped.contains(k))
            .map(|(_, o)| f(o))
            .collect()
    };
    assert_stage(&s, "residence", &joined(|o| o.residence_ns));
    assert_stage(&s, "wire_rtt", &joined(|o| o.wire_rtt_ns));
    assert_stage(&s, "first_response", &tp.residences());

    let csv = std::fs::read_to_string(&trace).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("ts_ns,session,direction,msg_type,key,ts_cli_ns,ts_gw_ns")
    );
    let mut requests = 0;
    let mut responses_seen = vec![0usize; spec.orders];
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!(f.len(), 7, "{line}");
        if f[3] != "D" && f[3] != "8" {
            continue;
        }
        let k: usize = f[4]
            .strip_prefix("ORD")
            .and_then(|x| x.parse().ok())
            .unwrap_or_else(|| panic!("key of {line}"));
        let o = &tp.orders[k];
        // The request, then the ack, then the fill.
        let (packet, seen_at_cli) = match f[2] {
            "request" => {
                requests += 1;
                (o.request_packet, !dropped.contains(&k))
            }
            "response" => {
                responses_seen[k] += 1;
                match responses_seen[k] {
                    1 => (o.response_packet, !dropped.contains(&k)),
                    2 => (o.fill_packet.unwrap(), true),
                    _ => panic!("a third response traced: {line}"),
                }
            }
            d => panic!("direction {d}"),
        };
        let p = &tp.packets[packet];
        assert_eq!(f[0], p.ts_gw.to_string(), "the near point's time: {line}");
        assert_eq!(f[6], p.ts_gw.to_string(), "ts_gw_ns: {line}");
        if seen_at_cli {
            assert_eq!(f[5], p.ts_cli.to_string(), "ts_cli_ns: {line}");
        } else {
            assert_eq!(f[5], "", "cli did not see it: {line}");
        }
    }
    assert_eq!(requests, spec.orders);
}

/// `--clock trust` on clocks that disagree (B 250 µs ahead, drifting): taken as they are,
/// A would receive responses before B sent them. Refused, naming the causality violation.
#[test]
fn clock_trust_refuses_a_causality_violation() {
    let spec = PointsSpec::drift_and_step().with_orders(1_000);
    let tp = TwoPoints::generate(&spec);
    let dir = tempfile::tempdir().unwrap();
    let (cli, gw) = tp.write(dir.path());
    let out = run_points(&cli, &gw, &["--json", "--clock", "trust"]);
    assert_refused_for_causality(&out, "--clock trust on a 250 µs offset");
}

/// `--clock trust` on synchronised clocks (θ ≡ 0): accepted, and the one-ways are exact
/// with U = 0.
#[test]
fn clock_trust_on_synchronised_clocks_is_exact() {
    let spec = PointsSpec::synchronised().with_orders(2_000);
    let tp = TwoPoints::generate(&spec);
    let dir = tempfile::tempdir().unwrap();
    let (cli, gw) = tp.write(dir.path());
    let s = points_json(&cli, &gw, &["--clock", "trust"]);
    assert_exact_point_stages(&s, &tp);
    assert_clean_ledger(&s, spec.orders);
    assert_clock_header(&s, "trust", spec.orders);
    for (name, truth) in [
        ("one_way_fwd", measured_one_ways(&s, &tp)[0].clone()),
        ("one_way_rev", measured_one_ways(&s, &tp)[1].clone()),
    ] {
        let st = stage(&s, name);
        assert_eq!(st["offset_uncertainty_ns"], 0, "{name}");
        assert_eq!(st["withheld"], false, "{name}");
        assert_stage(&s, name, &truth);
    }
    assert_one_ways_add_up(&s, &tp);
}

/// `--clock offset=gw-cli=+250us~1us` on a capture whose B runs exactly 250 µs ahead:
/// accepted, U = 1000 ns, the one-ways within it. An offset far outside what causality
/// allows (−5 ms) is refused.
#[test]
fn clock_offset_given() {
    let spec = PointsSpec::constant().with_orders(2_000);
    let tp = TwoPoints::generate(&spec);
    let dir = tempfile::tempdir().unwrap();
    let (cli, gw) = tp.write(dir.path());
    let s = points_json(&cli, &gw, &["--clock", "offset=gw-cli=+250us~1us"]);
    assert_exact_point_stages(&s, &tp);
    assert_clean_ledger(&s, spec.orders);
    assert_clock_header(&s, "offset", spec.orders);
    for (name, truth) in [
        ("one_way_fwd", measured_one_ways(&s, &tp)[0].clone()),
        ("one_way_rev", measured_one_ways(&s, &tp)[1].clone()),
    ] {
        assert_eq!(stage(&s, name)["offset_uncertainty_ns"], 1000, "{name}");
        assert_one_way_within(&s, name, &truth);
    }
    let out = run_points(&cli, &gw, &["--json", "--clock", "offset=gw-cli=-5ms~1us"]);
    assert_refused_for_causality(&out, "--clock offset=gw-cli=-5ms~1us");
}

/// The text report has a Clock line and one-way rows with their ± uncertainty.
#[test]
fn text_report_shows_the_clock_and_one_way_uncertainty() {
    let spec = PointsSpec::drift_and_step().with_orders(1_000);
    let tp = TwoPoints::generate(&spec);
    let dir = tempfile::tempdir().unwrap();
    let (cli, gw) = tp.write(dir.path());
    let out = run_points(&cli, &gw, &["--max-clock-uncertainty", "1ms"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().any(|l| l.contains("Clock")),
        "a Clock line:\n{text}"
    );
    assert!(
        text.lines().any(|l| {
            let l = l.to_lowercase();
            (l.contains("one_way") || l.contains("one-way")) && l.contains('±')
        }),
        "a one-way row with ±:\n{text}"
    );
}

// ---------------------------------------------------------------- the assertions themselves

/// The figures of a stage as the summary gives them (exact percentiles).
fn stage_json(name: &str, values: &[u64]) -> Value {
    let s = sorted(values);
    let mut v = serde_json::json!({"stage": name, "count": s.len()});
    for field in PERCENTILES.iter().copied().chain(["min_ns", "max_ns"]) {
        v[field] = Value::from(truth_figure(&s, field) as u64);
    }
    v["mean_ns"] = Value::from(mean(&s));
    v
}

/// What an honest estimator reports, built from the stamps alone but for the drift and
/// the steps' times, taken from the truth (finding them is fixscope's job, not the
/// point here): windows of at most `max_window_ns` split at the steps, each with the
/// tightest bounds the samples allow at that drift. The assertions must accept it.
fn reference_summary(tp: &TwoPoints, max_window_ns: u64, max_u: u64) -> Value {
    let spec = &tp.spec;
    let slope = spec.drift_ppb as f64 * 1e-9;
    let first = tp.packets.iter().map(|p| p.ts_cli).min().unwrap();
    let last = tp.packets.iter().map(|p| p.ts_cli).max().unwrap();
    let mut cuts: Vec<u64> = spec.steps.iter().map(|&(after, _)| T0 + after).collect();
    cuts.push(last + 1);
    let mut windows = Vec::new();
    let mut start = first;
    for cut in cuts {
        while start < cut {
            let end = (start + max_window_ns).min(cut);
            // Upper bounds (forward) and lower bounds (reverse), moved to the window's
            // start along the drift.
            let (mut hi0, mut lo0) = (f64::INFINITY, f64::NEG_INFINITY);
            let (mut fwd, mut rev) = (0u64, 0u64);
            for p in tp
                .packets
                .iter()
                .filter(|p| p.ts_cli >= start && p.ts_cli < end)
            {
                // Differences first: an f64 holds today's ns since the epoch to 256 ns.
                let d =
                    (p.ts_gw as i64 - p.ts_cli as i64) as f64 - slope * (p.ts_cli - start) as f64;
                if p.c2s {
                    hi0 = hi0.min(d);
                    fwd += 1;
                } else {
                    lo0 = lo0.max(d);
                    rev += 1;
                }
            }
            let at = |b0: f64, t: u64| (b0 + slope * (t - start) as f64).round() as i64;
            let mid_t = start + (end - start) / 2;
            windows.push(serde_json::json!({
                "start_ns": start, "end_ns": end, "start": "", "end": "",
                "offset_lo_ns": at(lo0, mid_t), "offset_hi_ns": at(hi0, mid_t),
                "offset_mid_ns": (at(lo0, mid_t) + at(hi0, mid_t)) / 2,
                "start_lo_ns": at(lo0, start), "start_hi_ns": at(hi0, start),
                "end_lo_ns": at(lo0, end), "end_hi_ns": at(hi0, end),
                "width_ns": at(hi0, mid_t) - at(lo0, mid_t),
                "drift_ppm": spec.drift_ppb as f64 / 1000.0,
                "samples_forward": fwd, "samples_reverse": rev,
            }));
            start = end;
        }
    }
    let steps: Vec<Value> = spec
        .steps
        .iter()
        .map(|&(after, size)| {
            serde_json::json!({"at_ns": T0 + after, "at": "", "size_ns": size,
                               "tai_utc": (size - TAI_UTC_NS).abs() < 1_000_000})
        })
        .collect();
    // One-ways through each order's interval midpoint at its request (forward) and
    // response (reverse); U the largest half-width.
    let (mut fwd, mut rev, mut u) = (Vec::new(), Vec::new(), 0u64);
    for o in &tp.orders {
        let bounds = |t: u64| bounds_at(window_at(&windows, t), t);
        let (lo, hi) = bounds(o.req_cli_ns);
        fwd.push((o.req_gw_ns as i64 - (lo + hi) / 2 - o.req_cli_ns as i64) as u64);
        u = u.max(((hi - lo) / 2 + 1) as u64);
        let (lo, hi) = bounds(o.resp_cli_ns);
        rev.push((o.resp_cli_ns as i64 - (o.resp_gw_ns as i64 - (lo + hi) / 2)) as u64);
        u = u.max(((hi - lo) / 2 + 1) as u64);
    }
    let mut stages = vec![
        stage_json("first_response", &tp.residences()),
        stage_json("ack", &tp.residences()),
        stage_json("residence", &tp.residences()),
        stage_json("wire_rtt", &tp.wire_rtts()),
    ];
    stages[2]["points"] = serde_json::json!(["gw"]);
    stages[3]["points"] = serde_json::json!(["cli", "gw"]);
    for (name, values, points) in [
        ("one_way_fwd", &fwd, ["cli", "gw"]),
        ("one_way_rev", &rev, ["gw", "cli"]),
    ] {
        let mut st = stage_json(name, values);
        st["points"] = serde_json::json!(points);
        st["offset_uncertainty_ns"] = Value::from(u);
        let withheld = u > max_u;
        st["withheld"] = Value::from(withheld);
        if withheld {
            let (low, high): (Vec<u64>, Vec<u64>) =
                values.iter().map(|&v| (v.saturating_sub(u), v + u)).unzip();
            let (low, high) = (sorted(&low), sorted(&high));
            let mut bounds = serde_json::Map::new();
            for field in PERCENTILES {
                st[field] = Value::Null;
                bounds.insert(
                    field.into(),
                    serde_json::json!([truth_figure(&low, field), truth_figure(&high, field)]),
                );
            }
            st["bounds_ns"] = Value::Object(bounds);
        }
        stages.push(st);
    }
    let n = tp.orders.len();
    let tai = (spec.theta(first) - TAI_UTC_NS).abs() < 1_000_000;
    serde_json::json!({
        "type": "summary",
        "stages": stages,
        "counters": {
            "requests": n, "matched": n, "points_orders_joined": n,
            "points_orders_near_only": 0, "points_orders_far_only": 0,
            "points_orders_ambiguous": 0, "points_time_reversed": 0,
            "points_segments_matched": tp.packets.len(), "points_segments_unmatched": 0,
            "points_segments_repeated": 0, "points_one_way_unbounded": 0,
        },
        "clock": {
            "mode": "estimate", "of": "gw", "relative_to": "cli", "near_acceptor": "gw",
            "samples_forward": tp.packets.iter().filter(|p| p.c2s).count(),
            "samples_reverse": tp.packets.iter().filter(|p| !p.c2s).count(),
            "max_uncertainty_ns": u, "tai_utc": tai,
            "windows": windows, "steps": steps,
        },
    })
}

/// The assertions the two-point tests make accept what an honest estimator reports (see
/// [`reference_summary`]), withheld or not: they ask nothing the data cannot give.
#[test]
fn assertions_accept_a_reference_estimate() {
    for spec in [
        PointsSpec::drift_and_step(),
        PointsSpec::tai(),
        PointsSpec::tai_step(),
        PointsSpec::jittery(),
    ] {
        let tp = TwoPoints::generate(&spec);
        for max_u in [0, 5_000_000] {
            let s = reference_summary(&tp, 10 * NS_PER_S, max_u);
            assert_exact_point_stages(&s, &tp);
            assert_clean_ledger(&s, spec.orders);
            let clock = assert_clock_header(&s, "estimate", spec.orders);
            assert_windows(clock, &tp, 10 * NS_PER_S);
            assert_steps(clock, &spec);
            for (name, truth) in [
                ("one_way_fwd", measured_one_ways(&s, &tp)[0].clone()),
                ("one_way_rev", measured_one_ways(&s, &tp)[1].clone()),
            ] {
                let u = if max_u == 0 {
                    assert_one_way_withheld(&s, name, &truth)
                } else {
                    assert_one_way_within(&s, name, &truth)
                };
                let physics = (spec.fwd_base_ns + spec.rev_base_ns) / 2;
                assert!(u >= physics, "{name} U {u}");
            }
            if max_u > 0 {
                assert_one_ways_add_up(&s, &tp);
            }
        }
    }
}

/// The HTML page shows the clock as the JSON does (every window's offsets and samples, the
/// ledger's samples), and a withheld one-way stage without its percentiles.
#[test]
fn the_html_page_shows_the_clock_as_the_json_does() {
    let spec = PointsSpec::drift_and_step();
    let tp = TwoPoints::generate(&spec);
    let dir = tempfile::tempdir().unwrap();
    let (cli, gw) = tp.write(dir.path());
    let page = dir.path().join("report.html");
    let page_s = page.display().to_string();
    let s = points_json(&cli, &gw, &["--html", &page_s]);
    let html = std::fs::read_to_string(&page).unwrap();
    let mut compared = 0;
    let mut rest = html.as_str();
    while let Some(i) = rest.find("data-k=\"") {
        rest = &rest[i + 8..];
        let key = &rest[..rest.find('"').unwrap()];
        if !key.starts_with("clock.") {
            continue;
        }
        let open = rest.find('>').unwrap();
        let text = &rest[open + 1..open + 1 + rest[open + 1..].find('<').unwrap()];
        let want = key.split('.').fold(&s, |v, p| match p.parse::<usize>() {
            Ok(i) if v.is_array() => &v[i],
            _ => &v[p],
        });
        if key.ends_with("_ns") {
            let got: f64 = text.parse().unwrap();
            let want = want.as_f64().unwrap() / 1000.0;
            assert!(
                (got - want).abs() <= 0.0005 + 1e-9,
                "{key}: {text} vs {want}"
            );
        } else if let Some(w) = want.as_u64() {
            assert_eq!(w.to_string(), text, "{key}");
        } else {
            assert_eq!(want.as_str().unwrap(), text, "{key}");
        }
        compared += 1;
    }
    let windows = s["clock"]["windows"].as_array().unwrap();
    let bounded = windows.iter().filter(|w| w["width_ns"].is_u64()).count();
    assert_eq!(
        compared,
        3 + bounded * 4,
        "every figure of the clock compared"
    );
    assert!(stage(&s, "one_way_fwd")["withheld"] == true);
    assert!(
        html.contains("data-k=\"stages.one_way_fwd.withheld\"")
            && !html.contains("data-k=\"stages.one_way_fwd.p50_ns\""),
        "a withheld one-way row shows no percentile"
    );
    assert!(html.contains("step at "), "the step is named on the page");
}

/// The HdrHistogram log carries the exact two-point stages, never a one-way stage (its
/// uncertainty cannot travel with a histogram).
#[test]
fn the_histogram_log_has_residence_and_wire_rtt_but_no_one_way() {
    let spec = PointsSpec::constant().with_orders(500);
    let tp = TwoPoints::generate(&spec);
    let dir = tempfile::tempdir().unwrap();
    let (cli, gw) = tp.write(dir.path());
    let hlog = dir.path().join("run.hlog");
    let hlog_s = hlog.display().to_string();
    let s = points_json(&cli, &gw, &["--hlog", &hlog_s]);
    assert!(stage(&s, "one_way_fwd")["count"].as_u64().unwrap() > 0);
    let log = std::fs::read_to_string(&hlog).unwrap();
    let tags: std::collections::BTreeSet<&str> = log
        .lines()
        .filter_map(|l| l.strip_prefix("Tag="))
        .filter_map(|l| l.split(',').next())
        .collect();
    assert!(
        tags.contains("residence") && tags.contains("wire_rtt"),
        "{tags:?}"
    );
    assert!(!tags.iter().any(|t| t.contains("one_way")), "{tags:?}");
}

/// Interval lines carry the exact two-point stages, not the one-way ones (their uncertainty
/// is the run's, given with them in the summary only).
#[test]
fn interval_lines_carry_no_one_way_figure() {
    let spec = PointsSpec::constant().with_orders(500);
    let tp = TwoPoints::generate(&spec);
    let dir = tempfile::tempdir().unwrap();
    let (cli, gw) = tp.write(dir.path());
    let out = run_points(&cli, &gw, &["--json", "-r", "1"]);
    assert!(out.status.success());
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let intervals: Vec<&Value> = lines.iter().filter(|l| l["type"] == "interval").collect();
    assert!(intervals.len() >= 3, "{} intervals", intervals.len());
    for i in intervals {
        let names: Vec<&str> = i["stages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["stage"].as_str().unwrap())
            .collect();
        assert!(
            names.contains(&"residence") && names.contains(&"wire_rtt"),
            "{names:?}"
        );
        assert!(!names.iter().any(|n| n.starts_with("one_way")), "{names:?}");
    }
}

/// Order by order: each slowest one-way order's figure is within the stage's uncertainty of
/// its own truth; withheld, its bounds hold it and no figure is given.
#[test]
fn every_slow_one_way_order_holds_its_truth() {
    let spec = PointsSpec::drift_and_step().with_orders(3_000);
    let tp = TwoPoints::generate(&spec);
    let dir = tempfile::tempdir().unwrap();
    let (cli, gw) = tp.write(dir.path());
    let truth_of = |key: &str, stage: &str| {
        let o = tp.orders.iter().find(|o| o.clordid == key).unwrap();
        if stage == "one_way_fwd" {
            o.one_way_fwd_ns
        } else {
            o.one_way_rev_ns
        }
    };
    for (extra, withheld) in [
        (
            &["--slowest", "50", "--max-clock-uncertainty", "1ms"][..],
            false,
        ),
        (&["--slowest", "50"][..], true),
    ] {
        let s = points_json(&cli, &gw, extra);
        let mut checked = 0;
        for stage in ["one_way_fwd", "one_way_rev"] {
            let u = support::stage(&s, stage)["offset_uncertainty_ns"]
                .as_u64()
                .unwrap();
            for o in s["slowest"][stage].as_array().unwrap() {
                let want = truth_of(o["key"].as_str().unwrap(), stage);
                assert_eq!(o["offset_uncertainty_ns"].as_u64(), Some(u), "{o}");
                if withheld {
                    assert!(o["latency_ns"].is_null(), "{o}");
                    let b = o["bounds_ns"].as_array().unwrap();
                    let (lo, hi) = (b[0].as_u64().unwrap(), b[1].as_u64().unwrap());
                    assert!(lo <= want && want <= hi, "{stage} {o}: truth {want}");
                } else {
                    let got = o["latency_ns"].as_u64().unwrap();
                    assert!(got.abs_diff(want) <= u, "{stage} {o}: truth {want} ± {u}");
                }
                checked += 1;
            }
        }
        assert_eq!(checked, 100, "every slow order checked");
    }
}

/// Bad input gets a clear error, never a number: one point, the same capture twice (no
/// nearer point can be told), a point on a pipe, points that share no segment.
#[test]
fn bad_points_are_refused_with_a_reason() {
    let spec = PointsSpec::constant().with_orders(200);
    let tp = TwoPoints::generate(&spec);
    let dir = tempfile::tempdir().unwrap();
    let (cli, gw) = tp.write(dir.path());
    let g = format!("gw={}", gw.display());
    let cases: [(Vec<String>, &str); 4] = [
        (vec!["--point".into(), g.clone()], "give two points"),
        (
            vec![
                "--point".into(),
                format!("a={}", gw.display()),
                "--point".into(),
                g.clone(),
            ],
            "nearer the acceptor",
        ),
        (
            vec![
                "--point".into(),
                "a=/dev/stdin".into(),
                "--point".into(),
                g.clone(),
            ],
            "not a regular file",
        ),
        (
            vec![
                "--point".into(),
                format!("cli={}", cli.display()),
                "--point".into(),
                g.clone(),
                "-p".into(),
                "9999".into(),
            ],
            "share no TCP segment",
        ),
    ];
    for (args, why) in cases {
        let mut all = vec!["pcap".to_string()];
        all.extend(args);
        if !all.iter().any(|a| a == "-p") {
            all.extend(["-p".to_string(), PORT.to_string()]);
        }
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        let out = fixscope(&refs);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{refs:?} must fail");
        assert!(stderr.contains(why), "{refs:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{refs:?}: no figure printed");
    }
}

/// Microsecond captures (classic pcap) of two points a few hundred ns apart whose clocks
/// differ by half a microsecond: truncating both stamps to the microsecond can make a
/// segment look as if it arrived before it left by the true offset. The bounds are widened
/// by each point's resolution, so the true offset given is accepted and the estimate holds
/// it at every order.
#[test]
fn microsecond_captures_keep_the_truth_inside_the_bounds() {
    use fixscope_core::decode::LinkType;
    use fixscope_core::pcap_writer::{CaptureFormat, FrameOptions};
    let spec = PointsSpec {
        fwd_base_ns: 300,
        rev_base_ns: 400,
        jitter_mean_ns: 500,
        theta0_ns: 500,
        ..PointsSpec::synchronised().with_orders(1_000)
    };
    let tp = TwoPoints::generate(&spec);
    let dir = tempfile::tempdir().unwrap();
    let (cli, gw) = (dir.path().join("cli.pcap"), dir.path().join("gw.pcap"));
    for (path, point) in [(&cli, Point::Cli), (&gw, Point::Gw)] {
        support::write_capture(
            path,
            &tp.capture(point, |_| true),
            CaptureFormat::pcap_micros(),
            LinkType::Ethernet,
            &FrameOptions::default(),
            None,
        );
    }
    let given = points_json(&cli, &gw, &["--clock", "offset=gw-cli=+500ns"]);
    assert_eq!(given["clock"]["mode"], "offset");
    let s = points_json(&cli, &gw, &[]);
    let windows = s["clock"]["windows"].as_array().unwrap();
    for o in &tp.orders {
        let t = o.request_ns;
        let (lo, hi) = bounds_at(window_at(windows, t), t);
        assert!(
            lo <= 500 && 500 <= hi,
            "{}: [{lo}, {hi}] holds 500",
            o.clordid
        );
    }
}

// ---------------------------------------------------------------- short clocks (#47, 12)

/// No window's interval is inverted: `lo ≤ hi` at its start, middle and end; a side with
/// no bound is `null` and the window says why (`unestimable`).
fn assert_never_inverted(clock: &Value) {
    for w in clock["windows"].as_array().unwrap() {
        for (lo, hi) in [
            ("start_lo_ns", "start_hi_ns"),
            ("offset_lo_ns", "offset_hi_ns"),
            ("end_lo_ns", "end_hi_ns"),
        ] {
            match (w[lo].as_i64(), w[hi].as_i64()) {
                (Some(l), Some(h)) => assert!(l <= h, "inverted {lo}..{hi}: {w}"),
                _ => assert!(w["unestimable"].is_string(), "unbounded, no reason: {w}"),
            }
        }
        if let Some(width) = w["width_ns"].as_i64() {
            assert!(width >= 0, "negative width: {w}");
        }
    }
}

/// A capture of `seconds` (an order every 500 µs), B 250 µs ahead at 20 ppm, stepping
/// +400 µs `step_at_s` in (or not): no interval inverted; the windows hold the truth as in
/// the long captures; each window's drift within `2 · 300 ns / (span − 10 ms)` of the
/// truth — its envelopes are lines under (over) samples of which a quarter lie within
/// 300 ns of the true floor, a few ms apart, on both sides of the window's mean time, so
/// each line's slope is off by at most that floor's 300 ns over half the span; the step
/// found between two segments at most 1 ms apart (samples come every ~125 µs), its size
/// within 10 µs; every order's one-way figures within their uncertainty, none unbounded.
fn assert_short_capture(seconds: u64, step_at_s: Option<f64>) {
    let spec = PointsSpec::short(seconds, step_at_s);
    let tp = TwoPoints::generate(&spec);
    for &(after, _) in &spec.steps {
        let t1 = T0 + after;
        assert!(tp
            .packets
            .iter()
            .all(|p| !(p.send_ns < t1 && t1 <= p.arrive_ns)));
    }
    let dir = tempfile::tempdir().unwrap();
    let (cli, gw) = tp.write(dir.path());
    let s = points_json(&cli, &gw, &["--max-clock-uncertainty", "1ms"]);
    let what = format!("{seconds} s, step at {step_at_s:?}");
    assert_exact_point_stages(&s, &tp);
    let clock = assert_clock_header(&s, "estimate", spec.orders);
    assert_never_inverted(clock);
    assert_clean_ledger(&s, spec.orders);
    assert_windows(clock, &tp, 10 * NS_PER_S);
    let truth_ppm = spec.drift_ppb as f64 / 1000.0;
    for w in clock["windows"].as_array().unwrap() {
        let span = w["end_ns"].as_u64().unwrap() - w["start_ns"].as_u64().unwrap();
        if w["transition"] == true || span < 100_000_000 {
            continue;
        }
        let tolerance = 2.0 * 300.0 / (span - 10_000_000) as f64 * 1e6;
        let drift = w["drift_ppm"].as_f64().unwrap();
        assert!(
            (drift - truth_ppm).abs() <= tolerance,
            "{what}: drift {drift} ppm vs {truth_ppm} ± {tolerance}: {w}"
        );
    }
    assert_steps(clock, &spec);
    for (got, &(after, _)) in clock["steps"].as_array().unwrap().iter().zip(&spec.steps) {
        let (a, b) = (
            got["after_ns"].as_u64().unwrap(),
            got["by_ns"].as_u64().unwrap(),
        );
        let t1 = T0 + after;
        assert!(a < t1 && t1 <= b && b - a <= 1_000_000, "{what}: {got}");
    }
    let [fwd, rev] = measured_one_ways(&s, &tp);
    assert_one_way_within(&s, "one_way_fwd", &fwd);
    assert_one_way_within(&s, "one_way_rev", &rev);
}

#[test]
fn points_short_capture_without_step() {
    for seconds in [1, 3] {
        assert_short_capture(seconds, None);
    }
}

#[test]
fn points_one_second_capture_steps_anywhere() {
    for at in [0.2, 0.5, 0.8] {
        assert_short_capture(1, Some(at));
    }
}

#[test]
fn points_three_second_capture_steps_anywhere() {
    for at in [0.5, 1.5, 2.5] {
        assert_short_capture(3, Some(at));
    }
}

#[test]
fn points_ten_second_capture_steps_anywhere() {
    for at in [0.5, 5.5, 9.5] {
        assert_short_capture(10, Some(at));
    }
}
