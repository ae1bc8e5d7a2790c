//! The lower envelope of delay samples: the line under every sample that lies highest at
//! their mean time (Moon, Skelly & Towsley's linear programme: minimise the summed gap to
//! the samples). Its optimum is the edge of the samples' lower convex hull that spans their
//! mean time, so it is found exactly, in integers, with no solver.

/// A line through `(t0, y0)` with a slope in ns per ns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Line {
    pub t0: i64,
    pub y0: i64,
    pub slope: f64,
}

impl Line {
    /// The flat line at `y`.
    pub fn flat(t0: i64, y: i64) -> Self {
        Line {
            t0,
            y0: y,
            slope: 0.0,
        }
    }

    pub fn at(&self, t: i64) -> f64 {
        self.y0 as f64 + self.slope * (t - self.t0) as f64
    }
}

/// The supporting line under `points` (`(t, y)`, sorted by `t`), touching their lower hull at
/// their mean time; `None` when there are none. Every point lies on or above it.
pub fn lower_support(points: &[(i64, i64)]) -> Option<Line> {
    let first = *points.first()?;
    let hull = lower_hull(points);
    if hull.len() == 1 {
        return Some(Line::flat(first.0, hull[0].1));
    }
    let mean_t = mean_time(points);
    // The hull edge spanning the mean time (the first or last edge beyond the ends).
    let i = hull
        .windows(2)
        .position(|e| e[1].0 as f64 >= mean_t)
        .unwrap_or(hull.len() - 2);
    let (a, b) = (hull[i], hull[i + 1]);
    Some(Line {
        t0: a.0,
        y0: a.1,
        slope: (b.1 - a.1) as f64 / (b.0 - a.0) as f64,
    })
}

/// The supporting line over `points`: every point lies on or below it.
pub fn upper_support(points: &[(i64, i64)]) -> Option<Line> {
    let negated: Vec<(i64, i64)> = points.iter().map(|&(t, y)| (t, -y)).collect();
    lower_support(&negated).map(|l| Line {
        t0: l.t0,
        y0: -l.y0,
        slope: -l.slope,
    })
}

/// Two parallel lines, `hi` under every point of `under` and `lo` over every point of
/// `over`, at the common slope that puts them furthest apart: `None` when either set is
/// empty. `gap` (`hi − lo`, ns) is negative when no line separates the sets — they
/// contradict one line (a step). The gap, as a function of the slope, is concave and
/// piecewise linear: its maximum is at one of the two hulls' edge slopes.
pub fn widest_parallel(under: &[(i64, i64)], over: &[(i64, i64)]) -> Option<(Line, Line, f64)> {
    let t_ref = under.first()?.0.min(over.first()?.0);
    let low = lower_hull(under);
    let negated: Vec<(i64, i64)> = over.iter().map(|&(t, y)| (t, -y)).collect();
    let high: Vec<(i64, i64)> = lower_hull(&negated)
        .into_iter()
        .map(|(t, y)| (t, -y))
        .collect();
    let x = |t: i64| (t - t_ref) as f64;
    // The highest intercept under `low` and the lowest over `high`, at slope `b`.
    let under_at = |b: f64| {
        low.iter()
            .map(|&(t, y)| y as f64 - b * x(t))
            .fold(f64::INFINITY, f64::min)
    };
    let over_at = |b: f64| {
        high.iter()
            .map(|&(t, y)| y as f64 - b * x(t))
            .fold(f64::NEG_INFINITY, f64::max)
    };
    let gap = |b: f64| under_at(b) - over_at(b);
    let edge_slopes = |h: &[(i64, i64)]| -> Vec<f64> {
        h.windows(2)
            .map(|e| (e[1].1 - e[0].1) as f64 / (e[1].0 - e[0].0) as f64)
            .collect()
    };
    let mut slopes = edge_slopes(&low);
    slopes.extend(edge_slopes(&high));
    slopes.sort_by(f64::total_cmp);
    if slopes.is_empty() {
        slopes.push(0.0);
    }
    // A concave sequence: the first slope not below its successor is the maximum.
    let (mut a, mut b) = (0, slopes.len() - 1);
    while a < b {
        let m = (a + b) / 2;
        if gap(slopes[m]) < gap(slopes[m + 1]) {
            a = m + 1;
        } else {
            b = m;
        }
    }
    let slope = slopes[a];
    let (hi, lo) = (under_at(slope), over_at(slope));
    let line = |y: f64, outward: fn(f64) -> f64| Line {
        t0: t_ref,
        y0: outward(y) as i64,
        slope,
    };
    // Rounded outward: the lines must not cut into their points.
    Some((line(hi, f64::floor), line(lo, f64::ceil), hi - lo))
}

