//! Which protocol a connection speaks: named on the command line (`--protocol PORTS=NAME`)
//! for the connections whose watched port is in PORTS; FIX elsewhere.

use std::fmt;
use std::str::FromStr;

use fixscope_model::ports::PortSet;

/// A protocol fixscope reads order sessions of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProtocolName {
    Fix,
    /// Nasdaq OUCH 4.2 over SoupBinTCP 3.0.
    Ouch42,
    /// Nasdaq OUCH 5.0 over SoupBinTCP 3.0.
    Ouch50,
    /// CME iLink 3 (SBE over FIXP).
    Ilink3,
}

impl ProtocolName {
    pub const ALL: [ProtocolName; 4] = [
        ProtocolName::Fix,
        ProtocolName::Ouch42,
        ProtocolName::Ouch50,
        ProtocolName::Ilink3,
    ];

    /// Its name as `--protocol` and the session table write it.
    pub fn name(self) -> &'static str {
        match self {
            ProtocolName::Fix => "fix",
            ProtocolName::Ouch42 => "ouch42",
            ProtocolName::Ouch50 => "ouch50",
            ProtocolName::Ilink3 => "ilink3",
        }
    }
}

impl fmt::Display for ProtocolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ProtocolName {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        ProtocolName::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                let names: Vec<&str> = ProtocolName::ALL.iter().map(|p| p.name()).collect();
                format!("unknown protocol {s:?} (one of {})", names.join(", "))
            })
    }
}

/// The protocols named per watched port (`--protocol PORTS=NAME`, repeatable); FIX on
/// every other port.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProtocolPorts {
    named: Vec<(PortSet, ProtocolName)>,
}

impl ProtocolPorts {
    /// Adds one `PORTS=NAME`; a port already named for another protocol is an error.
    pub fn add(&mut self, ports: PortSet, name: ProtocolName) -> Result<(), String> {
        for range in ports.ranges() {
            for (earlier, other) in &self.named {
                let clash = (range.lo..=range.hi).find(|&p| earlier.contains(p));
                if let (Some(port), true) = (clash, *other != name) {
                    return Err(format!("port {port} is named {other} and {name}"));
                }
            }
        }
        self.named.push((ports, name));
        Ok(())
    }

    /// The protocol of the connections whose watched port is `port`.
    #[inline]
    pub fn of(&self, port: u16) -> ProtocolName {
        if self.named.is_empty() {
            return ProtocolName::Fix;
        }
        self.named
            .iter()
            .find(|(ports, _)| ports.contains(port))
            .map_or(ProtocolName::Fix, |&(_, name)| name)
    }

    /// The protocol `--protocol` names for `port`, if any: a connection on a port named
    /// for none is FIX unless its first bytes are another protocol's login.
    #[inline]
    pub fn named(&self, port: u16) -> Option<ProtocolName> {
        self.named
            .iter()
            .find(|(ports, _)| ports.contains(port))
            .map(|&(_, name)| name)
    }

    /// Whether any port is named for a protocol other than FIX.
    pub fn any_binary(&self) -> bool {
        self.named.iter().any(|&(_, n)| n != ProtocolName::Fix)
    }

    /// The protocols named, each once, in the order first named.
    pub fn names(&self) -> Vec<ProtocolName> {
        let mut out = Vec::new();
        for &(_, n) in &self.named {
            if !out.contains(&n) {
                out.push(n);
            }
        }
        out
    }
}

/// One `--protocol PORTS=NAME`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtocolAssignment {
    pub ports: PortSet,
    pub name: ProtocolName,
}

impl FromStr for ProtocolAssignment {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (ports, name) = s
            .split_once('=')
            .ok_or_else(|| format!("{s:?}: expected PORTS=NAME (e.g. 15001=ouch42)"))?;
        Ok(ProtocolAssignment {
            ports: ports.parse().map_err(|e| format!("{ports:?}: {e}"))?,
            name: name.parse()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_fix_unless_named() {
        let mut p = ProtocolPorts::default();
        assert_eq!(p.of(9878), ProtocolName::Fix);
        let a: ProtocolAssignment = "15001-15003=OUCH42".parse().unwrap();
        p.add(a.ports, a.name).unwrap();
        let b: ProtocolAssignment = "16000=ouch50".parse().unwrap();
        p.add(b.ports, b.name).unwrap();
        assert_eq!(p.of(15002), ProtocolName::Ouch42);
        assert_eq!(p.of(16000), ProtocolName::Ouch50);
        assert_eq!(p.of(9878), ProtocolName::Fix);
        assert!(p.any_binary());
        assert_eq!(p.names(), vec![ProtocolName::Ouch42, ProtocolName::Ouch50]);
        let clash: ProtocolAssignment = "15003=ouch50".parse().unwrap();
        assert_eq!(
            p.add(clash.ports, clash.name).unwrap_err(),
            "port 15003 is named ouch42 and ouch50"
        );
    }

    #[test]
    fn assignments_are_read_or_refused_with_the_reason() {
        assert!("15001"
            .parse::<ProtocolAssignment>()
            .unwrap_err()
            .contains("PORTS=NAME"));
        assert!("15001=soup"
            .parse::<ProtocolAssignment>()
            .unwrap_err()
            .contains("one of fix"));
        assert!("0=fix".parse::<ProtocolAssignment>().is_err());
        assert_eq!(ProtocolName::Ilink3.to_string(), "ilink3");
    }
}
