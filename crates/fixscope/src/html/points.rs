//! The page's two-point parts (`--point`): each two-point stage's row named by its points, a
//! one-way stage with its uncertainty (or only its bounds when withheld), and the clock's
//! table (`clock` in the JSON).

use std::fmt::Write;

use fixscope_core::correlate::Stage;
use fixscope_core::points::{signed_ns, ClockFigures};
use fixscope_core::report::SummaryReport;
use fixscope_core::stats::{Distribution, PERCENTILES};

use super::markup::{escape, stage_row, us};

/// A stage's row in the stage table: as every row, but a two-point stage named by its
/// points, and a one-way stage's figures ± the clock's uncertainty, or withheld.
pub fn stage_row_of(h: &mut String, clock: Option<&ClockFigures>, stage: Stage, d: &Distribution) {
    let key = format!("stages.{}", stage.name());
    let Some((clock, points)) = clock.and_then(|c| Some((c, c.points_of(stage)?))) else {
        return stage_row(h, stage.name(), &key, d);
    };
    let name = format!("{} {}", stage.name(), points.join("→"));
    let Some(u) = clock.uncertainty(stage) else {
        return stage_row(h, &name, &key, d);
    };
    if d.count > 0 {
        if let Some(allowed) = clock.withheld(stage, d.percentiles_ns[0]) {
            let bounds: Vec<String> = PERCENTILES
                .iter()
                .zip(d.percentiles_ns)
                .filter_map(|((_, label, _), p)| {
                    let p = p?;
                    Some(format!("{label} {}–{}", us(p.saturating_sub(u)), us(p + u)))
                })
                .collect();
            let _ = writeln!(
                h,
                "<tr class=\"warn\"><td class=\"l\">{}</td><td data-k=\"{key}.count\">{}</td>\
                 <td colspan=\"{}\" class=\"l\" data-k=\"{key}.withheld\">withheld: the clock's \
                 uncertainty ±{} µs is above the {} µs allowed; bounds (µs): {}</td></tr>",
                escape(&name),
                d.count,
                PERCENTILES.len() + 4,
                us(u),
                us(allowed),
                bounds.join(", ")
            );
            return;
        }
    }
    stage_row(h, &format!("{name} (±{} µs)", us(u)), &key, d);
}

/// The clock between the points.
pub fn clock(h: &mut String, r: &SummaryReport<'_>) {
    let Some(c) = r.figures.clock else {
        return;
    };
    let how = match c.fixed {
        None => "estimated from the segments both points saw".to_string(),
        Some((o, u)) => format!(
            "{} {} ± {} µs (checked against the estimate below)",
            c.mode,
            signed_ns(o),
            us(u)
        ),
    };
    let _ = writeln!(
        h,
        "<h2>Clock (<code>--point</code>)</h2>\n<p>offset {of} − {rel}: {how}; \
         <span data-k=\"clock.samples_forward\">{}</span> segments toward the acceptor, \
         <span data-k=\"clock.samples_reverse\">{}</span> away; \
         <span data-k=\"clock.near_acceptor\">{}</span> is nearer the acceptor.{}</p>",
        c.samples_forward,
        c.samples_reverse,
        escape(&c.near_acceptor),
        if c.tai_utc {
            " <b>The clocks are 37 s apart: one is TAI, the other UTC.</b>"
        } else {
            ""
        },
        of = escape(&c.of),
        rel = escape(&c.relative_to),
    );
    h.push_str(
        "<table><tr><th class=\"l\">window start (UTC)</th><th>length s</th><th>offset low µs</th>\
         <th>mid µs</th><th>high µs</th><th>width µs</th><th>drift ppm</th><th>samples →</th>\
         <th>samples ←</th></tr>\n",
    );
    for (i, w) in c.windows.iter().enumerate() {
        let k = format!("clock.windows.{i}");
        let cell = |v: Option<i64>, field: &str| match v {
            Some(v) => format!("<td data-k=\"{k}.{field}\">{:.3}</td>", v as f64 / 1e3),
            None => "<td>–</td>".into(),
        };
        let _ = writeln!(
            h,
            "<tr{}><td class=\"l\">{}{}</td><td>{:.3}</td>{}{}{}{}<td>{}</td><td>{}</td><td>{}</td></tr>",
            if w.transition { " class=\"warn\"" } else { "" },
            fixscope_core::report::utc(w.start_ns.max(0) as u64, 0),
            if w.transition { " (step)" } else { "" },
            (w.end_ns - w.start_ns) as f64 / 1e9,
            cell(w.middle.map(|m| m.0), "offset_lo_ns"),
            cell(w.middle.map(|m| m.0 + (m.1 - m.0) / 2), "offset_mid_ns"),
            cell(w.middle.map(|m| m.1), "offset_hi_ns"),
            cell(w.middle.map(|m| m.1 - m.0), "width_ns"),
            w.drift_ppm.map_or("–".into(), |d| format!("{d:+.3}")),
            w.samples_forward,
            w.samples_reverse
        );
    }
    h.push_str("</table>\n");
    for s in &c.steps {
        let _ = writeln!(
            h,
            "<p class=\"warn\">step at {}: {}{}</p>",
            fixscope_core::report::utc(s.at_ns.max(0) as u64, 0),
            signed_ns(s.size_ns),
            if s.tai_utc {
                " — 37 s: TAI against UTC"
            } else {
                ""
            }
        );
    }
}
