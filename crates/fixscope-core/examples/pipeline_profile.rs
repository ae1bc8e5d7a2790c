//! Runs the pipeline benchmark's workload once, for profilers that want a plain process
//! (`perf record`, `valgrind --tool=callgrind`, which counts instructions exactly and so
//! compares two versions even on a noisy machine):
//!
//! `cargo build --release -p fixscope-core --example pipeline_profile &&
//!  valgrind --tool=callgrind target/release/examples/pipeline_profile 20000`

#[path = "../benches/support/workload.rs"]
mod workload;

use fixscope_core::{Pipeline, PipelineConfig};

fn main() {
    let orders = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let (segments, messages) = workload::workload(orders);
    let mut pipeline = Pipeline::new(PipelineConfig::default());
    let start = std::time::Instant::now();
    workload::feed(&mut pipeline, &segments);
    let elapsed = start.elapsed();
    let matched = pipeline.counters().correlation.matched;
    println!(
        "{messages} messages, {matched} matched, {:.0} ns/message",
        elapsed.as_nanos() as f64 / messages as f64
    );
}
