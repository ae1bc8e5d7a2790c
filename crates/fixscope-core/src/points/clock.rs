//! The offset between two points' clocks, `θ(t) = clock_B − clock_A` at A's time `t`, from
//! the segments both saw.
//!
//! What can be known (Freris, Graham & Kumar): a segment from A to B says `θ ≤ δ`, one from
//! B to A says `θ ≥ δ`; nothing narrows `θ` below the causality interval they leave, whose
//! width is the two directions' minimum one-way delays added up. So the estimate is that
//! interval, never a point:
//!
//! - **Envelopes** (Moon et al.): per window (`--clock-window`, 10 s), the highest line
//!   under every A→B sample is the offset's upper bound, the lowest line over every B→A
//!   sample its lower bound. Their slopes are the drift; their midpoint is the estimate,
//!   exact when the two directions' minima are equal, off by half their difference
//!   otherwise (which no method can see).
//! - **Steps** (Paxson): per second, the midpoint of the two envelopes moves with the drift;
//!   a move far beyond its spread with the width unchanged is the clock stepping (a queue
//!   widens the interval instead). A second in which the step happened is narrower than its
//!   neighbours (old and new clock mixed); the step is placed between the last segment the
//!   new offset contradicts and the first the old one does, and the windows are split
//!   there. Between those two segments the bounds are the union of both sides' — honest,
//!   if wide.

use super::envelope::{lower_support, upper_support, Line};

/// One segment seen at both points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockSample {
    /// A's stamp.
    pub t_ns: i64,
    /// B's stamp minus A's.
    pub delta_ns: i64,
    /// The segment went from A to B: `θ ≤ δ` (otherwise `θ ≥ δ`).
    pub a_to_b: bool,
}

/// One stretch of A's time with one offset line per bound.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    pub start_ns: i64,
    /// Exclusive.
    pub end_ns: i64,
    /// `θ ≤ hi(t)`; `None`: no A→B segment bounds it.
    pub hi: Option<Line>,
    /// `θ ≥ lo(t)`; `None`: no B→A segment bounds it.
    pub lo: Option<Line>,
    pub samples_a_to_b: u64,
    pub samples_b_to_a: u64,
    /// The stretch in which a step happened (its bounds are both sides' union).
    pub transition: bool,
}

impl Window {
    /// `(lo, hi)` at `t`, in ns: `None` when a side is unbounded.
    pub fn bounds(&self, t: i64) -> Option<(f64, f64)> {
        Some((self.lo?.at(t), self.hi?.at(t)))
    }

    /// The drift of the midpoint, in parts per million.
    pub fn drift_ppm(&self) -> Option<f64> {
        Some((self.hi?.slope + self.lo?.slope) / 2.0 * 1e6)
    }
}

/// A step of B's clock against A's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step {
    /// The step happened after this A time …
    pub after_ns: i64,
    /// … and at or before this one.
    pub by_ns: i64,
    /// How far `θ` jumped.
    pub size_ns: i64,
}

impl Step {
    pub fn at_ns(&self) -> i64 {
        self.after_ns + (self.by_ns - self.after_ns) / 2
    }
}

/// The estimated offset over the run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClockEstimate {
    /// Contiguous, in time order.
    pub windows: Vec<Window>,
    pub steps: Vec<Step>,
}

impl ClockEstimate {
    /// The window holding `t` (the first or last one beyond the run's ends).
    pub fn window_at(&self, t: i64) -> Option<&Window> {
        let i = self.windows.partition_point(|w| w.end_ns <= t);
        self.windows.get(i.min(self.windows.len().checked_sub(1)?))
    }

    /// `(lo, hi)` of `θ` at `t`.
    pub fn bounds_at(&self, t: i64) -> Option<(f64, f64)> {
        self.window_at(t)?.bounds(t)
    }
}

/// Per second (or a tenth of the window), the tightest sample each way.
#[derive(Clone, Copy, Debug)]
struct Bin {
    first: usize,
    end: usize,
    /// The lowest A→B δ and its time.
    hi: (i64, i64),
    /// The highest B→A δ and its time.
    lo: (i64, i64),
}

impl Bin {
    fn mid(&self) -> f64 {
        (self.hi.1 as f64 + self.lo.1 as f64) / 2.0
    }
    fn width(&self) -> f64 {
        (self.hi.1 - self.lo.1) as f64
    }
    fn time(&self) -> f64 {
        (self.hi.0 as f64 + self.lo.0 as f64) / 2.0
    }
}

/// The smallest step named: below it, steps hide in the envelopes' spread.
const MIN_STEP_NS: f64 = 2_000.0;

