//! `fixscope sim exchange`: a FIX acceptor that acks and fills orders after configurable
//! processing delays and records ground truth.

mod engine;
mod exec_report;
mod orders;
mod request;
mod tags;
mod timer;
mod truth_records;

use std::cmp::Reverse;
use std::fmt;
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;

use anyhow::Context;
use fixscope_core::clock::monotonic_ns;
use fixscope_core::shutdown::Shutdown;

use crate::args::ExchangeArgs;
use crate::inbuf::{FramingStats, InBuf, ReadOutcome};
use crate::outbuf::Flushed;
use crate::session::{SessionStats, State, Tick, Tx};
use crate::sys::{self, Epoll, TimerFd};
use crate::truth::{TruthWriter, EXCHANGE_HEADER};
use crate::wire_truth::{write_session_truth, SessionTruthRecord};
use engine::{Cfg, ConnState, Ctx, Written};
use std::io::Write as _;

const LISTENER: u64 = 0;
const TIMER: u64 = 1;
const CONN_BASE: u64 = 2;
/// Reads per readable connection per loop turn (fairness between sessions).
const MAX_READS_PER_EVENT: usize = 8;
const MAX_ACCEPTS_PER_EVENT: usize = 64;
/// Timers fired per loop turn before the loop looks at sockets again.
const MAX_TIMERS_PER_TURN: usize = 65_536;
/// Longest epoll sleep: bounds how late we notice a shutdown request.
const MAX_SLEEP_MS: i32 = 50;
const TICK_NS: u64 = 100_000_000;
/// How long a shutdown waits for clients to answer our Logout.
const LOGOUT_GRACE_NS: u64 = 2_000_000_000;
const INBUF_BYTES: usize = 256 * 1024;

/// What an exchange run did.
#[derive(Clone, Debug, Default)]
pub struct ExchangeSummary {
    pub listen: Option<SocketAddr>,
    pub elapsed_s: f64,
    pub connections: u64,
    pub logons: u64,
    pub logouts: u64,
    pub protocol_errors: u64,
    /// Inbound framed messages with a valid checksum.
    pub messages_in: u64,
    /// ExecutionReports and OrderCancelRejects sent.
    pub messages_out: u64,
    pub orders: u64,
    pub cancels: u64,
    pub replaces: u64,
    /// Requests held back by `--stall` (on top of their ack delay).
    pub held: u64,
    pub acks: u64,
    pub rejects: u64,
    pub fills: u64,
    pub filled_orders: u64,
    pub cancelled: u64,
    pub replaced: u64,
    pub cancel_rejects: u64,
    /// Forced by `--session-reject-every` / `--business-reject-every`.
    pub session_rejects: u64,
    pub business_rejects: u64,
    /// PossResends (97=Y) of a request already taken, not taken again.
    pub poss_resends_ignored: u64,
    pub bad_checksum: u64,
    pub skipped_bytes: u64,
    pub truth_records: u64,
    /// CLOCK_MONOTONIC of the first and last D/F/G received (their span gives the rate).
    pub first_request_ns: u64,
    pub last_request_ns: u64,
    pub truth_errors: u64,
    /// Session-layer counters summed over all sessions.
    pub session: SessionStats,
}

