//! `--link`: how a child order names its parent.
//!
//! Routers usually make up their own ClOrdID, so which tag carries the parent's is a
//! convention of each router: the rule is configurable, and discovered from the traffic
//! (`--link discover`, [`super::discover`]).

use std::fmt;
use std::str::FromStr;

use fixscope_fix::message::Fields;

/// One way a child names its parent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinkRule {
    /// `hops`: the child's OnBehalfOfCompID (115) is the parent's SenderCompID (49) and its
    /// last NoHops entry's HopRefID (630) the parent's MsgSeqNum (34).
    Hops,
    /// `11`: the child's ClOrdID is the parent's, on the same Side (54).
    SameId,
    /// `CHILD=PARENT`: the child's tag CHILD holds the parent's tag PARENT (e.g. `526=11`).
    Tags { child: u32, parent: u32 },
    /// `41-chain` (always tried last, for cancels and replaces no rule linked): the child's
    /// OrigClOrdID (41) names a child linked to parent P, and the parent's 41 names P.
    Chain,
}

impl LinkRule {
    /// `auto`'s rules, tried in this order.
    pub const AUTO: [LinkRule; 3] = [
        LinkRule::Hops,
        LinkRule::SameId,
        LinkRule::Tags {
            child: 526,
            parent: 11,
        },
    ];

    /// The parent's link value under this rule, from its message (`None`: it has none).
    pub fn parent_value(self, msg: &[u8], out: &mut Vec<u8>) -> bool {
        out.clear();
        match self {
            LinkRule::Hops => joined(find(msg, 49), find(msg, 34), out),
            LinkRule::SameId => pair(msg, 11, 54, out),
            LinkRule::Tags { parent, .. } => single(msg, parent, out),
            LinkRule::Chain => false,
        }
    }

    /// The child's link value under this rule (the same bytes as its parent's).
    pub fn child_value(self, msg: &[u8], out: &mut Vec<u8>) -> bool {
        out.clear();
        match self {
            LinkRule::Hops => {
                let mut on_behalf = None;
                let mut last_ref = None;
                for (tag, value) in Fields::new(msg) {
                    match tag {
                        115 if on_behalf.is_none() => on_behalf = Some(value),
                        630 => last_ref = Some(value),
                        _ => {}
                    }
                }
                joined(on_behalf, last_ref, out)
            }
            LinkRule::SameId => pair(msg, 11, 54, out),
            LinkRule::Tags { child, .. } => single(msg, child, out),
            LinkRule::Chain => false,
        }
    }
}

/// The first value of `tag` in `msg`.
pub(super) fn find(msg: &[u8], tag: u32) -> Option<&[u8]> {
    Fields::new(msg).find(|&(t, _)| t == tag).map(|(_, v)| v)
}

fn single(msg: &[u8], tag: u32, out: &mut Vec<u8>) -> bool {
    match find(msg, tag) {
        Some(v) if !v.is_empty() => {
            out.extend_from_slice(v);
            true
        }
        _ => false,
    }
}

/// Two tags' values joined by SOH (both present).
fn pair(msg: &[u8], a: u32, b: u32, out: &mut Vec<u8>) -> bool {
    let (mut va, mut vb) = (None, None);
    for (tag, value) in Fields::new(msg) {
        if tag == a && va.is_none() {
            va = Some(value);
        } else if tag == b && vb.is_none() {
            vb = Some(value);
        }
        if va.is_some() && vb.is_some() {
            break;
        }
    }
    joined(va, vb, out)
}

/// Two values joined by SOH into `out`, when both are there and not empty.
fn joined(a: Option<&[u8]>, b: Option<&[u8]>, out: &mut Vec<u8>) -> bool {
    match (a, b) {
        (Some(x), Some(y)) if !x.is_empty() && !y.is_empty() => {
            out.extend_from_slice(x);
            out.push(0x01);
            out.extend_from_slice(y);
            true
        }
        _ => false,
    }
}

impl fmt::Display for LinkRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkRule::Hops => f.write_str("hops"),
            LinkRule::SameId => f.write_str("11"),
            LinkRule::Tags { child, parent } => write!(f, "{child}={parent}"),
            LinkRule::Chain => f.write_str("41-chain"),
        }
    }
}

