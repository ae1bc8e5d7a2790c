//! The stages fixscope measures and the request types it breaks them down by.

/// The latency stages fixscope measures.
///
/// | stage            | from            | to                                                      |
/// |------------------|-----------------|---------------------------------------------------------|
/// | `first_response` | request         | first 35=8/35=9 for the key                             |
/// | `ack`            | request         | first acknowledgement: 150=0/A/4/5/6/E, a reject 150=8, or 35=9 |
/// | `fill`           | request         | first execution: 150=F, or 150=1/2 (FIX 4.2 and older)  |
/// | `ack_to_fill`    | the ack         | that first execution                                    |
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stage {
    FirstResponse,
    Ack,
    Fill,
    AckToFill,
}

impl Stage {
    pub const ALL: [Stage; 4] = [
        Stage::FirstResponse,
        Stage::Ack,
        Stage::Fill,
        Stage::AckToFill,
    ];

    /// The name used in reports and the JSON schema.
    pub fn name(self) -> &'static str {
        match self {
            Stage::FirstResponse => "first_response",
            Stage::Ack => "ack",
            Stage::Fill => "fill",
            Stage::AckToFill => "ack_to_fill",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

/// Request message types broken down in reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RequestType {
    NewOrder,
    Cancel,
    Replace,
}

impl RequestType {
    pub const ALL: [RequestType; 3] = [
        RequestType::NewOrder,
        RequestType::Cancel,
        RequestType::Replace,
    ];

    pub fn from_msg_type(msg_type: &[u8]) -> Option<Self> {
        match msg_type {
            b"D" => Some(RequestType::NewOrder),
            b"F" => Some(RequestType::Cancel),
            b"G" => Some(RequestType::Replace),
            _ => None,
        }
    }

    /// The FIX MsgType (35) value.
    pub fn msg_type(self) -> &'static str {
        match self {
            RequestType::NewOrder => "D",
            RequestType::Cancel => "F",
            RequestType::Replace => "G",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }
}
