//! The client's event loop: one epoll over the sessions' sockets and a timerfd for the
//! next open-loop send; phases Sending → Draining → LoggingOut, each bounded in time.

use anyhow::bail;
use fixscope_core::clock::monotonic_ns;
use fixscope_core::shutdown::Shutdown;

use super::conn::{mark_sent, Link, Sess, LOGON_TIMEOUT};
use super::schedule::Plan;
use super::Ctx;
use crate::inbuf::{FramingStats, InBuf, ReadOutcome};
use crate::outbuf::Flushed;
use crate::session::{State, Tick, Tx};
use crate::sys::{self, Epoll, TimerFd};

/// The epoll token of the timerfd (sessions are 0..n).
pub(super) const TIMER: u64 = u64::MAX;
const MAX_READS_PER_EVENT: usize = 8;
const MAX_SLEEP_MS: i32 = 50;
const TICK_NS: u64 = 100_000_000;
const LOGOUT_GRACE_NS: u64 = 2_000_000_000;
/// How long a session waits for its orders to be answered before a planned drop or reset,
/// and for the exchange to close its side after our FIN.
const QUIESCE_TIMEOUT_NS: u64 = 5_000_000_000;
/// A SequenceReset-Reset jumps our numbering this far ahead (NewSeqNo must exceed the
/// expected number).
const SEQUENCE_RESET_JUMP: u64 = 100;

/// The session-layer events the flags plan (`--reconnect-every`, `--hard-reset-every`,
/// `--test-request-every`).
pub(super) struct LinkCfg {
    reconnect_every: u64,
    pause_ns: u64,
    hard_reset_every: u64,
    test_request_every: Option<u64>,
}

impl LinkCfg {
    pub fn from_args(args: &crate::args::ClientArgs) -> Self {
        LinkCfg {
            reconnect_every: args.reconnect_every,
            pause_ns: args.reconnect_pause,
            hard_reset_every: args.hard_reset_every,
            test_request_every: args.test_request_every,
        }
    }
}

enum Phase {
    Sending,
    Draining { until: u64 },
    LoggingOut { until: u64 },
}

pub(super) struct Client {
    pub epoll: Epoll,
    pub timerfd: TimerFd,
    pub sessions: Vec<Sess>,
    pub ctx: Ctx,
    pub framing: FramingStats,
    pub spin_ns: u64,
    pub links: LinkCfg,
}

impl Client {
    pub(super) fn logon_all(&mut self, shutdown: &Shutdown) -> anyhow::Result<()> {
        let deadline = monotonic_ns() + LOGON_TIMEOUT.as_nanos() as u64;
        loop {
            self.flush_all()?;
            if self
                .sessions
                .iter()
                .all(|s| s.session.state() == State::Active)
            {
                return Ok(());
            }
            if self.sessions.iter().any(|s| s.closed) {
                bail!("the exchange closed a session during logon");
            }
            let now = monotonic_ns();
            if now >= deadline || shutdown.is_triggered() {
                bail!("logon timed out");
            }
            let n = self
                .epoll
                .wait(sys::ms_until(now, deadline, MAX_SLEEP_MS))?;
            self.handle_events(n)?;
        }
    }

