//! `fixscope check`: prints what `fixscope_live::check::KernelCheck` found — every probe,
//! the loads that decide, and what would run — as text or JSON.

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::Result;
use fixscope_live::check::KernelCheck;
use fixscope_live::probe::{Feature, NeededFor, Presence};

use crate::cli::CheckArgs;

pub fn run(args: &CheckArgs) -> Result<ExitCode> {
    let check = KernelCheck::run();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&check)?);
    } else {
        print!("{}", render(&check));
    }
    Ok(if check.capture_works() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn mark(p: &Presence) -> String {
    match p {
        Presence::Yes => "yes".to_string(),
        Presence::No => "NO".to_string(),
        Presence::Unknown(why) => format!("unknown ({why})"),
    }
}

fn feature_lines(out: &mut String, features: &[Feature]) {
    for f in features {
        let need = match f.needed_for {
            NeededFor::Capture => "required",
            NeededFor::CaptureOptional => "optional",
            NeededFor::Breakdown => "--breakdown",
        };
        let _ = writeln!(
            out,
            "  {:<4} {} [Linux >= {}, {need}]",
            mark(&f.present),
            f.name,
            f.since
        );
    }
}

fn bytes(v: Option<u64>) -> String {
    v.map_or_else(|| "unlimited".to_string(), |b| format!("{} KiB", b / 1024))
}

/// The text report (one screen: probes, loads, verdict).
pub fn render(c: &KernelCheck) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "kernel {}{} (the version is shown, never compared: every answer below is probed)",
        c.kernel_release,
        if c.preempt_rt { ", PREEMPT_RT" } else { "" }
    );
    if let Some(p) = &c.privilege_problem {
        let _ = writeln!(
            out,
            "privileges: {p} (the probes that need them say `unknown (needs root)`)"
        );
    }
    out.push_str("live capture needs:\n");
    feature_lines(&mut out, &c.capture_features);
    if let Some((soft, hard)) = c.memlock_limit {
        let _ = writeln!(
            out,
            "  RLIMIT_MEMLOCK: soft {}, hard {} (raised at start when BPF memory is charged to it)",
            bytes(soft),
            bytes(hard)
        );
    }
    out.push_str("--breakdown needs:\n");
    feature_lines(&mut out, &c.breakdown_features);
    if let Some((n, flags)) = c.tcp_recvmsg_args {
        let _ = writeln!(
            out,
            "  tcp_recvmsg takes {n} arguments here, flags at {flags} (from the kernel's BTF)"
        );
    }
    out.push_str("loading the real programs (not attached):\n");
    for l in &c.loads {
        if l.loaded {
            let progs: Vec<String> = l
                .programs
                .iter()
                .map(|p| format!("{} {} insns", p.name, p.insns))
                .collect();
            let _ = writeln!(out, "  ok   {}: {}", l.what, progs.join(", "));
        } else {
            let _ = writeln!(
                out,
                "  FAIL {}: {}",
                l.what,
                l.error.as_deref().unwrap_or("")
            );
        }
    }
    let attach = match c.attach_mode.as_str() {
        "tcx" => "TCX links (--attach auto)",
        "tc" => "clsact qdisc + tc filters (--attach auto falls back: no TCX)",
        // Nothing loaded because this process may not: that says nothing of the kernel.
        _ if c.privilege_problem.is_some() => {
            "unknown: the programs cannot be loaded without privileges (run `sudo fixscope check`)"
        }
        _ => "none: live capture cannot run on this kernel",
    };
    let _ = writeln!(out, "would run: attach mode {attach}");
    for f in c.missing_for_capture() {
        let _ = writeln!(out, "  missing: {}", f.describe());
    }
    match (&c.breakdown_hooks, &c.breakdown_error) {
        (Some(h), _) => {
            let _ = writeln!(out, "would run: --breakdown with {h}");
        }
        (None, e) => {
            let _ = writeln!(
                out,
                "would run: no --breakdown ({})",
                e.as_deref().unwrap_or("")
            );
        }
    }
    out
}
