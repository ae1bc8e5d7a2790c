//! `--by` as a consumer of order events.

use crate::consumer::{Consumer, ConsumerConfig};
use crate::group::{default_candidates, GroupSpec, GroupStats, DEFAULT_BY_LIMIT};
use fixscope_model::order::OrderEvent;

/// `--by`: every latency recorded under its order's values (the value ids are given at the
/// request, by the router: [`GroupStats::request`]). Cumulative only: reports show the
/// run's figures, intervals carry none, and the live `r` key keeps them.
impl Consumer for GroupStats {
    type Interval = ();
    /// Its read-only API: each tag's ranking (`TagGroups::ranked`) and the spec.
    type Figures<'a> = &'a GroupStats;

    fn figures(&self) -> &GroupStats {
        self
    }

    fn build(config: &ConsumerConfig) -> Self {
        let spec = config.by.clone().unwrap_or(GroupSpec {
            fields: Vec::new(),
            limit: DEFAULT_BY_LIMIT,
            candidates: default_candidates(DEFAULT_BY_LIMIT),
        });
        GroupStats::new(spec, config.highest_ns)
    }

    fn build_if_asked(config: &ConsumerConfig) -> Option<Self> {
        config.by.is_some().then(|| Self::build(config))
    }

    #[inline]
    fn on_order(&mut self, event: &OrderEvent<'_>) {
        self.record(&event.latency, &event.latency.groups);
    }

    fn empty_interval(&self) {}

    fn merge_from(&mut self, other: &Self) {
        GroupStats::merge_from(self, other);
    }
}
