//! The stage recorders: per request type and stage, the current interval's and the run's
//! HDR recorders, and the per-stage views reports read.
//!
//! The hot path writes one histogram per latency: the current interval's, of the request's
//! type and stage. When an interval closes its per-stage view is built and it is folded
//! into the cumulative recorders, per type and per stage: work proportional to what the
//! interval holds, never to what the run holds. A summary in the middle of an interval
//! ([`Consumer::refresh`]) adds the interval to a copy.

use crate::consumer::{Consumer, ConsumerConfig, GlobalSession};
use crate::correlate::{RequestType, Stage};
use crate::recorder::{LatencyRecorder, SIGNIFICANT_DIGITS};
use fixscope_model::order::OrderEvent;

/// Per request type and stage.
type PerType = [[LatencyRecorder; Stage::COUNT]; RequestType::COUNT];

/// The cumulative recorders of a summary taken in the middle of an interval.
struct CumulativeViews {
    by_type: PerType,
    by_stage: [LatencyRecorder; Stage::COUNT],
}

/// One interval's recorders between threads (swapped whole).
pub struct StageInterval {
    current: Box<PerType>,
}

/// Latency distributions per stage and request type, per interval and for the run.
pub struct StageRecorders {
    highest_ns: u64,
    /// The stages whose views are built: the order stages, and the breakdown and hop
    /// stages when measured (without them the cost is as before).
    shown: &'static [Stage],
    /// The current interval, per request type and stage.
    current: PerType,
    /// The intervals folded so far, per request type and stage.
    earlier: PerType,
    /// The same per stage (all request types).
    earlier_stage: [LatencyRecorder; Stage::COUNT],
    interval_view: [LatencyRecorder; Stage::COUNT],
    /// `current` has been folded into `earlier` (the interval is closing).
    folded: bool,
    /// A summary's cumulative views while `current` is not folded (`None`: `earlier` is it).
    unfolded: Option<Box<CumulativeViews>>,
    over_range: u64,
}

fn per_type(highest_ns: u64) -> Box<PerType> {
    Box::new(std::array::from_fn(|_| {
        std::array::from_fn(|_| LatencyRecorder::new(highest_ns, SIGNIFICANT_DIGITS))
    }))
}

impl StageRecorders {
    /// Recorders rebuilt from logs (`fixscope report`): the run's per stage and per type.
    pub fn from_recorders(
        stages: [LatencyRecorder; Stage::COUNT],
        by_type: PerType,
        shown: &'static [Stage],
    ) -> Self {
        let highest_ns = stages[0].histogram().high();
        let over_range = stages.iter().map(LatencyRecorder::over_range).sum();
        StageRecorders {
            highest_ns,
            shown,
            current: *per_type(highest_ns),
            earlier: by_type,
            earlier_stage: stages,
            interval_view: std::array::from_fn(|_| {
                LatencyRecorder::new(highest_ns, SIGNIFICANT_DIGITS)
            }),
            folded: false,
            unfolded: None,
            over_range,
        }
    }

    /// The current interval per stage, from the per-type recorders.
    fn build_interval_view(&mut self) {
        for s in self.shown.iter().map(|s| s.index()) {
            self.interval_view[s].reset();
            for t in 0..RequestType::COUNT {
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
        for t in 0..RequestType::COUNT {
            for s in 0..Stage::COUNT {
                self.earlier_stage[s].merge(&self.current[t][s]);
            }
        }
        self.folded = true;
    }

    /// Whether the current interval was folded (a two-stage reporting side gives the
    /// interval back only then).
    pub fn folded(&self) -> bool {
        self.folded
    }

    /// Latencies above the histogram range so far, all stages.
    pub fn over_range(&self) -> u64 {
        self.over_range
    }

    /// Everything recorded for `stage` (after a refresh or close).
    pub fn cumulative(&self, stage: Stage) -> &LatencyRecorder {
        match &self.unfolded {
            Some(v) => &v.by_stage[stage.index()],
            None => &self.earlier_stage[stage.index()],
        }
    }

    /// The current interval for `stage` (after a refresh or close).
    pub fn interval(&self, stage: Stage) -> &LatencyRecorder {
        &self.interval_view[stage.index()]
    }

    /// Everything recorded for requests of type `t` at `stage` (after a refresh or close).
    pub fn by_request_type(&self, t: RequestType, stage: Stage) -> &LatencyRecorder {
        match &self.unfolded {
            Some(v) => &v.by_type[t.index()][stage.index()],
            None => &self.earlier[t.index()][stage.index()],
        }
    }

    /// The current interval's recorder of requests of type `t` at `stage` (no refresh needed).
    pub fn interval_by_request_type(&self, t: RequestType, stage: Stage) -> &LatencyRecorder {
        &self.current[t.index()][stage.index()]
    }

    /// Latencies recorded in the current interval, all stages (no refresh needed).
    pub fn interval_count(&self) -> u64 {
        self.current
            .iter()
            .flatten()
            .map(LatencyRecorder::count)
            .sum()
    }
}

/// The stage recorders' figures, read-only (after a close or a refresh).
#[derive(Clone, Copy)]
pub struct StageFigures<'a>(&'a StageRecorders);

impl<'a> StageFigures<'a> {
    /// Everything recorded for `stage`.
    pub fn cumulative(&self, stage: Stage) -> &'a LatencyRecorder {
        self.0.cumulative(stage)
    }

