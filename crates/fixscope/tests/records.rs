//! Issue #33: every order kept (`--records DIR`). The Parquet files are read by the real
//! readers people query them with — DuckDB and pyarrow (`tests/interop/records_check.py`,
//! in the venv `scripts/install-deps.sh` makes) — and checked against the simulator's own
//! clocks (live, real eBPF on lo) and against fixscope's summary of the same run (offline).

mod support;
mod support_hlog;
// Not every helper is used here.
#[allow(unused_imports)]
mod support_live;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use fixscope_testkit::{require_root, serial};
use serde_json::Value;
use support::{counter, fixscope, stage};
use support_live::{run_scenario, RunSpec};

/// Reads a records directory with DuckDB and pyarrow.
fn read_records(test: &str, dir: &Path) -> Value {
    let py = support_hlog::python(test);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/records_check.py");
    let out = Command::new(py)
        .arg(&script)
        .arg(dir)
        .output()
        .expect("run records_check.py");
    assert!(
        out.status.success(),
        "records_check.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("records_check.py prints JSON")
}

fn orders(records: &Value) -> &Vec<Value> {
    records["orders"].as_array().expect("orders")
}

fn ns(v: &Value) -> Option<u64> {
    v.as_u64()
}

fn sim_capture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/captures/sim/sim_orders.pcap")
}

/// Offline: one row per request, the counts of each outcome are the summary's counters,
/// and the raw nanoseconds give the summary's exact figures (count, min, max, mean) of
/// every stage. The files are what a query needs: nanosecond timestamps, zstd,
/// dictionaries for the columns of few values, a Bloom filter on ClOrdID; only complete
/// files exist.
#[test]
fn pcap_records_hold_every_order_and_the_summary_s_figures() {
    let test = "pcap_records_hold_every_order_and_the_summary_s_figures";
    let dir = tempfile::tempdir().expect("tempdir");
    let rec = dir.path().join("rec");
    let cap = sim_capture();
    let rec_s = rec.display().to_string();
    let cap_s = cap.display().to_string();
    // --threads 3 asks for shards: records run on one pipeline in two stages (said once).
    let out = fixscope(&[
        "pcap",
        &cap_s,
        "-p",
        "19478",
        "--json",
        "--records",
        &rec_s,
        "--threads",
        "3",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("records: 600 orders and 1800 messages"),
        "{stderr}"
    );
    assert_eq!(
        stderr
            .matches("--records runs on one pipeline in two stages")
            .count(),
        1,
        "{stderr}"
    );
    let summary: Value = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "summary")
        .expect("summary");
    let r = read_records(test, &rec);
    let rows = orders(&r);
    assert_eq!(rows.len() as u64, counter(&summary, "requests"));
    assert_eq!(
        summary["source"]["records_dropped_rows"], 0,
        "{}",
        summary["source"]
    );
    let outcome = |name: &str| rows.iter().filter(|o| o["outcome"] == name).count() as u64;
    assert_eq!(
        outcome("matched") + outcome("late") + outcome("rejected"),
        counter(&summary, "matched")
    );
    for (stage_name, column) in [
        ("first_response", "first_response_ns"),
        ("ack", "ack_ns"),
        ("fill", "fill_ns"),
    ] {
        let values: Vec<u64> = rows.iter().filter_map(|o| ns(&o[column])).collect();
        let s = stage(&summary, stage_name);
        assert_eq!(
            values.len() as u64,
            s["count"].as_u64().unwrap(),
            "{stage_name}"
        );
        assert_eq!(
            values.iter().min(),
            s["min_ns"].as_u64().as_ref(),
            "{stage_name}"
        );
        assert_eq!(
            values.iter().max(),
            s["max_ns"].as_u64().as_ref(),
            "{stage_name}"
        );
        let mean = values.iter().sum::<u64>() as f64 / values.len() as f64;
        let reported = s["mean_ns"].as_f64().unwrap();
        assert!(
            (mean - reported).abs() <= 1.0,
            "{stage_name} mean {mean} vs {reported}"
        );
    }
    // The request's own fields, as the capture has them (the simulator's default symbol).
    assert!(rows
        .iter()
        .all(|o| o["symbol"] == "FXSC" && o["msg_type"] == "D"));
    assert!(rows
        .iter()
        .all(|o| o["sender_comp_id"].as_str().unwrap().starts_with("CLIENT")));
    assert!(rows.iter().all(|o| o["date"] == "2026-11-23"));
    assert_eq!(
        r["messages"],
        serde_json::json!([["request", "D", 600], ["response", "8", 1200]])
    );
    assert_eq!(r["types"]["request_time"], "timestamp[ns]");
    for column in ["symbol", "sender_comp_id", "outcome", "msg_type"] {
        let e = r["encodings"][column].as_str().unwrap();
        assert!(e.contains("DICTIONARY"), "{column} dictionary-encoded: {e}");
    }
    // Strings compressed; the bit-packed deltas of times and latencies left as they are
    // (zstd found almost nothing in them).
    for column in ["clordid", "symbol", "sender_comp_id", "outcome", "session"] {
        assert_eq!(r["compression_of"][column], "ZSTD", "{column}");
    }
    for column in ["request_time", "first_response_ns", "msg_seq_num"] {
        assert_eq!(r["compression_of"][column], "UNCOMPRESSED", "{column}");
        let e = r["encodings"][column].as_str().unwrap();
        assert!(
            e.contains("DELTA_BINARY_PACKED"),
            "{column} delta-encoded: {e}"
        );
    }
    assert_eq!(r["bloom_filter"]["clordid"], true);
    let files: Vec<&str> = r["all_files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert!(
        files
            .iter()
            .all(|f| f.ends_with(".parquet") && !f.contains("/.")),
        "only complete files: {files:?}"
    );
}