impl fmt::Display for ExchangeSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let span_s = self.last_request_ns.saturating_sub(self.first_request_ns) as f64 / 1e9;
        let rate = |n: u64| {
            if span_s > 0.0 {
                n.saturating_sub(1) as f64 / span_s
            } else {
                0.0
            }
        };
        writeln!(
            f,
            "exchange: {:.2}s, {} connections ({} logons, {} logouts, {} protocol errors)",
            self.elapsed_s, self.connections, self.logons, self.logouts, self.protocol_errors
        )?;
        writeln!(
            f,
            "  requests: {} D ({:.0}/s between first and last request), {} F, {} G; {} messages in{}",
            self.orders,
            rate(self.orders),
            self.cancels,
            self.replaces,
            self.messages_in,
            if self.held > 0 {
                format!("; {} held by --stall", self.held)
            } else {
                String::new()
            }
        )?;
        writeln!(
            f,
            "  responses: {} acks, {} rejects, {} fills ({} orders filled), {} cancelled, {} replaced, {} cancel rejects",
            self.acks, self.rejects, self.fills, self.filled_orders, self.cancelled, self.replaced, self.cancel_rejects
        )?;
        if self.session_rejects + self.business_rejects + self.poss_resends_ignored > 0 {
            writeln!(
                f,
                "  forced: {} session rejects, {} business rejects; {} PossResends not taken again",
                self.session_rejects, self.business_rejects, self.poss_resends_ignored
            )?;
        }
        let s = &self.session;
        writeln!(
            f,
            "  session: {} gaps, {} resend requests sent / {} received, {} gap fills, {} heartbeats, {} test requests",
            s.gaps_detected,
            s.resend_requests_sent,
            s.resend_requests_received,
            s.gap_fills_sent,
            s.heartbeats_sent,
            s.test_requests_sent
        )?;
        write!(
            f,
            "  framing: {} bad checksums, {} bytes skipped; truth: {} records",
            self.bad_checksum, self.skipped_bytes, self.truth_records
        )
    }
}

struct Conn {
    stream: TcpStream,
    gen: u32,
    inbuf: InBuf,
    writable_armed: bool,
    dirty: bool,
    st: ConnState,
}

fn conn_token(idx: u32, gen: u32) -> u64 {
    (CONN_BASE + idx as u64) | ((gen as u64) << 32)
}

struct Exchange {
    epoll: Epoll,
    timerfd: TimerFd,
    listener: TcpListener,
    accepting: bool,
    conns: Vec<Option<Conn>>,
    gens: Vec<u32>,
    free: Vec<u32>,
    dirty: Vec<u32>,
    ctx: Ctx,
    framing: FramingStats,
    session_totals: SessionStats,
    order_capacity: usize,
    spin_ns: u64,
    session_truth: Option<std::path::PathBuf>,
}

/// Runs the exchange until `shutdown` is triggered or `--duration` elapses; `on_ready`
/// receives the bound address (useful with port 0).
pub fn run_exchange(
    args: &ExchangeArgs,
    shutdown: &Shutdown,
    on_ready: impl FnOnce(SocketAddr),
) -> anyhow::Result<ExchangeSummary> {
    let listener =
        TcpListener::bind(args.listen).with_context(|| format!("binding {}", args.listen))?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let truth = match &args.truth {
        Some(p) => Some(TruthWriter::create(p, EXCHANGE_HEADER)?),
        None => None,
    };
    let cfg = Cfg {
        ack_delay: args.ack_delay,
        fill_delay: args.fill_delay,
        partial_fills: args.partial_fills,
        no_fill: args.no_fill,
        max_live: args.max_live_orders,
        stalls: args.stall.clone(),
        symbol_ack_delay: args.symbol_ack_delay.clone(),
        order_reject_every: args.order_reject_every,
        cancel_reject_every: args.cancel_reject_every,
        business_reject_every: args.business_reject_every,
        session_reject_every: args.session_reject_every,
        test_request_delay: args.test_request_delay,
        replay_store: args.replay_store,
        resend_last: args.resend_last,
        comp_id: args.comp_id.clone(),
        session_truth: args.session_truth.is_some(),
    };
    let order_truth = match &args.order_truth {
        Some(p) => {
            let f =
                std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?;
            let mut w = std::io::BufWriter::new(f);
            writeln!(w, "{}", truth_records::ORDER_TRUTH_HEADER)?;
            Some(w)
        }
        None => None,
    };
    let stats = ExchangeSummary {
        listen: Some(addr),
        ..Default::default()
    };
    let epoll = Epoll::new()?;
    let timerfd = TimerFd::new()?;
    epoll.add(listener.as_raw_fd(), LISTENER, false)?;
    epoll.add(timerfd.raw_fd(), TIMER, false)?;
    sys::tighten_timer_slack();
    let mut ex = Exchange {
        epoll,
        timerfd,
        listener,
        accepting: true,
        conns: Vec::with_capacity(64),
        gens: Vec::with_capacity(64),
        free: Vec::new(),
        dirty: Vec::with_capacity(64),
        ctx: Ctx::new(cfg, args.seed, truth, stats),
        session_truth: args.session_truth.clone(),
        framing: FramingStats::default(),
        session_totals: SessionStats::default(),
        order_capacity: args.order_capacity.max(16),
        spin_ns: args.spin,
    };
    on_ready(addr);
    let start = monotonic_ns();
    let deadline = args
        .duration
        .map(|s| start + (s.max(0.0) * 1e9) as u64)
        .unwrap_or(u64::MAX);
    ex.ctx.order_truth = order_truth;
    ex.run(shutdown, deadline)?;
    let mut stats = ex.finish()?;
    stats.elapsed_s = (monotonic_ns() - start) as f64 / 1e9;
    Ok(stats)
}

