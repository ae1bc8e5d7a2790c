//! `--html FILE`: a self-contained HTML report written at every summary (the end of a run,
//! or SPACE live): the tables, both charts as inline SVG, the slowest orders, the counters
//! with their meanings, the command and the source. A [`Reporter`] like the others, so it
//! composes with text, JSON and the rest in one `Fanout`.
//!
//! | file | concern |
//! |---|---|
//! | `mod.rs` | the reporter and what it knows of the run |
//! | `page.rs` | the document |
//! | `meanings.rs` | counter meanings, read from docs/output-json.md |
//! | `feeds.rs`, `hops.rs`, `points.rs`, `session_layer.rs` | the sections of `--md`, `--leg`, `--point` and the session layer |

mod feeds;
mod hops;
pub(crate) mod markup;
mod meanings;
mod page;
mod points;
mod session_layer;

use std::io;
use std::path::PathBuf;

use clap::Parser;
use fixscope_core::correlate::Stage;
use fixscope_core::report::{IntervalReport, Reporter, SummaryReport};

use crate::cli::{Cli, Command};
use crate::plot::collect::PlotCollector;
use crate::plot::draw::{svg_string, Chart};
use crate::plot::model::IntervalPoint;

/// What the report says about where its figures come from.
#[derive(Clone, Debug)]
pub struct RunInfo {
    /// The command line, as typed (arguments with spaces quoted).
    pub command: String,
    /// `capture a.pcap, b.pcap` or `interface eth0`.
    pub source: String,
}

impl RunInfo {
    /// This process's command line and the source it names.
    pub fn of_this_process() -> Self {
        let args: Vec<String> = std::env::args().collect();
        let command = args
            .iter()
            .map(|a| {
                if a.is_empty() || a.contains(|c: char| c.is_whitespace() || "'\"$`\\".contains(c))
                {
                    format!("'{}'", a.replace('\'', r"'\''"))
                } else {
                    a.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(" ");
        let source = match Cli::try_parse_from(&args).map(|c| c.command) {
            Ok(Command::Pcap(p)) => format!(
                "capture {}",
                p.captures
                    .iter()
                    .map(|c| c.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Ok(Command::Live(l)) => format!("interface {}", l.iface),
            Ok(Command::Demo(_)) => "interface lo (demo)".into(),
            Ok(Command::Report(r)) => format!(
                "HdrHistogram log {}",
                r.logs
                    .iter()
                    .map(|l| l.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            _ => "?".into(),
        };
        RunInfo { command, source }
    }
}

/// Writes the report to a file at every summary.
pub struct HtmlReporter {
    path: PathBuf,
    run: RunInfo,
    plot: PlotCollector,
}

impl HtmlReporter {
    pub fn new(path: PathBuf, run: RunInfo) -> Self {
        let label = run.source.clone();
        HtmlReporter {
            path,
            run,
            plot: PlotCollector::new(label),
        }
    }
}

impl HtmlReporter {
    /// The latency-over-time series of a run that is not replayed through
    /// [`Reporter::interval`] (`fixscope report`: read from the logs), per stage.
    pub fn with_intervals(mut self, intervals: [Vec<IntervalPoint>; Stage::COUNT]) -> Self {
        for (stage, points) in Stage::EVERY.into_iter().zip(intervals) {
            self.plot.data.stage_mut(stage).intervals = points;
        }
        self
    }
}

impl Reporter for HtmlReporter {
    fn interval(&mut self, r: &IntervalReport<'_>) -> io::Result<()> {
        self.plot.interval(r)
    }

    fn summary(&mut self, r: &SummaryReport<'_>) -> io::Result<()> {
        self.plot.summary(r)?;
        let data = std::slice::from_ref(&self.plot.data);
        let stages = r.figures.shown_stages();
        let chart = |draw| svg_string(data, stages, draw).map_err(io::Error::other);
        let percentiles = chart(Chart::Percentiles)?;
        let over_time = chart(Chart::OverTime)?;
        let html = page::render(r, &self.run, &percentiles, &over_time);
        // Written whole to a temporary file then renamed: a reader never sees half a page.
        let tmp = self.path.with_extension("html.tmp");
        std::fs::write(&tmp, html)?;
        std::fs::rename(&tmp, &self.path)
    }
}
