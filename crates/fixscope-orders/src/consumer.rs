//! The one seam for everything that learns from an order.
//!
//! Correlation turns FIX messages into order events ([`fixscope_model::order::OrderEvent`]); every
//! part that learns from them — the stage recorders, the per-session latencies, the slowest
//! orders, `--by` groups, and this round's hop recorder and record writer — is a
//! [`Consumer`], registered once in [`crate::consumers`]. The pipeline, the two-stage split
//! and the shard merger drive the registry through this trait only, so a new consumer is
//! one module and one registration line; reporters read its figures, never the consumer.
//!
//! An interval's life: events come in ([`Consumer::on_order`]); at the interval's end the
//! one pipeline closes it ([`Consumer::close_interval`]: views for the interval report,
//! folded into the run), reports, and starts the next ([`Consumer::reset_interval`]). Two
//! stages hand the interval from the recording thread to the reporting side whole
//! ([`Consumer::hand_over`], [`Consumer::take_over`], [`Consumer::give_back`], and at the
//! end [`Consumer::adopt_folded`]); shard workers hand theirs to the merger, which adds
//! them up ([`Consumer::absorb`]). Each step must give one pipeline's figures exactly: the
//! two-stage and sharded tests compare every output byte for byte.

use crate::group::GroupSpec;
use fixscope_model::order::{Latency, OrderBreakdown, OrderEvent, OrderRef};

/// What every consumer is built from (the run's flags).
#[derive(Clone, Debug, Default)]
pub struct ConsumerConfig {
    /// The top of the histograms' range (`-x`).
    pub highest_ns: u64,
    /// Slowest orders kept per stage (`--slowest`).
    pub slowest: usize,
    /// The breakdown stages are measured (`--breakdown`).
    pub breakdown: bool,
    /// The hop stages are measured (`--leg`).
    pub hops: bool,
    /// The two-point stages are measured (`--point`).
    pub points: bool,
    /// `--by` tags.
    pub by: Option<GroupSpec>,
    /// `--tick-link`: the tick-to-trade stages, by the rule and the feed's ticks.
    pub ticks: Option<std::sync::Arc<crate::ticks::TickLinker>>,
}

/// A session id as a merged (sharded) run knows it: its global id and whether that id is
/// among the sessions broken down individually.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GlobalSession {
    pub id: u64,
    pub tracked: bool,
}

/// Everything that learns from completed (or given-up) orders.
///
/// The defaults are "nothing to do": a consumer that keeps no per-interval state needs
/// only [`Consumer::build`], [`Consumer::on_order`] and [`Consumer::merge_from`].
pub trait Consumer {
    /// One interval of this consumer on its way between threads (stage B → reporting side,
    /// shard worker → merger): swapped in and out whole, never copied, recycled.
    type Interval;

    /// What reporters read of it: a read-only view of its figures (after a close or a
    /// refresh), never the consumer itself.
    type Figures<'a>: Copy
    where
        Self: 'a;

    /// Its figures, for one report.
    fn figures(&self) -> Self::Figures<'_>;

    /// Built from the run's flags.
    fn build(config: &ConsumerConfig) -> Self
    where
        Self: Sized;

    /// Built when the run's flags ask for it: an optional consumer (`Option<Self>` in the
    /// registry) overrides this with its flag.
    fn build_if_asked(config: &ConsumerConfig) -> Option<Self>
    where
        Self: Sized,
    {
        Some(Self::build(config))
    }

