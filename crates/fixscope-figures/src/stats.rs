//! A run's statistics: the registry of order-event consumers ([`fixscope_orders::consumers`]), the
//! per-session table and the session layer's figures, with the calls the pipeline, the
//! two-stage split and the shard merger make at each step of an interval.
//!
//! `Stats` dispatches, it does not measure: each figure is a consumer's (stage recorders,
//! per-session latencies, slowest orders, `--by` groups) or the session layer's (the table,
//! its health and rates). Reporters read them through [`crate::figures::Figures`].

use crate::figures::Figures;
use fixscope_model::counters::TickCounters;
use fixscope_model::order::{Latency, OrderBreakdown, OrderEvent, OrderRef};
use fixscope_model::segment::ConnectionKey;
use fixscope_orders::consumer::{Consumer, ConsumerConfig, OrderSink};
use fixscope_orders::consumers::{Consumers, ConsumersInterval, SessionLatency, StageRecorders};
use fixscope_orders::correlate::{RequestType, Stage};
use fixscope_orders::group::{GroupSpec, GroupStats};
use fixscope_orders::microburst::{MessageRate, RateFigures};
use fixscope_orders::session::figures::SessionLayerFigures;
use fixscope_orders::session::health::SessionLayerStats;
use fixscope_orders::session::table::{SessionBook, SessionTable};
use fixscope_orders::slowest::{SlowOrder, SlowestOrders, DEFAULT_SLOWEST};

// Kept where callers have always found them.
pub use fixscope_orders::consumer::GlobalSession;
pub use fixscope_orders::recorder::{
    quantile_with_over_range, Distribution, LatencyRecorder, PERCENTILES,
};
pub use fixscope_orders::session::table::SessionStats;
pub use fixscope_orders::session::table::MAX_TRACKED_SESSIONS;

/// All statistics of a run.
pub struct Stats {
    config: ConsumerConfig,
    /// Every consumer of order events.
    consumers: Consumers,
    /// The per-session table (names, counts, health), filled by the session layer.
    sessions: SessionTable,
    /// The views reports read are up to date (no event or hand-over since the last
    /// refresh or close).
    views_fresh: bool,
    /// The session layer's figures for the run (`test_request_rtt`, reject reasons, rates).
    pub layer: SessionLayerStats,
    /// The session layer was measured (a run's pipeline), not rebuilt from HdrHistogram
    /// logs: reports show it then, or from `logged_layer`.
    layer_known: bool,
    /// Rebuilt from a log: the session layer's figures as the run reported them (one log
    /// read whole; `None` otherwise, and reports leave the session layer out).
    pub logged_layer: Option<SessionLayerFigures>,
    /// `--leg`: what linked the parents (set by the pipeline before its summary).
    pub links: Option<fixscope_hops::LinkFigures>,
    /// `--point`: the clock between the points and what its uncertainty allows (set by the
    /// pipeline before its reports).
    pub clock: Option<fixscope_orders::points::ClockFigures>,
    /// `--tick-link`: what the rule found for each answered order.
    tick_counters: TickCounters,
    /// Rebuilt from a log holding tick-to-trade stages: reports show them.
    logged_ticks: bool,
}

impl Stats {
    /// `highest_ns` is the top of the histograms' range (`-x`).
    pub fn new(highest_ns: u64) -> Self {
        Stats::with_config(ConsumerConfig {
            highest_ns,
            slowest: DEFAULT_SLOWEST,
            breakdown: false,
            hops: false,
            points: false,
            by: None,
            ticks: None,
        })
    }

    /// Statistics whose consumers are built from `config`.
    pub fn with_config(config: ConsumerConfig) -> Self {
        Stats {
            consumers: Consumers::build(&config),
            layer: SessionLayerStats::new(config.highest_ns),
            config,
            sessions: SessionTable::default(),
            views_fresh: true,
            layer_known: true,
            logged_layer: None,
            links: None,
            clock: None,
            tick_counters: TickCounters::default(),
            logged_ticks: false,
        }
    }

    /// The same statistics with `change` made to their configuration (before any event).
    fn reconfigured(mut self, change: impl FnOnce(&mut ConsumerConfig)) -> Self {
        change(&mut self.config);
        self.consumers = Consumers::build(&self.config);
        self
    }

    /// Records every stage's latency by the values of `--by`'s tags too.
    pub fn with_groups(self, spec: Option<GroupSpec>) -> Self {
        self.reconfigured(|c| c.by = spec)
    }

