//! `--full` and `--counters`: how much the text report shows (#35), for every command that
//! prints one (pcap, live, demo, report).

use clap::Args;

/// How much the text report shows. The default is one screen: one line per interval, and
/// a summary of the stage table, the slowest first responses and the counters that are not
/// zero and matter; JSON, HTML, hlog, Prometheus and the TUI always hold everything.
#[derive(Args, Debug, Clone, Default)]
pub struct TextArgs {
    /// The full text report: every stage in each interval line, every stage's slowest
    /// orders, the session layer's table per session, every counter, the histogram.
    #[arg(long)]
    pub full: bool,
    /// Which counters the text summary lists: `notable` (alarms and unusual counts that
    /// are not zero) or `all` (every counter, as `--full` does).
    #[arg(
        long,
        value_enum,
        default_value = "notable",
        value_name = "notable|all"
    )]
    pub counters: CountersShown,
}

/// `--counters`: which counters the text summary lists.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CountersShown {
    #[default]
    Notable,
    All,
}

impl TextArgs {
    /// The text reporter's options; `color` when stdout is a terminal that wants it.
    pub fn options(&self, color: bool) -> fixscope_core::report::text::TextOptions {
        fixscope_core::report::text::TextOptions {
            full: self.full,
            all_counters: self.full || self.counters == CountersShown::All,
            color,
        }
    }
}
