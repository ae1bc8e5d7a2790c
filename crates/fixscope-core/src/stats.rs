//! Recording latencies: HDR histograms (3 significant digits) per stage, cumulative and
//! per interval, per request type and per session.
//!
//! Values above the histogram's range (`-x`) are never dropped and never clamped into its
//! top bucket: they are counted in `over_range`, their exact sum and maximum are kept, and
//! percentile ranks count them — a percentile whose rank falls among them is reported as
//! *above range* rather than as a value that would make the tail look better than it was.
//! Count, sum, min and max are exact; percentiles in range are the histogram's (within 0.1%).

use std::cell::OnceCell;

use hdrhistogram::Histogram;

use crate::breakdown::OrderBreakdown;
use crate::correlate::{Latency, RequestType, Stage};
use crate::microburst::{MessageRate, RateFigures};
use crate::segment::ConnectionKey;
use crate::session::{SessionHealth, SessionLayerStats};
use crate::slowest::{OrderRef, SessionRef, SlowOrder, SlowestOrders, DEFAULT_SLOWEST};
use crate::sparse_hist::SparseHistogram;

/// Percentiles every summary reports: the quantile as a fraction (never `pct / 100.0`:
/// `99.9 / 100.0` is 0.9990000000000001 in f64, one rank too high whenever the count is a
/// multiple of 1000), the label people read, and the JSON field name.
pub const PERCENTILES: [(f64, &str, &str); 6] = [
    (0.5, "p50", "p50_ns"),
    (0.9, "p90", "p90_ns"),
    (0.99, "p99", "p99_ns"),
    (0.999, "p99.9", "p99_9_ns"),
    (0.9999, "p99.99", "p99_99_ns"),
    (0.99999, "p99.999", "p99_999_ns"),
];

/// Histogram precision of the main stage histograms.
const SIGNIFICANT_DIGITS: u8 = 3;
/// Per-session histograms are many; two digits keep each near 25 KB.
const SESSION_SIGNIFICANT_DIGITS: u8 = 2;
/// Sessions broken down individually; later ones are summed into the overall figures only.
pub const MAX_TRACKED_SESSIONS: usize = 4096;

/// One latency distribution.
///
/// The counts live in a [`SparseHistogram`], so resetting, merging and the percentiles cost
/// what the recorder holds, not the histogram's size (an interval report walks a few
/// hundred counts, not 25,000). Readers that need hdrhistogram's type (logs, plots,
/// Prometheus buckets) get it from [`LatencyRecorder::histogram`], built on first use and
/// kept until the next change: a run that never asks never builds one.
#[derive(Clone, Debug)]
pub struct LatencyRecorder {
    hist: SparseHistogram,
    count: u64,
    sum_ns: u128,
    min_ns: u64,
    max_ns: u64,
    over_range: u64,
    as_hdr: OnceCell<Histogram<u64>>,
}

/// Figures of one distribution, ready to report.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Distribution {
    pub count: u64,
    pub min_ns: u64,
    pub mean_ns: f64,
    pub max_ns: u64,
    /// Values at the percentiles of [`PERCENTILES`], in that order; `None` when the
    /// percentile's rank falls among the values above the histogram's range (or `count` is 0).
    pub percentiles_ns: [Option<u64>; 6],
    pub over_range: u64,
    /// The histogram's top (`-x`): a percentile reported `None` is above it.
    pub range_ns: u64,
}

