//! `--leg`: which sessions carry a router's parents (orders coming in), its children
//! (orders going out to venues) and its market data.

use std::fmt;
use std::str::FromStr;

use fixscope_model::ports::{PortSet, Role};
use fixscope_model::segment::ConnectionKey;

/// What a leg's sessions carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LegKind {
    /// Requests are parents: orders coming in (the host usually the acceptor).
    Up,
    /// Requests are children: orders going out to venues (the host the initiator).
    Down,
    /// FIX market data coming in (35=W/X).
    Md,
}

impl LegKind {
    pub fn name(self) -> &'static str {
        match self {
            LegKind::Up => "up",
            LegKind::Down => "down",
            LegKind::Md => "md",
        }
    }
}

/// One `--leg KIND=PORTS[/server|/client]`: the acceptor's ports of the leg's sessions
/// (as `-p`), and which end the host is (as `--role`; `up` defaults to `server`, `down`
/// and `md` to `client`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leg {
    pub kind: LegKind,
    pub ports: PortSet,
    pub role: Role,
}

impl FromStr for Leg {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (kind, rest) = s.split_once('=').ok_or_else(|| {
            format!("--leg wants KIND=PORTS[/server|/client] (KIND: up, down, md), not {s:?}")
        })?;
        let kind = match kind.trim() {
            "up" => LegKind::Up,
            "down" => LegKind::Down,
            "md" => LegKind::Md,
            other => return Err(format!("unknown leg {other:?} (expected up, down or md)")),
        };
        let (ports, role) = match rest.split_once('/') {
            Some((ports, role)) => (ports, role.trim().parse::<Role>()?),
            None if kind == LegKind::Up => (rest, Role::Server),
            None => (rest, Role::Client),
        };
        let ports = ports
            .parse::<PortSet>()
            .map_err(|e| format!("--leg {}: {e}", kind.name()))?;
        Ok(Leg { kind, ports, role })
    }
}

impl fmt::Display for Leg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}/{}", self.kind.name(), self.ports, self.role)
    }
}

/// Every `--leg` of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Legs(pub Vec<Leg>);

impl Legs {
    /// The leg of a connection, by its acceptor's port (the first leg listing it).
    #[inline]
    pub fn of(&self, conn: &ConnectionKey) -> Option<LegKind> {
        let port = conn.server.port;
        self.0
            .iter()
            .find(|l| l.ports.contains(port))
            .map(|l| l.kind)
    }

    pub fn has(&self, kind: LegKind) -> bool {
        self.0.iter().any(|l| l.kind == kind)
    }

    /// Two legs listing the same port: its sessions would be parents and children at once.
    pub fn check(&self) -> Result<(), String> {
        for (i, a) in self.0.iter().enumerate() {
            for b in &self.0[i + 1..] {
                if a.kind == b.kind {
                    continue;
                }
                for r in a.ports.ranges() {
                    if (r.lo..=r.hi).any(|p| b.ports.contains(p)) {
                        return Err(format!(
                            "--leg {a} and --leg {b} share a port: a session is of one leg"
                        ));
                    }
                }
            }
        }
        if !self.has(LegKind::Down) {
            return Err("--leg: a down leg (the orders going out) is needed to link orders".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legs_parse_with_their_default_roles() {
        let up: Leg = "up=9878".parse().unwrap();
        assert_eq!((up.kind, up.role), (LegKind::Up, Role::Server));
        let down: Leg = "down=9001-9004/client".parse().unwrap();
        assert_eq!((down.kind, down.role), (LegKind::Down, Role::Client));
        assert!(down.ports.contains(9003) && !down.ports.contains(9005));
        let md: Leg = "md=9100".parse().unwrap();
        assert_eq!(md.role, Role::Client);
        assert!("side=1".parse::<Leg>().is_err());
        assert!("up".parse::<Leg>().is_err());
        assert!("up=9878/peer".parse::<Leg>().is_err());
        let clash = Legs(vec![
            "up=9000-9010".parse().unwrap(),
            "down=9005".parse().unwrap(),
        ]);
        assert!(clash.check().is_err());
        let no_down = Legs(vec![up.clone()]);
        assert!(no_down.check().is_err());
        assert!(Legs(vec![up, down]).check().is_ok());
    }
}
