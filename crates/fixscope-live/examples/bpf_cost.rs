//! Measures the kernel-side cost of the capture programs per hooked packet, from the
//! kernel's own accounting (BPF_ENABLE_STATS: run_time_ns / run_cnt per program).
//!
//! `sudo bpf_cost [exchanges] [message_bytes] [ring_mib]` (defaults 20000, 300, 64: the
//! capture's default `--ring-mb`, all CPUs' rings together) runs a request/response
//! ping-pong of FIX-sized messages over 127.0.0.1 twice: once with the server port watched
//! (every data packet copied to the ring) and once with another port watched (all packets
//! parsed and filtered out), while a consumer drains the ring.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use fixscope_core::ports::PortSet;
use fixscope_core::source::Flow;
use fixscope_live::{enable_bpf_stats, LiveCapture, LiveConfig};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let exchanges: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(20_000);
    let msg_len: usize = args
        .get(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(300)
        .max(16);
    let ring_mib: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(64);
    let _stats = enable_bpf_stats()?;
    for watched in [true, false] {
        run(exchanges, msg_len, ring_mib, watched)?;
    }
    Ok(())
}

fn run(exchanges: usize, msg_len: usize, ring_mib: usize, watched: bool) -> anyhow::Result<()> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let watch = if watched {
        port
    } else {
        port.wrapping_add(1).max(1)
    };
    let mut cfg = LiveConfig::new("lo", PortSet::single(watch));
    cfg.ring_bytes = ring_mib << 20;
    cfg.wakeup_threshold_bytes = cfg.ring_bytes / 4;
    let cap = LiveCapture::open(&cfg)?;

    let server = std::thread::spawn(move || -> std::io::Result<()> {
        let (mut s, _) = listener.accept()?;
        s.set_nodelay(true)?;
        let mut buf = vec![0u8; msg_len];
        let resp = vec![b'R'; msg_len];
        while s.read_exact(&mut buf).is_ok() {
            s.write_all(&resp)?;
        }
        Ok(())
    });

    // Drain the ring on its own thread, like the real consumer.
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    let consumer = std::thread::spawn(move || -> anyhow::Result<(LiveCapture, u64)> {
        let mut cap = cap;
        let mut seen = 0u64;
        loop {
            cap.poll(Duration::from_millis(5), &mut |_| {
                seen += 1;
                Flow::Continue
            })?;
            if stop_rx.try_recv().is_ok() {
                cap.poll(Duration::from_millis(20), &mut |_| {
                    seen += 1;
                    Flow::Continue
                })?;
                return Ok((cap, seen));
            }
        }
    });

    let mut c = TcpStream::connect(("127.0.0.1", port))?;
    c.set_nodelay(true)?;
    let req = vec![b'Q'; msg_len];
    let mut buf = vec![0u8; msg_len];
    let t0 = Instant::now();
    for _ in 0..exchanges {
        c.write_all(&req)?;
        c.read_exact(&mut buf)?;
    }
    let wall = t0.elapsed();
    drop(c);
    server
        .join()
        .map_err(|_| anyhow::anyhow!("server panicked"))??;
    let _ = stop_tx.send(());
    let (cap, seen) = consumer
        .join()
        .map_err(|_| anyhow::anyhow!("consumer panicked"))??;

    let k = cap.counters()?;
    let stats = cap.program_stats()?;
    let (ns, cnt) = stats
        .iter()
        .fold((0u64, 0u64), |a, p| (a.0 + p.run_time_ns, a.1 + p.run_cnt));
    println!(
        "{} port, {exchanges} exchanges of {msg_len}-byte messages on lo ({:.1} us/round trip)",
        if watched { "watched" } else { "unwatched" },
        wall.as_secs_f64() * 1e6 / exchanges as f64
    );
    for p in &stats {
        println!(
            "  {:<12} run_cnt {:>8}  run_time_ns {:>11}  {:>6.0} ns/packet",
            p.name,
            p.run_cnt,
            p.run_time_ns,
            p.ns_per_run().unwrap_or(0.0)
        );
    }
    println!(
        "  both         run_cnt {cnt:>8}  run_time_ns {ns:>11}  {:>6.0} ns/packet",
        if cnt > 0 { ns as f64 / cnt as f64 } else { 0.0 }
    );
    println!(
        "  records {} (consumed {seen}), ring drops {}, wakeups {}, in range req/resp {}/{}",
        k.records,
        k.ring_drops(),
        k.wakeups,
        k.requests_in_range,
        k.responses_in_range
    );
    Ok(())
}