/// Estimates `θ` from `samples` (sorted by time).
pub fn estimate(samples: &[ClockSample], window_ns: u64) -> ClockEstimate {
    let (Some(first), Some(last)) = (samples.first(), samples.last()) else {
        return ClockEstimate::default();
    };
    let window_ns = window_ns.max(1_000_000) as i64;
    let bin_ns = (window_ns / 10).min(1_000_000_000);
    let bins = bins(samples, bin_ns);
    let steps = find_steps(samples, &bins);
    // Stretches between steps, then the transitions themselves.
    let mut windows = Vec::new();
    let mut start = first.t_ns;
    let mut transitions = Vec::new();
    for step in &steps {
        let end = step.after_ns + 1;
        fit_stretch(samples, start, end, window_ns, &mut windows);
        transitions.push((windows.len(), end, step.by_ns));
        start = step.by_ns;
    }
    fit_stretch(samples, start, last.t_ns + 1, window_ns, &mut windows);
    // Each transition between the windows on either side (inserted last to first so the
    // indices hold).
    for &(at, t0, t1) in transitions.iter().rev() {
        if t1 <= t0 {
            continue;
        }
        let before = at.checked_sub(1).and_then(|i| windows.get(i));
        let after = windows.get(at);
        let (hi, lo) = match (before, after) {
            (Some(b), Some(a)) => (
                union_chord(b.hi, a.hi, t0, t1, f64::max),
                union_chord(b.lo, a.lo, t0, t1, f64::min),
            ),
            _ => (None, None),
        };
        let in_it = slice(samples, t0, t1);
        windows.insert(
            at,
            Window {
                start_ns: t0,
                end_ns: t1,
                hi,
                lo,
                samples_a_to_b: in_it.iter().filter(|s| s.a_to_b).count() as u64,
                samples_b_to_a: in_it.iter().filter(|s| !s.a_to_b).count() as u64,
                transition: true,
            },
        );
    }
    ClockEstimate { windows, steps }
}

/// The chord over `[t0, t1]` through the larger (`pick = max`) or smaller of two lines at
/// each end: above (below) both all along, since one line's max (min) is convex (concave).
fn union_chord(
    a: Option<Line>,
    b: Option<Line>,
    t0: i64,
    t1: i64,
    pick: fn(f64, f64) -> f64,
) -> Option<Line> {
    let (a, b) = (a?, b?);
    let y0 = pick(a.at(t0), b.at(t0));
    let y1 = pick(a.at(t1), b.at(t1));
    // Rounded outward: the chord must not cut into either line.
    let outward = |y: f64| {
        if pick(0.0, 1.0) > 0.0 {
            y.ceil()
        } else {
            y.floor()
        }
    };
    let (y0, y1) = (outward(y0), outward(y1));
    Some(Line {
        t0,
        y0: y0 as i64,
        slope: (y1 - y0) / (t1 - t0) as f64,
    })
}

fn slice(samples: &[ClockSample], t0: i64, t1: i64) -> &[ClockSample] {
    let a = samples.partition_point(|s| s.t_ns < t0);
    let b = samples.partition_point(|s| s.t_ns < t1);
    &samples[a..b]
}

/// `[start, end)` cut into windows of at most `window_ns`, each with its lines; a window
/// missing a direction joins its neighbour.
fn fit_stretch(
    samples: &[ClockSample],
    start: i64,
    end: i64,
    window_ns: i64,
    out: &mut Vec<Window>,
) {
    if end <= start {
        return;
    }
    let n = ((end - start + window_ns - 1) / window_ns).max(1);
    let mut cuts: Vec<i64> = (0..=n).map(|i| start + (end - start) * i / n).collect();
    // Merge windows lacking either direction into the previous one (or the next one).
    let complete = |t0: i64, t1: i64| {
        let s = slice(samples, t0, t1);
        s.iter().any(|x| x.a_to_b) && s.iter().any(|x| !x.a_to_b)
    };
    let mut i = 0;
    while cuts.len() > 2 && i + 1 < cuts.len() {
        if complete(cuts[i], cuts[i + 1]) {
            i += 1;
        } else if i + 2 < cuts.len() {
            cuts.remove(i + 1);
        } else {
            cuts.remove(i);
            i = i.saturating_sub(1);
        }
    }
    for w in cuts.windows(2) {
        let s = slice(samples, w[0], w[1]);
        let ab: Vec<(i64, i64)> = s
            .iter()
            .filter(|x| x.a_to_b)
            .map(|x| (x.t_ns, x.delta_ns))
            .collect();
        let ba: Vec<(i64, i64)> = s
            .iter()
            .filter(|x| !x.a_to_b)
            .map(|x| (x.t_ns, x.delta_ns))
            .collect();
        out.push(Window {
            start_ns: w[0],
            end_ns: w[1],
            hi: lower_support(&ab),
            lo: upper_support(&ba),
            samples_a_to_b: ab.len() as u64,
            samples_b_to_a: ba.len() as u64,
            transition: false,
        });
    }
}

