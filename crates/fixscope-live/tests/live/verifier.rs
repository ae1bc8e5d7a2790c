//! Verifier acceptance on the running kernel: both programs load (not attach) in every
//! configuration that changes what the verifier sees — the rodata it prunes on (role,
//! link-layer length, address filter, wakeup threshold, port ranges) and the attach type
//! (classic cls_bpf, and TCX where the kernel has it). `make test-kernel` runs this inside
//! a VM for each kernel of the matrix (scripts/test-kernel.sh).

use std::net::IpAddr;

use fixscope_core::ports::{PortSet, Role};
use fixscope_live::{verify_programs, AttachMode, LiveConfig, PROGRAM_NAMES};
use fixscope_testkit::{kernel_at_least, kernel_version, require_root, serial};

/// The kernel's cap on instructions walked per program load.
const COMPLEXITY_LIMIT: u32 = 1_000_000;

struct Case {
    what: &'static str,
    role: Role,
    l2_len: u32,
    ip: Option<IpAddr>,
    wakeup_bytes: usize,
    ports: &'static str,
}

const CASES: [Case; 3] = [
    Case {
        what: "server, Ethernet, no address filter, wake on every record",
        role: Role::Server,
        l2_len: 14,
        ip: None,
        wakeup_bytes: 0,
        ports: "9878",
    },
    Case {
        what: "client, L3 device, IPv4 filter, wake at a threshold",
        role: Role::Client,
        l2_len: 0,
        ip: Some(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)),
        wakeup_bytes: 1 << 20,
        ports: "9000-9010",
    },
    Case {
        what: "server, Ethernet, IPv6 filter, eight port ranges",
        role: Role::Server,
        l2_len: 14,
        ip: Some(IpAddr::V6(std::net::Ipv6Addr::LOCALHOST)),
        wakeup_bytes: 16 << 20,
        ports: "1,3,5-6,8,100-200,300,400,65535",
    },
];

#[test]
fn every_program_loads_in_every_configuration() {
    let _g = serial();
    require_root("every_program_loads_in_every_configuration");
    // A rejection shows the verifier's log (libbpf prints it as a warning).
    fixscope_live::set_libbpf_logging(true);
    let (major, minor) = kernel_version();
    // Classic cls_bpf everywhere; TCX where the kernel has it. Auto must pick a type this
    // kernel loads (TCX from 6.6, classic before).
    let mut modes = vec![AttachMode::TcFilter, AttachMode::Auto];
    if kernel_at_least(6, 6) {
        modes.push(AttachMode::Tcx);
    }
    let mut loads = 0;
    for case in &CASES {
        for &mode in &modes {
            let mut cfg = LiveConfig::new("lo", case.ports.parse::<PortSet>().expect("ports"));
            cfg.role = case.role;
            cfg.ip_filter = case.ip;
            cfg.wakeup_threshold_bytes = case.wakeup_bytes;
            cfg.ring_bytes = 1 << 20;
            cfg.attach = mode;
            let progs = verify_programs(&cfg, case.l2_len).unwrap_or_else(|e| {
                panic!(
                    "Linux {major}.{minor} rejects the programs ({}, {mode:?}): {e:#?}",
                    case.what
                )
            });
            let names: Vec<&str> = progs.iter().map(|p| p.name.as_str()).collect();
            assert_eq!(names, PROGRAM_NAMES, "{}", case.what);
            for p in &progs {
                assert!(p.insns > 100, "{} has its code: {p:?}", p.name);
                if kernel_at_least(5, 16) {
                    assert!(
                        p.verified_insns > 0 && p.verified_insns < COMPLEXITY_LIMIT,
                        "{} verified within the kernel's limit: {p:?}",
                        p.name
                    );
                }
                // The figure docs/architecture.md quotes; visible with --nocapture.
                println!(
                    "Linux {major}.{minor} {mode:?} [{}]: {} {} insns, {} verified",
                    case.what, p.name, p.insns, p.verified_insns
                );
            }
            loads += 1;
        }
    }
    assert_eq!(loads, CASES.len() * modes.len());
}

/// `--breakdown`'s object (socket fexit/fentry and scheduler tp_btf programs) loads in
/// each role and filter shape; its CO-RE relocations resolve against this kernel's BTF.
#[test]
fn breakdown_programs_load_in_every_configuration() {
    let _g = serial();
    require_root("breakdown_programs_load_in_every_configuration");
    fixscope_live::set_libbpf_logging(true);
    let (major, minor) = kernel_version();
    for case in &CASES {
        let mut cfg = LiveConfig::new("lo", case.ports.parse::<PortSet>().expect("ports"));
        cfg.role = case.role;
        cfg.ip_filter = case.ip;
        cfg.breakdown = true;
        let progs = fixscope_live::verify_breakdown_programs(&cfg).unwrap_or_else(|e| {
            panic!(
                "Linux {major}.{minor} rejects the breakdown programs ({}): {e:#?}",
                case.what
            )
        });
        let names: Vec<&str> = progs.iter().map(|p| p.name.as_str()).collect();
        // One whole socket hook set (fentry/fexit where the kernel allows, tracepoints
        // otherwise) and, on every kernel of the matrix, the scheduler's.
        let socket = &names[..names.len() - 2];
        assert!(
            socket == fixscope_live::SOCKET_FENTRY_PROGRAMS
                || socket == fixscope_live::SOCKET_TRACEPOINT_PROGRAMS,
            "{}: {names:?}",
            case.what
        );
        assert_eq!(
            names[names.len() - 2..],
            fixscope_live::SCHED_PROGRAMS,
            "{}",
            case.what
        );
        for p in &progs {
            assert!(p.insns > 5, "{} has its code: {p:?}", p.name);
            println!(
                "Linux {major}.{minor} breakdown [{}]: {} {} insns, {} verified",
                case.what, p.name, p.insns, p.verified_insns
            );
        }
    }
}
