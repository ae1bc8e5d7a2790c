//! What the user says about the points and their clocks: `--point NAME=FILE[,FILE…]`,
//! `--clock estimate|trust|offset=B-A=±V[~U]`, `--clock-window`, `--max-clock-uncertainty`.

use std::fmt;
use std::path::PathBuf;

/// One capture point: a clock domain (a host, or a tap stamped by one device).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PointSpec {
    pub name: String,
    pub files: Vec<PathBuf>,
}

impl PointSpec {
    /// `NAME=FILE[,FILE…]`; a name is letters, digits, `_` and `.` (a `-` would make
    /// `--clock offset=gw-cli=…` ambiguous).
    pub fn parse(s: &str) -> Result<Self, String> {
        let (name, files) = s
            .split_once('=')
            .ok_or_else(|| format!("`{s}`: expected NAME=FILE[,FILE…]"))?;
        check_name(name)?;
        let files: Vec<PathBuf> = files
            .split(',')
            .filter(|f| !f.is_empty())
            .map(PathBuf::from)
            .collect();
        if files.is_empty() {
            return Err(format!("point `{name}`: no capture file"));
        }
        Ok(PointSpec {
            name: name.to_string(),
            files,
        })
    }
}

fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "point name `{name}`: use letters, digits, `_` and `.` only"
        ))
    }
}

/// How the offset between the points' clocks is known.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ClockMode {
    /// Estimated from the segments both points saw (the default).
    #[default]
    Estimate,
    /// The captures' clocks as they are (offset 0 ± 0), checked against causality.
    Trust,
    /// A known offset: clock(`of`) − clock(`relative_to`) = `offset_ns` ± `uncertainty_ns`,
    /// checked against causality.
    Offset {
        of: String,
        relative_to: String,
        offset_ns: i64,
        uncertainty_ns: u64,
    },
}

impl ClockMode {
    /// `estimate`, `trust`, or `offset=B-A=+12.4us~0.8us` (the `~U` part optional: 0).
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "estimate" => return Ok(ClockMode::Estimate),
            "trust" => return Ok(ClockMode::Trust),
            _ => {}
        }
        let rest = s.strip_prefix("offset=").ok_or_else(|| {
            format!("`{s}`: expected estimate, trust or offset=B-A=+12.4us~0.8us")
        })?;
        let (pair, value) = rest.split_once('=').ok_or_else(|| {
            format!("`{s}`: expected offset=B-A=VALUE (e.g. gw-cli=+12.4us~0.8us)")
        })?;
        let (of, relative_to) = pair
            .split_once('-')
            .ok_or_else(|| format!("`{pair}`: expected B-A, two point names"))?;
        check_name(of)?;
        check_name(relative_to)?;
        let (offset, uncertainty) = match value.split_once('~') {
            Some((o, u)) => (o, Some(u)),
            None => (value, None),
        };
        let offset_ns = parse_signed_duration(offset)?;
        let uncertainty_ns = match uncertainty {
            Some(u) => {
                let u = parse_signed_duration(u)?;
                u64::try_from(u).map_err(|_| format!("`{value}`: the uncertainty is negative"))?
            }
            None => 0,
        };
        Ok(ClockMode::Offset {
            of: of.to_string(),
            relative_to: relative_to.to_string(),
            offset_ns,
            uncertainty_ns,
        })
    }

    /// The name reports give the mode.
    pub fn name(&self) -> &'static str {
        match self {
            ClockMode::Estimate => "estimate",
            ClockMode::Trust => "trust",
            ClockMode::Offset { .. } => "offset",
        }
    }
}

/// When one-way percentiles are withheld (`--max-clock-uncertainty`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum UncertaintyLimit {
    /// A fraction of the stage's median (`10%`, the default: 0.1).
    OfMedian(f64),
    /// An absolute limit (`5us`).
    Ns(u64),
}

impl Default for UncertaintyLimit {
    fn default() -> Self {
        UncertaintyLimit::OfMedian(0.10)
    }
}

