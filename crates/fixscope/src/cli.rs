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

pub use crate::cli_text::TextArgs;

#[derive(Parser, Debug)]
#[command(
    name = "fixscope",
    version,
    disable_version_flag = true,
    about = "FIX request→response latency from TCP traffic",
    long_about = None,
    allow_negative_numbers = true
)]
pub struct Cli {
    /// Print the version (`-v` as the seed tool has it; `-V`, `--version` too). After a
    /// command, `-v` is that command's `--verbose`.
    #[arg(short = 'v', short_alias = 'V', long = "version", action = clap::ArgAction::Version)]
    version: (),
    /// Read settings from FILE (TOML): a table per subcommand (`[live]`, `[pcap]`), keys
    /// the long flag names; the environment and the command line override it. `fixscope
    /// config example` prints every key with its default, `fixscope config check` validates.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// One-command demo: the built-in exchange and client on loopback, measured live
    /// (needs root), compared with the exchange's own ground truth.
    Demo(DemoArgs),
    /// Measure live: attach eBPF programs to an interface's TC hooks (needs root).
    Live(LiveArgs),
    /// Analyse pcap/pcapng captures (tcpdump, tshark, taps).
    Pcap(PcapArgs),
    /// The built-in FIX exchange simulator and load client.
    #[command(subcommand)]
    Sim(SimCommand),
    /// Draw the percentile distribution and latency over time of captures or fixscope's
    /// JSON output as one SVG or PNG image.
    Plot(PlotArgs),
    /// Remove tc filters left by a fixscope that was killed with SIGKILL (older kernels
    /// without TCX; TCX links vanish by themselves).
    Detach(DetachArgs),
    /// Read HdrHistogram interval logs written with `--hlog` (several hosts, several days),
    /// merge them per tag and print the summary report as live/pcap do.
    Report(ReportArgs),
    /// Did latency change? Compare a baseline with a candidate (captures or `--hlog`
    /// logs) percentile by percentile, with confidence intervals that hold for the whole
    /// table; exit 3 when something got worse (a CI gate; method: docs/compare.md).
    Compare(CompareArgs),
    // ---- #20: kernel feature probes.
    /// Probe this kernel for what live capture and --breakdown need (each feature with the
    /// upstream Linux that brought it), load the real programs without attaching them, and
    /// say what would run (attach mode, breakdown hooks). Needs root for the probes. Exit
    /// status 0 when live capture can run here, 1 when it cannot.
    Check(CheckArgs),
    /// Run the mode a configuration file names (`command = "live"`) with the file's
    /// settings: `fixscope run --config FILE [ARGS...]`, one command line for any service.
    Run(crate::cli_config::RunArgs),
    /// Configuration files: `check` one, print the commented `example`, list the `keys`.
    #[command(subcommand)]
    Config(crate::cli_config::ConfigCommand),
    // ---- #48: what packages install beside the binary.
    /// Print the shell completion script for bash, zsh, fish, elvish or PowerShell (e.g.
    /// `fixscope completions bash > /etc/bash_completion.d/fixscope`).
    Completions(crate::cli_packaging::CompletionsArgs),
    /// Write the manual pages (fixscope.1, fixscope-live.1, …) into DIR: for packagers.
    #[command(hide = true)]
    Manpages(crate::cli_packaging::ManpagesArgs),
}

