//! Processing-delay distributions given on the command line, e.g. `fixed:50us`,
//! `uniform:20us-80us`, `normal:50us,10us`, `lognormal:50us,0.5`, `bimodal:40us,300us,0.05`.

use std::fmt;
use std::str::FromStr;

use crate::rng::Rng;

/// A delay distribution; all values in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum DelaySpec {
    #[default]
    Zero,
    Fixed(u64),
    Uniform {
        lo: u64,
        hi: u64,
    },
    Normal {
        mean: u64,
        stddev: u64,
    },
    /// `median * exp(sigma * N(0,1))`.
    LogNormal {
        median: u64,
        sigma: f64,
    },
    /// `base`, or `tail` with probability `p`.
    Bimodal {
        base: u64,
        tail: u64,
        p: f64,
    },
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum DelayError {
    #[error("bad duration {0:?} (want a number with ns/us/ms/s suffix, e.g. 50us)")]
    Duration(String),
    #[error("bad delay spec {0:?}: {1}")]
    Spec(String, &'static str),
}

impl DelaySpec {
    /// Draws one delay in nanoseconds.
    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        match *self {
            DelaySpec::Zero => 0,
            DelaySpec::Fixed(ns) => ns,
            DelaySpec::Uniform { lo, hi } => lo + rng.below(hi - lo + 1),
            DelaySpec::Normal { mean, stddev } => {
                let v = mean as f64 + stddev as f64 * rng.next_normal();
                v.max(0.0) as u64
            }
            DelaySpec::LogNormal { median, sigma } => {
                (median as f64 * (sigma * rng.next_normal()).exp()) as u64
            }
            DelaySpec::Bimodal { base, tail, p } => {
                if rng.next_f64() < p {
                    tail
                } else {
                    base
                }
            }
        }
    }

    /// True when every sample is 0 (lets the loops skip the timer queue).
    pub fn is_zero(&self) -> bool {
        matches!(self, DelaySpec::Zero | DelaySpec::Fixed(0))
    }
}

impl FromStr for DelaySpec {
    type Err = DelayError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let bad = |why| DelayError::Spec(s.to_string(), why);
        let Some((kind, rest)) = s.split_once(':') else {
            // A bare duration ("0", "50us") means fixed.
            return Ok(match parse_duration_ns(s)? {
                0 => DelaySpec::Zero,
                ns => DelaySpec::Fixed(ns),
            });
        };
        let parts: Vec<&str> = rest.split(',').map(str::trim).collect();
        let spec = match (kind.trim(), parts.as_slice()) {
            ("fixed", [d]) => DelaySpec::Fixed(parse_duration_ns(d)?),
            ("uniform", [range]) => {
                let (lo, hi) = range.split_once('-').ok_or(bad("want uniform:LO-HI"))?;
                let (lo, hi) = (parse_duration_ns(lo)?, parse_duration_ns(hi)?);
                if lo > hi {
                    return Err(bad("LO > HI"));
                }
                DelaySpec::Uniform { lo, hi }
            }
            ("normal", [mean, sd]) => DelaySpec::Normal {
                mean: parse_duration_ns(mean)?,
                stddev: parse_duration_ns(sd)?,
            },
            ("lognormal", [median, sigma]) => {
                let sigma: f64 = sigma.parse().map_err(|_| bad("sigma is not a number"))?;
                if !(sigma.is_finite() && sigma >= 0.0) {
                    return Err(bad("sigma must be >= 0"));
                }
                DelaySpec::LogNormal {
                    median: parse_duration_ns(median)?,
                    sigma,
                }
            }
            ("bimodal", [base, tail, p]) => {
                let p: f64 = p.parse().map_err(|_| bad("probability is not a number"))?;
                if !(0.0..=1.0).contains(&p) {
                    return Err(bad("probability must be in [0, 1]"));
                }
                DelaySpec::Bimodal {
                    base: parse_duration_ns(base)?,
                    tail: parse_duration_ns(tail)?,
                    p,
                }
            }
            _ => return Err(bad("want fixed:D, uniform:LO-HI, normal:MEAN,SD, lognormal:MEDIAN,SIGMA or bimodal:BASE,TAIL,P")),
        };
        Ok(spec)
    }
}

impl fmt::Display for DelaySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DelaySpec::Zero => write!(f, "0"),
            DelaySpec::Fixed(ns) => write!(f, "fixed:{ns}ns"),
            DelaySpec::Uniform { lo, hi } => write!(f, "uniform:{lo}ns-{hi}ns"),
            DelaySpec::Normal { mean, stddev } => write!(f, "normal:{mean}ns,{stddev}ns"),
            DelaySpec::LogNormal { median, sigma } => write!(f, "lognormal:{median}ns,{sigma}"),
            DelaySpec::Bimodal { base, tail, p } => write!(f, "bimodal:{base}ns,{tail}ns,{p}"),
        }
    }
}

