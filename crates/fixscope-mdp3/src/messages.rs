//! The MDP 3.0 messages the crate reads, decoded from one message's bytes (MsgSize
//! first) by the schema's generated layouts ([`crate::schema`]): the incremental book,
//! order book, trade summary and volume, security status, channel reset, heartbeat,
//! instrument definitions and the snapshot's full refresh. Any other template — of the
//! schema, or one it does not know (a later version's) — is [`Message::Other`], stepped
//! over by its MsgSize.
//!
//! A message's entries are read lazily by an [`Entries`] iterator over the message's
//! bytes: decoding allocates nothing. A group is checked when the message is decoded
//! (its header and entries inside the message, its entries long enough for the fields
//! read), so iterating cannot fail. Prices are mantissas of the schema's exponent (-9 for
//! the v9 templates); MDUpdateAction, MDEntryType and the other enums are their wire
//! values (MDUpdateAction 0 New, 1 Change, 2 Delete, 3 DeleteThru, 4 DeleteFrom, 5
//! Overlay; MDEntryType the FIX char, `b'0'` Bid, `b'1'` Offer, ...).

use crate::sbe::{Block, DecodeError, Entries, Frame};
use crate::schema::{self, Field};

/// A decoded message.
#[derive(Clone, Copy, Debug)]
pub enum Message<'a> {
    /// MDIncrementalRefreshBook46.
    Book(Book<'a>),
    /// MDIncrementalRefreshOrderBook47.
    OrderBook(OrderBook<'a>),
    /// MDIncrementalRefreshTradeSummary48.
    TradeSummary(TradeSummary<'a>),
    /// MDIncrementalRefreshVolume37.
    Volume(Volume<'a>),
    /// SecurityStatus30.
    SecurityStatus(SecurityStatus<'a>),
    /// ChannelReset4: the channel starts again (a new epoch of its numbering).
    ChannelReset(ChannelReset<'a>),
    /// AdminHeartbeat12.
    Heartbeat,
    /// An instrument definition: MDInstrumentDefinitionFuture54, or any template of the
    /// schema defining an instrument (SecurityID and Symbol in its root).
    InstrumentDefinition(InstrumentDefinition<'a>),
    /// SnapshotFullRefresh52 (snapshot feed).
    SnapshotFullRefresh(SnapshotFullRefresh),
    /// Any other template.
    Other { template_id: u16 },
}

/// MDIncrementalRefreshBook46.
#[derive(Clone, Copy, Debug)]
pub struct Book<'a> {
    pub transact_time_ns: u64,
    pub match_event_indicator: u8,
    pub entries: Entries<'a, BookEntry>,
    /// NoOrderIDEntries' count (its entries are not read; it is stepped over by its
    /// header).
    pub order_id_entries: usize,
}

/// One NoMDEntries entry of a book update.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BookEntry {
    /// Mantissa, exponent -9; `None`: null (a book reset's entry).
    pub md_entry_px: Option<i64>,
    pub md_entry_size: Option<i32>,
    pub security_id: i32,
    pub rpt_seq: u32,
    pub number_of_orders: Option<i32>,
    pub md_price_level: u8,
    pub md_update_action: u8,
    pub md_entry_type: u8,
}

/// MDIncrementalRefreshTradeSummary48.
#[derive(Clone, Copy, Debug)]
pub struct TradeSummary<'a> {
    pub transact_time_ns: u64,
    pub match_event_indicator: u8,
    pub entries: Entries<'a, TradeEntry>,
    pub order_id_entries: usize,
}

/// One NoMDEntries entry of a trade summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TradeEntry {
    /// Mantissa, exponent -9.
    pub md_entry_px: i64,
    pub md_entry_size: i32,
    pub security_id: i32,
    pub rpt_seq: u32,
    pub number_of_orders: i32,
    /// 0 no aggressor, 1 buy, 2 sell; `None`: null.
    pub aggressor_side: Option<u8>,
    pub md_update_action: u8,
    pub md_trade_entry_id: Option<u32>,
}

/// MDIncrementalRefreshOrderBook47.
#[derive(Clone, Copy, Debug)]
pub struct OrderBook<'a> {
    pub transact_time_ns: u64,
    pub match_event_indicator: u8,
    pub entries: Entries<'a, OrderEntry>,
}

/// One NoMDEntries entry of an order book update (no RptSeq: order-level data).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrderEntry {
    pub order_id: Option<u64>,
    pub md_order_priority: Option<u64>,
    pub md_entry_px: Option<i64>,
    pub md_display_qty: Option<i32>,
    pub security_id: i32,
    pub md_update_action: u8,
    pub md_entry_type: u8,
}

