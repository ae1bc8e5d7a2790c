//! Tag numbers of the application fields the exchange reads from requests and writes into
//! its answers (the core's `fix::tag` names the ones every FIX message shares).

pub const ACCOUNT: u32 = 1;
pub const AVG_PX: u32 = 6;
pub const CUM_QTY: u32 = 14;
pub const EXEC_ID: u32 = 17;
pub const EXEC_TRANS_TYPE: u32 = 20;
pub const LAST_PX: u32 = 31;
pub const LAST_QTY: u32 = 32;
pub const ORDER_ID: u32 = 37;
pub const ORDER_QTY: u32 = 38;
pub const PRICE: u32 = 44;
pub const SIDE: u32 = 54;
pub const SYMBOL: u32 = 55;
pub const TEXT: u32 = 58;
pub const TRANSACT_TIME: u32 = 60;
pub const EX_DESTINATION: u32 = 100;
pub const CXL_REJ_REASON: u32 = 102;
pub const ORD_REJ_REASON: u32 = 103;
pub const LEAVES_QTY: u32 = 151;
pub const REF_MSG_TYPE: u32 = 372;
pub const BUSINESS_REJECT_REF_ID: u32 = 379;
pub const BUSINESS_REJECT_REASON: u32 = 380;
pub const CXL_REJ_RESPONSE_TO: u32 = 434;
