//! tc hygiene for the live tests: listing filters, and removing a clsact qdisc a test
//! caused to exist when fixscope itself leaves it (e.g. after a SIGKILL).

use std::process::Command;

/// `tc filter show dev DEV ingress` + `egress` (empty when tc is missing).
pub fn tc_filter_show(dev: &str) -> String {
    let mut s = String::new();
    for dir in ["ingress", "egress"] {
        if let Ok(o) = Command::new("tc")
            .args(["filter", "show", "dev", dev, dir])
            .output()
        {
            s.push_str(&String::from_utf8_lossy(&o.stdout));
        }
    }
    s
}

/// Whether `dev` has a clsact qdisc now.
pub fn has_clsact(dev: &str) -> bool {
    Command::new("tc")
        .args(["qdisc", "show", "dev", dev])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("clsact"))
        .unwrap_or(false)
}

/// Removes `dev`'s clsact qdisc on drop if it was not there when created and no filter is
/// left on it.
pub struct ClsactCleanup {
    dev: String,
    had: bool,
}

impl ClsactCleanup {
    pub fn new(dev: &str) -> ClsactCleanup {
        ClsactCleanup {
            dev: dev.to_string(),
            had: has_clsact(dev),
        }
    }
}

impl Drop for ClsactCleanup {
    fn drop(&mut self) {
        if !self.had && tc_filter_show(&self.dev).trim().is_empty() {
            let _ = Command::new("tc")
                .args(["qdisc", "del", "dev", &self.dev, "clsact"])
                .output();
        }
    }
}
