//! `fixscope pcap --point A=… --point B=…` (#32): one session seen at two points.
//!
//! Three reads, each of what it needs: (1) both points' segments, paired into the clock's
//! samples, which tell which point is nearer the acceptor and the offset between the
//! clocks; (2) the far point's orders, through a pipeline of their own; (3) the near
//! point, through the one driver loop and every reporter, its first responses joined with
//! the far orders (the two-point stages).

use std::cell::RefCell;
use std::path::PathBuf;
use std::process::ExitCode;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use fixscope_core::points::{
    FarMessages, FarOrderSink, FarOrders, PointSpec, PointsSetup, SegmentStamps,
};
use fixscope_core::ports::PortSet;
use fixscope_core::prefetch::InlineCaptureSource;
use fixscope_core::shutdown::Shutdown;
use fixscope_core::source::{Flow, Polled, Source};
use fixscope_core::{Pipeline, PipelineConfig};

use crate::cli::PcapArgs;
use crate::driver::{drive, RunLimits};
use crate::say;

pub fn run(args: &PcapArgs) -> Result<ExitCode> {
    let (a, b, settings) = args.points.settings()?;
    if !args.analysis.legs.legs.is_empty() {
        bail!("--point and --leg measure different things: give one of them");
    }
    for path in a.files.iter().chain(&b.files) {
        let meta =
            std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
        // Each point is read more than once (its segments, then its orders).
        if !meta.is_file() {
            bail!(
                "--point: {} is not a regular file (a pipe or stdin cannot be read twice): \
                 write the capture to a file first",
                path.display()
            );
        }
    }
    fixscope_core::wire_stamp::choose(args.wire_timestamps);
    let stop = Shutdown::on_signals().context("cannot install signal handlers")?;
    let ports = &args.analysis.ports;
    let stamps_a = stamps(a, ports, &stop)?;
    let stamps_b = stamps(b, ports, &stop)?;
    let mut setup = PointsSetup::build(&a.name, &b.name, &stamps_a, &stamps_b, settings)
        .map_err(anyhow::Error::msg)?;
    drop((stamps_a, stamps_b));
    let (near, far) = if setup.b_near { (b, a) } else { (a, b) };
    let config = args.analysis.pipeline_config()?;
    if config.protocols.any_binary() {
        anyhow::bail!("--point is not available on binary order sessions yet (docs/protocols.md)");
    }
    let traced = args.analysis.trace.is_some();
    (setup.far, setup.far_messages) = far_orders(&far.files, ports, config.clone(), traced, &stop)?;
    let mut config = config;
    config.timestamp_source = crate::cmd_pcap::wire_clock(&near.files);
    config.points = Some(Arc::new(setup));
    crate::cmd_pcap::run_one(args, near.files.clone(), config, &stop)
}

/// Every segment of a point's captures on the watched ports, by identity.
fn stamps(point: &PointSpec, ports: &PortSet, stop: &Shutdown) -> Result<SegmentStamps> {
    let mut source = InlineCaptureSource::new(point.files.clone(), ports.clone(), stop.clone());
    let mut stamps = SegmentStamps::default();
    loop {
        let polled = source
            .poll(Duration::ZERO, &mut |seg| {
                stamps.add(seg);
                Flow::Continue
            })
            .map_err(|e| anyhow::anyhow!("point {}: {e}", point.name))?;
        if polled == Polled::Ended || stop.is_triggered() {
            break;
        }
    }
    if stamps.segments == 0 {
        say::warn(format!(
            "point {}: no TCP segment on the watched ports",
            point.name
        ));
    }
    Ok(stamps)
}

/// The far point's answered orders, read by a pipeline of their own (no report); with
/// `--trace`, its messages too.
fn far_orders(
    files: &[PathBuf],
    ports: &PortSet,
    config: PipelineConfig,
    traced: bool,
    stop: &Shutdown,
) -> Result<(FarOrders, Option<FarMessages>)> {
    let mut pipeline = Pipeline::new(config);
    let (sink, orders) = FarOrderSink::new();
    pipeline.set_record_sink(Box::new(sink));
    let messages = Rc::new(RefCell::new(FarMessages::default()));
    if traced {
        let seen = Rc::clone(&messages);
        pipeline.set_message_observer(Box::new(move |e| seen.borrow_mut().observe(e)));
    }
    let mut source = InlineCaptureSource::new(files.to_vec(), ports.clone(), stop.clone());
    let mut silent = fixscope_core::report::Fanout::new();
    let limits = RunLimits {
        stop,
        duration: None,
        max_drain: crate::driver::MAX_DRAIN,
    };
    drive(&mut source, &mut pipeline, &mut silent, &limits)?;
    drop(pipeline);
    let orders = Rc::try_unwrap(orders)
        .map_err(|_| anyhow::anyhow!("the far point's orders are still borrowed"))?;
    let messages = Rc::try_unwrap(messages)
        .map_err(|_| anyhow::anyhow!("the far point's messages are still borrowed"))?;
    Ok((orders.into_inner(), traced.then(|| messages.into_inner())))
}
