//! `fixscope check`: every probe's answer (`probe.rs`) and what would run on this kernel —
//! the attach mode and `--breakdown`'s hooks — decided as a capture decides it: by loading
//! the real programs (not attaching them). For users on kernels we cannot boot (RHEL,
//! Ubuntu, UEK) to see, and send us, what works.

use serde::Serialize;

use crate::config::{AttachMode, LiveConfig};
use crate::probe::{self, Feature, NeededFor, Presence};
use crate::{breakdown, LiveError};

/// The result of loading one configuration of the programs.
#[derive(Clone, Debug, Serialize)]
pub struct LoadResult {
    /// What was loaded: "tc programs for clsact", "tc programs for TCX", "breakdown".
    pub what: String,
    pub loaded: bool,
    /// The programs and their size after the verifier's rewrites, when loaded.
    pub programs: Vec<LoadedProgram>,
    /// The error (with its causes), when not.
    pub error: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct LoadedProgram {
    pub name: String,
    pub insns: u32,
    /// Instructions the verifier walked (Linux >= 5.16 reports it; 0 before).
    pub verified_insns: u32,
}

/// Everything `fixscope check` found.
#[derive(Clone, Debug, Serialize)]
pub struct KernelCheck {
    /// `uname -r` (printed, never compared).
    pub kernel_release: String,
    /// /sys/kernel/realtime says 1 (PREEMPT_RT).
    pub preempt_rt: bool,
    /// Why this process may not load and attach (`None`: it may).
    pub privilege_problem: Option<String>,
    pub capture_features: Vec<Feature>,
    pub breakdown_features: Vec<Feature>,
    /// tcp_recvmsg's (argument count, index of `flags`) in the kernel's BTF.
    pub tcp_recvmsg_args: Option<(u32, u32)>,
    /// RLIMIT_MEMLOCK (soft, hard) in bytes, `None` = unlimited; matters only without
    /// memory-cgroup accounting (`memcg_accounting` feature).
    pub memlock_limit: Option<(Option<u64>, Option<u64>)>,
    /// The deciding checks: the real programs loaded, each attach type this kernel has.
    pub loads: Vec<LoadResult>,
    /// What `fixscope live --attach auto` would use: "tcx", "tc", or "none".
    pub attach_mode: String,
    /// The hooks `--breakdown` would use ("fentry/fexit socket hooks + scheduler hooks",
    /// ...), or `None` ...
    pub breakdown_hooks: Option<String>,
    /// ... and then why it cannot run.
    pub breakdown_error: Option<String>,
}

impl KernelCheck {
    /// Whether live capture can run here.
    pub fn capture_works(&self) -> bool {
        self.attach_mode != "none"
    }

    /// Runs every probe and the loads. Never fails: what cannot be found out is reported.
    pub fn run() -> KernelCheck {
        let privilege_problem = crate::sys::check_privileges().err().map(|e| e.to_string());
        let capture_features = probe::capture_features();
        let tcx = capture_features
            .iter()
            .find(|f| f.id == "tcx")
            .map(|f| f.present.clone());
        let mut loads = Vec::new();
        let mut attach_mode = "none";
        // Classic first: the fallback everyone has; then TCX where the probe found it.
        let mut modes = vec![(AttachMode::TcFilter, "tc programs for clsact filters")];
        if tcx != Some(Presence::No) {
            modes.push((AttachMode::Tcx, "tc programs for TCX links"));
        }
        for (mode, what) in modes {
            let mut cfg = check_config();
            cfg.attach = mode;
            let r = load_result(what, crate::load::verify_programs(&cfg, 14));
            if r.loaded {
                attach_mode = if mode == AttachMode::Tcx && tcx == Some(Presence::Yes) {
                    "tcx"
                } else if attach_mode == "none" {
                    "tc"
                } else {
                    attach_mode
                };
            }
            loads.push(r);
        }
        let mut cfg = check_config();
        cfg.breakdown = true;
        let bd = load_result(
            "--breakdown programs",
            breakdown::verify_breakdown_programs(&cfg),
        );
        let breakdown_hooks = bd.loaded.then(|| breakdown_hooks(&bd.programs));
        let breakdown_error = bd.error.clone();
        loads.push(bd);
        KernelCheck {
            kernel_release: kernel_release(),
            preempt_rt: std::fs::read_to_string("/sys/kernel/realtime")
                .is_ok_and(|s| s.trim() == "1"),
            privilege_problem,
            capture_features,
            breakdown_features: probe::breakdown_features(),
            tcp_recvmsg_args: probe::tcp_recvmsg_args(),
            memlock_limit: probe::memlock_limit().ok(),
            loads,
            attach_mode: attach_mode.to_string(),
            breakdown_hooks,
            breakdown_error,
        }
    }

    /// The required capture features this kernel lacks.
    pub fn missing_for_capture(&self) -> Vec<&Feature> {
        self.capture_features
            .iter()
            .filter(|f| f.needed_for == NeededFor::Capture && f.present == Presence::No)
            .collect()
    }
}

/// Watches every port: the configuration with the most code the verifier must accept.
fn check_config() -> LiveConfig {
    let mut cfg = LiveConfig::new("lo", "1-65535".parse().expect("a valid port range"));
    cfg.ring_bytes = 1 << 20;
    cfg
}

fn load_result(what: &str, r: Result<Vec<crate::load::VerifiedProgram>, LiveError>) -> LoadResult {
    match r {
        Ok(progs) => LoadResult {
            what: what.to_string(),
            loaded: true,
            programs: progs
                .into_iter()
                .map(|p| LoadedProgram {
                    name: p.name,
                    insns: p.insns,
                    verified_insns: p.verified_insns,
                })
                .collect(),
            error: None,
        },
        Err(e) => LoadResult {
            what: what.to_string(),
            loaded: false,
            programs: Vec::new(),
            error: Some(crate::error::chain(&e)),
        },
    }
}

/// "fentry/fexit socket hooks + scheduler hooks" from the programs that loaded.
fn breakdown_hooks(progs: &[LoadedProgram]) -> String {
    let has = |n: &str| progs.iter().any(|p| p.name == n);
    let socket = if has(breakdown::SOCKET_FENTRY_PROGRAMS[0]) {
        "fentry/fexit socket hooks (tcp_recvmsg, tcp_sendmsg)"
    } else {
        "socket tracepoints (sock_recv_length, tcp_sendmsg_locked, sock_send_length)"
    };
    if has(breakdown::SCHED_PROGRAMS[0]) {
        format!("{socket} + scheduler hooks (tp_btf sched_wakeup, sched_switch)")
    } else {
        format!("{socket}; no scheduler hooks: sched_delay is not measured")
    }
}

fn kernel_release() -> String {
    rustix::system::uname()
        .release()
        .to_string_lossy()
        .into_owned()
}
