//! Attaches a live capture and holds it, for residue tests (the test SIGKILLs us).
//!
//! `hold_attached <iface> <port> [auto|tcx|tc] [seconds] [breakdown]` prints
//! `ATTACHED <kind>` once attached (with `breakdown`: `--breakdown`'s hooks too), then
//! sleeps (draining the ring) until the time is up (default 30 s) and detaches.
//! Exit codes: 0 done, 2 usage, 3 not privileged, 4 other capture errors.

use std::io::Write;
use std::time::{Duration, Instant};

use fixscope_core::ports::PortSet;
use fixscope_core::source::Flow;
use fixscope_live::{AttachMode, LiveCapture, LiveConfig, LiveError};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: hold_attached <iface> <port> [auto|tcx|tc] [seconds] [breakdown]");
        std::process::exit(2);
    }
    let Ok(ports) = args[2].parse::<PortSet>() else {
        eprintln!("bad port list {}", args[2]);
        std::process::exit(2);
    };
    let mut cfg = LiveConfig::new(args[1].clone(), ports);
    cfg.attach = match args.get(3).map(String::as_str) {
        None | Some("auto") => AttachMode::Auto,
        Some("tcx") => AttachMode::Tcx,
        Some("tc") => AttachMode::TcFilter,
        Some(other) => {
            eprintln!("bad attach mode {other}");
            std::process::exit(2);
        }
    };
    let secs: u64 = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(30);
    cfg.breakdown = args.get(5).map(String::as_str) == Some("breakdown");
    let mut cap = match LiveCapture::open(&cfg) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ERROR {e}");
            let code = if matches!(e, LiveError::NotPrivileged(_)) {
                3
            } else {
                4
            };
            std::process::exit(code);
        }
    };
    println!("ATTACHED {} ifindex={}", cap.attach_kind(), cap.ifindex());
    let _ = std::io::stdout().flush();
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        if let Err(e) = cap.poll(Duration::from_millis(100), &mut |_| Flow::Continue) {
            eprintln!("ERROR {e}");
            std::process::exit(4);
        }
    }
    if let Err(e) = cap.detach() {
        eprintln!("ERROR {e}");
        std::process::exit(4);
    }
}