impl LatencyRecorder {
    pub fn new(highest_ns: u64, significant_digits: u8) -> Self {
        // 1 ns resolution at the bottom. The bounds are made valid here (high >= 2 x low,
        // 1..=5 digits), so construction cannot fail and no error path is needed.
        let digits = significant_digits.clamp(1, 5);
        LatencyRecorder {
            hist: SparseHistogram::new(highest_ns.max(2), digits),
            count: 0,
            sum_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            over_range: 0,
            as_hdr: OnceCell::new(),
        }
    }

    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.count += 1;
        self.sum_ns += ns as u128;
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
        if ns > self.hist.high() {
            self.over_range += 1;
        } else {
            self.hist.record(ns);
        }
        if self.as_hdr.get().is_some() {
            self.as_hdr.take();
        }
    }

    /// Empties it; costs what it held.
    pub fn reset(&mut self) {
        if self.count == 0 {
            return;
        }
        self.hist.reset();
        self.count = 0;
        self.sum_ns = 0;
        self.min_ns = u64::MAX;
        self.max_ns = 0;
        self.over_range = 0;
        self.as_hdr.take();
    }

    /// Adds everything `other` recorded (same bounds: both come from one [`Stats`]); costs
    /// what `other` holds. Merging the recorders of two halves of a run gives exactly the
    /// recorder of the whole.
    pub fn merge(&mut self, other: &LatencyRecorder) {
        if other.count == 0 {
            return;
        }
        self.hist.merge_from(&other.hist);
        self.count += other.count;
        self.sum_ns += other.sum_ns;
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
        self.over_range += other.over_range;
        self.as_hdr.take();
    }

    /// [`LatencyRecorder::merge`] under the name every mergeable part of a run uses.
    pub fn merge_from(&mut self, other: &LatencyRecorder) {
        self.merge(other);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// The histogram of the values in range (`count() - over_range()` of them), as
    /// hdrhistogram's type: built on the first call after a change.
    pub fn histogram(&self) -> &Histogram<u64> {
        self.as_hdr.get_or_init(|| self.hist.to_histogram())
    }

    /// Values above the histogram's range.
    pub fn over_range(&self) -> u64 {
        self.over_range
    }

    /// The top of the histogram's range (`-x`).
    pub fn range_ns(&self) -> u64 {
        self.hist.high()
    }

    /// The value at quantile `q` of everything recorded, over-range values included in the
    /// ranks; `None` when that rank is above the histogram's range.
    pub fn value_at_quantile(&self, q: f64) -> Option<u64> {
        self.values_at_quantiles([q])[0]
    }

    /// [`LatencyRecorder::value_at_quantile`] of ascending quantiles, in one walk.
    pub fn values_at_quantiles<const N: usize>(&self, qs: [f64; N]) -> [Option<u64>; N] {
        let mut out = [None; N];
        if self.count == 0 {
            return out;
        }
        let ranks = qs.map(|q| rank_of(q, self.count));
        // Ranks beyond the histogram's values fall among those above range: None.
        let in_range = ranks.iter().take_while(|&&r| r <= self.hist.len()).count();
        let mut values = [0u64; N];
        self.hist
            .values_at_ranks(&ranks[..in_range], &mut values[..in_range]);
        for i in 0..in_range {
            // The histogram reports a bucket's upper edge; never beyond the true extremes.
            out[i] = Some(values[i].clamp(self.min_ns, self.max_ns));
        }
        out
    }

    pub fn distribution(&self) -> Distribution {
        let range_ns = self.hist.high();
        if self.count == 0 {
            return Distribution {
                range_ns,
                ..Distribution::default()
            };
        }
        Distribution {
            count: self.count,
            min_ns: self.min_ns,
            mean_ns: self.sum_ns as f64 / self.count as f64,
            max_ns: self.max_ns,
            percentiles_ns: self.values_at_quantiles(PERCENTILES.map(|(q, _, _)| q)),
            over_range: self.over_range,
            range_ns,
        }
    }
}

/// The rank (1-based) of quantile `q` among `count` values, as hdrhistogram computes it.
fn rank_of(q: f64, count: u64) -> u64 {
    ((q.min(1.0) * count as f64).ceil() as u64).max(1)
}

/// The value at quantile `q` of `count` values of which `hist` holds those in range (the
/// rest were above it), clamped to the exact `[min_ns, max_ns]`; `None` when the rank
/// falls above the range (or `count` is 0). For readers that hold a histogram and its
/// exact figures apart from a [`LatencyRecorder`] (reports, plots).
pub fn quantile_with_over_range(
    hist: &Histogram<u64>,
    count: u64,
    min_ns: u64,
    max_ns: u64,
    q: f64,
) -> Option<u64> {
    if count == 0 {
        return None;
    }
    // The rank as hdrhistogram computes it (so in-range results are identical to its
    // value_at_quantile), but over every value, not just those in the histogram.
    let rank = ((q.min(1.0) * count as f64).ceil() as u64).max(1);
    if rank > hist.len() {
        return None;
    }
    let mut seen = 0u64;
    let value = hist.iter_recorded().find_map(|v| {
        seen += v.count_since_last_iteration();
        (seen >= rank).then(|| hist.highest_equivalent(v.value_iterated_to()))
    })?;
    // The histogram reports a bucket's upper edge; never beyond the true extremes.
    Some(value.clamp(min_ns, max_ns))
}

/// A session (connection) as shown in the per-session table.
#[derive(Clone, Debug)]
pub struct SessionStats {
    pub id: u64,
    pub connection: ConnectionKey,
    /// SenderCompID/TargetCompID of the requests (the client's view).
    pub sender_comp_id: String,
    pub target_comp_id: String,
    pub requests: u64,
    pub responses: u64,
    /// The session layer: counters, state, alarms, message rate.
    pub health: SessionHealth,
    /// Allocated with the session's first latency: sessions that never see an order (port
    /// scans, heartbeats-only, SYN floods) cost no histogram.
    first_response: Option<LatencyRecorder>,
    /// The breakdown stages (`--breakdown`), indexed as [`Stage::BREAKDOWN`]; allocated
    /// with the session's first breakdown.
    breakdown: Option<Box<[LatencyRecorder; 4]>>,
}

impl SessionStats {
    /// The session's distribution of one breakdown stage (empty without `--breakdown`).
    pub fn breakdown(&self, stage: Stage) -> Distribution {
        let i = Stage::BREAKDOWN.iter().position(|&s| s == stage);
        match (self.breakdown.as_deref(), i) {
            (Some(recorders), Some(i)) => recorders[i].distribution(),
            _ => Distribution::default(),
        }
    }

    /// The session's request → first response recorder (`None` before its first latency).
    pub fn first_response_recorder(&self) -> Option<&LatencyRecorder> {
        self.first_response.as_ref()
    }

