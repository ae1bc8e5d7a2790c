//! The binary load client: a thread per session (one TCP connection, one logical session),
//! which logs in and then sends one order at a time (window 1), each after the one before
//! it was acked and (unless `--no-fill`) filled in full. `--rate` is the total over all
//! sessions, as the FIX client's: session s sends its k-th order at t0 + (k·S + s)/R, or
//! as soon as the previous one is answered when that is later (the lag is reported).
//! `--count` is the total too, shared out among the sessions; `--duration` bounds the
//! sending (10 s when neither is given), and `--drain-timeout` is how long an order's
//! answers are waited for before the session gives up.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use anyhow::{bail, Context};
use fixscope_core::clock::{monotonic_ns, realtime_ns};
use fixscope_core::shutdown::Shutdown;

use super::frames::{FrameReader, Stop};
use super::messages::{ClientSession, FromHost, OrderKey, ORDER_QTY};
use super::{flags, wait_until, BinaryProtocol};
use crate::args::ClientArgs;
use crate::client::report::Latencies;
use crate::client::{ClientReport, STAGE_ACK, STAGE_FILL, STAGE_FIRST};
use crate::session::SessionStats;
use crate::truth::{TruthWriter, CLIENT_HEADER};

/// One order's client truth row.
struct Row {
    key: String,
    scheduled_ns: u64,
    send_ns: u64,
    ack_ns: Option<u64>,
    fill_ns: Option<u64>,
}

/// What one session did.
#[derive(Default)]
struct SessionRun {
    session: String,
    rows: Vec<Row>,
    acks: u64,
    fills: u64,
    filled_orders: u64,
    rejects: u64,
    completed: u64,
    incomplete: u64,
    unmatched: u64,
    max_send_lag_ns: u64,
    first_send_ns: u64,
    last_send_ns: u64,
}

/// The run's plan, the same for every session.
#[derive(Clone, Copy)]
struct Plan {
    protocol: BinaryProtocol,
    sessions: usize,
    t0: u64,
    /// Open loop: ns between two sends of all sessions together.
    interval_ns: Option<f64>,
    send_deadline: u64,
    no_fill: bool,
    spin_ns: u64,
}

/// Runs the client for `protocol` to its end and returns its report.
pub fn run_binary_client(
    protocol: BinaryProtocol,
    args: &ClientArgs,
    shutdown: &Shutdown,
) -> anyhow::Result<ClientReport> {
    flags::check_client(protocol, args)?;
    let mut truth = match &args.truth {
        Some(p) => Some(TruthWriter::create(p, CLIENT_HEADER)?),
        None => None,
    };
    let base_us = realtime_ns() / 1_000;
    // Connect and log in every session before the first order.
    let mut conns = Vec::with_capacity(args.sessions);
    for i in 0..args.sessions {
        conns.push(Conn::login(protocol, args, i, base_us)?);
    }
    let duration_ns = match (args.duration, args.count) {
        (Some(d), _) => (d.max(0.0) * 1e9) as u64,
        (None, Some(_)) => u64::MAX,
        (None, None) => 10_000_000_000,
    };
    let t0 = monotonic_ns();
    let plan = Plan {
        protocol,
        sessions: args.sessions,
        t0,
        interval_ns: args.rate.map(|r| 1e9 / r),
        send_deadline: t0.saturating_add(duration_ns),
        no_fill: args.no_fill,
        spin_ns: args.spin,
    };
    let total = args.count.unwrap_or(u64::MAX);
    let n = args.sessions as u64;
    let threads: Vec<_> = conns
        .into_iter()
        .enumerate()
        .map(|(i, conn)| {
            let count = total / n + u64::from((i as u64) < total % n);
            let shutdown = shutdown.clone();
            std::thread::spawn(move || conn.run(&plan, count, &shutdown))
        })
        .collect();
    let mut runs = Vec::with_capacity(threads.len());
    for t in threads {
        match t.join() {
            Ok(r) => runs.push(r?),
            Err(_) => bail!("a client session's thread panicked"),
        }
    }
    let mut lat = Latencies::new()?;
    for r in &runs {
        for row in &r.rows {
            if let Some(ack) = row.ack_ns {
                let (sched, write) = (
                    ack.saturating_sub(row.scheduled_ns),
                    ack.saturating_sub(row.send_ns),
                );
                lat.record(STAGE_FIRST, sched, write);
                lat.record(STAGE_ACK, sched, write);
            }
            if let Some(fill) = row.fill_ns {
                lat.record(
                    STAGE_FILL,
                    fill.saturating_sub(row.scheduled_ns),
                    fill.saturating_sub(row.send_ns),
                );
            }
        }
    }
    if let Some(w) = &mut truth {
        let code = protocol.order_code();
        for r in &runs {
            for row in &r.rows {
                w.write(
                    [row.key.as_bytes(), r.session.as_bytes(), code.as_bytes()],
                    &[
                        Some(row.scheduled_ns),
                        Some(row.send_ns),
                        row.ack_ns,
                        row.ack_ns,
                        row.fill_ns,
                    ],
                )
                .context("writing the client truth file")?;
            }
        }
        w.flush().context("writing the client truth file")?;
    }
    Ok(report(protocol, args, &runs, &lat))
}

