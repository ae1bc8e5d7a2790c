//! The settings `fixscope demo` (and `fixscope plot` of a capture) run with: every flag at
//! its default, as a user typing the command would get.

use fixscope_core::{PortSet, Role};

use crate::cli::{AnalysisArgs, AttachArg, IdleArg, LiveArgs, PriorityArg, TapArgs, TextArgs};

impl AnalysisArgs {
    /// The demo's analysis settings: 1 s intervals, text output, defaults elsewhere.
    pub fn demo(ports: PortSet) -> Self {
        AnalysisArgs {
            port_arg: Some(ports.clone()),
            ports,
            legs: Default::default(),
            protocol: Default::default(),
            role: Role::Server,
            interval_s: 1.0,
            max_pending: 1 << 20,
            timeout_s: 0.5,
            max_ms: 10_000.0,
            key: "11".into(),
            by: None,
            by_limit: fixscope_core::group::DEFAULT_BY_LIMIT,
            by_candidates: None,
            format: None,
            json: false,
            json_file: None,
            text: TextArgs::default(),
            records: Default::default(),
            verbose: false,
            trace: None,
            prometheus: None,
            prometheus_buckets: None,
            prometheus_sessions: 0,
            prometheus_by: false,
            prometheus_textfile: None,
            slowest: fixscope_core::slowest::DEFAULT_SLOWEST,
            html: None,
            hlog: None,
            hgrm: None,
        }
    }
}

impl LiveArgs {
    /// The demo's live settings on lo.
    pub fn demo(analysis: AnalysisArgs) -> Self {
        LiveArgs {
            iface: "lo".into(),
            analysis,
            cpu: None,
            idle: IdleArg::Backoff,
            duration_s: None,
            ring_mb: 64,
            ip: None,
            attach: AttachArg::Auto,
            priority: PriorityArg::Yield,
            tui: false,
            relinquish: None,
            breakdown: false,
            tls: Default::default(),
            tap: TapArgs {
                tap: false,
                time_stamp_type: None,
                buffer_mb: None,
                wire_timestamps: fixscope_core::wire_stamp::WireStampMode::Auto,
            },
        }
    }
}