impl UncertaintyLimit {
    /// `10%` or a duration (`5us`, `1.5ms`).
    pub fn parse(s: &str) -> Result<Self, String> {
        if let Some(pct) = s.strip_suffix('%') {
            let v: f64 = pct
                .trim()
                .parse()
                .map_err(|_| format!("`{s}`: expected a percentage such as 10%"))?;
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("`{s}`: a percentage at least 0"));
            }
            return Ok(UncertaintyLimit::OfMedian(v / 100.0));
        }
        let ns = parse_signed_duration(s)?;
        u64::try_from(ns)
            .map(UncertaintyLimit::Ns)
            .map_err(|_| format!("`{s}`: a duration at least 0"))
    }

    /// The largest uncertainty allowed for a stage whose median is `median_ns`.
    pub fn allowed_ns(self, median_ns: u64) -> u64 {
        match self {
            UncertaintyLimit::OfMedian(f) => (median_ns as f64 * f).floor() as u64,
            UncertaintyLimit::Ns(ns) => ns,
        }
    }
}

impl fmt::Display for UncertaintyLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UncertaintyLimit::OfMedian(x) => write!(f, "{}% of the median", x * 100.0),
            UncertaintyLimit::Ns(ns) => {
                write!(f, "{}", fixscope_model::human::human_ns(*ns as f64))
            }
        }
    }
}

/// Everything the two-point stages are tuned by.
#[derive(Clone, Debug, PartialEq)]
pub struct ClockSettings {
    pub mode: ClockMode,
    /// `--clock-window`: the longest span one offset line is fitted over (default 10 s).
    pub window_ns: u64,
    pub limit: UncertaintyLimit,
}

impl Default for ClockSettings {
    fn default() -> Self {
        ClockSettings {
            mode: ClockMode::Estimate,
            window_ns: 10_000_000_000,
            limit: UncertaintyLimit::default(),
        }
    }
}

/// `+12.4us`, `-5ms`, `250ns`, `0.8µs`, `1s`: a signed decimal with a unit, to the
/// nanosecond (humantime takes neither signs nor fractions).
pub fn parse_signed_duration(s: &str) -> Result<i64, String> {
    let t = s.trim();
    let (sign, body) = match t.as_bytes().first() {
        Some(b'-') => (-1.0, &t[1..]),
        Some(b'+') => (1.0, &t[1..]),
        _ => (1.0, t),
    };
    let split = body
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("`{s}`: a duration needs a unit (ns, us, ms, s)"))?;
    let (number, unit) = body.split_at(split);
    let value: f64 = number.parse().map_err(|_| format!("`{s}`: not a number"))?;
    let scale = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return Err(format!("`{s}`: unknown unit `{unit}` (ns, us, ms, s)")),
    };
    let ns = (sign * value * scale).round();
    if !ns.is_finite() || ns.abs() > 9.0e18 {
        return Err(format!("`{s}`: out of range"));
    }
    Ok(ns as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_parse_with_sign_unit_and_uncertainty() {
        assert_eq!(
            ClockMode::parse("offset=gw-cli=+12.4us~0.8us").unwrap(),
            ClockMode::Offset {
                of: "gw".into(),
                relative_to: "cli".into(),
                offset_ns: 12_400,
                uncertainty_ns: 800
            }
        );
        assert_eq!(
            ClockMode::parse("offset=a-b=-5ms").unwrap(),
            ClockMode::Offset {
                of: "a".into(),
                relative_to: "b".into(),
                offset_ns: -5_000_000,
                uncertainty_ns: 0
            }
        );
        assert_eq!(ClockMode::parse("trust").unwrap(), ClockMode::Trust);
        assert!(ClockMode::parse("offset=gw-cli=12").is_err());
        assert!(ClockMode::parse("offset=gw=1us").is_err());
        assert!(ClockMode::parse("offset=gw-cli=1us~-1us").is_err());
        assert!(ClockMode::parse("guess").is_err());
    }

    #[test]
    fn points_and_limits_parse() {
        let p = PointSpec::parse("gw=a.pcap,b.pcap").unwrap();
        assert_eq!(p.name, "gw");
        assert_eq!(p.files.len(), 2);
        assert!(PointSpec::parse("g-w=a.pcap").is_err());
        assert!(PointSpec::parse("gw=").is_err());
        assert!(PointSpec::parse("a.pcap").is_err());
        assert_eq!(
            UncertaintyLimit::parse("10%").unwrap(),
            UncertaintyLimit::OfMedian(0.1)
        );
        assert_eq!(
            UncertaintyLimit::parse("5us").unwrap(),
            UncertaintyLimit::Ns(5_000)
        );
        assert_eq!(UncertaintyLimit::OfMedian(0.1).allowed_ns(34_100), 3_410);
    }
}
