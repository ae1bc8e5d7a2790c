//! A live run's JSON keeps its shape (issue #30): every field name, where it sits and what
//! kind of value it holds — of the summary and of the interval lines — as main's binary
//! wrote them before the core was rebuilt as layers. A live run's figures differ from run
//! to run (the kernel's timing), so its values are not compared: `golden.rs` holds the
//! offline outputs byte for byte; this holds the live output's schema, which scripts,
//! Grafana and `fixscope report` read.
//!
//! Blessing (only for an intended change of the JSON, said in the CHANGELOG):
//! `FIXSCOPE_GOLDEN_BLESS=1 FIXSCOPE_GOLDEN_BIN=/path/to/fixscope cargo test -p fixscope
//! --test golden_live` rewrites `testdata/golden-live/`.

mod support;
#[allow(unused_imports)]
mod support_live;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use support_live::*;

/// The binary under test, or the one given to bless with.
fn binary() -> PathBuf {
    std::env::var_os("FIXSCOPE_GOLDEN_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(BIN))
}

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/golden-live")
}

/// A JSON value's shape: objects keep their keys (sorted) with their values' shapes;
/// arrays become the distinct shapes of their elements; numbers and `null` are one kind
/// (a figure of an empty distribution is `null`), strings and booleans their own.
fn shape(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), shape(v))).collect()),
        Value::Array(items) => {
            let mut shapes: Vec<Value> = Vec::new();
            for s in items.iter().map(shape) {
                merge_into(&mut shapes, s);
            }
            Value::Array(shapes)
        }
        Value::Number(_) | Value::Null => Value::String("number".into()),
        Value::String(_) => Value::String("string".into()),
        Value::Bool(_) => Value::String("bool".into()),
    }
}

/// Adds `s` to a set of shapes: objects are one shape whatever keys each has (their keys'
/// union), so a list of rows with optional fields has one row shape.
fn merge_into(shapes: &mut Vec<Value>, s: Value) {
    match s {
        Value::Object(new) => {
            if let Some(Value::Object(old)) = shapes.iter_mut().find(|x| x.is_object()) {
                for (k, v) in new {
                    match old.get_mut(&k) {
                        Some(existing) => *existing = union(existing.take(), v),
                        None => {
                            old.insert(k, v);
                        }
                    }
                }
            } else {
                shapes.push(Value::Object(new));
            }
        }
        other => {
            if !shapes.contains(&other) {
                shapes.push(other);
                shapes.sort_by_key(|v| v.to_string());
            }
        }
    }
}

fn union(a: Value, b: Value) -> Value {
    match (a, b) {
        (Value::Array(mut a), Value::Array(b)) => {
            for s in b {
                merge_into(&mut a, s);
            }
            Value::Array(a)
        }
        (Value::Object(a), b @ Value::Object(_)) => {
            let mut v = vec![Value::Object(a)];
            merge_into(&mut v, b);
            v.pop().unwrap_or(Value::Null)
        }
        (a, b) if a == b => a,
        (a, b) => Value::String(format!("{}|{}", a, b)),
    }
}

/// Every line of `fixscope live --json` while the simulator trades on lo, as shapes: the
/// summary's and the union of the interval lines'.
fn live_shapes() -> BTreeMap<&'static str, Value> {
    let dir = tempfile::tempdir().expect("temp dir");
    let exchange = start_exchange(
        None,
        "127.0.0.1:0",
        &dir.path().join("truth.csv"),
        &["--ack-delay", "fixed:50us", "--fill-delay", "fixed:50us"],
    );
    let port = exchange.addr.port().to_string();
    let mut cmd = Command::new(binary());
    cmd.args(["live", "-i", "lo", "-p", &port, "--json", "-r", "0.5"]);
    cmd.args(["--slowest", "3", "--by", "55"]);
    let mut live = Proc::spawn("fixscope live", cmd);
    live.wait_for_stderr("fixscope: watching", Duration::from_secs(15));
    run_client(
        None,
        &exchange,
        &["--sessions", "2", "--rate", "2000", "--count", "3000"],
        Duration::from_secs(30),
    );
    let done = stop_live_proc(&mut live, libc::SIGINT);
    let (intervals, summary) = parse_report(&done.stdout);
    assert!(!intervals.is_empty(), "interval lines: {}", done.stderr);
    let mut interval = Vec::new();
    for line in &intervals {
        merge_into(&mut interval, shape(line));
    }
    BTreeMap::from([
        ("summary", shape(&summary)),
        ("interval", interval.pop().unwrap_or(Value::Null)),
    ])
}

/// Where two shapes part: the first path whose kind or keys differ.
fn first_difference(path: &str, golden: &Value, now: &Value) -> Option<String> {
    match (golden, now) {
        (Value::Object(g), Value::Object(n)) => {
            let gone: Vec<_> = g.keys().filter(|k| !n.contains_key(*k)).collect();
            let new: Vec<_> = n.keys().filter(|k| !g.contains_key(*k)).collect();
            if !gone.is_empty() || !new.is_empty() {
                return Some(format!("{path}: fields gone {gone:?}, fields new {new:?}"));
            }
            g.iter()
                .find_map(|(k, v)| first_difference(&format!("{path}.{k}"), v, &n[k]))
        }
        (Value::Array(g), Value::Array(n)) => match (
            g.iter().find(|v| v.is_object()),
            n.iter().find(|v| v.is_object()),
        ) {
            (Some(go), Some(no)) => first_difference(&format!("{path}[]"), go, no),
            _ if g == n => None,
            _ => Some(format!("{path}: golden {golden}, now {now}")),
        },
        _ if golden == now => None,
        _ => Some(format!("{path}: golden {golden}, now {now}")),
    }
}

#[test]
fn a_live_run_s_json_keeps_main_s_shape() {
    require_root("a_live_run_s_json_keeps_main_s_shape");
    let _g = serial();
    let shapes = live_shapes();
    let dir = golden_dir();
    if std::env::var("FIXSCOPE_GOLDEN_BLESS").is_ok_and(|v| v == "1") {
        std::fs::create_dir_all(&dir).expect("golden-live dir");
        for (name, s) in &shapes {
            let text = serde_json::to_string_pretty(s).expect("json") + "\n";
            std::fs::write(dir.join(format!("{name}.shape.json")), text).expect("write golden");
        }
        return;
    }
    let mut failures = Vec::new();
    for (name, now) in &shapes {
        let path = dir.join(format!("{name}.shape.json"));
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (bless: FIXSCOPE_GOLDEN_BLESS=1)", path.display()));
        let golden: Value = serde_json::from_str(&text).expect("golden shape is JSON");
        if let Some(d) = first_difference(name, &golden, now) {
            failures.push(d);
        }
    }
    assert!(
        failures.is_empty(),
        "the live JSON's shape differs from testdata/golden-live/:\n{}",
        failures.join("\n")
    );
}
