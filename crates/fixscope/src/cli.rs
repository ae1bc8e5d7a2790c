//! Command-line flags. Flags are parsed raw by clap, then validated into typed
//! configuration in one place ([`AnalysisArgs::pipeline_config`]).
//!
//! Short flags follow ebpf-fix-latency-tool (`-i -p -r -m -t -c -s -x -v`) so its users feel
//! at home.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, Parser, Subcommand};
use fixscope_core::correlate::{CorrelatorLimits, KeySpec};
use fixscope_core::{PipelineConfig, PortSet, Role};

#[derive(Parser, Debug)]
#[command(name = "fixscope", version, about = "FIX request→response latency from TCP traffic", long_about = None, allow_negative_numbers = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Analyse pcap/pcapng captures (tcpdump, tshark, taps).
    Pcap(PcapArgs),
}

/// Options shared by every analysing command (pcap, live).
#[derive(Args, Debug, Clone)]
pub struct AnalysisArgs {
    /// Watched FIX port(s) of the acceptor: PORT, LO-HI, or a comma-separated list.
    #[arg(short = 'p', long = "port", value_name = "PORT|LO-HI[,...]")]
    pub ports: PortSet,
    /// Which end we watch: `server` (the acceptor: requests arrive at the port) or
    /// `client` (the initiator: requests go to the port).
    #[arg(long, default_value = "server", value_name = "server|client")]
    pub role: Role,
    /// Interval report period in seconds (capture time for pcap); 0 disables.
    #[arg(
        short = 'r',
        long = "interval",
        default_value = "1",
        value_name = "SECS",
        allow_negative_numbers = true
    )]
    pub interval_s: f64,
    /// Most requests waiting for a response; the oldest is evicted beyond it.
    #[arg(short = 'm', long = "max-pending", default_value_t = 1 << 20, value_name = "N")]
    pub max_pending: usize,
    /// Seconds a request waits for responses before it counts as timed out.
    #[arg(
        short = 't',
        long = "timeout",
        default_value = "0.5",
        value_name = "SECS",
        allow_negative_numbers = true
    )]
    pub timeout_s: f64,
    /// Top of the histogram range in milliseconds; larger latencies are counted as over range.
    #[arg(
        short = 'x',
        long = "max-ms",
        default_value = "10000",
        value_name = "MS",
        allow_negative_numbers = true
    )]
    pub max_ms: f64,
    /// Correlation key: FIX tag(s), e.g. `11` (ClOrdID), `41`, or a compound `11,1`.
    #[arg(long, default_value = "11", value_name = "TAG[,TAG...]")]
    pub key: String,
    /// JSON lines instead of text (schema: docs/output-json.md).
    #[arg(long)]
    pub json: bool,
    /// Also write every request and response (time, session, direction, MsgType, key) as
    /// CSV to FILE, to compare message by message with an engine's logs.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
}

impl AnalysisArgs {
    /// Validates the flags into the pipeline's configuration.
    pub fn pipeline_config(&self) -> Result<PipelineConfig> {
        let key = KeySpec::parse(&self.key).map_err(|e| anyhow::anyhow!("--key: {e}"))?;
        if !(self.timeout_s.is_finite() && self.timeout_s > 0.0 && self.timeout_s <= 3600.0) {
            bail!(
                "-t/--timeout must be between 0 and 3600 seconds, got {}",
                self.timeout_s
            );
        }
        if !(self.interval_s.is_finite() && self.interval_s >= 0.0 && self.interval_s <= 86400.0) {
            bail!(
                "-r/--interval must be between 0 and 86400 seconds, got {}",
                self.interval_s
            );
        }
        if !(self.max_ms.is_finite() && self.max_ms >= 0.001 && self.max_ms <= 3_600_000.0) {
            bail!(
                "-x/--max-ms must be between 0.001 and 3600000, got {}",
                self.max_ms
            );
        }
        if self.max_pending == 0 || self.max_pending > 1 << 28 {
            bail!(
                "-m/--max-pending must be between 1 and {}, got {}",
                1u64 << 28,
                self.max_pending
            );
        }
        Ok(PipelineConfig {
            key,
            correlation: CorrelatorLimits {
                max_pending: self.max_pending,
                ttl_ns: (self.timeout_s * 1e9) as u64,
            },
            highest_ns: (self.max_ms * 1e6) as u64,
            interval_ns: (self.interval_s * 1e9) as u64,
            ..PipelineConfig::default()
        })
    }
}

#[derive(Args, Debug)]
pub struct PcapArgs {
    /// Capture files, read in order as one timeline.
    #[arg(required = true, value_name = "CAPTURE")]
    pub captures: Vec<PathBuf>,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
}
