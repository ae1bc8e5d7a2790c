//! A cell's verdict from its interval, and what it would take to reach one.

use serde::Serialize;

/// What a cell says (JSON and text use these names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The whole interval lies within ±threshold: no change that matters.
    Same,
    /// Significantly faster, by more than the threshold.
    Better,
    /// Neither: the interval straddles the threshold (more samples would decide).
    Inconclusive,
    /// Too few orders beyond the percentile (or too few blocks) on a side to say anything.
    Insufficient,
    /// Significantly slower, by more than the threshold.
    Worse,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Same => "same",
            Verdict::Better => "better",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Insufficient => "insufficient",
            Verdict::Worse => "worse",
        }
    }
}

/// The verdict of a log ratio `estimate` with simultaneous interval `[low, high]` (logs)
/// and a practical threshold `threshold_log` (= ln(1 + threshold)).
///
/// `worse` needs both: the interval above 0 (significant at the table's confidence) and
/// the estimate above the threshold. `same` needs the whole interval inside ±threshold
/// (equivalence, as two one-sided tests at the band's level).
pub fn decide(estimate: f64, low: f64, high: f64, threshold_log: f64) -> Verdict {
    if low > 0.0 && estimate > threshold_log {
        Verdict::Worse
    } else if high < 0.0 && estimate < -threshold_log {
        Verdict::Better
    } else if low >= -threshold_log && high <= threshold_log {
        Verdict::Same
    } else {
        Verdict::Inconclusive
    }
}

/// Orders per side an inconclusive cell would need, from the half-width of its interval
/// shrinking as 1/√n: to fit inside ±threshold when the estimate is within it, or to
/// clear 0 when it is beyond. `None` when the estimate sits on the threshold (no number
/// of orders decides that).
pub fn orders_needed(
    estimate: f64,
    half_width: f64,
    threshold_log: f64,
    orders: u64,
) -> Option<u64> {
    let room = if estimate.abs() <= threshold_log {
        threshold_log - estimate.abs()
    } else {
        estimate.abs()
    };
    // Within 2% of the threshold: the answer would be a made-up number.
    if room < 0.02 * threshold_log || half_width <= 0.0 {
        return None;
    }
    let factor = (half_width / room).powi(2);
    let needed = orders as f64 * factor;
    (needed.is_finite() && needed < 1e15).then(|| two_digits_up(needed))
}

/// `154491.3` → `160000`: an estimate, so no more digits than it is worth.
fn two_digits_up(x: f64) -> u64 {
    if x < 100.0 {
        return x.ceil() as u64;
    }
    let unit = 10f64.powi(x.log10().floor() as i32 - 1);
    ((x / unit).ceil() * unit) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts() {
        let t = 1.05f64.ln();
        assert_eq!(decide(0.10, 0.06, 0.14, t), Verdict::Worse);
        // Significant but smaller than the threshold: not worse, and not provably same.
        assert_eq!(decide(0.04, 0.01, 0.07, t), Verdict::Inconclusive);
        assert_eq!(decide(0.01, -0.02, 0.03, t), Verdict::Same);
        assert_eq!(decide(-0.10, -0.14, -0.06, t), Verdict::Better);
        assert_eq!(decide(0.10, -0.01, 0.21, t), Verdict::Inconclusive);
    }

    #[test]
    fn more_orders_narrow_the_interval() {
        let t = 1.05f64.ln();
        // Estimate 0, half-width twice the threshold: four times the orders.
        assert_eq!(orders_needed(0.0, 2.0 * t, t, 1000), Some(4000));
        // Beyond the threshold: the interval must clear 0.
        assert_eq!(orders_needed(0.2, 0.4, t, 100), Some(400));
        assert_eq!(orders_needed(t, 0.1, t, 100), None);
        assert_eq!(orders_needed(0.0, 3.0 * t, t, 17_171), Some(160_000));
    }
}
