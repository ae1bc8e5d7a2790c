//! The router's epoll loop: client connections accepted on `--listen`, the one venue
//! connection, the timer queue, housekeeping ticks and the shutdown.

use std::cmp::Reverse;
use std::io;
use std::net::TcpListener;
use std::os::fd::AsRawFd;

use fixscope_core::clock::{monotonic_ns, realtime_ns};
use fixscope_core::shutdown::Shutdown;

use super::book::Ref;
use super::capture::{Capture, Tcp};
use super::engine::Engine;
use super::link::Link;
use crate::inbuf::{FramingStats, ReadOutcome};
use crate::outbuf::Flushed;
use crate::session::{Session, State, Tick, Tx};
use crate::sys::{self, Epoll, TimerFd};

pub const LISTENER: u64 = 0;
pub const TIMER: u64 = 1;
pub const VENUE: u64 = 2;
const CONN_BASE: u64 = 3;
const MAX_READS_PER_EVENT: usize = 8;
const MAX_ACCEPTS_PER_EVENT: usize = 64;
const MAX_TIMERS_PER_TURN: usize = 65_536;
const MAX_SLEEP_MS: i32 = 50;
const TICK_NS: u64 = 100_000_000;
/// How long a shutdown waits for the peers to answer our Logouts.
const LOGOUT_GRACE_NS: u64 = 2_000_000_000;
pub const INBUF_BYTES: usize = 256 * 1024;

fn conn_token(idx: u32, gen: u32) -> u64 {
    (CONN_BASE + idx as u64) | ((gen as u64) << 32)
}

pub struct Router {
    pub epoll: Epoll,
    pub timerfd: TimerFd,
    pub listener: TcpListener,
    pub accepting: bool,
    pub clients: Vec<Option<Link>>,
    pub gens: Vec<u32>,
    pub free: Vec<u32>,
    pub dirty: Vec<u32>,
    pub venue: Link,
    pub venue_open: bool,
    pub cap: Option<Capture>,
    pub engine: Engine,
    pub framing: FramingStats,
    pub spin_ns: u64,
}

impl Router {
    /// Runs until the venue session is logged on (or `deadline_ns` passes: an error).
    pub fn venue_logon(&mut self, deadline_ns: u64) -> anyhow::Result<()> {
        let now = monotonic_ns();
        self.engine.clock.refresh();
        let tx = Tx {
            enc: &mut self.engine.enc,
            clock: &mut self.engine.clock,
            out: self.venue.send.out(),
        };
        self.venue.session.logon(tx, now);
        while self.venue.session.state() != State::Active {
            anyhow::ensure!(
                monotonic_ns() < deadline_ns && self.venue_open,
                "the venue did not answer our Logon"
            );
            self.flush_venue()?;
            let n = self.epoll.wait(10)?;
            for i in 0..n {
                if self.epoll.event(i).0 == VENUE {
                    self.read_venue()?;
                }
            }
        }
        Ok(())
    }

    pub fn run(&mut self, shutdown: &Shutdown, deadline: u64) -> anyhow::Result<()> {
        let mut stop_by: Option<u64> = None;
        let mut next_tick = monotonic_ns() + TICK_NS;
        // Bounded by time: ends at the deadline/shutdown plus LOGOUT_GRACE_NS.
        loop {
            let now = monotonic_ns();
            self.engine.clock.refresh();
            let venue_gone = !self.venue_open;
            if stop_by.is_none() && (now >= deadline || shutdown.is_triggered() || venue_gone) {
                stop_by = Some(now + LOGOUT_GRACE_NS);
                self.begin_stop(now)?;
            }
            if let Some(by) = stop_by {
                let clients_gone = self.clients.iter().all(Option::is_none);
                if now >= by || (clients_gone && !self.venue_open) {
                    return Ok(());
                }
            }
            self.fire_timers(now);
            if now >= next_tick {
                next_tick = now + TICK_NS;
                self.tick(now);
            }
            self.flush_dirty()?;
            self.flush_venue()?;
            let timeout = self.sleep_ms(next_tick)?;
            let n = self.epoll.wait(timeout)?;
            for i in 0..n {
                let (token, events) = self.epoll.event(i);
                match token {
                    LISTENER => self.accept()?,
                    TIMER => self.timerfd.clear(),
                    VENUE => {
                        if sys::is_readable(events) || sys::is_error_or_hup(events) {
                            self.read_venue()?;
                        }
                    }
                    _ => self.on_conn_event(token, events)?,
                }
            }
        }
    }

