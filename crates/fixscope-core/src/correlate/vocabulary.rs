//! The stages fixscope measures and the request types it breaks them down by.

/// The latency stages fixscope measures.
///
/// | stage            | from            | to                                                      |
/// |------------------|-----------------|---------------------------------------------------------|
/// | `first_response` | request         | first 35=8/35=9 for the key                             |
/// | `ack`            | request         | first acknowledgement: 150=0/A/4/5/6/E, a reject 150=8, or 35=9 |
/// | `fill`           | request         | first execution: 150=F, or 150=1/2 (FIX 4.2 and older)  |
/// | `ack_to_fill`    | the ack         | that first execution                                    |
///
/// With `--breakdown` (live), the host's own split of `first_response` (crate::breakdown):
///
/// | stage           | from (server role)                 | to                                    |
/// |-----------------|------------------------------------|---------------------------------------|
/// | `wire_to_read`  | request's last byte at TC ingress  | return of the read holding that byte   |
/// | `app`           | that read's return                 | entry of the write holding the response's first byte |
/// | `write_to_wire` | that write's entry                 | the response's first byte at TC egress |
/// | `sched_delay`   | the reading thread's wakeup        | its getting a CPU (when it slept waiting for the request) |
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stage {
    FirstResponse,
    Ack,
    Fill,
    AckToFill,
    WireToRead,
    App,
    WriteToWire,
    SchedDelay,
}

impl Stage {
    /// The order-latency stages every run measures (what every output always shows).
    pub const ALL: [Stage; 4] = [
        Stage::FirstResponse,
        Stage::Ack,
        Stage::Fill,
        Stage::AckToFill,
    ];

    /// The in-host breakdown stages (`--breakdown`), shown only when it is on.
    pub const BREAKDOWN: [Stage; 4] = [
        Stage::WireToRead,
        Stage::App,
        Stage::WriteToWire,
        Stage::SchedDelay,
    ];

    /// Every stage, indexed by [`Stage::index`].
    pub const EVERY: [Stage; Stage::COUNT] = [
        Stage::FirstResponse,
        Stage::Ack,
        Stage::Fill,
        Stage::AckToFill,
        Stage::WireToRead,
        Stage::App,
        Stage::WriteToWire,
        Stage::SchedDelay,
    ];

    /// How many stages there are (the size of per-stage arrays).
    pub const COUNT: usize = 8;

    /// The stage of a name in reports, any stage.
    pub fn from_name(name: &str) -> Option<Stage> {
        Stage::EVERY.into_iter().find(|s| s.name() == name)
    }

    /// The name used in reports and the JSON schema.
    pub fn name(self) -> &'static str {
        match self {
            Stage::FirstResponse => "first_response",
            Stage::Ack => "ack",
            Stage::Fill => "fill",
            Stage::AckToFill => "ack_to_fill",
            Stage::WireToRead => "wire_to_read",
            Stage::App => "app",
            Stage::WriteToWire => "write_to_wire",
            Stage::SchedDelay => "sched_delay",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

/// Request message types broken down in reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
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
