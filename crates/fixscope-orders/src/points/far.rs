//! The far point's orders, read by a pipeline of their own (`--records`' sink, so the far
//! point's orders follow the correlator's own rules): each answered order's request and
//! first response, in the far point's clock, by its identity.

use std::cell::RefCell;
use std::rc::Rc;

use hashbrown::HashMap;

use crate::correlate::RequestType;
use crate::sink::{MessageEvent, OrderRow, RecordSink};

/// An order's identity at either point: its session's CompIDs, its request type and key.
/// (Not the connection: a NAT between the points changes it, not these.)
pub fn order_identity(
    sender: &str,
    target: &str,
    request_type: RequestType,
    key: &[u8],
    out: &mut Vec<u8>,
) {
    out.clear();
    out.extend_from_slice(sender.as_bytes());
    out.push(1);
    out.extend_from_slice(target.as_bytes());
    out.push(1);
    out.extend_from_slice(request_type.msg_type().as_bytes());
    out.push(1);
    out.extend_from_slice(key);
}

/// One order answered at the far point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FarOrder {
    pub request_ts_ns: u64,
    pub response_ts_ns: u64,
    /// The far point saw this identity more than once.
    pub repeated: bool,
}

/// The far point's answered orders.
#[derive(Debug, Default)]
pub struct FarOrders {
    index: HashMap<Box<[u8]>, u32>,
    pub orders: Vec<FarOrder>,
}

impl FarOrders {
    /// The order of `identity`, with its index.
    pub fn get(&self, identity: &[u8]) -> Option<(usize, FarOrder)> {
        let &i = self.index.get(identity)?;
        Some((i as usize, self.orders[i as usize]))
    }

    fn add(&mut self, identity: &[u8], order: FarOrder) {
        match self.index.get(identity) {
            Some(&i) => self.orders[i as usize].repeated = true,
            None => {
                self.index.insert(identity.into(), self.orders.len() as u32);
                self.orders.push(order);
            }
        }
    }
}

/// The record sink a far point's pipeline fills.
pub struct FarOrderSink {
    orders: Rc<RefCell<FarOrders>>,
    identity: Vec<u8>,
}

impl FarOrderSink {
    /// The sink, and where its orders are read once the far pipeline has finished.
    pub fn new() -> (Self, Rc<RefCell<FarOrders>>) {
        let orders = Rc::new(RefCell::new(FarOrders::default()));
        (
            FarOrderSink {
                orders: Rc::clone(&orders),
                identity: Vec::new(),
            },
            orders,
        )
    }
}

impl RecordSink for FarOrderSink {
    fn order(&mut self, row: &OrderRow<'_>) {
        let r = row.record;
        let (Some(request_ts_ns), Some(first)) = (r.request_ts_ns, r.first_response_ns) else {
            return;
        };
        order_identity(
            row.sender_comp_id,
            row.target_comp_id,
            r.request_type,
            &r.key,
            &mut self.identity,
        );
        self.orders.borrow_mut().add(
            &self.identity,
            FarOrder {
                request_ts_ns,
                response_ts_ns: request_ts_ns + first,
                repeated: false,
            },
        );
    }
}

/// A message's identity at any point: its own CompIDs, MsgSeqNum and type (`None` for a
/// PossDup resend, which repeats one).
pub fn message_identity(e: &MessageEvent<'_>, out: &mut Vec<u8>) -> Option<()> {
    if e.poss_dup || e.msg_seq_num == 0 {
        return None;
    }
    out.clear();
    out.extend_from_slice(e.sender_comp_id);
    out.push(1);
    out.extend_from_slice(e.target_comp_id);
    out.push(1);
    out.extend_from_slice(e.msg_type);
    out.push(1);
    out.extend_from_slice(&e.msg_seq_num.to_le_bytes());
    Some(())
}

/// The far point's correlated messages by identity (`--trace` with `--point`): when it saw
/// each; `None` for one it saw twice.
#[derive(Debug, Default)]
pub struct FarMessages {
    seen: HashMap<Box<[u8]>, Option<u64>>,
    identity: Vec<u8>,
}

impl FarMessages {
    pub fn observe(&mut self, e: &MessageEvent<'_>) {
        if message_identity(e, &mut self.identity).is_none() {
            return;
        }
        match self.seen.get_mut(self.identity.as_slice()) {
            Some(ts) => *ts = None,
            None => {
                self.seen
                    .insert(self.identity.as_slice().into(), Some(e.ts_ns));
            }
        }
    }

    /// When the far point saw the message `e` (the near point's), if it saw it once.
    pub fn stamp_of(&self, e: &MessageEvent<'_>, scratch: &mut Vec<u8>) -> Option<u64> {
        message_identity(e, scratch)?;
        *self.seen.get(scratch.as_slice())?
    }
}
