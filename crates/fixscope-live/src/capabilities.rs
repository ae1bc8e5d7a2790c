//! Linux capabilities: reading this process's effective set, and which of the ones live
//! capture needs it lacks.
//!
//! Its own module, below both users: the privilege check before attaching (`sys`) and the
//! error a refused BPF load becomes (`error`) name the missing capabilities the same way.

pub(crate) const CAP_NET_ADMIN: u32 = 12;
pub(crate) const CAP_SYS_ADMIN: u32 = 21;
pub(crate) const CAP_PERFMON: u32 = 38;
pub(crate) const CAP_BPF: u32 = 39;

/// The capabilities missing from an effective capability mask (`CapEff` in
/// /proc/self/status) for loading and attaching TC programs: CAP_NET_ADMIN, and CAP_BPF
/// (or CAP_SYS_ADMIN on kernels before 5.8, which also covers it on newer ones).
pub fn missing_capabilities(cap_eff: u64) -> Vec<&'static str> {
    let has = |cap: u32| cap_eff & (1u64 << cap) != 0;
    let mut missing = Vec::new();
    if !has(CAP_BPF) && !has(CAP_SYS_ADMIN) {
        missing.push("CAP_BPF");
    }
    if !has(CAP_NET_ADMIN) {
        missing.push("CAP_NET_ADMIN");
    }
    missing
}

/// The capabilities loading our programs needs that `cap_eff` lacks (CAP_SYS_ADMIN covers
/// both, as on kernels before 5.8).
pub(crate) fn missing_for_load(cap_eff: u64) -> Vec<&'static str> {
    let has = |cap: u32| cap_eff & (1u64 << cap) != 0;
    if has(CAP_SYS_ADMIN) {
        return Vec::new();
    }
    let mut missing = Vec::new();
    if !has(CAP_BPF) {
        missing.push("CAP_BPF");
    }
    if !has(CAP_PERFMON) {
        missing.push("CAP_PERFMON");
    }
    missing
}

/// Parses the `CapEff:` line of /proc/<pid>/status.
pub(crate) fn parse_cap_eff(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
}

/// This process's effective capabilities, if /proc/self/status says.
pub(crate) fn own_cap_eff() -> Option<u64> {
    parse_cap_eff(&std::fs::read_to_string("/proc/self/status").ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capability_check_names_what_is_missing() {
        assert_eq!(missing_capabilities(0), vec!["CAP_BPF", "CAP_NET_ADMIN"]);
        assert!(missing_capabilities(u64::MAX).is_empty());
        let bpf_net = (1 << CAP_BPF) | (1 << CAP_NET_ADMIN);
        assert!(missing_capabilities(bpf_net).is_empty());
        let sys_net = (1 << CAP_SYS_ADMIN) | (1 << CAP_NET_ADMIN);
        assert!(missing_capabilities(sys_net).is_empty());
        assert_eq!(missing_capabilities(1 << CAP_BPF), vec!["CAP_NET_ADMIN"]);
    }

    #[test]
    fn a_refused_load_lacks_bpf_or_perfmon() {
        assert_eq!(missing_for_load(1 << CAP_BPF), vec!["CAP_PERFMON"]);
        assert_eq!(missing_for_load(0), vec!["CAP_BPF", "CAP_PERFMON"]);
        assert!(missing_for_load((1 << CAP_BPF) | (1 << CAP_PERFMON)).is_empty());
        assert!(missing_for_load(1 << CAP_SYS_ADMIN).is_empty());
    }

    #[test]
    fn parses_cap_eff() {
        let status = "Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n";
        assert_eq!(parse_cap_eff(status), Some(0x1ff_ffff_ffff));
        assert_eq!(parse_cap_eff("Name: x\n"), None);
    }
}