    /// The session's request → first response distribution.
    pub fn first_response(&self) -> Distribution {
        self.first_response
            .as_ref()
            .map_or_else(Distribution::default, LatencyRecorder::distribution)
    }
}

/// The cumulative recorders of a summary taken in the middle of an interval.
struct CumulativeViews {
    by_type: [[LatencyRecorder; Stage::COUNT]; 3],
    by_stage: [LatencyRecorder; Stage::COUNT],
}

/// All latency statistics of a run.
///
/// The hot path writes one histogram per latency: the current interval's, of the request's
/// type and stage. When an interval closes ([`Stats::close_interval`]) its per-stage view is
/// built and it is folded into the cumulative recorders, per type and per stage: work
/// proportional to what the interval holds, never to what the run holds. A summary in the
/// middle of an interval ([`Stats::refresh_views`]) adds the interval to a copy.
pub struct Stats {
    highest_ns: u64,
    /// The current interval, per request type and stage.
    current: [[LatencyRecorder; Stage::COUNT]; 3],
    /// The intervals folded so far, per request type and stage.
    earlier: [[LatencyRecorder; Stage::COUNT]; 3],
    /// The same per stage (all request types).
    earlier_stage: [LatencyRecorder; Stage::COUNT],
    interval_view: [LatencyRecorder; Stage::COUNT],
    /// `current` has been folded into `earlier` (the interval is closing).
    folded: bool,
    /// A summary's cumulative views while `current` is not folded (`None`: `earlier` is it).
    unfolded: Option<Box<CumulativeViews>>,
    views_fresh: bool,
    over_range: u64,
    /// Session `id` lives at index `id - 1`: ids are handed out in order from 1, so the
    /// per-message lookup is an index, not a hash.
    sessions: Vec<SessionStats>,
    untracked_sessions: u64,
    /// The slowest orders per stage (`--slowest`).
    slowest: SlowestOrders,
    /// The breakdown stages are measured (`--breakdown`): reports show them.
    breakdown: bool,
    /// The session layer's figures for the run (`test_request_rtt`, reject reasons, rates).
    pub layer: SessionLayerStats,
    /// Latency by the orders' own fields (`--by`).
    pub by: Option<crate::group::GroupStats>,
    /// The session layer was measured (a run's pipeline), not rebuilt from HdrHistogram
    /// logs: reports show it then, or from `logged_layer`.
    layer_known: bool,
    /// Rebuilt from a log: the session layer's figures as the run reported them (one log
    /// read whole; `None` otherwise, and reports leave the session layer out).
    pub logged_layer: Option<crate::report::session_figures::SessionLayerFigures>,
}

impl Stats {
    /// `highest_ns` is the top of the histograms' range (`-x`).
    pub fn new(highest_ns: u64) -> Self {
        let stage = || LatencyRecorder::new(highest_ns, SIGNIFICANT_DIGITS);
        let per_type = || std::array::from_fn(|_| std::array::from_fn(|_| stage()));
        Stats {
            highest_ns,
            current: per_type(),
            earlier: per_type(),
            earlier_stage: std::array::from_fn(|_| stage()),
            interval_view: std::array::from_fn(|_| stage()),
            folded: false,
            unfolded: None,
            views_fresh: true,
            over_range: 0,
            sessions: Vec::new(),
            untracked_sessions: 0,
            slowest: SlowestOrders::new(DEFAULT_SLOWEST),
            breakdown: false,
            layer: SessionLayerStats::new(highest_ns),
            by: None,
            layer_known: true,
            logged_layer: None,
        }
    }

    /// Whether the session layer's figures were measured (false for statistics rebuilt
    /// from logs).
    pub fn layer_known(&self) -> bool {
        self.layer_known
    }

    /// The session layer's figures at `now_ns` (the summary's end): measured, or as a log
    /// held them; `None` when neither (reports then leave the session layer out).
    pub fn session_layer_figures(
        &self,
        now_ns: u64,
    ) -> Option<crate::report::session_figures::SessionLayerFigures> {
        if self.layer_known {
            Some(crate::report::session_figures::SessionLayerFigures::of(
                self, now_ns,
            ))
        } else {
            self.logged_layer.clone()
        }
    }

    /// Records every stage's latency by the values of `--by`'s tags too.
    pub fn with_groups(mut self, spec: Option<crate::group::GroupSpec>) -> Self {
        let highest_ns = self.highest_ns;
        self.by = spec.map(|s| crate::group::GroupStats::new(s, highest_ns));
        self
    }

    /// Measures (and reports) the breakdown stages (`--breakdown`).
    pub fn with_breakdown(mut self, on: bool) -> Self {
        self.breakdown = on;
        self
    }

    /// Whether the breakdown stages are measured: reports show them only then.
    pub fn breakdown(&self) -> bool {
        self.breakdown
    }

