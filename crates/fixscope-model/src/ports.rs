//! Watched ports (`-p 9878`, `-p 9000-9010`, `-p 9878,9000-9010`) and the role we watch from.

use std::fmt;
use std::str::FromStr;

use crate::segment::Direction;

/// Which end of the FIX sessions the watched host is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Role {
    /// We watch the acceptor (gateway/exchange): requests arrive at the watched port and
    /// responses leave it. Live: requests at ingress, responses at egress.
    #[default]
    Server,
    /// We watch the initiator (client): requests go to the watched (remote) port and
    /// responses come back from it. Live: requests at egress, responses at ingress.
    Client,
}

impl FromStr for Role {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "server" => Ok(Role::Server),
            "client" => Ok(Role::Client),
            other => Err(format!(
                "unknown role '{other}' (expected 'server' or 'client')"
            )),
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::Server => "server",
            Role::Client => "client",
        })
    }
}

/// An inclusive port range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortRange {
    pub lo: u16,
    pub hi: u16,
}

/// A non-empty list of inclusive port ranges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortSet {
    ranges: Vec<PortRange>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PortSetError {
    #[error("empty port list")]
    Empty,
    #[error("'{0}' is not a port (expected 1-65535)")]
    BadPort(String),
    #[error("port range '{0}' is reversed (low end above high end)")]
    Reversed(String),
}

impl PortSet {
    pub fn single(port: u16) -> Self {
        PortSet {
            ranges: vec![PortRange { lo: port, hi: port }],
        }
    }

    pub fn ranges(&self) -> &[PortRange] {
        &self.ranges
    }

    #[inline]
    pub fn contains(&self, port: u16) -> bool {
        self.ranges.iter().any(|r| r.lo <= port && port <= r.hi)
    }

    /// Classifies a TCP segment by its ports: towards a watched port is a request, from a
    /// watched port is a response. Both roles classify the same way on a capture (the
    /// watched port is always the acceptor's); the role only decides which hook sees which
    /// direction live. A segment between two watched ports counts as a request.
    #[inline]
    pub fn classify(&self, src_port: u16, dst_port: u16) -> Option<Direction> {
        if self.contains(dst_port) {
            Some(Direction::Request)
        } else if self.contains(src_port) {
            Some(Direction::Response)
        } else {
            None
        }
    }
}

impl FromStr for PortSet {
    type Err = PortSetError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        fn port(p: &str) -> Result<u16, PortSetError> {
            match p.trim().parse::<u16>() {
                Ok(v) if v > 0 => Ok(v),
                _ => Err(PortSetError::BadPort(p.trim().to_string())),
            }
        }
        let mut ranges = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let range = match part.split_once('-') {
                Some((lo, hi)) => {
                    let (lo, hi) = (port(lo)?, port(hi)?);
                    if lo > hi {
                        return Err(PortSetError::Reversed(part.to_string()));
                    }
                    PortRange { lo, hi }
                }
                None => {
                    let p = port(part)?;
                    PortRange { lo: p, hi: p }
                }
            };
            ranges.push(range);
        }
        if ranges.is_empty() {
            return Err(PortSetError::Empty);
        }
        Ok(PortSet { ranges })
    }
}

impl fmt::Display for PortSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.ranges.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            if r.lo == r.hi {
                write!(f, "{}", r.lo)?;
            } else {
                write!(f, "{}-{}", r.lo, r.hi)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_single_range_and_list() {
        let p: PortSet = "9878".parse().unwrap();
        assert!(p.contains(9878) && !p.contains(9877));
        let p: PortSet = "9000-9010, 12000".parse().unwrap();
        assert!(p.contains(9000) && p.contains(9010) && p.contains(12000));
        assert!(!p.contains(9011) && !p.contains(11999));
        assert_eq!(p.to_string(), "9000-9010,12000");
    }

    #[test]
    fn rejects_nonsense() {
        assert_eq!("".parse::<PortSet>(), Err(PortSetError::Empty));
        assert!(matches!(
            "0".parse::<PortSet>(),
            Err(PortSetError::BadPort(_))
        ));
        assert!(matches!(
            "70000".parse::<PortSet>(),
            Err(PortSetError::BadPort(_))
        ));
        assert!(matches!(
            "x-9".parse::<PortSet>(),
            Err(PortSetError::BadPort(_))
        ));
        assert!(matches!(
            "10-9".parse::<PortSet>(),
            Err(PortSetError::Reversed(_))
        ));
    }

    #[test]
    fn classifies_by_direction_of_watched_port() {
        let p = PortSet::single(9878);
        assert_eq!(p.classify(50000, 9878), Some(Direction::Request));
        assert_eq!(p.classify(9878, 50000), Some(Direction::Response));
        assert_eq!(p.classify(1, 2), None);
    }
}
