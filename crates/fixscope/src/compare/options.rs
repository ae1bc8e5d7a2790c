//! The flags of `fixscope compare` validated into [`Settings`] and a [`GroupBy`].

use anyhow::{bail, Context, Result};
use fixscope_compare::{Settings, DEFAULT_SEED};

use crate::cli::CompareArgs;

/// `--by`: how orders are grouped beside the all-orders rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupBy {
    /// Request type (D, F, G): captures and `--hlog` logs.
    Type,
    /// Session (SenderCompID->TargetCompID): captures; first_response only (the stage
    /// sessions keep).
    Session,
    /// The value of a FIX tag of the orders (`--by 55`: symbol): captures; every stage,
    /// the `--by-limit` busiest values of each run, the rest as `(other)`.
    Tag(u32),
}

impl GroupBy {
    pub fn parse(s: &str) -> Result<GroupBy> {
        match s {
            "type" => Ok(GroupBy::Type),
            "session" => Ok(GroupBy::Session),
            t if t.bytes().all(|b| b.is_ascii_digit()) && !t.is_empty() => {
                // The pipeline's own check of a `--by` tag (one tag here).
                let spec = fixscope_core::group::GroupSpec::parse(t, 1)
                    .map_err(|e| anyhow::anyhow!("--by {t}: {e}"))?;
                Ok(GroupBy::Tag(spec.fields[0].tag().unwrap_or_default()))
            }
            other => bail!("--by {other}: one of type, session, or a FIX tag number (55)"),
        }
    }
}

/// `50,90,99,99.9` → quantiles, ascending.
pub fn percentiles(list: &str) -> Result<Vec<f64>> {
    let mut out = Vec::new();
    for part in list.split(',').map(str::trim) {
        let p: f64 = part
            .parse()
            .with_context(|| format!("--percentiles: `{part}` is not a number"))?;
        if !(p > 0.0 && p < 100.0) {
            bail!("--percentiles: {p} is not between 0 and 100 (exclusive)");
        }
        // Through the decimal text, so 99.9 is 0.999 exactly as reports rank it.
        let q: f64 = format!("{}", p / 100.0).parse().unwrap_or(p / 100.0);
        let q = (q * 1e9).round() / 1e9;
        out.push(q);
    }
    out.sort_by(f64::total_cmp);
    out.dedup();
    Ok(out)
}

/// `--threshold`: always percent (`5` and `5%` are 5%; `0.5` is half a percent).
pub fn threshold(s: &str) -> Result<f64> {
    let t = s.trim().trim_end_matches('%');
    let pct: f64 = t
        .parse()
        .with_context(|| format!("--threshold: `{s}` is not a percentage"))?;
    if !(pct.is_finite() && (0.0..100.0).contains(&pct)) {
        bail!("--threshold must be at least 0 and below 100 percent, got {s}");
    }
    Ok(pct / 100.0)
}

/// The statistics' settings from the flags.
pub fn settings(args: &CompareArgs) -> Result<Settings> {
    if !(args.confidence > 50.0 && args.confidence < 100.0) {
        bail!(
            "--confidence is a percentage between 50 and 100 (exclusive), got {}",
            args.confidence
        );
    }
    if !(100..=100_000).contains(&args.resamples) {
        bail!(
            "--resamples must be between 100 and 100000, got {}",
            args.resamples
        );
    }
    Ok(Settings {
        percentiles: percentiles(&args.percentiles)?,
        confidence: args.confidence / 100.0,
        threshold: threshold(&args.threshold)?,
        resamples: args.resamples,
        seed: args.seed.unwrap_or(DEFAULT_SEED),
        ..Settings::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_the_ranks_reports_use() {
        assert_eq!(
            percentiles("50,90,99,99.9").unwrap(),
            vec![0.5, 0.9, 0.99, 0.999]
        );
        assert_eq!(percentiles("99.99, 50").unwrap(), vec![0.5, 0.9999]);
        assert!(percentiles("100").is_err());
        assert!(percentiles("x").is_err());
    }

    #[test]
    fn thresholds_are_percent() {
        assert_eq!(threshold("5").unwrap(), 0.05);
        assert_eq!(threshold("5%").unwrap(), 0.05);
        assert_eq!(threshold("0.5").unwrap(), 0.005);
        assert!(threshold("-1").is_err());
    }

    #[test]
    fn by_tag_is_a_clear_error_for_now() {
        assert_eq!(GroupBy::parse("type").unwrap(), GroupBy::Type);
        assert_eq!(GroupBy::parse("55").unwrap(), GroupBy::Tag(55));
        assert!(GroupBy::parse("0").is_err());
        assert!(GroupBy::parse("55,1").is_err(), "one tag");
        assert!(GroupBy::parse("venue").is_err());
    }
}