    /// The interval being reported, for `stage`.
    pub fn interval(&self, stage: Stage) -> &'a LatencyRecorder {
        self.0.interval(stage)
    }

    /// Everything recorded for requests of type `t` at `stage`.
    pub fn by_request_type(&self, t: RequestType, stage: Stage) -> &'a LatencyRecorder {
        self.0.by_request_type(t, stage)
    }

    /// The interval's recorder of requests of type `t` at `stage`.
    pub fn interval_by_request_type(&self, t: RequestType, stage: Stage) -> &'a LatencyRecorder {
        self.0.interval_by_request_type(t, stage)
    }

    /// Latencies recorded in the interval, all stages.
    pub fn interval_count(&self) -> u64 {
        self.0.interval_count()
    }

    /// Latencies above the histogram range so far, all stages.
    pub fn over_range(&self) -> u64 {
        self.0.over_range()
    }
}

impl Consumer for StageRecorders {
    type Interval = StageInterval;
    type Figures<'a> = StageFigures<'a>;

    fn figures(&self) -> StageFigures<'_> {
        StageFigures(self)
    }

    fn build(config: &ConsumerConfig) -> Self {
        let highest_ns = config.highest_ns;
        let stage = || LatencyRecorder::new(highest_ns, SIGNIFICANT_DIGITS);
        StageRecorders {
            highest_ns,
            shown: Stage::shown_with(
                config.breakdown,
                config.hops,
                config.points,
                config.ticks.is_some(),
            ),
            current: *per_type(highest_ns),
            earlier: *per_type(highest_ns),
            earlier_stage: std::array::from_fn(|_| stage()),
            interval_view: std::array::from_fn(|_| stage()),
            folded: false,
            unfolded: None,
            over_range: 0,
        }
    }

    #[inline]
    fn on_order(&mut self, event: &OrderEvent<'_>) {
        let latency = &event.latency;
        self.current[latency.request_type.index()][latency.stage.index()].record(latency.ns);
        if latency.ns > self.highest_ns {
            self.over_range += 1;
        }
    }

    fn empty_interval(&self) -> StageInterval {
        StageInterval {
            current: per_type(self.highest_ns),
        }
    }

    fn close_interval(&mut self) {
        self.build_interval_view();
        self.fold_current();
        self.unfolded = None;
    }

    fn refresh(&mut self) {
        self.build_interval_view();
        self.unfolded = None;
        if !self.folded && self.interval_count() > 0 {
            let mut views = Box::new(CumulativeViews {
                by_type: self.earlier.clone(),
                by_stage: self.earlier_stage.clone(),
            });
            for t in 0..RequestType::COUNT {
                for s in 0..Stage::COUNT {
                    views.by_type[t][s].merge(&self.current[t][s]);
                    views.by_stage[s].merge(&self.current[t][s]);
                }
            }
            self.unfolded = Some(views);
        }
    }

    fn reset_interval(&mut self) {
        self.fold_current();
        for current in self.current.iter_mut().flatten() {
            current.reset();
        }
        self.folded = false;
        self.unfolded = None;
    }

    fn reset_all(&mut self) {
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
    }

    fn merge_from(&mut self, other: &Self) {
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
    }

    /// Stage B (and a shard worker) empties the recycled recorders itself before refilling
    /// them, so the memory it records into is in its own core's cache (emptied on the
    /// other core, the first recording into each line cost a transfer between the caches:
    /// +69% of stage B's recording time, BENCHMARKS.md §2f).
    fn hand_over(&mut self, out: &mut StageInterval) {
        for r in out.current.iter_mut().flatten() {
            r.reset();
        }
        std::mem::swap(&mut self.current, &mut *out.current);
    }

    fn take_over(&mut self, from: &mut StageInterval) {
        debug_assert_eq!(self.interval_count(), 0, "the previous interval was reset");
        std::mem::swap(&mut self.current, &mut *from.current);
    }

    fn give_back(&mut self, to: &mut StageInterval) {
        debug_assert!(self.folded, "the interval was folded before it goes back");
        std::mem::swap(&mut self.current, &mut *to.current);
    }

    fn absorb(&mut self, from: &mut StageInterval, _: &mut dyn FnMut(u64) -> GlobalSession) {
        for (mine, theirs) in self
            .current
            .iter_mut()
            .flatten()
            .zip(from.current.iter_mut().flatten())
        {
            if theirs.count() > 0 {
                mine.merge(theirs);
                self.over_range += theirs.over_range();
                theirs.reset();
            }
        }
    }

    fn adopt_folded(&mut self, reported: &mut Self) {
        std::mem::swap(&mut self.earlier, &mut reported.earlier);
        std::mem::swap(&mut self.earlier_stage, &mut reported.earlier_stage);
        self.unfolded = None;
    }
}
