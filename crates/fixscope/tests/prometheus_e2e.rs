//! `fixscope live --prometheus` against the real consumer: Debian's Prometheus 2.42 (native
//! histograms on) scrapes a live run driven by the simulator, and what its query API says
//! agrees with fixscope's own summary: `histogram_count` equals fixscope's count,
//! `histogram_quantile` over the native series is within one native bucket (0.27%) of
//! fixscope's percentile and over the classic series lands in the classic bucket holding
//! it. `promtool check metrics` is clean on the text exposition, every Grafana panel's
//! query returns data, and the slowest orders come back as exemplars.
//!
//! Everything runs in two network namespaces (exchange, fixscope and Prometheus in A, the
//! client in B across a veth pair); the test's own HTTP requests are made from a thread
//! that entered A. Needs root, `prometheus` and `promtool`: without them it fails loudly.

mod support;
// Shared with live_e2e, which uses more of it.
#[allow(unused_imports)]
mod support_live;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use fixscope_testkit::enter_netns;
use serde_json::Value;
use support_live::*;

const DASHBOARD: &str = include_str!("../../../grafana/fixscope.json");
/// Prometheus's port inside the test's own namespace (nothing else listens there).
const PROMETHEUS_ADDR: &str = "127.0.0.1:9090";
/// Native buckets at schema 8 are 2^(1/256) wide: a quantile read from one is within this
/// relative distance of any value in the same bucket.
const NATIVE_BUCKET_WIDTH: f64 = 0.002_711;

/// GET `target` from `addr` as seen from namespace `ns`: (status line + headers, body).
fn http_get(ns: &str, addr: &str, target: &str, accept: Option<&str>) -> (String, Vec<u8>) {
    let (ns, addr, target) = (ns.to_string(), addr.to_string(), target.to_string());
    let accept = accept.map(str::to_string);
    std::thread::spawn(move || {
        enter_netns(&ns).expect("enter the test namespace");
        let mut s = TcpStream::connect(&addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let accept = accept.map_or(String::new(), |a| format!("Accept: {a}\r\n"));
        write!(
            s,
            "GET {target} HTTP/1.1\r\nHost: {addr}\r\n{accept}Connection: close\r\n\r\n"
        )
        .expect("send");
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).expect("read");
        let split = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or_else(|| panic!("no HTTP head from {addr}{target}"));
        let head = String::from_utf8_lossy(&raw[..split]).into_owned();
        let mut body = raw[split + 4..].to_vec();
        if head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            body = dechunk(&body);
        }
        (head, body)
    })
    .join()
    .expect("HTTP thread")
}

/// Whether Prometheus answers `/-/ready` with 200 yet (connection refused: not yet).
fn prometheus_ready(ns: &str) -> bool {
    let ns = ns.to_string();
    std::thread::spawn(move || {
        enter_netns(&ns).expect("enter the test namespace");
        let Ok(mut s) = TcpStream::connect(PROMETHEUS_ADDR) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        let _ = s.write_all(b"GET /-/ready HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        let mut head = [0u8; 16];
        matches!(s.read(&mut head), Ok(n) if head[..n].starts_with(b"HTTP/1.1 200"))
    })
    .join()
    .expect("probe thread")
}

fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = body.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let len = usize::from_str_radix(String::from_utf8_lossy(&body[..eol]).trim(), 16)
            .expect("chunk size");
        if len == 0 {
            return out;
        }
        out.extend_from_slice(&body[eol + 2..eol + 2 + len]);
        body = &body[eol + 2 + len + 2..];
    }
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A Prometheus HTTP API call; panics unless it succeeded. Returns `data.result` (or
/// `data` when it has no `result`, as for exemplars).
fn api(ns: &str, path: &str, params: &[(&str, String)]) -> Value {
    let query: Vec<String> = params
        .iter()
        .map(|(k, v)| format!("{k}={}", percent_encode(v)))
        .collect();
    let (head, body) = http_get(
        ns,
        PROMETHEUS_ADDR,
        &format!("{path}?{}", query.join("&")),
        None,
    );
    let v: Value =
        serde_json::from_slice(&body).unwrap_or_else(|e| panic!("{path} {params:?}: {e}: {head}"));
    assert_eq!(v["status"], "success", "{path} {params:?}: {v}");
    match v["data"].get("result") {
        Some(r) => r.clone(),
        None => v["data"].clone(),
    }
}

/// An instant query's only sample value, evaluated at `at` (UNIX s): a moment while
/// fixscope still ran, as the target's series go stale once it stops.
fn scalar(ns: &str, expr: &str, at: f64) -> f64 {
    let r = api(
        ns,
        "/api/v1/query",
        &[("query", expr.to_string()), ("time", format!("{at:.3}"))],
    );
    let samples = r.as_array().expect("vector");
    assert_eq!(samples.len(), 1, "{expr}: one series expected: {r}");
    samples[0]["value"][1]
        .as_str()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{expr}: {r}"))
}

fn now_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64()
}

