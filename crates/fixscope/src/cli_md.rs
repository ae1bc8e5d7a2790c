//! `--md` and `--tick-link` on `fixscope pcap`: the market-data feeds a capture holds
//! beside its orders, and tick-to-trade over them (docs/market-data.md).

use clap::Args;

#[derive(Args, Debug, Clone, Default)]
pub struct MdArgs {
    /// Market data: a feed (`GROUP:PORT`, or a port alone) or an A/B pair
    /// (`GROUP:PORT,GROUP:PORT`, A first) of PROTO (`itch50`: Nasdaq TotalView-ITCH 5.0
    /// over MoldUDP64; `mdp3`: a CME MDP 3.0 incremental channel). Repeatable. The summary gives each feed's packets, messages, gaps
    /// and duplicates by the protocol's sequence numbers, and each pair's arbitration
    /// (who came first, by how much; what each alone lost). The captures are read once
    /// more for it (not from stdin). docs/market-data.md.
    #[arg(long = "md", value_name = "GROUP:PORT[,GROUP:PORT]=PROTO")]
    pub md: Vec<fixscope_core::feeds::MdSpec>,
    /// Tick-to-trade: `key[:START[:LEN]]` — the digits of each order's key (ClOrdID, OUCH
    /// token or UserRefNum, iLink 3 OrderRequestID) from START (0-based), LEN long (to its
    /// end by default), are the sequence number of the market-data packet it answers
    /// (MoldUDP64 message sequence number, MDP 3.0 MsgSeqNum), on the one `--md` feed or,
    /// after `@`, the one named as given to `--md` (`key:3:8@233.54.12.1:26400`). Adds the
    /// stages `tick_to_order` and `tick_to_ack`; every answered order lands in one
    /// `ticks_*` count, never guessed (docs/market-data.md).
    #[arg(long = "tick-link", value_name = "key[:START[:LEN]][@FEED]")]
    pub tick_link: Option<String>,
}