impl Exchange {
    fn run(&mut self, shutdown: &Shutdown, deadline: u64) -> anyhow::Result<()> {
        let mut stop_by: Option<u64> = None;
        let mut next_tick = monotonic_ns() + TICK_NS;
        // Bounded by time: ends at the deadline/shutdown plus LOGOUT_GRACE_NS.
        loop {
            let now = monotonic_ns();
            self.ctx.clock.refresh();
            if stop_by.is_none() && (now >= deadline || shutdown.is_triggered()) {
                stop_by = Some(now + LOGOUT_GRACE_NS);
                self.begin_stop(now)?;
            }
            if let Some(by) = stop_by {
                if now >= by || self.conns.iter().all(Option::is_none) {
                    return Ok(());
                }
            }
            self.fire_timers(now);
            if now >= next_tick {
                next_tick = now + TICK_NS;
                self.tick(now);
            }
            self.flush_dirty()?;
            let timeout = self.sleep_ms(next_tick)?;
            let n = self.epoll.wait(timeout)?;
            for i in 0..n {
                let (token, events) = self.epoll.event(i);
                match token {
                    LISTENER => self.accept()?,
                    TIMER => self.timerfd.clear(),
                    _ => self.on_conn_event(token, events)?,
                }
            }
        }
    }

    /// How long epoll may sleep: 0 (spin) when a timer is due within the spin window,
    /// otherwise until the timerfd (armed spin_ns early) or the next housekeeping tick.
    fn sleep_ms(&mut self, next_tick: u64) -> io::Result<i32> {
        let now = monotonic_ns();
        let Some(Reverse(t)) = self.ctx.timers.peek() else {
            return Ok(sys::ms_until(now, next_tick, MAX_SLEEP_MS));
        };
        if t.due <= now + self.spin_ns {
            return Ok(0);
        }
        self.timerfd.arm_at(t.due - self.spin_ns)?;
        Ok(sys::ms_until(now, next_tick, MAX_SLEEP_MS))
    }

    fn fire_timers(&mut self, now: u64) {
        for _ in 0..MAX_TIMERS_PER_TURN {
            match self.ctx.timers.peek() {
                Some(Reverse(t)) if t.due <= now => {}
                _ => return,
            }
            let Some(Reverse(t)) = self.ctx.timers.pop() else {
                return;
            };
            let Some(Some(conn)) = self.conns.get_mut(t.conn as usize) else {
                continue;
            };
            if conn.gen != t.conn_gen {
                continue;
            }
            self.ctx.on_timer(t, &mut conn.st, now);
            if !conn.dirty && conn.st.out.pending() > 0 {
                conn.dirty = true;
                self.dirty.push(t.conn);
            }
        }
    }

    fn tick(&mut self, now: u64) {
        for (idx, slot) in self.conns.iter_mut().enumerate() {
            let Some(conn) = slot else { continue };
            let tx = Tx {
                enc: &mut self.ctx.enc,
                clock: &mut self.ctx.clock,
                out: conn.st.out.buf(),
            };
            if let Tick::Disconnect(_) = conn.st.session.on_tick(now, tx) {
                conn.st.closing = true;
            }
            if !conn.dirty && (conn.st.out.pending() > 0 || conn.st.closing) {
                conn.dirty = true;
                self.dirty.push(idx as u32);
            }
        }
    }

