//! The two charts, drawn with `plotters` on any backend (SVG text, PNG bitmap):
//! latency by percentile on a 1/(1-p) axis, and latency over time (interval p50, p99, max).
//!
//! The font is embedded (DejaVu Sans Mono, `assets/fonts/`): a server without fonts draws
//! the same picture.

use std::sync::Once;

use anyhow::{anyhow, Result};
use fixscope_core::correlate::Stage;
use fixscope_core::report::human_ns;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

use super::model::{nines, PlotData, MAX_NINES};

/// The family every text uses; registered from the embedded font.
pub(crate) const FONT: &str = "sans-serif";
static FONT_BYTES: &[u8] = include_bytes!("../../assets/fonts/DejaVuSansMono.ttf");

/// Curves with fewer points than this get their points marked.
const SPARSE: usize = 20;

/// One chart's size in pixels.
pub const CHART_SIZE: (u32, u32) = (1000, 480);

/// Line colours, one per drawn series in order (stages of the first input first).
const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(214, 39, 40),
    RGBColor(23, 190, 207),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
];

/// Registers the embedded font (once per process).
pub fn init_font() -> Result<()> {
    static ONCE: Once = Once::new();
    let mut failed = false;
    ONCE.call_once(|| failed = register_font(FONT, FontStyle::Normal, FONT_BYTES).is_err());
    if failed {
        return Err(anyhow!("the embedded font cannot be read"));
    }
    Ok(())
}

/// Which series a chart draws: every (input, stage) with data, among `stages`.
fn series<'a>(
    data: &'a [PlotData],
    stages: &'a [Stage],
) -> impl Iterator<Item = (usize, &'a PlotData, Stage)> + 'a {
    data.iter()
        .flat_map(move |d| stages.iter().map(move |&s| (d, s)))
        .enumerate()
        .map(|(i, (d, s))| (i, d, s))
}

fn name(data: &[PlotData], d: &PlotData, stage: Stage) -> String {
    if data.len() > 1 {
        format!("{} {}", d.label, stage.name())
    } else {
        stage.name().to_string()
    }
}

/// `2` nines → `99%`, `0` → `0%`, `0.5` → `68.4%`.
pub(crate) fn percent_label(n: f64) -> String {
    let pct = 100.0 * (1.0 - 10f64.powf(-n));
    let digits = if (n - n.round()).abs() < 1e-9 {
        (n.round() as usize).saturating_sub(2)
    } else {
        1
    };
    format!("{pct:.digits$}%")
}

/// The latency axis around `values` (1 ns without any), a decade at least.
pub(crate) fn log_range(values: &[u64]) -> std::ops::Range<f64> {
    let lo = values.iter().copied().min().unwrap_or(1);
    let hi = values.iter().copied().max().unwrap_or(1);
    let lo = (lo.max(1) as f64) / 1.5;
    let hi = (hi.max(1) as f64 * 1.5).max(lo * 10.0);
    lo..hi
}

/// Both charts' legend: upper left, on a light background.
pub(crate) fn draw_legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    chart
        .configure_series_labels()
        .label_font((FONT, 14))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(err)?;
    Ok(())
}

/// The grid and labels of a latency-by-percentile chart (the 1/(1-p) axis in nines).
pub(crate) fn percentile_mesh<'a, DB: DrawingBackend + 'a>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, LogCoord<f64>>>,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    chart
        .configure_mesh()
        .x_labels(6)
        .x_label_formatter(&|x| percent_label(*x))
        .y_label_formatter(&|y| human_ns(*y))
        .x_desc("percentile")
        .y_desc("latency")
        .label_style((FONT, 14))
        .draw()
        .map_err(err)?;
    Ok(())
}

pub(crate) fn err<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> anyhow::Error {
    anyhow!("drawing the chart: {e}")
}

