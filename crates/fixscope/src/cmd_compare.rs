//! `fixscope compare BASELINE CANDIDATE`: did latency change? Reads each side's runs
//! (captures through the pipeline, `--hlog` logs), compares them with `fixscope-compare`,
//! prints the table (text or JSON), draws the curves, and exits as a CI gate wants:
//! 0 nothing worse, 3 something worse, 4 with `--strict` when a cell could not be decided,
//! 1 on an error (2 for usage, from clap).

use std::process::ExitCode;

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::CommandFactory;
use fixscope_compare::{compare, Comparison, Run, Settings, Verdict};
use fixscope_core::shutdown::Shutdown;

use crate::cli::{CompareArgs, Format};
use crate::compare::{chart, input, json, options, text};
use crate::say;

/// Something got worse.
pub const EXIT_WORSE: u8 = 3;
/// `--strict`: a cell was inconclusive or insufficient (and none worse).
pub const EXIT_UNDECIDED: u8 = 4;

pub fn run(args: &CompareArgs) -> Result<ExitCode> {
    // Which files make which side is a usage error (exit 2, with the usage, as clap's own).
    let files = args.sides().unwrap_or_else(|e| {
        let mut cli = crate::cli::Cli::command();
        let mut compare = cli
            .find_subcommand_mut("compare")
            .map(|c| c.clone().bin_name("fixscope compare"))
            .unwrap_or(cli);
        compare
            .error(clap::error::ErrorKind::ArgumentConflict, e)
            .exit()
    });
    let settings = options::settings(args)?;
    if let Some(path) = &args.output {
        // The image's kind before any reading.
        crate::cmd_plot::ImageFormat::of(path)?;
    }
    let by = args
        .by
        .as_deref()
        .map(options::GroupBy::parse)
        .transpose()?;
    let analysis = args.analysis();
    if let Some(a) = &analysis {
        // The flags' errors before any reading.
        a.pipeline_config()?;
    }
    let stop = Shutdown::on_signals().context("cannot install signal handlers")?;
    let mut sides: [Vec<Run>; 2] = [Vec::new(), Vec::new()];
    for (side, paths) in sides.iter_mut().zip(&files) {
        for path in paths {
            side.push(input::read_run(
                path,
                analysis.as_ref(),
                by,
                &settings,
                &stop,
            )?);
        }
    }
    let mut comparison = compare(&sides[0], &sides[1], &settings);
    comparison
        .warnings
        .extend(few_blocks_warnings(&comparison, &files, &settings));
    let report = text::render(&comparison);
    let object = json::render(&comparison);
    match args.stdout_format() {
        Format::Text => print!("{report}"),
        Format::Json => println!("{object}"),
    }
    if let Some(path) = &args.json_file {
        std::fs::write(path, format!("{object}\n"))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if args.output.is_some() || args.html.is_some() {
        let curves = chart::curves(&comparison, &sides);
        if let Some(path) = &args.output {
            chart::write_image(path, &curves, settings.confidence)?;
            say::info(format!("wrote {}", path.display()));
        }
        if let Some(path) = &args.html {
            let svg = chart::svg_string(&curves, settings.confidence)?;
            chart::write_html(path, &report, &svg, comparison.verdict().name())?;
            say::info(format!("wrote {}", path.display()));
        }
    }
    let t = &comparison.table;
    Ok(if t.count(Verdict::Worse) > 0 {
        ExitCode::from(EXIT_WORSE)
    } else if args.strict && t.count(Verdict::Inconclusive) + t.count(Verdict::Insufficient) > 0 {
        ExitCode::from(EXIT_UNDECIDED)
    } else {
        ExitCode::SUCCESS
    })
}

/// A side with fewer blocks than a band needs (every cell `insufficient`): how to get
/// enough, for the kind of files it has.
fn few_blocks_warnings(c: &Comparison, files: &[Vec<PathBuf>; 2], s: &Settings) -> Vec<String> {
    use crate::plot::input::{detect, InputKind};
    let mut out = Vec::new();
    for ((name, side), paths) in ["baseline", "candidate"].iter().zip(&c.sides).zip(files) {
        if side.blocks >= s.min_blocks {
            continue;
        }
        let kinds: Vec<Option<InputKind>> = paths.iter().map(|p| detect(p).ok()).collect();
        let duration = side.context.duration_s;
        let how = if kinds.iter().all(|k| *k == Some(InputKind::HdrLog)) {
            let r = nice_floor(duration / s.target_blocks as f64);
            let mut how = "a --hlog log holds one block per interval (-r, 1 s by default): write it with a shorter -r".to_string();
            if let Some((r, text)) = r {
                how.push_str(&format!(
                    " (`-r {text}` makes ~{:.0} blocks of these {duration:.1}s)",
                    duration / r
                ));
            }
            how + ", or record longer"
        } else if kinds.iter().all(|k| *k == Some(InputKind::Capture)) {
            format!(
                "the captures' watched ports carry traffic for {duration:.3}s and a block is at least 1 ms: record longer"
            )
        } else {
            "record longer, or write the --hlog logs with a shorter -r (one block per interval)"
                .to_string()
        };
        out.push(format!(
            "{name}: {} blocks of time, fewer than the {} a confidence band needs, so every cell is insufficient: {how}",
            side.blocks, s.min_blocks
        ));
    }
    out
}

/// The largest 1, 2 or 5 times a power of ten at most `x`, and its text (`0.05`).
fn nice_floor(x: f64) -> Option<(f64, String)> {
    if !(x.is_finite() && x > 0.0) {
        return None;
    }
    let e = x.log10().floor() as i32;
    let unit = 10f64.powi(e);
    let m = [5.0, 2.0, 1.0]
        .into_iter()
        .find(|m| m * unit <= x * (1.0 + 1e-9))
        .unwrap_or(1.0);
    let v = m * unit;
    Some((v, format!("{:.*}", (-e).max(0) as usize, v)))
}

#[cfg(test)]
mod tests {
    use super::nice_floor;

    #[test]
    fn nice_floor_rounds_down_to_1_2_5() {
        let text = |x: f64| nice_floor(x).map(|(_, t)| t);
        assert_eq!(text(0.0804).as_deref(), Some("0.05"));
        assert_eq!(text(0.2).as_deref(), Some("0.2"));
        assert_eq!(text(0.3).as_deref(), Some("0.2"));
        assert_eq!(text(1.0).as_deref(), Some("1"));
        assert_eq!(text(17.0).as_deref(), Some("10"));
        assert_eq!(text(0.0), None);
    }
}
