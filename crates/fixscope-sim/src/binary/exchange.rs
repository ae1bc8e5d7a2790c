//! The binary exchange: a thread per connection, which logs the client in and answers each
//! order after `--ack-delay` with its ack and then, `--fill-delay` apart, with
//! `--partial-fills` partial fills and the last one for the rest (none with `--no-fill`).
//! The thread sleeps until each answer is due, so a connection's orders are answered one
//! after the other, in order.

use std::io::{self, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use fixscope_core::clock::monotonic_ns;
use fixscope_core::shutdown::Shutdown;

use super::frames::{FrameReader, Stop};
use super::messages::{FromClient, HostSession, OrderIn};
use super::{flags, wait_until, BinaryProtocol};
use crate::args::ExchangeArgs;
use crate::delay::DelaySpec;
use crate::exchange::ExchangeSummary;
use crate::rng::Rng;
use crate::truth::{TruthWriter, EXCHANGE_HEADER};

/// How often a blocked accept() or read() looks at the stop flag.
const POLL: Duration = Duration::from_millis(20);
/// Order ids of connection n start at n * this (unique across connections).
const IDS_PER_CONNECTION: u64 = 1 << 32;

/// What every connection's thread shares.
struct Shared {
    protocol: BinaryProtocol,
    ack_delay: DelaySpec,
    fill_delay: DelaySpec,
    partial_fills: u32,
    no_fill: bool,
    spin_ns: u64,
    seed: u64,
    truth: Mutex<Option<TruthWriter>>,
    shutdown: Shutdown,
    deadline: Option<Instant>,
}

impl Shared {
    fn stopping(&self) -> bool {
        self.shutdown.is_triggered() || self.deadline.is_some_and(|d| Instant::now() >= d)
    }
}

/// One order's truth row, as the FIX exchange stamps it.
struct Stamps {
    read_call_ns: u64,
    request_ns: u64,
    ack_ns: u64,
    ack_written_ns: u64,
    fill_ns: Option<u64>,
}

/// Runs the exchange for `protocol` until `shutdown` or `--duration`.
pub fn run_binary_exchange(
    protocol: BinaryProtocol,
    args: &ExchangeArgs,
    shutdown: &Shutdown,
    on_ready: impl FnOnce(SocketAddr),
) -> anyhow::Result<ExchangeSummary> {
    flags::check_exchange(protocol, args)?;
    let started = Instant::now();
    let listener =
        TcpListener::bind(args.listen).with_context(|| format!("binding {}", args.listen))?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let truth = match &args.truth {
        Some(p) => Some(TruthWriter::create(p, EXCHANGE_HEADER)?),
        None => None,
    };
    let shared = Arc::new(Shared {
        protocol,
        ack_delay: args.ack_delay,
        fill_delay: args.fill_delay,
        partial_fills: args.partial_fills,
        no_fill: args.no_fill,
        spin_ns: args.spin,
        seed: args.seed,
        truth: Mutex::new(truth),
        shutdown: shutdown.clone(),
        deadline: args
            .duration
            .map(|d| started + Duration::from_secs_f64(d.max(0.0))),
    });
    on_ready(addr);
    let mut threads = Vec::new();
    let mut connections = 0u64;
    while !shared.stopping() {
        match listener.accept() {
            Ok((stream, peer)) => {
                connections += 1;
                let shared = Arc::clone(&shared);
                let n = connections;
                threads.push(std::thread::spawn(move || {
                    serve(&shared, stream, peer, n).with_context(|| format!("session {peer}"))
                }));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(POLL),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e).context("accepting a connection"),
        }
    }
    let mut summary = ExchangeSummary {
        listen: Some(addr),
        connections,
        ..Default::default()
    };
    let mut first_error = None;
    for t in threads {
        match t.join() {
            Ok(Ok(s)) => add(&mut summary, &s),
            Ok(Err(e)) => {
                summary.protocol_errors += 1;
                first_error.get_or_insert(e);
            }
            Err(_) => anyhow::bail!("an exchange session's thread panicked"),
        }
    }
    let mut truth = shared.truth.lock().expect("truth lock");
    if let Some(w) = truth.as_mut() {
        w.flush().context("writing the exchange truth file")?;
        summary.truth_records = w.records;
    }
    if let Some(e) = first_error {
        // A session that broke is reported, not fatal: the others' truth is still good.
        eprintln!("sim exchange: {e:#}");
    }
    summary.elapsed_s = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// Adds one connection's counts into the run's.
fn add(into: &mut ExchangeSummary, s: &ExchangeSummary) {
    into.logons += s.logons;
    into.logouts += s.logouts;
    into.messages_in += s.messages_in;
    into.messages_out += s.messages_out;
    into.orders += s.orders;
    into.acks += s.acks;
    into.fills += s.fills;
    into.filled_orders += s.filled_orders;
    into.truth_errors += s.truth_errors;
    if s.orders > 0 {
        if into.first_request_ns == 0 || s.first_request_ns < into.first_request_ns {
            into.first_request_ns = s.first_request_ns;
        }
        into.last_request_ns = into.last_request_ns.max(s.last_request_ns);
    }
}

/// One connection, to its end (the client's logout or close, or the exchange's stop).
fn serve(
    shared: &Shared,
    mut stream: TcpStream,
    peer: SocketAddr,
    n: u64,
) -> anyhow::Result<ExchangeSummary> {
    stream.set_nonblocking(false)?;
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(POLL))?;
    let session = peer.to_string();
    let mut host = HostSession::new(shared.protocol, n * IDS_PER_CONNECTION);
    let mut reader = FrameReader::new(super::framing(shared.protocol));
    let mut rng = Rng::new(shared.seed ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let mut s = ExchangeSummary::default();
    let mut answer = Vec::with_capacity(256);
    loop {
        let frame = match reader.next(&mut stream) {
            Ok(f) => f,
            Err(Stop::TimedOut) if !shared.stopping() => continue,
            Err(Stop::TimedOut | Stop::Closed) => break,
            Err(Stop::BadFrame(why)) => anyhow::bail!("not a message boundary: {why}"),
            Err(Stop::Io(e)) => return Err(e).context("reading"),
        };
        s.messages_in += 1;
        let (read_call_ns, request_ns) = (frame.read_call_ns, frame.read_ns);
        answer.clear();
        match host.read(frame.bytes, &mut answer) {
            step @ (FromClient::Negotiate | FromClient::Login) => {
                s.logons += u64::from(matches!(step, FromClient::Login));
                stream.write_all(&answer).context("answering a login")?;
                s.messages_out += 1;
            }
            FromClient::Order(order) => {
                s.orders += 1;
                if s.first_request_ns == 0 {
                    s.first_request_ns = request_ns;
                }
                s.last_request_ns = request_ns;
                let stamps = answer_order(
                    shared,
                    &mut host,
                    &mut rng,
                    &mut stream,
                    &order,
                    (read_call_ns, request_ns),
                    &mut s,
                )?;
                write_truth(shared, &session, &order, &stamps, &mut s);
            }
            FromClient::Logout => {
                s.logouts += 1;
                break;
            }
            FromClient::Other => {}
        }
    }
    Ok(s)
}

/// Acks and fills one order, each when due; returns its stamps.
fn answer_order(
    shared: &Shared,
    host: &mut HostSession,
    rng: &mut Rng,
    stream: &mut TcpStream,
    order: &OrderIn,
    (read_call_ns, request_ns): (u64, u64),
    s: &mut ExchangeSummary,
) -> anyhow::Result<Stamps> {
    let ack = host.ack(order);
    wait_until(request_ns + shared.ack_delay.sample(rng), shared.spin_ns);
    let ack_ns = monotonic_ns();
    stream.write_all(&ack).context("writing an ack")?;
    let ack_written_ns = monotonic_ns();
    s.acks += 1;
    s.messages_out += 1;
    let mut stamps = Stamps {
        read_call_ns,
        request_ns,
        ack_ns,
        ack_written_ns,
        fill_ns: None,
    };
    if shared.no_fill {
        return Ok(stamps);
    }
    // N partial fills of an equal part, then the last one for what is left.
    let fills = shared.partial_fills.min(order.qty.saturating_sub(1)) + 1;
    let part = order.qty / fills;
    let mut leaves = order.qty;
    let mut due = ack_ns;
    for i in 0..fills {
        let qty = if i + 1 == fills { leaves } else { part };
        leaves -= qty;
        let fill = host.fill(order, qty, leaves);
        due += shared.fill_delay.sample(rng);
        wait_until(due, shared.spin_ns);
        let now = monotonic_ns();
        stamps.fill_ns.get_or_insert(now);
        stream.write_all(&fill).context("writing a fill")?;
        s.fills += 1;
        s.messages_out += 1;
    }
    s.filled_orders += 1;
    Ok(stamps)
}

fn write_truth(
    shared: &Shared,
    session: &str,
    order: &OrderIn,
    t: &Stamps,
    s: &mut ExchangeSummary,
) {
    let mut truth = shared.truth.lock().expect("truth lock");
    let Some(w) = truth.as_mut() else { return };
    let key = order.key.text();
    let code = shared.protocol.order_code();
    let row = w.write(
        [key.as_bytes(), session.as_bytes(), code.as_bytes()],
        &[
            Some(t.request_ns),
            Some(t.ack_ns),
            t.fill_ns,
            Some(t.read_call_ns),
            Some(t.ack_written_ns),
        ],
    );
    if row.is_err() {
        s.truth_errors += 1;
    }
}