fn report(
    protocol: BinaryProtocol,
    args: &ClientArgs,
    runs: &[SessionRun],
    lat: &Latencies,
) -> ClientReport {
    let sum = |f: fn(&SessionRun) -> u64| runs.iter().map(f).sum::<u64>();
    let sent = runs.iter().map(|r| r.rows.len() as u64).sum::<u64>();
    let first = runs
        .iter()
        .filter(|r| !r.rows.is_empty())
        .map(|r| r.first_send_ns)
        .min()
        .unwrap_or(0);
    let last = runs.iter().map(|r| r.last_send_ns).max().unwrap_or(0);
    let send_elapsed_s = last.saturating_sub(first) as f64 / 1e9;
    let achieved_rate = if sent > 1 && send_elapsed_s > 0.0 {
        (sent - 1) as f64 / send_elapsed_s
    } else {
        0.0
    };
    let mode = match args.rate {
        Some(r) => format!("open loop {r:.0}/s, window 1/session"),
        None => "closed loop, window 1/session".into(),
    };
    ClientReport {
        sessions: runs.len(),
        mode,
        begin_string: protocol.name().into(),
        target_rate: args.rate,
        sent,
        sent_d: sent,
        sent_f: 0,
        sent_g: 0,
        send_elapsed_s,
        achieved_rate,
        max_send_lag_ns: runs.iter().map(|r| r.max_send_lag_ns).max().unwrap_or(0),
        acks: sum(|r| r.acks),
        fills: sum(|r| r.fills),
        filled_orders: sum(|r| r.filled_orders),
        rejects: sum(|r| r.rejects),
        cancel_rejects: 0,
        completed: sum(|r| r.completed),
        incomplete: sum(|r| r.incomplete),
        unmatched: sum(|r| r.unmatched),
        overrun: 0,
        stages: lat.stats(),
        session: SessionStats::default(),
    }
}

/// One session's connection.
struct Conn {
    index: usize,
    stream: TcpStream,
    reader: FrameReader,
    session: ClientSession,
    /// The client's local ip:port (the name the exchange's truth uses).
    local: String,
}

/// How an order's wait for its answers ended.
enum Answered {
    Done,
    /// The exchange closed, refused or went silent for `--drain-timeout`.
    Gone,
}

