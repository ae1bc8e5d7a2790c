//! `--protocol PORTS=NAME`: the order protocol of the connections on a watched port, for
//! `pcap`, `live` and `live --tap` (docs/protocols.md).

use anyhow::{bail, Result};
use clap::Args;
use fixscope_core::group::ByField;
use fixscope_core::pipeline::order_fields;
use fixscope_core::protocol::fields;
use fixscope_core::protocol::{ProtocolAssignment, ProtocolName, ProtocolPorts};

#[derive(Args, Debug, Clone, Default)]
pub struct ProtocolArgs {
    /// The order protocol spoken on PORTS (of the watched ports): `fix`, `ouch42` or
    /// `ouch50` (Nasdaq OUCH over SoupBinTCP), `ilink3` (CME iLink 3: SBE over FIXP).
    /// Unnamed, each connection's protocol is recognised by its login (OUCH's version by
    /// its first order), FIX otherwise. Repeatable; a port named twice for two protocols
    /// is an error.
    #[arg(long = "protocol", value_name = "PORTS=NAME")]
    pub protocol: Vec<ProtocolAssignment>,
}

impl ProtocolArgs {
    /// The protocols by port; `uses` names the run's flags a binary protocol does not
    /// serve yet (each refused by name).
    pub fn ports(&self, unsupported: &[(&str, bool)]) -> Result<ProtocolPorts> {
        let mut ports = ProtocolPorts::default();
        for a in &self.protocol {
            ports
                .add(a.ports.clone(), a.name)
                .map_err(|e| anyhow::anyhow!("--protocol: {e}"))?;
        }
        if ports.any_binary() {
            if let Some((flag, _)) = unsupported.iter().find(|(_, given)| *given) {
                bail!(
                    "{flag} is not available on binary order sessions yet: run it apart from \
                     --protocol {} (docs/protocols.md)",
                    binary_names(&ports)
                );
            }
        }
        Ok(ports)
    }
}

/// `config`, unless it runs a binary protocol with what its path does not serve yet (the
/// in-host breakdown, TLS, two points, hops): those are refused by name, never left empty.
pub fn checked(config: fixscope_core::PipelineConfig) -> Result<fixscope_core::PipelineConfig> {
    if config.protocols.any_binary() {
        let given = [
            ("--breakdown", config.breakdown),
            ("--tls-keylog/--tls-uprobes", config.tls_keys.is_some()),
            ("--point", config.points.is_some()),
            ("--leg", config.hops.is_some()),
        ];
        if let Some((flag, _)) = given.iter().find(|(_, on)| *on) {
            bail!(
                "{flag} is not available on binary order sessions yet: run it apart from \
                 --protocol {} (docs/protocols.md)",
                binary_names(&config.protocols)
            );
        }
    }
    Ok(config)
}

/// `--by`'s list of a run on `ports`: a number is a FIX tag, as on every run; a name is a
/// field of the run's binary protocols (docs/protocols.md lists them), matched without
/// regard to case and reported by its spec's name (the first protocol's that has it: the
/// others' orders, without it, are in `(none)`); on a run of FIX only, a FIX field's
/// name (`Symbol`: tag 55, reported as `--by 55` is). Any other name is an error that
/// names the fields there are.
pub fn by_fields(list: &str, ports: &ProtocolPorts) -> Result<Vec<ByField>, String> {
    let binary: Vec<ProtocolName> = ports
        .names()
        .into_iter()
        .filter(|n| *n != ProtocolName::Fix)
        .collect();
    let mut out = Vec::new();
    for part in list.split(',').map(str::trim) {
        match ByField::parse(part) {
            Some(tag @ ByField::Tag(_)) => out.push(tag),
            Some(ByField::Named(name)) => {
                let found = binary
                    .iter()
                    .find_map(|&p| fields::find(order_fields(p), &name));
                // FIX's names on a FIX run only: a binary run's names are its protocols'.
                let fix = binary
                    .is_empty()
                    .then(|| fixscope_core::fix::tag_of_name(&name));
                match (found, fix.flatten()) {
                    (Some(field), _) => out.push(ByField::Named(field.name.to_string())),
                    (None, Some(tag)) => out.push(ByField::Tag(tag)),
                    (None, None) => return Err(unknown_name(&name, &binary)),
                }
            }
            None => return Err(format!("'{part}' is not a FIX tag number")),
        }
    }
    Ok(out)
}

