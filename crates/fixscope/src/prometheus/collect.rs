//! Builds a [`Snapshot`] from fixscope's cumulative statistics and counters: run by the
//! pipeline thread once per interval report (and at the summary), never per message.

use fixscope_core::correlate::{RequestType, Stage};
use fixscope_core::figures::Figures;
use fixscope_core::report::Counters;
use fixscope_core::source::Counter;

use super::exemplar::Exemplar;
use super::help::help_of;
use super::histogram::{from_recorder, ClassicBounds};
use super::model::{Family, Kind, Sample, Snapshot, Value};

/// Pipeline counters that go down as well as up (levels at the time of the report).
const GAUGES: [&str; 4] = [
    "open_connections",
    "pending",
    "unanswered",
    "unanswered_pending",
];

/// What to export beyond the defaults.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    pub bounds: ClassicBounds,
    /// Per-session series for the first this-many sessions seen (0: none).
    pub sessions: usize,
    /// `--prometheus-by`: latency series per `--by` value.
    pub by: bool,
}

/// Keeps what must outlive one report: which latency series exist (a series, once
/// exported, stays — Prometheus treats a vanished series as stale), the source's counters
/// by name (interval reports carry a subset of the summary's), and the latest exemplars.
pub struct Collector {
    settings: Settings,
    seen: [[bool; RequestType::COUNT]; Stage::COUNT],
    source: Vec<Counter>,
    exemplars: [[Option<Exemplar>; RequestType::COUNT]; Stage::COUNT],
    /// CPU time building the previous snapshot took (pipeline thread), seconds.
    last_build_s: f64,
}

/// What one snapshot is built from (`'f`: the report's figures).
pub struct Inputs<'a, 'f> {
    pub stats: Figures<'f>,
    pub counters: &'a Counters,
    pub source: &'a [Counter],
    /// The report's end, UNIX seconds.
    pub at_unix_s: f64,
    /// Who stamped the packets (`live --tap`), exported as an info metric.
    pub timestamp_source: Option<&'static str>,
    /// The report's end in the source's clock (ages of session state).
    pub now_ns: u64,
}

impl Collector {
    pub fn new(settings: Settings) -> Self {
        Collector {
            settings,
            seen: [[false; RequestType::COUNT]; Stage::COUNT],
            source: Vec::new(),
            exemplars: Default::default(),
            last_build_s: 0.0,
        }
    }

    /// The exemplar shown on `(stage, request type)` from now on.
    pub fn set_exemplar(&mut self, stage: Stage, request_type: RequestType, e: Exemplar) {
        self.exemplars[stage.index()][request_type.index()] = Some(e);
    }

    pub fn snapshot(&mut self, input: &Inputs<'_, '_>) -> Snapshot {
        let started = thread_cpu_s();
        for (name, value) in input.source {
            match self.source.iter_mut().find(|(n, _)| n == name) {
                Some(c) => c.1 = *value,
                None => self.source.push((name.clone(), *value)),
            }
        }
        let mut families = vec![self.latency(input.stats)];
        if self.settings.sessions > 0 {
            families.extend(self.sessions(input.stats));
            families.extend(super::session_layer::per_session(
                input.stats,
                self.settings.sessions,
                input.now_ns,
            ));
        }
        families.extend(super::session_layer::totals(
            input.stats,
            input.now_ns,
            &self.settings.bounds,
        ));
        if self.settings.by {
            families.extend(super::session_layer::by(input.stats, &self.settings.bounds));
        }
        for (name, value) in input.counters.list() {
            let kind = if GAUGES.contains(&name.as_str()) {
                Kind::Gauge
            } else {
                Kind::Counter
            };
            families.push(single(&name, kind, Value::Int(value)));
        }
        families.push(single(
            "untracked_sessions",
            Kind::Counter,
            Value::Int(input.stats.untracked_sessions()),
        ));
        for (name, value) in &self.source {
            families.push(single(name, Kind::Counter, Value::Int(*value)));
        }
        let range_s = input
            .stats
            .cumulative(Stage::FirstResponse)
            .histogram()
            .high() as f64
            * 1e-9;
        families.push(Family {
            name: "fixscope_latency_range_seconds".into(),
            help: "Top of the histogram range (-x): latencies above it are counted above range, their exact values unknown".into(),
            unit: Some("seconds"),
            kind: Kind::Gauge,
            samples: vec![unlabelled(Value::Float(range_s))],
        });
        families.push(Family {
            name: "fixscope_report_timestamp_seconds".into(),
            help: "When the figures of this scrape were taken (end of the latest interval report), UNIX seconds".into(),
            unit: Some("seconds"),
            kind: Kind::Gauge,
            samples: vec![unlabelled(Value::Float(input.at_unix_s))],
        });
        if let Some(name) = input.timestamp_source {
            families.push(Family {
                name: "fixscope_timestamp_source_info".into(),
                help: "Who stamped the packets (live --tap --time-stamp-type: host, adapter, adapter_unsynced): never compare runs stamped differently".into(),
                unit: None,
                kind: Kind::Gauge,
                samples: vec![Sample {
                    labels: vec![("source", name.to_string())],
                    value: Value::Int(1),
                }],
            });
        }
        families.push(Family {
            name: "fixscope_prometheus_snapshot_cpu_seconds".into(),
            help: "CPU time the pipeline thread spent building the previous metrics snapshot (once per interval)".into(),
            unit: Some("seconds"),
            kind: Kind::Gauge,
            samples: vec![unlabelled(Value::Float(self.last_build_s))],
        });
        self.last_build_s = (thread_cpu_s() - started).max(0.0);
        Snapshot {
            families,
            classic_bounds: self.settings.bounds.seconds().to_vec(),
        }
    }

