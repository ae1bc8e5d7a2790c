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
//! - **Steps**: the samples either fit one line (some line lies under every A→B δ and over
//!   every B→A δ, to the stamps' resolution) or a step split them. The run is cut where a
//!   sample first contradicts the stretch before it, in any second, the first and last
//!   included; the step is placed between the last segment the new offset contradicts and
//!   that first one, and sized by the two sides' midlines there. Between those two
//!   segments the bounds are the union of both sides' — honest, if wide. A queue only
//!   widens the interval: it contradicts nothing. A cut smaller than 2 µs is no step, only
//!   a window's end (the rate changed).
//! - **Never inverted**: a window too short to fix each envelope's slope apart (the lines
//!   would cross inside it) takes the two parallel lines furthest apart; a window with one
//!   direction only, or whose samples contradict one line beyond the resolution, has no
//!   interval and says why ([`Unestimable`]): its orders are `points_one_way_unbounded`.

use super::envelope::{lower_support, upper_support, widest_parallel, Line};

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
    /// Its samples contradict one offset line beyond the stamps' resolution (no bounds).
    pub contradicted: bool,
}

/// Why a window has no interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unestimable {
    /// No A→B segment: nothing bounds the offset from above.
    NoSampleAToB,
    /// No B→A segment: nothing bounds it from below.
    NoSampleBToA,
    /// The samples contradict one line (beyond the stamps' resolution) and no step
    /// splits them.
    Contradicted,
}

impl Window {
    /// `(lo, hi)` at `t`, in ns: `None` when a side is unbounded.
    pub fn bounds(&self, t: i64) -> Option<(f64, f64)> {
        Some((self.lo?.at(t), self.hi?.at(t)))
    }

    /// Why the window has no interval, if it has none.
    pub fn unestimable(&self) -> Option<Unestimable> {
        if self.contradicted {
            Some(Unestimable::Contradicted)
        } else if self.hi.is_none() {
            Some(Unestimable::NoSampleAToB)
        } else if self.lo.is_none() {
            Some(Unestimable::NoSampleBToA)
        } else {
            None
        }
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

/// The smallest step named: a smaller contradiction only splits the windows (the rate
/// changed, or the stamps are coarser than said).
const MIN_STEP_NS: f64 = 2_000.0;

/// Estimates `θ` from `samples` (sorted by time). `slack_ns`: how far two samples may
/// contradict one line from the stamps' resolution alone (A's plus B's).
pub fn estimate(samples: &[ClockSample], window_ns: u64, slack_ns: i64) -> ClockEstimate {
    if samples.is_empty() {
        return ClockEstimate::default();
    }
    let window_ns = window_ns.max(1_000_000) as i64;
    let slack = slack_ns.max(0) as f64;
    // Stretches each consistent with one line: cut where a sample first contradicts the
    // stretch before it; what a step left ambiguous (samples consistent with both sides)
    // is found from the stretch after it, backwards.
    let mut cuts = vec![0];
    while let Some(&from) = cuts.last() {
        let end = consistent_from(samples, from, slack);
        if end == samples.len() {
            break;
        }
        cuts.push(end);
    }
    cuts.push(samples.len());
    let t = |i: usize| samples[i].t_ns;
    let mut windows = Vec::new();
    let mut steps = Vec::new();
    let mut transitions = Vec::new();
    let mut start = t(0);
    for k in 1..cuts.len() - 1 {
        let (prev, cut, next) = (cuts[k - 1], cuts[k], cuts[k + 1]);
        // The last sample before the cut the new offset contradicts (the cut is the first
        // the old one does): between them, samples both allow.
        let first_new = consistent_to(samples, prev, next, slack);
        let (after_ns, by_ns) = (t(first_new - 1), t(cut));
        let old = side(slice(
            &samples[prev..first_new],
            after_ns + 1 - window_ns,
            after_ns + 1,
        ));
        let new = side(slice(&samples[cut..next], by_ns, by_ns + window_ns));
        let size = step_size(old, new, after_ns + (by_ns - after_ns) / 2);
        if size.abs() >= MIN_STEP_NS && after_ns < by_ns {
            fit_stretch(samples, start, after_ns + 1, window_ns, slack, &mut windows);
            transitions.push((windows.len(), after_ns + 1, by_ns));
            steps.push(Step {
                after_ns,
                by_ns,
                size_ns: size.round() as i64,
            });
        } else {
            // Too small to name: the windows are only cut there.
            fit_stretch(samples, start, by_ns, window_ns, slack, &mut windows);
        }
        start = by_ns;
    }
    fit_stretch(
        samples,
        start,
        t(samples.len() - 1) + 1,
        window_ns,
        slack,
        &mut windows,
    );
    // Each transition between the windows on either side (inserted last to first so the
    // indices hold).
    for &(at, t0, t1) in transitions.iter().rev() {
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
                contradicted: false,
            },
        );
    }
    ClockEstimate { windows, steps }
}