/// Options shared by every analysing command (pcap, live).
#[derive(Args, Debug, Clone)]
pub struct AnalysisArgs {
    /// Watched FIX port(s) of the acceptor: PORT, LO-HI, or a comma-separated list
    /// (not needed with --leg).
    #[arg(
        short = 'p',
        long = "port",
        value_name = "PORT|LO-HI[,...]",
        required_unless_present = "legs"
    )]
    pub port_arg: Option<PortSet>,
    /// The ports watched: `-p`'s and every `--leg`'s ([`AnalysisArgs::resolve_ports`]).
    #[arg(skip = PortSet::single(9878))]
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
    /// Most requests tracked at once (bounds memory); the oldest is evicted (counted) beyond it.
    #[arg(short = 'm', long = "max-pending", default_value_t = 1 << 20, value_name = "N")]
    pub max_pending: usize,
    /// Alert threshold in seconds: a request with no response within it is counted
    /// `timed_out` (and `late` if answered after); its latency is recorded however late.
    #[arg(
        short = 't',
        long = "timeout",
        default_value = "0.5",
        value_name = "SECS",
        allow_negative_numbers = true
    )]
    pub timeout_s: f64,
    /// Top of the histogram range in milliseconds; larger latencies are counted as above
    /// range (in max, mean and percentile ranks; a percentile that falls there says so).
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
    /// Also break every stage's latency down by the value of these FIX tags of the orders
    /// (e.g. `55` symbol, `1` account, `100` ExDestination, `49`; at most 3 tags), read from
    /// the request (the response when the request lacks it). With a binary `--protocol`,
    /// its fields by name too (`Stock`, `SecurityID`, `Side`: docs/protocols.md).
    #[arg(long, value_name = "TAG[,TAG...]")]
    pub by: Option<String>,
    /// With `--by`: the N busiest values of each tag (most requests) get their own figures;
    /// the others are reported together as `(other)`, counted.
    #[arg(long, default_value_t = fixscope_core::group::DEFAULT_BY_LIMIT, value_name = "N")]
    pub by_limit: usize,
    /// With `--by`: how many values of each tag are tracked with histograms of their own to
    /// choose the busiest from (the first M seen; default max(4N, N+64); memory: up to
    /// ~110 KB per value). Values first seen later go to `(other)`, counted; the report says
    /// when one of them was busier than a named value.
    #[arg(long, value_name = "M", requires = "by")]
    pub by_candidates: Option<usize>,
    /// What stdout carries: `text` for people, `json` for JSON lines (schema:
    /// docs/output-json.md).
    #[arg(long, value_enum, value_name = "text|json")]
    pub format: Option<Format>,
    /// JSON lines on stdout: the same as `--format json`.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Also write the report as JSON lines to FILE (whatever stdout carries).
    #[arg(long, value_name = "FILE")]
    pub json_file: Option<PathBuf>,
    /// How much the text report shows (`--full`, `--counters all`).
    #[command(flatten)]
    pub text: TextArgs,
    /// Every order kept as Parquet (`--records`, `--records-rotate`).
    #[command(flatten)]
    pub records: crate::cli_records::RecordsArgs,
    /// A router hop by hop (`--leg`, `--link`, `--link-window`).
    #[command(flatten)]
    pub legs: crate::cli_legs::LegArgs,
    /// The order protocol per port (`--protocol PORTS=NAME`).
    #[command(flatten)]
    pub protocol: crate::cli_protocol::ProtocolArgs,
    /// Verbose: say what is being read/attached and the source's counters on stderr.
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// Also write every request and response (time, session, direction, MsgType, key) as
    /// CSV to FILE, to compare message by message with an engine's logs.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Serve Prometheus metrics on http://[ADDR:]PORT/metrics (127.0.0.1 unless ADDR is
    /// given; e.g. 9874): native and classic latency histograms, counters, exemplars,
    /// refreshed every interval (`-r`; with `-r 0`, every second without interval lines).
    #[arg(long, value_name = "[ADDR:]PORT")]
    pub prometheus: Option<String>,
    /// Classic histogram bucket bounds in seconds, ascending (default: 1-2.5-5 per decade
    /// from 1us to 10s).
    #[arg(long, value_name = "SECS,SECS,...")]
    pub prometheus_buckets: Option<String>,
    /// Also export per-session series (requests, responses, first-response histogram) for
    /// the first N sessions seen (at most 4096).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub prometheus_sessions: usize,
    /// Also export `--by`'s latency per value (labels `tag`, `value`, `stage`; opt-in: the
    /// values come from the wire, bounded by `--by-limit`).
    #[arg(long, requires = "by")]
    pub prometheus_by: bool,
    /// Write the final metrics to FILE for node_exporter's textfile collector (text format,
    /// written beside FILE and renamed over it).
    #[arg(long, value_name = "FILE")]
    pub prometheus_textfile: Option<PathBuf>,
    /// Show the N slowest orders per stage (ClOrdID, session, request time, latency,
    /// response) in the summary, JSON and pictures; 0 disables.
    #[arg(long, default_value_t = fixscope_core::slowest::DEFAULT_SLOWEST, value_name = "N")]
    pub slowest: usize,
    /// Also write a self-contained HTML report (tables, charts, slowest orders, counters)
    /// to FILE at the end (and at every SPACE live); it opens offline.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Also write an HdrHistogram interval log to FILE: one compressed histogram per interval
    /// (`-r`) and tag (stage, stage.MsgType), values in ns (format: docs/output-hlog.md;
    /// read back with `fixscope report`).
    #[arg(long, value_name = "FILE")]
    pub hlog: Option<PathBuf>,
    /// Also write the cumulative percentile distribution (µs) for HdrHistogram's plotter to
    /// FILE (first_response) and FILE with `.ack`, `.fill`, `.ack_to_fill` before the
    /// extension for the other stages with data.
    #[arg(long, value_name = "FILE")]
    pub hgrm: Option<PathBuf>,
}

