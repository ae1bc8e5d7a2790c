//! Whole-pipeline throughput: reassembly + framing + correlation + histograms on a realistic
//! mix of NewOrderSingle (D) and ExecutionReport (8) messages of 200–300 bytes.
//!
//! `cargo bench -p fixscope-core --bench pipeline` — figures in BENCHMARKS.md.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
#[path = "support/workload.rs"]
mod workload;

use fixscope_core::{Pipeline, PipelineConfig};
use workload::{feed, workload};

/// CPU time of the calling thread: unlike wall time it does not count the time other
/// processes on this shared 2-core VM take the core away, so runs stay comparable.
fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn bench_pipeline(c: &mut Criterion) {
    let (segments, messages) = workload(100_000);
    let mean_len = segments.iter().map(|s| s.payload.len()).sum::<usize>() as f64 / messages as f64;
    eprintln!("workload: {messages} messages, mean {mean_len:.0} bytes/message");
    let mut group = c.benchmark_group("pipeline");
    group.throughput(Throughput::Elements(messages as u64));
    group.sample_size(20);
    group.bench_function("d_and_8_mix_100k_orders", |b| {
        b.iter_batched(
            || Pipeline::new(PipelineConfig::default()),
            |mut pipeline| {
                feed(&mut pipeline, &segments);
                assert_eq!(
                    pipeline.counters().correlation.matched,
                    (messages / 3) as u64
                );
                pipeline
            },
            BatchSize::PerIteration,
        )
    });
    // The same work timed in thread CPU time (the figure BENCHMARKS.md quotes).
    group.bench_function("d_and_8_mix_100k_orders_cpu_time", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let mut pipeline = Pipeline::new(PipelineConfig::default());
                let start = thread_cpu_time();
                feed(&mut pipeline, &segments);
                total += thread_cpu_time() - start;
                assert_eq!(
                    pipeline.counters().correlation.matched,
                    (messages / 3) as u64
                );
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, bench_pipeline);
criterion_main!(benches);
