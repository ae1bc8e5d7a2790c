//! One connection's recent socket calls, per direction and kind, found by sequence number.

use std::collections::VecDeque;

use fixscope_model::segment::Direction;
use fixscope_model::socket_event::{SocketCall, SocketEvent, Wakeup};

/// Calls kept per connection, direction and kind (reads of requests, writes of responses,
/// …); older ones fall out, counted. At 400k orders/s on one connection this is ~10 ms of
/// calls, far more than the two rings of the live source drift apart.
pub const MAX_CALLS: usize = 4096;

/// One call: the stream range `[seq, seq + len)` it read or wrote.
#[derive(Clone, Copy, Debug)]
pub struct Call {
    pub seq: u32,
    pub len: u32,
    pub ts_ns: u64,
    pub wakeup: Option<Wakeup>,
}

impl Call {
    /// Whether the call's range holds the byte with sequence number `seq`.
    fn holds(&self, seq: u32) -> bool {
        holds(self.seq, self.len, seq)
    }
}

/// Whether `[start, start + len)` holds the byte `seq` (wrap-around safe).
pub fn holds(start: u32, len: u32, seq: u32) -> bool {
    seq.wrapping_sub(start) < len
}

#[derive(Debug, Default)]
pub struct CallLog {
    /// Indexed by [`slot`]: request reads, request writes, response reads, response writes.
    /// On loopback both ends' calls come (the acceptor's reads and writes, the initiator's
    /// writes and reads); each order uses only the watched end's kinds.
    calls: [VecDeque<Call>; 4],
    /// Per kind, the furthest end (`seq + len`) of any call logged: a byte at or past it
    /// is in no call yet — answered without a scan (the usual case when the calls' ring
    /// lags behind the segments').
    ends: [Option<u32>; 4],
}

fn slot(direction: Direction, call: SocketCall) -> usize {
    match (direction, call) {
        (Direction::Request, SocketCall::Read) => 0,
        (Direction::Request, SocketCall::Write) => 1,
        (Direction::Response, SocketCall::Read) => 2,
        (Direction::Response, SocketCall::Write) => 3,
    }
}

impl CallLog {
    /// Logs a call; returns how many older calls fell out.
    pub fn push(&mut self, ev: &SocketEvent) -> u64 {
        if ev.len == 0 {
            return 0;
        }
        let i = slot(ev.direction, ev.call);
        let end = ev.seq.wrapping_add(ev.len);
        let furthest = self.ends[i].get_or_insert(end);
        if (end.wrapping_sub(*furthest) as i32) > 0 {
            *furthest = end;
        }
        let log = &mut self.calls[i];
        let mut evicted = 0;
        if log.len() >= MAX_CALLS {
            log.pop_front();
            evicted = 1;
        }
        log.push_back(Call {
            seq: ev.seq,
            len: ev.len,
            ts_ns: ev.ts_ns,
            wakeup: ev.wakeup,
        });
        evicted
    }

    /// The call of this kind whose range holds the byte `seq`, searched newest first (the
    /// one an order needs is almost always among the last few). A byte is read once and
    /// written once, so at most one call holds it (a `MSG_PEEK` read would be a second:
    /// the newest is the one that consumed it).
    pub fn find(&self, direction: Direction, call: SocketCall, seq: u32) -> Option<&Call> {
        let i = slot(direction, call);
        if (seq.wrapping_sub(self.ends[i]?) as i32) >= 0 {
            return None;
        }
        self.calls[i].iter().rev().find(|c| c.holds(seq))
    }
}
