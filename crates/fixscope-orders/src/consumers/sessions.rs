//! Per-session latencies: each tracked session's request → first response distribution
//! and, with `--breakdown`, its breakdown stages (2 significant digits: sessions are many).

use crate::consumer::{Consumer, ConsumerConfig};
use crate::correlate::Stage;
use crate::recorder::{Distribution, LatencyRecorder, SESSION_SIGNIFICANT_DIGITS};
use fixscope_model::order::OrderEvent;

/// One session's recorders, allocated with its first latency: sessions that never see an
/// order (port scans, heartbeats only, SYN floods) cost no histogram.
#[derive(Clone, Debug, Default)]
pub struct SessionLatency {
    first_response: Option<LatencyRecorder>,
    /// The breakdown stages (`--breakdown`), indexed as [`Stage::BREAKDOWN`].
    breakdown: Option<Box<[LatencyRecorder; 4]>>,
}

impl SessionLatency {
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

/// Every tracked session's latencies, by session id (`id - 1`).
pub struct SessionLatencies {
    highest_ns: u64,
    rows: Vec<SessionLatency>,
}

impl SessionLatencies {
    /// Session `id`'s latencies (`None`: none recorded).
    pub fn get(&self, id: u64) -> Option<&SessionLatency> {
        self.rows.get((id as usize).wrapping_sub(1))
    }

    fn row(&mut self, id: u64) -> &mut SessionLatency {
        let i = id as usize - 1;
        if self.rows.len() <= i {
            self.rows.resize_with(i + 1, SessionLatency::default);
        }
        &mut self.rows[i]
    }

    /// The rows, emptied (a worker's, at the end of a sharded run).
    pub fn take(&mut self) -> Vec<SessionLatency> {
        std::mem::take(&mut self.rows)
    }

    /// Puts a worker's session's latencies under its global id.
    pub fn adopt(&mut self, id: u64, latency: SessionLatency) {
        if id >= 1 {
            *self.row(id) = latency;
        }
    }
}

/// Per-session latencies, read-only.
#[derive(Clone, Copy)]
pub struct SessionLatencyFigures<'a>(&'a SessionLatencies);

impl<'a> SessionLatencyFigures<'a> {
    /// Session `id`'s latencies (`None`: none recorded).
    pub fn get(&self, id: u64) -> Option<&'a SessionLatency> {
        self.0.get(id)
    }
}

impl Consumer for SessionLatencies {
    type Interval = ();
    type Figures<'a> = SessionLatencyFigures<'a>;

    fn figures(&self) -> SessionLatencyFigures<'_> {
        SessionLatencyFigures(self)
    }

    fn build(config: &ConsumerConfig) -> Self {
        SessionLatencies {
            highest_ns: config.highest_ns,
            rows: Vec::new(),
        }
    }

    #[inline]
    fn on_order(&mut self, event: &OrderEvent<'_>) {
        let latency = &event.latency;
        if !event.session_tracked {
            return;
        }
        let highest_ns = self.highest_ns;
        let recorder = || LatencyRecorder::new(highest_ns, SESSION_SIGNIFICANT_DIGITS);
        if latency.stage == Stage::FirstResponse {
            self.row(latency.session)
                .first_response
                .get_or_insert_with(recorder)
                .record(latency.ns);
        } else if let Some(i) = Stage::BREAKDOWN.iter().position(|&s| s == latency.stage) {
            self.row(latency.session)
                .breakdown
                .get_or_insert_with(|| Box::new(std::array::from_fn(|_| recorder())))[i]
                .record(latency.ns);
        }
    }

    fn empty_interval(&self) {}

    /// Only the first-response figures are forgotten (as before the consumer seam: the
    /// breakdown stages' per-session figures are kept).
    fn reset_all(&mut self) {
        for row in &mut self.rows {
            row.first_response = None;
        }
    }

    /// Sessions are not merged here: their ids are each pipeline's own (a sharded run
    /// renumbers them and adopts each at the end: [`SessionLatencies::adopt`]).
    fn merge_from(&mut self, _: &Self) {}
}
