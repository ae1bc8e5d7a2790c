//! The near point's orders joined to the far point's: each first response at the near point
//! makes the two-point stages of its order.
//!
//! ```text
//!  far point   request out ─────────────────────────────────────────── first response in
//!                  └─one_way_fwd─▶ near point: request in ─residence─▶ first response out ─one_way_rev─▶┘
//!  wire_rtt = far round trip − residence = one_way_fwd + one_way_rev
//! ```
//!
//! `residence` and `wire_rtt` are each in one clock: exact. A one-way figure is a stamp of
//! each clock, so it is known only to the offset's interval: the figure is the middle of
//! what the interval allows (never below 0: a segment does not arrive before it left), and
//! its uncertainty half that range's width.

use crate::consumer::OrderSink;
use crate::correlate::Stage;
use fixscope_model::order::{Latency, OrderRef, SessionRef};

use super::far::order_identity;
use super::figures::ClockFigures;
use super::{Bounds, PointCounters, PointsSetup};
use std::sync::Arc;

/// Joins the near point's first responses with the far point's orders.
pub struct PointJoiner {
    setup: Arc<PointsSetup>,
    /// Far orders joined already (by their index).
    used: Vec<bool>,
    pub counters: PointCounters,
    /// The largest uncertainty recorded: `one_way_fwd`, `one_way_rev`.
    max_uncertainty: [u64; 2],
    identity: Vec<u8>,
}

impl PointJoiner {
    pub fn new(setup: Arc<PointsSetup>) -> Self {
        let counters = PointCounters {
            points_segments_matched: setup.segments.matched,
            points_segments_unmatched: setup.segments.unmatched,
            points_segments_repeated: setup.segments.repeated,
            ..PointCounters::default()
        };
        PointJoiner {
            used: vec![false; setup.far.orders.len()],
            setup,
            counters,
            max_uncertainty: [0; 2],
            identity: Vec::new(),
        }
    }

    /// The identity of the order [`PointJoiner::on_first_response`] joins next (its
    /// session's names are borrowed from the statistics it then records into).
    pub fn identify(&mut self, latency: &Latency, order: &OrderRef<'_>, names: SessionRef<'_>) {
        order_identity(
            names.sender_comp_id,
            names.target_comp_id,
            latency.request_type,
            order.key,
            &mut self.identity,
        );
    }

    /// The near point answered the order last identified (`latency` is its
    /// `first_response`).
    pub fn on_first_response(
        &mut self,
        latency: Latency,
        order: &OrderRef<'_>,
        sink: &mut dyn OrderSink,
    ) {
        let Some((i, far)) = self.setup.far.get(&self.identity) else {
            self.counters.points_orders_near_only += 1;
            return;
        };
        if far.repeated || self.used[i] {
            self.counters.points_orders_ambiguous += 1;
            return;
        }
        self.used[i] = true;
        let residence = latency.ns;
        let far_rtt = far.response_ts_ns.saturating_sub(far.request_ts_ns);
        let Some(wire_rtt) = far_rtt.checked_sub(residence) else {
            self.counters.points_time_reversed += 1;
            return;
        };
        self.counters.points_orders_joined += 1;
        record(sink, &latency, order, Stage::Residence, residence);
        record(sink, &latency, order, Stage::WireRtt, wire_rtt);
        let near = (latency.request_ts_ns as i64, order.response_ts_ns as i64);
        let far = (far.request_ts_ns as i64, far.response_ts_ns as i64);
        let fwd = self.one_way(far.0, near.0, true);
        let rev = self.one_way(near.1, far.1, false);
        match (fwd, rev) {
            (Ok((f, uf)), Ok((r, ur))) => {
                self.max_uncertainty[0] = self.max_uncertainty[0].max(uf);
                self.max_uncertainty[1] = self.max_uncertainty[1].max(ur);
                record(sink, &latency, order, Stage::OneWayFwd, f);
                record(sink, &latency, order, Stage::OneWayRev, r);
            }
            (Err(Bounds::AtStep), _) | (_, Err(Bounds::AtStep)) => {
                self.counters.points_one_way_at_step += 1
            }
            _ => self.counters.points_one_way_unbounded += 1,
        }
    }

    /// A segment left one point at `sent` (its clock) and reached the other at `received`
    /// (the other's): its one-way time and uncertainty, or what the clock lacks then.
    fn one_way(&self, sent: i64, received: i64, sent_at_far: bool) -> Result<(u64, u64), Bounds> {
        // The far point is A when B is nearer the acceptor.
        let a_to_b = sent_at_far == self.setup.b_near;
        let (t_a, t_b) = if a_to_b {
            (sent, received)
        } else {
            (received, sent)
        };
        let (lo, hi) = match self.setup.bounds_at(t_a) {
            Bounds::Known(lo, hi) => (lo, hi),
            other => return Err(other),
        };
        let delta = (t_b - t_a) as f64;
        // A → B: δ = one_way + θ; B → A: δ = θ − one_way.
        let (least, most) = if a_to_b {
            (delta - hi, delta - lo)
        } else {
            (lo - delta, hi - delta)
        };
        if most < 0.0 {
            return Err(Bounds::Unbounded);
        }
        let least = least.max(0.0);
        let value = ((least + most) / 2.0).round() as u64;
        let uncertainty = ((most - least) / 2.0).ceil() as u64;
        Ok((value, uncertainty))
    }

    /// The run ended: far orders never joined are `far_only`.
    pub fn finish(&mut self) {
        let unjoined = self
            .setup
            .far
            .orders
            .iter()
            .zip(&self.used)
            .filter(|(o, used)| !o.repeated && !**used)
            .count() as u64;
        self.counters.points_orders_far_only = unjoined;
    }

    pub fn figures(&self) -> ClockFigures {
        self.setup.figures(self.max_uncertainty)
    }
}

/// The first response's latency again, as a two-point stage.
fn record(sink: &mut dyn OrderSink, first: &Latency, order: &OrderRef<'_>, stage: Stage, ns: u64) {
    let mut latency = *first;
    latency.stage = stage;
    latency.ns = ns;
    sink.record_order(latency, order);
}
