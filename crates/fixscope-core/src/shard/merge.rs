//! The merger of a sharded run: interval k of every worker, merged, then reported through
//! the same report code as one pipeline's (`Pipeline::emit_interval`, `finish`).

use std::collections::HashMap;
use std::io;

use super::worker::{End, FromWorker, WorkerOutputs};
use super::{OpenedSession, Outcome, RoutedMessage, SessionIdentity, WorkerEnd, WorkerShare};
use crate::consumer::GlobalSession;
use crate::pcap::CaptureStats;
use crate::pipeline::{report_end, report_interval, PipelineConfig, RunEnd};
use crate::report::{Counters, Reporter, TimeSpan};
use crate::session::table::MAX_TRACKED_SESSIONS;
use crate::source::counters_of;
use crate::stats::Stats;

pub(crate) struct Merger {
    interval_ns: u64,
    /// The run's statistics, as one pipeline's.
    stats: Stats,
    /// Each worker's counters at its last hand-over.
    counters: Vec<Counters>,
    interval_start_counters: Counters,
    /// Who stamped the packets (a capture's hardware clock), as the config names it.
    timestamp_source: Option<&'static str>,
    /// `--tls-keylog`: the TLS connections the workers could not decrypt.
    tls_undecrypted: Option<std::sync::Arc<crate::tls::UndecryptedConnections>>,
    /// `--md`: the feeds' health.
    feeds: std::sync::Arc<Vec<crate::report::feeds::FeedSummary>>,
    /// Per worker, the run's id of each of its sessions (index: local id - 1).
    global: Vec<Vec<u64>>,
    next_global: u64,
    opened: Vec<(OpenedSession, usize)>,
    /// Each named session's worker: a session is never split across workers.
    named: HashMap<SessionIdentity, usize>,
    /// Interval k's routed messages of every worker, with the worker's index.
    messages: Vec<(RoutedMessage, usize)>,
}

impl Merger {
    pub(crate) fn new(config: PipelineConfig, workers: usize) -> Self {
        Merger {
            interval_ns: config.interval_ns,
            stats: Stats::with_config(config.consumers()),
            counters: vec![Counters::default(); workers],
            interval_start_counters: Counters::default(),
            timestamp_source: config.timestamp_source,
            tls_undecrypted: config.tls_undecrypted.clone(),
            feeds: config.feeds.clone(),
            global: vec![Vec::new(); workers],
            next_global: 1,
            opened: Vec::new(),
            messages: Vec::new(),
            named: HashMap::new(),
        }
    }

    /// Merges and reports until the workers' end; then the last interval and the summary.
    /// Worker 0's stream says what happens next (every worker decides the same); the
    /// others must agree.
    pub(crate) fn run(
        &mut self,
        workers: &WorkerOutputs,
        reporter: &mut dyn Reporter,
        on_file_done: &mut dyn FnMut(usize, &CaptureStats),
    ) -> io::Result<Outcome> {
        let disagree = || io::Error::other("the workers of a sharded run disagree (a bug)");
        let stopped = || io::Error::other("a worker stopped");
        let others = &workers.outputs[1..];
        loop {
            match workers.outputs[0].recv().map_err(|_| stopped())? {
                FromWorker::Interval {
                    start_ns,
                    end_ns,
                    share,
                } => {
                    let mut shares = vec![share];
                    for output in others {
                        match output.recv().map_err(|_| stopped())? {
                            FromWorker::Interval {
                                start_ns: s,
                                end_ns: e,
                                share,
                            } if (s, e) == (start_ns, end_ns) => shares.push(share),
                            _ => return Err(disagree()),
                        }
                    }
                    self.collect(shares, workers)?;
                    self.emit_interval(start_ns, end_ns, reporter)?;
                }
                FromWorker::FileDone { index, stats } => on_file_done(index, &stats),
                FromWorker::End {
                    end,
                    share,
                    sessions,
                } => {
                    let mut shares = vec![share];
                    let mut ends = vec![*sessions];
                    for output in others {
                        match output.recv().map_err(|_| stopped())? {
                            FromWorker::End {
                                end: theirs,
                                share,
                                sessions,
                            } if theirs.segments == end.segments => {
                                shares.push(share);
                                ends.push(*sessions);
                            }
                            _ => return Err(disagree()),
                        }
                    }
                    self.collect(shares, workers)?;
                    return self.finish(end, ends, reporter);
                }
            }
        }
    }

