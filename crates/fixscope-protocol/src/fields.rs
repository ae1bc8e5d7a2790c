//! Field access by name, the seam's third half: the fields of a protocol's order messages
//! that `--by` groups by and the records keep, named as the protocol's spec names them
//! (OUCH 4.2's `Stock`, iLink 3's `SecurityID`), and their values read from a framed
//! message as text.
//!
//! A protocol lists its fields ([`OrderFields::FIELDS`]); the run picks the ones asked for
//! once ([`FieldSelection::pick`], a name matched without regard to case, or one of its
//! aliases); each message's values are then written into a caller's [`FieldValues`] in
//! place — fixed buffers, no allocation — and only when a `--by` or the records ask for
//! them: a run without either never reads a field.

use fixscope_model::order::MAX_BY_TAGS;

/// The most fields one selection picks: `--by`'s (at most [`MAX_BY_TAGS`]) or the
/// records' roles (instrument, side, account).
pub const MAX_PICKED: usize = if MAX_BY_TAGS > 3 { MAX_BY_TAGS } else { 3 };

/// The longest value kept, in bytes (a decimal `i64` is at most 20; OUCH's symbols,
/// tokens and ClOrdIDs at most 14): a longer one is cut there.
pub const VALUE_BYTES: usize = 24;

/// What a field is to the records' columns (`symbol`, `side`, `account`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The instrument: OUCH's Stock / Symbol, iLink 3's SecurityID.
    Instrument,
    Side,
    /// Who the order is for: OUCH 4.2's Firm.
    Account,
}

impl Role {
    /// The records' roles, in their columns' order.
    pub const ALL: [Role; 3] = [Role::Instrument, Role::Side, Role::Account];
}

/// One field a protocol can give by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldName {
    /// As the protocol's spec names it (what reports show).
    pub name: &'static str,
    /// Other names it answers to (another version's name of the same field).
    pub aliases: &'static [&'static str],
    /// Which records column it fills, if any.
    pub role: Option<Role>,
}

impl FieldName {
    /// Whether `asked` names this field (case-insensitive, aliases too).
    pub fn answers_to(&self, asked: &str) -> bool {
        let asked = asked.trim();
        self.name.eq_ignore_ascii_case(asked)
            || self.aliases.iter().any(|a| a.eq_ignore_ascii_case(asked))
    }
}

/// The field of `fields` that `asked` names.
pub fn find(fields: &'static [FieldName], asked: &str) -> Option<&'static FieldName> {
    fields.iter().find(|f| f.answers_to(asked))
}

/// The names of `fields`, for an error that says what there is: `Stock, Side, Firm`.
pub fn names(fields: &[FieldName]) -> String {
    let names: Vec<&str> = fields.iter().map(|f| f.name).collect();
    names.join(", ")
}

/// Which of a protocol's fields each position asks for (a `--by` list, or the records'
/// roles): position `i` is the index into [`OrderFields::FIELDS`] of the field asked
/// there, `None` where the protocol has none of that name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FieldSelection {
    picks: [Option<u8>; MAX_PICKED],
}

impl FieldSelection {
    /// The fields of `fields` named by `asked`, position by position (at most
    /// [`MAX_PICKED`]; a name of none of them picks nothing there).
    pub fn pick<'n>(fields: &[FieldName], asked: impl IntoIterator<Item = &'n str>) -> Self {
        let mut picks = [None; MAX_PICKED];
        for (slot, name) in picks.iter_mut().zip(asked) {
            *slot = fields
                .iter()
                .position(|f| f.answers_to(name))
                .map(|i| i as u8);
        }
        FieldSelection { picks }
    }

    /// The fields of `fields` with the records' roles, in [`Role::ALL`]'s order.
    pub fn roles(fields: &[FieldName]) -> Self {
        let mut picks = [None; MAX_PICKED];
        for (slot, role) in picks.iter_mut().zip(Role::ALL) {
            *slot = fields
                .iter()
                .position(|f| f.role == Some(role))
                .map(|i| i as u8);
        }
        FieldSelection { picks }
    }

    /// Whether nothing is picked (no value is ever read).
    pub fn is_empty(&self) -> bool {
        self.picks.iter().all(Option::is_none)
    }

    /// Each position picked, with the index of its field.
    pub fn picked(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.picks
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.map(|f| (i, usize::from(f))))
    }
}