/// Whether `samples` are consistent with one offset line, to `slack` ns.
fn consistent(samples: &[ClockSample], slack: f64) -> bool {
    let (ab, ba) = directions(samples);
    widest_parallel(&ab, &ba).is_none_or(|(_, _, gap)| gap >= -slack)
}

/// The end of the longest stretch from `from` consistent with one line (galloping, then
/// halving: any part of a consistent stretch is consistent).
fn consistent_from(samples: &[ClockSample], from: usize, slack: f64) -> usize {
    let n = samples.len();
    let (mut good, mut step) = (from + 1, 256);
    while good < n {
        let probe = (good + step).min(n);
        if !consistent(&samples[from..probe], slack) {
            return last_true(good, probe, |e| consistent(&samples[from..e], slack));
        }
        good = probe;
        step *= 2;
    }
    n
}

/// The start of the longest stretch ending at `to` consistent with one line, not before
/// `floor`.
fn consistent_to(samples: &[ClockSample], floor: usize, to: usize, slack: f64) -> usize {
    let (mut good, mut step) = (to - 1, 256);
    while good > floor {
        let probe = good.saturating_sub(step).max(floor);
        if !consistent(&samples[probe..to], slack) {
            // The smallest start that is consistent: the last `s` whose complement fails.
            let far = to - probe;
            let len = last_true(to - good, far, |l| consistent(&samples[to - l..to], slack));
            return to - len;
        }
        good = probe;
        step *= 2;
    }
    floor
}

/// The largest `x` in `[good, bad)` with `ok(x)`, given `ok(good)` and `!ok(bad)` and `ok`
/// true up to a point.
fn last_true(mut good: usize, mut bad: usize, ok: impl Fn(usize) -> bool) -> usize {
    while bad - good > 1 {
        let m = good + (bad - good) / 2;
        if ok(m) {
            good = m;
        } else {
            bad = m;
        }
    }
    good
}

/// One side of a cut: its upper and lower line (A→B, B→A).
type Side = (Option<Line>, Option<Line>);

/// The lines of one side of a cut.
fn side(samples: &[ClockSample]) -> Side {
    let (ab, ba) = directions(samples);
    (lower_support(&ab), upper_support(&ba))
}

/// How far `θ` jumped at `t` between the lines either side of a cut: the midlines'
/// difference, or one bound's when a side has only one.
fn step_size(old: Side, new: Side, t: i64) -> f64 {
    let mid = |(hi, lo): Side| Some((hi?.at(t) + lo?.at(t)) / 2.0);
    if let (Some(x), Some(y)) = (mid(old), mid(new)) {
        return y - x;
    }
    let same: Vec<f64> = [(old.0, new.0), (old.1, new.1)]
        .into_iter()
        .filter_map(|(x, y)| Some(y?.at(t) - x?.at(t)))
        .collect();
    if same.is_empty() {
        // One direction each side: their contradiction is all that is known.
        let bound = |(hi, lo): Side| hi.or(lo).map_or(0.0, |l| l.at(t));
        return bound(new) - bound(old);
    }
    same.iter().sum::<f64>() / same.len() as f64
}

/// `(t, δ)` of each direction: A→B, then B→A.
type Directions = (Vec<(i64, i64)>, Vec<(i64, i64)>);

fn directions(samples: &[ClockSample]) -> Directions {
    let pick = |a_to_b: bool| {
        samples
            .iter()
            .filter(|x| x.a_to_b == a_to_b)
            .map(|x| (x.t_ns, x.delta_ns))
            .collect()
    };
    (pick(true), pick(false))
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
    slack: f64,
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
        out.push(fit_window(slice(samples, w[0], w[1]), w[0], w[1], slack));
    }
}

/// One window's lines: each the envelope of its own direction, unless they cross inside
/// the window (too short a span, too few samples to fix two slopes apart); then the two
/// parallel lines furthest apart, which cross nowhere. Samples that still contradict one
/// line by more than the stamps' resolution leave the window unbounded, said so.
fn fit_window(s: &[ClockSample], start_ns: i64, end_ns: i64, slack: f64) -> Window {
    let (ab, ba) = directions(s);
    let (mut hi, mut lo) = (lower_support(&ab), upper_support(&ba));
    let mut contradicted = false;
    if let (Some(h), Some(l)) = (hi, lo) {
        if h.at(start_ns) < l.at(start_ns) || h.at(end_ns) < l.at(end_ns) {
            let (ph, pl, gap) = widest_parallel(&ab, &ba).expect("both directions");
            if gap >= 0.0 {
                (hi, lo) = (Some(ph), Some(pl));
            } else if gap >= -slack {
                // Within the stamps' resolution, which widens every bound: one line.
                let mid = Line {
                    y0: ((ph.y0 + pl.y0) as f64 / 2.0).round() as i64,
                    ..ph
                };
                (hi, lo) = (Some(mid), Some(mid));
            } else {
                (hi, lo, contradicted) = (None, None, true);
            }
        }
    }
    Window {
        start_ns,
        end_ns,
        hi,
        lo,
        samples_a_to_b: ab.len() as u64,
        samples_b_to_a: ba.len() as u64,
        transition: false,
        contradicted,
    }
}
