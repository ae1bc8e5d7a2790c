//! `--point`: the two-point stages' rows (named by their points; a one-way figure with its
//! uncertainty, or only its bounds when withheld) and the clock's table, in text and JSON.

use std::io::{self, Write};

use serde_json::{json, Map, Value};

use super::human_ns;
use super::rows::write_stage_row;
use fixscope_orders::correlate::Stage;
use fixscope_orders::points::{signed_ns, ClockFigures, WindowFigures};
use fixscope_orders::recorder::{Distribution, PERCENTILES};

/// A stage's row; a two-point stage's named by its points, a one-way stage's with its
/// uncertainty, or withheld.
pub(super) fn write_row(
    out: &mut impl Write,
    clock: Option<&ClockFigures>,
    stage: Stage,
    d: &Distribution,
) -> io::Result<()> {
    let Some((clock, points)) = clock.and_then(|c| Some((c, c.points_of(stage)?))) else {
        return write_stage_row(out, stage.name(), d);
    };
    let name = format!("{} {}", stage.name(), points.join("→"));
    let Some(u) = clock.uncertainty(stage) else {
        return write_stage_row(out, &name, d);
    };
    if d.count == 0 {
        return write_stage_row(out, &name, d);
    }
    if let Some(allowed) = clock.withheld(stage, d.percentiles_ns[0]) {
        writeln!(
            out,
            "{name:<22} {:>9}  withheld: the clock's uncertainty ±{} is above the {} allowed ({}); bounds:",
            d.count,
            human_ns(u as f64),
            human_ns(allowed as f64),
            clock.limit,
        )?;
        let bounds: Vec<String> = bounded_figures(d)
            .into_iter()
            .map(|(label, v)| {
                let (lo, hi) = bounds(v, u);
                format!("{label} {}–{}", human_ns(lo as f64), human_ns(hi as f64))
            })
            .collect();
        return writeln!(out, "{:<22}   {}", "", bounds.join("  "));
    }
    write_stage_row(out, &name, d)?;
    let median = d.percentiles_ns[0].map_or(String::new(), |p| {
        format!("; p50 {} ±{}", human_ns(p as f64), human_ns(u as f64))
    });
    writeln!(
        out,
        "  {name}: every figure ±{} (the clock's offset is known only that well){median}",
        human_ns(u as f64)
    )
}

/// The figures of a one-way stage that bounds replace when withheld.
fn bounded_figures(d: &Distribution) -> Vec<(&'static str, u64)> {
    let mut v = vec![("min", d.min_ns), ("mean", d.mean_ns.round() as u64)];
    for ((_, label, _), p) in PERCENTILES.iter().zip(d.percentiles_ns) {
        if let Some(p) = p {
            v.push((label, p));
        }
    }
    v.push(("max", d.max_ns));
    v
}

/// What a figure at the estimated offset can truly be: ± the uncertainty, never below 0
/// (every order's own figure is bounded so; a percentile moves no more than they do).
fn bounds(v: u64, u: u64) -> (u64, u64) {
    (v.saturating_sub(u), v.saturating_add(u))
}

/// The JSON stage entries of a two-point run: each two-point stage gets its `points`, a
/// one-way stage its `offset_uncertainty_ns` and `withheld` (then its figures are `null`
/// and `bounds_ns` holds each one's `[lo, hi]`).
pub(super) fn annotate_stages(stages: &mut [Value], clock: &ClockFigures) {
    for entry in stages {
        let Some(m) = entry.as_object_mut() else {
            continue;
        };
        let Some(stage) = m
            .get("stage")
            .and_then(Value::as_str)
            .and_then(Stage::from_name)
        else {
            continue;
        };
        let Some(points) = clock.points_of(stage) else {
            continue;
        };
        m.insert("points".into(), json!(points));
        let Some(u) = clock.uncertainty(stage) else {
            continue;
        };
        m.insert("offset_uncertainty_ns".into(), u.into());
        let median = m.get("p50_ns").and_then(Value::as_u64);
        let withheld = m.get("count").and_then(Value::as_u64).unwrap_or(0) > 0
            && clock.withheld(stage, median).is_some();
        m.insert("withheld".into(), withheld.into());
        if withheld {
            let mut b = Map::new();
            let fields: Vec<&str> = ["min_ns", "mean_ns", "max_ns"]
                .into_iter()
                .chain(PERCENTILES.iter().map(|p| p.2))
                .collect();
            for field in fields {
                if let Some(v) = m.get(field).and_then(Value::as_f64) {
                    let (lo, hi) = bounds(v.round() as u64, u);
                    b.insert(field.into(), json!([lo, hi]));
                }
                m.insert(field.into(), Value::Null);
            }
            m.insert("bounds_ns".into(), Value::Object(b));
        }
    }
}