/// Parses `123ns`, `50us`, `1.5ms`, `2s` (a bare number means seconds only when it is 0).
pub fn parse_duration_ns(s: &str) -> Result<u64, DelayError> {
    let s = s.trim();
    let bad = || DelayError::Duration(s.to_string());
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let value: f64 = num.parse().map_err(|_| bad())?;
    let scale = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "" if value == 0.0 => 0.0,
        _ => return Err(bad()),
    };
    let ns = value * scale;
    if !ns.is_finite() || ns < 0.0 || ns > u64::MAX as f64 / 2.0 {
        return Err(bad());
    }
    Ok(ns.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(spec: &DelaySpec, n: usize, seed: u64) -> (f64, f64, Vec<u64>) {
        let mut rng = Rng::new(seed);
        let mut v: Vec<u64> = (0..n).map(|_| spec.sample(&mut rng)).collect();
        let mean = v.iter().sum::<u64>() as f64 / n as f64;
        let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n as f64;
        v.sort_unstable();
        (mean, var.sqrt(), v)
    }

    #[test]
    fn parses_durations() {
        assert_eq!(parse_duration_ns("0"), Ok(0));
        assert_eq!(parse_duration_ns("250ns"), Ok(250));
        assert_eq!(parse_duration_ns("50us"), Ok(50_000));
        assert_eq!(parse_duration_ns("1.5ms"), Ok(1_500_000));
        assert_eq!(parse_duration_ns("2s"), Ok(2_000_000_000));
        assert!(parse_duration_ns("50").is_err());
        assert!(parse_duration_ns("us").is_err());
        assert!(parse_duration_ns("5min").is_err());
    }

    #[test]
    fn parses_specs() {
        assert_eq!("0".parse(), Ok(DelaySpec::Zero));
        assert_eq!("fixed:50us".parse(), Ok(DelaySpec::Fixed(50_000)));
        assert_eq!("200us".parse(), Ok(DelaySpec::Fixed(200_000)));
        assert_eq!(
            "uniform:20us-80us".parse(),
            Ok(DelaySpec::Uniform {
                lo: 20_000,
                hi: 80_000
            })
        );
        assert_eq!(
            "normal:50us,10us".parse(),
            Ok(DelaySpec::Normal {
                mean: 50_000,
                stddev: 10_000
            })
        );
        assert_eq!(
            "lognormal:50us,0.5".parse(),
            Ok(DelaySpec::LogNormal {
                median: 50_000,
                sigma: 0.5
            })
        );
        assert_eq!(
            "bimodal:40us,300us,0.05".parse(),
            Ok(DelaySpec::Bimodal {
                base: 40_000,
                tail: 300_000,
                p: 0.05
            })
        );
        for bad in [
            "uniform:80us-20us",
            "bimodal:1us,2us,1.5",
            "normal:5us",
            "gamma:1us",
            "x",
        ] {
            assert!(bad.parse::<DelaySpec>().is_err(), "{bad}");
        }
        // Display round-trips.
        for s in ["fixed:50us", "uniform:20us-80us", "lognormal:50us,0.5"] {
            let spec: DelaySpec = s.parse().unwrap();
            assert_eq!(spec.to_string().parse::<DelaySpec>().unwrap(), spec);
        }
    }

    #[test]
    fn distributions_have_expected_stats() {
        let n = 200_000;
        let (mean, _, v) = stats(&"uniform:20us-80us".parse().unwrap(), n, 1);
        assert!((mean - 50_000.0).abs() < 500.0, "{mean}");
        assert!(v[0] >= 20_000 && v[n - 1] <= 80_000);

        let (mean, sd, _) = stats(&"normal:50us,10us".parse().unwrap(), n, 2);
        assert!((mean - 50_000.0).abs() < 200.0, "{mean}");
        assert!((sd - 10_000.0).abs() < 200.0, "{sd}");

        let (_, _, v) = stats(&"lognormal:50us,0.5".parse().unwrap(), n, 3);
        let median = v[n / 2] as f64;
        assert!((median - 50_000.0).abs() < 1_000.0, "{median}");
        // p84 of a lognormal is median * e^sigma.
        let p84 = v[(n as f64 * 0.8413) as usize] as f64;
        assert!(
            (p84 / (50_000.0 * 0.5f64.exp()) - 1.0).abs() < 0.03,
            "{p84}"
        );

        let (_, _, v) = stats(&"bimodal:40us,300us,0.05".parse().unwrap(), n, 4);
        let tail = v.iter().filter(|&&x| x == 300_000).count() as f64 / n as f64;
        assert!((tail - 0.05).abs() < 0.005, "{tail}");
        assert!(v.iter().all(|&x| x == 40_000 || x == 300_000));

        let (mean, sd, _) = stats(&"fixed:7us".parse().unwrap(), 100, 5);
        assert_eq!((mean, sd), (7_000.0, 0.0));
    }

    #[test]
    fn sampling_is_deterministic_with_a_seed() {
        let spec: DelaySpec = "lognormal:50us,0.5".parse().unwrap();
        let (_, _, a) = stats(&spec, 1000, 42);
        let (_, _, b) = stats(&spec, 1000, 42);
        let (_, _, c) = stats(&spec, 1000, 43);
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