/// The records of one pipeline on one thread (`--threads 1`) and in two stages (the
/// default on this many cores, `--threads 2`, where stage B has the orders and the writer
/// a third thread) are the same files, byte for byte, and the reports the same bytes —
/// with late orders (`-t`), and with a third-party capture merged in.
#[test]
fn records_are_the_same_bytes_on_one_thread_and_in_two_stages() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sim = sim_capture().display().to_string();
    let ndpi = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/captures/ndpi/ndpi_fix.pcap")
        .display()
        .to_string();
    let runs: [&[&str]; 3] = [
        &[&sim, "-p", "19478", "-r", "1"],
        &[&sim, "-p", "19478", "-t", "0.005", "-r", "0.2"],
        &[&ndpi, &sim, "-p", "4000,19478"],
    ];
    for (i, args) in runs.iter().enumerate() {
        let run = |threads: &str| {
            let rec = dir.path().join(format!("{i}-{threads}"));
            let rec_s = rec.display().to_string();
            let mut all = vec!["pcap", "--json", "--records", &rec_s, "--threads", threads];
            all.extend_from_slice(args);
            let out = fixscope(&all);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            (out.stdout, parquet_bytes(&rec))
        };
        let (one_report, one_files) = run("1");
        let (two_report, two_files) = run("2");
        assert!(!one_files.is_empty(), "{args:?}: no records written");
        assert_eq!(
            String::from_utf8_lossy(&one_report),
            String::from_utf8_lossy(&two_report),
            "{args:?}: reports"
        );
        let names = |f: &[(String, Vec<u8>)]| f.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        assert_eq!(names(&one_files), names(&two_files), "{args:?}");
        assert!(one_files == two_files, "{args:?}: the Parquet files differ");
    }
}

/// The bytes of every Parquet file under `dir`, by table and date, in file order (the
/// names hold the process id).
fn parquet_bytes(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    for table in ["orders", "messages", "links"] {
        let Ok(dates) = std::fs::read_dir(dir.join(table)) else {
            continue;
        };
        let mut dates: Vec<PathBuf> = dates.map(|d| d.unwrap().path()).collect();
        dates.sort();
        for date in dates {
            let mut parts: Vec<PathBuf> = std::fs::read_dir(&date)
                .unwrap()
                .map(|f| f.unwrap().path())
                .collect();
            parts.sort();
            for part in parts {
                let name = format!("{table}/{}", date.file_name().unwrap().to_string_lossy());
                files.push((name, std::fs::read(&part).unwrap()));
            }
        }
    }
    files
}

