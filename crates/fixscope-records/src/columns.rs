//! The column buffers the pipeline's thread fills (plain vectors: appending costs a push
//! per value; Arrow arrays are built on the writer thread), and their Arrow schemas.

use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Int64Builder, TimestampNanosecondBuilder, UInt64Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use fixscope_core::correlate::{Outcome, RequestType};
use fixscope_core::pipeline::{MessageEvent, OrderRow};
use fixscope_core::Direction;

use crate::chunks::{Column, Numbers};
use crate::codes::{Codes, MessageTypes, RequestTypes, Vocabulary};
use crate::strings::{Strings, STRING_BYTES};

/// UTC times in nanoseconds, written without Parquet's "adjusted to UTC" flag: DuckDB
/// reads a flagged nanosecond timestamp as its microsecond TIMESTAMPTZ and drops the last
/// three digits, an unflagged one as TIMESTAMP_NS with all nine (the values are UTC).
pub(crate) fn utc_ns() -> DataType {
    DataType::Timestamp(TimeUnit::Nanosecond, None)
}

/// Columns of few values (CompIDs, symbols, accounts, outcomes): plain strings in Arrow,
/// dictionary-encoded by the Parquet writer (its default), which is where the space is
/// saved — an Arrow dictionary too would intern every value twice.
pub(crate) fn dict() -> DataType {
    DataType::Utf8
}

/// A vocabulary's column as the Parquet pages take it.
fn codes<V: Vocabulary>(c: &Codes<V>) -> Column<'_> {
    Column::Codes {
        codes: c.codes(),
        names: V::NAMES,
        others: None,
    }
}

/// One row per request.
#[derive(Default)]
pub struct OrderColumns {
    request_time: Vec<Option<i64>>,
    session: Vec<u64>,
    sender_comp_id: Strings,
    target_comp_id: Strings,
    clordid: Strings,
    msg_type: RequestTypes,
    symbol: Strings,
    side: Strings,
    account: Strings,
    msg_seq_num: Vec<i64>,
    first_response_ns: Vec<Option<i64>>,
    ack_ns: Vec<Option<i64>>,
    fill_ns: Vec<Option<i64>>,
    outcome: Codes<Outcome>,
    timed_out: Vec<bool>,
}

impl OrderColumns {
    pub fn len(&self) -> usize {
        self.session.len()
    }

    /// Whether the batch is full: [`crate::BATCH_ROWS`] rows, or string bytes near what
    /// one Arrow string array holds (its offsets are 32-bit).
    pub fn full(&self) -> bool {
        self.len() >= crate::BATCH_ROWS
            || [&self.clordid, &self.account, &self.symbol]
                .iter()
                .any(|c| c.bytes().len() >= STRING_BYTES)
    }

    pub fn is_empty(&self) -> bool {
        self.session.is_empty()
    }

    /// Every row gone, the buffers kept.
    pub(crate) fn clear(&mut self) {
        self.request_time.clear();
        self.session.clear();
        for s in [
            &mut self.sender_comp_id,
            &mut self.target_comp_id,
            &mut self.clordid,
            &mut self.symbol,
            &mut self.side,
            &mut self.account,
        ] {
            s.clear();
        }
        self.msg_type.clear();
        self.msg_seq_num.clear();
        self.first_response_ns.clear();
        self.ack_ns.clear();
        self.fill_ns.clear();
        self.outcome.clear();
        self.timed_out.clear();
    }

    pub fn push(&mut self, row: &OrderRow<'_>) {
        let r = row.record;
        self.request_time.push(row.request_time_ns);
        self.session.push(row.session);
        self.sender_comp_id.push(row.sender_comp_id.as_bytes());
        self.target_comp_id.push(row.target_comp_id.as_bytes());
        // ClOrdID (11) as the request carried it; the correlation key when it had none
        // (a `--key` on other tags).
        if r.fields.cl_ord_id.is_empty() {
            self.clordid.push(&r.key);
        } else {
            self.clordid.push(&r.fields.cl_ord_id);
        }
        // FIX's request type by its MsgType; a binary protocol's by its message's name.
        self.msg_type.push(r.request_type, &r.fields.msg_type);
        self.symbol.push(&r.fields.symbol);
        self.side.push(&r.fields.side);
        self.account.push(&r.fields.account);
        self.msg_seq_num.push(i64::from(r.msg_seq));
        let ns = |v: Option<u64>| v.map(|v| v as i64);
        self.first_response_ns.push(ns(r.first_response_ns));
        self.ack_ns.push(ns(r.ack_ns));
        self.fill_ns.push(ns(r.fill_ns));
        self.outcome.push(r.outcome);
        self.timed_out.push(r.timed_out);
    }

    /// The request times (UTC ns), for partitioning by date.
    pub fn times(&self) -> &[Option<i64>] {
        &self.request_time
    }