/// `--slowest` limit: the lists are copied at every report, so they stay small.
pub(crate) const MAX_SLOWEST: usize = 1000;

/// `--format`: what stdout carries.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

impl Format {
    /// stdout's format from `--json` and `--format` (`--json` is `--format json`).
    fn of(json: bool, format: Option<Format>) -> Format {
        match (json, format) {
            (true, _) => Format::Json,
            (false, Some(f)) => f,
            (false, None) => Format::Text,
        }
    }
}

impl AnalysisArgs {
    /// The format of stdout (`--json` is `--format json`).
    pub fn stdout_format(&self) -> Format {
        Format::of(self.json, self.format)
    }

    /// Validates the flags into the pipeline's configuration.
    pub fn pipeline_config(&self) -> Result<PipelineConfig> {
        let key = KeySpec::parse(&self.key).map_err(|e| anyhow::anyhow!("--key: {e}"))?;
        if !(self.timeout_s.is_finite() && self.timeout_s > 0.0 && self.timeout_s <= 3600.0) {
            bail!(
                "-t/--timeout must be greater than 0 and at most 3600 seconds, got {}",
                self.timeout_s
            );
        }
        if !(self.interval_s.is_finite() && self.interval_s >= 0.0 && self.interval_s <= 86400.0) {
            bail!(
                "-r/--interval must be between 0 (off) and 86400 seconds, got {}",
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
        if self.slowest > MAX_SLOWEST {
            bail!(
                "--slowest must be between 0 and {MAX_SLOWEST}, got {}",
                self.slowest
            );
        }
        let protocols = self
            .protocol
            .ports(&[("--leg", !self.legs.legs.is_empty())])?;
        let by = match &self.by {
            Some(list) => Some(
                crate::cli_protocol::by_fields(list, &protocols)
                    .and_then(|fields| {
                        fixscope_core::group::GroupSpec::of_fields(fields, self.by_limit)
                    })
                    .and_then(|spec| match self.by_candidates {
                        Some(m) => spec.with_candidates(m),
                        None => Ok(spec),
                    })
                    .map_err(|e| anyhow::anyhow!("--by: {e}"))?,
            ),
            None => None,
        };
        Ok(PipelineConfig {
            key,
            by,
            correlation: CorrelatorLimits {
                max_pending: self.max_pending,
                ttl_ns: (self.timeout_s * 1e9) as u64,
            },
            highest_ns: (self.max_ms * 1e6) as u64,
            interval_ns: self.effective_interval_ns(),
            slowest: self.slowest,
            hops: self.legs.hop_config((self.timeout_s * 1e9) as u64)?,
            protocols,
            ..PipelineConfig::default()
        })
    }

    /// Sets the watched ports from `-p` and `--leg`: called once after parsing.
    pub fn resolve_ports(&mut self) -> Result<()> {
        self.ports = self.legs.watched_ports(self.port_arg.as_ref())?;
        Ok(())
    }
}

#[derive(Args, Debug)]
pub struct PcapArgs {
    /// Capture files, read in order as one timeline (`-` for stdin).
    #[arg(
        required_unless_present = "points",
        conflicts_with = "points",
        value_name = "CAPTURE"
    )]
    pub captures: Vec<PathBuf>,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    #[command(flatten)]
    pub points: crate::cli_points::PointArgs,
    /// Threads; the output is one thread's, byte for byte, whatever N. `--threads 1`:
    /// everything on one thread (the pipeline reads the captures itself). `--threads 2`:
    /// one pipeline in two stages — a reading thread reads, decodes, reassembles and frames;
    /// the other extracts, correlates and reports (BENCHMARKS.md §2e). `--threads N` (3 or
    /// more): N worker pipelines, connections sharded across them by (client IP, server IP,
    /// server port) and their figures merged; each worker reads the capture files itself.
    /// Default: one thread on one core, two stages on 2–3 cores, one worker per core from 4.
    /// Captures on stdin or a pipe run in two stages; `--trace` and Prometheus on one
    /// pipeline with a reading thread. A FIX session whose connections come from several
    /// (client IP, server IP, server port) — a failover — cannot be sharded: the run says
    /// so on stderr and analyses the capture again in two stages (stdout is held back until
    /// the end).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// FIX over TLS: decrypt with the secrets of this NSS key log (`SSLKEYLOGFILE`
    /// format; repeatable). TLS 1.3 and TLS 1.2 AEAD suites; a TLS connection without its
    /// key is counted (`tls_no_key`) and not measured. docs/tls.md.
    #[arg(long = "tls-keylog", value_name = "FILE")]
    pub tls_keylog: Vec<PathBuf>,
    #[command(flatten)]
    pub market_data: crate::cli_md::MdArgs,
    /// Timestamps from the wire: `auto` finds an Arista MetaWatch or Cisco Nexus 3550 HPT
    /// trailer by its FCS check, an Ixia or Gigamon trailer by its signature and checksum,
    /// or an Arista 7280 header by its EtherType, and uses its time; `off` keeps the
    /// capture's own; a kind reads only that kind (docs/tap.md). `arista-7150` and
    /// `fusion` (tick counters and their keyframes), `vss` and `arista-7280-mac` (the
    /// source MAC) have no check and are read only when named, never by `auto`.
    #[arg(
        long,
        default_value = "auto",
        value_name = "auto|off|metawatch|hpt|arista-header|ixia|gigamon|arista-7150|fusion|vss|arista-7280-mac"
    )]
    pub wire_timestamps: fixscope_core::wire_stamp::WireStampMode,
}