/// A directory records cannot be written in is a clear error before anything is read.
#[test]
fn an_unwritable_records_directory_is_a_clear_error() {
    let cap_s = sim_capture().display().to_string();
    let out = fixscope(&[
        "pcap",
        &cap_s,
        "-p",
        "19478",
        "--records",
        "/proc/fixscope-records",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("/proc/fixscope-records"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Live, on lo with real eBPF: every order the exchange saw has one row, its latencies
/// inside the applications' own clocks (the exchange's ack/fill after its read, the
/// client's reads after them), per symbol too — the symbol with a 300 µs ack delay is
/// slower than 300 µs in every row, the other faster in most; files rotate every second
/// and SIGTERM leaves only complete ones, with nanoseconds kept.
#[test]
fn live_records_agree_with_the_simulators_truth() {
    require_root("live_records_agree_with_the_simulators_truth");
    let _g = serial();
    let test = "live_records_agree_with_the_simulators_truth";
    let dir = tempfile::tempdir().expect("tempdir");
    let rec = dir.path().join("rec");
    let rec_s = rec.display().to_string();
    let r = run_scenario(&RunSpec {
        label: "records",
        exchange_args: &[
            "--ack-delay",
            "fixed:30us",
            "--fill-delay",
            "fixed:20us",
            "--symbol-ack-delay",
            "SLOW=fixed:300us",
        ],
        client_args: &[
            "--sessions",
            "2",
            "--rate",
            "1000",
            "--count",
            "2500",
            "--symbols",
            "FAST:3,SLOW:1",
            "--accounts",
            "ACC1,ACC2",
        ],
        live_args: &["--records", &rec_s, "--records-rotate", "1s"],
        ..RunSpec::default()
    });
    assert!(
        r.live_stderr
            .contains("records: 2500 orders and 7500 messages"),
        "{}",
        r.live_stderr
    );
    let records = read_records(test, &rec);
    let rows = orders(&records);
    assert_eq!(rows.len(), r.truth.len());
    assert_eq!(
        r.summary["source"]["records_dropped_rows"], 0,
        "{}",
        r.summary["source"]
    );
    let sessions: HashMap<u64, String> = r.summary["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|x| {
            (
                x["session"].as_u64().unwrap(),
                x["client"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let truth: HashMap<(&str, &str), _> = r
        .truth
        .iter()
        .map(|t| ((t.session.as_str(), t.clordid.as_str()), t))
        .collect();
    let client: HashMap<(&str, &str), _> = r
        .client_truth
        .iter()
        .map(|c| ((c.session.as_str(), c.clordid.as_str()), c))
        .collect();
    const EPS_NS: u64 = 2_000;
    let mut by_symbol: HashMap<String, Vec<(u64, u64, u64)>> = HashMap::new();
    let mut sub_microsecond = 0;
    for row in rows {
        let session = &sessions[&row["session"].as_u64().unwrap()];
        let key = (session.as_str(), row["clordid"].as_str().unwrap());
        let (t, c) = (truth[&key], client[&key]);
        assert_eq!(row["outcome"], "matched", "{row}");
        let request = row["request_time_ns"].as_u64().unwrap();
        sub_microsecond += u64::from(request % 1_000 != 0);
        let ack = ns(&row["ack_ns"]).expect("ack");
        let fill = ns(&row["fill_ns"]).expect("fill");
        assert_eq!(ns(&row["first_response_ns"]), Some(ack), "{row}");
        // The wire latency lies between the exchange's own and the client's round trip.
        let exchange_ack = t.ack_ns.unwrap() - t.request_ns;
        let client_ack = c.first_ns.unwrap() - c.send_ns.unwrap();
        assert!(
            exchange_ack <= ack + EPS_NS && ack <= client_ack + EPS_NS,
            "{key:?}: ack {ack} outside [exchange {exchange_ack}, client {client_ack}]"
        );
        let exchange_fill = t.fill_ns.unwrap() - t.request_ns;
        let client_fill = c.fill_ns.unwrap() - c.send_ns.unwrap();
        assert!(
            exchange_fill <= fill + EPS_NS && fill <= client_fill + EPS_NS,
            "{key:?}: fill {fill} outside [exchange {exchange_fill}, client {client_fill}]"
        );
        assert!(
            ["ACC1", "ACC2"].contains(&row["account"].as_str().unwrap()),
            "{row}"
        );
        by_symbol
            .entry(row["symbol"].as_str().unwrap().to_string())
            .or_default()
            .push((exchange_ack, ack, client_ack));
    }
    // Per symbol, the exact p99 from the raw nanoseconds lies between the truth's p99
    // and the client's.
    let p99 = |mut v: Vec<u64>| {
        v.sort_unstable();
        v[(v.len() * 99).div_ceil(100) - 1]
    };
    let mut symbols: Vec<&String> = by_symbol.keys().collect();
    symbols.sort();
    assert_eq!(symbols, ["FAST", "SLOW"]);
    for (symbol, v) in &by_symbol {
        let (truth_p99, wire_p99, client_p99) = (
            p99(v.iter().map(|x| x.0).collect()),
            p99(v.iter().map(|x| x.1).collect()),
            p99(v.iter().map(|x| x.2).collect()),
        );
        eprintln!(
            "{symbol}: {} orders, ack p99 truth {truth_p99} wire {wire_p99} client {client_p99}",
            v.len()
        );
        assert!(
            truth_p99 <= wire_p99 + EPS_NS && wire_p99 <= client_p99 + EPS_NS,
            "{symbol}"
        );
    }
    assert!(
        by_symbol["SLOW"].iter().all(|x| x.1 >= 300_000),
        "every SLOW ack ≥ 300 µs"
    );
    let median = |symbol: &str| {
        let mut v: Vec<u64> = by_symbol[symbol].iter().map(|x| x.1).collect();
        v.sort_unstable();
        v[v.len() / 2]
    };
    assert!(
        median("FAST") < median("SLOW"),
        "FAST acks faster than SLOW ones"
    );
    assert!(sub_microsecond > rows.len() as u64 / 2, "nanoseconds kept");
    // Rotation every second over a run of 2.5 s; SIGTERM closed the last files whole.
    for table in ["order_files", "message_files"] {
        let n = records[table].as_array().unwrap().len();
        assert!(n >= 2, "{table}: {n} files: rotation every second");
    }
    let files = records["all_files"].as_array().unwrap();
    assert!(
        files
            .iter()
            .all(|f| f.as_str().unwrap().ends_with(".parquet")),
        "only complete files: {files:?}"
    );
    let messages: u64 = records["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m[2].as_u64().unwrap())
        .sum();
    assert_eq!(messages, 3 * r.truth.len() as u64);
}

/// The hand-written Parquet encoder's hard cases, read back by DuckDB: values not UTF-8
/// (replaced), strings longer than 15 bytes, empty fields (null), absent and extreme
/// latencies, a dictionary of more than 256 accounts (indices wider than a byte), long
/// repeats and long unrepeated stretches, more than one row group, all-null latency
/// columns in a group.
#[test]
fn duckdb_reads_every_hard_case_of_the_encoder() {
    use fixscope_core::correlate::{OrderRecord, Outcome, RequestFields, RequestType};
    use fixscope_core::pipeline::OrderRow;
    use fixscope_records::{Records, RecordsOptions};

    let test = "duckdb_reads_every_hard_case_of_the_encoder";
    let dir = tempfile::tempdir().expect("tempdir");
    let mut records = Records::start(&RecordsOptions {
        dir: Some(dir.path().to_path_buf()),
        clickhouse: None,
        rotate: None,
        drop_when_behind: false,
    })
    .expect("records start");
    let start = 1_764_201_600_000_000_000i64; // 2025-11-27T00:00:00Z
    let n = 70_000; // more than one batch: two row groups
    let outcomes = [
        Outcome::Matched,
        Outcome::Late,
        Outcome::Rejected,
        Outcome::Evicted,
    ];
    let mut expected = Vec::new();
    for i in 0..n {
        let account: Vec<u8> = match i % 5 {
            0 => Vec::new(),
            1 => b"caf\xff".to_vec(),
            _ => format!("ACCOUNT-{}", i % 700).into_bytes(),
        };
        let symbol: Vec<u8> = if i < 30_000 {
            b"AAPL".to_vec()
        } else {
            format!("A-SYMBOL-LONGER-THAN-15-{}", i % 3).into_bytes()
        };
        let latency = |k: i64| match (i + k) % 4 {
            0 => None,
            1 => Some(i64::MAX as u64),
            _ => Some((i as u64 * 7919 + k as u64) % 1_000_000),
        };
        // The middle batch's fills are all absent.
        let fill = if (20_000..40_000).contains(&i) {
            None
        } else {
            latency(2)
        };
        let record = OrderRecord {
            scope: 1,
            key: Vec::new(),
            request_type: RequestType::NewOrder,
            request_ts_ns: Some((i * 1_000) as u64),
            msg_seq: i as u32,
            fields: RequestFields {
                cl_ord_id: format!("S{}-{:016}", i % 3, i).into_bytes(),
                symbol: symbol.clone(),
                side: if i % 2 == 0 {
                    b"1".to_vec()
                } else {
                    b"2".to_vec()
                },
                account: account.clone(),
                msg_type: Vec::new(),
            },
            first_response_ns: latency(0),
            ack_ns: latency(1),
            fill_ns: fill,
            outcome: outcomes[(i / 1000) as usize % outcomes.len()],
            timed_out: i % 3 == 0,
        };
        records.order(&OrderRow {
            record: &record,
            session: (i % 3) as u64 + 1,
            sender_comp_id: "CLIENT",
            target_comp_id: if i % 3 == 0 { "" } else { "VENUE" },
            request_time_ns: Some(start + i * 1_000),
        });
        if i < 1_000 {
            records.message(&fixscope_core::pipeline::MessageEvent {
                ts_ns: (i * 1_000) as u64,
                session: (i % 3) as u64 + 1,
                direction: fixscope_core::Direction::Request,
                msg_type: b"D",
                key: if i % 7 == 0 { b"" } else { b"K\xffK" },
                unix_offset_ns: start,
                sender_comp_id: b"CLIENT",
                target_comp_id: b"VENUE",
                msg_seq_num: i as u32,
                poss_dup: false,
            });
        }
        let text = |v: &[u8]| (!v.is_empty()).then(|| String::from_utf8_lossy(v).into_owned());
        expected.push(serde_json::json!({
            "request_time_ns": start + i * 1_000,
            "session": (i % 3) + 1,
            "sender_comp_id": "CLIENT",
            "target_comp_id": if i % 3 == 0 { None } else { Some("VENUE") },
            "clordid": format!("S{}-{:016}", i % 3, i),
            "msg_type": "D",
            "symbol": text(&symbol),
            "side": if i % 2 == 0 { "1" } else { "2" },
            "account": text(&account),
            "msg_seq_num": i,
            "first_response_ns": record.first_response_ns,
            "ack_ns": record.ack_ns,
            "fill_ns": record.fill_ns,
            "outcome": record.outcome.name(),
            "timed_out": record.timed_out,
            "date": "2025-11-27",
        }));
    }
    let summary = records.finish().expect("records finish");
    assert_eq!(summary.written.order_rows, n as u64);
    assert_eq!(summary.written.message_rows, 1_000);
    let read = read_records(test, dir.path());
    let rows = orders(&read);
    assert_eq!(rows.len(), expected.len());
    for (i, (row, want)) in rows.iter().zip(&expected).enumerate() {
        assert_eq!(row, want, "row {i}");
    }
}
