//! `--by NAME` on binary order sessions: latency per value of a protocol's field, by the
//! name its spec gives it (OUCH 4.2's `Stock`, iLink 3's `SecurityID` and `Side`),
//! through the same groups as FIX's tags — each value's requests and ack latencies
//! exactly the script's (support_by), in JSON and in text, on the default plan and
//! `--threads 1`. A name the run's protocols do not have is refused, naming theirs.

mod support;
mod support_by;
mod support_ilink3;
mod support_ouch;

use fixscope_core::human::human_ns;
use serde_json::Value;
use support::*;
use support_by::{ByRows, Script};

/// The summary's `by` rows of field `tag`.
fn rows<'a>(summary: &'a Value, tag: &str) -> Vec<&'a Value> {
    summary["by"]
        .as_array()
        .expect("a by list")
        .iter()
        .filter(|r| r["tag"] == tag)
        .collect()
}

fn ack(row: &Value) -> &Value {
    row["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stage"] == "ack")
        .expect("an ack stage")
}

/// Every value of the script under `tag` has its requests and its acks' count, min and
/// max, and no other value is reported.
fn assert_by_json(summary: &Value, tag: &str, expected: &ByRows) {
    let rows = rows(summary, tag);
    for (value, requests, acks) in expected {
        let row = rows
            .iter()
            .find(|r| r["value"] == value.as_str())
            .unwrap_or_else(|| panic!("{tag}={value} missing: {rows:?}"));
        assert_eq!(row["requests"], *requests, "{tag}={value} requests: {row}");
        let a = ack(row);
        assert_eq!(a["count"], acks.len() as u64, "{tag}={value}: {a}");
        assert_eq!(a["min_ns"], acks[0], "{tag}={value}: {a}");
        assert_eq!(a["max_ns"], *acks.last().unwrap(), "{tag}={value}: {a}");
    }
    // Nothing else has latencies (the `(none)` row is always there, maybe empty).
    for row in &rows {
        let known = expected.iter().any(|(v, ..)| row["value"] == v.as_str());
        assert!(
            known || ack(row)["count"] == 0,
            "{tag}: a value the script never sent: {row}"
        );
    }
}

/// The text report's table of `heading`: each value's ack row has the script's count, min
/// and max.
fn assert_by_text(text: &str, heading: &str, expected: &ByRows) {
    let table: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != heading)
        .skip(1)
        .take_while(|l| !l.is_empty() && !l.starts_with("by "))
        .collect();
    assert!(!table.is_empty(), "no table {heading:?} in:\n{text}");
    for (value, _, acks) in expected {
        let label = format!("{value} ack ");
        let row = table
            .iter()
            .find(|l| l.starts_with(&label))
            .unwrap_or_else(|| panic!("{heading}: no row {label:?} in {table:#?}"));
        let cells: Vec<&str> = row[label.len()..].split_whitespace().collect();
        assert_eq!(cells[0], acks.len().to_string(), "{row}");
        assert_eq!(cells[1], human_ns(acks[0] as f64), "{row}");
        assert_eq!(
            *cells.last().unwrap(),
            human_ns(*acks.last().unwrap() as f64),
            "{row}"
        );
    }
}

