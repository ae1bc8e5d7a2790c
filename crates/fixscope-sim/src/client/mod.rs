//! `fixscope sim client`: a FIX initiator that sends orders open-loop (each order at a
//! pre-computed time, latency measured from that time too, so a slow exchange cannot hide
//! latency) or closed-loop (a window of outstanding orders per session).

mod report;

use std::io::{self, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::Duration;

use anyhow::{bail, Context};
use fixscope_core::fix::encode::{push_uint, FixEncoder};
use fixscope_core::fix::message::Fields;
use fixscope_core::fix::tag;
use memchr::memmem;

pub use report::{ClientReport, StageStats};

use crate::args::ClientArgs;
use crate::exchange::add_session_stats;
use crate::inbuf::{FramingStats, InBuf, ReadOutcome};
use crate::outbuf::{Flushed, OutBuf};
use crate::rng::Rng;
use crate::sending_time::UtcClock;
use crate::session::{Inbound, Session, SessionStats, State, Tick, Tx};
use crate::sys::{self, Epoll, TimerFd};
use crate::truth::{TruthWriter, CLIENT_HEADER};
use fixscope_core::clock::monotonic_ns;
use fixscope_core::shutdown::Shutdown;
use report::Latencies;

const TIMER: u64 = u64::MAX;
const STAGE_FIRST: usize = 0;
const STAGE_ACK: usize = 1;
const STAGE_FILL: usize = 2;
/// Orders encoded per loop turn before the loop reads responses again.
const MAX_SENDS_PER_TURN: usize = 1024;
const MAX_READS_PER_EVENT: usize = 8;
const MAX_SLEEP_MS: i32 = 50;
const TICK_NS: u64 = 100_000_000;
const LOGON_TIMEOUT: Duration = Duration::from_secs(5);
const LOGOUT_GRACE_NS: u64 = 2_000_000_000;
/// Largest per-session tracking ring (a power of two).
const MAX_RING: u64 = 1 << 20;
/// Recent live orders remembered per session as F/G targets.
const RECENT: usize = 32;
const SYMBOL: &[u8] = b"FXSC";
const PRICE: &[u8] = b"101.25";
const QTY: u64 = 100;

/// One tracked request.
#[derive(Clone, Copy, Debug, Default)]
struct Order {
    /// Per-session request number (>= 1); 0 = empty.
    num: u64,
    kind: u8,
    sched_ns: u64,
    send_ns: u64,
    first_ns: u64,
    ack_ns: u64,
    fill_ns: u64,
    done: bool,
    /// Already the target of an F/G.
    targeted: bool,
}

struct Sess {
    stream: TcpStream,
    /// Our local ip:port: the "session" the exchange's truth file names.
    local: String,
    session: Session,
    inbuf: InBuf,
    out: OutBuf,
    writable_armed: bool,
    prefix: Vec<u8>,
    /// Digits of the zero-padded number after the prefix.
    width: usize,
    next_num: u64,
    ring: Vec<Order>,
    mask: u64,
    outstanding: u64,
    recent: [u64; RECENT],
    recent_pos: usize,
    /// Close once the output is flushed (Logout exchanged or protocol error).
    closing: bool,
    closed: bool,
}

/// Stops all I/O on a session (the socket closes when the client is dropped).
fn close(epoll: &Epoll, s: &mut Sess) {
    if !s.closed {
        s.closed = true;
        // Deregistering only fails if the fd is already gone.
        let _ = epoll.delete(s.stream.as_raw_fd());
        let _ = s.stream.shutdown(std::net::Shutdown::Both);
    }
}

#[derive(Default)]
struct Counters {
    sent: [u64; 3],
    acks: u64,
    fills: u64,
    filled_orders: u64,
    rejects: u64,
    cancel_rejects: u64,
    completed: u64,
    unmatched: u64,
    overrun: u64,
    max_send_lag_ns: u64,
    first_send_ns: u64,
    last_send_ns: u64,
}

/// Everything shared by the sessions of one client.
struct Ctx {
    enc: FixEncoder,
    clock: UtcClock,
    rng: Rng,
    lat: Latencies,
    c: Counters,
    truth: Option<TruthWriter>,
    pad: Vec<u8>,
    scratch: Vec<u8>,
    id: Vec<u8>,
    split: bool,
    no_fill: bool,
    mix: [u32; 3],
}

fn kind_index(kind: u8) -> usize {
    match kind {
        b'D' => 0,
        b'F' => 1,
        _ => 2,
    }
}

/// Appends `prefix` + `num` zero-padded to `width` digits.
fn push_clordid(out: &mut Vec<u8>, prefix: &[u8], width: usize, num: u64) {
    out.extend_from_slice(prefix);
    let digits = num.checked_ilog10().unwrap_or(0) as usize + 1;
    out.resize(out.len() + width.saturating_sub(digits), b'0');
    push_uint(out, num);
}

fn parse_clordid(prefix: &[u8], id: &[u8]) -> Option<u64> {
    let digits = id.strip_prefix(prefix)?;
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    // Long ClOrdIDs are mostly zero padding.
    let first = digits
        .iter()
        .position(|&b| b != b'0')
        .unwrap_or(digits.len());
    let digits = &digits[first..];
    if digits.len() > 19 {
        return None;
    }
    Some(digits.iter().fold(0u64, |n, &b| n * 10 + (b - b'0') as u64))
}

/// Records that request `num` was written at `ts`.
fn mark_sent(c: &mut Counters, ring: &mut [Order], mask: u64, num: u64, ts: u64) {
    let o = &mut ring[(num & mask) as usize];
    if o.num == num && o.send_ns == 0 {
        o.send_ns = ts;
        c.max_send_lag_ns = c.max_send_lag_ns.max(ts.saturating_sub(o.sched_ns));
        if c.first_send_ns == 0 {
            c.first_send_ns = ts;
        }
        c.last_send_ns = ts;
    }
}

impl Sess {
    fn slot(&mut self, num: u64) -> Option<&mut Order> {
        let o = &mut self.ring[(num & self.mask) as usize];
        (o.num == num && num != 0).then_some(o)
    }

    /// A recent live (acked, unfilled, untargeted) order to cancel or replace.
    fn pick_target(&mut self) -> Option<u64> {
        for back in 1..=RECENT {
            let num = self.recent[(self.recent_pos + RECENT - back) % RECENT];
            if num == 0 {
                return None;
            }
            if let Some(o) = self.slot(num) {
                if !o.done && !o.targeted && o.ack_ns != 0 {
                    o.targeted = true;
                    return Some(num);
                }
            }
        }
        None
    }

    fn remember_live(&mut self, num: u64) {
        self.recent[self.recent_pos] = num;
        self.recent_pos = (self.recent_pos + 1) % RECENT;
    }
}

impl Ctx {
    /// Marks a request complete and writes its client truth record.
    fn complete(&mut self, s: &mut Sess, num: u64) {
        let Some(o) = s.slot(num) else { return };
        if o.done {
            return;
        }
        o.done = true;
        let o = *o;
        s.outstanding = s.outstanding.saturating_sub(1);
        self.c.completed += 1;
        self.write_truth(s, &o);
    }

    fn write_truth(&mut self, s: &Sess, o: &Order) {
        let Some(w) = &mut self.truth else { return };
        self.id.clear();
        push_clordid(&mut self.id, &s.prefix, s.width, o.num);
        let nz = |v: u64| (v != 0).then_some(v);
        let nums = [
            Some(o.sched_ns),
            nz(o.send_ns),
            nz(o.first_ns),
            nz(o.ack_ns),
            nz(o.fill_ns),
        ];
        // A failing truth file must not stop the load; the error shows up at flush.
        let _ = w.write([&self.id, s.local.as_bytes(), &[o.kind]], &nums);
    }

    /// Encodes (and in split mode sends) one request scheduled at `sched_ns`.
    fn send_order(&mut self, s: &mut Sess, sched_ns: u64) -> io::Result<()> {
        let roll = self
            .rng
            .below(100 * (self.mix[0] + self.mix[1] + self.mix[2]) as u64)
            / 100;
        let mut kind = if roll < self.mix[0] as u64 {
            b'D'
        } else if roll < (self.mix[0] + self.mix[1]) as u64 {
            b'F'
        } else {
            b'G'
        };
        let target = if kind == b'D' { None } else { s.pick_target() };
        if target.is_none() {
            kind = b'D';
        }
        let num = s.next_num;
        s.next_num += 1;
        let slot_idx = (num & s.mask) as usize;
        let old = s.ring[slot_idx];
        if old.num != 0 && !old.done {
            // The ring wrapped over a request still waiting: count it lost.
            self.c.overrun += 1;
            s.outstanding = s.outstanding.saturating_sub(1);
            self.write_truth(s, &old);
        }
        s.ring[slot_idx] = Order {
            num,
            kind,
            sched_ns,
            ..Order::default()
        };
        s.outstanding += 1;
        self.c.sent[kind_index(kind)] += 1;

        self.id.clear();
        push_clordid(&mut self.id, &s.prefix, s.width, num);
        let mt: &[u8] = match kind {
            b'D' => b"D",
            b'F' => b"F",
            _ => b"G",
        };
        let enc = s.session.header(&mut self.enc, &mut self.clock, mt);
        if let Some(t) = target {
            self.scratch.clear();
            push_clordid(&mut self.scratch, &s.prefix, s.width, t);
            enc.field(tag::ORIG_CL_ORD_ID, &self.scratch);
        }
        enc.field(tag::CL_ORD_ID, &self.id);
        if kind != b'F' {
            enc.field(21, b"1");
        }
        enc.field(55, SYMBOL)
            .field(54, if num.is_multiple_of(2) { b"1" } else { b"2" })
            .field(60, self.clock.cached());
        match kind {
            b'F' => {
                enc.field_uint(38, QTY);
            }
            b'G' => {
                enc.field_uint(38, QTY * 2).field(40, b"2").field(44, PRICE);
            }
            _ => {
                enc.field_uint(38, QTY).field(40, b"2").field(44, PRICE);
            }
        }
        if !self.pad.is_empty() {
            enc.field(58, &self.pad);
        }
        let now = monotonic_ns();
        if !self.split || s.out.pending() > 0 {
            s.session.finish(&mut self.enc, s.out.buf(), now);
            s.out.stamp(num);
            return Ok(());
        }
        // Split mode: two write() calls, cut in the middle of the 11= value.
        self.scratch.clear();
        s.session.finish(&mut self.enc, &mut self.scratch, now);
        let value = memmem::find(&self.scratch, b"\x0111=").map_or(0, |p| p + 4);
        let value_len = memchr::memchr(0x01, &self.scratch[value..]).unwrap_or(0);
        let cut = (value + value_len / 2).max(1);
        let ts = monotonic_ns();
        mark_sent(&mut self.c, &mut s.ring, s.mask, num, ts);
        let mut written = 0;
        for part in [&self.scratch[..cut], &self.scratch[cut..]] {
            if written < cut && part.len() + written > cut {
                break; // first part incomplete: the rest goes through the buffer
            }
            match s.stream.write(part) {
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => break,
                Err(e) => return Err(e),
            }
            if written < cut {
                break;
            }
        }
        s.out.buf().extend_from_slice(&self.scratch[written..]);
        Ok(())
    }

    /// A framed message from the exchange arrived at `now`.
    fn on_message(&mut self, s: &mut Sess, msg: &[u8], now: u64) {
        let tx = Tx {
            enc: &mut self.enc,
            clock: &mut self.clock,
            out: s.out.buf(),
        };
        match s.session.on_message(msg, now, tx) {
            Inbound::App(t) => self.on_response(s, msg, t, now),
            Inbound::Handled | Inbound::LoggedOn => {}
            Inbound::LoggedOut | Inbound::Disconnect(_) => s.closing = true,
        }
    }

    /// An application message from the exchange arrived at `now`.
    fn on_response(&mut self, s: &mut Sess, msg: &[u8], msg_type: &[u8], now: u64) {
        let (mut clordid, mut orig, mut exec_type, mut status): (&[u8], &[u8], &[u8], &[u8]) =
            (b"", b"", b"", b"");
        for (t, v) in Fields::new(msg) {
            match t {
                tag::CL_ORD_ID => clordid = v,
                tag::ORIG_CL_ORD_ID => orig = v,
                tag::EXEC_TYPE => exec_type = v,
                tag::ORD_STATUS => status = v,
                _ => {}
            }
            // Our exchange puts 11 and 41 before 150/39 (35=9 has no 150): stop early.
            if !clordid.is_empty()
                && !status.is_empty()
                && (!exec_type.is_empty() || msg_type == b"9")
            {
                break;
            }
        }
        let num = parse_clordid(&s.prefix, clordid).unwrap_or(0);
        let orig_num = parse_clordid(&s.prefix, orig);
        let Some(o) = s.slot(num) else {
            self.c.unmatched += 1;
            return;
        };
        let sched = o.sched_ns.min(now);
        let send = if o.send_ns == 0 {
            now
        } else {
            o.send_ns.min(now)
        };
        if o.first_ns == 0 {
            o.first_ns = now;
            self.lat.record(STAGE_FIRST, now - sched, now - send);
        }
        if msg_type == b"9" {
            self.c.cancel_rejects += 1;
            self.complete(s, num);
            return;
        }
        if msg_type != b"8" {
            return;
        }
        let is_ack = matches!(exec_type, b"0" | b"4" | b"5");
        let is_fill = matches!(exec_type, b"F" | b"1" | b"2");
        if is_ack && o.ack_ns == 0 {
            o.ack_ns = now;
            self.c.acks += 1;
            self.lat.record(STAGE_ACK, now - sched, now - send);
        }
        if is_fill && o.fill_ns == 0 {
            o.fill_ns = now;
            self.c.fills += 1;
            self.lat.record(STAGE_FILL, now - sched, now - send);
        }
        match exec_type {
            b"0" | b"5" => {
                if let (b"5", Some(on)) = (exec_type, orig_num) {
                    self.complete(s, on);
                }
                if self.no_fill {
                    self.complete(s, num);
                } else {
                    s.remember_live(num);
                }
            }
            b"4" => {
                if let Some(on) = orig_num {
                    self.complete(s, on);
                }
                self.complete(s, num);
            }
            b"8" => {
                self.c.rejects += 1;
                self.complete(s, num);
            }
            _ if is_fill => {
                if status == b"2" {
                    self.c.filled_orders += 1;
                    self.complete(s, num);
                }
            }
            _ => {
                if matches!(status, b"2" | b"4" | b"8" | b"C") {
                    self.complete(s, num);
                }
            }
        }
    }
}

enum Phase {
    Sending,
    Draining { until: u64 },
    LoggingOut { until: u64 },
}

struct Client {
    epoll: Epoll,
    timerfd: TimerFd,
    sessions: Vec<Sess>,
    ctx: Ctx,
    framing: FramingStats,
    spin_ns: u64,
}

/// Runs the load client to completion (count/duration reached and responses drained, or
/// `shutdown` triggered) and returns its report.
pub fn run_client(args: &ClientArgs, shutdown: &Shutdown) -> anyhow::Result<ClientReport> {
    if args.sessions == 0 {
        bail!("--sessions must be at least 1");
    }
    if let Some(r) = args.rate {
        if !(r.is_finite() && r > 0.0) {
            bail!("--rate must be > 0");
        }
    }
    let window = match (args.rate, args.window) {
        (None, Some(0)) => bail!("--window must be at least 1"),
        (None, w) => Some(w.unwrap_or(1)),
        (Some(_), _) => None,
    };
    let count = args.count.unwrap_or(u64::MAX);
    let duration_ns = match (args.duration, args.count) {
        (Some(d), _) => (d.max(0.0) * 1e9) as u64,
        (None, Some(_)) => u64::MAX,
        (None, None) => 10_000_000_000,
    };
    // Tracking ring per session: big enough for everything in flight.
    let per_session = match window {
        Some(w) => (w as u64).saturating_mul(4),
        None => {
            let rate = args.rate.unwrap_or(1.0) / args.sessions as f64;
            let expect = count.div_ceil(args.sessions as u64);
            expect.min((rate * 4.0) as u64 + 1024)
        }
    };
    let ring = per_session.clamp(1024, MAX_RING).next_power_of_two() as usize;
    let truth = match &args.truth {
        Some(p) => Some(TruthWriter::create(p, CLIENT_HEADER)?),
        None => None,
    };
    let mut ctx = Ctx {
        enc: FixEncoder::new(),
        clock: UtcClock::new(),
        rng: Rng::new(args.seed),
        lat: Latencies::new()?,
        c: Counters::default(),
        truth,
        pad: vec![b'x'; args.pad],
        scratch: Vec::with_capacity(1024),
        id: Vec::with_capacity(128),
        split: args.split_clordid,
        no_fill: args.no_fill,
        mix: [args.mix.d, args.mix.f, args.mix.g],
    };
    let epoll = Epoll::new()?;
    let timerfd = TimerFd::new()?;
    epoll.add(timerfd.raw_fd(), TIMER, false)?;
    sys::tighten_timer_slack();

    let mut sessions = Vec::with_capacity(args.sessions);
    for i in 0..args.sessions {
        let stream = TcpStream::connect_timeout(&args.connect, LOGON_TIMEOUT)
            .with_context(|| format!("connecting to {}", args.connect))?;
        stream.set_nodelay(true)?;
        stream.set_nonblocking(true)?;
        let local = stream.local_addr()?.to_string();
        let prefix = match &args.clordid_prefix {
            Some(p) => p.clone().into_bytes(),
            None => format!("S{}-", i + 1).into_bytes(),
        };
        let width = args.clordid_len.saturating_sub(prefix.len()).max(1);
        let mut session = Session::initiator(
            &args.begin_string,
            &format!("{}{}", args.sender_prefix, i + 1),
            &args.target_comp_id,
            args.heartbeat,
        );
        let mut out = OutBuf::with_capacity(256 * 1024, 4096);
        let tx = Tx {
            enc: &mut ctx.enc,
            clock: &mut ctx.clock,
            out: out.buf(),
        };
        session.logon(tx, monotonic_ns());
        epoll.add(stream.as_raw_fd(), i as u64, true)?;
        sessions.push(Sess {
            stream,
            local,
            session,
            inbuf: InBuf::with_capacity(256 * 1024),
            out,
            writable_armed: true,
            prefix,
            width,
            next_num: 1,
            ring: vec![Order::default(); ring],
            mask: ring as u64 - 1,
            outstanding: 0,
            recent: [0; RECENT],
            recent_pos: 0,
            closing: false,
            closed: false,
        });
    }
    let mut client = Client {
        epoll,
        timerfd,
        sessions,
        ctx,
        framing: FramingStats::default(),
        spin_ns: args.spin,
    };
    client.logon_all(shutdown)?;

    let t0 = monotonic_ns();
    let plan = Plan {
        t0,
        interval_ns: args.rate.map(|r| 1e9 / r),
        window: window.unwrap_or(0) as u64,
        count,
        send_deadline: t0.saturating_add(duration_ns),
        drain_ns: (args.drain_timeout.max(0.0) * 1e9) as u64,
    };
    client.run(&plan, shutdown)?;
    client.report(args, window)
}

struct Plan {
    t0: u64,
    /// Open loop: ns between scheduled sends (all sessions together).
    interval_ns: Option<f64>,
    window: u64,
    count: u64,
    send_deadline: u64,
    drain_ns: u64,
}

impl Client {
    fn logon_all(&mut self, shutdown: &Shutdown) -> anyhow::Result<()> {
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

    fn total_sent(&self) -> u64 {
        self.ctx.c.sent.iter().sum()
    }

    fn outstanding(&self) -> u64 {
        self.sessions.iter().map(|s| s.outstanding).sum()
    }

    fn run(&mut self, plan: &Plan, shutdown: &Shutdown) -> anyhow::Result<()> {
        let mut phase = Phase::Sending;
        let mut next_tick = monotonic_ns() + TICK_NS;
        let mut i: u64 = 0; // open-loop order index
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
                    if self.outstanding() == 0 || now >= until {
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

    /// Sends what is due now; returns when the next send is due (open loop).
    fn send_due(&mut self, plan: &Plan, i: &mut u64, now: u64) -> anyhow::Result<Option<u64>> {
        let n = self.sessions.len();
        let mut budget = MAX_SENDS_PER_TURN;
        if let Some(interval) = plan.interval_ns {
            loop {
                let sched = plan.t0 + (*i as f64 * interval) as u64;
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

    fn tick(&mut self, now: u64) {
        for s in &mut self.sessions {
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
            let result = out.flush(stream, |num, ts| mark_sent(c, ring, mask, num, ts));
            match result {
                Ok(Flushed::Done) => {
                    if s.closing {
                        close(&self.epoll, s);
                        continue;
                    }
                    if s.writable_armed {
                        s.writable_armed = false;
                        self.epoll.modify(s.stream.as_raw_fd(), i as u64, false)?;
                    }
                }
                Ok(Flushed::Blocked) => {
                    if !s.writable_armed {
                        s.writable_armed = true;
                        self.epoll.modify(s.stream.as_raw_fd(), i as u64, true)?;
                    }
                }
                Err(_) => close(&self.epoll, s),
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
                        close(&self.epoll, s);
                        break;
                    }
                }
            }
            if !s.closed {
                s.inbuf = inbuf;
            }
        }
        Ok(())
    }

    fn report(mut self, args: &ClientArgs, window: Option<usize>) -> anyhow::Result<ClientReport> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clordids_round_trip() {
        for (prefix, width) in [(&b"S1-"[..], 17usize), (b"", 1), (b"X", 63)] {
            for num in [1u64, 9, 10, 123_456_789, u64::MAX / 10] {
                let mut id = Vec::new();
                push_clordid(&mut id, prefix, width, num);
                assert!(id.len() >= prefix.len() + width);
                assert_eq!(parse_clordid(prefix, &id), Some(num));
            }
        }
        assert_eq!(parse_clordid(b"S1-", b"S2-001"), None);
        assert_eq!(parse_clordid(b"S1-", b"S1-0x1"), None);
    }
}
