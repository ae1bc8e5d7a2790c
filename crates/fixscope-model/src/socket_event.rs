//! What the watched application did with a watched connection's bytes: one socket call
//! (a read that returned bytes, or a write) seen by eBPF at the socket layer. The live
//! source emits them with `--breakdown`; the pipeline places them on the TCP stream by
//! sequence number (never by time) to split an order's latency into wire → read → app →
//! write → wire.

use crate::segment::{ConnectionKey, Direction, FlowKey};
use fixscope_tls::TlsCall;

/// Which socket call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SocketCall {
    /// A receive (`tcp_recvmsg`) that returned `len > 0` bytes; `ts_ns` is its return.
    Read,
    /// A send (`tcp_sendmsg`) of `len` bytes; `ts_ns` is its entry.
    Write,
}

/// The scheduler's view of the thread that made a read: its last wakeup before the read
/// and when it then got a CPU. The pipeline counts `sched_delay` (= `on_cpu_ns -
/// woken_ns`) for an order only when the wakeup came after the request reached the wire,
/// i.e. the thread was asleep waiting for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Wakeup {
    pub woken_ns: u64,
    pub on_cpu_ns: u64,
}

/// `live --tls-uprobes`: one OpenSSL `SSL_read`/`SSL_write` of a watched connection that
/// returned plaintext, with the TCP bytes it read or wrote itself (`fixscope_tls::uprobe`
/// places it on the records that carried it).
#[derive(Clone, Copy, Debug)]
pub struct TlsCallEvent<'a> {
    /// The bytes' path on the wire, as for [`SocketEvent::flow`].
    pub flow: FlowKey,
    pub direction: Direction,
    pub call: TlsCall<'a>,
}

impl TlsCallEvent<'_> {
    pub fn connection(&self) -> ConnectionKey {
        ConnectionKey::of(self.flow, self.direction)
    }
}

/// One socket call on a watched connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SocketEvent {
    /// CLOCK_MONOTONIC, the timebase of live segments' `ts_ns`.
    pub ts_ns: u64,
    /// The bytes' path on the wire, as a [`crate::Segment`] carrying them would have it:
    /// a server's read of a request is client → server.
    pub flow: FlowKey,
    /// The direction of the bytes, as for segments.
    pub direction: Direction,
    pub call: SocketCall,
    /// TCP sequence number of the first byte the call read or wrote (the stream's seq space,
    /// the same as the segments').
    pub seq: u32,
    /// Bytes read (return value) or handed to the write.
    pub len: u32,
    /// The calling thread (kernel tid).
    pub tid: u32,
    /// Reads only: the thread's last wakeup before the read, when the kernel saw one.
    pub wakeup: Option<Wakeup>,
}