    /// One order event (the hot path: one call per latency).
    fn on_order(&mut self, event: &OrderEvent<'_>);

    /// An empty interval to hand over into (made once per channel slot, then recycled).
    fn empty_interval(&self) -> Self::Interval;

    /// The interval ends: build what its report reads and fold it into the run's figures.
    fn close_interval(&mut self) {}

    /// A summary in the middle of an interval: the run's figures plus the open interval.
    fn refresh(&mut self) {}

    /// Starts the next interval (the current one joins the run's figures if not yet).
    fn reset_interval(&mut self) {}

    /// Forgets everything recorded (the live `r` key).
    fn reset_all(&mut self) {}

    /// Adds everything `other` recorded (the same consumer of another part of the run).
    fn merge_from(&mut self, other: &Self);

    /// The recording side at an interval's end: the interval goes into `out` (emptied
    /// first) and this side starts the next one.
    fn hand_over(&mut self, _out: &mut Self::Interval) {}

    /// The reporting side: `from`'s interval becomes the current one.
    fn take_over(&mut self, _from: &mut Self::Interval) {}

    /// The reporting side once the interval is reported: what goes back to the recording
    /// side for reuse.
    fn give_back(&mut self, _to: &mut Self::Interval) {}

    /// The merger: adds a worker's interval (its session ids mapped by `global`) and
    /// empties `from` for reuse.
    fn absorb(
        &mut self,
        _from: &mut Self::Interval,
        _global: &mut dyn FnMut(u64) -> GlobalSession,
    ) {
    }

    /// The recording side at the end takes the reporting side's folded intervals: one
    /// pipeline's figures.
    fn adopt_folded(&mut self, _reported: &mut Self) {}
}

/// An optional consumer (a flag turns it on): absent, it costs one branch per event.
impl<C: Consumer> Consumer for Option<C> {
    type Interval = Option<C::Interval>;
    type Figures<'a>
        = Option<C::Figures<'a>>
    where
        Self: 'a;

    fn figures(&self) -> Self::Figures<'_> {
        self.as_ref().map(C::figures)
    }

    fn build(config: &ConsumerConfig) -> Self {
        C::build_if_asked(config)
    }

    #[inline]
    fn on_order(&mut self, event: &OrderEvent<'_>) {
        if let Some(c) = self {
            c.on_order(event);
        }
    }

    fn empty_interval(&self) -> Self::Interval {
        self.as_ref().map(C::empty_interval)
    }

    fn close_interval(&mut self) {
        if let Some(c) = self {
            c.close_interval();
        }
    }

    fn refresh(&mut self) {
        if let Some(c) = self {
            c.refresh();
        }
    }

    fn reset_interval(&mut self) {
        if let Some(c) = self {
            c.reset_interval();
        }
    }

    fn reset_all(&mut self) {
        if let Some(c) = self {
            c.reset_all();
        }
    }

    fn merge_from(&mut self, other: &Self) {
        if let (Some(c), Some(o)) = (self, other) {
            c.merge_from(o);
        }
    }

    fn hand_over(&mut self, out: &mut Self::Interval) {
        if let (Some(c), Some(o)) = (self, out) {
            c.hand_over(o);
        }
    }

    fn take_over(&mut self, from: &mut Self::Interval) {
        if let (Some(c), Some(f)) = (self, from) {
            c.take_over(f);
        }
    }

    fn give_back(&mut self, to: &mut Self::Interval) {
        if let (Some(c), Some(t)) = (self, to) {
            c.give_back(t);
        }
    }

    fn absorb(&mut self, from: &mut Self::Interval, global: &mut dyn FnMut(u64) -> GlobalSession) {
        if let (Some(c), Some(f)) = (self, from) {
            c.absorb(f, global);
        }
    }

    fn adopt_folded(&mut self, reported: &mut Self) {
        if let (Some(c), Some(r)) = (self, reported) {
            c.adopt_folded(r);
        }
    }
}

/// Where the producers of order events (the router, the in-host breakdown) send them: the
/// run's statistics, which look the session's names up and dispatch to every consumer.
pub trait OrderSink {
    /// One latency of an order.
    fn record_order(&mut self, latency: Latency, order: &OrderRef<'_>);
    /// An order's breakdown measured after the order was recorded (its socket calls came
    /// after its segments): the kept orders get it.
    fn attach_breakdown(&mut self, session: u64, request_ts_ns: u64, breakdown: &OrderBreakdown);
}