    /// Measures (and reports) the breakdown stages (`--breakdown`).
    pub fn with_breakdown(self, on: bool) -> Self {
        self.reconfigured(|c| c.breakdown = on)
    }

    /// Keeps the `n` slowest orders per stage (0: none) instead of [`DEFAULT_SLOWEST`].
    pub fn with_slowest(self, n: usize) -> Self {
        self.reconfigured(|c| c.slowest = n)
    }

    /// The names of session `id` (empty beyond the per-session table).
    pub fn session_names(&self, id: u64) -> fixscope_model::order::SessionRef<'_> {
        fixscope_model::order::SessionNames::names(&self.sessions, id)
    }

    /// Whether the session layer's figures were measured (false for statistics rebuilt
    /// from logs).
    pub fn layer_known(&self) -> bool {
        self.layer_known
    }

    /// What reporters read (after [`Stats::refresh_views`] or a close): every figure,
    /// read-only, and no consumer.
    pub fn figures(&self) -> Figures<'_> {
        debug_assert!(self.views_fresh, "refresh_views before reading views");
        Figures {
            consumers: self.consumers.figures(),
            sessions: &self.sessions,
            layer: &self.layer,
            layer_known: self.layer_known,
            logged_layer: self.logged_layer.as_ref(),
            links: self.links.as_ref(),
            breakdown: self.config.breakdown,
            hops: self.config.hops,
            points: self.config.points,
            ticks: self.ticks_shown(),
            clock: self.clock.as_ref(),
        }
    }

    /// The session layer's figures at `now_ns` (the summary's end): measured, or as a log
    /// held them; `None` when neither (reports then leave the session layer out).
    pub fn session_layer_figures(&self, now_ns: u64) -> Option<SessionLayerFigures> {
        if self.layer_known {
            Some(SessionLayerFigures::of(&self.layer, &self.sessions, now_ns))
        } else {
            self.logged_layer.clone()
        }
    }

    /// Whether the breakdown stages are measured: reports show them only then.
    pub fn breakdown(&self) -> bool {
        self.config.breakdown
    }

    /// The stages reports show: [`Stage::ALL`], [`Stage::BREAKDOWN`] with `--breakdown`,
    /// [`Stage::HOPS`] with `--leg`, [`Stage::TICKS`] with `--tick-link`.
    pub fn shown_stages(&self) -> &'static [Stage] {
        Stage::shown_with(
            self.config.breakdown,
            self.config.hops,
            self.config.points,
            self.ticks_shown(),
        )
    }

    /// Whether the tick-to-trade stages are measured, or were by the run a log holds.
    fn ticks_shown(&self) -> bool {
        self.config.ticks.is_some() || self.logged_ticks
    }

    /// `--tick-link`'s counters (`None` without it).
    pub fn tick_counters(&self) -> Option<TickCounters> {
        self.config.ticks.as_ref().map(|_| self.tick_counters)
    }

    /// `--by`'s figures (`None` without `--by`).
    pub fn by(&self) -> Option<&GroupStats> {
        self.consumers.by.as_ref()
    }

    /// `--by`'s groups, for the router to give each request its value ids.
    pub fn by_mut(&mut self) -> Option<&mut GroupStats> {
        self.consumers.by.as_mut()
    }

    /// `--by`'s figures, taken out (a worker's, at the end of a sharded run).
    pub fn take_by(&mut self) -> Option<GroupStats> {
        self.consumers.by.take()
    }

    /// Replaces `--by`'s figures (a sharded run's merged ones, one read from a log).
    pub fn set_by(&mut self, by: Option<GroupStats>) {
        self.consumers.by = by;
    }

    /// Records a latency whose order is not known (tests, benches): a slow-order entry
    /// for it has an empty key.
    #[inline]
    pub fn record(&mut self, latency: Latency) {
        self.record_order(latency, &OrderRef::default());
    }

    /// Latencies above the histogram range so far, all stages.
    pub fn over_range(&self) -> u64 {
        self.consumers.stages.over_range()
    }

    /// Builds the views an interval report reads and folds the interval into the
    /// cumulative ones; [`Stats::reset_interval`] then starts the next interval.
    pub fn close_interval(&mut self) {
        self.consumers.close_interval();
        self.views_fresh = true;
    }

    /// Builds the views that reports read, in the middle of an interval (a summary): the
    /// cumulative ones are the folded intervals plus the current one, on a copy.
    pub fn refresh_views(&mut self) {
        if self.views_fresh {
            return;
        }
        self.consumers.refresh();
        self.views_fresh = true;
    }

    /// Registers session `id` (the next id in order) for the per-session table (bounded).
    pub fn open_session(&mut self, id: u64, connection: ConnectionKey) {
        self.sessions.open(id, connection);
    }

    #[inline]
    pub fn session_mut(&mut self, id: u64) -> Option<&mut SessionStats> {
        self.sessions.get_mut(id)
    }

    /// The per-session table and the session layer's figures, for the session layer to
    /// fill as it binds sessions and judges messages.
    pub fn session_book(&mut self) -> SessionBook<'_> {
        SessionBook {
            table: &mut self.sessions,
            layer: &mut self.layer,
        }
    }

    /// The per-session table, for the session layer to bind sessions in.
    pub fn session_table_mut(&mut self) -> &mut SessionTable {
        &mut self.sessions
    }

    /// Sessions in the order they were first seen.
    pub fn sessions(&self) -> &[SessionStats] {
        self.sessions.all()
    }

    /// The per-session table.
    pub fn session_table(&self) -> &SessionTable {
        &self.sessions
    }

    /// Session `id`'s latencies (`None`: none recorded).
    pub fn session_latency(&self, id: u64) -> Option<&SessionLatency> {
        self.consumers.session_latency.get(id)
    }

    /// Sessions seen beyond [`MAX_TRACKED_SESSIONS`].
    pub fn untracked_sessions(&self) -> u64 {
        self.sessions.untracked()
    }

    /// The stage recorders (read after [`Stats::refresh_views`] or a close).
    pub fn stages(&self) -> &StageRecorders {
        debug_assert!(self.views_fresh, "refresh_views before reading views");
        &self.consumers.stages
    }

    /// Everything recorded for `stage` (after [`Stats::refresh_views`]).
    pub fn cumulative(&self, stage: Stage) -> &LatencyRecorder {
        self.stages().cumulative(stage)
    }

    /// The current interval for `stage` (after [`Stats::refresh_views`]).
    pub fn interval(&self, stage: Stage) -> &LatencyRecorder {
        self.stages().interval(stage)
    }

    /// The run's slowest orders at `stage`, slowest first (after [`Stats::refresh_views`]).
    pub fn slowest(&self, stage: Stage) -> &[SlowOrder] {
        debug_assert!(self.views_fresh, "refresh_views before reading views");
        self.consumers.slowest.cumulative(stage)
    }

    /// The current interval's slowest orders at `stage` (after [`Stats::refresh_views`]).
    pub fn interval_slowest(&self, stage: Stage) -> &[SlowOrder] {
        debug_assert!(self.views_fresh, "refresh_views before reading views");
        self.consumers.slowest.interval(stage)
    }

    /// Everything recorded for requests of type `t` at `stage` (after refresh_views).
    pub fn by_request_type(&self, t: RequestType, stage: Stage) -> &LatencyRecorder {
        self.stages().by_request_type(t, stage)
    }

    /// The current interval's recorder of requests of type `t` at `stage` (no refresh needed).
    pub fn interval_by_request_type(&self, t: RequestType, stage: Stage) -> &LatencyRecorder {
        self.consumers.stages.interval_by_request_type(t, stage)
    }

    /// How many slowest orders are kept per stage (`--slowest`).
    pub fn slowest_capacity(&self) -> usize {
        self.consumers.slowest.capacity()
    }

    /// Latencies recorded in the current interval, all stages (no refresh needed).
    pub fn interval_count(&self) -> u64 {
        self.consumers.stages.interval_count()
    }

    /// Starts a new interval: the current one joins the earlier ones (if
    /// [`Stats::close_interval`] has not folded it already).
    pub fn reset_interval(&mut self) {
        self.consumers.reset_interval();
        self.layer.rate.reset_interval();
        for s in self.sessions.all_mut() {
            s.health.rate.reset_interval();
        }
        self.views_fresh = false;
    }

    /// Clears everything recorded (the live `r` key); sessions stay known.
    pub fn reset_all(&mut self) {
        self.consumers.reset_all();
        self.layer.reset();
        self.sessions.reset_counts();
        self.views_fresh = false;
    }

    /// Statistics rebuilt from logs: the cumulative recorder per stage and per request type
    /// (indexed by [`RequestType::index`] and [`Stage::index`]), all of one range, and the
    /// slowest orders the logs kept. No sessions: logs do not hold their histograms.
    pub fn from_recorders(
        stages: [LatencyRecorder; Stage::COUNT],
        by_type: [[LatencyRecorder; Stage::COUNT]; RequestType::COUNT],
        mut slowest: SlowestOrders,
    ) -> Self {
        let highest_ns = stages[0].histogram().high();
        // A log with breakdown stages was written with `--breakdown`.
        let breakdown = Stage::BREAKDOWN
            .iter()
            .any(|s| stages[s.index()].count() > 0);
        // And one with hop stages with `--leg`.
        let hops = Stage::HOPS.iter().any(|s| stages[s.index()].count() > 0);
        // And one with two-point stages with `--point`.
        let points = Stage::POINTS.iter().any(|s| stages[s.index()].count() > 0);
        // And one with tick-to-trade's own stage with `--tick-link`.
        let ticks = stages[Stage::TickToAck.index()].count() > 0;
        let mut stats = Stats::with_config(ConsumerConfig {
            highest_ns,
            slowest: slowest.capacity(),
            breakdown,
            hops,
            points,
            by: None,
            ticks: None,
        });
        stats.logged_ticks = ticks;
        stats.consumers.stages = StageRecorders::from_recorders(
            stages,
            by_type,
            Stage::shown_with(breakdown, hops, points, ticks),
        );
        slowest.refresh();
        stats.consumers.slowest = slowest;
        stats.layer_known = false;
        stats
    }
}

