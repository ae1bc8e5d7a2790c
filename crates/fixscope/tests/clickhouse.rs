//! Issue #33: `--clickhouse URL`. No ClickHouse server installs on this machine, so the
//! HTTP interface is a small shim (`tests/interop/clickhouse_shim.py`) that runs every
//! request in the ClickHouse engine itself (chdb, PyPI `chdb-core`): the DDL, the types,
//! MergeTree and the ArrowStream input format are ClickHouse's. Retries, back-off and
//! failure counting are tested against a plain listener that refuses every request.

mod support;
mod support_clickhouse;
mod support_hlog;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{counter, stage};
use support_clickhouse::Shim;

fn sim_capture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/captures/sim/sim_orders.pcap")
}

fn summary_of(stdout: &[u8]) -> Value {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "summary")
        .expect("summary")
}

/// Every order and message of a capture lands in ClickHouse's tables, created by fixscope
/// (user from the URL, password from FIXSCOPE_CLICKHOUSE_PASSWORD); ClickHouse's own
/// aggregates over the raw nanoseconds give the summary's exact figures, and the
/// request times keep their nanoseconds.
#[test]
fn every_order_reaches_clickhouse_and_its_sql_gives_the_summary() {
    let test = "every_order_reaches_clickhouse_and_its_sql_gives_the_summary";
    let creds = ("fx", "pw-from-env");
    let shim = Shim::start(test, Some(creds));
    let cap = sim_capture().display().to_string();
    let url = format!("http://fx@127.0.0.1:{}/latency", shim.port);
    let out = Command::new(env!("CARGO_BIN_EXE_fixscope"))
        .args(["pcap", &cap, "-p", "19478", "--json", "--clickhouse", &url])
        .env("FIXSCOPE_CLICKHOUSE_PASSWORD", creds.1)
        .output()
        .expect("run fixscope");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("clickhouse: 2400 rows inserted"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("pw-from-env"),
        "the password is never said: {stderr}"
    );
    let summary = summary_of(&out.stdout);
    assert_eq!(
        summary["source"]["clickhouse_failed_rows"], 0,
        "{}",
        summary["source"]
    );
    assert_eq!(
        summary["source"]["records_dropped_rows"], 0,
        "{}",
        summary["source"]
    );
    let q = |sql: &str| shim.query(sql, Some(creds));
    assert_eq!(q("SELECT count() FROM latency.messages"), "1800");
    let counts =
        q("SELECT count(), countIf(outcome = 'matched'), uniqExact(clordid) FROM latency.orders");
    assert_eq!(
        counts,
        format!(
            "{}\t{}\t600",
            counter(&summary, "requests"),
            counter(&summary, "matched")
        )
    );
    for (stage_name, column) in [("first_response", "first_response_ns"), ("fill", "fill_ns")] {
        let s = stage(&summary, stage_name);
        let got = q(&format!(
            "SELECT count({column}), min({column}), max({column}), sum({column}) FROM latency.orders"
        ));
        let count = s["count"].as_u64().unwrap();
        let sum = (s["mean_ns"].as_f64().unwrap() * count as f64).round() as u64;
        let f: Vec<u64> = got.split('\t').map(|x| x.parse().unwrap()).collect();
        assert_eq!(
            f[..3],
            [
                count,
                s["min_ns"].as_u64().unwrap(),
                s["max_ns"].as_u64().unwrap()
            ],
            "{stage_name}"
        );
        assert!(
            f[3].abs_diff(sum) <= count,
            "{stage_name} sum {} vs {sum}",
            f[3]
        );
    }
    // The first request's time to the nanosecond (the capture's microseconds, as written).
    let first = q("SELECT toUnixTimestamp64Nano(min(request_time)) FROM latency.orders");
    assert_eq!(first, "1795461098302119000");
    let types = q("SELECT type FROM system.columns WHERE database = 'latency' AND table = 'orders' AND name IN ('request_time', 'symbol') ORDER BY name");
    assert_eq!(
        types,
        "DateTime64(9, \\'UTC\\')\nLowCardinality(Nullable(String))"
    );
}

/// A ClickHouse that refuses every request: the batch is retried with back-off (4 tries,
/// 0.2 + 0.8 + 3.2 s), then counted; the next batch gets one try (the server is known
/// down); the run ends, exit 0, with the rows counted `clickhouse_failed_rows`.
#[test]
fn a_refusing_clickhouse_is_retried_then_counted_never_waited_for() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().unwrap().port();
    let requests = Arc::new(AtomicU64::new(0));
    let seen = Arc::clone(&requests);
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            seen.fetch_add(1, Ordering::Relaxed);
            let mut buf = [0u8; 65536];
            let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
            let _ = s.read(&mut buf);
            let _ = s.write_all(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\nConnection: close\r\n\r\ndown");
        }
    });
    let cap = sim_capture().display().to_string();
    let url = format!("http://127.0.0.1:{port}");
    let t0 = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_fixscope"))
        .args(["pcap", &cap, "-p", "19478", "--json", "--clickhouse", &url])
        .output()
        .expect("run fixscope");
    let took = t0.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("clickhouse: 2400 rows could not be delivered")
            && stderr.contains("clickhouse_failed_rows"),
        "{stderr}"
    );
    assert!(stderr.contains("clickhouse: 0 rows inserted"), "{stderr}");
    // The figures are the run's, whatever ClickHouse did; the summary counts what it lost.
    let summary = summary_of(&out.stdout);
    assert_eq!(counter(&summary, "requests"), 600);
    assert_eq!(
        summary["source"]["clickhouse_failed_rows"], 2400,
        "{}",
        summary["source"]
    );
    // 4 tries of the first batch; one of each later one (orders and messages at the end,
    // and one more pair per second the run took, as live hands rows over every second).
    let n = requests.load(Ordering::Relaxed);
    assert!(
        (5..=12).contains(&n),
        "{n} requests: 4 tries of the first batch, 1 of each other"
    );
    assert!(took >= Duration::from_millis(4200), "backed off: {took:?}");
    assert!(took < Duration::from_secs(30), "never held: {took:?}");
}