#[derive(Args, Debug)]
pub struct PlotArgs {
    /// Captures (pcap/pcapng, analysed with the flags below) or fixscope's JSON lines
    /// (`--json`/`--json-file` output); one line per input and stage, so runs compare.
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// The image to write: `.svg` or `.png`.
    #[arg(short = 'o', long = "output", value_name = "OUT.svg|OUT.png")]
    pub output: PathBuf,
    /// Stages to draw (repeatable): first_response, ack, fill, ack_to_fill. Default: all.
    #[arg(long = "stage", value_name = "STAGE")]
    pub stage: Vec<String>,
    /// Captures only: the watched FIX port(s), as for `fixscope pcap`.
    #[arg(short = 'p', long = "port", value_name = "PORT|LO-HI[,...]")]
    pub ports: Option<PortSet>,
    /// Captures only: `server` or `client`, as for `fixscope pcap`.
    #[arg(long, default_value = "server", value_name = "server|client")]
    pub role: Role,
    /// Captures only: interval length in seconds for the chart over time.
    #[arg(
        short = 'r',
        long = "interval",
        default_value = "1",
        value_name = "SECS"
    )]
    pub interval_s: f64,
    /// Captures only: top of the histogram range in milliseconds.
    #[arg(
        short = 'x',
        long = "max-ms",
        default_value = "10000",
        value_name = "MS"
    )]
    pub max_ms: f64,
    /// Captures only: the correlation key's tag(s).
    #[arg(long, default_value = "11", value_name = "TAG[,TAG...]")]
    pub key: String,
}

impl PlotArgs {
    /// The analysis settings for a capture input (`None` without `-p`).
    pub fn analysis(&self) -> Option<AnalysisArgs> {
        let mut a = AnalysisArgs::demo(self.ports.clone()?);
        a.role = self.role;
        a.interval_s = self.interval_s;
        a.max_ms = self.max_ms;
        a.key = self.key.clone();
        a.slowest = 0;
        Some(a)
    }

    /// The stages to draw, in the usual order.
    pub fn stages(&self) -> Result<Vec<fixscope_core::correlate::Stage>> {
        use fixscope_core::correlate::Stage;
        for name in &self.stage {
            if Stage::from_name(name).is_none() {
                let names: Vec<&str> = Stage::EVERY.iter().map(|s| s.name()).collect();
                bail!("--stage {name}: one of {}", names.join(", "));
            }
        }
        Ok(Stage::EVERY
            .into_iter()
            .filter(|s| self.stage.is_empty() || self.stage.iter().any(|n| n == s.name()))
            .collect())
    }
}

/// `-s`: how the ring is polled.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleArg {
    /// Busy-poll a pinned core (`-c`): lowest delay, one core busy.
    Spin,
    /// Sleep progressively while idle (default): little CPU.
    Backoff,
}

/// `--priority`: how the ring consumer competes for CPU.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PriorityArg {
    /// SCHED_IDLE: use only CPU time the host's applications leave over; a guard raises
    /// the consumer to normal priority while the ring fills up or it falls behind (default).
    Yield,
    /// Ordinary scheduling, competing with the applications for CPU.
    Normal,
}

/// `--attach`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttachArg {
    /// TCX on Linux >= 6.6, tc (clsact) filters otherwise.
    Auto,
    Tcx,
    Tc,
}

