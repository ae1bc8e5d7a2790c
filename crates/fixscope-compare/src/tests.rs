//! The method's proof on simulated data with known distributions: whole-table false alarms
//! over many A/A pairs, coverage of a known ratio, and shifts found where they are and
//! nowhere else. Runs are made of blocks with their own latency regime (a per-block factor),
//! as latency under load comes, so a bootstrap that ignored blocks would fail these.

use hdrhistogram::Histogram;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;
use fixscope_core::correlate::Stage;

/// A simulated run: `blocks` blocks of `per_block` orders; first_response is lognormal
/// (median 50 µs, σ 0.5) times the block's regime factor (lognormal, σ 0.15); fill is
/// first_response plus 20–150 µs. `transform` changes first_response (shifts under test).
fn simulate(seed: u64, blocks: usize, per_block: usize, transform: &dyn Fn(f64) -> f64) -> Run {
    simulate_regimes(seed, blocks, per_block, 0.15, transform)
}

/// As [`simulate`] with the regimes' σ given.
fn simulate_regimes(
    seed: u64,
    blocks: usize,
    per_block: usize,
    regime_sigma: f64,
    transform: &dyn Fn(f64) -> f64,
) -> Run {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut normal = move || {
        // Box-Muller on two uniforms in (0, 1].
        let u1 = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 + 1e-18;
        let u2 = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    };
    let mut run = Run::new(format!("sim-{seed}"));
    run.block_s = 0.1;
    for _ in 0..blocks {
        let regime = (regime_sigma * normal()).exp();
        let mut first = Histogram::<u64>::new_with_bounds(1, 10_000_000_000, 3).unwrap();
        let mut fill = first.clone();
        for _ in 0..per_block {
            let x = transform(50_000.0 * regime * (0.5 * normal()).exp());
            first.record(x as u64).unwrap();
            let extra = 20_000.0 + 130_000.0 * (0.5 + 0.5 * normal().tanh());
            fill.record((x + extra) as u64).unwrap();
        }
        let block = |h: &Histogram<u64>| BlockHist::from_histogram(h, 0, Some(h.min()), h.max());
        run.push_block([
            (key(Stage::FirstResponse), block(&first)),
            (key(Stage::Fill), block(&fill)),
        ]);
    }
    run.context.requests = (blocks * per_block) as u64;
    run.context.duration_s = blocks as f64 * 0.1;
    run
}

fn key(stage: Stage) -> CellKey {
    CellKey {
        group: Group::All,
        stage,
    }
}

fn settings(confidence: f64, threshold: f64) -> Settings {
    Settings {
        confidence,
        threshold,
        resamples: 400,
        diagnose: false,
        ..Settings::default()
    }
}

fn same(x: f64) -> f64 {
    x
}

/// Whole-table false alarms over A/A pairs: a cell whose band excludes a ratio of 1
/// (threshold 0, so every significant cell counts) must happen in at most 1 − confidence
/// of the tables.
#[test]
fn aa_pairs_false_alarm_at_most_one_minus_confidence() {
    for (confidence, pairs, allowed) in [(0.90, 100, 15), (0.99, 150, 4)] {
        let s = settings(confidence, 0.0);
        let mut alarms = 0;
        for i in 0..pairs {
            let a = simulate(1000 + 2 * i, 30, 100, &same);
            let b = simulate(1001 + 2 * i, 30, 100, &same);
            let c = compare(
                &[a],
                &[b],
                &Settings {
                    seed: i,
                    ..s.clone()
                },
            );
            assert!(c.table.judged >= 6, "judged {}", c.table.judged);
            if c.table.count(Verdict::Worse) + c.table.count(Verdict::Better) > 0 {
                alarms += 1;
            }
        }
        eprintln!("A/A at {confidence}: {alarms} of {pairs} tables with an alarm");
        // Expected at most (1 − confidence) × pairs; `allowed` leaves room for chance
        // (binomial, ~2 standard deviations above the nominal count).
        assert!(
            alarms <= allowed,
            "{alarms} of {pairs} A/A tables raised an alarm at {confidence}"
        );
    }
}