    /// The stages reports show: [`Stage::ALL`], and [`Stage::BREAKDOWN`] with `--breakdown`.
    pub fn shown_stages(&self) -> &'static [Stage] {
        if self.breakdown {
            &Stage::EVERY
        } else {
            &Stage::ALL
        }
    }

    /// An order's breakdown measured after the order was recorded: its slow-order entries
    /// get it.
    pub fn attach_breakdown(&mut self, session: u64, request_ts_ns: u64, b: &OrderBreakdown) {
        self.slowest.attach_breakdown(session, request_ts_ns, b);
    }

    /// Keeps the `n` slowest orders per stage (0: none) instead of [`DEFAULT_SLOWEST`].
    pub fn with_slowest(mut self, n: usize) -> Self {
        self.slowest = SlowestOrders::new(n);
        self
    }

    /// Records a latency and, if it is among the slowest, the order it belongs to. The
    /// order costs one comparison unless it gets in.
    #[inline]
    pub fn record_order(&mut self, latency: Latency, order: &OrderRef<'_>) {
        self.record(latency);
        if self.slowest.admits(latency.stage, latency.ns) {
            let names = self
                .sessions
                .get((latency.session as usize).wrapping_sub(1))
                .map_or_else(SessionRef::default, |s| SessionRef {
                    sender_comp_id: &s.sender_comp_id,
                    target_comp_id: &s.target_comp_id,
                    connection: Some(s.connection),
                });
            self.slowest.offer(
                latency.stage,
                latency.ns,
                latency.request_type,
                latency.session,
                latency.request_ts_ns,
                latency.late,
                order,
                &names,
            );
        }
    }

    #[inline]
    pub fn record(&mut self, latency: Latency) {
        if let Some(by) = self.by.as_mut() {
            by.record(&latency, &latency.groups);
        }
        let s = latency.stage.index();
        self.current[latency.request_type.index()][s].record(latency.ns);
        self.views_fresh = false;
        if latency.ns > self.highest_ns {
            self.over_range += 1;
        }
        if latency.stage == Stage::FirstResponse {
            let highest_ns = self.highest_ns;
            if let Some(session) = self.session_mut(latency.session) {
                session
                    .first_response
                    .get_or_insert_with(|| {
                        LatencyRecorder::new(highest_ns, SESSION_SIGNIFICANT_DIGITS)
                    })
                    .record(latency.ns);
            }
        } else if let Some(i) = Stage::BREAKDOWN.iter().position(|&s| s == latency.stage) {
            let highest_ns = self.highest_ns;
            if let Some(session) = self.session_mut(latency.session) {
                session.breakdown.get_or_insert_with(|| {
                    Box::new(std::array::from_fn(|_| {
                        LatencyRecorder::new(highest_ns, SESSION_SIGNIFICANT_DIGITS)
                    }))
                })[i]
                    .record(latency.ns);
            }
        }
    }

    /// Latencies above the histogram range so far, all stages.
    pub fn over_range(&self) -> u64 {
        self.over_range
    }

    /// The current interval per stage, from the per-type recorders.
    fn build_interval_view(&mut self) {
        // The breakdown stages only when measured: without them the cost is as before.
        for s in 0..self.shown_stages().len() {
            self.interval_view[s].reset();
            for t in 0..3 {
                self.interval_view[s].merge(&self.current[t][s]);
            }
        }
    }

    /// Adds the current interval to the cumulative recorders (once per interval).
    fn fold_current(&mut self) {
        if self.folded {
            return;
        }
        for (earlier, current) in self
            .earlier
            .iter_mut()
            .flatten()
            .zip(self.current.iter().flatten())
        {
            earlier.merge(current);
        }
        for t in 0..3 {
            for s in 0..Stage::COUNT {
                self.earlier_stage[s].merge(&self.current[t][s]);
            }
        }
        self.folded = true;
    }

    /// Builds the views an interval report reads and folds the interval into the
    /// cumulative ones; [`Stats::reset_interval`] then starts the next interval.
    pub fn close_interval(&mut self) {
        self.build_interval_view();
        self.fold_current();
        self.unfolded = None;
        // The run's slowest lists are built for summaries only ([`Stats::refresh_views`]):
        // interval reports read the interval's.
        self.slowest.refresh_interval();
        self.views_fresh = true;
    }

    /// Builds the views that reports read, in the middle of an interval (a summary): the
    /// cumulative ones are the folded intervals plus the current one, on a copy.
    pub fn refresh_views(&mut self) {
        if self.views_fresh {
            return;
        }
        self.build_interval_view();
        self.unfolded = None;
        if !self.folded && self.interval_count() > 0 {
            let mut views = Box::new(CumulativeViews {
                by_type: self.earlier.clone(),
                by_stage: self.earlier_stage.clone(),
            });
            for t in 0..3 {
                for s in 0..Stage::COUNT {
                    views.by_type[t][s].merge(&self.current[t][s]);
                    views.by_stage[s].merge(&self.current[t][s]);
                }
            }
            self.unfolded = Some(views);
        }
        self.slowest.refresh();
        self.views_fresh = true;
    }

    /// Registers session `id` (the next id in order) for the per-session table (bounded).
    pub fn open_session(&mut self, id: u64, connection: ConnectionKey) {
        if self.sessions.len() >= MAX_TRACKED_SESSIONS || id != self.sessions.len() as u64 + 1 {
            self.untracked_sessions += 1;
            return;
        }
        self.sessions.push(SessionStats {
            id,
            connection,
            sender_comp_id: String::new(),
            target_comp_id: String::new(),
            requests: 0,
            responses: 0,
            health: SessionHealth::default(),
            first_response: None,
            breakdown: None,
        });
    }

    #[inline]
    pub fn session_mut(&mut self, id: u64) -> Option<&mut SessionStats> {
        self.sessions.get_mut((id as usize).wrapping_sub(1))
    }

    /// Sessions in the order they were first seen.
    pub fn sessions(&self) -> &[SessionStats] {
        &self.sessions
    }

    /// Sessions seen beyond [`MAX_TRACKED_SESSIONS`].
    pub fn untracked_sessions(&self) -> u64 {
        self.untracked_sessions
    }

    /// Everything recorded for `stage` (after [`Stats::refresh_views`]).
    pub fn cumulative(&self, stage: Stage) -> &LatencyRecorder {
        debug_assert!(self.views_fresh, "refresh_views before reading views");
        match &self.unfolded {
            Some(v) => &v.by_stage[stage.index()],
            None => &self.earlier_stage[stage.index()],
        }
    }

    /// The current interval for `stage` (after [`Stats::refresh_views`]).
    pub fn interval(&self, stage: Stage) -> &LatencyRecorder {
        debug_assert!(self.views_fresh, "refresh_views before reading views");
        &self.interval_view[stage.index()]
    }

    /// The run's slowest orders at `stage`, slowest first (after [`Stats::refresh_views`]).
    pub fn slowest(&self, stage: Stage) -> &[SlowOrder] {
        debug_assert!(self.views_fresh, "refresh_views before reading views");
        self.slowest.cumulative(stage)
    }

    /// The current interval's slowest orders at `stage` (after [`Stats::refresh_views`]).
    pub fn interval_slowest(&self, stage: Stage) -> &[SlowOrder] {
        debug_assert!(self.views_fresh, "refresh_views before reading views");
        self.slowest.interval(stage)
    }

    /// Everything recorded for requests of type `t` at `stage` (after refresh_views).
    pub fn by_request_type(&self, t: RequestType, stage: Stage) -> &LatencyRecorder {
        debug_assert!(self.views_fresh, "refresh_views before reading views");
        match &self.unfolded {
            Some(v) => &v.by_type[t.index()][stage.index()],
            None => &self.earlier[t.index()][stage.index()],
        }
    }

    /// Starts a new interval: the current one joins the earlier ones (if
    /// [`Stats::close_interval`] has not folded it already).
    pub fn reset_interval(&mut self) {
        self.fold_current();
        for current in self.current.iter_mut().flatten() {
            current.reset();
        }
        self.folded = false;
        self.unfolded = None;
        self.slowest.reset_interval();
        self.layer.rate.reset_interval();
        for s in &mut self.sessions {
            s.health.rate.reset_interval();
        }
        self.views_fresh = false;
    }

    /// Clears everything recorded (the live `r` key); sessions stay known.
    pub fn reset_all(&mut self) {
        for r in self
            .current
            .iter_mut()
            .flatten()
            .chain(self.earlier.iter_mut().flatten())
            .chain(self.earlier_stage.iter_mut())
        {
            r.reset();
        }
        self.unfolded = None;
        self.over_range = 0;
        self.layer.reset();
        self.slowest.reset_all();
        self.views_fresh = false;
        for s in self.sessions.iter_mut() {
            s.first_response = None;
            s.requests = 0;
            s.responses = 0;
        }
    }
}

