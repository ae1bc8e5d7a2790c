//! What to send now: open loop walks the schedule (every request at its own time, however
//! the exchange answers), closed loop keeps each session's window of outstanding requests
//! full.

use super::event_loop::Client;
use super::schedule::Plan;

/// Requests encoded per loop turn before the loop reads responses again.
const MAX_SENDS_PER_TURN: usize = 1024;

impl Client {
    /// Sends what is due now; returns when the next send is due (open loop), or `now` when
    /// this turn's budget ran out with more due.
    pub(super) fn send_due(
        &mut self,
        plan: &Plan,
        i: &mut u64,
        now: u64,
    ) -> anyhow::Result<Option<u64>> {
        let n = self.sessions.len();
        let mut budget = MAX_SENDS_PER_TURN;
        if let Some(interval) = plan.interval_ns {
            loop {
                let sched = plan.scheduled_ns(interval, *i);
                if sched > now || sched >= plan.send_deadline {
                    return Ok(Some(sched));
                }
                if budget == 0 || self.total_sent() >= plan.count {
                    return Ok(Some(now));
                }
                budget -= 1;
                let s = &mut self.sessions[(*i % n as u64) as usize];
                *i += 1;
                if s.closed {
                    continue;
                }
                self.ctx.send_order(s, sched)?;
            }
        }
        for s in self.sessions.iter_mut() {
            while s.outstanding < plan.window && !s.closed && budget > 0 {
                if self.ctx.c.sent.iter().sum::<u64>() >= plan.count {
                    return Ok(None);
                }
                budget -= 1;
                self.ctx.send_order(s, now)?;
            }
        }
        Ok(if budget == 0 { Some(now) } else { None })
    }

    pub(super) fn total_sent(&self) -> u64 {
        self.ctx.c.sent.iter().sum()
    }

    pub(super) fn outstanding(&self) -> u64 {
        self.sessions.iter().map(|s| s.outstanding).sum()
    }
}