#[derive(Args, Debug, Clone)]
pub struct LiveArgs {
    /// Network interface to attach to (e.g. eth0, bond0, eth0.100, lo); with --tap the
    /// monitor interface(s), comma-separated.
    #[arg(short = 'i', long = "interface", value_name = "IFACE[,IFACE...]")]
    pub iface: String,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    /// Pin the ring consumer to this CPU.
    #[arg(short = 'c', long = "cpu", value_name = "CPU")]
    pub cpu: Option<usize>,
    /// Idle strategy of the ring consumer.
    #[arg(short = 's', long = "idle", value_enum, default_value = "backoff")]
    pub idle: IdleArg,
    /// Stop after this many seconds (default: until Ctrl-C / SIGTERM / `q`).
    #[arg(long = "duration", value_name = "SECS", allow_negative_numbers = true)]
    pub duration_s: Option<f64>,
    /// Ring-buffer size in MiB (records are dropped and counted when it is full).
    #[arg(long = "ring-mb", default_value_t = 64, value_name = "MIB")]
    pub ring_mb: usize,
    /// Only traffic with this IP address at either end.
    #[arg(long = "ip", value_name = "ADDR")]
    pub ip: Option<std::net::IpAddr>,
    /// How to attach the BPF programs.
    #[arg(long = "attach", value_enum, default_value = "auto")]
    pub attach: AttachArg,
    /// CPU priority of the ring consumer (the measured applications come first with
    /// `yield`; records are never dropped for it).
    #[arg(long = "priority", value_enum, default_value = "yield")]
    pub priority: PriorityArg,
    /// Full-screen terminal UI instead of interval lines: charts, tables, counters; TAB
    /// switches views, `?` lists the keys. Needs a terminal on stdout; the final summary is
    /// printed when it ends (`--json-file` records every interval).
    #[arg(long = "tui")]
    pub tui: bool,
    /// After attaching, become USER (a name or a uid) and give up every capability the run
    /// no longer needs (as tcpdump's -Z); CAP_NET_ADMIN stays with tc filters, to remove
    /// them at exit.
    #[arg(short = 'Z', long = "relinquish-privileges", value_name = "USER")]
    pub relinquish: Option<String>,
    /// Also split every order's latency inside this host: wire → the application's read
    /// (`wire_to_read`), read → write (`app`), write → wire (`write_to_wire`), and the
    /// reading thread's wait for a CPU (`sched_delay`), from eBPF at the socket layer.
    #[arg(long = "breakdown")]
    pub breakdown: bool,
    #[command(flatten)]
    pub tls: crate::cli_tls::LiveTlsArgs,
    #[command(flatten)]
    pub tap: TapArgs,
}

/// `live --tap`: watch a copy of the wire (mirror/SPAN port, tap) with libpcap instead of
/// eBPF on the gateway (docs/tap.md).
#[derive(Args, Debug, Clone)]
pub struct TapArgs {
    /// Watch a mirror (SPAN) port or tap on this monitor host: `-i` names the capture
    /// interface(s), comma-separated (the two ports of a full-duplex tap are merged by
    /// timestamp); no BPF program or qdisc on any gateway. `--breakdown` does not apply.
    #[arg(long = "tap")]
    pub tap: bool,
    /// Who stamps the packets, as tcpdump's -j: `host` (this host's kernel), `adapter`
    /// (the NIC, synchronised with the host's clock), `adapter_unsynced` (the NIC's own
    /// clock). Named in every output.
    #[arg(
        long = "time-stamp-type",
        short = 'j',
        value_name = "host|adapter|adapter_unsynced",
        requires = "tap"
    )]
    pub time_stamp_type: Option<fixscope_tap::TimestampSource>,
    /// Kernel capture buffer per interface in MiB (packets are dropped and counted,
    /// `tap_drops`, when it is full).
    #[arg(long = "tap-buffer-mb", value_name = "MIB", requires = "tap")]
    pub buffer_mb: Option<usize>,
    /// Timestamps from the frames' hardware trailers (as `fixscope pcap`'s).
    #[arg(
        long,
        default_value = "auto",
        value_name = "auto|off|metawatch|hpt|arista-header|ixia|gigamon|arista-7150|fusion|vss|arista-7280-mac",
        requires = "tap"
    )]
    pub wire_timestamps: fixscope_core::wire_stamp::WireStampMode,
}