fn mean_time(points: &[(i64, i64)]) -> f64 {
    let t0 = points[0].0;
    let sum: i128 = points.iter().map(|p| i128::from(p.0 - t0)).sum();
    t0 as f64 + (sum as f64 / points.len() as f64)
}

/// Andrew's monotone chain, lower half; points of one time keep only their lowest. Cross
/// products in i128: times and delays in ns overflow i64 products.
fn lower_hull(points: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let mut hull: Vec<(i64, i64)> = Vec::new();
    for &p in points {
        if let Some(last) = hull.last_mut() {
            if last.0 == p.0 {
                if p.1 < last.1 {
                    hull.pop();
                } else {
                    continue;
                }
            }
        }
        while hull.len() >= 2 {
            let (o, a) = (hull[hull.len() - 2], hull[hull.len() - 1]);
            let cross = i128::from(a.0 - o.0) * i128::from(p.1 - o.1)
                - i128::from(a.1 - o.1) * i128::from(p.0 - o.0);
            if cross <= 0 {
                hull.pop();
            } else {
                break;
            }
        }
        hull.push(p);
    }
    hull
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_lies_under_every_point_and_follows_a_drifting_floor() {
        // A floor rising 20 ppm with points scattered above it.
        let mut pts = Vec::new();
        let mut x: u64 = 7;
        for i in 0..5_000i64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let t = i * 2_000_000;
            let floor = 1_000 + t / 50_000;
            let jitter = if i % 97 == 0 { 0 } else { (x % 20_000) as i64 };
            pts.push((t, floor + jitter));
        }
        let line = lower_support(&pts).unwrap();
        for &(t, y) in &pts {
            assert!(line.at(t) <= y as f64 + 1e-6, "above a point at {t}");
        }
        assert!(
            (line.slope * 1e6 - 20.0).abs() < 0.05,
            "{}",
            line.slope * 1e6
        );
        let up = upper_support(&pts.iter().map(|&(t, y)| (t, -y)).collect::<Vec<_>>()).unwrap();
        assert!((up.slope * 1e6 + 20.0).abs() < 0.05);
    }

    #[test]
    fn the_widest_parallel_lines_separate_or_say_by_how_much_they_cannot() {
        // A floor of 20 ppm: A→B 30 µs above, B→A 45 µs below.
        let under: Vec<(i64, i64)> = (0..100).map(|i| (i * 1_000_000, 30_000 + i * 20)).collect();
        let over: Vec<(i64, i64)> = (0..100)
            .map(|i| (i * 1_000_000 + 500_000, -45_000 + i * 20 + 10))
            .collect();
        let (hi, lo, gap) = widest_parallel(&under, &over).unwrap();
        assert!((gap - 75_000.0).abs() < 2.0, "{gap}");
        assert!((hi.slope * 1e6 - 20.0).abs() < 0.01, "{}", hi.slope * 1e6);
        assert!(under.iter().all(|&(t, y)| hi.at(t) <= y as f64));
        assert!(over.iter().all(|&(t, y)| lo.at(t) >= y as f64));
        // A B→A sample 400 µs up (a step) contradicts every line.
        let mut stepped = over.clone();
        stepped[60].1 += 400_000;
        let (_, _, gap) = widest_parallel(&under, &stepped).unwrap();
        assert!(gap < -300_000.0, "{gap}");
        assert!(widest_parallel(&under, &[]).is_none());
    }

    #[test]
    fn one_point_or_one_time_gives_a_flat_line() {
        assert_eq!(lower_support(&[]), None);
        let l = lower_support(&[(5, 9)]).unwrap();
        assert_eq!(l.at(100), 9.0);
        let l = lower_support(&[(5, 9), (5, 3), (5, 7)]).unwrap();
        assert_eq!(l.at(0), 3.0);
    }
}