/// One worker's share of an interval (sharded `fixscope pcap`, `crate::shard`): its
/// latencies per request type and stage, and its slowest orders (session ids local to the
/// worker). Recycled between worker and merger, so the steady state allocates nothing.
pub struct IntervalShare {
    current: Box<[[LatencyRecorder; Stage::COUNT]; 3]>,
    slowest: [Vec<SlowOrder>; Stage::COUNT],
}

impl IntervalShare {
    /// Empty, for statistics with histograms up to `highest_ns`.
    pub fn new(highest_ns: u64) -> Self {
        IntervalShare {
            current: Box::new(std::array::from_fn(|_| {
                std::array::from_fn(|_| LatencyRecorder::new(highest_ns, SIGNIFICANT_DIGITS))
            })),
            slowest: Default::default(),
        }
    }
}

/// A session id as the merged run knows it: its global id and whether that id is among
/// the sessions broken down individually.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GlobalSession {
    pub id: u64,
    pub tracked: bool,
}

// Sharded runs (`crate::shard`): workers hand their intervals over, the merger absorbs them.
impl Stats {
    /// Hands the current interval to `share` (which must come back reset): a swap, no
    /// copy. The worker keeps no cumulative figures: the merger does.
    pub fn take_interval(&mut self, share: &mut IntervalShare) {
        std::mem::swap(&mut self.current, &mut share.current);
        for stage in Stage::EVERY {
            self.slowest
                .take_interval(stage, &mut share.slowest[stage.index()]);
        }
        self.views_fresh = false;
    }