/// Latency against percentile (0% … 99.999% on a 1/(1-p) axis), one line per input and
/// stage. A curve stops where its ranks go above the histogram's range; its legend says
/// how many latencies are above it.
pub fn draw_percentiles<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    data: &[PlotData],
    stages: &[Stage],
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    init_font()?;
    area.fill(&WHITE).map_err(err)?;
    let values = series(data, stages)
        .flat_map(|(_, d, s)| d.stage(s).percentiles.iter().map(|p| p.1))
        .collect::<Vec<_>>();
    let mut chart = ChartBuilder::on(area)
        .caption("Latency by percentile", (FONT, 22))
        .margin(12)
        .margin_right(40)
        .x_label_area_size(45)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..MAX_NINES, log_range(&values).log_scale())
        .map_err(err)?;
    percentile_mesh(&mut chart)?;
    for (i, d, stage) in series(data, stages) {
        let s = d.stage(stage);
        if s.percentiles.is_empty() {
            continue;
        }
        let colour = COLOURS[i % COLOURS.len()];
        let mut label = name(data, d, stage);
        if s.over_range > 0 {
            label.push_str(&format!(" ({} above -x)", s.over_range));
        }
        chart
            .draw_series(LineSeries::new(
                s.percentiles.iter().map(|&(q, v)| (nines(q), v as f64)),
                colour.stroke_width(2),
            ))
            .map_err(err)?
            .label(label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
            });
        // A curve of a few percentiles (read from JSON): mark the known points, the lines
        // between them are only a guide.
        if s.percentiles.len() < SPARSE {
            chart
                .draw_series(
                    s.percentiles
                        .iter()
                        .map(|&(q, v)| Circle::new((nines(q), v as f64), 4, colour.filled())),
                )
                .map_err(err)?;
        }
    }
    draw_legend(&mut chart)
}

/// Interval p50 (thin), p99 (thick) and max (dots) per input and stage, against seconds
/// from the input's first interval.
pub fn draw_over_time<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    data: &[PlotData],
    stages: &[Stage],
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    init_font()?;
    area.fill(&WHITE).map_err(err)?;
    let start = |d: &PlotData| {
        d.stages
            .iter()
            .filter_map(|s| s.intervals.first().map(|p| p.start_unix_s))
            .fold(f64::INFINITY, f64::min)
    };
    let mut values = Vec::new();
    let mut seconds = 1e-3f64;
    for (_, d, stage) in series(data, stages) {
        let t0 = start(d);
        for p in &d.stage(stage).intervals {
            values.extend([p.p50_ns, p.p99_ns, p.max_ns].into_iter().flatten());
            if p.max_ns.is_some() {
                seconds = seconds.max(p.end_unix_s - t0);
            }
        }
    }
    let mut chart = ChartBuilder::on(area)
        .caption(
            "Latency over time: interval p50 (thin), p99 (thick), max (dots)",
            (FONT, 20),
        )
        .margin(12)
        .margin_right(40)
        .x_label_area_size(45)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..seconds * 1.02, log_range(&values).log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("seconds from the start")
        .y_desc("latency")
        .y_label_formatter(&|y| human_ns(*y))
        .label_style((FONT, 14))
        .draw()
        .map_err(err)?;
    for (i, d, stage) in series(data, stages) {
        let s = d.stage(stage);
        if s.intervals.iter().all(|p| p.max_ns.is_none()) {
            continue;
        }
        let t0 = start(d);
        let colour = COLOURS[i % COLOURS.len()];
        let label = name(data, d, stage);
        let line = |pick: fn(&super::model::IntervalPoint) -> Option<u64>| {
            s.intervals
                .iter()
                .filter_map(move |p| pick(p).map(|v| (p.end_unix_s - t0, v as f64)))
        };
        chart
            .draw_series(LineSeries::new(line(|p| p.p50_ns), colour.stroke_width(1)))
            .map_err(err)?;
        chart
            .draw_series(line(|p| p.max_ns).map(|xy| Circle::new(xy, 3, colour.filled())))
            .map_err(err)?;
        // One legend entry per series (the line styles are in the caption).
        chart
            .draw_series(LineSeries::new(line(|p| p.p99_ns), colour.stroke_width(3)))
            .map_err(err)?
            .label(label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(3))
            });
    }
    draw_legend(&mut chart)
}

/// Both charts, stacked, on one area.
pub fn draw_both<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    data: &[PlotData],
    stages: &[Stage],
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let (top, bottom) = area.split_vertically(CHART_SIZE.1);
    draw_percentiles(&top, data, stages)?;
    draw_over_time(&bottom, data, stages)
}

/// Which chart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chart {
    Percentiles,
    OverTime,
}

/// One chart as an SVG document (for the HTML report).
pub fn svg_string(data: &[PlotData], stages: &[Stage], chart: Chart) -> Result<String> {
    let mut out = String::new();
    {
        let area = SVGBackend::with_string(&mut out, CHART_SIZE).into_drawing_area();
        match chart {
            Chart::Percentiles => draw_percentiles(&area, data, stages)?,
            Chart::OverTime => draw_over_time(&area, data, stages)?,
        }
        area.present().map_err(err)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_labels() {
        assert_eq!(percent_label(0.0), "0%");
        assert_eq!(percent_label(1.0), "90%");
        assert_eq!(percent_label(2.0), "99%");
        assert_eq!(percent_label(3.0), "99.9%");
        assert_eq!(percent_label(5.0), "99.999%");
    }
}