    fn begin_stop(&mut self, now: u64) -> anyhow::Result<()> {
        if self.accepting {
            self.accepting = false;
            self.epoll.delete(self.listener.as_raw_fd())?;
        }
        for (idx, slot) in self.conns.iter_mut().enumerate() {
            let Some(conn) = slot else { continue };
            if conn.st.session.state() == State::Active {
                let tx = Tx {
                    enc: &mut self.ctx.enc,
                    clock: &mut self.ctx.clock,
                    out: conn.st.out.buf(),
                };
                conn.st.session.logout(tx, now, "exchange shutting down");
            } else {
                conn.st.closing = true;
            }
            if !conn.dirty {
                conn.dirty = true;
                self.dirty.push(idx as u32);
            }
        }
        Ok(())
    }

    fn accept(&mut self) -> anyhow::Result<()> {
        for _ in 0..MAX_ACCEPTS_PER_EVENT {
            let (stream, peer) = match self.listener.accept() {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // Transient accept failures (EMFILE, ECONNABORTED) must not kill the exchange.
                Err(_) => return Ok(()),
            };
            stream.set_nonblocking(true)?;
            stream.set_nodelay(true)?;
            let idx = match self.free.pop() {
                Some(i) => i,
                None => {
                    self.conns.push(None);
                    self.gens.push(0);
                    (self.conns.len() - 1) as u32
                }
            };
            let gen = self.gens[idx as usize];
            self.epoll
                .add(stream.as_raw_fd(), conn_token(idx, gen), false)?;
            let st = ConnState::new(
                peer.to_string(),
                self.ctx.new_session(),
                self.order_capacity,
            );
            self.conns[idx as usize] = Some(Conn {
                stream,
                gen,
                inbuf: InBuf::with_capacity(INBUF_BYTES),
                writable_armed: false,
                dirty: false,
                st,
            });
            self.ctx.stats.connections += 1;
        }
        Ok(())
    }

    fn on_conn_event(&mut self, token: u64, events: u32) -> anyhow::Result<()> {
        let idx = ((token & 0xffff_ffff) - CONN_BASE) as u32;
        let gen = (token >> 32) as u32;
        let Some(Some(conn)) = self.conns.get_mut(idx as usize) else {
            return Ok(());
        };
        if conn.gen != gen {
            return Ok(());
        }
        let mut close = false;
        if sys::is_readable(events) || sys::is_error_or_hup(events) {
            for _ in 0..MAX_READS_PER_EVENT {
                // read_call_ns: just before the read() (the truth's bracket of it).
                self.ctx.read_call_ns = monotonic_ns();
                match conn.inbuf.read_from(&mut conn.stream) {
                    Ok(ReadOutcome::Data) => {
                        // request_ns: right after the read() that returned the last byte.
                        let ts = monotonic_ns();
                        let ctx = &mut self.ctx;
                        let st = &mut conn.st;
                        conn.inbuf.drain(&mut self.framing, |msg| {
                            ctx.on_message((idx, gen), st, msg, ts)
                        });
                        if conn.inbuf.free_tail() > 0 {
                            break; // The kernel had no more for us.
                        }
                    }
                    Ok(ReadOutcome::WouldBlock) => break,
                    Ok(ReadOutcome::Closed) | Err(_) => {
                        close = true;
                        break;
                    }
                }
            }
        }
        if sys::is_writable(events) && !conn.dirty {
            conn.dirty = true;
            self.dirty.push(idx);
        }
        if close {
            self.close_conn(idx);
        } else if !conn.dirty && (conn.st.out.pending() > 0 || conn.st.closing) {
            conn.dirty = true;
            self.dirty.push(idx);
        }
        Ok(())
    }

