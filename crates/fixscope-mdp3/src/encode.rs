//! Building MDP 3.0 packets and messages from the schema's generated layouts, for the
//! tests: the same offsets the decoders read, so a message is only as right as the
//! schema — which the SBE tool's decoders check independently
//! (tests/feed_contract/sbe_tool.rs). A [`MessageBuilder`] can make the root block or a
//! group's entries longer or shorter than the schema's, as a later or earlier version
//! would send them, and append bytes after the groups (a later version's new group).
//! Optional values left `None` are written as the field's null value.

use crate::messages::{BookEntry, OrderEntry, TradeEntry, VolumeEntry};
use crate::packet::PACKET_HEADER_LEN;
use crate::schema::{self, Field, Group};

/// A block being filled (a root block or one entry).
#[derive(Clone, Debug, Default)]
pub struct BlockBuilder {
    bytes: Vec<u8>,
}

impl BlockBuilder {
    /// A zeroed block of `len` bytes.
    pub fn new(len: usize) -> Self {
        BlockBuilder {
            bytes: vec![0; len],
        }
    }

    fn reach(&mut self, f: Field) {
        let end = f.offset + f.size;
        if self.bytes.len() < end {
            self.bytes.resize(end, 0);
        }
    }

    /// Writes `value`'s low bytes (little-endian) into `f`.
    pub fn put(&mut self, f: Field, value: u64) -> &mut Self {
        self.reach(f);
        let n = f.size.min(8);
        self.bytes[f.offset..f.offset + n].copy_from_slice(&value.to_le_bytes()[..n]);
        self
    }

    /// Writes a signed value (two's complement, cut to the field's size).
    pub fn put_signed(&mut self, f: Field, value: i64) -> &mut Self {
        self.put(f, value as u64)
    }

    /// Writes `value`, or the field's null value (0 without one) when `None`.
    pub fn put_opt(&mut self, f: Field, value: Option<u64>) -> &mut Self {
        let v = value.or(f.null).unwrap_or(0);
        self.put(f, v)
    }

    /// Writes a signed `value`, or the field's null when `None`.
    pub fn put_signed_opt(&mut self, f: Field, value: Option<i64>) -> &mut Self {
        match value {
            Some(v) => self.put_signed(f, v),
            None => self.put_opt(f, None),
        }
    }

    /// Writes a char array, NUL padded (cut if longer).
    pub fn put_text(&mut self, f: Field, text: &[u8]) -> &mut Self {
        self.reach(f);
        let n = text.len().min(f.size);
        self.bytes[f.offset..f.offset + f.size].fill(0);
        self.bytes[f.offset..f.offset + n].copy_from_slice(&text[..n]);
        self
    }

    /// The block cut or zero-extended to `len` bytes.
    pub fn resize(&mut self, len: usize) -> &mut Self {
        self.bytes.resize(len, 0);
        self
    }
}

/// One repeating group being built.
#[derive(Clone, Debug)]
struct GroupBuilder {
    group: Group,
    block_length: usize,
    entries: Vec<Vec<u8>>,
}

/// One message being built: a root block of the schema's length, its groups (written in
/// the schema's order, empty unless entries are added) and optional trailing bytes.
#[derive(Clone, Debug)]
pub struct MessageBuilder {
    template_id: u16,
    version: u16,
    pub root: BlockBuilder,
    groups: Vec<GroupBuilder>,
    trailing: Vec<u8>,
}

impl MessageBuilder {
    /// A message of `template_id` whose groups are `groups` (a template module's
    /// `GROUPS`; `&[]` for a template whose groups are not built), its root block of the
    /// schema's length (0 for one the schema lacks), at the schema's version.
    pub fn new(template_id: u16, groups: &[Group]) -> Self {
        let len = schema::template(template_id).map_or(0, |t| t.block_length);
        MessageBuilder {
            template_id,
            version: schema::SCHEMA_VERSION,
            root: BlockBuilder::new(usize::from(len)),
            groups: groups
                .iter()
                .map(|&group| GroupBuilder {
                    group,
                    block_length: usize::from(group.block_length),
                    entries: Vec::new(),
                })
                .collect(),
            trailing: Vec::new(),
        }
    }

