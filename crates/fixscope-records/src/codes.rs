//! Columns of a fixed vocabulary (an order's outcome and request type, a message's type and
//! direction): the pipeline's thread pushes one byte per row, the writer turns the bytes
//! into the dictionary of names Parquet stores — the same pages a string column of those
//! names gives, without copying a name per row or hashing it back.

use std::borrow::Cow;
use std::marker::PhantomData;
use std::sync::Arc;

use arrow_array::{ArrayRef, StringArray};
use fixscope_core::correlate::{Outcome, RequestType};
use fixscope_core::Direction;

use crate::strings::Strings;

/// A value of a fixed set of names.
pub(crate) trait Vocabulary: Copy {
    /// Every name, in the order of [`Vocabulary::code`].
    const NAMES: &'static [&'static str];
    /// This value's place in [`Vocabulary::NAMES`] (an exhaustive match: a new value does
    /// not compile until it has a name).
    fn code(self) -> u8;
}

/// One column of codes of `V`.
pub(crate) struct Codes<V> {
    codes: Vec<u8>,
    vocabulary: PhantomData<V>,
}

impl<V> Default for Codes<V> {
    fn default() -> Self {
        Codes {
            codes: Vec::new(),
            vocabulary: PhantomData,
        }
    }
}

impl<V: Vocabulary> Codes<V> {
    #[inline]
    pub(crate) fn push(&mut self, v: V) {
        self.codes.push(v.code());
    }

    pub(crate) fn clear(&mut self) {
        self.codes.clear();
    }

    pub(crate) fn codes(&self) -> &[u8] {
        &self.codes
    }

    /// The column as an Arrow string array of the names (ClickHouse); the column is left
    /// empty.
    pub(crate) fn array(&mut self) -> ArrayRef {
        let codes = std::mem::take(&mut self.codes);
        Arc::new(StringArray::from_iter_values(
            codes.iter().map(|&c| V::NAMES[usize::from(c)]),
        ))
    }
}

/// FIX MsgType (35) of a traced message: the types the correlator traces (requests D, F,
/// G; responses 8, 9) as codes, any other as a string beside them — a message's type is
/// stored as it came, whatever the tracer passes on.
#[derive(Default)]
pub(crate) struct MessageTypes {
    codes: Vec<u8>,
    others: Strings,
}

impl MessageTypes {
    /// The codes' names; code `NAMES.len()` is the next of the others.
    pub(crate) const NAMES: &'static [&'static str] = &["D", "F", "G", "8", "9"];

    #[inline]
    pub(crate) fn push(&mut self, msg_type: &[u8]) {
        let code = match msg_type {
            b"D" => 0,
            b"F" => 1,
            b"G" => 2,
            b"8" => 3,
            b"9" => 4,
            other => {
                self.others.push(other);
                Self::NAMES.len() as u8
            }
        };
        self.codes.push(code);
    }

    pub(crate) fn clear(&mut self) {
        self.codes.clear();
        self.others.clear();
    }

    pub(crate) fn codes(&self) -> &[u8] {
        &self.codes
    }

    pub(crate) fn others(&self) -> &Strings {
        &self.others
    }

    /// The column as an Arrow string array (ClickHouse); the column is left empty.
    pub(crate) fn array(&mut self) -> ArrayRef {
        let codes = std::mem::take(&mut self.codes);
        let others = std::mem::take(&mut self.others);
        let mut next_other = 0;
        let values: Vec<Cow<'_, str>> = codes
            .iter()
            .map(|&c| match Self::NAMES.get(usize::from(c)) {
                Some(name) => Cow::Borrowed(*name),
                None => {
                    let v = others.value(next_other).unwrap_or_default();
                    next_other += 1;
                    String::from_utf8_lossy(v)
                }
            })
            .collect();
        Arc::new(StringArray::from_iter_values(values.iter()))
    }
}

/// An order's request type: FIX's as its MsgType ([`RequestType`]'s codes), a binary
/// protocol's as the protocol names its message (OUCH `O`, iLink 3 `514`), kept as a
/// string beside the codes (as [`MessageTypes`]' others).
#[derive(Default)]
pub(crate) struct RequestTypes {
    codes: Codes<RequestType>,
    others: Strings,
}

impl RequestTypes {
    /// A row of type `t`, named `name` by its protocol (empty: FIX's name of `t`).
    #[inline]
    pub(crate) fn push(&mut self, t: RequestType, name: &[u8]) {
        if name.is_empty() {
            self.codes.push(t);
        } else {
            self.others.push(name);
            self.codes.codes.push(RequestType::NAMES.len() as u8);
        }
    }

    pub(crate) fn clear(&mut self) {
        self.codes.clear();
        self.others.clear();
    }

    pub(crate) fn codes(&self) -> &[u8] {
        self.codes.codes()
    }

    pub(crate) fn others(&self) -> &Strings {
        &self.others
    }

