//! The schedule of a run: from the flags to how many requests go out, when (open loop:
//! request `i` at `t0 + i/R`, all sessions together) or how many may be outstanding
//! (closed loop), until when, and how long to wait for the last responses.

use anyhow::bail;

use crate::args::ClientArgs;

/// Largest per-session tracking ring (a power of two).
const MAX_RING: u64 = 1 << 20;

/// The validated load the flags ask for (known before the sessions connect).
pub(super) struct Load {
    /// Closed loop: outstanding requests per session; `None` in open loop.
    pub window: Option<usize>,
    /// Requests to send in total (`u64::MAX`: until the send deadline).
    pub count: u64,
    /// How long to send for, from the first scheduled send.
    pub duration_ns: u64,
    /// Entries of each session's tracking ring: big enough for everything in flight.
    pub ring: usize,
}

impl Load {
    pub fn from_args(args: &ClientArgs) -> anyhow::Result<Load> {
        if args.sessions == 0 {
            bail!("--sessions must be at least 1");
        }
        if let Some(r) = args.rate {
            if !(r.is_finite() && r > 0.0) {
                bail!("--rate must be > 0");
            }
        }
        let window = match (args.rate, args.window) {
            (None, Some(0)) => bail!("--window must be at least 1"),
            (None, w) => Some(w.unwrap_or(1)),
            (Some(_), _) => None,
        };
        let count = args.count.unwrap_or(u64::MAX);
        let duration_ns = match (args.duration, args.count) {
            (Some(d), _) => (d.max(0.0) * 1e9) as u64,
            (None, Some(_)) => u64::MAX,
            (None, None) => 10_000_000_000,
        };
        let per_session = match window {
            Some(w) => (w as u64).saturating_mul(4),
            None => {
                let rate = args.rate.unwrap_or(1.0) / args.sessions as f64;
                let expect = count.div_ceil(args.sessions as u64);
                expect.min((rate * 4.0) as u64 + 1024)
            }
        };
        let ring = per_session.clamp(1024, MAX_RING).next_power_of_two() as usize;
        Ok(Load {
            window,
            count,
            duration_ns,
            ring,
        })
    }
}

/// The load placed in time, once every session has logged on (`t0`).
pub(super) struct Plan {
    pub t0: u64,
    /// Open loop: ns between scheduled sends (all sessions together).
    pub interval_ns: Option<f64>,
    pub window: u64,
    pub count: u64,
    pub send_deadline: u64,
    pub drain_ns: u64,
}

impl Plan {
    pub fn new(load: &Load, args: &ClientArgs, t0: u64) -> Plan {
        Plan {
            t0,
            interval_ns: args.rate.map(|r| 1e9 / r),
            window: load.window.unwrap_or(0) as u64,
            count: load.count,
            send_deadline: t0.saturating_add(load.duration_ns),
            drain_ns: (args.drain_timeout.max(0.0) * 1e9) as u64,
        }
    }

    /// Open loop: when request `i` (counted over all sessions) is due.
    #[inline]
    pub fn scheduled_ns(&self, interval_ns: f64, i: u64) -> u64 {
        self.t0 + (i as f64 * interval_ns) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_become_a_plan() {
        let args = ClientArgs::from_flags(["--rate", "1000", "--count", "10"]).unwrap();
        let load = Load::from_args(&args).unwrap();
        assert_eq!(
            (load.window, load.count, load.duration_ns),
            (None, 10, u64::MAX)
        );
        assert_eq!(load.ring, 1024);
        let plan = Plan::new(&load, &args, 5_000);
        let interval = plan.interval_ns.unwrap();
        assert_eq!(plan.scheduled_ns(interval, 0), 5_000);
        assert_eq!(plan.scheduled_ns(interval, 3), 5_000 + 3_000_000);
        assert_eq!(plan.send_deadline, u64::MAX);

        let args = ClientArgs::from_flags(["--window", "4096", "--duration", "2"]).unwrap();
        let load = Load::from_args(&args).unwrap();
        assert_eq!(load.window, Some(4096));
        assert_eq!(load.ring, 16_384);
        let plan = Plan::new(&load, &args, 1);
        assert_eq!((plan.window, plan.send_deadline), (4096, 2_000_000_001));

        for bad in [
            &["--sessions", "0"][..],
            &["--window", "0"],
            &["--rate", "0"],
        ] {
            let args = ClientArgs::from_flags(bad.iter().copied()).unwrap();
            assert!(Load::from_args(&args).is_err(), "{bad:?}");
        }
    }
}