    pub fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("request_time", utc_ns(), true),
            Field::new("session", DataType::UInt64, false),
            Field::new("sender_comp_id", dict(), true),
            Field::new("target_comp_id", dict(), true),
            Field::new("clordid", DataType::Utf8, true),
            Field::new("msg_type", dict(), false),
            Field::new("symbol", dict(), true),
            Field::new("side", dict(), true),
            Field::new("account", dict(), true),
            Field::new("msg_seq_num", DataType::Int64, false),
            Field::new("first_response_ns", DataType::Int64, true),
            Field::new("ack_ns", DataType::Int64, true),
            Field::new("fill_ns", DataType::Int64, true),
            Field::new("outcome", dict(), false),
            Field::new("timed_out", DataType::Boolean, false),
        ]))
    }

    /// The columns for the Parquet files, in [`Self::schema`]'s order.
    pub(crate) fn columns(&self) -> Vec<Column<'_>> {
        vec![
            Column::Numbers(Numbers::Some(&self.request_time)),
            Column::Sessions(&self.session),
            Column::Words(&self.sender_comp_id),
            Column::Words(&self.target_comp_id),
            Column::Ids(&self.clordid),
            Column::Codes {
                codes: self.msg_type.codes(),
                names: RequestType::NAMES,
                others: Some(self.msg_type.others()),
            },
            Column::Words(&self.symbol),
            Column::Words(&self.side),
            Column::Words(&self.account),
            Column::Numbers(Numbers::All(&self.msg_seq_num)),
            Column::Numbers(Numbers::Some(&self.first_response_ns)),
            Column::Numbers(Numbers::Some(&self.ack_ns)),
            Column::Numbers(Numbers::Some(&self.fill_ns)),
            codes(&self.outcome),
            Column::Flags(&self.timed_out),
        ]
    }

    /// The rows as one Arrow batch (the string columns' buffers moved into it).
    pub fn batch(&mut self) -> RecordBatch {
        let mut time = TimestampNanosecondBuilder::new();
        time.extend(self.request_time.iter().copied());
        let mut session = UInt64Builder::new();
        session.append_slice(&self.session);
        let mut seq = Int64Builder::new();
        seq.append_slice(&self.msg_seq_num);
        let int = |v: &[Option<i64>]| {
            let mut b = Int64Builder::new();
            b.extend(v.iter().copied());
            Arc::new(b.finish()) as ArrayRef
        };
        let mut timed_out = BooleanBuilder::new();
        timed_out.append_slice(&self.timed_out);
        let columns: Vec<ArrayRef> = vec![
            Arc::new(time.finish()),
            Arc::new(session.finish()),
            self.sender_comp_id.array(),
            self.target_comp_id.array(),
            self.clordid.array(),
            self.msg_type.array(),
            self.symbol.array(),
            self.side.array(),
            self.account.array(),
            Arc::new(seq.finish()),
            int(&self.first_response_ns),
            int(&self.ack_ns),
            int(&self.fill_ns),
            self.outcome.array(),
            Arc::new(timed_out.finish()),
        ];
        RecordBatch::try_new(Self::schema(), columns).expect("columns match the schema")
    }
}

/// One row per FIX request (D/F/G) or response (8/9): what `--trace` writes as CSV.
#[derive(Default)]
pub struct MessageColumns {
    time: Vec<i64>,
    session: Vec<u64>,
    direction: Codes<Direction>,
    msg_type: MessageTypes,
    key: Strings,
}

impl MessageColumns {
    pub fn len(&self) -> usize {
        self.session.len()
    }

    /// Whether the batch is full (as [`OrderColumns::full`]).
    pub fn full(&self) -> bool {
        self.len() >= crate::BATCH_ROWS || self.key.bytes().len() >= STRING_BYTES
    }

    pub fn is_empty(&self) -> bool {
        self.session.is_empty()
    }

    /// Every row gone, the buffers kept.
    pub(crate) fn clear(&mut self) {
        self.time.clear();
        self.session.clear();
        self.direction.clear();
        self.msg_type.clear();
        self.key.clear();
    }

    pub fn push(&mut self, e: &MessageEvent<'_>) {
        self.time.push(e.ts_ns as i64 + e.unix_offset_ns);
        self.session.push(e.session);
        self.direction.push(e.direction);
        self.msg_type.push(e.msg_type);
        self.key.push(e.key);
    }

    pub fn times(&self) -> &[i64] {
        &self.time
    }

    pub fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("time", utc_ns(), false),
            Field::new("session", DataType::UInt64, false),
            Field::new("direction", dict(), false),
            Field::new("msg_type", dict(), false),
            Field::new("key", DataType::Utf8, true),
        ]))
    }

    /// The columns for the Parquet files, in [`Self::schema`]'s order.
    pub(crate) fn columns(&self) -> Vec<Column<'_>> {
        vec![
            Column::Numbers(Numbers::All(&self.time)),
            Column::Sessions(&self.session),
            codes(&self.direction),
            Column::Codes {
                codes: self.msg_type.codes(),
                names: MessageTypes::NAMES,
                others: Some(self.msg_type.others()),
            },
            Column::Ids(&self.key),
        ]
    }

    pub fn batch(&mut self) -> RecordBatch {
        let mut time = TimestampNanosecondBuilder::new();
        time.append_slice(&self.time);
        let mut session = UInt64Builder::new();
        session.append_slice(&self.session);
        let columns: Vec<ArrayRef> = vec![
            Arc::new(time.finish()),
            Arc::new(session.finish()),
            self.direction.array(),
            self.msg_type.array(),
            self.key.array(),
        ];
        RecordBatch::try_new(Self::schema(), columns).expect("columns match the schema")
    }
}