fn write_config(dir: &Path, metrics: &str) -> String {
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n\
             # Protobuf (the Accept of --enable-feature=native-histograms): native histograms.\n\
             \x20 - job_name: fixscope\n    static_configs: [{{targets: ['{metrics}']}}]\n\
             # OpenMetrics text: classic buckets and exemplars (Prometheus < 2.45 keeps only the\n\
             # native buckets of a protobuf histogram).\n\
             \x20 - job_name: fixscope_classic\n    params: {{format: [openmetrics]}}\n    static_configs: [{{targets: ['{metrics}']}}]\n"
        ),
    )
    .expect("write prometheus.yml");
    config.to_str().expect("utf-8").to_string()
}

#[test]
fn prometheus_scrapes_native_and_classic_histograms_that_agree_with_fixscope() {
    let name = "prometheus_scrapes_native_and_classic_histograms_that_agree_with_fixscope";
    require_root(name);
    require_tool(name, "prometheus");
    require_tool(name, "promtool");
    let _g = serial();
    let started = Instant::now();
    let net = NetnsPair::create(91);
    let ns = net.ns_a.clone();
    let dir = tempfile::tempdir().expect("tempdir");

    let listen = format!("{}:0", net.ip_a);
    let mut exchange = start_exchange(
        Some(&ns),
        &listen,
        &dir.path().join("exchange.csv"),
        &[
            "--ack-delay",
            "lognormal:150us,0.8",
            "--fill-delay",
            "uniform:20us-300us",
        ],
    );
    let mut live = start_live(
        Some(&ns),
        &net.veth_a,
        exchange.addr.port(),
        &[
            "--json",
            "-r",
            "1",
            "--prometheus",
            "127.0.0.1:0",
            "--prometheus-sessions",
            "4",
        ],
    );
    let stderr = live.proc.stderr();
    let metrics = stderr
        .split("Prometheus metrics on http://")
        .nth(1)
        .and_then(|rest| rest.split("/metrics").next())
        .unwrap_or_else(|| panic!("no metrics address announced: {stderr}"))
        .to_string();

    let config = write_config(dir.path(), &metrics);
    let storage = dir.path().join("tsdb");
    let mut prometheus = Proc::spawn("prometheus", {
        let mut c = std::process::Command::new("ip");
        c.args(["netns", "exec", &ns, "prometheus"])
            .arg(format!("--config.file={config}"))
            .arg(format!("--storage.tsdb.path={}", storage.display()))
            .arg(format!("--web.listen-address={PROMETHEUS_ADDR}"))
            .arg("--enable-feature=native-histograms,exemplar-storage");
        c
    });
    wait_until("Prometheus ready", Duration::from_secs(30), || {
        std::thread::sleep(Duration::from_millis(200));
        prometheus_ready(&ns)
    });
    let t0 = now_s();

    let orders = 9000u64;
    let client_truth = dir.path().join("client.csv");
    run_client(
        Some(&net.ns_b),
        &exchange,
        &[
            "--truth",
            client_truth.to_str().expect("utf-8"),
            "--sessions",
            "3",
            "--rate",
            "1500",
            "--count",
            &orders.to_string(),
        ],
        Duration::from_secs(30),
    );

    // Both jobs have scraped everything (the interval after the last order, then a scrape).
    for job in ["fixscope", "fixscope_classic"] {
        wait_until(
            &format!("{job} scraped every request"),
            Duration::from_secs(15),
            || {
                let r = api(
                    &ns,
                    "/api/v1/query",
                    &[("query", format!("fixscope_matched_total{{job=\"{job}\"}}"))],
                );
                r[0]["value"][1].as_str() == Some(&orders.to_string())
            },
        );
    }
    // Two more intervals and scrapes: the last counts are settled everywhere.
    std::thread::sleep(Duration::from_millis(2500));

    // promtool lints the text exposition (what the textfile collector reads, too).
    let (head, text) = http_get(&ns, &metrics, "/metrics", Some("text/plain;version=0.0.4"));
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    let lint = lint_metrics(&text);
    assert!(lint.is_empty(), "promtool check metrics:\n{lint}");
    let (head, proto) = http_get(
        &ns,
        &metrics,
        "/metrics",
        Some("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"),
    );
    assert!(
        head.contains("encoding=delimited") && !proto.is_empty(),
        "{head}"
    );

    // Every Grafana panel's query returns data over the run.
    check_dashboard_queries(&ns, t0, now_s());

    let at = now_s();
    live.proc.signal(libc::SIGTERM);
    let l = live.proc.finish(Duration::from_secs(10));
    assert_eq!(l.status.code(), Some(0), "fixscope live: {}", l.stderr);
    let (intervals, summary) = parse_report(&l.stdout);
    let first = support::stage(&summary, "first_response");
    let count = first["count"].as_u64().expect("count");
    assert_eq!(count, orders, "fixscope matched every order");
    assert_eq!(support::counter(&summary, "requests"), orders);

    let native = r#"fixscope_latency_seconds{job="fixscope",stage="first_response"}"#;
    let classic =
        r#"fixscope_latency_seconds_bucket{job="fixscope_classic",stage="first_response"}"#;
    assert_eq!(
        scalar(&ns, &format!("histogram_count(sum({native}))"), at),
        count as f64,
        "native histogram_count = fixscope's count"
    );
    assert_eq!(
        scalar(
            &ns,
            r#"sum(fixscope_latency_seconds_count{job="fixscope_classic",stage="first_response"})"#,
            at
        ),
        count as f64,
        "classic _count = fixscope's count"
    );
    assert_eq!(
        scalar(
            &ns,
            r#"sum(fixscope_latency_seconds_bucket{job="fixscope_classic",stage="first_response",le="+Inf"})"#,
            at
        ),
        count as f64
    );
    assert_eq!(
        scalar(&ns, r#"fixscope_requests_total{job="fixscope"}"#, at),
        orders as f64
    );
    let bounds = classic_bounds(&text);
    for (q, field) in [(0.5, "p50_ns"), (0.99, "p99_ns")] {
        let ours = first[field].as_u64().expect(field) as f64 * 1e-9;
        let theirs = scalar(&ns, &format!("histogram_quantile({q}, sum({native}))"), at);
        let rel = (theirs - ours).abs() / ours;
        eprintln!(
            "q{q}: fixscope {ours:.9}s, native {theirs:.9}s ({:.3}%)",
            rel * 100.0
        );
        assert!(
            rel <= NATIVE_BUCKET_WIDTH * 1.01,
            "q{q}: native histogram_quantile {theirs} vs fixscope {ours}: {:.3}% apart",
            rel * 100.0
        );
        let theirs = scalar(
            &ns,
            &format!("histogram_quantile({q}, sum by (le) ({classic}))"),
            at,
        );
        // The classic estimate is interpolated inside one bucket: fixscope's value must be
        // in that same bucket.
        let i = bounds.partition_point(|&b| b < theirs);
        let (lo, hi) = (
            if i == 0 { 0.0 } else { bounds[i - 1] },
            bounds.get(i).copied().unwrap_or(f64::INFINITY),
        );
        eprintln!("q{q}: classic {theirs:.9}s in ({lo}, {hi}]");
        assert!(
            lo <= ours && ours <= hi,
            "q{q}: fixscope {ours} outside the classic bucket ({lo}, {hi}] of Prometheus's {theirs}"
        );
    }
    let sessions = api(
        &ns,
        "/api/v1/query",
        &[
            (
                "query",
                r#"fixscope_session_requests_total{job="fixscope"}"#.to_string(),
            ),
            ("time", format!("{at:.3}")),
        ],
    );
    assert_eq!(sessions.as_array().map(Vec::len), Some(3), "{sessions}");

    check_exemplars(&ns, t0, at, &intervals);

    prometheus.signal(libc::SIGTERM);
    let p = prometheus.finish(Duration::from_secs(20));
    assert!(p.status.success(), "prometheus: {}", p.stderr);
    exchange.proc.signal(libc::SIGTERM);
    exchange.proc.finish(Duration::from_secs(10));
    eprintln!("prometheus e2e: {:?}", started.elapsed());
}

/// The exemplars Prometheus stored are the slowest orders of fixscope's intervals: each
/// (ClOrdID, session, latency) is the top of some interval's first-response list.
fn check_exemplars(ns: &str, start: f64, end: f64, intervals: &[Value]) {
    let result = api(
        ns,
        "/api/v1/query_exemplars",
        &[
            (
                "query",
                r#"fixscope_latency_seconds_bucket{job="fixscope_classic",stage="first_response"}"#
                    .to_string(),
            ),
            ("start", format!("{start:.3}")),
            ("end", format!("{end:.3}")),
        ],
    );
    let slowest: Vec<(String, String, f64)> = intervals
        .iter()
        .filter_map(|i| {
            let o = i["slowest"]["first_response"].get(0)?;
            Some((
                o["key"].as_str()?.to_string(),
                o["session"].to_string(),
                o["latency_ns"].as_u64()? as f64 * 1e-9,
            ))
        })
        .collect();
    let mut seen = 0;
    for series in result.as_array().expect("exemplar series") {
        for e in series["exemplars"].as_array().expect("exemplars") {
            let key = e["labels"]["cl_ord_id"].as_str().expect("cl_ord_id label");
            let session = e["labels"]["session"].as_str().expect("session label");
            let value: f64 = e["value"]
                .as_str()
                .and_then(|v| v.parse().ok())
                .expect("value");
            assert!(
                slowest
                    .iter()
                    .any(|(k, s, v)| k == key && s == session && (v - value).abs() < 1e-12),
                "exemplar {e} is no interval's slowest order: {slowest:?}"
            );
            seen += 1;
        }
    }
    eprintln!("{seen} exemplars, each an interval's slowest order");
    // How many get stored depends on which buckets the intervals' slowest orders fall in
    // (Prometheus keeps an exemplar per bucket series only if newer than the last one).
    assert!(seen >= 1, "no exemplars over the run: {result}");
}

/// `promtool check metrics` on `text`: its complaints (empty when clean).
fn lint_metrics(text: &[u8]) -> String {
    let mut child = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text)
        .expect("write to promtool");
    let out = child.wait_with_output().expect("promtool");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        said.trim().to_string()
    } else {
        format!("exit {}: {said}", out.status)
    }
}

