//! Client-side latency histograms, the run's report and how it prints.

use std::fmt;

use anyhow::Context;
use hdrhistogram::Histogram;

use super::conn::Order;
use super::event_loop::Client;
use crate::args::ClientArgs;
use crate::exchange::add_session_stats;
use crate::session::SessionStats;

pub const STAGES: [&str; 3] = ["first", "ack", "fill"];
pub const BASES: [&str; 2] = ["from schedule", "from write"];

/// Percentiles of one stage measured from one starting point.
#[derive(Clone, Debug, PartialEq)]
pub struct StageStats {
    /// "first" (first response of any kind), "ack" or "fill" (first fill).
    pub stage: &'static str,
    /// "from schedule" (the open-loop send time) or "from write" (just before write()).
    pub basis: &'static str,
    pub count: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

/// [stage][basis] histograms of nanoseconds; recording never allocates.
pub struct Latencies {
    hists: Vec<Histogram<u64>>,
}

impl Latencies {
    pub fn new() -> anyhow::Result<Self> {
        let mut hists = Vec::with_capacity(STAGES.len() * BASES.len());
        for _ in 0..STAGES.len() * BASES.len() {
            // 1ns .. 1h at 3 significant digits.
            hists.push(Histogram::new_with_bounds(1, 3_600_000_000_000, 3)?);
        }
        Ok(Latencies { hists })
    }

    #[inline]
    pub fn record(&mut self, stage: usize, from_schedule_ns: u64, from_write_ns: u64) {
        self.hists[stage * 2].saturating_record(from_schedule_ns.max(1));
        self.hists[stage * 2 + 1].saturating_record(from_write_ns.max(1));
    }

    pub fn stats(&self) -> Vec<StageStats> {
        let mut out = Vec::new();
        for (s, stage) in STAGES.iter().enumerate() {
            for (b, basis) in BASES.iter().enumerate() {
                let h = &self.hists[s * 2 + b];
                out.push(StageStats {
                    stage,
                    basis,
                    count: h.len(),
                    mean_ns: h.mean(),
                    p50_ns: h.value_at_quantile(0.5),
                    p90_ns: h.value_at_quantile(0.9),
                    p99_ns: h.value_at_quantile(0.99),
                    p999_ns: h.value_at_quantile(0.999),
                    max_ns: h.max(),
                });
            }
        }
        out
    }
}

/// What a client run did.
#[derive(Clone, Debug, Default)]
pub struct ClientReport {
    pub sessions: usize,
    /// "open loop 300000/s" or "closed loop, window 64/session".
    pub mode: String,
    pub begin_string: String,
    pub target_rate: Option<f64>,
    pub sent: u64,
    pub sent_d: u64,
    pub sent_f: u64,
    pub sent_g: u64,
    /// Seconds between the first and the last order sent.
    pub send_elapsed_s: f64,
    /// Orders per second actually sent.
    pub achieved_rate: f64,
    /// Worst lateness of an actual write behind its open-loop schedule.
    pub max_send_lag_ns: u64,
    /// Positive acks (150=0 new, 150=4 cancelled, 150=5 replaced).
    pub acks: u64,
    /// Orders with at least one fill.
    pub fills: u64,
    /// Orders fully filled (39=2).
    pub filled_orders: u64,
    /// ExecutionReports with 150=8.
    pub rejects: u64,
    /// OrderCancelRejects (35=9).
    pub cancel_rejects: u64,
    /// Requests whose lifecycle completed (filled, rejected, cancelled, replaced, answered).
    pub completed: u64,
    /// Requests still waiting for a response when the client stopped.
    pub incomplete: u64,
    /// Responses whose ClOrdID matched no tracked request.
    pub unmatched: u64,
    /// Requests dropped from the tracking ring before completing (client fell far behind).
    pub overrun: u64,
    pub stages: Vec<StageStats>,
    pub session: SessionStats,
}

impl ClientReport {
    /// The stats of `stage` ("first", "ack", "fill") from `basis`.
    pub fn stage(&self, stage: &str, basis: &str) -> Option<&StageStats> {
        self.stages
            .iter()
            .find(|s| s.stage == stage && s.basis == basis)
    }
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

impl fmt::Display for ClientReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "client: {} session(s), {}, {}",
            self.sessions, self.mode, self.begin_string
        )?;
        writeln!(
            f,
            "  sent {} requests (D {}, F {}, G {}) in {:.3}s = {:.0}/s achieved{}",
            self.sent,
            self.sent_d,
            self.sent_f,
            self.sent_g,
            self.send_elapsed_s,
            self.achieved_rate,
            match self.target_rate {
                Some(r) => format!(
                    " (target {r:.0}/s, max send lag {:.1}us)",
                    us(self.max_send_lag_ns)
                ),
                None => String::new(),
            }
        )?;
        writeln!(
            f,
            "  responses: {} acks, {} filled ({} fully), {} rejects, {} cancel rejects; {} complete, {} incomplete, {} unmatched, {} overrun",
            self.acks,
            self.fills,
            self.filled_orders,
            self.rejects,
            self.cancel_rejects,
            self.completed,
            self.incomplete,
            self.unmatched,
            self.overrun
        )?;
        writeln!(
            f,
            "  {:<20} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10}",
            "round trip (us)", "count", "p50", "p90", "p99", "p99.9", "max"
        )?;
        for s in &self.stages {
            if s.count == 0 {
                continue;
            }
            writeln!(
                f,
                "  {:<20} {:>9} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>10.1}",
                format!("{} {}", s.stage, s.basis),
                s.count,
                us(s.p50_ns),
                us(s.p90_ns),
                us(s.p99_ns),
                us(s.p999_ns),
                us(s.max_ns)
            )?;
        }
        Ok(())
    }
}

