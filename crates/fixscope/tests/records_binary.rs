//! `--records` and `--clickhouse` on binary order sessions: every order of an OUCH 4.2, an
//! OUCH 5.0 and an iLink 3 session (support_by's scripts) kept with its protocol's names — its
//! request's message type as the protocol names it (`O`, `U`, `X`; `514`, `516`), its
//! key (token, OrderRequestID), its session's row names, the instrument and side its
//! request carried — and its latency the script's own. The Parquet files are read back by
//! DuckDB and pyarrow (`tests/interop/records_check.py`), ClickHouse's tables by the
//! ClickHouse engine (chdb, through `tests/interop/clickhouse_shim.py`).

mod support;
mod support_by;
mod support_clickhouse;
mod support_hlog;
mod support_ilink3;
mod support_ouch;

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::{fixscope, write_pcap};
use support_by::Script;
use support_clickhouse::Shim;

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

/// The script's orders as rows: (clordid, msg_type, symbol, side, ack_ns), sorted.
fn truth(script: &Script) -> Vec<(String, String, String, String, u64)> {
    let mut rows: Vec<_> = script
        .orders
        .iter()
        .map(|o| {
            (
                o.key.clone(),
                o.msg_type.to_string(),
                o.symbol.clone(),
                o.side.clone(),
                o.ack_ns,
            )
        })
        .collect();
    rows.sort();
    rows
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

/// Every order of `script` in the Parquet records, on the default plan and `--threads 1`.
fn check_parquet(test: &str, script: &Script) {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("capture.pcap");
    write_pcap(&cap, &script.packets);
    let (port, protocol) = (script.port.to_string(), script.protocol_flag());
    for threads in [None, Some("1")] {
        let rec = dir
            .path()
            .join(format!("rec-{}", threads.unwrap_or("default")));
        let mut args = vec![
            "pcap",
            cap.to_str().unwrap(),
            "-p",
            &port,
            "--protocol",
            &protocol,
            "--records",
            rec.to_str().unwrap(),
        ];
        if let Some(n) = threads {
            args.extend(["--threads", n]);
        }
        let out = fixscope(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let records = read_records(test, &rec);
        let orders = records["orders"].as_array().expect("orders");
        assert_eq!(orders.len(), script.orders.len(), "{orders:#?}");
        let mut got: Vec<_> = orders
            .iter()
            .map(|o| {
                assert_eq!(o["session"], 1, "{o}");
                assert_eq!(text(&o["sender_comp_id"]), script.sender, "{o}");
                assert_eq!(text(&o["target_comp_id"]), script.target, "{o}");
                assert_eq!(o["outcome"], "matched", "{o}");
                assert_eq!(o["first_response_ns"], o["ack_ns"], "{o}");
                assert!(o["request_time_ns"].as_u64().is_some(), "{o}");
                (
                    text(&o["clordid"]),
                    text(&o["msg_type"]),
                    text(&o["symbol"]),
                    text(&o["side"]),
                    o["ack_ns"].as_u64().expect("an ack"),
                )
            })
            .collect();
        got.sort();
        assert_eq!(got, truth(script), "--threads {threads:?}");
        // The messages table: every request and response, the protocol's own types.
        let messages = records["messages"].as_array().expect("messages");
        let requests: u64 = messages
            .iter()
            .filter(|m| m[0] == "request")
            .map(|m| m[2].as_u64().unwrap())
            .sum();
        assert_eq!(requests, script.orders.len() as u64, "{messages:?}");
    }
}

#[test]
fn every_ouch_order_is_in_the_records_with_ouchs_names() {
    check_parquet(
        "every_ouch_order_is_in_the_records_with_ouchs_names",
        &support_by::ouch42(),
    );
}

#[test]
fn every_ouch50_order_is_in_the_records_with_ouchs_names() {
    check_parquet(
        "every_ouch50_order_is_in_the_records_with_ouchs_names",
        &support_by::ouch50(),
    );
}

#[test]
fn every_ilink3_order_is_in_the_records_with_ilink3s_names() {
    check_parquet(
        "every_ilink3_order_is_in_the_records_with_ilink3s_names",
        &support_by::ilink3(),
    );
}

/// The same rows reach ClickHouse (the records' one path: the batch goes to the files and
/// to ClickHouse alike).
#[test]
fn every_binary_order_reaches_clickhouse_with_its_protocols_names() {
    let test = "every_binary_order_reaches_clickhouse_with_its_protocols_names";
    let shim = Shim::start(test, None);
    let dir = tempfile::tempdir().unwrap();
    for (i, script) in [support_by::ouch42(), support_by::ilink3()]
        .iter()
        .enumerate()
    {
        let cap = dir.path().join(format!("capture-{i}.pcap"));
        write_pcap(&cap, &script.packets);
        let url = format!("http://127.0.0.1:{}/binary{i}", shim.port);
        let out = fixscope(&[
            "pcap",
            cap.to_str().unwrap(),
            "-p",
            &script.port.to_string(),
            "--protocol",
            &script.protocol_flag(),
            "--clickhouse",
            &url,
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let rows = shim.query(
            &format!(
                "SELECT clordid, msg_type, ifNull(symbol, ''), ifNull(side, ''), ack_ns, \
                 sender_comp_id, target_comp_id FROM binary{i}.orders \
                 ORDER BY clordid, msg_type, ack_ns"
            ),
            None,
        );
        let got: Vec<_> = rows
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                assert_eq!((f[5], f[6]), (&*script.sender, &*script.target), "{l}");
                (
                    f[0].to_string(),
                    f[1].to_string(),
                    f[2].to_string(),
                    f[3].to_string(),
                    f[4].parse::<u64>().unwrap(),
                )
            })
            .collect();
        assert_eq!(got, truth(script), "{}", script.protocol);
    }
}
