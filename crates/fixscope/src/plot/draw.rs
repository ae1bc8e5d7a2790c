//! The two charts, drawn with `plotters` on any backend (SVG text, PNG bitmap):
//! latency by percentile on a 1/(1-p) axis, and latency over time (interval p50, p99, max).
//!
//! The font is embedded (DejaVu Sans Mono, `assets/fonts/`): a server without fonts draws
//! the same picture.

use std::sync::Once;

use anyhow::{anyhow, Result};
use fixscope_core::correlate::Stage;
use fixscope_core::report::human_ns;
use plotters::coord::combinators::WithKeyPoints;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
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

/// Line colours, one per drawn series in order (stages of the first input first): two
/// inputs of four stages each get eight colours.
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

/// How one input's lines are drawn: its own colour per stage and, from the second input
/// on, its own dash, so runs stay apart where their colours would repeat.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Look {
    colour: RGBColor,
    /// (dash, gap) in pixels; `None`: solid.
    dash: Option<(u32, u32)>,
}

impl Look {
    fn new(series: usize, input: usize) -> Look {
        const DASHES: [Option<(u32, u32)>; 3] = [None, Some((10, 5)), Some((3, 4))];
        Look {
            colour: COLOURS[series % COLOURS.len()],
            dash: DASHES[input % DASHES.len()],
        }
    }
}

