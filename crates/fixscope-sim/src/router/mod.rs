//! `fixscope sim router`: an order router between `sim client` and `sim exchange`, with
//! ground truth of every hop.
//!
//! It accepts client FIX sessions on `--listen` (any number; Logons answered as the
//! exchange does) and initiates one session to the venue (`--venue`, CompIDs
//! `--sender-comp-id`/`--target-comp-id`). Each parent request (D, F, G) becomes child
//! request(s) after `--route-delay`, or, with probability `--reject-rate`, the router's own
//! reject (35=8 150=8/39=8 for a D, 35=9 for an F/G) after the same delay and no child.
//!
//! Children: a D becomes `--slice` children (OrderQty split, the first ones take the
//! remainder; never more children than units); an F/G goes once to every leg not yet done
//! (41 = that leg's current ClOrdID). Children copy 55, 54, 38 (split), 40 and 44. Their
//! ids follow `--id-map`: `same` (11 = parent 11; refused with `--slice` > 1), `526` (11 =
//! `R` + a 9-digit counter, 526 = parent 11), `hops` (11 = counter, header 115 = parent 49
//! and 627=1, 628 = our SenderCompID, 629 = the child's SendingTime, 630 = parent 34),
//! `counter` (11 = counter, nothing links it to the parent on the wire).
//!
//! Venue responses (35=8, 35=9) go back to the parent after `--back-delay`, with the same
//! 150/39 and the parent's 11 (and 41 for F/G), under our own OrderID/ExecID. What we chose:
//! - fills are always forwarded; a fill that does not finish the last open leg goes out as
//!   a partial fill (39=1); 150 is the parent session's code (F, or 1/2 on FIX 4.2,
//!   whatever the venue speaks); CumQty is the parent's;
//! - anything else (ack, cancel, replace, reject, cancel reject) is forwarded only as the
//!   request's first response: the second slice's ack is swallowed, and so are the other
//!   legs' answers to an F/G;
//! - an F/G whose order is unknown or has no leg left is rejected by the router (35=9, the
//!   truth's `rejected` = 1), like a drawn reject;
//! - the events of one order never overtake each other, whatever delays are drawn;
//! - a replace moves the order to the G's ClOrdID (later fills and F/G use it).
//!
//! Ground truth (`--truth`, see [`truth`]) has one row per child; the router's own capture
//! (`--pcap`, see `capture`) holds every byte of both sessions stamped with the same
//! CLOCK_REALTIME values, so `fixscope pcap FILE -p LISTEN,VENUE` measures both hops and
//! can be checked against the truth.
//!
//! Parts: `book` (orders, requests, lookups), `engine` (state, timers, stamps; its `route`
//! and `map_back` the two directions),
//! `messages` (what is encoded), `link` (a connection and its realtime-stamped writes),
//! `capture`, `truth`, `summary`, `event_loop`.

mod book;
mod capture;
mod engine;
mod event_loop;
mod link;
mod messages;
mod summary;
pub mod truth;

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Duration;

use anyhow::Context;
use fixscope_core::clock::{monotonic_ns, realtime_ns};
use fixscope_core::shutdown::Shutdown;

pub use summary::RouterSummary;

use crate::args_router::RouterArgs;
use crate::inbuf::FramingStats;
use crate::session::Session;
use crate::sys::{self, Epoll, TimerFd};
use capture::{Capture, Tcp};
use engine::{Cfg, Engine};
use event_loop::{Router, INBUF_BYTES, LISTENER, TIMER, VENUE};
use link::Link;
use truth::RouterTruth;

/// How long the venue has to accept our connection and answer our Logon.
const VENUE_TIMEOUT: Duration = Duration::from_secs(5);

/// Runs the router until `shutdown` is triggered, `--duration` elapses or the venue goes
/// away; `on_ready` receives the bound client address once the venue session is up.
pub fn run_router(
    args: &RouterArgs,
    shutdown: &Shutdown,
    on_ready: impl FnOnce(SocketAddr),
) -> anyhow::Result<RouterSummary> {
    args.validate()?;
    let start = monotonic_ns();
    let listener =
        TcpListener::bind(args.listen).with_context(|| format!("binding {}", args.listen))?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let truth = match &args.truth {
        Some(p) => Some(RouterTruth::create(p)?),
        None => None,
    };
    let mut cap = match &args.pcap {
        Some(p) => Some(Capture::create(p)?),
        None => None,
    };
    let stream = TcpStream::connect_timeout(&args.venue, VENUE_TIMEOUT)
        .with_context(|| format!("connecting to the venue {}", args.venue))?;
    stream.set_nodelay(true)?;
    stream.set_nonblocking(true)?;
    let venue_local = stream.local_addr()?;
    let session = Session::initiator(
        &args.begin_string,
        &args.sender_comp_id,
        &args.target_comp_id,
        args.heartbeat,
    );
    let mut venue = Link::new(stream, 0, session, INBUF_BYTES);
    if let Some(cap) = &mut cap {
        let mut tcp = Tcp::new(venue_local, args.venue, true);
        cap.open(&mut tcp, realtime_ns());
        venue.tcp = Some(tcp);
    }
    let epoll = Epoll::new()?;
    let timerfd = TimerFd::new()?;
    epoll.add(timerfd.raw_fd(), TIMER, false)?;
    epoll.add(venue.stream.as_raw_fd(), VENUE, false)?;
    sys::tighten_timer_slack();
    let cfg = Cfg {
        route_delay: args.route_delay,
        back_delay: args.back_delay,
        reject_rate: args.reject_rate,
        slice: args.slice as usize,
        id_map: args.id_map,
    };
    let stats = RouterSummary {
        listen: Some(addr),
        venue: Some(args.venue),
        ..Default::default()
    };
    let mut router = Router {
        epoll,
        timerfd,
        listener,
        accepting: false,
        clients: Vec::with_capacity(64),
        gens: Vec::with_capacity(64),
        free: Vec::new(),
        dirty: Vec::with_capacity(64),
        venue,
        venue_open: true,
        cap,
        engine: Engine::new(cfg, args.seed, truth, stats),
        framing: FramingStats::default(),
        spin_ns: args.spin,
    };
    router.venue_logon(monotonic_ns() + VENUE_TIMEOUT.as_nanos() as u64)?;
    router
        .epoll
        .add(router.listener.as_raw_fd(), LISTENER, false)?;
    router.accepting = true;
    on_ready(addr);
    let deadline = args
        .duration
        .map(|s| monotonic_ns() + (s.max(0.0) * 1e9) as u64)
        .unwrap_or(u64::MAX);
    let result = router.run(shutdown, deadline);
    router.finish();
    router.engine.finish().context("writing the truth file")?;
    let mut stats = router.engine.stats.clone();
    if let Some(cap) = router.cap.take() {
        stats.capture_packets = cap.packets;
        stats.capture_errors = cap.errors;
        cap.finish()?;
    }
    stats.bad_checksum = router.framing.bad_checksum;
    stats.skipped_bytes = router.framing.skipped_bytes;
    stats.elapsed_s = (monotonic_ns() - start) as f64 / 1e9;
    result?;
    Ok(stats)
}