/// The simultaneous 99% band covers a known ratio (the candidate 10% slower at every
/// percentile) in at least 97% of 200 pairs, cell by cell.
#[test]
fn intervals_cover_a_known_ratio() {
    let s = settings(0.99, 0.05);
    let pairs = 200;
    let (mut covered, mut cells) = (0, 0);
    for i in 0..pairs {
        let a = simulate(5000 + 2 * i, 30, 100, &same);
        let b = simulate(5001 + 2 * i, 30, 100, &|x| 1.10 * x);
        let c = compare(
            &[a],
            &[b],
            &Settings {
                seed: i,
                ..s.clone()
            },
        );
        for p in c
            .table
            .cells
            .iter()
            .filter(|c| c.key.stage == Stage::FirstResponse)
            .flat_map(|c| &c.percentiles)
        {
            if let (Some(lo), Some(hi)) = (p.ci_low, p.ci_high) {
                cells += 1;
                // Histogram buckets are 0.1% wide: the band may miss by that much.
                if lo <= 1.10 * 1.001 && hi >= 1.10 / 1.001 {
                    covered += 1;
                }
            }
        }
    }
    let rate = covered as f64 / cells as f64;
    eprintln!("coverage of a known ratio 1.10 by 99% bands: {covered} of {cells} ({rate:.3})");
    assert!(cells >= 3 * pairs as usize, "cells judged: {cells}");
    assert!(rate >= 0.97, "coverage {rate:.3} ({covered} of {cells})");
}

/// The population p95 of the simulated first_response (σ² = 0.5² + 0.15²).
fn p95() -> f64 {
    50_000.0 * (1.645 * (0.25f64 + 0.0225).sqrt()).exp()
}

/// The population p75.
fn p75() -> f64 {
    50_000.0 * (0.674 * (0.25f64 + 0.0225).sqrt()).exp()
}

fn verdicts(c: &Comparison, stage: Stage) -> Vec<(f64, Verdict)> {
    c.table
        .cells
        .iter()
        .find(|c| c.key == key(stage))
        .unwrap()
        .percentiles
        .iter()
        .map(|p| (p.q, p.verdict))
        .collect()
}

/// The tail alone 50% slower (first_response above its p95): p99 and p99.9 worse, p50
/// and p90 not.
#[test]
fn a_tail_shift_is_found_only_in_the_tail() {
    let tail = p95();
    let a = simulate(7, 50, 400, &same);
    let b = simulate(8, 50, 400, &|x| if x > tail { 1.5 * x } else { x });
    let c = compare(&[a], &[b], &settings(0.99, 0.05));
    let v = verdicts(&c, Stage::FirstResponse);
    assert_eq!(v[2], (0.99, Verdict::Worse), "{v:?}");
    assert_eq!(v[3], (0.999, Verdict::Worse), "{v:?}");
    assert!(v[..2].iter().all(|(_, v)| *v != Verdict::Worse), "{v:?}");
    assert_eq!(c.verdict(), Verdict::Worse);
}

/// The body alone 20% slower (below its p75): p50 worse, p90 and above not.
#[test]
fn a_median_shift_is_found_only_at_the_median() {
    let body = p75();
    let a = simulate(9, 50, 400, &same);
    let b = simulate(10, 50, 400, &|x| if x < body { 1.2 * x } else { x });
    let c = compare(&[a], &[b], &settings(0.99, 0.05));
    let v = verdicts(&c, Stage::FirstResponse);
    assert_eq!(v[0], (0.5, Verdict::Worse), "{v:?}");
    assert!(v[1..].iter().all(|(_, v)| *v != Verdict::Worse), "{v:?}");
}

/// A faster candidate is `better`, and the same generator twice is `same` at the percentiles
/// with enough orders.
#[test]
fn better_and_same() {
    let a = simulate(11, 50, 400, &same);
    let faster = simulate(12, 50, 400, &|x| 0.7 * x);
    let c = compare(std::slice::from_ref(&a), &[faster], &settings(0.99, 0.05));
    let v = verdicts(&c, Stage::FirstResponse);
    assert!(v[..3].iter().all(|(_, v)| *v == Verdict::Better), "{v:?}");
    // Steadier regimes (σ 0.03): the band gets narrow enough to prove equivalence.
    let steady = simulate_regimes(13, 50, 400, 0.03, &same);
    let again = simulate_regimes(14, 50, 400, 0.03, &same);
    let c = compare(&[steady], &[again], &settings(0.99, 0.05));
    let v = verdicts(&c, Stage::FirstResponse);
    assert_eq!(v[0].1, Verdict::Same, "{v:?}");
}