    /// The header's Version.
    pub fn version(mut self, version: u16) -> Self {
        self.version = version;
        self
    }

    /// The root block cut or zero-extended to `len` bytes (the header's BlockLength).
    pub fn block_length(mut self, len: usize) -> Self {
        self.root.resize(len);
        self
    }

    /// Group `index`'s entry block length on the wire (entries are cut or extended).
    pub fn group_block_length(mut self, index: usize, len: usize) -> Self {
        if let Some(g) = self.groups.get_mut(index) {
            g.block_length = len;
        }
        self
    }

    /// Adds an entry to group `index`, filled by `fill` (a block of the schema's entry
    /// length).
    pub fn entry(mut self, index: usize, fill: impl FnOnce(&mut BlockBuilder)) -> Self {
        if let Some(g) = self.groups.get_mut(index) {
            let mut b = BlockBuilder::new(usize::from(g.group.block_length));
            fill(&mut b);
            g.entries.push(b.bytes);
        }
        self
    }

    /// Bytes after the groups.
    pub fn trailing(mut self, bytes: &[u8]) -> Self {
        self.trailing.extend_from_slice(bytes);
        self
    }

    /// The whole message, MsgSize first (cut to 16 bits: a message cannot be longer).
    pub fn finish(self) -> Vec<u8> {
        let mut body = Vec::new();
        for g in &self.groups {
            if g.group.since_version > self.version {
                continue;
            }
            let dim = g.group.dimension;
            let mut head = BlockBuilder::new(dim.size);
            head.put(dim.block_length, g.block_length as u64);
            head.put(dim.num_in_group, g.entries.len() as u64);
            body.extend_from_slice(&head.bytes);
            for e in &g.entries {
                let mut e = e.clone();
                e.resize(g.block_length, 0);
                body.extend_from_slice(&e);
            }
        }
        body.extend_from_slice(&self.trailing);
        let len = 10 + self.root.bytes.len() + body.len();
        let mut out = Vec::with_capacity(len);
        out.extend_from_slice(&(len as u16).to_le_bytes());
        out.extend_from_slice(&(self.root.bytes.len() as u16).to_le_bytes());
        out.extend_from_slice(&self.template_id.to_le_bytes());
        out.extend_from_slice(&schema::SCHEMA_ID.to_le_bytes());
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&self.root.bytes);
        out.extend_from_slice(&body);
        out
    }
}

/// A packet: the Binary Packet Header and `messages` (each MsgSize first).
pub fn packet(msg_seq_num: u32, sending_time_ns: u64, messages: &[&[u8]]) -> Vec<u8> {
    let mut out =
        Vec::with_capacity(PACKET_HEADER_LEN + messages.iter().map(|m| m.len()).sum::<usize>());
    out.extend_from_slice(&msg_seq_num.to_le_bytes());
    out.extend_from_slice(&sending_time_ns.to_le_bytes());
    for m in messages {
        out.extend_from_slice(m);
    }
    out
}

/// MDIncrementalRefreshBook46 with `entries` and `order_ids` NoOrderIDEntries entries.
pub fn book_builder(
    transact_time_ns: u64,
    mei: u8,
    entries: &[BookEntry],
    order_ids: &[u64],
) -> MessageBuilder {
    use m::no_md_entries as g;
    use schema::md_incremental_refresh_book_46 as m;
    let mut b = MessageBuilder::new(m::ID, m::GROUPS);
    b.root
        .put(m::TRANSACT_TIME, transact_time_ns)
        .put(m::MATCH_EVENT_INDICATOR, u64::from(mei));
    for e in entries {
        b = b.entry(g::INDEX, |x| {
            x.put_signed_opt(g::MD_ENTRY_PX, e.md_entry_px)
                .put_signed_opt(g::MD_ENTRY_SIZE, e.md_entry_size.map(i64::from))
                .put_signed(g::SECURITY_ID, i64::from(e.security_id))
                .put(g::RPT_SEQ, u64::from(e.rpt_seq))
                .put_signed_opt(g::NUMBER_OF_ORDERS, e.number_of_orders.map(i64::from))
                .put(g::MD_PRICE_LEVEL, u64::from(e.md_price_level))
                .put(g::MD_UPDATE_ACTION, u64::from(e.md_update_action))
                .put(g::MD_ENTRY_TYPE, u64::from(e.md_entry_type));
        });
    }
    use m::no_order_id_entries as o;
    for (i, &id) in order_ids.iter().enumerate() {
        b = b.entry(o::INDEX, |x| {
            x.put(o::ORDER_ID, id).put(o::REFERENCE_ID, i as u64 + 1);
        });
    }
    b
}

