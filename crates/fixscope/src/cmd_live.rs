//! `fixscope live`: the kernel's TC hooks through the BPF ring, through the one driver loop.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use fixscope_core::report::Reporter;
use fixscope_core::shutdown::Shutdown;
use fixscope_core::Pipeline;
use fixscope_live::{ConsumerPriority, LiveConfig, LiveError, LiveSource, SocketHooks};

use crate::cli::LiveArgs;
use crate::driver::{drive_with, RunLimits};
use crate::output;
use crate::privilege;
use crate::records::RecordsFile;
use crate::say;
use crate::trace::TraceFile;
use crate::tui::{self, Tui};

pub fn run(args: &LiveArgs) -> Result<ExitCode> {
    let mut config = args.live_config()?;
    let mut pipeline = Pipeline::new(crate::cli_protocol::checked(
        crate::cli_tls::with_followed_keys(
            &args.tls.tls_keylog,
            config.tls_uprobes,
            fixscope_core::PipelineConfig {
                breakdown: args.breakdown,
                breakdown_role: args.analysis.role,
                ..args.analysis.pipeline_config()?
            },
        )?,
    )?);
    let stop = Shutdown::on_signals().context("cannot install signal handlers")?;
    // A service's SIGHUP (logrotate) reopens the log files (reopen.rs) and never ends the
    // run: by default it would, without detaching.
    let _hangup = crate::reopen::Hangup::register().context("cannot install signal handlers")?;
    // `--tui` without a terminal is an error, said before anything is attached: the
    // figures would otherwise come in a format the user did not ask for.
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
    let control = RunControl {
        duration: args.duration_s.map(Duration::from_secs_f64),
        verbose: args.analysis.verbose,
        trace: args.analysis.trace.clone(),
        records: args.analysis.records.clone(),
    };
    // Resolved before anything is attached, so a typo costs nothing.
    let target = match &args.relinquish {
        Some(user) => Some(privilege::resolve(user)?),
        None => None,
    };
    if target.is_some() && config.priority == ConsumerPriority::Yield {
        // The guard thread loses CAP_SYS_NICE with the drop: it lifts the consumer by
        // RLIMIT_NICE instead, or the consumer never yields.
        if let Err(why) = privilege::allow_nice_zero() {
            say::info(format!(
                "note: with -Z the consumer runs at normal priority: {why:#}"
            ));
            config.priority = ConsumerPriority::Normal;
        }
    }
    let code = run_attached(
        &config,
        &mut pipeline,
        &control,
        &stop,
        &mut reporters,
        &mut |source| match &target {
            Some(t) => relinquish(t, source),
            None => Ok(()),
        },
        screen.as_mut(),
    )?;
    output::flush_stdout();
    Ok(code)
}

/// `-Z`: becomes the user with only what the rest of the run needs (see privilege.rs).
fn relinquish(target: &privilege::Target, source: &LiveSource) -> Result<()> {
    let capture = source.capture();
    let mut keep = privilege::Keep::default();
    if capture.attach_kind() == "tc" {
        keep.caps
            .push((privilege::CAP_NET_ADMIN, "to remove the tc filters at exit"));
    }
    if privilege::bpf_needs_cap_bpf()? {
        // This kernel gates every bpf() command, even on our own fds (counters, TCX
        // detach), on CAP_BPF (kernel.unprivileged_bpf_disabled before Linux 6.5).
        keep.caps.push((
            privilege::CAP_BPF,
            "this kernel checks it for bpf() on our own maps (unprivileged_bpf_disabled)",
        ));
    }
    keep.leave_sched_idle = capture.priority() == ConsumerPriority::Yield;
    let done = privilege::relinquish(target, &keep)?;
    say::info(done);
    Ok(())
}

/// How long a live run lasts and what it writes besides the report.
pub struct RunControl {
    pub duration: Option<Duration>,
    pub verbose: bool,
    pub trace: Option<PathBuf>,
    /// `--records`: every order kept as Parquet.
    pub records: crate::cli_records::RecordsArgs,
}

/// Attaches, calls `on_attached`, and runs until a signal, `q`, the duration, or the
/// interface going away; then detaches and prints the final report.
pub fn run_with(
    config: &LiveConfig,
    pipeline: &mut Pipeline,
    control: &RunControl,
    stop: &Shutdown,
    reporter: &mut dyn Reporter,
    on_attached: &mut dyn FnMut(),
) -> Result<ExitCode> {
    run_attached(
        config,
        pipeline,
        control,
        stop,
        reporter,
        &mut |_| {
            on_attached();
            Ok(())
        },
        None,
    )
}

