//! The checks a run makes of its settings before it starts (ranges, addresses, URLs), made
//! ahead of it: for `config check`, and for a run with `--config`, whose errors are then
//! told at the file's line (`config_args::Resolved::locate`). Nothing is opened or attached.

use anyhow::Result;

use crate::cli::{AnalysisArgs, Command};

/// Every check `fixscope live`/`pcap`/`report`/`compare`/`plot` makes of its flags alone.
pub fn check(command: &Command) -> Result<()> {
    match command {
        Command::Live(args) => {
            let mut args = args.clone();
            analysis(&mut args.analysis)?;
            if args.tap.tap {
                args.tap_config()?;
            } else {
                args.live_config()?;
            }
            Ok(())
        }
        Command::Pcap(args) => {
            analysis(&mut args.analysis.clone())?;
            if args.points.given() {
                args.points.settings()?;
            }
            Ok(())
        }
        Command::Report(args) => args.window().map(|_| ()),
        Command::Compare(args) => args.sides().map(|_| ()),
        Command::Plot(args) => args.stages().map(|_| ()),
        _ => Ok(()),
    }
}

fn analysis(args: &mut AnalysisArgs) -> Result<()> {
    args.resolve_ports()?;
    args.pipeline_config()?;
    args.prometheus_listen()?;
    args.prometheus_settings()?;
    if let Some(url) = &args.records.clickhouse {
        crate::records::check_clickhouse_url(url)?;
    }
    Ok(())
}