/// MDIncrementalRefreshBook46.
pub fn book(transact_time_ns: u64, entries: &[BookEntry]) -> Vec<u8> {
    book_builder(transact_time_ns, 0x84, entries, &[]).finish()
}

/// MDIncrementalRefreshTradeSummary48 with `order_ids` (OrderID, LastQty) entries.
pub fn trade_summary_builder(
    transact_time_ns: u64,
    entries: &[TradeEntry],
    order_ids: &[(u64, i32)],
) -> MessageBuilder {
    use m::no_md_entries as g;
    use schema::md_incremental_refresh_trade_summary_48 as m;
    let mut b = MessageBuilder::new(m::ID, m::GROUPS);
    b.root
        .put(m::TRANSACT_TIME, transact_time_ns)
        .put(m::MATCH_EVENT_INDICATOR, 0x81);
    for e in entries {
        b = b.entry(g::INDEX, |x| {
            x.put_signed(g::MD_ENTRY_PX, e.md_entry_px)
                .put_signed(g::MD_ENTRY_SIZE, i64::from(e.md_entry_size))
                .put_signed(g::SECURITY_ID, i64::from(e.security_id))
                .put(g::RPT_SEQ, u64::from(e.rpt_seq))
                .put_signed(g::NUMBER_OF_ORDERS, i64::from(e.number_of_orders))
                .put_opt(g::AGGRESSOR_SIDE, e.aggressor_side.map(u64::from))
                .put(g::MD_UPDATE_ACTION, u64::from(e.md_update_action))
                .put_opt(g::MD_TRADE_ENTRY_ID, e.md_trade_entry_id.map(u64::from));
        });
    }
    use m::no_order_id_entries as o;
    for &(id, qty) in order_ids {
        b = b.entry(o::INDEX, |x| {
            x.put(o::ORDER_ID, id)
                .put_signed(o::LAST_QTY, i64::from(qty));
        });
    }
    b
}

/// MDIncrementalRefreshTradeSummary48.
pub fn trade_summary(transact_time_ns: u64, entries: &[TradeEntry]) -> Vec<u8> {
    trade_summary_builder(transact_time_ns, entries, &[]).finish()
}

/// MDIncrementalRefreshOrderBook47.
pub fn order_book(transact_time_ns: u64, entries: &[OrderEntry]) -> Vec<u8> {
    use m::no_md_entries as g;
    use schema::md_incremental_refresh_order_book_47 as m;
    let mut b = MessageBuilder::new(m::ID, m::GROUPS);
    b.root
        .put(m::TRANSACT_TIME, transact_time_ns)
        .put(m::MATCH_EVENT_INDICATOR, 0x84);
    for e in entries {
        b = b.entry(g::INDEX, |x| {
            x.put_opt(g::ORDER_ID, e.order_id)
                .put_opt(g::MD_ORDER_PRIORITY, e.md_order_priority)
                .put_signed_opt(g::MD_ENTRY_PX, e.md_entry_px)
                .put_signed_opt(g::MD_DISPLAY_QTY, e.md_display_qty.map(i64::from))
                .put_signed(g::SECURITY_ID, i64::from(e.security_id))
                .put(g::MD_UPDATE_ACTION, u64::from(e.md_update_action))
                .put(g::MD_ENTRY_TYPE, u64::from(e.md_entry_type));
        });
    }
    b.finish()
}