fn bins(samples: &[ClockSample], bin_ns: i64) -> Vec<Bin> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < samples.len() {
        let k = samples[i].t_ns.div_euclid(bin_ns);
        let mut j = i;
        // The tightest (time, δ) each way.
        let mut hi: Option<(i64, i64)> = None;
        let mut lo: Option<(i64, i64)> = None;
        while j < samples.len() && samples[j].t_ns.div_euclid(bin_ns) == k {
            let s = samples[j];
            if s.a_to_b {
                if hi.is_none_or(|h| s.delta_ns < h.1) {
                    hi = Some((s.t_ns, s.delta_ns));
                }
            } else if lo.is_none_or(|l| s.delta_ns > l.1) {
                lo = Some((s.t_ns, s.delta_ns));
            }
            j += 1;
        }
        if let (Some(hi), Some(lo)) = (hi, lo) {
            out.push(Bin {
                first: i,
                end: j,
                hi,
                lo,
            });
        }
        i = j;
    }
    out
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mid = v.len() / 2;
    *v.select_nth_unstable_by(mid, |a, b| a.total_cmp(b)).1
}

/// Steps of the offset: jumps of the envelopes' midpoint beyond its spread, width unchanged.
fn find_steps(samples: &[ClockSample], bins: &[Bin]) -> Vec<Step> {
    if bins.len() < 3 {
        return Vec::new();
    }
    // The drift: the midpoint's usual move per ns.
    let mut rates: Vec<f64> = bins
        .windows(2)
        .map(|p| (p[1].mid() - p[0].mid()) / (p[1].time() - p[0].time()).max(1.0))
        .collect();
    let rate = median(&mut rates);
    let moved = |a: &Bin, b: &Bin| (b.mid() - a.mid()) - rate * (b.time() - a.time());
    let mut moves: Vec<f64> = bins.windows(2).map(|p| moved(&p[0], &p[1])).collect();
    let centre = median(&mut moves.clone());
    let mut spread: Vec<f64> = moves.iter_mut().map(|m| (*m - centre).abs()).collect();
    let sigma = 1.4826 * median(&mut spread);
    let threshold = (8.0 * sigma).max(MIN_STEP_NS);
    let mut widths: Vec<f64> = bins.iter().map(Bin::width).collect();
    let usual_width = median(&mut widths);
    // A bin in which the clock stepped holds both offsets: narrower than usual.
    let clean: Vec<&Bin> = bins
        .iter()
        .filter(|b| b.width() >= usual_width - threshold)
        .collect();
    let mut steps = Vec::new();
    for p in clean.windows(2) {
        let (a, b) = (p[0], p[1]);
        let m = moved(a, b) - centre;
        let dw = b.width() - a.width();
        if m.abs() > threshold && dw.abs() < m.abs() {
            steps.push(place_step(samples, a, b, rate, threshold / 4.0, m));
        }
    }
    steps
}

/// Where between two clean bins the step happened: after the last segment the new offset
/// contradicts, at or before the first one the old offset contradicts.
fn place_step(
    samples: &[ClockSample],
    before: &Bin,
    after: &Bin,
    rate: f64,
    tolerance: f64,
    size: f64,
) -> Step {
    let last_before = samples[before.end - 1].t_ns;
    let first_after = samples[after.first].t_ns;
    // Each side's bounds carried along the drift.
    let bounds = |b: &Bin, t: i64| {
        (
            b.lo.1 as f64 + rate * (t - b.lo.0) as f64,
            b.hi.1 as f64 + rate * (t - b.hi.0) as f64,
        )
    };
    let contradicts = |b: &Bin, s: &ClockSample| {
        let (lo, hi) = bounds(b, s.t_ns);
        if s.a_to_b {
            (s.delta_ns as f64) < lo - tolerance
        } else {
            (s.delta_ns as f64) > hi + tolerance
        }
    };
    let between = &samples[before.end..after.first];
    let new_says_before = between
        .iter()
        .filter(|s| contradicts(after, s))
        .map(|s| s.t_ns)
        .max();
    let old_says_after = between
        .iter()
        .filter(|s| contradicts(before, s))
        .map(|s| s.t_ns)
        .min();
    let after_ns = new_says_before.unwrap_or(last_before).max(last_before);
    let by_ns = old_says_after.unwrap_or(first_after).min(first_after);
    let (after_ns, by_ns) = if after_ns < by_ns {
        (after_ns, by_ns)
    } else {
        (last_before, first_after)
    };
    Step {
        after_ns,
        by_ns,
        size_ns: size.round() as i64,
    }
}
