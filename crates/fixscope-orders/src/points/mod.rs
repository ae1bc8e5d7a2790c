//! Two points, two clocks (`--point`, `--clock`, #32): one FIX session captured at two
//! points, each stamped by its own clock — what the host nearer the acceptor took, what the
//! wire took, and each way's share of it with its uncertainty.
//!
//! ```text
//!  A (first --point) ──────────── wire ──────────── B (second --point)      acceptor
//!  captures: segments stamped by clock A            segments stamped by clock B
//! ```
//!
//! 1. [`samples`]: the segments both points saw, paired (flow, sequence, acknowledgement,
//!    flags, payload); which point is nearer the acceptor, told from them without a clock.
//! 2. [`clock`]: the offset `θ = clock_B − clock_A` as an interval per window, its drift and
//!    its steps (`--clock estimate`); or the user's (`trust`, `offset=`), checked against
//!    the same samples — an offset outside the causality interval is an error.
//! 3. [`far`]: the far point's orders, read by a pipeline of their own.
//! 4. [`join`]: the near point's pipeline joins each first response with the far order of
//!    the same identity: `residence`, `wire_rtt` (exact), `one_way_fwd`, `one_way_rev`
//!    (with their uncertainty), sent through `OrderSink` like the router's hops.
//!
//! `docs/points.md` says what can and cannot be known, and why.

mod clock;
mod envelope;
mod far;
mod figures;
mod join;
mod samples;
mod spec;
#[cfg(test)]
mod tests;

pub use clock::{estimate, ClockEstimate, ClockSample, Step, Unestimable, Window};
pub use envelope::Line;
pub use far::{message_identity, order_identity, FarMessages, FarOrder, FarOrderSink, FarOrders};
pub use figures::{is_tai_utc, ClockFigures, StepFigures, WindowFigures, TAI_UTC_NS};
pub use fixscope_model::counters::points::{counters_if_present, PointCounters};
pub use join::PointJoiner;
pub use samples::{b_is_nearer_acceptor, match_points, Matched, PairedSegment, SegmentStamps};
pub use spec::{parse_signed_duration, ClockMode, ClockSettings, PointSpec, UncertaintyLimit};

/// What is known of the offset at one time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bounds {
    /// `lo ≤ θ ≤ hi`.
    Known(f64, f64),
    /// No segment bounds one side, or the samples contradict each other there.
    Unbounded,
    /// The clock stepped about then (between the last segment the new offset contradicts
    /// and the first the old one does): only the union of both sides' bounds is known.
    AtStep,
}

/// What segment matching found, for the ledger.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SegmentCounts {
    pub matched: u64,
    pub unmatched: u64,
    pub repeated: u64,
}

/// Everything the near point's pipeline needs to join its orders: built before it runs.
#[derive(Debug)]
pub struct PointsSetup {
    /// The first `--point` (A: the clock every time is reported in) and the second (B).
    pub a: String,
    pub b: String,
    /// B is nearer the acceptor (A is then the far point).
    pub b_near: bool,
    pub settings: ClockSettings,
    pub estimate: ClockEstimate,
    /// `trust` or `offset=`: `θ` and its uncertainty, used instead of the estimate.
    pub fixed: Option<(i64, u64)>,
    pub segments: SegmentCounts,
    pub samples_forward: u64,
    pub samples_reverse: u64,
    /// How finely each point stamps (ns): A's and B's. A stamp is its true time less up to
    /// its resolution, so `δ` is off by up to B's one way and A's the other: every bound
    /// is widened by them (a microsecond pcap's truncation never puts the truth outside).
    pub resolution_ns: (i64, i64),
    /// The far point's answered orders (set once its pipeline has run).
    pub far: FarOrders,
    /// `--trace`: the far point's messages, for its column.
    pub far_messages: Option<FarMessages>,
}

impl PointsSetup {
    /// Pairs the points' segments, tells which is nearer the acceptor and estimates the
    /// clock; with `trust` or `offset=`, checks the offset given against causality.
    pub fn build(
        a: &str,
        b: &str,
        stamps_a: &SegmentStamps,
        stamps_b: &SegmentStamps,
        settings: ClockSettings,
    ) -> Result<Self, String> {
        let matched = match_points(stamps_a, stamps_b);
        if matched.pairs.is_empty() {
            return Err(format!(
                "points {a} and {b} share no TCP segment on the watched ports: not one \
                 session seen twice (check -p, and that no NAT or TSO changed the segments \
                 between them)"
            ));
        }
        let b_near = b_is_nearer_acceptor(&matched.pairs).ok_or_else(|| {
            format!(
                "cannot tell which of {a} and {b} is nearer the acceptor: the segments do \
                 not say the same every second (one place captured twice?)"
            )
        })?;
        let samples: Vec<ClockSample> = matched
            .pairs
            .iter()
            .map(|p| ClockSample {
                t_ns: p.t_a_ns,
                delta_ns: p.delta_ns,
                a_to_b: p.toward_acceptor == b_near,
            })
            .collect();
        let forward = matched.pairs.iter().filter(|p| p.toward_acceptor).count() as u64;
        let fixed = match &settings.mode {
            ClockMode::Estimate => None,
            ClockMode::Trust => Some((0, 0)),
            ClockMode::Offset {
                of,
                relative_to,
                offset_ns,
                uncertainty_ns,
            } => {
                if of == b && relative_to == a {
                    Some((*offset_ns, *uncertainty_ns))
                } else if of == a && relative_to == b {
                    Some((-*offset_ns, *uncertainty_ns))
                } else {
                    return Err(format!(
                        "--clock offset={of}-{relative_to}=…: name the two points ({b}-{a})"
                    ));
                }
            }
        };
        let resolution_ns = (stamps_a.resolution_ns(), stamps_b.resolution_ns());
        if let Some((theta, u)) = fixed {
            check_causality(
                &samples,
                theta,
                u,
                resolution_ns,
                a,
                b,
                settings.mode.name(),
            )?;
        }
        Ok(PointsSetup {
            a: a.to_string(),
            b: b.to_string(),
            b_near,
            estimate: estimate(
                &samples,
                settings.window_ns,
                resolution_ns.0 + resolution_ns.1,
            ),
            settings,
            fixed,
            segments: SegmentCounts {
                matched: matched.pairs.len() as u64,
                unmatched: matched.unmatched,
                repeated: matched.repeated,
            },
            samples_forward: forward,
            samples_reverse: matched.pairs.len() as u64 - forward,
            resolution_ns,
            far: FarOrders::default(),
            far_messages: None,
        })
    }