/// MDIncrementalRefreshVolume37.
pub fn volume(transact_time_ns: u64, entries: &[VolumeEntry]) -> Vec<u8> {
    use m::no_md_entries as g;
    use schema::md_incremental_refresh_volume_37 as m;
    let mut b = MessageBuilder::new(m::ID, m::GROUPS);
    b.root
        .put(m::TRANSACT_TIME, transact_time_ns)
        .put(m::MATCH_EVENT_INDICATOR, 0x82);
    for e in entries {
        b = b.entry(g::INDEX, |x| {
            x.put_signed(g::MD_ENTRY_SIZE, i64::from(e.md_entry_size))
                .put_signed(g::SECURITY_ID, i64::from(e.security_id))
                .put(g::RPT_SEQ, u64::from(e.rpt_seq))
                .put(g::MD_UPDATE_ACTION, u64::from(e.md_update_action));
        });
    }
    b.finish()
}

/// SecurityStatus30 of one instrument (`security_id`) or a whole group (`None`).
pub fn security_status(
    transact_time_ns: u64,
    security_group: &[u8],
    security_id: Option<i32>,
    status: u8,
) -> Vec<u8> {
    use schema::security_status_30 as m;
    let mut b = MessageBuilder::new(m::ID, &[]);
    b.root
        .put(m::TRANSACT_TIME, transact_time_ns)
        .put_text(m::SECURITY_GROUP, security_group)
        .put_text(m::ASSET, b"ES")
        .put_signed_opt(m::SECURITY_ID, security_id.map(i64::from))
        .put(m::MATCH_EVENT_INDICATOR, 0x80)
        .put(m::SECURITY_TRADING_STATUS, u64::from(status))
        .put(m::HALT_REASON, 0)
        .put(m::SECURITY_TRADING_EVENT, 0);
    b.finish()
}

/// ChannelReset4 of channel `appl_id`.
pub fn channel_reset(transact_time_ns: u64, appl_id: i16) -> Vec<u8> {
    use m::no_md_entries as g;
    use schema::channel_reset_4 as m;
    let mut b = MessageBuilder::new(m::ID, m::GROUPS);
    b.root
        .put(m::TRANSACT_TIME, transact_time_ns)
        .put(m::MATCH_EVENT_INDICATOR, 0x80);
    b.entry(g::INDEX, |x| {
        x.put_signed(g::APPL_ID, i64::from(appl_id));
    })
    .finish()
}

/// AdminHeartbeat12.
pub fn heartbeat() -> Vec<u8> {
    MessageBuilder::new(schema::admin_heartbeat_12::ID, &[]).finish()
}

/// MDInstrumentDefinitionFuture54 (its groups empty).
pub fn instrument_definition_future(
    security_id: i32,
    symbol: &[u8],
    security_group: &[u8],
) -> Vec<u8> {
    use schema::md_instrument_definition_future_54 as m;
    let mut b = MessageBuilder::new(m::ID, m::GROUPS);
    b.root
        .put(m::SECURITY_UPDATE_ACTION, u64::from(b'A'))
        .put_text(m::SECURITY_GROUP, security_group)
        .put_text(m::ASSET, security_group)
        .put_text(m::SYMBOL, symbol)
        .put_signed(m::SECURITY_ID, i64::from(security_id));
    b.finish()
}

/// SnapshotFullRefresh52 (no entries).
pub fn snapshot_full_refresh(
    last_msg_seq_num_processed: u32,
    security_id: i32,
    rpt_seq: u32,
    transact_time_ns: u64,
) -> Vec<u8> {
    use schema::snapshot_full_refresh_52 as m;
    let mut b = MessageBuilder::new(m::ID, m::GROUPS);
    b.root
        .put(
            m::LAST_MSG_SEQ_NUM_PROCESSED,
            u64::from(last_msg_seq_num_processed),
        )
        .put(m::TOT_NUM_REPORTS, 1)
        .put_signed(m::SECURITY_ID, i64::from(security_id))
        .put(m::RPT_SEQ, u64::from(rpt_seq))
        .put(m::TRANSACT_TIME, transact_time_ns);
    b.finish()
}
