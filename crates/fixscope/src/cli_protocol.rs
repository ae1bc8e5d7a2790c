//! `--protocol PORTS=NAME`: the order protocol of the connections on a watched port, for
//! `pcap`, `live` and `live --tap` (docs/protocols.md).

use anyhow::{bail, Result};
use clap::Args;
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
}
