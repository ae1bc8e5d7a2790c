//! One interval report at `-r 1` (issue #22), as the 504 MB capture of
//! `scripts/bench-offline.sh` makes them: 674 orders at each of four stages recorded, then
//! the interval closed (its per-stage view built, folded into the run's figures), its
//! report built (percentiles) and written as a JSON line, and the next interval started.
//! The slowest orders have their own bench (`slowest`).
//!
//! `cargo bench -p fixscope-core --bench interval_report` — figures in BENCHMARKS.md §2f.

use criterion::{criterion_group, criterion_main, Criterion};

use fixscope_core::correlate::{RequestType, Stage};
use fixscope_core::group::NO_GROUPS;
use fixscope_core::order::Latency;
use fixscope_core::report::json::JsonReporter;
use fixscope_core::report::{Counters, IntervalReport, Reporter, TimeSpan};
use fixscope_core::stats::Stats;

#[path = "support/latencies.rs"]
mod latencies;
use latencies::interval_latencies;

fn bench_interval_report(c: &mut Criterion) {
    let latencies = interval_latencies(Stage::ALL.len());
    c.bench_function("interval_report/674_orders_4_stages_json", |b| {
        let mut stats = Stats::new(10_000_000_000);
        let mut reporter = JsonReporter::new(std::io::sink());
        let mut start = Counters::default();
        let mut t = 0u64;
        b.iter(|| {
            for (i, &ns) in latencies.iter().enumerate() {
                t += 1;
                stats.record(Latency {
                    stage: Stage::ALL[i % Stage::ALL.len()],
                    request_type: RequestType::NewOrder,
                    session: 1 + (i % 8) as u64,
                    ns,
                    late: false,
                    request_ts_ns: t,
                    request_seq: 0,
                    groups: NO_GROUPS,
                });
            }
            stats.close_interval();
            let span = TimeSpan {
                start_ns: t,
                end_ns: t + 1_000_000_000,
                unix_offset_ns: 0,
                timestamp_source: None,
            };
            let counters = Counters::default();
            let report = IntervalReport::new(span, &stats, counters, &start, &[]);
            reporter.interval(&report).unwrap();
            start = counters;
            stats.reset_interval();
        })
    });
}

criterion_group!(benches, bench_interval_report);
criterion_main!(benches);
