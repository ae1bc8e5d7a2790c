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
///
/// With `--leg` (a router's sessions, fixscope-hops), the chain of one order across the host:
///
/// | stage           | from                               | to                                     |
/// |-----------------|------------------------------------|----------------------------------------|
/// | `hop_out`       | the parent request in (up leg)     | a child request out (down leg)          |
/// | `venue_rtt`     | a child request out                | the venue's first response to it       |
/// | `hop_back`      | the venue's first response in      | the parent's response of the same ExecType out |
/// | `client_rtt`    | the parent request in              | the parent's first response out        |
/// | `tick_to_order` | the last market-data update (md leg) for the child's symbol | a child the host originated |
///
/// With `--tick-link` (binary market data, `--md`), tick-to-trade for any order protocol:
///
/// | stage           | from                                         | to                          |
/// |-----------------|----------------------------------------------|-----------------------------|
/// | `tick_to_order` | the market-data packet the order's id names (its first copy, A or B) | the order's request |
/// | `tick_to_ack`   | that packet                                  | the order's first response  |
///
/// With `--point` (one session captured at two points, crate::points), the time of one
/// order split between the host nearer the acceptor and the wire:
///
/// | stage           | from                                   | to                                  |
/// |-----------------|----------------------------------------|-------------------------------------|
/// | `residence`     | the request at the near point          | the first response at the near point (its clock only) |
/// | `wire_rtt`      | the far point's round trip             | minus `residence` (each in its own clock) |
/// | `one_way_fwd`   | the request at the far point           | the request at the near point (at the estimated clock offset, ± its uncertainty) |
/// | `one_way_rev`   | the response at the near point         | the response at the far point (the same) |
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
    HopOut,
    VenueRtt,
    HopBack,
    ClientRtt,
    TickToOrder,
    TickToAck,
    Residence,
    WireRtt,
    OneWayFwd,
    OneWayRev,
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

    /// The hop stages (`--leg`), shown only when legs are given.
    pub const HOPS: [Stage; 5] = [
        Stage::HopOut,
        Stage::VenueRtt,
        Stage::HopBack,
        Stage::ClientRtt,
        Stage::TickToOrder,
    ];

    /// The tick-to-trade stages (`--tick-link`), shown only when a link is given
    /// (`tick_to_order` also with `--leg`, among the hop stages).
    pub const TICKS: [Stage; 2] = [Stage::TickToOrder, Stage::TickToAck];

    /// The two-point stages (`--point`), shown only when points are given.
    pub const POINTS: [Stage; 4] = [
        Stage::Residence,
        Stage::WireRtt,
        Stage::OneWayFwd,
        Stage::OneWayRev,
    ];

    /// The two one-way stages: figures at an estimated clock offset, with its uncertainty.
    #[inline]
    pub fn is_one_way(self) -> bool {
        matches!(self, Stage::OneWayFwd | Stage::OneWayRev)
    }

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
        Stage::HopOut,
        Stage::VenueRtt,
        Stage::HopBack,
        Stage::ClientRtt,
        Stage::TickToOrder,
        Stage::TickToAck,
        Stage::Residence,
        Stage::WireRtt,
        Stage::OneWayFwd,
        Stage::OneWayRev,
    ];

    /// How many stages there are (the size of per-stage arrays).
    pub const COUNT: usize = 18;

    /// The stages a run shows: [`Stage::ALL`], then [`Stage::BREAKDOWN`] with
    /// `--breakdown`, [`Stage::HOPS`] with `--leg`, [`Stage::TICKS`] with `--tick-link`,
    /// [`Stage::POINTS`] with `--point`.
    pub fn shown(breakdown: bool, hops: bool, points: bool) -> &'static [Stage] {
        Stage::shown_with(breakdown, hops, points, false)
    }

    /// [`Stage::shown`], with the tick-to-trade stages when `ticks`.
    pub fn shown_with(breakdown: bool, hops: bool, points: bool, ticks: bool) -> &'static [Stage] {
        let mask = usize::from(breakdown)
            | usize::from(hops) << 1
            | usize::from(points) << 2
            | usize::from(ticks) << 3;
        let (stages, len) = &SHOWN[mask];
        &stages[..*len]
    }

    /// The stage of a name in reports, any stage.
    pub fn from_name(name: &str) -> Option<Stage> {
        Stage::EVERY.into_iter().find(|s| s.name() == name)
    }

    /// The name used in reports and the JSON schema.
    #[inline]
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
            Stage::HopOut => "hop_out",
            Stage::VenueRtt => "venue_rtt",
            Stage::HopBack => "hop_back",
            Stage::ClientRtt => "client_rtt",
            Stage::TickToOrder => "tick_to_order",
            Stage::TickToAck => "tick_to_ack",
            Stage::Residence => "residence",
            Stage::WireRtt => "wire_rtt",
            Stage::OneWayFwd => "one_way_fwd",
            Stage::OneWayRev => "one_way_rev",
        }
    }

    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }
}