/// What `--by NAME` says of a name no protocol of the run has: the fields there are.
fn unknown_name(name: &str, binary: &[ProtocolName]) -> String {
    if binary.is_empty() {
        let fix: Vec<&str> = fixscope_core::fix::FIELD_NAMES
            .iter()
            .map(|(n, _)| *n)
            .collect();
        return format!(
            "no field {name:?} (FIX: a tag number, or {})",
            fix.join(", ")
        );
    }
    let have: Vec<String> = binary
        .iter()
        .map(|&p| format!("{p}: {}", fields::names(order_fields(p))))
        .collect();
    format!(
        "no field {name:?} in the run's binary protocols ({}); or a FIX tag number",
        have.join("; ")
    )
}

/// The binary protocols named, as `ouch42/ilink3`.
fn binary_names(ports: &ProtocolPorts) -> String {
    let names: Vec<&str> = ports
        .names()
        .into_iter()
        .filter(|n| *n != ProtocolName::Fix)
        .map(ProtocolName::name)
        .collect();
    names.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> ProtocolArgs {
        ProtocolArgs {
            protocol: list.iter().map(|a| a.parse().unwrap()).collect(),
        }
    }

    #[test]
    fn a_binary_protocol_refuses_by_name_what_it_does_not_serve_yet() {
        let ouch = args(&["15001=ouch42"]);
        let err = ouch.ports(&[("--trace", true)]).unwrap_err().to_string();
        assert!(
            err.starts_with("--trace is not available on binary order sessions"),
            "{err}"
        );
        assert!(err.contains("--protocol ouch42 "), "{err}");
        assert!(ouch.ports(&[("--trace", false)]).unwrap().any_binary());
        // FIX named explicitly refuses nothing.
        assert!(args(&["9878=fix"]).ports(&[("--trace", true)]).is_ok());
        assert!(args(&["15001=ilink3"]).ports(&[]).unwrap().any_binary());
        let err = args(&["15001=ouch42", "15001=ouch50"])
            .ports(&[])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("port 15001 is named ouch42 and ouch50"),
            "{err}"
        );
    }

    #[test]
    fn by_takes_tags_everywhere_and_a_binary_protocols_fields_by_name() {
        let fix = ProtocolPorts::default();
        assert_eq!(
            by_fields("55, 1", &fix),
            Ok(vec![ByField::Tag(55), ByField::Tag(1)])
        );
        // A FIX field by its name is its tag.
        assert_eq!(
            by_fields("symbol,Account", &fix),
            Ok(vec![ByField::Tag(55), ByField::Tag(1)])
        );
        let err = by_fields("Stock", &fix).unwrap_err();
        assert!(
            err.starts_with("no field \"Stock\" (FIX: a tag number, or Account,"),
            "{err}"
        );
        let ouch = args(&["15001=ouch42"]).ports(&[]).unwrap();
        assert_eq!(
            by_fields("stock,SIDE,55", &ouch),
            Ok(vec![
                ByField::Named("Stock".into()),
                ByField::Named("Side".into()),
                ByField::Tag(55)
            ])
        );
        let err = by_fields("SecurityID", &ouch).unwrap_err();
        assert!(err.contains("no field \"SecurityID\""), "{err}");
        assert!(err.contains("ouch42: Stock, Side, Firm"), "{err}");
        let both = args(&["15001=ouch50", "16001=ilink3"]).ports(&[]).unwrap();
        assert_eq!(
            by_fields("stock,securityid", &both),
            Ok(vec![
                ByField::Named("Symbol".into()),
                ByField::Named("SecurityID".into())
            ])
        );
        // On a binary run, FIX's names are not its fields (its tags still are).
        assert!(by_fields("Account", &ouch).is_err());
        assert!(by_fields("0", &ouch).is_err());
        assert!(by_fields("", &ouch).is_err());
    }
}
