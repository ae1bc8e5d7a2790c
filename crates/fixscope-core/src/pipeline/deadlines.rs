//! Connections waiting for a time of the pipeline's clock (`Deadlines`): below the
//! connection table and the routing, which both note and take them.

use crate::segment::ConnectionKey;

/// Connections waiting for a deadline of the pipeline's clock, checked with one comparison
/// per segment (and per tick of a live clock) while none is due; an entry whose wait ended
/// meanwhile is dropped when due. Two lists:
/// - **acknowledged holes**: a hole the peer acknowledged waits for the reorder window
///   ([`crate::reassembly::StreamReassembler::give_up_acked`]): the pipeline gives it up as
///   its clock passes the deadline, before the correlator's own window expires a response
///   that the request held behind the hole would answer;
/// - **held for a TLS key** (live `--tls-keylog`): a connection whose key line is not
///   written yet waits at most [`crate::tls::KEY_WAIT_NS`] after its ServerHello; once the
///   clock passes that, it gets a last look for its key and is `no_key` — even when its
///   peers went quiet and no segment of it comes again.
pub(crate) struct Deadlines {
    waiting: Vec<(u64, ConnectionKey)>,
    /// The earliest deadline waiting ([`u64::MAX`]: none).
    next_ns: u64,
    /// The connections due, reused.
    due: Vec<ConnectionKey>,
}

impl Default for Deadlines {
    fn default() -> Self {
        Deadlines {
            waiting: Vec::new(),
            next_ns: u64::MAX,
            due: Vec::new(),
        }
    }
}

impl Deadlines {
    pub(crate) fn insert(&mut self, deadline_ns: u64, key: ConnectionKey) {
        self.waiting.push((deadline_ns, key));
        self.next_ns = self.next_ns.min(deadline_ns);
    }

    /// A deadline has passed by `now_ns`.
    #[inline]
    pub(crate) fn due(&self, now_ns: u64) -> bool {
        now_ns > self.next_ns
    }

    /// Takes the connections whose deadline passed by `now_ns` (each once); give them back
    /// with [`Deadlines::give_back`].
    pub(crate) fn take_due(&mut self, now_ns: u64) -> Vec<ConnectionKey> {
        let mut due = std::mem::take(&mut self.due);
        due.clear();
        let mut next_ns = u64::MAX;
        self.waiting.retain(|&(deadline, key)| {
            if now_ns > deadline {
                if !due.contains(&key) {
                    due.push(key);
                }
                false
            } else {
                next_ns = next_ns.min(deadline);
                true
            }
        });
        self.next_ns = next_ns;
        due
    }

    pub(crate) fn give_back(&mut self, due: Vec<ConnectionKey>) {
        self.due = due;
    }
}