impl OrderSink for Stats {
    /// Records a latency and, if it is among the slowest, the order it belongs to. The
    /// order costs one comparison unless it gets in.
    #[inline]
    fn record_order(&mut self, latency: Latency, order: &OrderRef<'_>) {
        let event = OrderEvent {
            latency,
            order,
            sessions: &self.sessions,
            session_tracked: self.sessions.tracks(latency.session),
        };
        self.consumers.on_order(&event);
        self.views_fresh = false;
        if latency.stage == Stage::FirstResponse && self.config.ticks.is_some() {
            self.record_ticks(latency, order);
        }
    }

    fn attach_breakdown(&mut self, session: u64, request_ts_ns: u64, b: &OrderBreakdown) {
        self.consumers
            .slowest
            .attach_breakdown(session, request_ts_ns, b);
    }
}

impl Stats {
    /// `--tick-link`: an answered order's tick-to-trade stages, from the market-data
    /// packet its key names to its request and to its first response (`latency`).
    #[cold]
    fn record_ticks(&mut self, latency: Latency, order: &OrderRef<'_>) {
        let Some(linker) = self.config.ticks.clone() else {
            return;
        };
        let request_ns = latency.request_ts_ns;
        let link = linker.link(order.key, request_ns, &mut self.tick_counters);
        let fixscope_orders::ticks::TickLink::Linked { tick_ns } = link else {
            return;
        };
        for (stage, to_ns) in [
            (Stage::TickToOrder, request_ns),
            (Stage::TickToAck, request_ns + latency.ns),
        ] {
            let tick = Latency {
                stage,
                ns: to_ns - tick_ns,
                late: false,
                ..latency
            };
            let event = OrderEvent {
                latency: tick,
                order,
                sessions: &self.sessions,
                session_tracked: self.sessions.tracks(latency.session),
            };
            self.consumers.on_order(&event);
        }
    }
}