    /// The point nearer the acceptor, and the other.
    pub fn near(&self) -> &str {
        if self.b_near {
            &self.b
        } else {
            &self.a
        }
    }

    pub fn far_point(&self) -> &str {
        if self.b_near {
            &self.a
        } else {
            &self.b
        }
    }

    /// What is known of `θ` at A's time `t`.
    pub fn bounds_at(&self, t: i64) -> Bounds {
        if let Some((theta, u)) = self.fixed {
            return Bounds::Known((theta - u as i64) as f64, (theta + u as i64) as f64);
        }
        let (res_a, res_b) = self.resolution_ns;
        match self.estimate.window_at(t) {
            Some(w) if w.transition => Bounds::AtStep,
            Some(w) => match w.bounds(t) {
                Some((lo, hi)) if lo <= hi => Bounds::Known(lo - res_a as f64, hi + res_b as f64),
                _ => Bounds::Unbounded,
            },
            None => Bounds::Unbounded,
        }
    }

    /// The clock as reported, with the one-way stages' largest uncertainty so far.
    pub fn figures(&self, one_way_uncertainty_ns: [u64; 2]) -> ClockFigures {
        let windows = ClockFigures::windows_of(&self.estimate, self.b_near, self.resolution_ns);
        let tai_utc = windows
            .iter()
            .filter_map(|w| w.middle)
            .any(|(lo, hi)| is_tai_utc(lo + (hi - lo) / 2));
        ClockFigures {
            mode: self.settings.mode.name(),
            of: self.b.clone(),
            relative_to: self.a.clone(),
            near_acceptor: self.near().to_string(),
            far: self.far_point().to_string(),
            samples_forward: self.samples_forward,
            samples_reverse: self.samples_reverse,
            windows,
            steps: self
                .estimate
                .steps
                .iter()
                .map(|s| StepFigures {
                    at_ns: s.at_ns(),
                    after_ns: s.after_ns,
                    by_ns: s.by_ns,
                    size_ns: s.size_ns,
                    tai_utc: is_tai_utc(s.size_ns),
                })
                .collect(),
            tai_utc,
            fixed: self.fixed,
            one_way_uncertainty_ns,
            limit: self.settings.limit,
        }
    }
}

/// `--clock trust` or `offset=`: every segment must leave before it arrives by the offset
/// given (± its uncertainty). The first that does not is the error, with the bound it sets.
fn check_causality(
    samples: &[ClockSample],
    theta: i64,
    u: u64,
    (res_a, res_b): (i64, i64),
    a: &str,
    b: &str,
    mode: &str,
) -> Result<(), String> {
    let u = u as i64;
    // A → B: θ ≤ δ (+ B's resolution), so θ − u must not exceed it; B → A: θ ≥ δ (− A's).
    let broken = samples.iter().find(|s| {
        if s.a_to_b {
            theta - u > s.delta_ns + res_b
        } else {
            theta + u < s.delta_ns - res_a
        }
    });
    let Some(s) = broken else {
        return Ok(());
    };
    let (from, to, bound) = if s.a_to_b {
        (
            a,
            b,
            format!("at most {}", signed_ns(s.delta_ns + res_b + u)),
        )
    } else {
        (
            b,
            a,
            format!("at least {}", signed_ns(s.delta_ns - res_a - u)),
        )
    };
    Err(format!(
        "--clock {mode}: the offset {b} − {a} = {} breaks causality: at {} a segment from \
         {from} to {to} would arrive before it left; the offset must be {bound} there \
         (use --clock estimate)",
        signed_ns(theta),
        fixscope_model::clock::utc(s.t_ns.max(0) as u64, 0),
    ))
}

/// `+12.4us`, `-5.00ms`.
pub fn signed_ns(ns: i64) -> String {
    let sign = if ns < 0 { '-' } else { '+' };
    format!(
        "{sign}{}",
        fixscope_model::human::human_ns(ns.unsigned_abs() as f64)
    )
}