    fn sleep_ms(&mut self, next_tick: u64) -> io::Result<i32> {
        let now = monotonic_ns();
        if self.venue.send.pending() > 0 && !self.venue.writable_armed {
            return Ok(0);
        }
        let Some(Reverse(t)) = self.engine.timers.peek() else {
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
            match self.engine.timers.peek() {
                Some(Reverse(t)) if t.due <= now => {}
                _ => return,
            }
            let Some(Reverse(t)) = self.engine.timers.pop() else {
                return;
            };
            if let Some(idx) = self
                .engine
                .on_timer(t, &mut self.clients, &mut self.venue, now)
            {
                self.mark_dirty(idx);
            }
        }
    }

    fn mark_dirty(&mut self, idx: u32) {
        if let Some(Some(l)) = self.clients.get_mut(idx as usize) {
            if !l.dirty {
                l.dirty = true;
                self.dirty.push(idx);
            }
        }
    }

    fn tick(&mut self, now: u64) {
        let links = self
            .clients
            .iter_mut()
            .flatten()
            .chain(std::iter::once(&mut self.venue));
        for link in links {
            let tx = Tx {
                enc: &mut self.engine.enc,
                clock: &mut self.engine.clock,
                out: link.send.out(),
            };
            if let Tick::Disconnect(_) = link.session.on_tick(now, tx) {
                link.closing = true;
            }
        }
        for idx in 0..self.clients.len() as u32 {
            self.mark_dirty(idx);
        }
    }

    fn begin_stop(&mut self, now: u64) -> anyhow::Result<()> {
        if self.accepting {
            self.accepting = false;
            self.epoll.delete(self.listener.as_raw_fd())?;
        }
        let links = self
            .clients
            .iter_mut()
            .flatten()
            .chain(std::iter::once(&mut self.venue));
        for link in links {
            if link.session.state() == State::Active {
                let tx = Tx {
                    enc: &mut self.engine.enc,
                    clock: &mut self.engine.clock,
                    out: link.send.out(),
                };
                link.session.logout(tx, now, "router shutting down");
            } else {
                link.closing = true;
            }
        }
        for idx in 0..self.clients.len() as u32 {
            self.mark_dirty(idx);
        }
        Ok(())
    }

    fn accept(&mut self) -> anyhow::Result<()> {
        for _ in 0..MAX_ACCEPTS_PER_EVENT {
            let (stream, peer) = match self.listener.accept() {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // Transient accept failures (EMFILE, ECONNABORTED) must not stop the router.
                Err(_) => return Ok(()),
            };
            stream.set_nonblocking(true)?;
            stream.set_nodelay(true)?;
            let idx = match self.free.pop() {
                Some(i) => i,
                None => {
                    self.clients.push(None);
                    self.gens.push(0);
                    (self.clients.len() - 1) as u32
                }
            };
            let gen = self.gens[idx as usize];
            self.epoll
                .add(stream.as_raw_fd(), conn_token(idx, gen), false)?;
            let local = stream.local_addr()?;
            let mut link = Link::new(stream, gen, Session::acceptor(""), INBUF_BYTES);
            if let Some(cap) = &mut self.cap {
                let mut tcp = Tcp::new(peer, local, false);
                cap.open(&mut tcp, realtime_ns());
                link.tcp = Some(tcp);
            }
            self.clients[idx as usize] = Some(link);
            self.engine.stats.connections += 1;
        }
        Ok(())
    }

    fn on_conn_event(&mut self, token: u64, events: u32) -> anyhow::Result<()> {
        let idx = ((token & 0xffff_ffff) - CONN_BASE) as u32;
        let gen = (token >> 32) as u32;
        let Some(Some(link)) = self.clients.get_mut(idx as usize) else {
            return Ok(());
        };
        if link.gen != gen {
            return Ok(());
        }
        let conn = Ref { idx, gen };
        let mut close = false;
        if sys::is_readable(events) || sys::is_error_or_hup(events) {
            for _ in 0..MAX_READS_PER_EVENT {
                match link.read(&mut self.cap) {
                    Ok((ReadOutcome::Data, ts)) => {
                        let now = monotonic_ns();
                        let engine = &mut self.engine;
                        let Link {
                            inbuf,
                            session,
                            send,
                            closing,
                            ..
                        } = link;
                        let mut parts = super::engine::LinkParts {
                            session,
                            send,
                            closing,
                        };
                        inbuf.drain(&mut self.framing, |msg| {
                            engine.on_client_msg(conn, &mut parts, msg, ts, now)
                        });
                        if link.inbuf.free_tail() > 0 {
                            break; // The kernel had no more for us.
                        }
                    }
                    Ok((ReadOutcome::WouldBlock, _)) => break,
                    Ok((ReadOutcome::Closed, _)) | Err(_) => {
                        close = true;
                        break;
                    }
                }
            }
        }
        if close {
            self.close_client(idx);
        } else {
            self.mark_dirty(idx);
        }
        Ok(())
    }

