//! The feature probes (`fixscope_live::probe`) against what upstream Linux brought when:
//! on the matrix's Debian kernels, which carry no BPF backports, each probe must answer as
//! the kernel's version says. This is the one place a version number is compared — as the
//! independent truth the probes are checked against, never to decide anything. (On a
//! distribution kernel with backports — RHEL — the probes say more than the version; this
//! test is for vanilla-based kernels, and says so when it fails.)

use fixscope_live::probe::{self, NeededFor, Presence};
use fixscope_testkit::{kernel_at_least, kernel_version, require_root, serial};

#[test]
fn probes_match_the_upstream_versions_on_vanilla_kernels() {
    let _g = serial();
    require_root("probes_match_the_upstream_versions_on_vanilla_kernels");
    let (major, minor) = kernel_version();
    let features = probe::capture_features();
    for f in &features {
        println!("Linux {major}.{minor}: {} = {:?}", f.id, f.present);
        if f.needed_for == NeededFor::Capture {
            assert_eq!(
                f.present,
                Presence::Yes,
                "{} is in every kernel of the matrix (>= 5.10)",
                f.describe()
            );
        }
    }
    let get = |id: &str| {
        features
            .iter()
            .find(|f| f.id == id)
            .unwrap_or_else(|| panic!("no probe {id}"))
            .present
            .clone()
    };
    let expect = |yes: bool| if yes { Presence::Yes } else { Presence::No };
    assert_eq!(
        get("tcx"),
        expect(kernel_at_least(6, 6)),
        "TCX probe on Linux {major}.{minor} (a vanilla kernel has TCX from 6.6)"
    );
    assert_eq!(
        get("memcg_accounting"),
        expect(kernel_at_least(5, 11)),
        "memcg accounting probe on Linux {major}.{minor} (5.11)"
    );
    // tcp_recvmsg: 6 arguments (nonblock) before 5.19, 5 until 6.18 dropped addr_len.
    let want = if !kernel_at_least(5, 19) {
        (6, 4)
    } else if !kernel_at_least(6, 18) {
        (5, 3)
    } else {
        (4, 3)
    };
    assert_eq!(
        probe::tcp_recvmsg_args(),
        Some(want),
        "tcp_recvmsg's (argument count, flags index) from the BTF of Linux {major}.{minor}"
    );
}

/// Before 5.11 BPF memory is charged to RLIMIT_MEMLOCK: loading must raise it, or the
/// 64 KiB default of a fresh VM would refuse the first ring. Everywhere: the programs load
/// with the soft limit lowered to 64 KiB first.
#[test]
fn programs_load_with_the_default_memlock_limit() {
    let _g = serial();
    require_root("programs_load_with_the_default_memlock_limit");
    let mut before = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `before` is a valid rlimit to fill.
    assert_eq!(
        unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut before) },
        0
    );
    let low = libc::rlimit {
        rlim_cur: 64 << 10,
        rlim_max: before.rlim_max,
    };
    // SAFETY: `low` is a valid rlimit.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &low) }, 0);
    let mut cfg = fixscope_live::LiveConfig::new("lo", "9000".parse().expect("port"));
    cfg.ring_bytes = 16 << 20;
    cfg.attach = fixscope_live::AttachMode::TcFilter;
    let loaded = fixscope_live::verify_programs(&cfg, 14);
    let (soft, _) = probe::memlock_limit().expect("getrlimit");
    // SAFETY: `before` is a valid rlimit (the rest of the tests run as before).
    unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &before) };
    let progs = loaded
        .unwrap_or_else(|e| panic!("the programs load with RLIMIT_MEMLOCK at 64 KiB: {e:#?}"));
    assert_eq!(progs.len(), 2);
    if !kernel_at_least(5, 11) {
        // Raised (to unlimited as root; a VM's root may exceed the hard limit).
        assert_ne!(soft, Some(64 << 10), "raised where the kernel charges it");
    }
}