impl LiveArgs {
    /// Validates the `--tap` flags into the mirror-port capture's configuration.
    pub fn tap_config(&self) -> Result<fixscope_tap::TapConfig> {
        if self.analysis.legs.discover() {
            bail!("--link discover reads a capture: run it with `fixscope pcap` on a tcpdump of the legs");
        }
        if self.breakdown {
            bail!(
                "--breakdown does not apply to --tap: it splits an order inside the host that \
                 runs the application, and a mirror only sees the wire"
            );
        }
        if let Some(d) = self.duration_s {
            if !(d.is_finite() && d > 0.0) {
                bail!("--duration must be a positive number of seconds, got {d}");
            }
        }
        let ifaces: Vec<String> = self
            .iface
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        let mut cfg = fixscope_tap::TapConfig::new(ifaces, self.analysis.ports.clone());
        cfg.ip_filter = self.ip;
        cfg.timestamps = self.tap.time_stamp_type.unwrap_or_default();
        if let Some(mb) = self.tap.buffer_mb {
            if mb == 0 || mb > 4096 {
                bail!("--tap-buffer-mb must be between 1 and 4096, got {mb}");
            }
            cfg.buffer_bytes = mb << 20;
        }
        Ok(cfg)
    }

    /// Validates the live flags into the capture's configuration.
    pub fn live_config(&self) -> Result<fixscope_live::LiveConfig> {
        if let Some(d) = self.duration_s {
            if !(d.is_finite() && d > 0.0) {
                bail!("--duration must be a positive number of seconds, got {d}");
            }
        }
        if self.ring_mb == 0 || self.ring_mb > 1024 {
            bail!("--ring-mb must be between 1 and 1024, got {}", self.ring_mb);
        }
        if let Some(cpu) = self.cpu {
            // Every CPU of the host, not just those this process may run on
            // (available_parallelism follows the affinity mask, e.g. under taskset).
            // SAFETY: sysconf has no memory-safety preconditions.
            let cpus = usize::try_from(unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) })
                .unwrap_or(1)
                .max(1);
            if cpu >= cpus {
                bail!(
                    "-c/--cpu {cpu} does not exist (this host has CPUs 0-{})",
                    cpus - 1
                );
            }
        }
        if self.analysis.legs.discover() {
            bail!("--link discover reads a capture: run it with `fixscope pcap` on a tcpdump of the legs");
        }
        let ring_bytes = self.ring_mb << 20;
        let mut cfg =
            fixscope_live::LiveConfig::new(self.iface.clone(), self.analysis.ports.clone());
        cfg.role = self.analysis.role;
        cfg.port_roles = self.analysis.legs.port_roles();
        cfg.ring_bytes = ring_bytes;
        cfg.idle = match self.idle {
            IdleArg::Spin => fixscope_live::IdleStrategy::Spin,
            IdleArg::Backoff => fixscope_live::IdleStrategy::Backoff,
        };
        cfg.cpu = self.cpu;
        cfg.ip_filter = self.ip;
        cfg.attach = match self.attach {
            AttachArg::Auto => fixscope_live::AttachMode::Auto,
            AttachArg::Tcx => fixscope_live::AttachMode::Tcx,
            AttachArg::Tc => fixscope_live::AttachMode::TcFilter,
        };
        cfg.priority = match self.priority {
            PriorityArg::Yield => fixscope_live::ConsumerPriority::Yield,
            PriorityArg::Normal => fixscope_live::ConsumerPriority::Normal,
        };
        // Wake a sleeping consumer when a quarter of the ring is used, never per record.
        cfg.wakeup_threshold_bytes = ring_bytes / 4;
        cfg.breakdown = self.breakdown;
        cfg.tls_uprobes = self.tls.tls_uprobes || !self.tls.tls_lib.is_empty();
        cfg.tls_libs = self.tls.tls_lib.clone();
        Ok(cfg)
    }
}

#[derive(Args, Debug)]
pub struct DetachArgs {
    /// Interface to clean up.
    #[arg(short = 'i', long = "interface", value_name = "IFACE")]
    pub iface: String,
}