impl FromStr for LinkRule {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let tag = |t: &str| -> Result<u32, String> {
            match t.trim().parse::<u32>() {
                Ok(v) if v > 0 => Ok(v),
                _ => Err(format!("{t:?} is not a FIX tag number")),
            }
        };
        match s.trim() {
            "hops" => Ok(LinkRule::Hops),
            "11" => Ok(LinkRule::SameId),
            other => match other.split_once('=') {
                Some((c, p)) => Ok(LinkRule::Tags {
                    child: tag(c)?,
                    parent: tag(p)?,
                }),
                None => Err(format!(
                    "unknown link rule {other:?} (expected hops, 11, CHILD_TAG=PARENT_TAG such as 526=11, auto or discover)"
                )),
            },
        }
    }
}

/// `--link`: the rules to link by, or discovery.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum LinkSpec {
    /// Try [`LinkRule::AUTO`] in order, per child.
    #[default]
    Auto,
    /// Read the first orders, propose rules, exit.
    Discover,
    /// These rules, tried in order per child.
    Rules(Vec<LinkRule>),
}

impl LinkSpec {
    /// The rules children are linked by (discovery links by none).
    pub fn rules(&self) -> &[LinkRule] {
        match self {
            LinkSpec::Auto => &LinkRule::AUTO,
            LinkSpec::Discover => &[],
            LinkSpec::Rules(r) => r,
        }
    }
}

impl FromStr for LinkSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "auto" => Ok(LinkSpec::Auto),
            "discover" => Ok(LinkSpec::Discover),
            list => {
                let rules = list
                    .split(',')
                    .filter(|r| !r.trim().is_empty())
                    .map(str::parse)
                    .collect::<Result<Vec<LinkRule>, _>>()?;
                if rules.is_empty() {
                    return Err("--link wants at least one rule".into());
                }
                Ok(LinkSpec::Rules(rules))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(fields: &str) -> Vec<u8> {
        fields.replace('|', "\x01").into_bytes()
    }

    #[test]
    fn each_rule_reads_the_same_bytes_from_parent_and_child() {
        let parent = msg("8=FIX.4.4|9=5|35=D|49=CLIENT1|34=17|11=P1|54=1|55=MSFT|");
        let hops = msg("8=FIX.4.4|9=5|35=D|49=ROUTER|115=CLIENT1|627=2|628=A|630=3|628=ROUTER|630=17|11=R1|54=1|");
        let same = msg("35=D|11=P1|54=1|");
        let other_side = msg("35=D|11=P1|54=2|");
        let tagged = msg("35=D|11=R7|526=P1|54=1|");
        let (mut p, mut c) = (Vec::new(), Vec::new());
        assert!(LinkRule::Hops.parent_value(&parent, &mut p));
        assert!(LinkRule::Hops.child_value(&hops, &mut c));
        assert_eq!(p, c, "the last hop's 630 is the parent's 34");
        assert!(LinkRule::SameId.parent_value(&parent, &mut p));
        assert!(LinkRule::SameId.child_value(&same, &mut c));
        assert_eq!(p, c);
        assert!(LinkRule::SameId.child_value(&other_side, &mut c));
        assert_ne!(p, c, "the other side never links by 11");
        let r526: LinkRule = "526=11".parse().unwrap();
        assert!(r526.parent_value(&parent, &mut p));
        assert!(r526.child_value(&tagged, &mut c));
        assert_eq!(p, c);
        assert!(!r526.child_value(&same, &mut c));
    }

    #[test]
    fn link_specs_parse() {
        assert_eq!("auto".parse::<LinkSpec>(), Ok(LinkSpec::Auto));
        assert_eq!("discover".parse::<LinkSpec>(), Ok(LinkSpec::Discover));
        assert_eq!(
            "hops,526=11".parse::<LinkSpec>(),
            Ok(LinkSpec::Rules(vec![
                LinkRule::Hops,
                LinkRule::Tags {
                    child: 526,
                    parent: 11
                }
            ]))
        );
        assert!("526=x".parse::<LinkSpec>().is_err());
        assert!("nope".parse::<LinkSpec>().is_err());
        assert_eq!(
            LinkRule::Tags {
                child: 526,
                parent: 11
            }
            .to_string(),
            "526=11"
        );
    }
}