/// The classic bounds the exposition announced (first_response, msg_type D).
fn classic_bounds(text: &[u8]) -> Vec<f64> {
    String::from_utf8_lossy(text)
        .lines()
        .filter(|l| {
            l.starts_with("fixscope_latency_seconds_bucket{stage=\"first_response\",msg_type=\"D\"")
        })
        .filter_map(|l| l.split("le=\"").nth(1)?.split('"').next()?.parse().ok())
        .filter(|b: &f64| b.is_finite())
        .collect()
}

/// Grafana's template variables as a user would set them for this run.
fn substitute(expr: &str) -> String {
    expr.replace("$__rate_interval", "4s")
        .replace("$__interval", "1s")
        .replace("$job", ".+")
        .replace("$instance", ".+")
        .replace("$stage", "first_response|ack|fill|ack_to_fill")
        .replace("$msg_type", ".+")
}

/// Each panel of the dashboard: its queries return at least one number over the run.
fn check_dashboard_queries(ns: &str, start: f64, end: f64) {
    let dash: Value = serde_json::from_str(DASHBOARD).expect("dashboard JSON");
    let panels = dash["panels"].as_array().expect("panels");
    for panel in panels {
        for target in panel["targets"].as_array().expect("targets") {
            let expr = substitute(target["expr"].as_str().expect("expr"));
            let result = api(
                ns,
                "/api/v1/query_range",
                &[
                    ("query", expr.clone()),
                    ("start", format!("{start:.3}")),
                    ("end", format!("{end:.3}")),
                    ("step", "1".to_string()),
                ],
            );
            let has_number = result.as_array().into_iter().flatten().any(|series| {
                let values = series["values"].as_array().into_iter().flatten();
                let histograms = series["histograms"].as_array().into_iter().flatten();
                values
                    .filter_map(|v| v[1].as_str()?.parse::<f64>().ok())
                    .any(f64::is_finite)
                    || histograms.count() > 0
            });
            assert!(
                has_number,
                "panel {:?} query {expr} returned no data: {result}",
                panel["title"]
            );
        }
    }
}

