//! What can go wrong in live capture. Errors from libbpf and the OS are kept as the
//! `source` of the variant (never flattened into its text), so a caller printing the chain
//! (`{:#}` with anyhow) shows the cause once, and code can still inspect it.

use std::io;

use crate::capabilities::{missing_for_load, own_cap_eff};

#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("not privileged: {0}")]
    NotPrivileged(String),
    #[error("no such network interface: {0}")]
    NoSuchInterface(String),
    #[error(
        "interface {iface} has link type {link_type}, which live capture does not parse \
         (Ethernet, loopback and L3 tunnels are supported)"
    )]
    UnsupportedLink { iface: String, link_type: u16 },
    #[error("kernel lacks BPF support needed for live capture: {0}")]
    NoBtfOrBpf(String),
    #[error("network interface {0} disappeared")]
    InterfaceGone(String),
    #[error("cannot tell whether the network interface still exists")]
    InterfaceCheck(#[source] io::Error),
    #[error("invalid live-capture configuration: {0}")]
    Config(String),
    #[error("loading the BPF programs failed: {what}")]
    Load {
        what: String,
        #[source]
        source: libbpf_rs::Error,
    },
    #[error("attaching the BPF programs failed: {what}")]
    Attach {
        what: String,
        #[source]
        source: libbpf_rs::Error,
    },
    /// Something of ours may still be attached (or a clsact qdisc we created is left).
    #[error("detaching the BPF programs failed: {what}")]
    Detach {
        what: String,
        #[source]
        source: libbpf_rs::Error,
    },
    #[error("reading BPF state failed: {what}")]
    Bpf {
        what: String,
        #[source]
        source: libbpf_rs::Error,
    },
    #[error("ring buffer")]
    Ring(#[from] io::Error),
}

impl LiveError {
    /// A refused load (EACCES/EPERM) by a process that lacks a capability loading needs
    /// becomes [`LiveError::NotPrivileged`] naming it: the verifier refuses our programs
    /// without CAP_PERFMON (pointer comparisons, Spectre mitigations) with a bare
    /// "Permission denied" otherwise.
    pub(crate) fn load(what: impl Into<String>, source: impl Into<libbpf_rs::Error>) -> Self {
        let source = source.into();
        let what = what.into();
        let refused = matches!(source.kind(), libbpf_rs::ErrorKind::PermissionDenied);
        if refused {
            if let Some(missing) = own_cap_eff()
                .map(missing_for_load)
                .filter(|m| !m.is_empty())
            {
                return LiveError::NotPrivileged(refused_load_message(&what, &missing));
            }
        }
        LiveError::Load { what, source }
    }

    pub(crate) fn attach(what: impl Into<String>, source: impl Into<libbpf_rs::Error>) -> Self {
        LiveError::Attach {
            what: what.into(),
            source: source.into(),
        }
    }

    pub(crate) fn detach(what: impl Into<String>, source: impl Into<libbpf_rs::Error>) -> Self {
        LiveError::Detach {
            what: what.into(),
            source: source.into(),
        }
    }

    pub(crate) fn bpf(what: impl Into<String>, source: impl Into<libbpf_rs::Error>) -> Self {
        LiveError::Bpf {
            what: what.into(),
            source: source.into(),
        }
    }
}

fn refused_load_message(what: &str, missing: &[&str]) -> String {
    // The object's name only: the rest of `what` guesses at a verifier rejection, which a
    // missing capability is not.
    let object = what.split([':', ' ']).next().unwrap_or(what);
    format!(
        "the kernel refused to load the BPF programs ({object}: permission denied): missing {}; \
         live capture needs root or CAP_BPF + CAP_PERFMON + CAP_NET_ADMIN \
         (`setcap cap_bpf,cap_perfmon,cap_net_admin+ep <binary>`)",
        missing.join(", ")
    )
}

/// An OS error from a negative errno return value (libbpf's convention).
pub(crate) fn errno(rc: i32) -> io::Error {
    io::Error::from_raw_os_error(rc.saturating_neg())
}

/// `e` and its causes, "e: cause: cause", for the one place that cannot return an error.
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_load_names_the_missing_capabilities() {
        let m = refused_load_message("fixscope.bpf.o", &["CAP_PERFMON"]);
        assert!(m.contains("missing CAP_PERFMON;"), "{m}");
        // Not the verifier's hint that comes with a load's description.
        let m = refused_load_message(
            "fixscope.bpf.o: the kernel's verifier rejected the programs (its log …)",
            &["CAP_PERFMON"],
        );
        assert!(m.contains("(fixscope.bpf.o: permission denied)"), "{m}");
        assert!(!m.contains("verifier"), "{m}");
    }
}
