//! What reporters read: the figures of a run (and of the interval being reported), as
//! read-only views of figure types — latency recorders, slow orders, session rows, `--by`
//! rankings, the session layer's figures. Built by [`crate::stats::Stats::figures`] for the
//! time of one report; nothing here records, closes or merges, so no reporter can reach
//! into a consumer or change what the next report reads.

use fixscope_orders::consumers::{ConsumerFigures, SessionLatency};
use fixscope_orders::correlate::{RequestType, Stage};
use fixscope_orders::group::GroupStats;
use fixscope_orders::recorder::LatencyRecorder;
use fixscope_orders::session::figures::SessionLayerFigures;
use fixscope_orders::session::health::SessionLayerStats;
use fixscope_orders::session::table::{SessionStats, SessionTable};
use fixscope_orders::slowest::SlowOrder;

/// A run's figures, borrowed for one report (see the module doc).
#[derive(Clone, Copy)]
pub struct Figures<'a> {
    /// Every registered consumer's figures (`fixscope_orders::consumers`), by its registry name: a
    /// consumer added to the registry is here with no other change.
    pub consumers: ConsumerFigures<'a>,
    pub(crate) sessions: &'a SessionTable,
    pub(crate) layer: &'a SessionLayerStats,
    /// The session layer was measured (not rebuilt from logs).
    pub(crate) layer_known: bool,
    /// Rebuilt from a log: the session layer as the run reported it.
    pub(crate) logged_layer: Option<&'a SessionLayerFigures>,
    /// `--leg`: what linked the parents (summaries only).
    pub links: Option<&'a fixscope_hops::LinkFigures>,
    /// The breakdown stages are measured (`--breakdown`).
    pub(crate) breakdown: bool,
    /// The hop stages are measured (`--leg`).
    pub(crate) hops: bool,
    /// The two-point stages are measured (`--point`).
    pub(crate) points: bool,
    /// The tick-to-trade stages are measured (`--tick-link`).
    pub(crate) ticks: bool,
    /// `--point`: the clock between the points, the stages' uncertainty.
    pub clock: Option<&'a fixscope_orders::points::ClockFigures>,
}

impl<'a> Figures<'a> {
    /// Everything recorded for `stage`.
    pub fn cumulative(&self, stage: Stage) -> &'a LatencyRecorder {
        self.consumers.stages.cumulative(stage)
    }

    /// The interval being reported, for `stage`.
    pub fn interval(&self, stage: Stage) -> &'a LatencyRecorder {
        self.consumers.stages.interval(stage)
    }

    /// Everything recorded for requests of type `t` at `stage`.
    pub fn by_request_type(&self, t: RequestType, stage: Stage) -> &'a LatencyRecorder {
        self.consumers.stages.by_request_type(t, stage)
    }

    /// The interval's recorder of requests of type `t` at `stage`.
    pub fn interval_by_request_type(&self, t: RequestType, stage: Stage) -> &'a LatencyRecorder {
        self.consumers.stages.interval_by_request_type(t, stage)
    }

    /// Latencies recorded in the interval being reported, all stages.
    pub fn interval_count(&self) -> u64 {
        self.consumers.stages.interval_count()
    }

    /// Latencies above the histogram range so far, all stages.
    pub fn over_range(&self) -> u64 {
        self.consumers.stages.over_range()
    }

    /// Whether the breakdown stages are measured: reports show them only then.
    pub fn breakdown(&self) -> bool {
        self.breakdown
    }

    /// The stages reports show: [`Stage::ALL`], [`Stage::BREAKDOWN`] with `--breakdown`,
    /// [`Stage::HOPS`] with `--leg`, [`Stage::TICKS`] with `--tick-link`.
    pub fn shown_stages(&self) -> &'static [Stage] {
        Stage::shown_with(self.breakdown, self.hops, self.points, self.ticks)
    }

    /// The run's slowest orders at `stage`, slowest first.
    pub fn slowest(&self, stage: Stage) -> &'a [SlowOrder] {
        self.consumers.slowest.cumulative(stage)
    }

    /// The interval's slowest orders at `stage`, slowest first.
    pub fn interval_slowest(&self, stage: Stage) -> &'a [SlowOrder] {
        self.consumers.slowest.interval(stage)
    }

    /// How many slowest orders are kept per stage (`--slowest`).
    pub fn slowest_capacity(&self) -> usize {
        self.consumers.slowest.capacity()
    }

    /// Sessions in the order they were first seen.
    pub fn sessions(&self) -> &'a [SessionStats] {
        self.sessions.all()
    }

    /// Session `id`'s latencies (`None`: none recorded).
    pub fn session_latency(&self, id: u64) -> Option<&'a SessionLatency> {
        self.consumers.session_latency.get(id)
    }

    /// Sessions seen beyond the per-session table's bound.
    pub fn untracked_sessions(&self) -> u64 {
        self.sessions.untracked()
    }

    /// `--by`'s figures (`None` without `--by`).
    pub fn by(&self) -> Option<&'a GroupStats> {
        self.consumers.by
    }

    /// The session layer's run figures (rates, `test_request_rtt`, reject reasons).
    pub fn layer(&self) -> &'a SessionLayerStats {
        self.layer
    }

    /// Whether the session layer's figures were measured (false for statistics rebuilt
    /// from logs).
    pub fn layer_known(&self) -> bool {
        self.layer_known
    }

    /// The session layer's figures at `now_ns` (the summary's end): measured, or as a log
    /// held them; `None` when neither (reports then leave the session layer out).
    pub fn session_layer_figures(&self, now_ns: u64) -> Option<SessionLayerFigures> {
        if self.layer_known {
            Some(SessionLayerFigures::of(self.layer, self.sessions, now_ns))
        } else {
            self.logged_layer.cloned()
        }
    }
}
