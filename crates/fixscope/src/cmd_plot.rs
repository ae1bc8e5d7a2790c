//! `fixscope plot INPUT… -o OUT.svg|OUT.png`: the percentile distribution and latency over
//! time of captures, fixscope's JSON output and HdrHistogram logs, one image with both charts.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context, Result};
use fixscope_core::shutdown::Shutdown;
use plotters::prelude::*;

use crate::cli::PlotArgs;
use crate::plot::draw::{draw_both, CHART_SIZE};
use crate::plot::input::{self, InputKind};
use crate::plot::PlotData;

pub fn run(args: &PlotArgs) -> Result<ExitCode> {
    let stages = args.stages()?;
    let format = ImageFormat::of(&args.output)?;
    let stop = Shutdown::on_signals().context("cannot install signal handlers")?;
    let mut data = Vec::new();
    for path in &args.inputs {
        let d = match input::detect(path)? {
            InputKind::Capture => {
                let analysis = args.analysis().with_context(|| {
                    format!("{} is a capture: -p/--port is needed", path.display())
                })?;
                input::from_capture(path, &analysis, &stop)?
            }
            InputKind::Json => input::from_json(path)?,
            InputKind::HdrLog => input::from_hdr_log(path)?,
        };
        if d.is_empty() {
            bail!("{}: no latencies to plot", path.display());
        }
        data.push(d);
    }
    // The legend names each input by its file name; by the path given when two share one
    // (before/run.json, after/run.json).
    let mut names: Vec<&str> = data.iter().map(|d| d.label.as_str()).collect();
    names.sort_unstable();
    if names.windows(2).any(|w| w[0] == w[1]) {
        for (d, path) in data.iter_mut().zip(&args.inputs) {
            d.label = path.display().to_string();
        }
    }
    render(&data, &stages, &args.output, format)?;
    Ok(ExitCode::SUCCESS)
}

/// What `-o` writes, from its extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageFormat {
    Svg,
    Png,
}

impl ImageFormat {
    pub fn of(path: &Path) -> Result<Self> {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("svg") => Ok(ImageFormat::Svg),
            Some("png") => Ok(ImageFormat::Png),
            _ => bail!("-o {}: the file must end in .svg or .png", path.display()),
        }
    }
}

/// Both charts, stacked, into `out`.
pub fn render(
    data: &[PlotData],
    stages: &[fixscope_core::correlate::Stage],
    out: &Path,
    format: ImageFormat,
) -> Result<()> {
    let size = (CHART_SIZE.0, CHART_SIZE.1 * 2);
    let context = || format!("cannot write {}", out.display());
    match format {
        ImageFormat::Svg => {
            let area = SVGBackend::new(out, size).into_drawing_area();
            draw_both(&area, data, stages)?;
            area.present()
                .map_err(|e| anyhow!("{e}"))
                .with_context(context)?;
        }
        ImageFormat::Png => {
            let area = BitMapBackend::new(out, size).into_drawing_area();
            draw_both(&area, data, stages)?;
            area.present()
                .map_err(|e| anyhow!("{e}"))
                .with_context(context)?;
        }
    }
    Ok(())
}