/// MDIncrementalRefreshVolume37.
#[derive(Clone, Copy, Debug)]
pub struct Volume<'a> {
    pub transact_time_ns: u64,
    pub match_event_indicator: u8,
    pub entries: Entries<'a, VolumeEntry>,
}

/// One NoMDEntries entry of a volume update.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VolumeEntry {
    pub md_entry_size: i32,
    pub security_id: i32,
    pub rpt_seq: u32,
    pub md_update_action: u8,
}

/// SecurityStatus30: of an instrument (SecurityID) or of a whole security group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SecurityStatus<'a> {
    pub transact_time_ns: u64,
    pub security_group: &'a [u8],
    pub asset: &'a [u8],
    pub security_id: Option<i32>,
    pub match_event_indicator: u8,
    pub security_trading_status: Option<u8>,
    pub halt_reason: u8,
    pub security_trading_event: u8,
}

/// ChannelReset4.
#[derive(Clone, Copy, Debug)]
pub struct ChannelReset<'a> {
    pub transact_time_ns: u64,
    pub match_event_indicator: u8,
    /// Each entry's ApplID (the channel; `None` before schema version 3).
    pub appl_ids: Entries<'a, Option<i16>>,
}

/// An instrument definition's identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InstrumentDefinition<'a> {
    pub template_id: u16,
    pub security_id: i32,
    pub symbol: &'a [u8],
    pub security_group: &'a [u8],
    /// `b'A'` add, `b'D'` delete, `b'M'` modify.
    pub security_update_action: Option<u8>,
}

/// SnapshotFullRefresh52: one instrument's book as of the incremental feed's packet
/// LastMsgSeqNumProcessed and the instrument's RptSeq.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapshotFullRefresh {
    pub last_msg_seq_num_processed: u32,
    pub tot_num_reports: u32,
    pub security_id: i32,
    pub rpt_seq: u32,
    pub transact_time_ns: u64,
    pub entries: usize,
}

fn i32_of(b: &Block<'_>, f: Field) -> Option<i32> {
    b.int(f).map(|v| v as i32)
}

fn u8_of(b: &Block<'_>, f: Field) -> u8 {
    b.uint(f).unwrap_or(0) as u8
}

fn book_entry(b: Block<'_>) -> BookEntry {
    use schema::md_incremental_refresh_book_46::no_md_entries as g;
    BookEntry {
        md_entry_px: b.int(g::MD_ENTRY_PX),
        md_entry_size: i32_of(&b, g::MD_ENTRY_SIZE),
        security_id: i32_of(&b, g::SECURITY_ID).unwrap_or(0),
        rpt_seq: b.uint(g::RPT_SEQ).unwrap_or(0) as u32,
        number_of_orders: i32_of(&b, g::NUMBER_OF_ORDERS),
        md_price_level: u8_of(&b, g::MD_PRICE_LEVEL),
        md_update_action: u8_of(&b, g::MD_UPDATE_ACTION),
        md_entry_type: u8_of(&b, g::MD_ENTRY_TYPE),
    }
}

fn trade_entry(b: Block<'_>) -> TradeEntry {
    use schema::md_incremental_refresh_trade_summary_48::no_md_entries as g;
    TradeEntry {
        md_entry_px: b.int(g::MD_ENTRY_PX).unwrap_or(0),
        md_entry_size: i32_of(&b, g::MD_ENTRY_SIZE).unwrap_or(0),
        security_id: i32_of(&b, g::SECURITY_ID).unwrap_or(0),
        rpt_seq: b.uint(g::RPT_SEQ).unwrap_or(0) as u32,
        number_of_orders: i32_of(&b, g::NUMBER_OF_ORDERS).unwrap_or(0),
        aggressor_side: b.uint(g::AGGRESSOR_SIDE).map(|v| v as u8),
        md_update_action: u8_of(&b, g::MD_UPDATE_ACTION),
        md_trade_entry_id: b.uint(g::MD_TRADE_ENTRY_ID).map(|v| v as u32),
    }
}

fn order_entry(b: Block<'_>) -> OrderEntry {
    use schema::md_incremental_refresh_order_book_47::no_md_entries as g;
    OrderEntry {
        order_id: b.uint(g::ORDER_ID),
        md_order_priority: b.uint(g::MD_ORDER_PRIORITY),
        md_entry_px: b.int(g::MD_ENTRY_PX),
        md_display_qty: i32_of(&b, g::MD_DISPLAY_QTY),
        security_id: i32_of(&b, g::SECURITY_ID).unwrap_or(0),
        md_update_action: u8_of(&b, g::MD_UPDATE_ACTION),
        md_entry_type: u8_of(&b, g::MD_ENTRY_TYPE),
    }
}

