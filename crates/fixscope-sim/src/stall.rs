//! `--stall FRACTION:DURATION` (e.g. `1%:2s`, `0.5%:700ms`, `0.01:2s`): the exchange holds
//! a fraction of requests for DURATION on top of their ack delay, as a JIT pause or a GC
//! stall would, while it answers every other request on time.
//!
//! Which requests are held is fixed by a counter, not drawn at random, so a test knows
//! exactly which: on each connection the `k`-th request (D, F or G, counted from 1) is held
//! when `floor(k·f) > floor((k−1)·f)` — for `1%` the 100th, 200th, …; for `3%` the 34th,
//! 67th, 100th, … — so exactly `floor(n·f)` of a connection's first `n` requests are held,
//! evenly spread. With several specs, a request picked by more than one is held for the
//! longest of their durations.

use std::fmt;
use std::str::FromStr;

use crate::delay::{parse_duration_ns, DelayError};

const PPB: u64 = 1_000_000_000;

/// One `--stall` spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StallSpec {
    /// The fraction of requests held, in parts per billion (exact integer arithmetic).
    pub fraction_ppb: u64,
    /// How long each is held, in nanoseconds.
    pub hold_ns: u64,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum StallError {
    #[error("bad stall {0:?}: {1}")]
    Spec(String, &'static str),
    #[error(transparent)]
    Duration(#[from] DelayError),
}

impl StallSpec {
    /// Whether a connection's `k`-th request (`k` >= 1) is held.
    #[inline]
    pub fn holds(&self, k: u64) -> bool {
        let picked = |n: u64| n as u128 * self.fraction_ppb as u128 / PPB as u128;
        k > 0 && picked(k) > picked(k - 1)
    }
}

/// How long the `k`-th request of a connection is held under `specs` (0: not held).
#[inline]
pub fn hold_ns(specs: &[StallSpec], k: u64) -> u64 {
    specs
        .iter()
        .filter(|s| s.holds(k))
        .map(|s| s.hold_ns)
        .max()
        .unwrap_or(0)
}

impl FromStr for StallSpec {
    type Err = StallError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let bad = |why| StallError::Spec(s.to_string(), why);
        let (fraction, hold) = s
            .split_once(':')
            .ok_or(bad("want FRACTION:DURATION, e.g. 1%:2s"))?;
        let fraction = fraction.trim();
        let (number, scale) = match fraction.strip_suffix('%') {
            Some(pct) => (pct, 100.0),
            None => (fraction, 1.0),
        };
        let value: f64 = number
            .trim()
            .parse()
            .map_err(|_| bad("the fraction is not a number (want e.g. 1% or 0.01)"))?;
        let fraction = value / scale;
        if !(fraction > 0.0 && fraction <= 1.0) {
            return Err(bad("the fraction must be above 0 and at most 100%"));
        }
        let fraction_ppb = (fraction * PPB as f64).round() as u64;
        if fraction_ppb == 0 {
            return Err(bad("the fraction is below one in a billion"));
        }
        let hold_ns = parse_duration_ns(hold)?;
        if hold_ns == 0 {
            return Err(bad("the duration must be above 0"));
        }
        Ok(StallSpec {
            fraction_ppb,
            hold_ns,
        })
    }
}

impl fmt::Display for StallSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pct = self.fraction_ppb as f64 / (PPB / 100) as f64;
        write!(f, "{pct}%:{}ns", self.hold_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str) -> StallSpec {
        s.parse().unwrap()
    }

    #[test]
    fn parses_fractions_and_durations() {
        assert_eq!(
            spec("1%:2s"),
            StallSpec {
                fraction_ppb: 10_000_000,
                hold_ns: 2_000_000_000
            }
        );
        assert_eq!(
            spec("0.5%:700ms"),
            StallSpec {
                fraction_ppb: 5_000_000,
                hold_ns: 700_000_000
            }
        );
        assert_eq!(spec("0.01:2s"), spec("1%:2s"));
        assert_eq!(spec("100%:1us").fraction_ppb, PPB);
        for bad in [
            "1%", "1%:", ":2s", "0%:2s", "101%:2s", "1.5:2s", "-1%:2s", "x%:2s", "1%:0", "1%:2",
            "1%:2min",
        ] {
            assert!(bad.parse::<StallSpec>().is_err(), "{bad}");
        }
        for s in ["1%:2s", "0.5%:700ms", "3%:1us", "0.001%:5s"] {
            assert_eq!(spec(s).to_string().parse::<StallSpec>(), Ok(spec(s)), "{s}");
        }
    }

    #[test]
    fn the_held_requests_are_known_in_advance() {
        let held = |s: &str, n: u64| -> Vec<u64> {
            let sp = spec(s);
            (1..=n).filter(|&k| sp.holds(k)).collect()
        };
        assert_eq!(held("1%:1s", 350), vec![100, 200, 300]);
        assert_eq!(held("3%:1s", 100), vec![34, 67, 100]);
        assert_eq!(held("50%:1s", 6), vec![2, 4, 6]);
        assert_eq!(held("100%:1s", 3), vec![1, 2, 3]);
        assert!(!spec("100%:1s").holds(0));
        // Exactly floor(n * f) of the first n, for awkward fractions too.
        for (s, f) in [
            ("0.7%:1s", 0.007),
            ("12.5%:1s", 0.125),
            ("0.01%:1s", 0.0001),
        ] {
            for n in [1u64, 99, 1_000, 123_457] {
                let count = held(s, n).len() as u64;
                assert_eq!(count, (n as f64 * f + 1e-9).floor() as u64, "{s} n={n}");
            }
        }
    }

    #[test]
    fn overlapping_specs_hold_for_the_longest() {
        let specs = [spec("1%:2s"), spec("0.1%:5s")];
        assert_eq!(hold_ns(&specs, 1), 0);
        assert_eq!(hold_ns(&specs, 100), 2_000_000_000);
        assert_eq!(hold_ns(&specs, 1000), 5_000_000_000);
        assert_eq!(hold_ns(&[], 100), 0);
    }
}