/// The script's capture, analysed with `--by by` on each plan, in JSON and in text.
fn check(script: &Script, by: &str, tags: &[(&str, &str, ByRows)], name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let port = script.port.to_string();
    let protocol = script.protocol_flag();
    for threads in [None, Some("1")] {
        let mut flags = vec!["-p", &port, "--protocol", &protocol, "--by", by];
        if let Some(n) = threads {
            flags.extend(["--threads", n]);
        }
        let file = format!("{name}-{}.pcap", threads.unwrap_or("default"));
        let s = analyse_packets(dir.path(), &file, &script.packets, &flags);
        assert_eq!(
            counter(&s, "requests"),
            script.orders.len() as u64,
            "{}",
            s["counters"]
        );
        assert_eq!(counter(&s, "matched"), script.orders.len() as u64);
        for (tag, _, expected) in tags {
            assert_by_json(&s, tag, expected);
        }
        let path = dir.path().join(&file);
        let mut args = vec!["pcap", path.to_str().unwrap()];
        args.extend(&flags);
        let out = fixscope(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        for (_, heading, expected) in tags {
            assert_by_text(&text, heading, expected);
        }
    }
}

#[test]
fn ouch_orders_are_grouped_by_stock_by_name() {
    let script = support_by::ouch42();
    let expected = script.by_value();
    // The script's own arithmetic, said once: AAPL's six orders and its replace.
    let aapl = expected.iter().find(|(v, ..)| v == "AAPL").unwrap();
    assert_eq!((aapl.1, aapl.2.len()), (6, 7));
    assert_eq!(
        (aapl.2[0], *aapl.2.last().unwrap()),
        (20_000, support_by::OUCH_REPLACE_NS)
    );
    let none = expected.iter().find(|(v, ..)| v == "(none)").unwrap();
    assert_eq!(
        (none.1, none.2.clone()),
        (0, vec![support_by::OUCH_CANCEL_NS])
    );
    // Any case; the spec's name in the reports.
    check(
        &script,
        "stock",
        &[("Stock", "by field Stock (--by):", expected)],
        "ouch-stock",
    );
}

/// OUCH 5.0 names it `Symbol`: `--by stock` (4.2's name) finds it, the reports say
/// `Symbol`.
#[test]
fn ouch50_orders_are_grouped_by_symbol_by_either_versions_name() {
    let script = support_by::ouch50();
    let expected = script.by_value();
    assert_eq!(expected.len(), 2, "{expected:?}");
    check(
        &script,
        "stock",
        &[("Symbol", "by field Symbol (--by):", expected)],
        "ouch50-symbol",
    );
}

#[test]
fn ilink3_orders_are_grouped_by_security_id_and_side_by_name() {
    let script = support_by::ilink3();
    let by_security = script.by_value();
    assert_eq!(by_security.len(), 3, "{by_security:?}");
    let mut by_side: ByRows = ["1", "2"]
        .iter()
        .map(|side| {
            let mut acks: Vec<u64> = script
                .orders
                .iter()
                .filter(|o| o.side == *side)
                .map(|o| o.ack_ns)
                .collect();
            acks.sort_unstable();
            (side.to_string(), acks.len() as u64, acks)
        })
        .collect();
    by_side.sort();
    assert_eq!(
        (by_side[0].1, by_side[1].1),
        (10, 9),
        "nine buys and the cancel"
    );
    check(
        &script,
        "SecurityID,side",
        &[
            ("SecurityID", "by field SecurityID (--by):", by_security),
            ("Side", "by field Side (--by):", by_side),
        ],
        "ilink3",
    );
}

#[test]
fn a_name_the_runs_protocols_do_not_have_is_refused_with_theirs() {
    let dir = tempfile::tempdir().unwrap();
    let script = support_by::ouch42();
    let path = dir.path().join("ouch.pcap");
    write_pcap(&path, &script.packets);
    let protocol = script.protocol_flag();
    let port = script.port.to_string();
    let args = [
        "pcap",
        path.to_str().unwrap(),
        "-p",
        &port,
        "--protocol",
        &protocol,
    ];
    let run = |by: &str| {
        let mut a = args.to_vec();
        a.extend(["--by", by]);
        fixscope(&a)
    };
    let out = run("SecurityID");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no field \"SecurityID\""), "{err}");
    assert!(err.contains("ouch42: Stock, Side, Firm, Capacity"), "{err}");
    // A FIX tag is still a FIX tag: no OUCH order carries it, all in (none).
    let out = run("55");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Without --protocol, a name is a FIX field's or an error naming FIX's.
    let out = fixscope(&["pcap", path.to_str().unwrap(), "-p", &port, "--by", "Stock"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no field \"Stock\" (FIX: a tag number, or Account"),
        "{err}"
    );
}

/// The HdrHistogram log names the field (`ack.Stock=AAPL`, the `#fixscope-by` line's
/// `field`), and `fixscope report` gives the run's `by` back, name and figures; so does
/// Prometheus's label (`tag="Stock"`).
#[test]
fn the_log_keeps_the_fields_name_and_report_reads_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let script = support_by::ouch42();
    let cap = dir.path().join("ouch.pcap");
    write_pcap(&cap, &script.packets);
    let log = dir.path().join("ouch.hlog");
    let prom = dir.path().join("ouch.prom");
    let (port, protocol) = (script.port.to_string(), script.protocol_flag());
    let out = fixscope(&[
        "pcap",
        cap.to_str().unwrap(),
        "-p",
        &port,
        "--protocol",
        &protocol,
        "--by",
        "STOCK",
        "--json",
        "--hlog",
        log.to_str().unwrap(),
        "--prometheus-textfile",
        prom.to_str().unwrap(),
        "--prometheus-by",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("Tag=ack.Stock=AAPL,"), "{text}");
    assert!(text.contains(r#""field":"Stock""#), "{text}");
    let metrics = std::fs::read_to_string(&prom).unwrap();
    let aapl = metrics
        .lines()
        .find(|l| l.contains(r#"tag="Stock""#) && l.contains(r#"value="AAPL""#))
        .unwrap_or_else(|| panic!("no Stock=AAPL series in:\n{metrics}"));
    assert!(!aapl.starts_with('#'), "{aapl}");
    let run: Value = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "summary")
        .expect("a summary");
    let out = fixscope(&["report", log.to_str().unwrap(), "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let back: Value = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "summary")
        .expect("a summary read back");
    assert_eq!(back["by"], run["by"]);
    assert_by_json(&back, "Stock", &script.by_value());
}

/// A FIX run takes FIX's field names too: `--by Symbol,account` is `--by 55,1`, byte for
/// byte.
#[test]
fn a_fix_fields_name_is_its_tag_byte_for_byte() {
    let cap = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/captures/sim/sim_orders.pcap");
    let run = |by: &str| {
        let out = fixscope(&["pcap", cap.to_str().unwrap(), "-p", "19478", "--by", by]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let by_number = run("55,1");
    assert!(
        String::from_utf8_lossy(&by_number).contains("by tag 55 (--by):"),
        "{}",
        String::from_utf8_lossy(&by_number)
    );
    assert_eq!(run("Symbol,account"), by_number);
}
