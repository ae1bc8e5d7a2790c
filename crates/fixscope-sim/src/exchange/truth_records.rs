//! A request's ground-truth records, to the exchange truth file and to `--order-truth`:
//! written once the request is complete (answered, first fill sent) and every response
//! of it has been written to the socket, or when its connection closes.
//!
//! Apart from the engine: the engine decides when a record is complete, this file what it
//! says; it needs only the slot.

use std::io::Write;

use super::orders::{OrderBook, Slot};
use super::ExchangeSummary;
use crate::truth::TruthWriter;

/// The first line of `--order-truth` (one line per request, see `write_order_truth`).
pub const ORDER_TRUTH_HEADER: &str =
    "epoch,clordid,client_comp_id,msg_type,symbol,account,venue,request_ns,answer,answer_ns,fill_ns";

/// Where complete records go.
pub struct Sinks<'a> {
    pub truth: &'a mut Option<TruthWriter>,
    pub order_truth: &'a mut Option<std::io::BufWriter<std::fs::File>>,
    pub stats: &'a mut ExchangeSummary,
}

/// Writes the truth record of `idx` once it is complete, and recycles the slot once nothing
/// refers to it.
pub fn complete(book: &mut OrderBook, sinks: Sinks<'_>, peer: &str, client: &[u8], idx: u32) {
    let Sinks {
        truth,
        order_truth,
        stats,
    } = sinks;
    let s = book.get_mut(idx);
    if s.finalize && !s.written && s.pending_stamps == 0 {
        s.written = true;
        if let Some(w) = truth {
            let mt = [s.msg_type];
            let nums = [
                Some(s.request_ns),
                s.ack_ns,
                s.fill_ns,
                Some(s.read_call_ns),
                s.ack_written_ns,
            ];
            if w.write([&s.clordid, peer.as_bytes(), &mt], &nums).is_err() {
                stats.truth_errors += 1;
            }
        }
        if let Some(w) = order_truth {
            if write_order_truth(w, s, client).is_err() {
                stats.truth_errors += 1;
            }
        }
    }
    if s.releasable() {
        book.release(idx);
    }
}

/// One line of `--order-truth` (see [`ORDER_TRUTH_HEADER`]).
fn write_order_truth(w: &mut impl Write, s: &Slot, client: &[u8]) -> std::io::Result<()> {
    let opt = |v: Option<u64>| v.map(|n| n.to_string()).unwrap_or_default();
    write!(w, "{},", s.epoch)?;
    w.write_all(&s.clordid)?;
    w.write_all(b",")?;
    w.write_all(client)?;
    write!(w, ",{},", s.msg_type as char)?;
    w.write_all(&s.symbol)?;
    w.write_all(b",")?;
    w.write_all(&s.account)?;
    w.write_all(b",")?;
    w.write_all(&s.venue)?;
    writeln!(
        w,
        ",{},{},{},{}",
        s.request_ns,
        s.answer,
        opt(s.ack_ns),
        opt(s.fill_ns)
    )
}