/// The stages shown per combination of the optional families (bit 0 `--breakdown`, bit 1
/// `--leg`, bit 2 `--point`, bit 3 `--tick-link`), in [`Stage::EVERY`]'s order: built
/// once at compile time.
static SHOWN: [([Stage; Stage::COUNT], usize); 16] = {
    let mut table = [([Stage::FirstResponse; Stage::COUNT], 0); 16];
    let mut mask = 0;
    while mask < 16 {
        let mut len = 0;
        let mut i = 0;
        while i < Stage::COUNT {
            let family = match i {
                0..=3 => true,
                4..=7 => mask & 1 != 0,
                8..=11 => mask & 2 != 0,
                // tick_to_order: a hop stage and a tick stage.
                12 => mask & (2 | 8) != 0,
                13 => mask & 8 != 0,
                _ => mask & 4 != 0,
            };
            if family {
                table[mask].0[len] = Stage::EVERY[i];
                len += 1;
            }
            i += 1;
        }
        table[mask].1 = len;
        mask += 1;
    }
    table
};

/// Request message types broken down in reports (named by their MsgType in every output).
///
/// A NewOrderMultileg (35=AB) is one request under its ClOrdID; a NewOrderList (35=E) and
/// a NewOrderCross (35=s) are one request per order of their NoOrders (73) or NoSides (552)
/// group, each under its own ClOrdID ([`RequestType::has_order_group`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RequestType {
    NewOrder,
    Cancel,
    Replace,
    NewOrderMultileg,
    NewOrderList,
    NewOrderCross,
}

impl RequestType {
    /// Every request type, indexed by [`RequestType::index`] (reports list them in this
    /// order, those with figures only).
    pub const ALL: [RequestType; RequestType::COUNT] = [
        RequestType::NewOrder,
        RequestType::Cancel,
        RequestType::Replace,
        RequestType::NewOrderMultileg,
        RequestType::NewOrderList,
        RequestType::NewOrderCross,
    ];

    /// How many request types there are (the size of per-type arrays).
    pub const COUNT: usize = 6;

    #[inline]
    pub fn from_msg_type(msg_type: &[u8]) -> Option<Self> {
        match msg_type {
            b"D" => Some(RequestType::NewOrder),
            b"F" => Some(RequestType::Cancel),
            b"G" => Some(RequestType::Replace),
            b"AB" => Some(RequestType::NewOrderMultileg),
            b"E" => Some(RequestType::NewOrderList),
            b"s" => Some(RequestType::NewOrderCross),
            _ => None,
        }
    }

    /// The FIX MsgType (35) value.
    #[inline]
    pub fn msg_type(self) -> &'static str {
        match self {
            RequestType::NewOrder => "D",
            RequestType::Cancel => "F",
            RequestType::Replace => "G",
            RequestType::NewOrderMultileg => "AB",
            RequestType::NewOrderList => "E",
            RequestType::NewOrderCross => "s",
        }
    }

    /// Whether one message of this type carries several orders, each in an entry of a
    /// repeating group with its own ClOrdID: a NewOrderList's NoOrders (73), whose entries
    /// begin with ClOrdID (11), or a NewOrderCross's NoSides (552), whose entries begin
    /// with Side (54). Returns the tag each entry begins with (numbers: the vocabulary lies
    /// below `fix`).
    #[inline]
    pub fn has_order_group(self) -> Option<u32> {
        match self {
            RequestType::NewOrderList => Some(11),
            RequestType::NewOrderCross => Some(54),
            _ => None,
        }
    }

    /// Whether the request cancels or replaces an earlier order (named by its OrigClOrdID).
    #[inline]
    pub fn amends(self) -> bool {
        matches!(self, RequestType::Cancel | RequestType::Replace)
    }

    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }
}