/// The dashboard's structure: a data source variable (not `${DS_PROMETHEUS}`), every
/// panel on it, the panels the issue asks for.
#[test]
fn grafana_dashboard_is_importable_and_complete() {
    assert!(!DASHBOARD.contains("DS_PROMETHEUS") && !DASHBOARD.contains("__inputs"));
    let dash: Value = serde_json::from_str(DASHBOARD).expect("dashboard JSON");
    let vars = dash["templating"]["list"].as_array().expect("variables");
    let ds = vars
        .iter()
        .find(|v| v["type"] == "datasource")
        .expect("a data source variable");
    assert_eq!(ds["query"], "prometheus");
    let ds_ref = format!("${{{}}}", ds["name"].as_str().expect("name"));
    let panels = dash["panels"].as_array().expect("panels");
    let mut exprs = Vec::new();
    for p in panels {
        assert_eq!(p["datasource"]["uid"], ds_ref.as_str(), "{}", p["title"]);
        let targets = p["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "{} has no query", p["title"]);
        for t in targets {
            exprs.push(t["expr"].as_str().expect("expr").to_string());
        }
    }
    let has = |needle: &str| exprs.iter().any(|e| e.contains(needle));
    for q in ["0.5", "0.99", "0.999"] {
        assert!(
            has(&format!(
                "histogram_quantile({q}, sum by (stage) (rate(fixscope_latency_seconds{{"
            )),
            "native p{q}"
        );
        assert!(
            has(&format!("histogram_quantile({q}, sum by (stage, le) (rate(fixscope_latency_seconds_bucket{{")),
            "classic p{q}"
        );
    }
    for counter in [
        "fixscope_requests_total",
        "fixscope_timed_out_total",
        "fixscope_late_total",
        "fixscope_unmatched_responses_total",
        "fixscope_kernel_ring_drops_total",
        "fixscope_session_requests_total",
    ] {
        assert!(has(counter), "{counter}");
    }
    let kinds: Vec<&str> = panels.iter().filter_map(|p| p["type"].as_str()).collect();
    assert!(
        kinds.contains(&"heatmap") && kinds.contains(&"table"),
        "{kinds:?}"
    );
    let exemplars = panels
        .iter()
        .flat_map(|p| p["targets"].as_array().into_iter().flatten())
        .any(|t| t["exemplar"] == true);
    assert!(exemplars, "a panel shows exemplars");
    assert!(
        DASHBOARD.contains("${__data.fields.cl_ord_id}"),
        "exemplar links to the order"
    );
}