    /// Adds a worker's share of the current interval, its session ids mapped to the
    /// run's by `global`; then empties `share` for reuse (work proportional to what it
    /// held). Merging every worker's share gives exactly what one pipeline records.
    pub fn absorb_interval(
        &mut self,
        share: &mut IntervalShare,
        mut global: impl FnMut(u64) -> GlobalSession,
        scratch: &mut SlowOrder,
    ) {
        for (mine, theirs) in self
            .current
            .iter_mut()
            .flatten()
            .zip(share.current.iter_mut().flatten())
        {
            if theirs.count() > 0 {
                mine.merge(theirs);
                self.over_range += theirs.over_range();
                theirs.reset();
            }
        }
        for list in share.slowest.iter_mut() {
            for o in list.iter() {
                scratch.clone_from(o);
                let g = global(o.session);
                scratch.session = g.id;
                if !g.tracked {
                    // The one pipeline has no names for a session beyond the table.
                    scratch.sender_comp_id.clear();
                    scratch.target_comp_id.clear();
                    scratch.connection = None;
                }
                self.slowest.offer_order(scratch);
            }
            list.clear();
        }
        self.views_fresh = false;
    }

    /// Adds everything `other` recorded (same range): interval for interval, the
    /// cumulative recorders and the slowest orders; two halves of a run merged report as
    /// the whole. Sessions are not merged here: their ids are each pipeline's own (a
    /// sharded run renumbers them, `crate::shard`, then [`Stats::adopt_session`]).
    pub fn merge_from(&mut self, other: &Stats) {
        for (mine, theirs) in self
            .current
            .iter_mut()
            .flatten()
            .zip(other.current.iter().flatten())
            .chain(
                self.earlier
                    .iter_mut()
                    .flatten()
                    .zip(other.earlier.iter().flatten()),
            )
            .chain(
                self.earlier_stage
                    .iter_mut()
                    .zip(other.earlier_stage.iter()),
            )
        {
            mine.merge(theirs);
        }
        self.over_range += other.over_range;
        self.slowest.merge_from(&other.slowest);
        self.views_fresh = false;
    }

    /// The per-session table, emptied (a worker's, at the end of a sharded run).
    pub fn take_sessions(&mut self) -> Vec<SessionStats> {
        std::mem::take(&mut self.sessions)
    }

    /// Puts a worker's session under its global id (opened before by
    /// [`Stats::open_session`], so the table's order and bounds are the one pipeline's).
    pub fn adopt_session(&mut self, id: u64, mut session: SessionStats) {
        if let Some(slot) = self.session_mut(id) {
            session.id = id;
            *slot = session;
        }
    }
}

/// A two-stage run's interval on its way from stage B to the reporting side
/// (`crate::twostage`): its latencies per request type and stage, its slowest orders and
/// the session layer's message rates. The recorders and lists are swapped in and out
/// whole — neither side copies or merges them — and the recorders come back as the
/// report left them: stage B empties them itself before refilling them, so the memory it
/// records into is in its own core's cache (emptied on the other core, the first
/// recording into each line of them cost a transfer between the caches: +69% of stage
/// B's recording time, BENCHMARKS.md §2f).
pub struct IntervalHandOver {
    current: Box<[[LatencyRecorder; Stage::COUNT]; 3]>,
    slowest: SlowestOrders,
    /// The interval's messages and 1 ms peak over all sessions.
    run_rate: RateFigures,
    /// The same per session, `(id, figures)` for the sessions with messages.
    session_rates: Vec<(u64, RateFigures)>,
}

impl IntervalHandOver {
    /// Empty, for statistics made by `like`'s configuration (range, `--slowest`).
    pub fn new(like: &Stats) -> Self {
        IntervalHandOver {
            current: Box::new(std::array::from_fn(|_| {
                std::array::from_fn(|_| LatencyRecorder::new(like.highest_ns, SIGNIFICANT_DIGITS))
            })),
            slowest: SlowestOrders::new(like.slowest.capacity()),
            run_rate: RateFigures::default(),
            session_rates: Vec::new(),
        }
    }
}

// Two-stage runs (`crate::twostage`): stage B records, the reporting side closes, folds and
// reports. Stage B's statistics never fold an interval; the reporting side's hold what
// interval reports read and the folded intervals; at the end the two make one pipeline's
// statistics ([`Stats::adopt_folded`]).
impl Stats {
    /// Stage B at an interval's end: hands the interval to `handover` and starts the next
    /// one, as [`Stats::reset_interval`] would (the rates too).
    pub fn hand_over_interval(&mut self, handover: &mut IntervalHandOver) {
        for r in handover.current.iter_mut().flatten() {
            r.reset();
        }
        std::mem::swap(&mut self.current, &mut *handover.current);
        self.slowest.swap_interval(&mut handover.slowest);
        self.views_fresh = false;
        handover.run_rate = self.layer.rate.interval();
        self.layer.rate.reset_interval();
        handover.session_rates.clear();
        for s in &mut self.sessions {
            let figures = s.health.rate.interval();
            if figures != RateFigures::default() {
                handover.session_rates.push((s.id, figures));
            }
            s.health.rate.reset_interval();
        }
    }

