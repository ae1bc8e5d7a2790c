//! What a test needs from the machine, and running tests one at a time.
//!
//! A test that cannot run fails with a banner naming what is missing, so a CI log or a
//! newcomer's terminal says what to install instead of showing a green run that tested
//! nothing.

use std::process::Command;
use std::sync::{Mutex, MutexGuard};

/// Tests of one binary that attach to the same interfaces (same tc handle) or measure
/// latencies on this 2-core machine run one at a time.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn cannot_run(test: &str, what: &str) -> ! {
    panic!("\n\n!!!!!!!! {test} CANNOT RUN HERE: {what} !!!!!!!!\n")
}

/// Live capture, network namespaces and tc need root.
pub fn require_root(test: &str) {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        cannot_run(
            test,
            "it needs root (CAP_BPF + CAP_NET_ADMIN, network namespaces): run the tests as root \
             (sudo -E cargo test)",
        );
    }
}

/// An external program the test runs (tshark, tcpdump, tmux, mkfifo, ...).
pub fn require_tool(test: &str, tool: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !found {
        cannot_run(
            test,
            &format!("the tool `{tool}` is not installed (scripts/install-deps.sh installs it)"),
        );
    }
}

/// The running kernel's (major, minor) version, from uname(2).
pub fn kernel_version() -> (u32, u32) {
    // SAFETY: utsname is plain data; uname fills it and NUL-terminates its fields.
    let release = unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) != 0 {
            return (0, 0);
        }
        std::ffi::CStr::from_ptr(u.release.as_ptr())
            .to_string_lossy()
            .into_owned()
    };
    parse_release(&release)
}

fn parse_release(release: &str) -> (u32, u32) {
    let mut parts = release
        .split(|c: char| !c.is_ascii_digit())
        .filter(|p| !p.is_empty())
        .map(|p| p.parse().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

/// Whether the running kernel is at least `major.minor` (e.g. TCX needs 6.6).
pub fn kernel_at_least(major: u32, minor: u32) -> bool {
    kernel_version() >= (major, minor)
}

/// A test of a feature of newer kernels fails loudly on an older one instead of asserting
/// something the kernel cannot do; tests that adapt use [`kernel_at_least`].
pub fn require_kernel(test: &str, major: u32, minor: u32, why: &str) {
    let (a, b) = kernel_version();
    if (a, b) < (major, minor) {
        cannot_run(
            test,
            &format!("it needs Linux >= {major}.{minor} ({why}); this kernel is {a}.{b}"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_releases_parse() {
        assert_eq!(parse_release("6.1.0-26-amd64"), (6, 1));
        assert_eq!(parse_release("6.18.3"), (6, 18));
        assert_eq!(parse_release("5.15.0-91-generic"), (5, 15));
        assert!(kernel_version().0 >= 5, "this test machine runs Linux >= 5");
    }

    #[test]
    #[should_panic(expected = "CANNOT RUN HERE")]
    fn a_missing_tool_fails_loudly() {
        require_tool("a_missing_tool_fails_loudly", "no-such-tool-fixscope");
    }
}