    pub(super) fn run(&mut self, plan: &Plan, shutdown: &Shutdown) -> anyhow::Result<()> {
        let mut phase = Phase::Sending;
        let mut next_tick = monotonic_ns() + TICK_NS;
        // The open-loop request index (over all sessions).
        let mut i: u64 = 0;
        // Bounded by time: send deadline/count, then drain_ns, then LOGOUT_GRACE_NS.
        loop {
            let now = monotonic_ns();
            self.ctx.clock.refresh();
            if shutdown.is_triggered() && !matches!(phase, Phase::LoggingOut { .. }) {
                phase = self.logout_all(now);
            }
            if self.sessions.iter().all(|s| s.closed) {
                return Ok(()); // the exchange logged us out or went away
            }
            let mut next_due: Option<u64> = None;
            match phase {
                Phase::Sending => {
                    let done = self.total_sent() >= plan.count || now >= plan.send_deadline;
                    if done {
                        phase = Phase::Draining {
                            until: now.saturating_add(plan.drain_ns),
                        };
                        continue;
                    }
                    next_due = self.send_due(plan, &mut i, now)?;
                }
                Phase::Draining { until } => {
                    let settled = self.sessions.iter().all(|s| {
                        s.closed
                            || (matches!(s.link, Link::Up | Link::Quiescing { .. })
                                && s.session.state() == State::Active
                                && s.session.test_requests_unanswered == 0)
                    });
                    if (self.outstanding() == 0 && settled) || now >= until {
                        phase = self.logout_all(now);
                        continue;
                    }
                }
                Phase::LoggingOut { until } => {
                    if now >= until || self.sessions.iter().all(|s| s.closed) {
                        return Ok(());
                    }
                }
            }
            self.step_links(now, matches!(phase, Phase::Sending))?;
            if now >= next_tick {
                next_tick = now + TICK_NS;
                self.tick(now);
            }
            self.flush_all()?;
            let timeout = match next_due {
                Some(due) if due <= monotonic_ns() + self.spin_ns => 0,
                Some(due) => {
                    self.timerfd.arm_at(due - self.spin_ns)?;
                    sys::ms_until(now, next_tick, MAX_SLEEP_MS)
                }
                None => sys::ms_until(now, next_tick, MAX_SLEEP_MS),
            };
            let n = self.epoll.wait(timeout)?;
            self.handle_events(n)?;
        }
    }

    fn logout_all(&mut self, now: u64) -> Phase {
        for s in &mut self.sessions {
            if s.session.state() == State::Active {
                let tx = Tx {
                    enc: &mut self.ctx.enc,
                    clock: &mut self.ctx.clock,
                    out: s.out.buf(),
                };
                s.session.logout(tx, now, "");
            } else if s.session.state() != State::LogoutSent {
                s.closing = true;
            }
        }
        Phase::LoggingOut {
            until: now + LOGOUT_GRACE_NS,
        }
    }