impl Conn {
    /// Connects session `index` and logs it in.
    fn login(
        protocol: BinaryProtocol,
        args: &ClientArgs,
        index: usize,
        base_us: u64,
    ) -> anyhow::Result<Conn> {
        let stream = TcpStream::connect(args.connect)
            .with_context(|| format!("connecting to {}", args.connect))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs_f64(args.drain_timeout.max(0.001))))?;
        let local = stream.local_addr()?.to_string();
        let mut c = Conn {
            index,
            stream,
            reader: FrameReader::new(super::framing(protocol)),
            session: ClientSession::new(protocol, index, base_us),
            local,
        };
        for step in c.session.login_steps() {
            c.stream.write_all(&step).context("writing a login")?;
            loop {
                let frame = match c.reader.next(&mut c.stream) {
                    Ok(f) => f,
                    Err(Stop::TimedOut) => bail!("session {}: no answer to its login", index + 1),
                    Err(_) => bail!("session {}: the exchange closed during login", index + 1),
                };
                match c.session.read(frame.bytes) {
                    FromHost::LoggedIn => break,
                    FromHost::Refused(why) => bail!("session {}: login {why}", index + 1),
                    _ => {}
                }
            }
        }
        Ok(c)
    }

    /// Sends `count` orders (or until the deadline or a stop), one at a time.
    fn run(mut self, plan: &Plan, count: u64, shutdown: &Shutdown) -> anyhow::Result<SessionRun> {
        let mut r = SessionRun {
            session: self.local.clone(),
            ..Default::default()
        };
        for k in 0..count {
            if shutdown.is_triggered() {
                break;
            }
            let scheduled_ns = match plan.interval_ns {
                Some(iv) => {
                    let i = k * plan.sessions as u64 + self.index as u64;
                    plan.t0 + (i as f64 * iv) as u64
                }
                None => monotonic_ns(),
            };
            if scheduled_ns >= plan.send_deadline {
                break;
            }
            wait_until(scheduled_ns, plan.spin_ns);
            let key = OrderKey::of(plan.protocol, self.index, k);
            let order = self.session.order(key);
            let send_ns = monotonic_ns();
            self.stream.write_all(&order).context("writing an order")?;
            r.max_send_lag_ns = r.max_send_lag_ns.max(send_ns.saturating_sub(scheduled_ns));
            if r.rows.is_empty() {
                r.first_send_ns = send_ns;
            }
            r.last_send_ns = send_ns;
            r.rows.push(Row {
                key: key.text(),
                scheduled_ns,
                send_ns,
                ack_ns: None,
                fill_ns: None,
            });
            let row = r.rows.len() - 1;
            if let Answered::Gone = self.await_answers(plan, key, row, &mut r) {
                r.incomplete += 1;
                eprintln!(
                    "sim client: session {} ({}): order {} not answered in full; stopping",
                    self.index + 1,
                    self.local,
                    key.text()
                );
                return Ok(r);
            }
            r.completed += 1;
        }
        // A clean end; the exchange may already be gone, which is no error.
        let _ = self.stream.write_all(&self.session.logout());
        Ok(r)
    }

    /// Reads until order `key` is acked and (unless --no-fill) filled in full.
    fn await_answers(
        &mut self,
        plan: &Plan,
        key: OrderKey,
        row: usize,
        r: &mut SessionRun,
    ) -> Answered {
        let mut filled = 0u32;
        loop {
            let frame = match self.reader.next(&mut self.stream) {
                Ok(f) => f,
                Err(_) => return Answered::Gone,
            };
            let at_ns = frame.read_ns;
            match self.session.read(frame.bytes) {
                FromHost::Ack(k) if k == key => {
                    r.acks += 1;
                    r.rows[row].ack_ns.get_or_insert(at_ns);
                    if plan.no_fill {
                        return Answered::Done;
                    }
                }
                FromHost::Fill {
                    key: k,
                    qty,
                    leaves,
                } if k == key => {
                    if r.rows[row].fill_ns.is_none() {
                        r.fills += 1;
                        r.rows[row].fill_ns = Some(at_ns);
                    }
                    filled += qty;
                    let done = leaves.map_or(filled >= ORDER_QTY, |l| l == 0);
                    if done && r.rows[row].ack_ns.is_some() {
                        r.filled_orders += 1;
                        return Answered::Done;
                    }
                }
                FromHost::Rejected(k) if k == key => {
                    r.rejects += 1;
                    return Answered::Done;
                }
                FromHost::Ack(_) | FromHost::Fill { .. } | FromHost::Rejected(_) => {
                    r.unmatched += 1;
                }
                FromHost::Refused(_) => return Answered::Gone,
                FromHost::LoggedIn | FromHost::Other => {}
            }
        }
    }
}