    fn read_venue(&mut self) -> anyhow::Result<()> {
        for _ in 0..MAX_READS_PER_EVENT {
            match self.venue.read(&mut self.cap) {
                Ok((ReadOutcome::Data, ts)) => {
                    let now = monotonic_ns();
                    let engine = &mut self.engine;
                    let Link {
                        inbuf,
                        session,
                        send,
                        closing,
                        ..
                    } = &mut self.venue;
                    let mut parts = super::engine::LinkParts {
                        session,
                        send,
                        closing,
                    };
                    inbuf.drain(&mut self.framing, |msg| {
                        engine.on_venue_msg(&mut parts, msg, ts, now)
                    });
                    if self.venue.inbuf.free_tail() > 0 {
                        break;
                    }
                }
                Ok((ReadOutcome::WouldBlock, _)) => break,
                Ok((ReadOutcome::Closed, _)) | Err(_) => {
                    self.close_venue();
                    break;
                }
            }
        }
        Ok(())
    }

    fn flush_venue(&mut self) -> anyhow::Result<()> {
        if !self.venue_open {
            return Ok(());
        }
        let engine = &mut self.engine;
        let result = self
            .venue
            .flush(&mut self.cap, |tag, ts| engine.on_venue_sent(tag, ts));
        match result {
            Ok(Flushed::Done) => {
                if self.venue.closing {
                    self.close_venue();
                } else {
                    let fd = self.venue.stream.as_raw_fd();
                    self.epoll
                        .want_writable(fd, VENUE, &mut self.venue.writable_armed, false)?;
                }
            }
            Ok(Flushed::Blocked) => {
                let fd = self.venue.stream.as_raw_fd();
                self.epoll
                    .want_writable(fd, VENUE, &mut self.venue.writable_armed, true)?;
            }
            Err(_) => self.close_venue(),
        }
        Ok(())
    }

    fn flush_dirty(&mut self) -> anyhow::Result<()> {
        let mut i = 0;
        while i < self.dirty.len() {
            let idx = self.dirty[i];
            i += 1;
            let Some(Some(link)) = self.clients.get_mut(idx as usize) else {
                continue;
            };
            link.dirty = false;
            let engine = &mut self.engine;
            let result = link.flush(&mut self.cap, |tag, ts| engine.on_client_sent(tag, ts));
            match result {
                Ok(Flushed::Done) => {
                    if link.closing {
                        self.close_client(idx);
                        continue;
                    }
                    let (fd, token) = (link.stream.as_raw_fd(), conn_token(idx, link.gen));
                    self.epoll
                        .want_writable(fd, token, &mut link.writable_armed, false)?;
                }
                Ok(Flushed::Blocked) => {
                    let (fd, token) = (link.stream.as_raw_fd(), conn_token(idx, link.gen));
                    self.epoll
                        .want_writable(fd, token, &mut link.writable_armed, true)?;
                }
                Err(_) => self.close_client(idx),
            }
        }
        self.dirty.clear();
        Ok(())
    }

    fn close_client(&mut self, idx: u32) {
        let Some(mut link) = self.clients.get_mut(idx as usize).and_then(Option::take) else {
            return;
        };
        // Deregistering can only fail if the fd is already gone; closing follows anyway.
        let _ = self.epoll.delete(link.stream.as_raw_fd());
        if let (Some(cap), Some(tcp)) = (&mut self.cap, &mut link.tcp) {
            cap.close(tcp, realtime_ns());
        }
        self.gens[idx as usize] = self.gens[idx as usize].wrapping_add(1);
        self.free.push(idx);
    }

    fn close_venue(&mut self) {
        if !self.venue_open {
            return;
        }
        self.venue_open = false;
        let _ = self.epoll.delete(self.venue.stream.as_raw_fd());
        let _ = self.venue.stream.shutdown(std::net::Shutdown::Both);
        if let (Some(cap), Some(tcp)) = (&mut self.cap, &mut self.venue.tcp) {
            cap.close(tcp, realtime_ns());
        }
    }

    /// End of the run: what is still queued goes out (best effort), the connections close.
    pub fn finish(&mut self) {
        for idx in 0..self.clients.len() as u32 {
            if let Some(Some(link)) = self.clients.get_mut(idx as usize) {
                let engine = &mut self.engine;
                let _ = link.flush(&mut self.cap, |tag, ts| engine.on_client_sent(tag, ts));
            }
            self.close_client(idx);
        }
        if self.venue_open {
            let engine = &mut self.engine;
            let _ = self
                .venue
                .flush(&mut self.cap, |tag, ts| engine.on_venue_sent(tag, ts));
            self.close_venue();
        }
    }
}
