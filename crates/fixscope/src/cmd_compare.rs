//! `fixscope compare BASELINE CANDIDATE`: did latency change? Reads each side's runs
//! (captures through the pipeline, `--hlog` logs), compares them with `fixscope-compare`,
//! prints the table (text or JSON), draws the curves, and exits as a CI gate wants:
//! 0 nothing worse, 3 something worse, 4 with `--strict` when a cell could not be decided,
//! 1 on an error (2 for usage, from clap).

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::CommandFactory;
use fixscope_compare::{compare, Run, Verdict};
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
    let comparison = compare(&sides[0], &sides[1], &settings);
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
