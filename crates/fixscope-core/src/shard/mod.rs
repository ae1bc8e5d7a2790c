//! `fixscope pcap --threads N`: connections sharded across worker pipelines, figures merged
//! into exactly what one pipeline reports (issue #22).
//!
//! ```text
//!  worker threads (worker.rs), each reading every capture     calling thread (merge.rs)
//!  read + decode every packet, in file order; the run's  ──▶  merge interval k of all
//!  clock (interval ends, sweeps, `-t`) from every segment;     workers, then report it
//!  its Pipeline analyses the segments of its own shard keys    (the same Reporter code)
//! ```
//!
//! **No serial reader**: each worker reads the files itself (the page cache serves the N
//! reads) and decodes every packet — link, IP and TCP headers, the ports, the mirror-copy
//! check — so every worker takes the one pipeline's clock decisions on its own and nothing
//! is handed between threads but interval shares. The decoding is repeated per worker
//! (about a fifth of one pipeline's work), the rest — reassembly, framing, correlation,
//! statistics — is split. `--threads 1` is one thread, `--threads 2` one pipeline in two
//! stages (`crate::twostage`); sharding is `--threads 3` and more, the default from 4 cores.
//!
//! **Shard key**: (client IP, server IP, server port) — not the 4-tuple — so every
//! connection of one FIX session that reconnects from a new client port lands in the same
//! worker; per-session state (and any state that follows a session across reconnects)
//! never has to cross workers. Which side is the server comes from the segment's direction
//! (ports and `--role`), as everywhere else.
//!
//! **One clock**: a worker sees only its connections, but every time-driven decision is
//! the one pipeline's: every worker (which sees every segment in order) runs the interval
//! clock and the idle-connection sweep exactly as `Pipeline` and the driver do
//! (`worker::RunClock`): at an interval's end (with the run's clock just before the
//! segment that ended it), at each sweep and at the end; each segment it owns is fed with
//! the run's clock (the latest timestamp of all segments so far) and its index in the run.
//! Ctrl-C stops every worker after the same segment (`worker::StopPoint`). `-t` (expiry)
//! is applied with that clock before anything a worker records or hands over, so
//! `timed_out`, `late` and every interval's counters are the one pipeline's.
//!
//! **Merging** (generic over the figures: each mergeable part has a `merge_from`-style
//! method tested to give the whole from its halves): histograms add exactly
//! (`LatencyRecorder::merge`), counters sum (`Counters::merge_from`), slowest orders are
//! offered to the merger's own lists (ties break on the run's session ids, so the lists are
//! the one pipeline's). Session ids: a worker numbers its sessions locally and says which
//! segment (by run index) opened each; the merger numbers them in that order, which is
//! the one pipeline's numbering. The per-session table comes over at the end.
//!
//! **The FIX session layer (#21)**: workers note the segment at which a message bound a
//! new session (numbering) and every routed message (rates: the merger replays them in the
//! run's order into one `MicroburstTracker` per stream — the former HOOK(#21)); the
//! session-layer figures and `--by` groups merge at the end (`merge.rs`). A named session
//! on two shard keys (a failover) makes the merger stop before it reports the interval in
//! which that happened, with [`NeedsOnePipeline`]: the caller analyses the input again on
//! one pipeline (`fixscope pcap` holds the sharded run's stdout back until the end, so
//! nothing of the stopped run is seen).
//!
//! **What differs from one pipeline** (documented in docs/architecture.md): the limits that
//! count over all connections at once apply per worker — `--max-pending` (`-m`, eviction
//! of the oldest pending request) and the 65,536 open-connection cap (shedding). A capture
//! that reaches neither (they are safety nets) gets byte-identical output. `--trace` and
//! Prometheus (per-session figures at every interval) run on one pipeline.

mod merge;
mod worker;

/// What a shard's pipeline hands to the merger ([`crate::pipeline::share`]), named here where
/// the plan's users have always found it.
pub use crate::pipeline::share;
pub use crate::pipeline::share::{
    OpenedSession, RoutedMessage, SessionIdentity, WorkerEnd, WorkerShare,
};

use std::path::PathBuf;

use crate::pcap::{CaptureError, CaptureStats};
use crate::pipeline::PipelineConfig;
use crate::ports::PortSet;
use crate::report::Reporter;
use crate::segment::ConnectionKey;
use crate::shutdown::Shutdown;

