//! The last market-data update per symbol (`--leg md`), for `tick_to_order`.

use std::collections::HashMap;

use fixscope_fix::message::Fields;
use fixscope_fix::tag;

/// Symbols remembered at most (a feed of more forgets them all and starts again: a child
/// then finds no tick, counted `tick_missing`, never a wrong one).
const MAX_SYMBOLS: usize = 1 << 20;

#[derive(Default)]
pub(super) struct MarketData {
    last: HashMap<Vec<u8>, u64>,
}

impl MarketData {
    /// A snapshot (35=W) or incremental refresh (35=X) at `ts_ns`: every symbol it names
    /// (an incremental refresh names one per entry).
    pub(super) fn update(&mut self, msg: &[u8], ts_ns: u64) {
        for (t, symbol) in Fields::new(msg) {
            if t != tag::SYMBOL || symbol.is_empty() {
                continue;
            }
            match self.last.get_mut(symbol) {
                Some(at) => *at = ts_ns,
                None => {
                    if self.last.len() >= MAX_SYMBOLS {
                        self.last.clear();
                    }
                    self.last.insert(symbol.to_vec(), ts_ns);
                }
            }
        }
    }

    pub(super) fn last_update(&self, symbol: &[u8]) -> Option<u64> {
        self.last.get(symbol).copied()
    }
}