/// Too few orders beyond a percentile: insufficient, with the orders it would need.
#[test]
fn a_thin_tail_is_insufficient() {
    let a = simulate(21, 25, 100, &same);
    let b = simulate(22, 25, 100, &same);
    let c = compare(&[a], &[b], &settings(0.99, 0.05));
    let cell = &c.table.cells[0];
    let p999 = &cell.percentiles[3];
    assert_eq!(p999.verdict, Verdict::Insufficient);
    assert_eq!(p999.orders_needed, Some(10_000));
    assert!(p999.ci_low.is_none());
    // Too few blocks: everything insufficient.
    let short = compare(
        &[simulate(23, 10, 500, &same)],
        &[simulate(24, 10, 500, &same)],
        &settings(0.99, 0.05),
    );
    assert_eq!(short.table.judged, 0);
    assert_eq!(short.verdict(), Verdict::Insufficient);
}

/// The same inputs and seed give the same table; another seed moves the band a little.
#[test]
fn deterministic_for_a_seed() {
    let a = simulate(31, 30, 100, &same);
    let b = simulate(32, 30, 100, &same);
    let s = settings(0.99, 0.05);
    let (a, b) = ([a], [b]);
    let one = compare(&a, &b, &s);
    let two = compare(&a, &b, &s);
    assert_eq!(one, two);
    let other = compare(&a, &b, &Settings { seed: 99, ..s });
    assert_ne!(one.table.critical, other.table.critical);
}

/// Latency that steps up halfway through a run is reported as drift.
#[test]
fn drift_within_a_run_is_reported() {
    let mut step = simulate(41, 25, 200, &same);
    let late = simulate(42, 25, 200, &|x| 1.5 * x);
    let mut steady = simulate(43, 50, 200, &same);
    steady.label = "steady".into();
    for (k, list) in step.cells.iter_mut() {
        list.extend(late.cells[k].iter().cloned());
    }
    let step = {
        let mut r = Run::new("stepped");
        for b in 0..50 {
            r.push_block(step.cells.iter().map(|(k, l)| (k.clone(), l[b].clone())));
        }
        r
    };
    let s = Settings {
        diagnose: true,
        ..settings(0.99, 0.05)
    };
    let c = compare(&[steady.clone()], &[step], &s);
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("candidate stepped: latency drifts")),
        "{:?}",
        c.warnings
    );
    let c = compare(&[steady.clone()], &[steady], &s);
    assert!(
        !c.warnings.iter().any(|w| w.contains("drifts")),
        "{:?}",
        c.warnings
    );
}

/// Blocks whose regimes last several blocks (correlated neighbours): the check sees the
/// variance grow when blocks double and doubles them.
#[test]
fn correlated_blocks_are_doubled() {
    // Each regime spans 4 consecutive blocks: runs of 4 equal blocks.
    let base = simulate(51, 20, 400, &same);
    let mut r = Run::new("slow regimes");
    for b in 0..80 {
        r.push_block(
            base.cells
                .iter()
                .map(|(k, l)| (k.clone(), l[b / 4].clone())),
        );
    }
    let s = Settings {
        diagnose: true,
        target_blocks: 80,
        ..settings(0.99, 0.05)
    };
    let c = compare(&[r.clone()], &[r], &s);
    let check = c.sides[0].block_check.clone().unwrap();
    assert!(check.doubled && check.variance_growth > 1.5, "{check:?}");
    assert_eq!(c.sides[0].blocks, 40);
}

/// Several runs per side: the runs are resampled too, so a run-level difference (one run's
/// machine slower than another's) widens the band; the same blocks pooled as one run per
/// side do not see it.
#[test]
fn run_to_run_variation_widens_the_band() {
    let side = |seed: u64| -> Vec<Run> {
        [1.0, 1.15, 0.9, 1.1]
            .iter()
            .enumerate()
            .map(|(i, &f)| simulate(seed + i as u64, 20, 200, &move |x| f * x))
            .collect()
    };
    let (a, b) = (side(60), side(70));
    let pooled = |runs: &[Run]| {
        let mut one = Run::new("pooled");
        for r in runs {
            for i in 0..r.blocks() {
                one.push_block(r.cells.iter().map(|(k, l)| (k.clone(), l[i].clone())));
            }
        }
        one
    };
    let s = settings(0.99, 0.05);
    let width = |c: &Comparison| {
        let p = &c.table.cells[0].percentiles[0];
        (p.ci_high.unwrap() / p.ci_low.unwrap()).ln()
    };
    let runs = compare(&a, &b, &s);
    let one = compare(&[pooled(&a)], &[pooled(&b)], &s);
    assert!(
        width(&runs) > 1.5 * width(&one),
        "runs {} vs pooled {}",
        width(&runs),
        width(&one)
    );
    assert_eq!(runs.sides[0].runs, 4);
}
