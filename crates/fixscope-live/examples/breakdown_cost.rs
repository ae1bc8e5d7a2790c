//! Holds a live capture on an interface — with or without `--breakdown`'s hooks — and
//! drains it (socket calls and segments, through `poll_captured`) for a while, then prints
//! the kernel's accounting of every program it loaded (BPF_ENABLE_STATS: run_time_ns /
//! run_cnt), the breakdown counters and its own CPU time. For scripts/bench-breakdown.sh.
//!
//! `sudo breakdown_cost <iface> <port> <seconds> [breakdown]`
//! Prints `READY` once attached, then at the end one `prog <name> <run_cnt> <run_time_ns>`
//! line per program, `cpu_ns <n>`, `events <n>`, `segments <n>` and the counters.

use std::io::Write;
use std::time::{Duration, Instant};

use fixscope_core::ports::PortSet;
use fixscope_core::source::{Captured, Flow};
use fixscope_live::{enable_bpf_stats, LiveCapture, LiveConfig};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        anyhow::bail!("usage: breakdown_cost <iface> <port> <seconds> [breakdown]");
    }
    let ports: PortSet = args[2].parse().map_err(|e| anyhow::anyhow!("{e}"))?;
    let secs: u64 = args[3].parse()?;
    let mut cfg = LiveConfig::new(args[1].clone(), ports);
    cfg.breakdown = args.get(4).map(String::as_str) == Some("breakdown");
    let _stats = enable_bpf_stats()?;
    let mut cap = LiveCapture::open(&cfg)?;
    for limit in cap.breakdown_limits() {
        eprintln!("{limit}");
    }
    println!("READY hooks={:?}", cap.breakdown_socket_hooks());
    std::io::stdout().flush()?;
    let cpu0 = cpu_ns();
    let (mut events, mut segments) = (0u64, 0u64);
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        cap.poll_captured(Duration::from_millis(100), &mut |c| {
            match c {
                Captured::Socket(_) => events += 1,
                Captured::Segment(_) => segments += 1,
                Captured::TlsCall(_) => {}
            }
            Flow::Continue
        })?;
    }
    let cpu = cpu_ns().saturating_sub(cpu0);
    for p in cap
        .program_stats()?
        .iter()
        .chain(&cap.breakdown_program_stats()?)
    {
        println!("prog {} {} {}", p.name, p.run_cnt, p.run_time_ns);
    }
    println!("cpu_ns {cpu}");
    println!("events {events}");
    println!("segments {segments}");
    println!("kernel {:?}", cap.counters()?);
    println!("breakdown {:?}", cap.breakdown_counters()?);
    cap.detach()?;
    Ok(())
}

/// This process's CPU time (all threads), from the scheduler's exact accounting.
fn cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}
