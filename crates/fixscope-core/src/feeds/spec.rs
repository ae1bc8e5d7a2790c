//! `--md GROUP:PORT[,GROUP:PORT]=PROTO`: the market-data feeds to watch. One address is a
//! feed; two are an A/B pair carrying the same stream (A first). An address is a group
//! (or unicast) IP and a port, or a port alone (any address).

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

/// A market-data protocol fixscope reads feeds of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MdProtocol {
    /// Nasdaq TotalView-ITCH 5.0 over MoldUDP64.
    Itch50,
    /// CME MDP 3.0 (SBE) incremental channels.
    Mdp3,
}

impl MdProtocol {
    pub fn name(self) -> &'static str {
        match self {
            MdProtocol::Itch50 => "itch50",
            MdProtocol::Mdp3 => "mdp3",
        }
    }
}

impl FromStr for MdProtocol {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "itch50" => Ok(MdProtocol::Itch50),
            "mdp3" => Ok(MdProtocol::Mdp3),
            other => Err(format!(
                "unknown market-data protocol {other:?} (itch50, mdp3)"
            )),
        }
    }
}

/// Where a feed's datagrams go: to `port`, on `addr` when given.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FeedAddr {
    pub addr: Option<IpAddr>,
    pub port: u16,
}

impl FeedAddr {
    /// Whether a datagram to `addr`:`port` is this feed's.
    #[inline]
    pub fn matches(&self, addr: IpAddr, port: u16) -> bool {
        port == self.port && self.addr.is_none_or(|a| a == addr)
    }
}

impl fmt::Display for FeedAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.addr {
            Some(a) => write!(f, "{}", SocketAddr::new(a, self.port)),
            None => write!(f, "*:{}", self.port),
        }
    }
}

impl FromStr for FeedAddr {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if let Ok(port) = s.parse::<u16>() {
            return Ok(FeedAddr { addr: None, port });
        }
        let a: SocketAddr = s
            .parse()
            .map_err(|_| format!("{s:?}: expected GROUP:PORT (233.54.12.1:26400) or PORT"))?;
        Ok(FeedAddr {
            addr: Some(a.ip()),
            port: a.port(),
        })
    }
}

/// One `--md`: a feed or an A/B pair, and its protocol.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MdSpec {
    /// As given, before `=`.
    pub name: String,
    /// A, then B.
    pub legs: Vec<FeedAddr>,
    pub protocol: MdProtocol,
}

impl FromStr for MdSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (feeds, proto) = s
            .rsplit_once('=')
            .ok_or_else(|| format!("{s:?}: expected GROUP:PORT[,GROUP:PORT]=PROTO"))?;
        let legs = feeds
            .split(',')
            .map(str::parse)
            .collect::<Result<Vec<FeedAddr>, String>>()?;
        if legs.len() > 2 {
            return Err(format!(
                "{s:?}: one feed or an A/B pair of two, not {}",
                legs.len()
            ));
        }
        if legs.len() == 2 && legs[0] == legs[1] {
            return Err(format!("{s:?}: A and B are the same address"));
        }
        Ok(MdSpec {
            name: feeds.trim().to_string(),
            legs,
            protocol: proto.parse()?,
        })
    }
}

/// Checks that no datagram could be two feeds' (an address named twice).
pub fn check_distinct(specs: &[MdSpec]) -> Result<(), String> {
    let all: Vec<&FeedAddr> = specs.iter().flat_map(|s| &s.legs).collect();
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            let overlap = a.port == b.port && (a.addr.is_none() || b.addr.is_none() || a == b);
            if overlap {
                return Err(format!("--md: {a} and {b} would take the same datagrams"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_a_feed_and_a_port_alone_are_read_and_bad_ones_said() {
        let pair: MdSpec = "233.54.12.1:26400,233.54.12.2:26400=itch50"
            .parse()
            .unwrap();
        assert_eq!(pair.legs.len(), 2);
        assert_eq!(pair.protocol, MdProtocol::Itch50);
        assert!(pair.legs[0].matches("233.54.12.1".parse().unwrap(), 26400));
        assert!(!pair.legs[0].matches("233.54.12.2".parse().unwrap(), 26400));
        let port: MdSpec = "26477=ITCH50".parse().unwrap();
        assert!(port.legs[0].matches("10.0.0.1".parse().unwrap(), 26477));
        assert_eq!(port.legs[0].to_string(), "*:26477");
        let mdp3: MdSpec = "1.2.3.4:1=MDP3".parse().unwrap();
        assert_eq!(mdp3.protocol, MdProtocol::Mdp3);
        assert!("1.2.3.4:1=pitch"
            .parse::<MdSpec>()
            .unwrap_err()
            .contains("itch50, mdp3"));
        assert!("1.2.3.4:1".parse::<MdSpec>().unwrap_err().contains("PROTO"));
        assert!("1:1=itch50".parse::<MdSpec>().is_err());
        assert!("1,2,3=itch50"
            .parse::<MdSpec>()
            .unwrap_err()
            .contains("not 3"));
        let same = check_distinct(&["26400=itch50".parse().unwrap(), pair.clone()]);
        assert!(same.unwrap_err().contains("same datagrams"));
        assert!(check_distinct(&[pair]).is_ok());
    }
}