/// The one-way stages' medians in the summary's stage entries (before any is withheld).
pub(super) fn one_way_medians(stages: Option<&Value>) -> [Option<u64>; 2] {
    let median = |name: &str| {
        stages?
            .as_array()?
            .iter()
            .find(|s| s["stage"] == name)?
            .get("p50_ns")?
            .as_u64()
    };
    [median("one_way_fwd"), median("one_way_rev")]
}

/// The summary's slowest one-way orders: each with the stage's `offset_uncertainty_ns`; a
/// withheld stage's with `latency_ns` `null` and its `bounds_ns` instead.
pub(super) fn annotate_slowest(
    slowest: &mut Value,
    clock: &ClockFigures,
    medians: [Option<u64>; 2],
) {
    for (stage, median) in [Stage::OneWayFwd, Stage::OneWayRev]
        .into_iter()
        .zip(medians)
    {
        let Some(u) = clock.uncertainty(stage) else {
            continue;
        };
        let withheld = clock.withheld(stage, median).is_some();
        let Some(list) = slowest.get_mut(stage.name()).and_then(Value::as_array_mut) else {
            continue;
        };
        for order in list.iter_mut().filter_map(Value::as_object_mut) {
            order.insert("offset_uncertainty_ns".into(), u.into());
            if withheld {
                if let Some(v) = order.get("latency_ns").and_then(Value::as_u64) {
                    let (lo, hi) = bounds(v, u);
                    order.insert("bounds_ns".into(), json!([lo, hi]));
                }
                order.insert("latency_ns".into(), Value::Null);
            }
        }
    }
}

/// The summary's `clock` object.
pub(super) fn clock_json(c: &ClockFigures) -> Value {
    let utc = |ns: i64| super::utc(ns.max(0) as u64, 0);
    let windows: Vec<Value> = c
        .windows
        .iter()
        .map(|w| {
            let mid = w.middle.map(|(lo, hi)| lo + (hi - lo) / 2);
            json!({
                "start_ns": w.start_ns,
                "end_ns": w.end_ns,
                "start": utc(w.start_ns),
                "end": utc(w.end_ns),
                "offset_lo_ns": w.middle.map(|m| m.0),
                "offset_mid_ns": mid,
                "offset_hi_ns": w.middle.map(|m| m.1),
                "start_lo_ns": w.start.map(|m| m.0),
                "start_hi_ns": w.start.map(|m| m.1),
                "end_lo_ns": w.end.map(|m| m.0),
                "end_hi_ns": w.end.map(|m| m.1),
                "width_ns": w.middle.map(|(lo, hi)| hi - lo),
                "drift_ppm": w.drift_ppm,
                "samples_forward": w.samples_forward,
                "samples_reverse": w.samples_reverse,
                "transition": w.transition,
                "unestimable": w.unestimable,
            })
        })
        .collect();
    let steps: Vec<Value> = c
        .steps
        .iter()
        .map(|s| {
            json!({
                "at_ns": s.at_ns,
                "at": utc(s.at_ns),
                "after_ns": s.after_ns,
                "by_ns": s.by_ns,
                "size_ns": s.size_ns,
                "tai_utc": s.tai_utc,
            })
        })
        .collect();
    json!({
        "mode": c.mode,
        "of": c.of,
        "relative_to": c.relative_to,
        "near_acceptor": c.near_acceptor,
        "samples_forward": c.samples_forward,
        "samples_reverse": c.samples_reverse,
        "offset_ns": c.fixed.map(|f| f.0),
        "uncertainty_ns": c.fixed.map(|f| f.1),
        "max_uncertainty_ns": c.one_way_uncertainty_ns.iter().max(),
        "tai_utc": c.tai_utc,
        "windows": windows,
        "steps": steps,
    })
}

