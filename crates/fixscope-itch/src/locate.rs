//! Stock Locate → symbol. Most ITCH messages (Order Executed, Order Delete, ...) name
//! their instrument by the Stock Locate code only; the day's Stock Directory (`R`)
//! messages say which symbol each code is. Codes are assigned per day, so per MoldUDP64
//! session: a message of another session than the map's clears it first.

use std::collections::HashMap;

use crate::itch50::{Message, Symbol};
use crate::moldudp64::Session;

#[derive(Debug, Default)]
pub struct LocateMap {
    session: Option<Session>,
    symbols: HashMap<u16, Symbol>,
}

impl LocateMap {
    pub fn new() -> Self {
        Self::default()
    }

    /// Learns from one message of `session` (a Stock Directory maps its locate; a
    /// message of a new session clears the map first).
    pub fn on_message(&mut self, session: Session, message: &Message) {
        if self.session != Some(session) {
            self.symbols.clear();
            self.session = Some(session);
        }
        if let Message::StockDirectory(d) = message {
            self.symbols.insert(d.header.stock_locate, d.stock);
        }
    }

    /// The symbol of `stock_locate` in the current session.
    pub fn symbol(&self, stock_locate: u16) -> Option<Symbol> {
        self.symbols.get(&stock_locate).copied()
    }

    /// The symbol a message is about: its own, or its locate's.
    pub fn symbol_of(&self, message: &Message) -> Option<Symbol> {
        message
            .stock()
            .or_else(|| self.symbol(message.header().stock_locate))
    }

    pub fn len(&self) -> usize {
        self.symbols.len()
    }

    pub fn is_empty(&self) -> bool {
        self.symbols.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::itch_header_of;
    use crate::itch50::StockDirectory;

    fn directory(locate: u16, stock: &[u8]) -> Message {
        Message::StockDirectory(StockDirectory {
            header: itch_header_of(b'R', locate, 0),
            stock: Symbol::new(stock),
            market_category: b'Q',
            financial_status: b'N',
            round_lot_size: 100,
            round_lots_only: b'N',
            issue_classification: b'C',
            issue_sub_type: *b"Z ",
            authenticity: b'P',
            short_sale_threshold: b'N',
            ipo_flag: b'N',
            luld_reference_price_tier: b'1',
            etp_flag: b'N',
            etp_leverage_factor: 0,
            inverse_indicator: b'N',
        })
    }

    #[test]
    fn a_directory_names_later_messages_until_the_session_changes() {
        let day1 = Session::new(b"DAY1");
        let mut map = LocateMap::new();
        map.on_message(day1, &directory(7, b"AAPL"));
        let delete = Message::OrderDelete {
            header: itch_header_of(b'D', 7, 5),
            order_reference_number: 1,
        };
        map.on_message(day1, &delete);
        assert_eq!(map.symbol_of(&delete), Some(Symbol::new(b"AAPL")));
        assert_eq!(
            map.symbol(7).map(|s| s.trimmed().to_vec()),
            Some(b"AAPL".to_vec())
        );
        assert_eq!(map.symbol(8), None);
        map.on_message(Session::new(b"DAY2"), &delete);
        assert!(map.is_empty());
        assert_eq!(map.symbol_of(&delete), None);
    }
}
