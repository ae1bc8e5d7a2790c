//! `fixscope demo`: the whole tool in one command — the built-in exchange and client talk
//! FIX over loopback while `fixscope live` measures them from the kernel's TC hooks; at the
//! end fixscope's figures are set beside the exchange's own ground truth.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::ExitCode;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use fixscope_core::correlate::Stage;
use fixscope_core::recorder::Distribution;
use fixscope_core::report::text::{percentile_text, TextOptions, TextReporter};
use fixscope_core::report::{human_ns, IntervalReport, Reporter, SummaryReport};
use fixscope_core::shutdown::Shutdown;
use fixscope_core::{Pipeline, PortSet};
use fixscope_sim::{run_client, run_exchange, ClientArgs, ExchangeArgs};
use tempfile::TempDir;

use crate::cli::{AnalysisArgs, DemoArgs};
use crate::cmd_live::{run_with, RunControl};
use crate::output;
use crate::say;

pub fn run(args: &DemoArgs) -> Result<ExitCode> {
    if !(args.duration > 0.0 && args.duration <= 3600.0) {
        anyhow::bail!(
            "--duration must be greater than 0 and at most 3600 seconds, got {}",
            args.duration
        );
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        anyhow::bail!("the demo attaches eBPF programs to lo and needs root: run `sudo make demo`");
    }
    let stop = Shutdown::on_signals()?;
    let dir = work_dir_in(&std::env::temp_dir())?;
    let truth_path = dir.path().join("exchange-truth.csv");

    // 1. The exchange, on an ephemeral port of 127.0.0.1.
    let exchange_args = ExchangeArgs::from_flags([
        "--listen",
        "127.0.0.1:0",
        "--ack-delay",
        &args.ack_delay,
        "--fill-delay",
        &args.fill_delay,
        "--truth",
        truth_path.to_str().context("temporary path is not UTF-8")?,
    ])?;
    let (addr_tx, addr_rx) = mpsc::channel();
    let exchange_stop = Shutdown::new();
    let exchange = {
        let stop = exchange_stop.clone();
        thread::spawn(move || {
            run_exchange(&exchange_args, &stop, |addr| {
                let _ = addr_tx.send(addr);
            })
        })
    };
    let addr = addr_rx
        .recv_timeout(Duration::from_secs(10))
        .map_err(|_| anyhow!("the simulated exchange did not start"))?;

    // 2. fixscope live on lo for that port; 3. the client starts once we are attached.
    let mut analysis = AnalysisArgs::demo(PortSet::single(addr.port()));
    analysis.html = Some(args.html.clone());
    analysis.text = args.text.clone();
    let live_args = crate::cli::LiveArgs::demo(analysis.clone());
    let mut config = live_args.live_config()?;
    config.iface = "lo".into();
    // The demo shows the in-host breakdown too (`--breakdown`): each slow order's time
    // split into wire → read → app → write → wire.
    config.breakdown = true;
    let mut pipeline = Pipeline::new(fixscope_core::PipelineConfig {
        breakdown: true,
        breakdown_role: analysis.role,
        ..analysis.pipeline_config()?
    });
    let control = RunControl {
        duration: Some(Duration::from_secs_f64(args.duration + 1.0)),
        verbose: false,
        trace: None,
        records: Default::default(),
    };
    say::info(format!(
        "demo: exchange on {addr} (ack delay {}, fill delay {}); client: {} sessions, {} orders/s for {}s",
        args.ack_delay, args.fill_delay, args.sessions, args.rate, args.duration
    ));
    let client_args = ClientArgs::from_flags([
        "--connect".to_string(),
        addr.to_string(),
        "--sessions".into(),
        args.sessions.to_string(),
        "--rate".into(),
        args.rate.to_string(),
        "--duration".into(),
        args.duration.to_string(),
        "--pad".into(),
        "60".into(),
    ])?;
    let mut client: Option<thread::JoinHandle<Result<fixscope_sim::ClientReport>>> = None;
    let client_stop = stop.clone();
    // The summary waits until the figures have been set beside the truth: the answer
    // first, then the details (#35).
    let held_summary = Arc::new(Mutex::new(Vec::new()));
    let text_options = analysis.text.options(output::stdout_wants_color());
    let mut reporter = output::reporters_with(&analysis, |stdout| {
        Box::new(SummaryLater {
            intervals: stdout,
            options: text_options,
            held: Arc::clone(&held_summary),
        })
    })?;
    let outcome = run_with(
        &config,
        &mut pipeline,
        &control,
        &stop,
        &mut reporter,
        &mut || {
            let args = client_args.clone();
            let stop = client_stop.clone();
            client = Some(thread::spawn(move || run_client(&args, &stop)));
        },
    );
    drop(reporter);
    let client_report = client.map(|c| c.join());
    exchange_stop.trigger();
    let exchange_summary = exchange.join();
    let outcome = outcome?;
    let client_report = match client_report {
        Some(Ok(r)) => Some(r?),
        Some(Err(_)) => return Err(anyhow!("the simulated client panicked")),
        None => None,
    };
    match exchange_summary {
        Ok(r) => {
            r?;
        }
        Err(_) => return Err(anyhow!("the simulated exchange panicked")),
    }
    compare_with_truth(&pipeline, &truth_path, client_report.as_ref())?;
    {
        let held = held_summary.lock().unwrap_or_else(|e| e.into_inner());
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(&held)?;
        stdout.flush()?;
    }
    let html = std::path::absolute(&args.html).unwrap_or_else(|_| args.html.clone());
    println!(
        "\nHTML report (tables, charts, slowest orders; opens offline): {}",
        html.display()
    );
    let dir_path = dir.path().to_path_buf();
    if let Err(e) = dir.close() {
        say::warn(format!("demo: cannot remove {}: {e}", dir_path.display()));
    }
    output::flush_stdout();
    Ok(outcome)
}

