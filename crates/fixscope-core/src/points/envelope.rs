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
    fn one_point_or_one_time_gives_a_flat_line() {
        assert_eq!(lower_support(&[]), None);
        let l = lower_support(&[(5, 9)]).unwrap();
        assert_eq!(l.at(100), 9.0);
        let l = lower_support(&[(5, 9), (5, 3), (5, 7)]).unwrap();
        assert_eq!(l.at(0), 3.0);
    }
}
