//! `--protocol` of `sim exchange` and `sim client`: FIX or a binary order protocol (below
//! every module that takes it: the arguments, the FIX and binary ends).

use std::fmt;
use std::str::FromStr;

/// `--protocol`: FIX (the default), or one of the binary protocols.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SimProtocol {
    #[default]
    Fix,
    Binary(BinaryProtocol),
}

/// A binary order protocol the simulator speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryProtocol {
    Ouch42,
    Ouch50,
    Ilink3,
}

impl BinaryProtocol {
    /// The name `--protocol` takes (and fixscope's `--protocol PORT=NAME`).
    pub fn name(self) -> &'static str {
        match self {
            BinaryProtocol::Ouch42 => "ouch42",
            BinaryProtocol::Ouch50 => "ouch50",
            BinaryProtocol::Ilink3 => "ilink3",
        }
    }

    /// The truth files' `msg_type` of an order: OUCH's Enter Order `O`, iLink 3's
    /// NewOrderSingle template 514.
    pub fn order_code(self) -> &'static str {
        match self {
            BinaryProtocol::Ouch42 | BinaryProtocol::Ouch50 => "O",
            BinaryProtocol::Ilink3 => "514",
        }
    }
}

impl FromStr for SimProtocol {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.trim() {
            "fix" => SimProtocol::Fix,
            "ouch42" => SimProtocol::Binary(BinaryProtocol::Ouch42),
            "ouch50" => SimProtocol::Binary(BinaryProtocol::Ouch50),
            "ilink3" => SimProtocol::Binary(BinaryProtocol::Ilink3),
            other => {
                return Err(format!(
                    "unknown protocol {other:?} (fix, ouch42, ouch50 or ilink3)"
                ))
            }
        })
    }
}

impl fmt::Display for SimProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimProtocol::Fix => f.write_str("fix"),
            SimProtocol::Binary(p) => f.write_str(p.name()),
        }
    }
}

impl fmt::Display for BinaryProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