fn volume_entry(b: Block<'_>) -> VolumeEntry {
    use schema::md_incremental_refresh_volume_37::no_md_entries as g;
    VolumeEntry {
        md_entry_size: i32_of(&b, g::MD_ENTRY_SIZE).unwrap_or(0),
        security_id: i32_of(&b, g::SECURITY_ID).unwrap_or(0),
        rpt_seq: b.uint(g::RPT_SEQ).unwrap_or(0) as u32,
        md_update_action: u8_of(&b, g::MD_UPDATE_ACTION),
    }
}

fn appl_id(b: Block<'_>) -> Option<i16> {
    use schema::channel_reset_4::no_md_entries as g;
    b.int(g::APPL_ID).map(|v| v as i16)
}

/// The group at `index` of `groups`, required present (a message of a version before
/// it reads as empty) and its entries long enough for `required`.
fn entries<'a, T>(
    f: &Frame<'a>,
    groups: &[schema::Group],
    index: usize,
    required: &[Field],
    read: fn(Block<'a>) -> T,
) -> Result<(Entries<'a, T>, usize), DecodeError> {
    let g = f.group(groups, index)?;
    let g = match g {
        Some(g) => g.require(required)?,
        None => {
            return Err(DecodeError::MissingGroup {
                template_id: f.header.template_id,
                group: groups[index].name,
            })
        }
    };
    Ok((g.entries(read), g.count))
}

/// How many entries the group at `index` has (0 when the message's version predates it).
fn count(f: &Frame<'_>, groups: &[schema::Group], index: usize) -> Result<usize, DecodeError> {
    Ok(f.group(groups, index)?.map_or(0, |g| g.count))
}