/// One message's values of a selection's fields, as text, by position (empty: the
/// message has no such field). Fixed buffers: filled in place for each message.
#[derive(Clone, Copy, Debug)]
pub struct FieldValues {
    text: [[u8; VALUE_BYTES]; MAX_PICKED],
    len: [u8; MAX_PICKED],
}

impl Default for FieldValues {
    fn default() -> Self {
        FieldValues {
            text: [[0; VALUE_BYTES]; MAX_PICKED],
            len: [0; MAX_PICKED],
        }
    }
}

impl FieldValues {
    /// Every value empty.
    pub fn clear(&mut self) {
        self.len = [0; MAX_PICKED];
    }

    /// Position `i`'s value is `bytes` (cut at [`VALUE_BYTES`]).
    pub fn set(&mut self, i: usize, bytes: &[u8]) {
        let n = bytes.len().min(VALUE_BYTES);
        self.text[i][..n].copy_from_slice(&bytes[..n]);
        self.len[i] = n as u8;
    }

    /// Position `i`'s value is `n` in decimal.
    pub fn set_decimal(&mut self, i: usize, n: i64) {
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        let mut rest = n.unsigned_abs();
        loop {
            at -= 1;
            digits[at] = b'0' + (rest % 10) as u8;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        if n < 0 {
            at -= 1;
            digits[at] = b'-';
        }
        self.set(i, &digits[at..]);
    }

    /// Position `i`'s value (empty when absent).
    pub fn get(&self, i: usize) -> &[u8] {
        &self.text[i][..usize::from(self.len[i])]
    }

    /// The first [`MAX_BY_TAGS`] values, as `--by`'s groups take them.
    pub fn by_values(&self) -> [&[u8]; MAX_BY_TAGS] {
        std::array::from_fn(|i| self.get(i))
    }
}

/// A protocol's fields by name: what it lists and how one framed message's are read.
pub trait OrderFields {
    /// Every field it gives, named as its spec names them.
    const FIELDS: &'static [FieldName];

    /// Writes `frame`'s values of the `picked` fields into `out` (cleared first); a
    /// message without one (a cancel without a symbol, a heartbeat) leaves it empty.
    /// `frame` is one framed message as the protocol's framer gave it, of either side.
    fn read(frame: &[u8], picked: &FieldSelection, out: &mut FieldValues);
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIELDS: &[FieldName] = &[
        FieldName {
            name: "Stock",
            aliases: &["Symbol"],
            role: Some(Role::Instrument),
        },
        FieldName {
            name: "Side",
            aliases: &[],
            role: Some(Role::Side),
        },
    ];

    #[test]
    fn names_are_matched_without_case_and_by_alias() {
        let s = FieldSelection::pick(FIELDS, ["side", "SYMBOL", "Firm"]);
        assert_eq!(s.picked().collect::<Vec<_>>(), [(0, 1), (1, 0)]);
        assert!(!s.is_empty());
        assert!(FieldSelection::pick(FIELDS, ["55"]).is_empty());
        assert_eq!(find(FIELDS, "stock").map(|f| f.name), Some("Stock"));
        assert_eq!(names(FIELDS), "Stock, Side");
        let r = FieldSelection::roles(FIELDS);
        assert_eq!(r.picked().collect::<Vec<_>>(), [(0, 0), (1, 1)]);
    }

    #[test]
    fn values_are_kept_in_place_and_numbers_in_decimal() {
        let mut v = FieldValues::default();
        v.set(0, b"AAPL");
        v.set_decimal(1, -42_000);
        v.set_decimal(2, 0);
        assert_eq!(v.by_values(), [&b"AAPL"[..], b"-42000", b"0"]);
        v.set_decimal(0, i64::MIN);
        assert_eq!(v.get(0), b"-9223372036854775808");
        v.set(1, &[b'x'; 40]);
        assert_eq!(v.get(1).len(), VALUE_BYTES);
        v.clear();
        assert_eq!(v.by_values(), [&b""[..]; 3]);
    }
}