/// The stdout reporter of the demo: interval lines as they come, the summary written to
/// `held` to be printed after the comparison with the truth.
struct SummaryLater {
    intervals: Box<dyn Reporter>,
    options: TextOptions,
    held: Arc<Mutex<Vec<u8>>>,
}

impl Reporter for SummaryLater {
    fn interval(&mut self, report: &IntervalReport<'_>) -> std::io::Result<()> {
        self.intervals.interval(report)
    }
    fn summary(&mut self, report: &SummaryReport<'_>) -> std::io::Result<()> {
        let mut text = TextReporter::with_options(Vec::new(), self.options);
        text.summary(report)?;
        *self.held.lock().unwrap_or_else(|e| e.into_inner()) = text.into_inner();
        Ok(())
    }
}

/// Prints fixscope's ack and fill latencies beside the exchange's own (ground truth) and
/// the load client's (round trips from its socket, write() to read()).
fn compare_with_truth(
    pipeline: &Pipeline,
    truth_path: &Path,
    client: Option<&fixscope_sim::ClientReport>,
) -> Result<()> {
    let truth = fixscope_sim::truth::read_truth(truth_path)?;
    let mut ack: Vec<u64> = truth
        .iter()
        .filter_map(|t| t.ack_ns.map(|a| a.saturating_sub(t.request_ns)))
        .collect();
    let mut fill: Vec<u64> = truth
        .iter()
        .filter_map(|t| t.fill_ns.map(|f| f.saturating_sub(t.request_ns)))
        .collect();
    ack.sort_unstable();
    fill.sort_unstable();
    println!(
        "\n--- fixscope (kernel TC hooks) vs the exchange's own clock (ground truth) and the client's ---"
    );
    println!(
        "{:<8} {:>22} {:>10} {:>10} {:>10} {:>10}",
        "stage", "source", "orders", "p50", "p99", "max"
    );
    for (stage, exact) in [(Stage::Ack, &ack), (Stage::Fill, &fill)] {
        let d = pipeline.stats().cumulative(stage).distribution();
        let pct = |v: &[u64], q: f64| -> String {
            if v.is_empty() {
                return "-".into();
            }
            let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
            human_ns(v[rank - 1] as f64)
        };
        println!(
            "{:<8} {:>22} {:>10} {:>10} {:>10} {:>10}",
            stage.name(),
            "exchange (truth)",
            exact.len(),
            pct(exact, 0.5),
            pct(exact, 0.99),
            exact.last().map_or("-".into(), |&m| human_ns(m as f64))
        );
        println!(
            "{:<8} {:>22} {:>10} {:>10} {:>10} {:>10}",
            "",
            "fixscope (wire)",
            d.count,
            percentile_text(&d, 0),
            percentile_text(&d, 2),
            human_ns(d.max_ns as f64)
        );
        let basis = client.and_then(|c| c.stage(stage.name(), "from write"));
        if let Some(c) = basis.filter(|c| c.count > 0) {
            println!(
                "{:<8} {:>22} {:>10} {:>10} {:>10} {:>10}",
                "",
                "client (its socket)",
                c.count,
                human_ns(c.p50_ns as f64),
                human_ns(c.p99_ns as f64),
                human_ns(c.max_ns as f64)
            );
        }
    }
    let ack_p99 = |v: &[u64]| {
        let rank = ((0.99 * v.len() as f64).ceil() as usize).clamp(1, v.len().max(1));
        v.get(rank - 1).copied()
    };
    let wire = pipeline.stats().cumulative(Stage::Ack).distribution();
    let breakdown: Vec<(Stage, Distribution)> = [Stage::WireToRead, Stage::WriteToWire]
        .into_iter()
        .map(|s| (s, pipeline.stats().cumulative(s).distribution()))
        .collect();
    println!(
        "{}",
        explain_gap(ack_p99(&ack), wire.percentiles_ns[2], &breakdown)
    );
    Ok(())
}