    /// Planned reconnects, resets and TestRequests (`sending`: new ones may start).
    fn step_links(&mut self, now: u64, sending: bool) -> anyhow::Result<()> {
        let cfg = &self.links;
        for (i, s) in self.sessions.iter_mut().enumerate() {
            if s.closed {
                continue;
            }
            let active = s.session.state() == State::Active;
            match s.link {
                Link::Up => {
                    if let (Some(every), Some(due)) = (cfg.test_request_every, s.next_test_request)
                    {
                        if sending && active && now >= due {
                            let tx = Tx {
                                enc: &mut self.ctx.enc,
                                clock: &mut self.ctx.clock,
                                out: s.out.buf(),
                            };
                            s.session.test_request(tx, now);
                            s.next_test_request = Some(due.max(now) + every);
                        }
                    }
                    if sending
                        && active
                        && cfg.reconnect_every > 0
                        && s.orders_since_link >= cfg.reconnect_every
                    {
                        s.link = Link::Quiescing {
                            deadline: now + QUIESCE_TIMEOUT_NS,
                            probed: false,
                        };
                    }
                }
                Link::Quiescing { deadline, probed } => {
                    if !sending {
                        s.link = Link::Up;
                        continue;
                    }
                    let quiet = s.outstanding == 0
                        && s.out.pending() == 0
                        && s.session.test_requests_unanswered == 0;
                    if !quiet && now < deadline {
                        continue;
                    }
                    let k = cfg.hard_reset_every;
                    let step = s.link_steps + 1;
                    let hard = k > 0 && step.is_multiple_of(k);
                    let sequence_reset = hard && (step / k).is_multiple_of(2);
                    if !sequence_reset && !probed && now < deadline {
                        // Check the line before going down: the TestRequest and its
                        // Heartbeat are the administrative messages a later resend of the
                        // last messages gap-fills.
                        let tx = Tx {
                            enc: &mut self.ctx.enc,
                            clock: &mut self.ctx.clock,
                            out: s.out.buf(),
                        };
                        s.session.test_request(tx, now);
                        s.link = Link::Quiescing {
                            deadline,
                            probed: true,
                        };
                        continue;
                    }
                    s.link_steps = step;
                    if sequence_reset {
                        // In-session SequenceReset-Reset: a new epoch, ClOrdIDs start over.
                        let jump = s.session.next_out_seq() + SEQUENCE_RESET_JUMP;
                        let tx = Tx {
                            enc: &mut self.ctx.enc,
                            clock: &mut self.ctx.clock,
                            out: s.out.buf(),
                        };
                        s.session.sequence_reset(tx, now, jump);
                        s.next_num = 1;
                        s.orders_since_link = 0;
                        s.link = Link::Up;
                        continue;
                    }
                    // Drop the connection without a Logout: our FIN, then wait for theirs
                    // (the exchange has parked the session before we log on again).
                    let _ = s.stream.shutdown(std::net::Shutdown::Write);
                    s.link = Link::Dropping {
                        deadline: now + QUIESCE_TIMEOUT_NS,
                        reset: hard,
                    };
                }
                Link::Dropping { deadline, reset } => {
                    if now >= deadline {
                        let _ = self.epoll.delete(s.raw_fd());
                        s.link = Link::Down {
                            until: now + cfg.pause_ns,
                            reset,
                        };
                    }
                }
                Link::Down { until, reset } => {
                    if now >= until {
                        s.reconnect(&self.epoll, i as u64, reset, &mut self.ctx)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn tick(&mut self, now: u64) {
        for s in &mut self.sessions {
            if s.link != Link::Up {
                continue;
            }
            let tx = Tx {
                enc: &mut self.ctx.enc,
                clock: &mut self.ctx.clock,
                out: s.out.buf(),
            };
            if let Tick::Disconnect(_) = s.session.on_tick(now, tx) {
                s.closing = true;
            }
        }
    }

    fn flush_all(&mut self) -> anyhow::Result<()> {
        for (i, s) in self.sessions.iter_mut().enumerate() {
            if s.closed || (s.out.pending() == 0 && !s.closing) {
                continue;
            }
            let c = &mut self.ctx.c;
            let Sess {
                out,
                stream,
                ring,
                mask,
                ..
            } = s;
            let mask = *mask;
            let result = out.flush(stream, |num, ts, _| mark_sent(c, ring, mask, num, ts));
            match result {
                Ok(Flushed::Done) => {
                    if s.closing {
                        s.close(&self.epoll);
                        continue;
                    }
                    let fd = s.raw_fd();
                    self.epoll
                        .want_writable(fd, i as u64, &mut s.writable_armed, false)?;
                }
                Ok(Flushed::Blocked) => {
                    let fd = s.raw_fd();
                    self.epoll
                        .want_writable(fd, i as u64, &mut s.writable_armed, true)?;
                }
                Err(_) => s.close(&self.epoll),
            }
        }
        Ok(())
    }

    fn handle_events(&mut self, n: usize) -> anyhow::Result<()> {
        for e in 0..n {
            let (token, events) = self.epoll.event(e);
            if token == TIMER {
                self.timerfd.clear();
                continue;
            }
            let Some(s) = self.sessions.get_mut(token as usize) else {
                continue;
            };
            if s.closed || !(sys::is_readable(events) || sys::is_error_or_hup(events)) {
                continue;
            }
            // Moved out so the framing callback can borrow the session (no allocation).
            let mut inbuf = std::mem::replace(&mut s.inbuf, InBuf::empty());
            for _ in 0..MAX_READS_PER_EVENT {
                match inbuf.read_from(&mut s.stream) {
                    Ok(ReadOutcome::Data) => {
                        let ts = monotonic_ns();
                        let ctx = &mut self.ctx;
                        inbuf.drain(&mut self.framing, |msg| ctx.on_message(s, msg, ts));
                        if inbuf.free_tail() > 0 {
                            break;
                        }
                    }
                    Ok(ReadOutcome::WouldBlock) => break,
                    Ok(ReadOutcome::Closed) | Err(_) => {
                        s.inbuf = std::mem::replace(&mut inbuf, InBuf::empty());
                        if let Link::Dropping { reset, .. } = s.link {
                            // The exchange closed its side after our FIN: down for a while.
                            let _ = self.epoll.delete(s.raw_fd());
                            s.link = Link::Down {
                                until: monotonic_ns() + self.links.pause_ns,
                                reset,
                            };
                            break;
                        }
                        s.close(&self.epoll);
                        break;
                    }
                }
            }
            if !s.closed && !matches!(s.link, Link::Down { .. }) {
                s.inbuf = inbuf;
            }
        }
        Ok(())
    }
}
