//! Each OUCH version's requests and responses in neither version's words: the keys made
//! (a 4.2 token without its padding, a 5.0 UserRefNum in decimal), the shares, the
//! response's message type letter.

use crate::session::Key;
use crate::soupbin::trim_spaces;
use crate::{ouch42, ouch50};

/// A request in neither version's words. `number`: a 5.0 UserRefNum (4.2: none).
pub(super) enum Request {
    Enter {
        key: Key,
        number: Option<u32>,
        shares: u32,
    },
    Replace {
        key: Key,
        number: Option<u32>,
        shares: u32,
    },
    Cancel {
        order: Key,
    },
    Modify {
        order: Key,
    },
}

/// A response in neither version's words, with its message type letter.
pub(super) enum Response {
    Accepted {
        key: Key,
        number: Option<u32>,
        shares: u32,
    },
    Replaced {
        key: Key,
        number: Option<u32>,
        previous: Key,
        shares: u32,
    },
    Canceled {
        key: Key,
        decrement: u32,
    },
    AiqCanceled {
        key: Key,
        decrement: u32,
    },
    Executed {
        key: Key,
        shares: u32,
    },
    Rejected {
        key: Key,
    },
    CancelPending {
        key: Key,
    },
    CancelReject {
        key: Key,
    },
    OrderModified {
        key: Key,
        shares: u32,
    },
    Unsolicited {
        key: Key,
    },
}

/// A 4.2 Order Token's key: without its padding.
fn token(t: &[u8]) -> Key {
    Key::new(trim_spaces(t))
}

pub(super) fn request42(m: &ouch42::Message<'_>) -> Option<Request> {
    use ouch42::Message as M;
    Some(match *m {
        M::EnterOrder(o) => Request::Enter {
            key: token(o.token),
            number: None,
            shares: o.shares,
        },
        M::ReplaceOrder(r) => Request::Replace {
            key: token(r.replacement_token),
            number: None,
            shares: r.shares,
        },
        M::CancelOrder { token: t, .. } => Request::Cancel { order: token(t) },
        M::ModifyOrder { token: t, .. } => Request::Modify { order: token(t) },
        _ => return None,
    })
}

pub(super) fn request50(m: &ouch50::Message<'_>) -> Option<Request> {
    use ouch50::Message as M;
    Some(match *m {
        M::EnterOrder(o) => Request::Enter {
            key: Key::decimal(o.user_ref_num),
            number: Some(o.user_ref_num),
            shares: o.quantity,
        },
        M::ReplaceOrder(r) => Request::Replace {
            key: Key::decimal(r.user_ref_num),
            number: Some(r.user_ref_num),
            shares: r.quantity,
        },
        M::CancelOrder { user_ref_num, .. } => Request::Cancel {
            order: Key::decimal(user_ref_num),
        },
        M::ModifyOrder { user_ref_num, .. } => Request::Modify {
            order: Key::decimal(user_ref_num),
        },
        _ => return None,
    })
}

pub(super) fn response42(m: &ouch42::Message<'_>) -> Option<(Response, u8)> {
    use ouch42::Message as M;
    Some(match *m {
        M::Accepted(a) => (
            Response::Accepted {
                key: token(a.token),
                number: None,
                shares: a.shares,
            },
            b'A',
        ),
        M::Replaced(r) => (
            Response::Replaced {
                key: token(r.accepted.token),
                number: None,
                previous: token(r.previous_token),
                shares: r.accepted.shares,
            },
            b'U',
        ),
        M::Canceled {
            token: t,
            decrement_shares,
            ..
        } => (
            Response::Canceled {
                key: token(t),
                decrement: decrement_shares,
            },
            b'C',
        ),
        M::AiqCanceled {
            token: t,
            decrement_shares,
            ..
        } => (
            Response::AiqCanceled {
                key: token(t),
                decrement: decrement_shares,
            },
            b'D',
        ),
        M::Executed {
            token: t,
            executed_shares,
            ..
        } => (
            Response::Executed {
                key: token(t),
                shares: executed_shares,
            },
            b'E',
        ),
        M::Rejected { token: t, .. } => (Response::Rejected { key: token(t) }, b'J'),
        M::CancelPending { token: t, .. } => (Response::CancelPending { key: token(t) }, b'P'),
        M::CancelReject { token: t, .. } => (Response::CancelReject { key: token(t) }, b'I'),
        M::OrderModified {
            token: t, shares, ..
        } => (
            Response::OrderModified {
                key: token(t),
                shares,
            },
            b'M',
        ),
        M::BrokenTrade { token: t, .. } => (Response::Unsolicited { key: token(t) }, b'B'),
        M::PriceCorrection { token: t, .. } => (Response::Unsolicited { key: token(t) }, b'K'),
        _ => return None,
    })
}

pub(super) fn response50(m: &ouch50::Message<'_>) -> Option<(Response, u8)> {
    use ouch50::Message as M;
    let d = Key::decimal;
    Some(match *m {
        M::Accepted(a) => (
            Response::Accepted {
                key: d(a.user_ref_num),
                number: Some(a.user_ref_num),
                shares: a.quantity,
            },
            b'A',
        ),
        M::Replaced {
            orig_user_ref_num,
            accepted: a,
        } => (
            Response::Replaced {
                key: d(a.user_ref_num),
                number: Some(a.user_ref_num),
                previous: d(orig_user_ref_num),
                shares: a.quantity,
            },
            b'U',
        ),
        M::Canceled {
            user_ref_num,
            quantity,
            ..
        } => (
            Response::Canceled {
                key: d(user_ref_num),
                decrement: quantity,
            },
            b'C',
        ),
        M::AiqCanceled {
            user_ref_num,
            decrement_shares,
            ..
        } => (
            Response::AiqCanceled {
                key: d(user_ref_num),
                decrement: decrement_shares,
            },
            b'D',
        ),
        M::Executed {
            user_ref_num,
            quantity,
            ..
        } => (
            Response::Executed {
                key: d(user_ref_num),
                shares: quantity,
            },
            b'E',
        ),
        M::Rejected { user_ref_num, .. } => (
            Response::Rejected {
                key: d(user_ref_num),
            },
            b'J',
        ),
        M::CancelPending { user_ref_num, .. } => (
            Response::CancelPending {
                key: d(user_ref_num),
            },
            b'P',
        ),
        M::CancelReject { user_ref_num, .. } => (
            Response::CancelReject {
                key: d(user_ref_num),
            },
            b'I',
        ),
        M::OrderModified {
            user_ref_num,
            quantity,
            ..
        } => (
            Response::OrderModified {
                key: d(user_ref_num),
                shares: quantity,
            },
            b'M',
        ),
        M::BrokenTrade { user_ref_num, .. } => (
            Response::Unsolicited {
                key: d(user_ref_num),
            },
            b'B',
        ),
        _ => return None,
    })
}