/// [`run_with`] whose hook sees the attached source and may fail (the run then ends, and
/// dropping the source detaches), showing the run in the terminal UI when given.
fn run_attached(
    config: &LiveConfig,
    pipeline: &mut Pipeline,
    control: &RunControl,
    stop: &Shutdown,
    reporter: &mut dyn Reporter,
    on_attached: &mut dyn FnMut(&LiveSource) -> Result<()>,
    mut tui: Option<&mut Tui>,
) -> Result<ExitCode> {
    let trace = match &control.trace {
        Some(path) => Some(TraceFile::attach(path, pipeline)?),
        None => None,
    };
    let records = RecordsFile::attach(&control.records, pipeline, true)?;
    let mut source = LiveSource::open(config).map_err(explain)?;
    on_attached(&source)?;
    announce(config, &source, control.verbose);
    if let Some(tui) = tui.as_deref_mut() {
        tui.set_title(format!(
            "{} port(s) {} as {} via {}",
            config.iface,
            config.ports,
            config.role,
            source.capture().attach_kind()
        ));
    }
    let limits = RunLimits {
        stop,
        duration: control.duration,
        max_drain: crate::driver::MAX_DRAIN,
    };
    let code = drive_with(&mut source, pipeline, reporter, &limits, tui)?;
    if let Some(trace) = trace {
        trace.finish()?;
    }
    if let Some(records) = records {
        records.finish()?;
    }
    let unread = source.unread_records_at_exit();
    if unread > 0 {
        say::warn(format!(
            "{unread} captured records were still unread {} s after the stop and are left out \
             of every figure (unread_records_at_exit): the consumer was that far behind",
            crate::driver::MAX_DRAIN.as_secs()
        ));
    }
    let drops = source.kernel_counters().ring_drops();
    if drops > 0 {
        say::warn(format!(
            "the kernel dropped {drops} records because the ring was full (raise --ring-mb)"
        ));
    }
    Ok(code)
}

/// What was attached, and how the consumer runs.
fn announce(config: &LiveConfig, source: &LiveSource, verbose: bool) {
    let capture = source.capture();
    say::info(format!(
        "watching {} port(s) {} as {} via {}; Ctrl-C to stop",
        config.iface,
        config.ports,
        config.role,
        capture.attach_kind()
    ));
    if verbose {
        say::info(format!(
            "ifindex {}, ring {} MiB (wakeup at {} KiB queued), idle {:?}, cpu {:?}, priority {:?}",
            capture.ifindex(),
            config.ring_bytes >> 20,
            config.wakeup_threshold_bytes >> 10,
            config.idle,
            config.cpu,
            capture.priority()
        ));
    }
    if let Some(why) = capture.priority_fallback() {
        say::info(format!("note: consumer runs at normal priority: {why}"));
    }
    if verbose {
        if let Some(hooks) = capture.breakdown_socket_hooks() {
            let how = match hooks {
                SocketHooks::Fentry => "fentry/fexit on tcp_recvmsg/tcp_sendmsg",
                SocketHooks::Tracepoints => {
                    "the socket tracepoints (this kernel refuses BPF trampolines; a write is \
                     timed once it holds the socket lock)"
                }
            };
            say::info(format!("--breakdown: socket calls via {how}"));
        }
    }
    for (lib, functions) in capture.tls_uprobe_libraries() {
        say::info(format!(
            "--tls-uprobes: {} in {}",
            functions.join(", "),
            lib.display()
        ));
    }
    // What --breakdown could not hook here, and which stages that leaves unmeasured.
    for limit in capture.breakdown_limits() {
        say::warn(limit);
    }
}

/// Adds what a user can do about the common failures.
fn explain(e: LiveError) -> anyhow::Error {
    let hint = match &e {
        LiveError::NoSuchInterface(_) => " (see `ip link` for the interfaces of this host)",
        LiveError::NoBtfOrBpf(_) => " (needs Linux 5.15+ with BPF ring buffers)",
        // No hint: keep the error itself, so libbpf's cause prints in the chain.
        _ => return anyhow::Error::new(e),
    };
    anyhow::anyhow!("{e}{hint}")
}

#[cfg(test)]
mod tests {
    use fixscope_core::source::counters_of;
    use fixscope_live::{KernelIntervalCounters, LiveCounters};

    /// Every counter the live source reports is documented where users look it up.
    #[test]
    fn every_live_counter_is_in_the_json_docs() {
        let doc = include_str!("../../../docs/output-json.md");
        // With --breakdown's counters, which are absent without it.
        let all = LiveCounters {
            breakdown: Some(fixscope_live::BreakdownCounters::default()),
            tls_uprobes: Some(fixscope_live::TlsUprobeCounters::default()),
            ..LiveCounters::default()
        };
        let names: Vec<String> = counters_of(&all)
            .into_iter()
            .chain(counters_of(&KernelIntervalCounters::default()))
            .map(|(name, _)| name)
            .collect();
        assert!(names.len() >= 20, "{names:?}");
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