/// What the in-host breakdown says about the difference between fixscope's ack p99 (the
/// wire's) and the exchange's own (`truth_p99_ns`): the exchange's clock runs from its
/// read() to its write(), the wire's from the request entering the host to the response
/// leaving it, and `wire_to_read` and `write_to_wire` are the two stretches between —
/// named with their own figures, the larger first. Nothing is claimed that the run did
/// not measure.
fn explain_gap(
    truth_p99_ns: Option<u64>,
    wire_p99_ns: Option<u64>,
    breakdown: &[(Stage, Distribution)],
) -> String {
    let mut s = String::from(
        "fixscope sees the request when it enters the host and the response when it leaves; \
         the exchange's clock runs from its read() to its write()",
    );
    if let (Some(t), Some(w)) = (truth_p99_ns, wire_p99_ns) {
        let gap = w as f64 - t as f64;
        let sign = if gap < 0.0 { "-" } else { "+" };
        s.push_str(&format!(
            " (ack p99 {} vs {}: {sign}{})",
            human_ns(w as f64),
            human_ns(t as f64),
            human_ns(gap.abs())
        ));
    }
    let mut measured: Vec<&(Stage, Distribution)> =
        breakdown.iter().filter(|(_, d)| d.count > 0).collect();
    if measured.is_empty() {
        s.push_str(
            ". The in-host breakdown measured nothing here (see the warnings above), so \
             where the difference lies is not measured.",
        );
        return s;
    }
    // Above range (`None`) is the largest.
    measured.sort_by_key(|(_, d)| std::cmp::Reverse(d.percentiles_ns[2].unwrap_or(u64::MAX)));
    let parts: Vec<String> = measured
        .iter()
        .map(|(stage, d)| {
            format!(
                "{} p99 {} ({})",
                stage.name(),
                percentile_text(d, 2),
                what_the_stage_is(*stage)
            )
        })
        .collect();
    s.push_str(&format!(
        ". The in-host breakdown splits the difference: {}. The difference lies mostly in {}.",
        parts.join("; "),
        measured[0].0.name()
    ));
    s
}

/// The time a breakdown stage outside the exchange's own clock stands for.
fn what_the_stage_is(stage: Stage) -> &'static str {
    match stage {
        Stage::WireToRead => {
            "the request waiting in the host until the exchange read it: its socket queue \
             while the exchange was busy, and the reading thread's wake-up"
        }
        Stage::WriteToWire => {
            "the response's way from the exchange's write() through the kernel's TCP/IP path \
             to the wire"
        }
        _ => "inside the exchange",
    }
}

/// The demo's working directory under `base`: a fresh name, created exclusively with mode
/// 0700 (a predictable path such as `/tmp/fixscope-demo-PID`, created as root and accepted
/// if it existed, could be a symlink another user planted). Removed when dropped, so an
/// error on the way leaves nothing behind either.
fn work_dir_in(base: &Path) -> Result<TempDir> {
    tempfile::Builder::new()
        .prefix("fixscope-demo-")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir_in(base)
        .with_context(|| format!("cannot create a working directory in {}", base.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_dir_is_fresh_private_and_removed() {
        let base = tempfile::tempdir().unwrap();
        // What the old code would have used, planted as a symlink to a directory of ours.
        let target = base.path().join("elsewhere");
        std::fs::create_dir(&target).unwrap();
        let planted = base
            .path()
            .join(format!("fixscope-demo-{}", std::process::id()));
        std::os::unix::fs::symlink(&target, &planted).unwrap();

        let a = work_dir_in(base.path()).unwrap();
        let b = work_dir_in(base.path()).unwrap();
        assert_ne!(a.path(), b.path());
        for d in [&a, &b] {
            assert_ne!(d.path(), planted.as_path());
            let meta = std::fs::symlink_metadata(d.path()).unwrap();
            assert!(meta.is_dir() && !meta.file_type().is_symlink());
            assert_eq!(meta.permissions().mode() & 0o777, 0o700, "{:?}", d.path());
        }
        std::fs::write(a.path().join("exchange-truth.csv"), "x").unwrap();
        let a_path = a.path().to_path_buf();
        a.close().unwrap();
        assert!(!a_path.exists(), "the working directory is removed");
        assert_eq!(
            std::fs::read_dir(&target).unwrap().count(),
            0,
            "nothing written through the symlink"
        );
    }
}