    /// The column as an Arrow string array (ClickHouse); the column is left empty.
    pub(crate) fn array(&mut self) -> ArrayRef {
        let codes = std::mem::take(&mut self.codes.codes);
        let others = std::mem::take(&mut self.others);
        let mut next_other = 0;
        let values: Vec<Cow<'_, str>> = codes
            .iter()
            .map(|&c| match RequestType::NAMES.get(usize::from(c)) {
                Some(name) => Cow::Borrowed(*name),
                None => {
                    let v = others.value(next_other).unwrap_or_default();
                    next_other += 1;
                    String::from_utf8_lossy(v)
                }
            })
            .collect();
        Arc::new(StringArray::from_iter_values(values.iter()))
    }
}

impl Vocabulary for Outcome {
    const NAMES: &'static [&'static str] = &[
        "matched",
        "late",
        "rejected",
        "unanswered",
        "evicted",
        "closed",
        "untracked",
        "response_before_request",
        "answered_after_capture_hole",
    ];
    fn code(self) -> u8 {
        match self {
            Outcome::Matched => 0,
            Outcome::Late => 1,
            Outcome::Rejected => 2,
            Outcome::Unanswered => 3,
            Outcome::Evicted => 4,
            Outcome::Closed => 5,
            Outcome::Untracked => 6,
            Outcome::ResponseBeforeRequest => 7,
            Outcome::AnsweredAfterCaptureHole => 8,
        }
    }
}

impl Vocabulary for RequestType {
    const NAMES: &'static [&'static str] = &["D", "F", "G", "AB", "E", "s"];
    fn code(self) -> u8 {
        match self {
            RequestType::NewOrder => 0,
            RequestType::Cancel => 1,
            RequestType::Replace => 2,
            RequestType::NewOrderMultileg => 3,
            RequestType::NewOrderList => 4,
            RequestType::NewOrderCross => 5,
        }
    }
}

impl Vocabulary for Direction {
    const NAMES: &'static [&'static str] = &["request", "response"];
    fn code(self) -> u8 {
        match self {
            Direction::Request => 0,
            Direction::Response => 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each value's code names it as the core names it (records and counters agree).
    #[test]
    fn codes_name_what_the_core_names() {
        let outcomes = [
            Outcome::Matched,
            Outcome::Late,
            Outcome::Rejected,
            Outcome::Unanswered,
            Outcome::Evicted,
            Outcome::Closed,
            Outcome::Untracked,
            Outcome::ResponseBeforeRequest,
            Outcome::AnsweredAfterCaptureHole,
        ];
        assert_eq!(outcomes.len(), Outcome::NAMES.len());
        for o in outcomes {
            assert_eq!(Outcome::NAMES[usize::from(o.code())], o.name());
        }
        assert_eq!(RequestType::ALL.len(), RequestType::NAMES.len());
        for t in RequestType::ALL {
            assert_eq!(RequestType::NAMES[usize::from(t.code())], t.msg_type());
        }
        assert_eq!(
            Direction::NAMES[usize::from(Direction::Response.code())],
            "response"
        );
        assert_eq!(
            Direction::NAMES[usize::from(Direction::Request.code())],
            "request"
        );
        let mut c = Codes::<Outcome>::default();
        c.push(Outcome::Late);
        c.push(Outcome::Matched);
        let a = c.array();
        let a = a.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(
            a.iter().collect::<Vec<_>>(),
            [Some("late"), Some("matched")]
        );
        assert!(c.codes().is_empty());
    }

    /// A binary protocol's request type keeps its own name, in its row, beside FIX's.
    #[test]
    fn request_types_keep_a_protocols_names() {
        let mut t = RequestTypes::default();
        t.push(RequestType::NewOrder, b"");
        t.push(RequestType::NewOrder, b"O");
        t.push(RequestType::Cancel, b"516");
        t.push(RequestType::Cancel, b"");
        assert_eq!(t.codes(), [0, 6, 6, 1]);
        let a = t.array();
        let a = a.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(
            a.iter().collect::<Vec<_>>(),
            [Some("D"), Some("O"), Some("516"), Some("F")]
        );
        assert!(t.codes().is_empty());
    }

    /// A message type outside the codes keeps its value, in its row.
    #[test]
    fn message_types_keep_every_value() {
        let mut t = MessageTypes::default();
        for v in [&b"8"[..], b"AE", b"D", b"9", b"x\xff", b"G", b"F"] {
            t.push(v);
        }
        assert_eq!(t.codes(), [3, 5, 0, 4, 5, 2, 1]);
        let a = t.array();
        let a = a.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(
            a.iter().map(Option::unwrap).collect::<Vec<_>>(),
            ["8", "AE", "D", "9", "x\u{fffd}", "G", "F"]
        );
        assert!(t.codes().is_empty() && t.others().len() == 0);
    }
}