    /// The reporting side: makes `handover`'s interval the current one (the previous one
    /// was reset after its report), its rates shown as the run's and each session's
    /// (the sessions it knows of: [`Stats::open_session`]).
    pub fn take_over_interval(&mut self, handover: &mut IntervalHandOver) {
        debug_assert_eq!(self.interval_count(), 0, "the previous interval was reset");
        std::mem::swap(&mut self.current, &mut *handover.current);
        self.slowest.swap_interval(&mut handover.slowest);
        self.views_fresh = false;
        self.layer.rate = MessageRate::showing_interval(handover.run_rate);
        let mut rates = handover.session_rates.iter().peekable();
        for s in &mut self.sessions {
            let figures = rates
                .next_if(|(id, _)| *id == s.id)
                .map_or_else(RateFigures::default, |&(_, f)| f);
            s.health.rate = MessageRate::showing_interval(figures);
        }
    }

    /// The reporting side, once the interval is reported (closed: folded) and before
    /// [`Stats::reset_interval`]: its recorders go back to stage B as they are.
    pub fn give_back_interval(&mut self, handover: &mut IntervalHandOver) {
        debug_assert!(self.folded, "the interval was folded before it goes back");
        std::mem::swap(&mut self.current, &mut *handover.current);
    }

    /// Stage B's statistics at the end take the reporting side's folded intervals
    /// (`reported`'s cumulative recorders and slowest orders; stage B's own are empty):
    /// they are then one pipeline's.
    pub fn adopt_folded(&mut self, reported: &mut Stats) {
        std::mem::swap(&mut self.earlier, &mut reported.earlier);
        std::mem::swap(&mut self.earlier_stage, &mut reported.earlier_stage);
        self.slowest.adopt_earlier(&mut reported.slowest);
        self.unfolded = None;
        self.views_fresh = false;
    }
}

// HdrHistogram interval logs (`hlog`): the exact figures a log stores beside each histogram,
// and recorders rebuilt from what logs hold (`fixscope report`).
impl LatencyRecorder {
    /// Exact sum of everything recorded.
    pub fn sum_ns(&self) -> u128 {
        self.sum_ns
    }

    /// Exact smallest value recorded (`None` when empty).
    pub fn min_ns(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min_ns)
    }

    /// Exact largest value recorded (0 when empty).
    pub fn max_ns(&self) -> u64 {
        self.max_ns
    }

    /// A recorder holding what a log stored: `hist` has the values in range (its `high()` is
    /// the range) and `count - hist.len()` more were above it. `None` when the parts do not
    /// add up (the count is below what the histogram holds, or min/max contradict it).
    pub fn from_parts(
        hist: Histogram<u64>,
        count: u64,
        sum_ns: u128,
        min_ns: u64,
        max_ns: u64,
    ) -> Option<Self> {
        let over_range = count.checked_sub(hist.len())?;
        if count > 0 && (min_ns > max_ns || (over_range > 0 && max_ns <= hist.high())) {
            return None;
        }
        Some(LatencyRecorder {
            hist: SparseHistogram::from_histogram(&hist),
            as_hdr: OnceCell::from(hist),
            count,
            sum_ns,
            min_ns: if count == 0 { u64::MAX } else { min_ns },
            max_ns: if count == 0 { 0 } else { max_ns },
            over_range,
        })
    }
}

impl Stats {
    /// The current interval's recorder of requests of type `t` at `stage` (no refresh needed).
    pub fn interval_by_request_type(&self, t: RequestType, stage: Stage) -> &LatencyRecorder {
        &self.current[t.index()][stage.index()]
    }

    /// How many slowest orders are kept per stage (`--slowest`).
    pub fn slowest_capacity(&self) -> usize {
        self.slowest.capacity()
    }

    /// Latencies recorded in the current interval, all stages (no refresh needed).
    pub fn interval_count(&self) -> u64 {
        self.current
            .iter()
            .flatten()
            .map(LatencyRecorder::count)
            .sum()
    }

