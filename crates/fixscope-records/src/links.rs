//! The `links` table (`--records` with `--leg`): one row per parent → child link of a
//! router, with the hops measured for it. A parent with three children makes three rows
//! (per-order columns could not hold a fan-out); join with `orders` on the session's
//! CompIDs and ClOrdID.

use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Int64Builder, TimestampNanosecondBuilder, UInt32Builder, UInt64Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use fixscope_core::pipeline::LinkRow;

use crate::columns::{dict, utc_ns};
use crate::strings::{Strings, STRING_BYTES};

/// One row per link.
#[derive(Default)]
pub struct LinkColumns {
    request_time: Vec<Option<i64>>,
    parent_session: Vec<u64>,
    parent_sender_comp_id: Strings,
    parent_target_comp_id: Strings,
    parent_clordid: Strings,
    msg_type: Strings,
    child_time: Vec<Option<i64>>,
    child_session: Vec<u64>,
    child_sender_comp_id: Strings,
    child_target_comp_id: Strings,
    child_clordid: Strings,
    rule: Strings,
    children: Vec<u32>,
    hop_out_ns: Vec<i64>,
    venue_rtt_ns: Vec<Option<i64>>,
    hop_back_ns: Vec<Option<i64>>,
    client_rtt_ns: Vec<Option<i64>>,
    local_ack: Vec<Option<bool>>,
}

impl LinkColumns {
    pub fn len(&self) -> usize {
        self.parent_session.len()
    }

    pub fn is_empty(&self) -> bool {
        self.parent_session.is_empty()
    }

    /// Whether the batch is full (as the orders' columns).
    pub fn full(&self) -> bool {
        self.len() >= crate::BATCH_ROWS
            || [&self.parent_clordid, &self.child_clordid]
                .iter()
                .any(|c| c.bytes().len() >= STRING_BYTES)
    }

    pub fn push(&mut self, row: &LinkRow<'_>) {
        let r = row.record;
        let utc = |t: u64| Some(t as i64 + row.unix_offset_ns);
        let ns = |v: Option<u64>| v.map(|v| v as i64);
        self.request_time.push(utc(r.parent_ts_ns));
        self.parent_session.push(r.parent_session);
        self.parent_sender_comp_id
            .push(row.parent_sender_comp_id.as_bytes());
        self.parent_target_comp_id
            .push(row.parent_target_comp_id.as_bytes());
        self.parent_clordid.push(&r.parent_key);
        self.msg_type
            .push(r.parent_request_type.msg_type().as_bytes());
        self.child_time.push(utc(r.child_ts_ns));
        self.child_session.push(r.child_session);
        self.child_sender_comp_id
            .push(row.child_sender_comp_id.as_bytes());
        self.child_target_comp_id
            .push(row.child_target_comp_id.as_bytes());
        self.child_clordid.push(&r.child_key);
        self.rule.push(r.rule.as_bytes());
        self.children.push(r.children);
        self.hop_out_ns.push(r.hop_out_ns() as i64);
        self.venue_rtt_ns.push(ns(r.venue_rtt_ns()));
        self.hop_back_ns.push(ns(r.hop_back_ns));
        self.client_rtt_ns.push(ns(r.client_rtt_ns()));
        self.local_ack.push(r.local_ack);
    }

    /// The parents' request times (UTC ns), for partitioning by date.
    pub fn times(&self) -> &[Option<i64>] {
        &self.request_time
    }

    pub fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("request_time", utc_ns(), true),
            Field::new("parent_session", DataType::UInt64, false),
            Field::new("parent_sender_comp_id", dict(), true),
            Field::new("parent_target_comp_id", dict(), true),
            Field::new("parent_clordid", DataType::Utf8, true),
            Field::new("msg_type", dict(), false),
            Field::new("child_time", utc_ns(), true),
            Field::new("child_session", DataType::UInt64, false),
            Field::new("child_sender_comp_id", dict(), true),
            Field::new("child_target_comp_id", dict(), true),
            Field::new("child_clordid", DataType::Utf8, true),
            Field::new("rule", dict(), false),
            Field::new("children", DataType::UInt32, false),
            Field::new("hop_out_ns", DataType::Int64, false),
            Field::new("venue_rtt_ns", DataType::Int64, true),
            Field::new("hop_back_ns", DataType::Int64, true),
            Field::new("client_rtt_ns", DataType::Int64, true),
            Field::new("local_ack", DataType::Boolean, true),
        ]))
    }

    /// The rows as one Arrow batch.
    pub fn batch(&mut self) -> RecordBatch {
        let time = |v: &[Option<i64>]| {
            let mut b = TimestampNanosecondBuilder::new();
            b.extend(v.iter().copied());
            Arc::new(b.finish()) as ArrayRef
        };
        let session = |v: &[u64]| {
            let mut b = UInt64Builder::new();
            b.append_slice(v);
            Arc::new(b.finish()) as ArrayRef
        };
        let int = |v: &[Option<i64>]| {
            let mut b = Int64Builder::new();
            b.extend(v.iter().copied());
            Arc::new(b.finish()) as ArrayRef
        };
        let mut children = UInt32Builder::new();
        children.append_slice(&self.children);
        let mut hop_out = Int64Builder::new();
        hop_out.append_slice(&self.hop_out_ns);
        let mut local = BooleanBuilder::new();
        local.extend(self.local_ack.iter().copied());
        let columns: Vec<ArrayRef> = vec![
            time(&self.request_time),
            session(&self.parent_session),
            self.parent_sender_comp_id.array(),
            self.parent_target_comp_id.array(),
            self.parent_clordid.array(),
            self.msg_type.array(),
            time(&self.child_time),
            session(&self.child_session),
            self.child_sender_comp_id.array(),
            self.child_target_comp_id.array(),
            self.child_clordid.array(),
            self.rule.array(),
            Arc::new(children.finish()),
            Arc::new(hop_out.finish()),
            int(&self.venue_rtt_ns),
            int(&self.hop_back_ns),
            int(&self.client_rtt_ns),
            Arc::new(local.finish()),
        ];
        RecordBatch::try_new(Self::schema(), columns).expect("columns match the schema")
    }
}