    fn latency(&mut self, stats: Figures<'_>) -> Family {
        let mut samples = Vec::new();
        // The breakdown stages (`--breakdown`) are series of the same family. Not the
        // one-way stages (`--point`): a one-way figure exists only with its clock's
        // uncertainty, which a histogram cannot carry (the summary has both).
        for &stage in stats.shown_stages().iter().filter(|s| !s.is_one_way()) {
            for t in RequestType::ALL {
                let rec = stats.by_request_type(t, stage);
                let seen = &mut self.seen[stage.index()][t.index()];
                *seen |= rec.count() > 0;
                if !*seen {
                    continue;
                }
                let mut h = from_recorder(rec, &self.settings.bounds);
                h.exemplar = self.exemplars[stage.index()][t.index()].clone();
                samples.push(Sample {
                    labels: vec![
                        ("stage", stage.name().into()),
                        ("msg_type", t.msg_type().into()),
                    ],
                    value: Value::Histogram(Box::new(h)),
                });
            }
        }
        Family {
            name: "fixscope_latency_seconds".into(),
            help: "Request to response latency by stage (first_response, ack, fill, ack_to_fill; with --breakdown wire_to_read, app, write_to_wire, sched_delay) and request MsgType (D, F, G); values above -x lie in a bucket above range".into(),
            unit: Some("seconds"),
            kind: Kind::Histogram,
            samples,
        }
    }

    fn sessions(&self, stats: Figures<'_>) -> [Family; 3] {
        let mut latency = Vec::new();
        let mut requests = Vec::new();
        let mut responses = Vec::new();
        for s in stats.sessions().iter().take(self.settings.sessions) {
            let labels = vec![
                ("session", s.id.to_string()),
                ("client", s.connection.client.to_string()),
                ("server", s.connection.server.to_string()),
                ("sender_comp_id", s.sender_comp_id.clone()),
                ("target_comp_id", s.target_comp_id.clone()),
            ];
            if let Some(rec) = stats
                .session_latency(s.id)
                .and_then(|l| l.first_response_recorder())
            {
                latency.push(Sample {
                    labels: labels.clone(),
                    value: Value::Histogram(Box::new(from_recorder(rec, &self.settings.bounds))),
                });
            }
            requests.push(Sample {
                labels: labels.clone(),
                value: Value::Int(s.requests),
            });
            responses.push(Sample {
                labels,
                value: Value::Int(s.responses),
            });
        }
        [
            Family {
                name: "fixscope_session_first_response_seconds".into(),
                help: "Request to first response latency per session (the first --prometheus-sessions sessions seen; HDR at 2 significant digits)".into(),
                unit: Some("seconds"),
                kind: Kind::Histogram,
                samples: latency,
            },
            Family {
                name: "fixscope_session_requests".into(),
                help: "Requests (35=D, F, G) per session".into(),
                unit: None,
                kind: Kind::Counter,
                samples: requests,
            },
            Family {
                name: "fixscope_session_responses".into(),
                help: "Responses (35=8, 9) per session".into(),
                unit: None,
                kind: Kind::Counter,
                samples: responses,
            },
        ]
    }
}

/// This thread's CPU time (what a snapshot costs the pipeline, whatever else the host runs).
fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec to a valid, owned location.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn unlabelled(value: Value) -> Sample {
    Sample {
        labels: Vec::new(),
        value,
    }
}

/// A counter or gauge named after fixscope's counter `name`.
fn single(name: &str, kind: Kind, value: Value) -> Family {
    Family {
        name: format!("fixscope_{name}"),
        help: help_of(name),
        unit: None,
        kind,
        samples: vec![unlabelled(value)],
    }
}