#[derive(Subcommand, Debug)]
pub enum SimCommand {
    /// FIX acceptor: acks and fills orders after configurable delays, writes ground truth.
    Exchange(fixscope_sim::ExchangeArgs),
    /// FIX initiator: sends orders open-loop at a rate or closed-loop with a window.
    Client(fixscope_sim::ClientArgs),
    /// Order router between clients and a venue: child orders, id mapping, ground truth.
    Router(fixscope_sim::RouterArgs),
}

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Seconds of order flow.
    #[arg(long, default_value_t = 5.0)]
    pub duration: f64,
    /// Orders per second (open loop).
    #[arg(long, default_value_t = 20_000)]
    pub rate: u64,
    /// Client sessions (TCP connections).
    #[arg(long, default_value_t = 4)]
    pub sessions: usize,
    /// The exchange's delay before acking (see `fixscope sim exchange --help`).
    #[arg(long, default_value = "lognormal:40us,0.5")]
    pub ack_delay: String,
    /// The exchange's delay between ack and fill.
    #[arg(long, default_value = "uniform:20us-150us")]
    pub fill_delay: String,
    /// Where the demo writes its HTML report (its path is printed at the end).
    #[arg(long, default_value = "fixscope-demo.html", value_name = "FILE")]
    pub html: PathBuf,
    /// How much the text report shows (`--full`, `--counters all`).
    #[command(flatten)]
    pub text: TextArgs,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Interval logs written with `--hlog`, merged per tag (others' logs: their untagged
    /// lines, as first_response).
    #[arg(required = true, value_name = "FILE.hlog")]
    pub logs: Vec<PathBuf>,
    /// Only intervals starting at or after this: seconds from each log's StartTime (as
    /// HistogramLogProcessor's -start) or a UTC time (`2026-01-02T03:04:05Z`).
    #[arg(long, value_name = "SECS|UTC")]
    pub from: Option<String>,
    /// Only intervals starting at or before this (as `--from`; HistogramLogProcessor's -end).
    #[arg(long, value_name = "SECS|UTC")]
    pub to: Option<String>,
    /// What stdout carries: `text` for people, `json` for one JSON summary line.
    #[arg(long, value_enum, value_name = "text|json")]
    pub format: Option<Format>,
    /// JSON on stdout: the same as `--format json`.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Also write the report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json_file: Option<PathBuf>,
    /// How much the text report shows (`--full`, `--counters all`).
    #[command(flatten)]
    pub text: TextArgs,
    /// The N slowest orders per stage of the merged intervals (default: as many as the
    /// logs kept, their runs' `--slowest`); 0 leaves them out.
    #[arg(long, value_name = "N")]
    pub slowest: Option<usize>,
    /// Also write a self-contained HTML report (tables, charts, slowest orders, counters)
    /// to FILE; it opens offline.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

impl ReportArgs {
    pub fn stdout_format(&self) -> Format {
        Format::of(self.json, self.format)
    }

    /// Validates `--from/--to`: each a time, and `--from` not after `--to` (when both are
    /// seconds from the start, or both UTC times).
    pub fn window(&self) -> Result<fixscope_core::hlog::Window> {
        use fixscope_core::hlog::TimeBound;
        let bound = |flag: &str, v: &Option<String>| {
            v.as_deref()
                .map(TimeBound::parse)
                .transpose()
                .map_err(|e| anyhow::anyhow!("--{flag} {e}"))
        };
        let window = fixscope_core::hlog::Window {
            from: bound("from", &self.from)?,
            to: bound("to", &self.to)?,
        };
        let reversed = match (window.from, window.to) {
            (Some(TimeBound::Offset(a)), Some(TimeBound::Offset(b)))
            | (Some(TimeBound::Unix(a)), Some(TimeBound::Unix(b))) => a > b,
            _ => false,
        };
        if reversed {
            anyhow::bail!(
                "{} is an empty window: --from must not be after --to",
                self.window_flags()
            );
        }
        Ok(window)
    }

    /// `--from A --to B` as given (for messages).
    pub fn window_flags(&self) -> String {
        let mut flags = Vec::new();
        if let Some(from) = &self.from {
            flags.push(format!("--from {from}"));
        }
        if let Some(to) = &self.to {
            flags.push(format!("--to {to}"));
        }
        flags.join(" ")
    }
}

// ---- `fixscope compare` (issue #23) ----

/// `fixscope compare`: sides, statistics and outputs.
#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The baseline run: a capture (pcap/pcapng, with -p) or an HdrHistogram log written
    /// with `--hlog`.
    #[arg(value_name = "BASELINE")]
    pub baseline_input: Option<PathBuf>,
    /// The candidate run, as BASELINE.
    #[arg(value_name = "CANDIDATE")]
    pub candidate_input: Option<PathBuf>,
    /// Several baseline runs (each file one run): the comparison resamples runs, then
    /// blocks within them, so run-to-run variation is in the intervals.
    #[arg(long = "baseline", visible_alias = "base", num_args = 1.., value_name = "FILE")]
    pub baseline: Vec<PathBuf>,
    /// Several candidate runs, as `--baseline`.
    #[arg(long = "candidate", visible_alias = "cand", num_args = 1.., value_name = "FILE")]
    pub candidate: Vec<PathBuf>,
    /// Captures only: the watched FIX port(s), as for `fixscope pcap`.
    #[arg(short = 'p', long = "port", value_name = "PORT|LO-HI[,...]")]
    pub ports: Option<PortSet>,
    /// Captures only: `server` or `client`, as for `fixscope pcap`.
    #[arg(long, default_value = "server", value_name = "server|client")]
    pub role: Role,
    /// Captures only: top of the histogram range in milliseconds, as for `fixscope pcap`.
    #[arg(
        short = 'x',
        long = "max-ms",
        default_value = "10000",
        value_name = "MS"
    )]
    pub max_ms: f64,
    /// Captures only: the correlation key's tag(s), as for `fixscope pcap`.
    #[arg(long, default_value = "11", value_name = "TAG[,TAG...]")]
    pub key: String,
    /// Captures only: the `-t` alert in seconds (the timed-out and late counts shown).
    #[arg(
        short = 't',
        long = "timeout",
        default_value = "0.5",
        value_name = "SECS"
    )]
    pub timeout_s: f64,
    /// Also compare per group: `type` (D, F, G), `session` (SenderCompID->TargetCompID;
    /// captures only) or a FIX tag of the orders, e.g. `55` (symbol; captures only).
    #[arg(long = "by", value_name = "type|session|TAG")]
    pub by: Option<String>,
    /// With `--by TAG`: each run's N busiest values are compared by name, the rest
    /// together as `(other)` (as `fixscope pcap --by-limit`).
    #[arg(long, default_value_t = 20, value_name = "N", requires = "by")]
    pub by_limit: usize,
    /// Percentiles to compare, comma-separated.
    #[arg(long, default_value = "50,90,99,99.9", value_name = "P,P,...")]
    pub percentiles: String,
    /// Confidence of the intervals, held over the whole table, in percent.
    #[arg(long, default_value = "99", value_name = "PERCENT")]
    pub confidence: f64,
    /// Smallest change that counts, in percent: smaller changes are never `worse`, and
    /// `same` means the interval lies within ±threshold.
    #[arg(long, default_value = "5", value_name = "PERCENT")]
    pub threshold: String,
    /// Bootstrap resamples.
    #[arg(long, default_value_t = 2000, value_name = "N")]
    pub resamples: usize,
    /// Seed of the resampling (the default is fixed: the same inputs give the same output).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Exit 4 when a cell is inconclusive or insufficient (and nothing is worse).
    #[arg(long)]
    pub strict: bool,
    /// What stdout carries: `text` (a table) or `json` (one JSON object).
    #[arg(long, value_enum, value_name = "text|json")]
    pub format: Option<Format>,
    /// JSON on stdout: the same as `--format json`.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Also write the JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json_file: Option<PathBuf>,
    /// Also write a self-contained HTML page: the table and, per stage, both percentile
    /// curves with their confidence bands.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Also draw both percentile curves with their confidence bands, per stage: `.svg` or
    /// `.png`.
    #[arg(short = 'o', long = "output", value_name = "FILE.svg|FILE.png")]
    pub output: Option<PathBuf>,
}