    /// Takes interval k's share of every worker: numbers the sessions they opened (in the
    /// order of the segments that opened them: the one pipeline's numbering), then adds
    /// their figures.
    // Boxed: each share goes back to its worker through the spares channel as it came.
    #[allow(clippy::vec_box)]
    fn collect(
        &mut self,
        mut shares: Vec<Box<WorkerShare>>,
        workers: &WorkerOutputs,
    ) -> io::Result<()> {
        if let Some(why) = shares.iter().find_map(|s| s.needs_one_pipeline) {
            return Err(super::NeedsOnePipeline::one_stage(why.to_string()));
        }
        for (w, share) in shares.iter_mut().enumerate() {
            self.opened.extend(share.opened.drain(..).map(|o| (o, w)));
            self.messages.extend(share.messages.iter().map(|m| (*m, w)));
            self.counters[w] = share.counters;
        }
        // Stable: a sweep or the end may open several of one worker's sessions at one index.
        self.opened.sort_by_key(|(o, _)| o.segment_index);
        for (o, w) in self.opened.drain(..) {
            if let Some(identity) = o.identity {
                check_one_worker(&mut self.named, identity, w)?;
            }
            let id = self.next_global;
            self.next_global += 1;
            debug_assert_eq!(o.local_id, self.global[w].len() as u64 + 1);
            self.global[w].push(id);
            self.stats.open_session(id, o.connection);
        }
        // The session layer's rates: every worker's messages replayed in the one pipeline's
        // order (by segment; a segment is one worker's, whose order within it is kept by
        // the stable sort) into the run's and each session's `MessageRate`, so the 1 ms
        // peaks over all sessions are exact, not the larger worker's.
        self.messages.sort_by_key(|(m, _)| m.segment_index);
        for (m, w) in self.messages.drain(..) {
            self.stats.layer.rate.observe(m.ts_ns);
            let id = self.global[w]
                .get((m.local_session as usize).wrapping_sub(1))
                .copied();
            if let Some(s) = id.and_then(|id| self.stats.session_mut(id)) {
                s.health.rate.observe(m.ts_ns);
            }
        }
        for (w, mut share) in shares.into_iter().enumerate() {
            let global = &self.global[w];
            self.stats.absorb_interval(&mut share.stats, |local| {
                let id = global
                    .get((local as usize).wrapping_sub(1))
                    .copied()
                    .unwrap_or(0);
                GlobalSession {
                    id,
                    tracked: id >= 1 && id <= MAX_TRACKED_SESSIONS as u64,
                }
            });
            // The worker may be done already; then nobody needs it back.
            let _ = workers.spares[w].send(share);
        }
        Ok(())
    }

    fn counters(&self) -> Counters {
        let mut sum = Counters::default();
        for c in &self.counters {
            sum.merge_from(c);
        }
        sum
    }

    /// `Pipeline::emit_interval` on the merged figures.
    fn emit_interval(
        &mut self,
        start_ns: u64,
        end_ns: u64,
        reporter: &mut dyn Reporter,
    ) -> io::Result<()> {
        let counters = self.counters();
        let span = TimeSpan {
            start_ns,
            end_ns,
            unix_offset_ns: 0,
            timestamp_source: self.timestamp_source,
        };
        report_interval(
            &mut self.stats,
            counters,
            &mut self.interval_start_counters,
            span,
            &[],
            reporter,
        )
    }