/// The clock's table in text.
pub(super) fn write_clock(out: &mut impl Write, c: &ClockFigures) -> io::Result<()> {
    let how = match c.fixed {
        None => "estimated".to_string(),
        Some((o, u)) => format!(
            "{} {} ±{} ({}; checked against the estimate below)",
            if c.mode == "trust" {
                "trusted as"
            } else {
                "given as"
            },
            signed_ns(o),
            human_ns(u as f64),
            c.mode
        ),
    };
    writeln!(
        out,
        "\nClock: {} − {} {how}, from {} segments toward the acceptor and {} away ({} is nearer the acceptor)",
        c.of, c.relative_to, c.samples_forward, c.samples_reverse, c.near_acceptor
    )?;
    if c.tai_utc {
        writeln!(
            out,
            "  the clocks are 37 s apart: one is TAI, the other UTC (a NIC's PTP clock beside a system clock)"
        )?;
    }
    writeln!(
        out,
        "  {:<30} {:>8} {:>12} {:>12} {:>12} {:>10} {:>10} {:>13}",
        format!("window ({}'s clock, UTC)", c.relative_to),
        "length",
        "offset low",
        "mid",
        "high",
        "width",
        "drift",
        "samples →/←"
    )?;
    for w in &c.windows {
        write_window(out, w)?;
    }
    for s in &c.steps {
        writeln!(
            out,
            "  step at {}: {} (between {} and {}){}",
            super::utc(s.at_ns.max(0) as u64, 0),
            signed_ns(s.size_ns),
            super::utc(s.after_ns.max(0) as u64, 0),
            super::utc(s.by_ns.max(0) as u64, 0),
            if s.tai_utc {
                " — 37 s: TAI against UTC"
            } else {
                ""
            }
        )?;
    }
    Ok(())
}

fn write_window(out: &mut impl Write, w: &WindowFigures) -> io::Result<()> {
    let length = format!("{:.1}s", (w.end_ns - w.start_ns) as f64 / 1e9);
    let start = super::utc(w.start_ns.max(0) as u64, 0);
    let start = if w.transition {
        format!("{start} step")
    } else {
        start
    };
    let (lo, mid, hi, width) = match w.middle {
        Some((lo, hi)) => (
            offset_text(lo),
            offset_text(lo + (hi - lo) / 2),
            offset_text(hi),
            human_ns((hi - lo) as f64),
        ),
        // Why: `no forward samples`, `no reverse samples`, `contradicted`.
        None => (
            "unbounded".into(),
            "-".into(),
            "-".into(),
            w.unestimable.unwrap_or("-").replace('_', " "),
        ),
    };
    let drift = w.drift_ppm.map_or("-".into(), |d| format!("{d:+.2}ppm"));
    writeln!(
        out,
        "  {start:<30} {length:>8} {lo:>12} {mid:>12} {hi:>12} {width:>10} {drift:>10} {:>13}",
        format!("{}/{}", w.samples_forward, w.samples_reverse)
    )
}

/// An offset to the microsecond however large (a 37 s TAI offset keeps its fraction).
fn offset_text(ns: i64) -> String {
    if ns.unsigned_abs() < 1_000_000 {
        signed_ns(ns)
    } else if ns.unsigned_abs() < 1_000_000_000 {
        format!("{:+.1}us", ns as f64 / 1e3)
    } else {
        format!("{:+.6}s", ns as f64 / 1e9)
    }
}
