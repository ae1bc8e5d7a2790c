//! Pictures of a comparison: per stage (all orders), the baseline's and the candidate's
//! percentile curves, each with its confidence band, on the 1/(1-p) axis `fixscope plot`
//! uses — where the bands part, the runs differ. As SVG or PNG (`-o`) and inside an HTML page
//! (`--html`).

use std::path::Path;

use anyhow::{anyhow, Context, Result};
use fixscope_compare::{curve, CellKey, Comparison, CurvePoint, Group, Run};
use fixscope_core::correlate::Stage;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::cmd_plot::ImageFormat;
use crate::plot::draw::{draw_legend, err, init_font, latency_axis, percentile_mesh, FONT};
use crate::plot::model::{nines, MAX_NINES};

/// One stage's panel in pixels.
const PANEL: (u32, u32) = (1000, 380);
/// Points along the percentile axis.
const POINTS: usize = 120;
const BASELINE: RGBColor = RGBColor(31, 119, 180);
const CANDIDATE: RGBColor = RGBColor(214, 39, 40);

/// Both sides' curves of one stage.
pub struct StageCurves {
    pub stage: Stage,
    pub sides: [Vec<CurvePoint>; 2],
}

/// The curves of every stage that has all-orders cells on both sides.
pub fn curves(c: &Comparison, sides: &[Vec<Run>; 2]) -> Vec<StageCurves> {
    // From p1 (p0 is the minimum: one order, no band worth drawing) up the 1/(1-p) axis.
    let qs: Vec<f64> = std::iter::once(0.01)
        .chain(
            (1..=POINTS)
                .map(|i| 1.0 - 10f64.powf(-MAX_NINES * i as f64 / POINTS as f64))
                .filter(|&q| q > 0.01),
        )
        .collect();
    c.table
        .cells
        .iter()
        .filter(|cell| {
            cell.key.group == Group::All && cell.baseline_count > 0 && cell.candidate_count > 0
        })
        .map(|cell| {
            let key = CellKey {
                group: Group::All,
                stage: cell.key.stage,
            };
            StageCurves {
                stage: cell.key.stage,
                sides: [0, 1].map(|i| curve(&sides[i], &key, &qs, &c.settings)),
            }
        })
        .collect()
}

/// Draws the panels, one under another, on `area`.
pub fn draw<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    curves: &[StageCurves],
    confidence: f64,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    init_font()?;
    area.fill(&WHITE).map_err(err)?;
    let panels = area.split_evenly((curves.len().max(1), 1));
    for (panel, c) in panels.iter().zip(curves) {
        let values: Vec<u64> = c
            .sides
            .iter()
            .flatten()
            .flat_map(|p| [p.low_ns, p.high_ns])
            .collect();
        // The axis ends half a nine past the last percentile with enough orders beyond it.
        let last = c
            .sides
            .iter()
            .filter_map(|s| s.last())
            .map(|p| nines(p.q))
            .fold(2.0f64, f64::max);
        let x_max = ((last * 2.0).ceil() / 2.0 + 0.5).min(MAX_NINES);
        let mut chart = ChartBuilder::on(panel)
            .caption(
                format!(
                    "{}: baseline and candidate by percentile, {}% bands",
                    c.stage.name(),
                    super::text::percent(confidence)
                ),
                (FONT, 20),
            )
            .margin(12)
            .margin_right(40)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..x_max, latency_axis(&values))
            .map_err(err)?;
        percentile_mesh(&mut chart)?;
        for (points, colour, name) in [
            (&c.sides[0], BASELINE, "baseline"),
            (&c.sides[1], CANDIDATE, "candidate"),
        ] {
            if points.is_empty() {
                continue;
            }
            // The band: up along its top, back along its bottom.
            let outline: Vec<(f64, f64)> = points
                .iter()
                .map(|p| (nines(p.q), p.high_ns as f64))
                .chain(points.iter().rev().map(|p| (nines(p.q), p.low_ns as f64)))
                .collect();
            chart
                .draw_series(std::iter::once(Polygon::new(
                    outline,
                    colour.mix(0.2).filled(),
                )))
                .map_err(err)?;
            chart
                .draw_series(LineSeries::new(
                    points.iter().map(|p| (nines(p.q), p.value_ns as f64)),
                    colour.stroke_width(2),
                ))
                .map_err(err)?
                .label(name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
                });
        }
        draw_legend(&mut chart)?;
    }
    Ok(())
}

fn size(curves: &[StageCurves]) -> (u32, u32) {
    (PANEL.0, PANEL.1 * curves.len().max(1) as u32)
}

/// `-o FILE.svg` or `-o FILE.png`.
pub fn write_image(path: &Path, curves: &[StageCurves], confidence: f64) -> Result<()> {
    let context = || format!("cannot write {}", path.display());
    match ImageFormat::of(path)? {
        ImageFormat::Svg => {
            let area = SVGBackend::new(path, size(curves)).into_drawing_area();
            draw(&area, curves, confidence)?;
            area.present()
                .map_err(|e| anyhow!("{e}"))
                .with_context(context)
        }
        ImageFormat::Png => {
            let area = BitMapBackend::new(path, size(curves)).into_drawing_area();
            draw(&area, curves, confidence)?;
            area.present()
                .map_err(|e| anyhow!("{e}"))
                .with_context(context)
        }
    }
}

/// The SVG as text (for the HTML page).
pub fn svg_string(curves: &[StageCurves], confidence: f64) -> Result<String> {
    let mut svg = String::new();
    {
        let area = SVGBackend::with_string(&mut svg, size(curves)).into_drawing_area();
        draw(&area, curves, confidence)?;
        area.present().map_err(|e| anyhow!("{e}"))?;
    }
    Ok(svg)
}

/// `--html FILE`: the text report and the pictures, one self-contained page.
pub fn write_html(path: &Path, text: &str, svg: &str, verdict: &str) -> Result<()> {
    let page = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>fixscope compare: {verdict}</title>\n<style>body{{font-family:sans-serif;margin:2em}}pre{{background:#f6f6f6;padding:1em;overflow-x:auto}}</style></head>\n<body><h1>fixscope compare: {verdict}</h1>\n<pre>{}</pre>\n{svg}\n</body></html>\n",
        crate::html::markup::escape(text)
    );
    std::fs::write(path, page).with_context(|| format!("cannot write {}", path.display()))
}