impl Client {
    /// The run's report; the requests still waiting get their (partial) truth records.
    pub(super) fn report(
        mut self,
        args: &ClientArgs,
        window: Option<usize>,
    ) -> anyhow::Result<ClientReport> {
        let mut session = SessionStats::default();
        for s in &mut self.sessions {
            add_session_stats(&mut session, &s.session.stats);
            // Requests still waiting get their (partial) truth records too.
            let waiting: Vec<Order> = s
                .ring
                .iter()
                .filter(|o| o.num != 0 && !o.done)
                .copied()
                .collect();
            for o in &waiting {
                self.ctx.write_truth(s, o);
            }
        }
        if let Some(w) = &mut self.ctx.truth {
            w.flush().context("writing the client truth file")?;
        }
        let c = &self.ctx.c;
        let sent = c.sent.iter().sum::<u64>();
        let span = c.last_send_ns.saturating_sub(c.first_send_ns);
        let send_elapsed_s = span as f64 / 1e9;
        let achieved_rate = if sent > 1 && span > 0 {
            (sent - 1) as f64 / send_elapsed_s
        } else {
            0.0
        };
        let mode = match (args.rate, window) {
            (Some(r), _) => format!("open loop {r:.0}/s"),
            (None, Some(w)) => format!("closed loop, window {w}/session"),
            (None, None) => "closed loop".into(),
        };
        Ok(ClientReport {
            sessions: self.sessions.len(),
            mode,
            begin_string: args.begin_string.clone(),
            target_rate: args.rate,
            sent,
            sent_d: c.sent[0],
            sent_f: c.sent[1],
            sent_g: c.sent[2],
            send_elapsed_s,
            achieved_rate,
            max_send_lag_ns: c.max_send_lag_ns,
            acks: c.acks,
            fills: c.fills,
            filled_orders: c.filled_orders,
            rejects: c.rejects,
            cancel_rejects: c.cancel_rejects,
            completed: c.completed,
            incomplete: self.sessions.iter().map(|s| s.outstanding).sum(),
            unmatched: c.unmatched,
            overrun: c.overrun,
            stages: self.ctx.lat.stats(),
            session,
        })
    }
}
