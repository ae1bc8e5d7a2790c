//! Network namespaces and veth pairs a test creates and always deletes (also when it
//! panics), and running commands inside them.

use std::io;
use std::os::fd::AsRawFd;
use std::process::Command;

/// Runs a command, panicking with its stderr on failure; returns its stdout.
pub fn run(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    assert!(
        out.status.success(),
        "{cmd} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Moves the calling thread into network namespace `name` (commands it spawns afterwards
/// run there too).
pub fn enter_netns(name: &str) -> io::Result<()> {
    let f = std::fs::File::open(format!("/var/run/netns/{name}"))?;
    // SAFETY: setns on a valid netns fd only affects the calling thread.
    if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Network namespaces (`ip netns add`), deleted on drop.
pub struct Netns(pub Vec<String>);

impl Netns {
    /// Creates `names` (deleting leftovers of the same name first).
    pub fn create(names: &[String]) -> Netns {
        let mut ns = Netns(Vec::new());
        for n in names {
            let _ = Command::new("ip").args(["netns", "del", n]).output();
            run("ip", &["netns", "add", n]);
            ns.0.push(n.clone());
        }
        ns
    }

    /// Whether `ip netns list` still shows any of them.
    pub fn any_listed(names: &[String]) -> bool {
        let listed = run("ip", &["netns", "list"]);
        names
            .iter()
            .any(|n| listed.split_whitespace().any(|w| w == n))
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", n]).output();
        }
    }
}

/// Two network namespaces joined by a veth pair, addressed 10.231.TAG.1/24 (in A) and
/// 10.231.TAG.2/24 (in B), links and loopback up. Dropping it deletes both namespaces and
/// with them the veth pair.
pub struct NetnsPair {
    pub ns_a: String,
    pub ns_b: String,
    /// veth end in A and in B.
    pub veth_a: String,
    pub veth_b: String,
    pub ip_a: String,
    pub ip_b: String,
    netns: Netns,
}

impl NetnsPair {
    /// `tag` keeps the names and subnets of the tests of one process apart.
    pub fn create(tag: u8) -> NetnsPair {
        let pid = std::process::id();
        let ns_a = format!("fxs-{pid}-{tag}a");
        let ns_b = format!("fxs-{pid}-{tag}b");
        // IFNAMSIZ is 16: "fx" + 7 digits + tag (<= 3) + side.
        let veth_a = format!("fx{}{tag}a", pid % 10_000_000);
        let veth_b = format!("fx{}{tag}b", pid % 10_000_000);
        let netns = Netns::create(&[ns_a.clone(), ns_b.clone()]);
        run(
            "ip",
            &[
                "-n", &ns_a, "link", "add", &veth_a, "type", "veth", "peer", "name", &veth_b,
                "netns", &ns_b,
            ],
        );
        let (ip_a, ip_b) = (format!("10.231.{tag}.1"), format!("10.231.{tag}.2"));
        for (ns, dev, ip) in [(&ns_a, &veth_a, &ip_a), (&ns_b, &veth_b, &ip_b)] {
            run(
                "ip",
                &["-n", ns, "addr", "add", &format!("{ip}/24"), "dev", dev],
            );
            run("ip", &["-n", ns, "link", "set", dev, "up"]);
            run("ip", &["-n", ns, "link", "set", "lo", "up"]);
        }
        NetnsPair {
            ns_a,
            ns_b,
            veth_a,
            veth_b,
            ip_a,
            ip_b,
            netns,
        }
    }

    /// The names of both namespaces.
    pub fn names(&self) -> &[String] {
        &self.netns.0
    }

    /// The ifindex of the veth end in namespace A.
    pub fn ifindex_a(&self) -> u32 {
        let out = run(
            "ip",
            &["-n", &self.ns_a, "-o", "link", "show", "dev", &self.veth_a],
        );
        out.split(':')
            .next()
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("cannot parse an ifindex from {out:?}"))
    }
}
