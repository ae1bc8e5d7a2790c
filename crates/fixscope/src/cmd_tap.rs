//! `fixscope live --tap`: a mirror (SPAN) port or tap captured with libpcap on a monitor
//! host, through the one driver loop — every output as in live mode.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use fixscope_core::shutdown::Shutdown;
use fixscope_core::Pipeline;
use fixscope_tap::TapSource;

use crate::cli::LiveArgs;
use crate::driver::{drive_with, RunLimits};
use crate::output;
use crate::privilege;
use crate::records::RecordsFile;
use crate::say;
use crate::trace::TraceFile;
use crate::tui::{self, Tui};

pub fn run(args: &LiveArgs) -> Result<ExitCode> {
    let config = args.tap_config()?;
    fixscope_core::wire_stamp::choose(args.tap.wire_timestamps);
    let mut pipeline = Pipeline::new(crate::cli_protocol::checked(
        crate::cli_tls::with_followed_keys(
            &args.tls.tls_keylog,
            false,
            args.analysis.pipeline_config()?,
        )?,
    )?);
    pipeline.set_timestamp_source(config.timestamps.name());
    let stop = Shutdown::on_signals().context("cannot install signal handlers")?;
    // A service's SIGHUP (logrotate) reopens the log files (reopen.rs) and never ends the
    // run: by default it would, without detaching.
    let _hangup = crate::reopen::Hangup::register().context("cannot install signal handlers")?;
    if args.tui {
        tui::check_terminal().map_err(|why| anyhow!(why))?;
    }
    let mut screen: Option<Tui> = None;
    let mut reporters = output::reporters_with(&args.analysis, |stdout| {
        if !args.tui {
            return stdout;
        }
        let (ui, feed) = Tui::new(stdout);
        screen = Some(ui);
        Box::new(feed)
    })?;
    let target = match &args.relinquish {
        Some(user) => Some(privilege::resolve(user)?),
        None => None,
    };
    let trace = match &args.analysis.trace {
        Some(path) => Some(TraceFile::attach(path, &mut pipeline)?),
        None => None,
    };
    let records = RecordsFile::attach(&args.analysis.records, &mut pipeline, true)?;
    let mut source = TapSource::open(&config)?;
    if let Some(target) = &target {
        // The capture sockets are open: nothing of the run needs a capability any more.
        say::info(privilege::relinquish(target, &privilege::Keep::default())?);
    }
    let what = format!(
        "{} port(s) {} as {} via libpcap on a mirror, {} time stamps",
        config.ifaces.join(","),
        config.ports,
        args.analysis.role,
        config.timestamps
    );
    say::info(format!("watching {what}; Ctrl-C to stop"));
    if let Some(ui) = screen.as_mut() {
        ui.set_title(what);
    }
    let limits = RunLimits {
        stop: &stop,
        duration: args.duration_s.map(Duration::from_secs_f64),
        max_drain: crate::driver::MAX_DRAIN,
    };
    let code = drive_with(
        &mut source,
        &mut pipeline,
        &mut reporters,
        &limits,
        screen.as_mut(),
    )?;
    if let Some(trace) = trace {
        trace.finish()?;
    }
    if let Some(records) = records {
        records.finish()?;
    }
    let tap = source.tap_counters();
    if tap.drops + tap.interface_drops > 0 {
        say::warn(format!(
            "the capture lost {} packets ({} in the socket buffer: raise --tap-buffer-mb; {} \
             in the interface or its driver): orders in them are missing or unmatched",
            tap.drops + tap.interface_drops,
            tap.drops,
            tap.interface_drops
        ));
    }
    output::flush_stdout();
    Ok(code)
}

#[cfg(test)]
mod tests {
    use fixscope_core::source::counters_of;
    use fixscope_tap::TapCounters;

    /// Every counter the tap source reports is documented where users look it up.
    #[test]
    fn every_tap_counter_is_in_the_json_docs() {
        let doc = include_str!("../../../docs/output-json.md");
        let names: Vec<String> = counters_of(&TapCounters::default())
            .into_iter()
            .map(|(name, _)| name)
            .chain([
                "capture_mirror_duplicates".to_string(),
                "timestamp_source".to_string(),
            ])
            .collect();
        assert_eq!(names.len(), 6, "{names:?}");
        let missing: Vec<_> = names
            .iter()
            .filter(|n| !doc.contains(&format!("`{n}`")))
            .collect();
        assert!(
            missing.is_empty(),
            "not in docs/output-json.md: {missing:?}"
        );
    }
}