pub use crate::report::Counters;

/// How a sharded run ended.
pub struct Outcome {
    /// The capture counters of everything read.
    pub stats: CaptureStats,
    /// Segments analysed (all workers).
    pub segments: u64,
    /// The file that stopped the reading, after every segment before it was analysed
    /// (the summary was reported when `segments > 0`, as the one pipeline's driver does).
    pub error: Option<CaptureError>,
}

/// Analyses `captures` on `threads` worker pipelines (at least 2; one pipeline is the
/// plain `Pipeline` through the driver) and reports through `reporter`: every interval,
/// then the summary — the bytes one pipeline would report. `captures` must be files that
/// can be read more than once (each worker reads them all: not stdin). `stop` ends the
/// reading early (the summary covers what was read); `on_file_done` hears of each file
/// read to its end (with the capture counters so far). An error that
/// [`NeedsOnePipeline::is`] recognises means this input needs one pipeline: analyse it
/// again with one (what was reported before it is exact, but a prefix).
#[allow(clippy::too_many_arguments)]
pub fn run(
    captures: Vec<PathBuf>,
    ports: PortSet,
    config: PipelineConfig,
    threads: usize,
    reporter: &mut dyn Reporter,
    stop: &Shutdown,
    on_file_done: &mut dyn FnMut(usize, &CaptureStats),
) -> std::io::Result<Outcome> {
    let threads = threads.max(2);
    let inputs = worker::Inputs {
        captures,
        ports,
        config: config.clone(),
        stop: stop.clone(),
    };
    let (outputs, handles) = worker::start(threads, inputs)?;
    let mut merger = merge::Merger::new(config, threads);
    let outcome = merger.run(&outputs, reporter, on_file_done);
    // On an early return (a reporter failed, a split session) the channels close and
    // every worker stops at its next hand-over.
    drop(outputs);
    for h in handles {
        if let Err(panic) = h.join() {
            std::panic::resume_unwind(panic);
        }
    }
    outcome
}

/// Why a sharded or two-stage run stopped: this input needs one pipeline (a FIX session
/// whose connections come from more than one shard key — a failover to another client
/// address — or more named sessions than the session layer tracks over all connections;
/// a binary order session recognised by its login, which only one pipeline in one stage
/// reads: `one_stage`).
#[derive(Clone, Debug)]
pub struct NeedsOnePipeline {
    pub why: String,
    /// Two stages cannot read it either.
    pub one_stage: bool,
}

impl std::fmt::Display for NeedsOnePipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.why)
    }
}

impl std::error::Error for NeedsOnePipeline {}

impl NeedsOnePipeline {
    pub(crate) fn error(why: String) -> std::io::Error {
        std::io::Error::other(NeedsOnePipeline {
            why,
            one_stage: false,
        })
    }

    /// A binary order session met: one pipeline in one stage reads it.
    pub(crate) fn one_stage(why: String) -> std::io::Error {
        std::io::Error::other(NeedsOnePipeline {
            why,
            one_stage: true,
        })
    }

    /// The reason, when `e` says the input needs one pipeline.
    pub fn is(e: &std::io::Error) -> Option<&NeedsOnePipeline> {
        e.get_ref()
            .and_then(|inner| inner.downcast_ref::<NeedsOnePipeline>())
    }
}

/// Which worker owns a segment's connection: a hash of (client IP, server IP, server
/// port), so reconnects of one session (new client port) stay in one worker.
pub(crate) fn shard_of(key: &ConnectionKey, workers: usize) -> usize {
    // A multiplicative mix, not SipHash: it runs once per segment in every worker,
    // and nobody gains from steering connections into one worker but the capture's owner.
    let bits = |a: std::net::IpAddr| -> u64 {
        match a {
            std::net::IpAddr::V4(a) => u64::from(u32::from(a)),
            std::net::IpAddr::V6(a) => {
                let v = u128::from(a);
                (v as u64) ^ ((v >> 64) as u64)
            }
        }
    };
    let x = bits(key.client.addr)
        ^ bits(key.server.addr).rotate_left(29)
        ^ u64::from(key.server.port).rotate_left(48);
    let h = x.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    ((h >> 32) % workers as u64) as usize
}
