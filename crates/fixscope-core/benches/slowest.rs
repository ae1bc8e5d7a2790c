//! The slowest-order lists at `-r 1` (issue #22): one interval of the 504 MB capture of
//! `scripts/bench-offline.sh` — 674 orders at each of four stages, latencies in random
//! order — offered, sorted for the report and folded into the run's lists. Each interval's
//! lists start empty, so about fifty orders per stage get in (and are copied) before the
//! ten slowest are known.
//!
//! `cargo bench -p fixscope-core --bench slowest` — figures in BENCHMARKS.md §2f.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use fixscope_core::correlate::{RequestType, Stage};
use fixscope_core::segment::{ConnectionKey, Endpoint};
use fixscope_core::slowest::{OrderRef, SessionRef, SlowestOrders};

#[path = "support/latencies.rs"]
mod latencies;
use latencies::interval_latencies;

fn bench_slowest(c: &mut Criterion) {
    let latencies = interval_latencies(Stage::ALL.len());
    let keys: Vec<String> = (0..latencies.len() / Stage::ALL.len())
        .map(|i| format!("S2-{i:016}"))
        .collect();
    let ep = |a: &str, port| Endpoint {
        addr: a.parse().unwrap(),
        port,
    };
    let names = SessionRef {
        sender_comp_id: "CLIENT2",
        target_comp_id: "EXCH",
        connection: Some(ConnectionKey {
            client: ep("10.1.0.2", 40001),
            server: ep("10.2.0.1", 9878),
        }),
    };
    let mut group = c.benchmark_group("slowest");
    group.throughput(Throughput::Elements(latencies.len() as u64));
    group.bench_function("one_interval_674_orders_4_stages", |b| {
        let mut lists = SlowestOrders::new(10);
        let mut t = 0u64;
        b.iter(|| {
            for (i, &ns) in latencies.iter().enumerate() {
                let stage = Stage::ALL[i % Stage::ALL.len()];
                t += 1;
                if lists.admits(stage, ns) {
                    let order = OrderRef {
                        key: keys[i / Stage::ALL.len()].as_bytes(),
                        response_msg_type: b"8",
                        exec_type: Some(b'0'),
                        ord_status: Some(b'0'),
                        response_ts_ns: t + ns,
                        breakdown: None,
                    };
                    let session = 1 + (i % 8) as u64;
                    lists.offer(
                        stage,
                        ns,
                        RequestType::NewOrder,
                        session,
                        t,
                        false,
                        &order,
                        &names,
                    );
                }
            }
            lists.refresh_interval();
            lists.reset_interval();
        })
    });
    group.finish();
}

criterion_group!(benches, bench_slowest);
criterion_main!(benches);
