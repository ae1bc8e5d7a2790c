//! `--link auto` on captures: before the run, discovery reads the first children (at most
//! `DISCOVER_CHILDREN`, and no further than [`MAX_PARENTS`] parents: a capture with few
//! children is not read twice whole) and the rule it finds (unique for ≥ 99% of them, on a parent tag
//! ≥ 99% distinct) is tried after `hops`, `11` and `526=11`. A capture can be read twice;
//! a live run keeps the three (`--link discover` on a capture of it names a fourth).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use fixscope_core::hops::{Discovery, LinkRule, LinkSpec, DISCOVER_CHILDREN};
use fixscope_core::prefetch::InlineCaptureSource;
use fixscope_core::shutdown::Shutdown;
use fixscope_core::source::{Flow, Polled, Source};
use fixscope_core::{Pipeline, PipelineConfig, PortSet};

use crate::say;

/// The pre-pass stops after this many parents, whatever the children.
const MAX_PARENTS: u64 = 5 * DISCOVER_CHILDREN;

/// `config` with the rule discovery adopts added to `auto`'s (unchanged when `--link` is
/// not `auto`, or discovery finds none beyond them).
pub fn adopt(
    mut config: PipelineConfig,
    captures: &[PathBuf],
    ports: &PortSet,
    stop: &Shutdown,
) -> Result<PipelineConfig> {
    if !config
        .hops
        .as_ref()
        .is_some_and(|h| h.link == LinkSpec::Auto)
    {
        return Ok(config);
    }
    // A capture on stdin or a pipe is read once: the run's.
    if !captures
        .iter()
        .all(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file()))
    {
        return Ok(config);
    }
    let mut probe = config.clone();
    if let Some(h) = probe.hops.as_mut() {
        h.link = LinkSpec::Discover;
    }
    probe.interval_ns = 0;
    let mut pipeline = Pipeline::new(probe);
    let mut source = InlineCaptureSource::new(captures.to_vec(), ports.clone(), stop.clone());
    let done = |p: &Pipeline| -> bool {
        p.hops()
            .and_then(|h| h.discovery.as_ref())
            .is_some_and(|d: &Discovery| {
                d.children >= DISCOVER_CHILDREN || d.parents_seen >= MAX_PARENTS
            })
    };
    loop {
        let polled = source.poll(Duration::ZERO, &mut |segment| {
            pipeline.on_segment(segment);
            if done(&pipeline) {
                Flow::Stop
            } else {
                Flow::Continue
            }
        });
        match polled {
            // A capture the run cannot read says so itself, in the run.
            Err(_) | Ok(Polled::Ended) => break,
            Ok(_) if done(&pipeline) || stop.is_triggered() => break,
            Ok(_) => {}
        }
    }
    let Some(discovery) = pipeline.hops().and_then(|h| h.discovery.as_ref()) else {
        return Ok(config);
    };
    let fixed = LinkRule::AUTO;
    let Some(&rule) = discovery.proposed().iter().find(|r| !fixed.contains(r)) else {
        return Ok(config);
    };
    say::info(format!(
        "--link auto: {rule} adopted after {} (discovery on the first {} children: --link discover)",
        fixed.map(|r| r.to_string()).join(", "),
        discovery.children
    ));
    let mut rules = fixed.to_vec();
    rules.push(rule);
    if let Some(h) = config.hops.as_mut() {
        h.link = LinkSpec::Rules(rules);
    }
    Ok(config)
}