/// One worker's share of an interval (sharded `fixscope pcap`, `fixscope_core::shard`): every
/// consumer's interval (session ids local to the worker). Recycled between worker and
/// merger, so the steady state allocates nothing.
pub struct IntervalShare {
    consumers: ConsumersInterval,
}

impl IntervalShare {
    /// Empty, for statistics made by `like`'s configuration.
    pub fn new(like: &Stats) -> Self {
        IntervalShare {
            consumers: like.consumers.empty_interval(),
        }
    }
}

// Sharded runs (`fixscope_core::shard`): workers hand their intervals over, the merger absorbs them.
impl Stats {
    /// Hands the current interval to `share` (which must come back absorbed): a swap, no
    /// copy. The worker keeps no cumulative figures: the merger does.
    pub fn take_interval(&mut self, share: &mut IntervalShare) {
        self.consumers.hand_over(&mut share.consumers);
        self.views_fresh = false;
    }

    /// Adds a worker's share of the current interval, its session ids mapped to the
    /// run's by `global`; then empties `share` for reuse (work proportional to what it
    /// held). Merging every worker's share gives exactly what one pipeline records.
    pub fn absorb_interval(
        &mut self,
        share: &mut IntervalShare,
        mut global: impl FnMut(u64) -> GlobalSession,
    ) {
        self.consumers.absorb(&mut share.consumers, &mut global);
        self.views_fresh = false;
    }