    /// Statistics rebuilt from logs: the cumulative recorder per stage and per request type
    /// (indexed by [`RequestType::index`] and [`Stage::index`]), all of one range, and the
    /// slowest orders the logs kept. No sessions: logs do not hold their histograms.
    pub fn from_recorders(
        stages: [LatencyRecorder; Stage::COUNT],
        by_type: [[LatencyRecorder; Stage::COUNT]; 3],
        mut slowest: SlowestOrders,
    ) -> Self {
        let highest_ns = stages[0].histogram().high();
        let over_range = stages.iter().map(LatencyRecorder::over_range).sum();
        // A log with breakdown stages was written with `--breakdown`.
        let breakdown = Stage::BREAKDOWN
            .iter()
            .any(|s| stages[s.index()].count() > 0);
        let empty = || LatencyRecorder::new(highest_ns, SIGNIFICANT_DIGITS);
        Stats {
            highest_ns,
            current: std::array::from_fn(|_| std::array::from_fn(|_| empty())),
            earlier: by_type,
            earlier_stage: stages,
            interval_view: std::array::from_fn(|_| empty()),
            folded: false,
            unfolded: None,
            views_fresh: true,
            over_range,
            sessions: Vec::new(),
            untracked_sessions: 0,
            breakdown,
            layer: SessionLayerStats::new(highest_ns),
            by: None,
            layer_known: false,
            logged_layer: None,
            slowest: {
                slowest.refresh();
                slowest
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_count_min_mean_max_and_percentiles() {
        let mut r = LatencyRecorder::new(1_000_000_000, 3);
        for v in 1..=1000u64 {
            r.record(v * 1000);
        }
        let d = r.distribution();
        assert_eq!(d.count, 1000);
        assert_eq!(d.min_ns, 1000);
        assert_eq!(d.max_ns, 1_000_000);
        assert!((d.mean_ns - 500_500.0).abs() < 1e-6);
        let p50 = d.percentiles_ns[0].unwrap() as f64;
        assert!((p50 - 500_000.0).abs() / 500_000.0 < 0.001, "p50 {p50}");
        let p99 = d.percentiles_ns[2].unwrap() as f64;
        assert!((p99 - 990_000.0).abs() / 990_000.0 < 0.001, "p99 {p99}");
        assert_eq!(d.over_range, 0);
    }

    #[test]
    fn values_above_range_are_counted_and_never_clamped_into_the_top_bucket() {
        let mut r = LatencyRecorder::new(1_000_000, 3);
        for _ in 0..98 {
            r.record(10);
        }
        r.record(500_000);
        r.record(5_000_000);
        let d = r.distribution();
        assert_eq!(d.count, 100);
        assert_eq!(d.over_range, 1);
        assert_eq!(d.max_ns, 5_000_000);
        assert_eq!(d.range_ns, r.histogram().high());
        assert_eq!(
            r.histogram().len(),
            99,
            "nothing above range in the histogram"
        );
        // p50, p90: in range; p99 is the 99th value (500 µs); p99.9 and up rank among the
        // value above range: reported as such, not as the top bucket's 1 ms.
        assert_eq!(d.percentiles_ns[0], Some(10));
        let p99 = d.percentiles_ns[2].unwrap();
        assert!((500_000..=500_500).contains(&p99), "p99 {p99}");
        assert_eq!(d.percentiles_ns[3..], [None, None, None]);
        assert!((d.mean_ns - (98.0 * 10.0 + 500_000.0 + 5_000_000.0) / 100.0).abs() < 1e-6);
    }

    #[test]
    fn in_range_percentiles_are_exactly_hdrhistograms() {
        let mut r = LatencyRecorder::new(10_000_000_000, 3);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            r.record(1_000 + x % 50_000_000);
        }
        for (q, _, _) in PERCENTILES {
            let ours = r.value_at_quantile(q).unwrap();
            let theirs = r
                .histogram()
                .value_at_quantile(q)
                .clamp(r.distribution().min_ns, r.distribution().max_ns);
            assert_eq!(ours, theirs, "quantile {q}");
        }
    }

    #[test]
    fn merging_halves_equals_the_whole() {
        let mut whole = Stats::new(1_000_000);
        let mut halves = [Stats::new(1_000_000), Stats::new(1_000_000)];
        let mut x = 0x51_7cc1_b727_220au64;
        for round in 0..3 {
            for i in 0..2_000u64 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let latency = Latency {
                    stage: Stage::ALL[(x % 4) as usize],
                    request_type: RequestType::ALL[(x >> 8) as usize % 3],
                    session: 1,
                    ns: x % 1_500_000, // some above range
                    late: false,
                    request_ts_ns: i,
                    request_seq: 0,
                    groups: crate::group::NO_GROUPS,
                };
                whole.record(latency);
                halves[(x >> 20) as usize % 2].record(latency);
            }
            if round < 2 {
                whole.reset_interval();
                halves.iter_mut().for_each(Stats::reset_interval);
            }
        }
        let [mut a, b] = halves;
        a.merge_from(&b);
        a.refresh_views();
        whole.refresh_views();
        for stage in Stage::ALL {
            assert_eq!(
                a.interval(stage).distribution(),
                whole.interval(stage).distribution()
            );
            assert_eq!(
                a.cumulative(stage).distribution(),
                whole.cumulative(stage).distribution()
            );
            for t in RequestType::ALL {
                assert_eq!(
                    a.by_request_type(t, stage).distribution(),
                    whole.by_request_type(t, stage).distribution()
                );
            }
        }
        assert_eq!(a.over_range(), whole.over_range());
        assert!(whole.cumulative(Stage::Ack).over_range() > 0);
    }

    #[test]
    fn interval_resets_but_cumulative_keeps() {
        let mut s = Stats::new(1_000_000_000);
        let l = |ns| Latency {
            stage: Stage::Ack,
            request_type: RequestType::NewOrder,
            session: 1,
            ns,
            late: false,
            request_ts_ns: 0,
            request_seq: 0,
            groups: crate::group::NO_GROUPS,
        };
        s.record(l(100));
        s.reset_interval();
        s.record(l(300));
        s.refresh_views();
        assert_eq!(s.interval(Stage::Ack).distribution().count, 1);
        assert_eq!(s.cumulative(Stage::Ack).distribution().count, 2);
        assert_eq!(
            s.by_request_type(RequestType::NewOrder, Stage::Ack).count(),
            2
        );
        assert_eq!(s.cumulative(Stage::Fill).count(), 0);
    }
}