/// Which series a chart draws: every (input, stage) with data among `stages`, with its
/// look (the same in both charts).
fn series<'a>(
    data: &'a [PlotData],
    stages: &'a [Stage],
) -> impl Iterator<Item = (Look, &'a PlotData, Stage)> + 'a {
    data.iter()
        .enumerate()
        .flat_map(move |(k, d)| stages.iter().map(move |&s| (k, d, s)))
        .filter(|(_, d, s)| {
            let s = d.stage(*s);
            s.count > 0 || s.intervals.iter().any(|p| p.max_ns.is_some())
        })
        .enumerate()
        .map(|(i, (k, d, s))| (Look::new(i, k), d, s))
}

/// Draws one line of `look` and `width`, with a legend entry when `label` is given.
fn draw_line<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    points: Vec<(f64, f64)>,
    look: Look,
    width: u32,
    label: Option<String>,
) -> Result<()>
where
    DB: DrawingBackend + 'a,
    DB::ErrorType: 'static,
    CT: CoordTranslate<From = (f64, f64)>,
{
    let style = look.colour.stroke_width(width);
    let anno = match look.dash {
        None => chart
            .draw_series(LineSeries::new(points, style))
            .map_err(err)?,
        Some((dash, gap)) => chart
            .draw_series(DashedLineSeries::new(points, dash, gap, style))
            .map_err(err)?,
    };
    if let Some(label) = label {
        let (dash, gap) = look.dash.unwrap_or((24, 0));
        anno.label(label).legend(move |(x, y)| {
            DashedPathElement::new(vec![(x, y), (x + 24, y)], dash, gap, style)
        });
    }
    Ok(())
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

/// The latency axis around `values`, log scale: labelled at 1, 2 and 5 times a power of
/// ten over up to 2.5 decades, at decades (every few, at most 8) over more; a light line
/// at every 1…9 × 10^k. (plotters' own log ticks label every 1…9 × 10^k over one to two
/// decades: 800us, 900us and 1ms overlap.)
pub(crate) fn latency_axis(values: &[u64]) -> WithKeyPoints<LogCoord<f64>> {
    let range = log_range(values);
    let (bold, light) = latency_ticks(&range);
    range
        .log_scale()
        .with_key_points(bold)
        .with_light_points(light)
}

/// The labelled and the light values of [`latency_axis`] within `range`.
pub(crate) fn latency_ticks(range: &std::ops::Range<f64>) -> (Vec<f64>, Vec<f64>) {
    let decades = (range.end / range.start).log10();
    let mantissas: &[u32] = if decades <= 2.5 { &[1, 2, 5] } else { &[1] };
    // Decades between labels: at most 8 of them.
    let step = ((decades / 8.0).ceil() as i32).max(1);
    let (lo, hi) = (
        range.start.log10().floor() as i32,
        range.end.log10().ceil() as i32,
    );
    let (mut bold, mut light) = (Vec::new(), Vec::new());
    for e in lo..=hi {
        let p = 10f64.powi(e);
        light.extend(
            (1..=9u32)
                .map(|m| f64::from(m) * p)
                .filter(|v| range.contains(v)),
        );
        if e.rem_euclid(step) == 0 {
            bold.extend(
                mantissas
                    .iter()
                    .map(|&m| f64::from(m) * p)
                    .filter(|v| range.contains(v)),
            );
        }
    }
    (bold, light)
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
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, WithKeyPoints<LogCoord<f64>>>>,
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
        .build_cartesian_2d(0f64..MAX_NINES, latency_axis(&values))
        .map_err(err)?;
    percentile_mesh(&mut chart)?;
    for (look, d, stage) in series(data, stages) {
        let s = d.stage(stage);
        if s.percentiles.is_empty() {
            continue;
        }
        let colour = look.colour;
        let mut label = name(data, d, stage);
        if s.over_range > 0 {
            label.push_str(&format!(" ({} above -x)", s.over_range));
        }
        let points = s
            .percentiles
            .iter()
            .map(|&(q, v)| (nines(q), v as f64))
            .collect();
        draw_line(&mut chart, points, look, 2, Some(label))?;
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
        .build_cartesian_2d(0f64..seconds * 1.02, latency_axis(&values))
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("seconds from the start")
        .y_desc("latency")
        .y_label_formatter(&|y| human_ns(*y))
        .label_style((FONT, 14))
        .draw()
        .map_err(err)?;
    for (look, d, stage) in series(data, stages) {
        let s = d.stage(stage);
        if s.intervals.iter().all(|p| p.max_ns.is_none()) {
            continue;
        }
        let t0 = start(d);
        let colour = look.colour;
        let label = name(data, d, stage);
        let line = |pick: fn(&super::model::IntervalPoint) -> Option<u64>| {
            s.intervals
                .iter()
                .filter_map(move |p| pick(p).map(|v| (p.end_unix_s - t0, v as f64)))
        };
        draw_line(&mut chart, line(|p| p.p50_ns).collect(), look, 1, None)?;
        chart
            .draw_series(line(|p| p.max_ns).map(|xy| Circle::new(xy, 3, colour.filled())))
            .map_err(err)?;
        // One legend entry per series (the line styles are in the caption).
        draw_line(
            &mut chart,
            line(|p| p.p99_ns).collect(),
            look,
            3,
            Some(label),
        )?;
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

    #[test]
    fn latency_ticks_are_1_2_5_on_short_ranges_and_decades_on_long_ones() {
        // 100us … 1ms with margins (issue #36: 800us, 900us and 1ms overlapped).
        let (bold, light) = latency_ticks(&log_range(&[100_000, 1_000_000]));
        assert_eq!(bold, vec![1e5, 2e5, 5e5, 1e6]);
        assert!(light.contains(&9e5) && light.contains(&7e4), "{light:?}");
        let (bold, _) = latency_ticks(&log_range(&[10, 10_000_000]));
        assert_eq!(bold, vec![1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7]);
        // 1 ns … 1000 s: every other decade.
        let (bold, _) = latency_ticks(&log_range(&[1, 1_000_000_000_000]));
        assert!(bold.len() <= 8, "{bold:?}");
        assert!(bold.windows(2).all(|w| w[1] / w[0] == 100.0), "{bold:?}");
        // Never fewer than two labels (the range is a decade at least).
        let (bold, _) = latency_ticks(&log_range(&[300_000, 310_000]));
        assert!(bold.len() >= 2, "{bold:?}");
    }
}
