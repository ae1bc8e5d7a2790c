//! The comparison as text, in the manner of benchstat: an aligned table per stage and
//! group, `~` where the change is not significant, each side's context and the warnings.

use std::fmt::Write;

use fixscope_compare::{CellResult, Comparison, Group, PercentileResult, SideNotes, Verdict};
use fixscope_core::report::human_ns;

/// `+3.6%`, `-12.0%`.
pub fn change(ratio: f64) -> String {
    format!("{:+.1}%", (ratio - 1.0) * 100.0)
}

/// `0.999` → `p99.9`.
pub fn p_label(q: f64) -> String {
    format!("p{}", percent(q))
}

/// `0.999` → `99.9`.
pub fn percent(q: f64) -> String {
    let pct = (q * 100.0 * 1e6).round() / 1e6;
    format!("{pct}")
}

fn side_line(name: &str, s: &SideNotes) -> String {
    let c = &s.context;
    format!(
        "{name:<9}  {}: {} orders in {:.2}s ({:.0}/s), {} blocks of {}, timed out {}, late {}, unanswered {} ({:.2}%)",
        s.labels.join(" "),
        c.requests,
        c.duration_s,
        c.order_rate(),
        s.blocks,
        human_ns(s.block_s * 1e9),
        c.timed_out,
        c.late,
        c.unanswered,
        c.unanswered_share() * 100.0
    )
}

/// The title of a cell's table: `first_response`, `first_response · D`,
/// `first_response · session CLIENT1->EXCH`.
pub fn cell_title(c: &CellResult) -> String {
    match &c.key.group {
        Group::All => c.key.stage.name().to_string(),
        Group::Type(t) => format!("{} · {}", c.key.stage.name(), t.msg_type()),
        Group::Session(s) => format!("{} · session {s}", c.key.stage.name()),
        Group::Tag { tag, value } => format!("{} · {tag}={value}", c.key.stage.name()),
    }
}

/// The verdict column: the verdict and what would decide it.
pub fn verdict_text(p: &PercentileResult) -> String {
    match (p.verdict, p.orders_needed, &p.note) {
        (Verdict::Inconclusive, Some(n), _) => {
            format!("inconclusive (~{n} orders per side would decide)")
        }
        (Verdict::Inconclusive, None, _) => "inconclusive (the change is at the threshold)".into(),
        (Verdict::Insufficient, n, note) => {
            let mut s = "insufficient".to_string();
            if let Some(note) = note {
                let _ = write!(s, ": {note}");
            }
            if let Some(n) = n {
                let _ = write!(s, " (needs {n} orders per side)");
            }
            s
        }
        (v, _, _) => v.name().to_string(),
    }
}

/// The change column: `~` when the band holds 1 (no significant change).
fn change_text(p: &PercentileResult) -> String {
    match (p.ratio, p.ci_low, p.ci_high) {
        (Some(_), Some(lo), Some(hi)) if lo <= 1.0 && hi >= 1.0 => "~".into(),
        (Some(r), Some(_), Some(_)) => change(r),
        _ => String::new(),
    }
}

fn band_text(p: &PercentileResult) -> String {
    match (p.ci_low, p.ci_high) {
        (Some(lo), Some(hi)) => format!("{} … {}", change(lo), change(hi)),
        _ => String::new(),
    }
}

/// A side's percentile as reports print it: `-` without latencies, `>100.0us` when its
/// rank falls above the histogram's range (`-x`).
fn value(v: Option<u64>, count: u64, range_ns: Option<u64>) -> String {
    match (v, range_ns) {
        (Some(v), _) => human_ns(v as f64),
        (None, Some(range)) if count > 0 => format!(">{}", human_ns(range as f64)),
        (None, _) => "-".into(),
    }
}

/// The band's line: how many cells it covers and its critical value, or that none could
/// be judged.
fn band_line(c: &Comparison) -> String {
    let s = &c.settings;
    let t = &c.table;
    let family = if t.judged == 0 {
        "no cell could be judged".to_string()
    } else {
        let widening = t.t_df.map_or(String::new(), |df| {
            format!(", t-widened for {df:.0} degrees of freedom")
        });
        format!(
            "{}% band held over the whole table ({} cell{}, max-T critical value {:.2}{widening})",
            percent(s.confidence),
            t.judged,
            if t.judged == 1 { "" } else { "s" },
            t.critical,
        )
    };
    format!(
        "{family}; threshold ±{}%; {} resamples; seed {}",
        percent(s.threshold),
        s.resamples,
        s.seed
    )
}

/// The whole text report.
pub fn render(c: &Comparison) -> String {
    let s = &c.settings;
    let t = &c.table;
    let mut out = String::new();
    let _ = writeln!(out, "{}", side_line("baseline", &c.sides[0]));
    let _ = writeln!(out, "{}", side_line("candidate", &c.sides[1]));
    let _ = writeln!(out, "{}", band_line(c));
    let band = format!("{}% band", percent(s.confidence));
    for cell in &t.cells {
        let mut rows: Vec<[String; 6]> = vec![[
            cell_title(cell),
            "baseline".into(),
            "candidate".into(),
            "change".into(),
            band.clone(),
            "verdict".into(),
        ]];
        for p in &cell.percentiles {
            rows.push([
                format!("  {}", p_label(p.q)),
                value(
                    p.baseline_ns,
                    cell.baseline_count,
                    c.sides[0].context.range_ns,
                ),
                value(
                    p.candidate_ns,
                    cell.candidate_count,
                    c.sides[1].context.range_ns,
                ),
                change_text(p),
                band_text(p),
                verdict_text(p),
            ]);
        }
        let widths: Vec<usize> = (0..6)
            .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
            .collect();
        out.push('\n');
        for r in &rows {
            let mut line = String::new();
            for (i, field) in r.iter().enumerate() {
                let pad = widths[i] - field.chars().count();
                if i == 0 || i == 5 {
                    line.push_str(field);
                    if i == 0 {
                        line.push_str(&" ".repeat(pad));
                    }
                } else {
                    // Numbers right-aligned, as benchstat does.
                    line.push_str(&" ".repeat(pad));
                    line.push_str(field);
                }
                if i < 5 {
                    line.push_str("  ");
                }
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }
    out.push('\n');
    for w in &c.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    let counts: Vec<String> = [
        Verdict::Worse,
        Verdict::Better,
        Verdict::Same,
        Verdict::Inconclusive,
        Verdict::Insufficient,
    ]
    .iter()
    .map(|&v| (v, t.count(v)))
    .filter(|&(_, n)| n > 0)
    .map(|(v, n)| format!("{n} {}", v.name()))
    .collect();
    let _ = writeln!(
        out,
        "verdict: {} ({})",
        c.verdict().name(),
        counts.join(", ")
    );
    out
}