impl CompareArgs {
    pub fn stdout_format(&self) -> Format {
        Format::of(self.json, self.format)
    }

    /// The baseline's and the candidate's files.
    pub fn sides(&self) -> Result<[Vec<PathBuf>; 2]> {
        let flags = !self.baseline.is_empty() || !self.candidate.is_empty();
        match (&self.baseline_input, &self.candidate_input, flags) {
            (Some(b), Some(c), false) => Ok([vec![b.clone()], vec![c.clone()]]),
            (None, None, true) if !self.baseline.is_empty() && !self.candidate.is_empty() => {
                Ok([self.baseline.clone(), self.candidate.clone()])
            }
            (None, None, true) => bail!("--baseline and --candidate go together"),
            (_, _, true) => bail!(
                "either BASELINE CANDIDATE or --baseline FILE... --candidate FILE..., not both"
            ),
            _ => bail!("give BASELINE and CANDIDATE (or --baseline FILE... --candidate FILE...)"),
        }
    }

    /// The analysis settings for captures (`None` without `-p`).
    pub fn analysis(&self) -> Option<AnalysisArgs> {
        let mut a = AnalysisArgs::demo(self.ports.clone()?);
        a.role = self.role;
        a.max_ms = self.max_ms;
        a.key = self.key.clone();
        a.timeout_s = self.timeout_s;
        a.slowest = 0;
        // `--by TAG`: the pipeline keeps that tag's values (validated by `GroupBy::parse`).
        if let Some(tag) = self.by.as_deref().filter(|b| b.parse::<u32>().is_ok()) {
            a.by = Some(tag.to_string());
            a.by_limit = self.by_limit;
        }
        Some(a)
    }
}

/// `fixscope check`'s flags.
pub use crate::cli_check::CheckArgs;
