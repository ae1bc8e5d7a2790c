//! The simultaneous confidence band over every judged cell (max-T), and the t-widening
//! of its critical value when there are few blocks.
//!
//! Each cell's statistic is the log ratio of the candidate's quantile to the baseline's.
//! Its bootstrap replicates give a standard error per cell; the critical value is the
//! `confidence` quantile of the largest standardized deviation over all cells of a
//! replicate, so all cells lie inside their band together with that probability — the
//! table's family-wise error is `1 - confidence`, however many cells it has, and cells that
//! move together (p50 and p90 of one stage) cost less than Bonferroni would charge.

/// The two-sided critical value of the max-T band: the `confidence` quantile of each
/// replicate's `max_c |θ*_c − θ̂_c| / se_c`, `maxima` being those maxima (any order).
pub fn max_t_critical(maxima: &mut [f64], confidence: f64) -> f64 {
    if maxima.is_empty() {
        return f64::INFINITY;
    }
    maxima.sort_by(f64::total_cmp);
    // The smallest value with at least `confidence` of the replicates at or below it.
    let k = ((confidence * maxima.len() as f64).ceil() as usize).clamp(1, maxima.len());
    maxima[k - 1]
}

/// Widens a critical value found as if the standard errors were exact to what a Student t
/// with `df` degrees of freedom needs for the same per-cell level (estimated standard
/// errors from few blocks are themselves uncertain).
pub fn t_widened(critical: f64, df: f64) -> f64 {
    if !critical.is_finite() || df <= 0.0 {
        return critical;
    }
    // The critical value read as a normal quantile (the per-cell level the band implies),
    // then the t quantile of the same level.
    student_t_from_normal(critical, df)
}

/// The Student t quantile with `df` degrees of freedom at the probability where the
/// standard normal's quantile is `z` (Cornish-Fisher expansion to the fourth order in
/// 1/df; within 0.2% for df ≥ 15 up to z = 4.5, and fixscope never asks for fewer).
pub fn student_t_from_normal(z: f64, df: f64) -> f64 {
    let (z2, v) = (z * z, df);
    let z3 = z2 * z;
    let z5 = z3 * z2;
    let z7 = z5 * z2;
    let z9 = z7 * z2;
    z + (z3 + z) / (4.0 * v)
        + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * v * v)
        + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * v.powi(3))
        + (79.0 * z9 + 776.0 * z7 + 1482.0 * z5 - 1920.0 * z3 - 945.0 * z) / (92160.0 * v.powi(4))
}

/// Standard deviation of `xs` around their mean (n − 1).
pub fn std_dev(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    if xs.len() < 2 {
        return 0.0;
    }
    let mean = xs.iter().sum::<f64>() / n;
    (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_tables() {
        // t(0.995, df) from standard tables; z(0.995) = 2.5758.
        for (df, t) in [
            (19.0, 2.8609),
            (24.0, 2.7969),
            (49.0, 2.6800),
            (100.0, 2.6259),
        ] {
            let ours = student_t_from_normal(2.575_829, df);
            assert!((ours - t).abs() / t < 0.002, "df {df}: {ours} vs {t}");
        }
        // t(0.9995, 19) = 3.8834.
        let ours = student_t_from_normal(3.290_527, 19.0);
        assert!((ours - 3.8834).abs() / 3.8834 < 0.005, "{ours}");
        assert!(t_widened(2.0, 19.0) > 2.0);
    }

    #[test]
    fn critical_value_is_the_confidence_quantile() {
        let mut m: Vec<f64> = (1..=1000).map(|i| i as f64).collect();
        m.reverse();
        assert_eq!(max_t_critical(&mut m, 0.99), 990.0);
        assert_eq!(max_t_critical(&mut [], 0.99), f64::INFINITY);
    }
}