    /// `Pipeline::finish` (and the driver's end) on the merged figures.
    fn finish(
        &mut self,
        end: End,
        ends: Vec<WorkerEnd>,
        reporter: &mut dyn Reporter,
    ) -> io::Result<Outcome> {
        let mut by_workers = Vec::new();
        for (w, worker_end) in ends.into_iter().enumerate() {
            let WorkerEnd {
                sessions,
                session_latency,
                layer,
                by,
            } = worker_end;
            let mut latencies = session_latency.into_iter();
            for mut s in sessions {
                let latency = latencies.next().unwrap_or_default();
                if let Some(&id) = self.global[w].get((s.id as usize).wrapping_sub(1)) {
                    // The rate replayed here is the run's order (exact as is).
                    if let Some(mine) = self.stats.session_mut(id) {
                        std::mem::swap(&mut s.health.rate, &mut mine.health.rate);
                    }
                    self.stats.adopt_session(id, s, latency);
                }
            }
            // Everything but the rate (replayed) adds up.
            let rate = std::mem::take(&mut self.stats.layer.rate);
            self.stats.layer.merge_from(&layer);
            self.stats.layer.rate = rate;
            by_workers.extend(by);
        }
        if let Some(by) = self.stats.by_mut() {
            by.merge_workers(&by_workers);
        }
        // As the driver: a run that failed before its first segment has no summary.
        if end.segments > 0 || end.error.is_none() {
            let run_end = RunEnd {
                interval_ns: self.interval_ns,
                interval_start_ns: end.interval_start_ns,
                first_ts_ns: end.first_ts_ns,
                now_ns: end.now_ns,
                unix_offset_ns: 0,
                timestamp_source: self.timestamp_source,
            };
            let counters = self.counters();
            let incomplete = crate::pcap::incomplete_reason(
                end.error.as_ref().map(|e| e as &dyn std::fmt::Display),
                end.stopped,
            );
            report_end(
                &mut self.stats,
                counters,
                &mut self.interval_start_counters,
                &run_end,
                &counters_of(&end.stats),
                incomplete.as_deref(),
                self.tls_undecrypted.as_deref(),
                &self.feeds,
                reporter,
            )?;
        }
        Ok(Outcome {
            stats: end.stats,
            segments: end.segments,
            error: end.error,
        })
    }
}

/// A named session must live in one worker: one pipeline continues it across connections
/// (pending orders, sequence numbers, epochs), which workers cannot share. Its connections
/// come from one shard key (client IP, server IP, server port) unless the client fails
/// over to another address or server; then the merger stops before reporting the interval
/// in which that happened, with [`super::NeedsOnePipeline`] — never a split session's
/// figures — and the caller analyses the input again on one pipeline. Also past the
/// session layer's table of named sessions, which one pipeline fills over all connections.
fn check_one_worker(
    named: &mut HashMap<SessionIdentity, usize>,
    identity: SessionIdentity,
    worker: usize,
) -> io::Result<()> {
    let names = || {
        format!(
            "{}->{} ({})",
            String::from_utf8_lossy(&identity.1),
            String::from_utf8_lossy(&identity.2),
            String::from_utf8_lossy(&identity.0)
        )
    };
    match named.get(&identity) {
        Some(&w) if w != worker => Err(super::NeedsOnePipeline::error(format!(
            "the FIX session {} connects through more than one (client IP, server IP, server \
             port)",
            names()
        ))),
        Some(_) => Ok(()),
        None if named.len() >= crate::session::MAX_NAMED_SESSIONS => {
            Err(super::NeedsOnePipeline::error(format!(
                "more than {} named FIX sessions (the session layer's limit is over all \
                 connections)",
                crate::session::MAX_NAMED_SESSIONS
            )))
        }
        None => {
            named.insert(identity, worker);
            Ok(())
        }
    }
}