/// Decodes one message (MsgSize first, as [`crate::packet::Packet::messages`] gives it).
pub fn decode(message: &[u8]) -> Result<Message<'_>, DecodeError> {
    let f = Frame::parse(message)?;
    let id = f.header.template_id;
    let mei = |field| f.root.uint(field).unwrap_or(0) as u8;
    use schema::*;
    Ok(match id {
        md_incremental_refresh_book_46::ID => {
            use m::no_md_entries as g;
            use md_incremental_refresh_book_46 as m;
            let required = [
                g::SECURITY_ID,
                g::RPT_SEQ,
                g::MD_UPDATE_ACTION,
                g::MD_ENTRY_TYPE,
            ];
            let (entries, _) = entries(&f, m::GROUPS, g::INDEX, &required, book_entry)?;
            Message::Book(Book {
                transact_time_ns: f.required(m::TRANSACT_TIME)?,
                match_event_indicator: mei(m::MATCH_EVENT_INDICATOR),
                entries,
                order_id_entries: count(&f, m::GROUPS, m::no_order_id_entries::INDEX)?,
            })
        }
        md_incremental_refresh_trade_summary_48::ID => {
            use m::no_md_entries as g;
            use md_incremental_refresh_trade_summary_48 as m;
            let required = [g::MD_ENTRY_PX, g::MD_ENTRY_SIZE, g::SECURITY_ID, g::RPT_SEQ];
            let (entries, _) = entries(&f, m::GROUPS, g::INDEX, &required, trade_entry)?;
            Message::TradeSummary(TradeSummary {
                transact_time_ns: f.required(m::TRANSACT_TIME)?,
                match_event_indicator: mei(m::MATCH_EVENT_INDICATOR),
                entries,
                order_id_entries: count(&f, m::GROUPS, m::no_order_id_entries::INDEX)?,
            })
        }
        md_incremental_refresh_order_book_47::ID => {
            use m::no_md_entries as g;
            use md_incremental_refresh_order_book_47 as m;
            let required = [g::SECURITY_ID, g::MD_UPDATE_ACTION];
            let (entries, _) = entries(&f, m::GROUPS, g::INDEX, &required, order_entry)?;
            Message::OrderBook(OrderBook {
                transact_time_ns: f.required(m::TRANSACT_TIME)?,
                match_event_indicator: mei(m::MATCH_EVENT_INDICATOR),
                entries,
            })
        }
        md_incremental_refresh_volume_37::ID => {
            use m::no_md_entries as g;
            use md_incremental_refresh_volume_37 as m;
            let required = [g::MD_ENTRY_SIZE, g::SECURITY_ID, g::RPT_SEQ];
            let (entries, _) = entries(&f, m::GROUPS, g::INDEX, &required, volume_entry)?;
            Message::Volume(Volume {
                transact_time_ns: f.required(m::TRANSACT_TIME)?,
                match_event_indicator: mei(m::MATCH_EVENT_INDICATOR),
                entries,
            })
        }
        security_status_30::ID => {
            use security_status_30 as m;
            let r = &f.root;
            Message::SecurityStatus(SecurityStatus {
                transact_time_ns: f.required(m::TRANSACT_TIME)?,
                security_group: r.text(m::SECURITY_GROUP),
                asset: r.text(m::ASSET),
                security_id: i32_of(r, m::SECURITY_ID),
                match_event_indicator: mei(m::MATCH_EVENT_INDICATOR),
                security_trading_status: r.uint(m::SECURITY_TRADING_STATUS).map(|v| v as u8),
                halt_reason: u8_of(r, m::HALT_REASON),
                security_trading_event: u8_of(r, m::SECURITY_TRADING_EVENT),
            })
        }
        channel_reset_4::ID => {
            use channel_reset_4 as m;
            let (appl_ids, _) = entries(&f, m::GROUPS, m::no_md_entries::INDEX, &[], appl_id)?;
            Message::ChannelReset(ChannelReset {
                transact_time_ns: f.required(m::TRANSACT_TIME)?,
                match_event_indicator: mei(m::MATCH_EVENT_INDICATOR),
                appl_ids,
            })
        }
        admin_heartbeat_12::ID => Message::Heartbeat,
        snapshot_full_refresh_52::ID => {
            use snapshot_full_refresh_52 as m;
            Message::SnapshotFullRefresh(SnapshotFullRefresh {
                last_msg_seq_num_processed: f.required(m::LAST_MSG_SEQ_NUM_PROCESSED)? as u32,
                tot_num_reports: f.required(m::TOT_NUM_REPORTS)? as u32,
                security_id: f.required(m::SECURITY_ID)? as u32 as i32,
                rpt_seq: f.required(m::RPT_SEQ)? as u32,
                transact_time_ns: f.required(m::TRANSACT_TIME)?,
                entries: count(&f, m::GROUPS, m::no_md_entries::INDEX)?,
            })
        }
        _ => match definition_layout(id) {
            Some(l) => Message::InstrumentDefinition(InstrumentDefinition {
                template_id: id,
                security_id: f.required(l.security_id)? as u32 as i32,
                symbol: f.root.text(l.symbol),
                security_group: l.security_group.map_or(&[][..], |g| f.root.text(g)),
                security_update_action: l
                    .security_update_action
                    .and_then(|a| f.root.uint(a))
                    .map(|v| v as u8),
            }),
            None => Message::Other { template_id: id },
        },
    })
}

/// One instrument's update sequence number: (SecurityID, RptSeq).
pub type RptSeqUpdate = (i32, u32);

/// The (SecurityID, RptSeq) of every NoMDEntries entry of a message whose template
/// carries them (the schema's table, [`schema::RPT_SEQ`]: the book, trade summary,
/// volume and statistics templates of every version), lazily; `None` for any other.
pub fn rpt_seq_updates(message: &[u8]) -> Result<Option<RptSeqEntries<'_>>, DecodeError> {
    let f = Frame::parse(message)?;
    let Some(l) = schema::rpt_seq_layout(f.header.template_id) else {
        return Ok(None);
    };
    let Some(g) = f.group(std::slice::from_ref(&l.group), 0)? else {
        return Ok(None);
    };
    let g = g.require(&[l.security_id, l.rpt_seq])?;
    Ok(Some(RptSeqEntries {
        layout: l,
        blocks: g.entries(|b| b),
    }))
}

/// See [`rpt_seq_updates`].
#[derive(Clone, Copy, Debug)]
pub struct RptSeqEntries<'a> {
    layout: &'static schema::RptSeqLayout,
    blocks: Entries<'a, Block<'a>>,
}

impl Iterator for RptSeqEntries<'_> {
    type Item = RptSeqUpdate;

    fn next(&mut self) -> Option<RptSeqUpdate> {
        let b = self.blocks.next()?;
        let sid = i32_of(&b, self.layout.security_id).unwrap_or(0);
        let rpt = b.uint(self.layout.rpt_seq).unwrap_or(0) as u32;
        Some((sid, rpt))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.blocks.size_hint()
    }
}