    fn flush_dirty(&mut self) -> anyhow::Result<()> {
        // Index loop: close_conn needs &mut self while we walk the list.
        let mut i = 0;
        while i < self.dirty.len() {
            let idx = self.dirty[i];
            i += 1;
            let Some(Some(conn)) = self.conns.get_mut(idx as usize) else {
                continue;
            };
            conn.dirty = false;
            let ctx = &mut self.ctx;
            let ConnState {
                out,
                book,
                peer,
                client_comp_id,
                ..
            } = &mut conn.st;
            let id = (idx, conn.gen);
            let result = out.flush(&mut conn.stream, |tag, ts, done| {
                ctx.on_sent(id, book, peer, client_comp_id, Written { tag, ts, done })
            });
            match result {
                Ok(Flushed::Done) => {
                    if conn.st.closing {
                        self.close_conn(idx);
                        continue;
                    }
                    let (fd, token) = (conn.stream.as_raw_fd(), conn_token(idx, conn.gen));
                    self.epoll
                        .want_writable(fd, token, &mut conn.writable_armed, false)?;
                }
                Ok(Flushed::Blocked) => {
                    let (fd, token) = (conn.stream.as_raw_fd(), conn_token(idx, conn.gen));
                    self.epoll
                        .want_writable(fd, token, &mut conn.writable_armed, true)?;
                }
                Err(_) => self.close_conn(idx),
            }
        }
        self.dirty.clear();
        Ok(())
    }

    fn close_conn(&mut self, idx: u32) {
        let Some(mut conn) = self.conns.get_mut(idx as usize).and_then(Option::take) else {
            return;
        };
        // Deregistering can only fail if the fd is already gone; closing follows anyway.
        let _ = self.epoll.delete(conn.stream.as_raw_fd());
        self.ctx.close(&mut conn.st);
        if conn.st.session.target_comp_id().is_empty() {
            add_session_stats(&mut self.session_totals, &conn.st.session.stats);
        } else {
            // Counted at the end (a reconnect continues it).
            self.ctx.park(&mut conn.st);
        }
        self.gens[idx as usize] = self.gens[idx as usize].wrapping_add(1);
        self.free.push(idx);
    }

    fn finish(mut self) -> anyhow::Result<ExchangeSummary> {
        for idx in 0..self.conns.len() as u32 {
            if let Some(Some(conn)) = self.conns.get_mut(idx as usize) {
                let ConnState {
                    out,
                    book,
                    peer,
                    client_comp_id,
                    ..
                } = &mut conn.st;
                let ctx = &mut self.ctx;
                // Best effort: whatever is still queued (e.g. our Logout) goes out now.
                let id = (idx, conn.gen);
                let _ = out.flush(&mut conn.stream, |tag, ts, done| {
                    ctx.on_sent(id, book, peer, client_comp_id, Written { tag, ts, done })
                });
            }
            self.close_conn(idx);
        }
        if let Some(w) = &mut self.ctx.truth {
            w.flush().context("writing the truth file")?;
            self.ctx.stats.truth_records = w.records;
        }
        if let Some(w) = &mut self.ctx.order_truth {
            w.flush().context("writing the order truth file")?;
        }
        let mut parked: Vec<_> = self.ctx.parked.iter().collect();
        parked.sort_by(|a, b| a.0.cmp(b.0));
        for (_, session) in &parked {
            add_session_stats(&mut self.session_totals, &session.stats);
        }
        if let Some(path) = &self.session_truth {
            let records: Vec<_> = parked
                .iter()
                .map(|((client, server), session)| SessionTruthRecord {
                    client_comp_id: String::from_utf8_lossy(client).into_owned(),
                    server_comp_id: String::from_utf8_lossy(server).into_owned(),
                    side: "exchange",
                    truth: &session.wire,
                })
                .collect();
            write_session_truth(path, &records)?;
        }
        let mut stats = self.ctx.stats.clone();
        stats.bad_checksum = self.framing.bad_checksum;
        stats.skipped_bytes = self.framing.skipped_bytes;
        stats.session = self.session_totals;
        Ok(stats)
    }
}

pub(crate) fn add_session_stats(total: &mut SessionStats, s: &SessionStats) {
    total.gaps_detected += s.gaps_detected;
    total.resend_requests_sent += s.resend_requests_sent;
    total.resend_requests_received += s.resend_requests_received;
    total.gap_fills_sent += s.gap_fills_sent;
    total.sequence_resets_received += s.sequence_resets_received;
    total.heartbeats_sent += s.heartbeats_sent;
    total.test_requests_sent += s.test_requests_sent;
    total.test_requests_answered += s.test_requests_answered;
    total.rejects_received += s.rejects_received;
    total.rejects_sent += s.rejects_sent;
}
