//! One session of the client: its socket, FIX session state, buffers, and the ring of
//! requests it tracks until they complete.

use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

use anyhow::Context;
use fixscope_core::clock::monotonic_ns;

use super::{Counters, Ctx};
use crate::args::ClientArgs;
use crate::inbuf::InBuf;
use crate::outbuf::OutBuf;
use crate::session::{Session, Tx};
use crate::sys::Epoll;

pub(super) const LOGON_TIMEOUT: Duration = Duration::from_secs(5);
/// Recent live orders remembered per session as F/G targets.
const RECENT: usize = 32;

/// One tracked request.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Order {
    /// Per-session request number (>= 1); 0 = empty.
    pub num: u64,
    pub kind: u8,
    pub sched_ns: u64,
    pub send_ns: u64,
    pub first_ns: u64,
    pub ack_ns: u64,
    pub fill_ns: u64,
    pub done: bool,
    /// Already the target of an F/G.
    pub targeted: bool,
    /// Its Side (54): a D's own, an F/G's that of the order it names (FIX requires it).
    pub side: u8,
    /// Its MsgSeqNum (a session Reject names it in RefSeqNum 45).
    pub seq: u64,
    /// Which of `--symbols`, `--accounts`, `--venues` it carries (an F/G carries its
    /// order's).
    pub fields: [u16; 3],
}

/// Whether a session's TCP connection is up (`--reconnect-every`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Link {
    Up,
    /// No new orders; waiting until everything is answered, then the planned step (a
    /// drop is preceded by a TestRequest checking the line: `probed`).
    Quiescing {
        deadline: u64,
        probed: bool,
    },
    /// Our FIN is out (no Logout); waiting for the exchange's close.
    Dropping {
        deadline: u64,
        reset: bool,
    },
    /// Down until `until`; orders due meanwhile are queued (`--queue-while-down`).
    Down {
        until: u64,
        reset: bool,
    },
}

pub(super) struct Sess {
    pub stream: TcpStream,
    /// Our local ip:port: the "session" the exchange's truth file names.
    pub local: String,
    pub session: Session,
    pub inbuf: InBuf,
    pub out: OutBuf,
    pub writable_armed: bool,
    pub prefix: Vec<u8>,
    /// Digits of the zero-padded number after the prefix.
    pub width: usize,
    pub next_num: u64,
    pub ring: Vec<Order>,
    pub mask: u64,
    pub outstanding: u64,
    recent: [u64; RECENT],
    recent_pos: usize,
    /// Close once the output is flushed (Logout exchanged or protocol error).
    pub closing: bool,
    pub closed: bool,
    pub link: Link,
    /// Orders sent since the last reconnect or reset.
    pub orders_since_link: u64,
    /// Reconnects and in-session resets done (every K-th is a hard reset).
    pub link_steps: u64,
    /// Orders queued in the current outage, and at most (`--queue-while-down`).
    pub queued_now: u64,
    pub queue_limit: u64,
    pub connect_to: std::net::SocketAddr,
    pub resend_last: u64,
    /// When the next `--test-request-every` TestRequest is due.
    pub next_test_request: Option<u64>,
}

impl Sess {
    /// Connects session `i` (0-based) and queues its Logon; `ring` entries (a power of two)
    /// track its requests.
    pub fn connect(
        args: &ClientArgs,
        i: usize,
        ring: usize,
        ctx: &mut Ctx,
    ) -> anyhow::Result<Sess> {
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
        // Counted from the first Logon on.
        session.wire.enabled = args.session_truth.is_some();
        let mut out = OutBuf::with_capacity(256 * 1024, 4096);
        let tx = Tx {
            enc: &mut ctx.enc,
            clock: &mut ctx.clock,
            out: out.buf(),
        };
        session.logon(tx, monotonic_ns());
        Ok(Sess {
            stream,
            local,
            session,
            inbuf: InBuf::with_capacity(256 * 1024),
            out,
            // Registered for writability too, so the queued Logon goes out.
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
            link: Link::Up,
            orders_since_link: 0,
            link_steps: 0,
            queued_now: 0,
            queue_limit: args.queue_while_down,
            connect_to: args.connect,
            resend_last: args.resend_last,
            next_test_request: None,
        })
    }

    /// Applies the session-layer flags.
    pub fn configure(&mut self, args: &ClientArgs) {
        let store = args
            .replay_store
            .unwrap_or(if args.reconnect_every > 0 { 1 << 16 } else { 0 });
        self.session.store = crate::replay_store::ReplayStore::new(store);
        self.session.test_request_id = args
            .test_request_id
            .as_ref()
            .map(|s| s.clone().into_bytes());
        self.next_test_request = args.test_request_every.map(|every| monotonic_ns() + every);
    }

    /// Connects again and queues the Logon (141=Y when `reset`: a new epoch whose
    /// ClOrdIDs start over; else numbering continues and, with `--resend-last`, we ask
    /// for the exchange's last messages again).
    pub fn reconnect(
        &mut self,
        epoll: &Epoll,
        token: u64,
        reset: bool,
        ctx: &mut Ctx,
    ) -> anyhow::Result<()> {
        let stream = TcpStream::connect_timeout(&self.connect_to, LOGON_TIMEOUT)
            .with_context(|| format!("reconnecting to {}", self.connect_to))?;
        stream.set_nodelay(true)?;
        stream.set_nonblocking(true)?;
        self.local = stream.local_addr()?.to_string();
        self.stream = stream;
        self.inbuf = InBuf::with_capacity(256 * 1024);
        let tx = Tx {
            enc: &mut ctx.enc,
            clock: &mut ctx.clock,
            out: self.out.buf(),
        };
        let now = monotonic_ns();
        if reset {
            self.session.logon(tx, now);
            self.next_num = 1;
        } else {
            self.session.forget_inbound(self.resend_last);
            self.session.logon_continue(tx, now);
        }
        epoll.add(self.stream.as_raw_fd(), token, true)?;
        self.writable_armed = true;
        self.link = Link::Up;
        self.orders_since_link = 0;
        self.queued_now = 0;
        Ok(())
    }

    pub fn raw_fd(&self) -> RawFd {
        self.stream.as_raw_fd()
    }

    pub fn slot(&mut self, num: u64) -> Option<&mut Order> {
        let o = &mut self.ring[(num & self.mask) as usize];
        (o.num == num && num != 0).then_some(o)
    }

    /// A recent live (acked, unfilled, untargeted) order to cancel or replace.
    pub fn pick_target(&mut self) -> Option<u64> {
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

    pub fn remember_live(&mut self, num: u64) {
        self.recent[self.recent_pos] = num;
        self.recent_pos = (self.recent_pos + 1) % RECENT;
    }

    /// Stops all I/O on the session (the socket closes when the client is dropped).
    pub fn close(&mut self, epoll: &Epoll) {
        if !self.closed {
            self.closed = true;
            // Deregistering only fails if the fd is already gone.
            let _ = epoll.delete(self.stream.as_raw_fd());
            let _ = self.stream.shutdown(std::net::Shutdown::Both);
        }
    }
}

/// Records that request `num` was written at `ts` (a free function: the flush callback
/// borrows the ring while the session's buffer is borrowed for writing).
pub(super) fn mark_sent(c: &mut Counters, ring: &mut [Order], mask: u64, num: u64, ts: u64) {
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