    /// Adds everything `other` recorded (same range): interval for interval, the
    /// cumulative recorders and the slowest orders; two halves of a run merged report as
    /// the whole. Sessions are not merged here: their ids are each pipeline's own (a
    /// sharded run renumbers them, `fixscope_core::shard`, then [`Stats::adopt_session`]).
    pub fn merge_from(&mut self, other: &Stats) {
        self.consumers.merge_from(&other.consumers);
        self.views_fresh = false;
    }

    /// The per-session table and latencies, emptied (a worker's, at the end of a sharded
    /// run): the table's rows and, by the same index, their latencies.
    pub fn take_sessions(&mut self) -> (Vec<SessionStats>, Vec<SessionLatency>) {
        (self.sessions.take(), self.consumers.session_latency.take())
    }

    /// Puts a worker's session under its global id (opened before by
    /// [`Stats::open_session`], so the table's order and bounds are the one pipeline's).
    pub fn adopt_session(&mut self, id: u64, session: SessionStats, latency: SessionLatency) {
        if self.sessions.tracks(id) {
            self.sessions.adopt(id, session);
            self.consumers.session_latency.adopt(id, latency);
        }
    }
}

/// A two-stage run's interval on its way from stage B to the reporting side
/// (`fixscope_core::twostage`): every consumer's interval and the session layer's message rates.
/// Swapped in and out whole — neither side copies or merges them.
pub struct IntervalHandOver {
    consumers: ConsumersInterval,
    /// The interval's messages and 1 ms peak over all sessions.
    run_rate: RateFigures,
    /// The same per session, `(id, figures)` for the sessions with messages.
    session_rates: Vec<(u64, RateFigures)>,
}

impl IntervalHandOver {
    /// Empty, for statistics made by `like`'s configuration (range, `--slowest`).
    pub fn new(like: &Stats) -> Self {
        IntervalHandOver {
            consumers: like.consumers.empty_interval(),
            run_rate: RateFigures::default(),
            session_rates: Vec::new(),
        }
    }
}

// Two-stage runs (`fixscope_core::twostage`): stage B records, the reporting side closes, folds and
// reports. Stage B's statistics never fold an interval; the reporting side's hold what
// interval reports read and the folded intervals; at the end the two make one pipeline's
// statistics ([`Stats::adopt_folded`]).
impl Stats {
    /// Stage B at an interval's end: hands the interval to `handover` and starts the next
    /// one, as [`Stats::reset_interval`] would (the rates too).
    pub fn hand_over_interval(&mut self, handover: &mut IntervalHandOver) {
        self.consumers.hand_over(&mut handover.consumers);
        self.views_fresh = false;
        handover.run_rate = self.layer.rate.interval();
        self.layer.rate.reset_interval();
        handover.session_rates.clear();
        for s in self.sessions.all_mut() {
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
        self.consumers.take_over(&mut handover.consumers);
        self.views_fresh = false;
        self.layer.rate = MessageRate::showing_interval(handover.run_rate);
        let mut rates = handover.session_rates.iter().peekable();
        for s in self.sessions.all_mut() {
            let figures = rates
                .next_if(|(id, _)| *id == s.id)
                .map_or_else(RateFigures::default, |&(_, f)| f);
            s.health.rate = MessageRate::showing_interval(figures);
        }
    }

    /// The reporting side, once the interval is reported (closed: folded) and before
    /// [`Stats::reset_interval`]: its interval goes back to stage B for reuse.
    pub fn give_back_interval(&mut self, handover: &mut IntervalHandOver) {
        self.consumers.give_back(&mut handover.consumers);
    }

    /// Stage B's statistics at the end take the reporting side's folded intervals
    /// (`reported`'s cumulative recorders and slowest orders; stage B's own are empty):
    /// they are then one pipeline's.
    pub fn adopt_folded(&mut self, reported: &mut Stats) {
        self.consumers.adopt_folded(&mut reported.consumers);
        self.views_fresh = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
                    groups: fixscope_orders::group::NO_GROUPS,
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
            groups: fixscope_orders::group::NO_GROUPS,
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
