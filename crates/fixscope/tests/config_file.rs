//! The configuration file (#48): every flag of every subcommand can be set from it and lands
//! as the flag on the command line does; defaults < file < environment < command line; a
//! bad file is told at `FILE:LINE` with the valid keys; `config check` says where each
//! setting came from; `config example` is the packaged file and parses back to the defaults;
//! and a `[live]` file runs live end to end.

mod support;
// Not every helper is used here.
#[allow(unused_imports)]
mod support_live;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;
use support_live::{
    fixscope_cmd, free_port, parse_report, require_root, run_client, serial, start_exchange,
    stop_live_proc, Proc, BIN,
};

fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(BIN);
    c.args(args)
        .env_remove("FIXSCOPE_CLICKHOUSE_PASSWORD")
        .env_remove("FIXSCOPE_NO_PROGRESS");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run fixscope")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, body).expect("write config");
    path
}

/// `fixscope config check FILE --parsed -- MODE ARGS`: the arguments as the program sees them.
fn parsed(file: &Path, mode: &[&str], args: &[String]) -> Result<String, String> {
    let f = file.display().to_string();
    let mut all: Vec<&str> = vec!["config", "check", &f, "--parsed", "--"];
    all.extend_from_slice(mode);
    all.extend(args.iter().map(String::as_str));
    let o = run(&all, &[]);
    let (out, err) = text(&o);
    match o.status.success() {
        true => Ok(out),
        false => Err(err),
    }
}

/// The CLI's tables and keys, as the binary reads them off `Cli::command()`.
fn schema() -> Vec<Value> {
    let o = run(&["config", "keys", "--json"], &[]);
    assert!(o.status.success(), "{}", text(&o).1);
    let v: Value = serde_json::from_slice(&o.stdout).expect("config keys --json");
    v["tables"].as_array().expect("tables").clone()
}

/// A value for `key` of `table` that is not its default and that the flag accepts.
fn sample(table: &str, key: &Value) -> Option<Vec<&'static str>> {
    let name = key["name"].as_str().unwrap();
    let possible: Vec<&str> = key["possible"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    let defaults: Vec<&str> = key["defaults"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    if let Some(p) = possible.iter().find(|p| !defaults.contains(p)) {
        let p: &'static str = Box::leak(p.to_string().into_boxed_str());
        return Some(vec![p]);
    }
    let v: &[&'static str] = match (table, name) {
        ("sim.exchange" | "sim.client" | "sim.router" | "demo", "duration") => &["2.5"],
        (_, "duration") => &["2.5"],
        ("sim.exchange" | "sim.router", "listen") => &["127.0.0.1:9999"],
        ("sim.client", "connect") => &["127.0.0.1:9999"],
        ("sim.router", "venue") => &["127.0.0.1:9990"],
        ("sim.router", "id-map") => &["hops"],
        ("sim.router", "reject-rate") => &["0.25"],
        ("sim.router", "slice") => &["3"],
        ("compare", "by") => &["type"],
        ("compare", "baseline" | "candidate") => &["r1.hlog", "r2.hlog"],
        ("compare", "baseline-input") => &["base.hlog"],
        ("compare", "candidate-input") => &["cand.hlog"],
        ("compare", "percentiles") => &["50,99"],
        ("compare", "threshold") => &["10"],
        ("compare", "output") => &["/tmp/cmp.svg"],
        ("plot", "output") => &["/tmp/plot.png"],
        ("plot", "inputs") => &["a.json", "b.json"],
        ("plot", "stage") => &["ack", "fill"],
        ("report", "logs") => &["a.hlog", "b.hlog"],
        ("report", "from") => &["10"],
        ("report", "to") => &["20"],
        ("pcap", "captures") => &["a.pcap", "b.pcap"],
        ("pcap", "point") => &["near=a.pcap", "far=b.pcap"],
        ("pcap", "threads") => &["2"],
        (_, "interface") => &["eth9"],
        (_, "port") => &["9000-9010"],
        (_, "role") => &["client"],
        (_, "interval") => &["2.5"],
        (_, "max-pending") => &["1000"],
        (_, "timeout") => &["0.25"],
        (_, "max-ms") => &["500"],
        (_, "key") => &["11,1"],
        (_, "by") => &["55"],
        (_, "by-limit") => &["7"],
        (_, "by-candidates") => &["300"],
        (_, "records") => &["/tmp/rec"],
        (_, "tls-keylog") => &["/tmp/keys.log", "/tmp/more-keys.log"],
        ("live", "tls-lib") => &["/opt/engine/lib/libssl.so.3"],
        (_, "clickhouse") => &["http://fx:pw@127.0.0.1:8123/db"],
        (_, "records-rotate") => &["30s"],
        (_, "leg") => &["up=9878", "down=9001"],
        (_, "link") => &["hops"],
        ("sim.exchange" | "sim.client", "protocol") => &["ouch42"],
        (_, "protocol") => &["15001=ouch42", "16000=ouch50"],
        ("pcap", "md") => &["233.54.12.1:26400,233.54.12.2:26400=itch50"],
        ("pcap", "tick-link") => &["key:1:8"],
        (_, "link-window") => &["200ms"],
        (_, "prometheus") => &["0.0.0.0:9874"],
        (_, "prometheus-buckets") => &["0.001,0.01"],
        (_, "prometheus-sessions") => &["8"],
        (_, "slowest") => &["5"],
        (_, "cpu") => &["0"],
        (_, "ring-mb") => &["32"],
        (_, "ip") => &["10.0.0.1"],
        (_, "relinquish-privileges") => &["nobody"],
        (_, "time-stamp-type") => &["adapter"],
        (_, "tap-buffer-mb") => &["16"],
        (_, "wire-timestamps") => &["off"],
        (_, "clock") => &["trust"],
        (_, "clock-window") => &["5s"],
        (_, "max-clock-uncertainty") => &["5us"],
        (_, "json-file" | "trace" | "prometheus-textfile" | "html" | "hlog" | "hgrm") => {
            &["/tmp/out.file"]
        }
        (_, "truth" | "session-truth" | "order-truth" | "pcap") => &["/tmp/truth.csv"],
        (_, "rate") => &["100"],
        (_, "sessions") => &["2"],
        (_, "ack-delay" | "fill-delay" | "route-delay" | "back-delay") => &["fixed:10us"],
        (_, "test-request-delay" | "reconnect-pause" | "spin" | "test-request-every") => &["7ms"],
        (_, "stall") => &["1%:2s", "0.1%:5s"],
        (_, "symbol-ack-delay") => &["MSFT=fixed:200us"],
        (_, "mix") => &["D=50,F=50"],
        (_, "symbols" | "accounts" | "venues") => &["A:2,B:1"],
        (_, "begin-string") => &["FIX.4.2"],
        (_, "comp-id" | "target-comp-id" | "sender-comp-id" | "sender-prefix") => &["XYZ"],
        (_, "clordid-prefix" | "test-request-id") => &["T1"],
        (_, "confidence") => &["95"],
        (_, "drain-timeout") => &["2"],
        (
            _,
            "partial-fills" | "seed" | "order-capacity" | "max-live-orders" | "window" | "count"
            | "clordid-len" | "pad" | "heartbeat" | "resamples" | "replay-store" | "resend-last"
            | "queue-while-down" | "hard-reset-every" | "reconnect-every" | "poss-resend-every",
        ) => &["17"],
        (_, n) if n.ends_with("-every") => &["5"],
        _ => return None,
    };
    Some(v.to_vec())
}

/// The rest of a command line that parses and passes the run's checks, for `key` of
/// `table` (both sides of the comparison get it): required arguments and what `key` needs.
fn base(table: &str, key: &str) -> Vec<String> {
    let mut args: Vec<&str> = match table {
        "live" => vec!["-i", "lo", "-p", "9878"],
        "pcap" => vec!["cap.pcap", "-p", "9878"],
        "sim.router" => vec!["--venue", "127.0.0.1:9878"],
        "plot" => vec!["in.json", "-o", "o.svg"],
        "detach" => vec!["-i", "lo"],
        "report" => vec!["a.hlog"],
        "compare" => vec!["a.hlog", "b.hlog"],
        _ => vec![],
    };
    // The key itself is what is under test: drop the base's own.
    let drop_flag = |args: &mut Vec<&str>, flag: &str| {
        if let Some(i) = args.iter().position(|a| *a == flag) {
            args.drain(i..i + 2);
        }
    };
    let long = format!("--{key}");
    drop_flag(&mut args, &long);
    match (table, key) {
        (_, "interface") => drop_flag(&mut args, "-i"),
        (_, "port") => drop_flag(&mut args, "-p"),
        (_, "output") => drop_flag(&mut args, "-o"),
        ("pcap", "captures") | ("plot", "inputs") | ("report", "logs") => {
            args.remove(0);
        }
        ("pcap", "clock" | "clock-window" | "max-clock-uncertainty") => {
            args.remove(0);
            args.extend(["--point", "a=x.pcap", "--point", "b=y.pcap"]);
        }
        ("pcap", "point") => {
            args.remove(0);
        }
        ("compare", "baseline") => args = vec!["--candidate", "c.hlog"],
        ("compare", "candidate") => args = vec!["--baseline", "c.hlog"],
        ("compare", "baseline-input") => args = vec![],
        ("compare", "candidate-input") => args = vec![],
        ("compare", "by-limit") => args.extend(["--by", "55"]),
        ("live" | "pcap", "by-candidates" | "prometheus-by") => args.extend(["--by", "55"]),
        ("live" | "pcap", "link" | "link-window") => {
            args.extend(["--leg", "up=9878", "--leg", "down=9001"])
        }
        ("live", "time-stamp-type" | "tap-buffer-mb" | "wire-timestamps") => args.push("--tap"),
        _ => {}
    }
    args.into_iter().map(String::from).collect()
}

/// A TOML value for `values` of a key of `kind`.
fn toml_of(kind: &str, values: &[&str]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    match kind {
        "values" => format!("[{}]", quoted.join(", ")),
        _ => quoted[0].clone(),
    }
}

#[test]
fn every_flag_of_every_subcommand_can_be_set_from_the_file_as_on_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let tables = schema();
    let names: Vec<&str> = tables
        .iter()
        .map(|t| t["table"].as_str().unwrap())
        .collect();
    for wanted in [
        "live",
        "pcap",
        "sim.exchange",
        "sim.client",
        "report",
        "compare",
    ] {
        assert!(names.contains(&wanted), "{wanted} in {names:?}");
    }
    let (mut checked, mut missing) = (0, Vec::new());
    for table in &tables {
        let name = table["table"].as_str().unwrap();
        let mode: Vec<&str> = name.split('.').collect();
        for key in table["keys"].as_array().unwrap() {
            let k = key["name"].as_str().unwrap();
            let kind = key["kind"].as_str().unwrap();
            let long = key["long"].as_str();
            let base = base(name, k);
            let (file_body, mut cli) = match kind {
                "switch" => (format!("{k} = true"), vec![format!("--{}", long.unwrap())]),
                _ => {
                    let Some(values) = sample(name, key) else {
                        missing.push(format!("[{name}] {k}"));
                        continue;
                    };
                    let cli: Vec<String> = match long {
                        Some(long) => values.iter().map(|v| format!("--{long}={v}")).collect(),
                        None => values.iter().map(|v| v.to_string()).collect(),
                    };
                    (format!("{k} = {}", toml_of(kind, &values)), cli)
                }
            };
            // compare's two positionals go together.
            let mut file_body = format!("[{name}]\n{file_body}\n");
            match (name, k) {
                ("compare", "baseline-input") => {
                    file_body.push_str("candidate-input = \"cand.hlog\"\n");
                    cli.push("cand.hlog".into());
                }
                ("compare", "candidate-input") => {
                    file_body.push_str("baseline-input = \"base.hlog\"\n");
                    cli.insert(0, "base.hlog".into());
                }
                _ => {}
            }
            let file = write(dir.path(), "one.toml", &file_body);
            let empty = write(dir.path(), "empty.toml", "");
            let from_file = parsed(&file, &mode, &base)
                .unwrap_or_else(|e| panic!("[{name}] {k} from the file:\n{file_body}\n{e}"));
            let mut on_cli = base.clone();
            on_cli.extend(cli.iter().cloned());
            let from_cli = parsed(&empty, &mode, &on_cli)
                .unwrap_or_else(|e| panic!("[{name}] {k} on the command line {on_cli:?}:\n{e}"));
            assert_eq!(
                from_file, from_cli,
                "[{name}] {k}: the file's value lands as the flag's does"
            );
            // (Without the key: the same, unless the key is required.)
            if let Ok(without) = parsed(&empty, &mode, &base) {
                assert_ne!(
                    from_file, without,
                    "[{name}] {k}: the sample changes something (not the default)"
                );
            }
            checked += 1;
        }
    }
    assert!(
        missing.is_empty(),
        "keys without a sample value in this test (add one): {missing:?}"
    );
    assert!(checked > 150, "only {checked} keys checked");
}

#[test]
fn a_sub_table_sets_its_family_s_flags() {
    let dir = tempfile::tempdir().unwrap();
    let sub = write(
        dir.path(),
        "sub.toml",
        "[live]\ninterface = \"lo\"\n[live.prometheus]\nlisten = 9874\nsessions = 8\nby = true\n",
    );
    let flat = write(
        dir.path(),
        "flat.toml",
        "[live]\ninterface = \"lo\"\nprometheus = 9874\nprometheus-sessions = 8\nprometheus-by = true\n",
    );
    let base: Vec<String> = ["-p", "9878", "--by", "55"].map(String::from).to_vec();
    let a = parsed(&sub, &["live"], &base).unwrap();
    assert_eq!(a, parsed(&flat, &["live"], &base).unwrap());
    assert!(
        a.contains("prometheus_sessions: 8") && a.contains("prometheus_by: true"),
        "{a}"
    );
    assert!(
        a.contains("prometheus: Some(\n") && a.contains("\"9874\""),
        "{a}"
    );
    // Both is a TOML error, told with the way out.
    let both = write(
        dir.path(),
        "both.toml",
        "[live]\nprometheus = 9874\n[live.prometheus]\nsessions = 8\n",
    );
    let e = parsed(&both, &["live"], &base).unwrap_err();
    assert!(
        e.contains("both.toml:3: not valid TOML: duplicate key") && e.contains("`listen`"),
        "{e}"
    );
}

/// `config check --json`'s settings of `table`: key → (values, origin).
fn check_json(
    file: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> BTreeMap<String, (Vec<String>, String)> {
    let f = file.display().to_string();
    let mut all = vec!["config", "check", f.as_str(), "--json", "--"];
    all.extend_from_slice(args);
    let o = run(&all, env);
    assert!(o.status.success(), "{}", text(&o).1);
    let v: Value = serde_json::from_slice(&o.stdout).expect("check --json");
    v["tables"][0]["settings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let values = s["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_str().unwrap().to_string())
                .collect();
            (
                s["key"].as_str().unwrap().to_string(),
                (values, s["origin"].as_str().unwrap().to_string()),
            )
        })
        .collect()
}

#[test]
fn defaults_then_file_then_environment_then_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "p.toml",
        "[live]\ninterface = \"lo\"\nport = 9878\ninterval = 5\n\
         clickhouse = \"http://fx:filepw@127.0.0.1:8123/db\"\nleg = [\"up=9878\", \"down=9001\"]\n",
    );
    let f = file.display().to_string();
    let at = |line: usize| format!("{f}:{line}");

    // Default: max-ms is in no layer.
    let s = check_json(&file, &["live"], &[]);
    assert_eq!(s["max-ms"], (vec!["10000".into()], "default".into()));
    // File beats the default.
    assert_eq!(s["interval"], (vec!["5".into()], at(4)));
    assert_eq!(s["leg"].1, at(6));
    // The command line beats the file, a repeated flag's whole list too.
    let s = check_json(
        &file,
        &["live", "-r", "2", "--leg", "up=9999", "--leg", "down=9002"],
        &[],
    );
    assert_eq!(s["interval"], (vec!["2".into()], "command line".into()));
    assert_eq!(
        s["leg"],
        (
            vec!["up=9999".into(), "down=9002".into()],
            "command line".into()
        )
    );
    assert_eq!(s["port"].1, at(3));

    // The environment beats the file: FIXSCOPE_CLICKHOUSE_PASSWORD over the file URL's.
    let s = check_json(&file, &["live"], &[]);
    assert_eq!(
        s["clickhouse"],
        (vec!["http://fx:***@127.0.0.1:8123/db".into()], at(5)),
        "no password is ever shown"
    );
    let env = [("FIXSCOPE_CLICKHOUSE_PASSWORD", "envpw")];
    let s = check_json(&file, &["live"], &env);
    assert_eq!(
        s["clickhouse"],
        (
            vec!["http://fx@127.0.0.1:8123/db".into()],
            format!("{}, password from env FIXSCOPE_CLICKHOUSE_PASSWORD", at(5))
        )
    );
    let p = parsed(&file, &["live"], &[]).unwrap();
    assert!(p.contains("filepw"), "{p}");
    let o = run(&["config", "check", &f, "--parsed", "--", "live"], &env);
    let p = text(&o).0;
    assert!(
        !p.contains("filepw") && p.contains("\"http://fx@127.0.0.1:8123/db\""),
        "{p}"
    );
    // ... and the command line beats the environment: its URL's password is used.
    let s = check_json(
        &file,
        &["live", "--clickhouse", "http://fx:clipw@127.0.0.1:8123/db"],
        &env,
    );
    assert_eq!(
        s["clickhouse"],
        (
            vec!["http://fx:***@127.0.0.1:8123/db".into()],
            "command line".into()
        )
    );

    // A command-line flag that conflicts with a file's key replaces it.
    let json = write(
        dir.path(),
        "j.toml",
        "[live]\ninterface = \"lo\"\nport = 1\njson = true\n",
    );
    let s = check_json(&json, &["live", "--format", "text"], &[]);
    assert_eq!(s["format"].1, "command line");
    assert_eq!(s["json"], (vec!["false".into()], "default".into()));
}

/// Runs `fixscope live --config BODY` and returns its stderr (it must fail).
fn refused(body: &str) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "bad.toml", body);
    let f = file.display().to_string();
    let o = run(&["live", "--config", &f], &[]);
    assert_eq!(o.status.code(), Some(2), "{body}: {}", text(&o).1);
    let err = text(&o).1;
    assert!(err.starts_with(&format!("fixscope: error: {f}")), "{err}");
    (err.replace(&f, "FILE"), f)
}

#[test]
fn a_bad_file_is_told_at_its_line_with_the_valid_keys() {
    let live_keys = "valid keys of [live]: interface, port, role, interval,";
    // An unknown key, with the key meant.
    let (e, _) = refused("[live]\ninterface = \"lo\"\nport = 9878\nintervall = 2\n");
    assert!(
        e.contains("FILE:4: unknown key `intervall` in [live] (did you mean `interval`?)"),
        "{e}"
    );
    assert!(e.contains(live_keys), "{e}");
    // A key of another table.
    let (e, _) = refused("[pcap]\ninterface = \"eth0\"\n");
    assert!(
        e.contains("FILE:2: unknown key `interface` in [pcap] (`interface` is a key of [live])"),
        "{e}"
    );
    assert!(e.contains("valid keys of [pcap]: captures, port,"), "{e}");
    // An unknown table, a key at the top.
    let (e, _) = refused("[liv]\nport = 1\n");
    assert!(
        e.contains("FILE:2: unknown table [liv] (did you mean [live]?)")
            && e.contains("valid tables: demo, live, pcap"),
        "{e}"
    );
    let (e, _) = refused("port = 9878\n");
    assert!(
        e.contains("FILE:1: unknown top-level key `port` (a key of [demo]")
            || e.contains("FILE:1: unknown top-level key `port`"),
        "{e}"
    );
    // A wrong type.
    let (e, _) = refused("[live]\ninterface = \"lo\"\nport = true\n");
    assert!(
        e.contains("FILE:3: [live] `port` takes a value (PORT|LO-HI[,...]), got a boolean"),
        "{e}"
    );
    assert!(e.contains(live_keys), "{e}");
    let (e, _) = refused("[live]\ninterface = \"lo\"\nport = 1\ntui = \"yes\"\n");
    assert!(
        e.contains("FILE:4: [live] `tui` takes true or false, got a string"),
        "{e}"
    );
    let (e, _) = refused("[live]\ninterface = [\"lo\", \"eth0\"]\nport = 1\n");
    assert!(
        e.contains("FILE:2: [live] `interface` takes a value (IFACE[,IFACE...]), got an array"),
        "{e}"
    );
    // A value the flag refuses: its own parser's words.
    let (e, _) = refused("[live]\ninterface = \"lo\"\n\nport = 70000\n");
    assert!(
        e.contains("FILE:4: [live] `port` = 70000: invalid value '70000' for '--port"),
        "{e}"
    );
    assert!(e.contains("not a port") && e.contains(live_keys), "{e}");
    let (e, _) = refused("[live]\ninterface = \"lo\"\nport = 1\nformat = \"xml\"\n");
    assert!(
        e.contains("FILE:4: [live] `format` = xml") && e.contains("[possible values: text, json]"),
        "{e}"
    );
    // ... and refused by the run's own checks, before anything is attached.
    let (e, _) = refused("[live]\ninterface = \"lo\"\nport = 1\ntimeout = 0\n");
    assert!(
        e.contains("FILE:4: `timeout`: -t/--timeout must be greater than 0"),
        "{e}"
    );
    assert!(e.contains(live_keys), "{e}");
    let (e, _) =
        refused("[live]\ninterface = \"lo\"\nport = 1\n[live.prometheus]\nsessions = 100000\n");
    assert!(
        e.contains("FILE:5: `prometheus-sessions`: --prometheus-sessions must be at most"),
        "{e}"
    );
    // TOML that does not parse.
    let (e, _) = refused("[live]\ninterface = \"lo\"\nport = [9878\n");
    assert!(e.contains("FILE:3: not valid TOML"), "{e}");
    // The same flag twice (a sub-table and in full).
    let (e, _) = refused("[live]\nprometheus-sessions = 2\n[live.prometheus]\nsessions = 1\n");
    assert!(
        e.contains(
            "FILE:4: [live.prometheus] `sessions` sets `prometheus-sessions` again (line 2 set it)"
        ),
        "{e}"
    );
    // A required flag that nothing gives.
    let (e, _) = refused("[live]\nport = 1\n");
    assert!(e.contains("FILE: live needs --interface"), "{e}");
    // A mode that does not exist.
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "m.toml", "command = \"lve\"\n");
    let o = run(&["run", "--config", &file.display().to_string()], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).1.contains("m.toml:1: `command`: no mode `lve`")
            && text(&o).1.contains("valid commands: demo, live"),
        "{}",
        text(&o).1
    );
}

#[test]
fn config_check_prints_every_setting_with_where_it_came_from() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "svc.toml",
        "command = \"live\"\n[live]\ninterface = \"lo\"\nport = 9878\nhlog = \"/var/lib/fixscope/live.hlog\"\n\
         [pcap]\nport = 9000\n",
    );
    let f = file.display().to_string();
    let o = run(&["config", "check", &f], &[]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains(&format!("{f}: valid")), "{err}");
    let line = |prefix: &str| {
        out.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix} in\n{out}"))
            .to_string()
    };
    assert!(line("[live]").contains(&format!("fixscope live --config {f}")));
    assert!(line("interface = \"lo\"").ends_with(&format!("# {f}:3")));
    assert!(line("hlog = ").ends_with(&format!("# {f}:5")));
    assert!(line("interval = 1 ").ends_with("# default"));
    // A table the command line will complete is checked as far as it goes.
    assert!(line("[pcap]").contains("checked as far as the file goes"));
    assert!(
        out.contains("# the command line must give: <CAPTURE>"),
        "{out}"
    );
    // With a command line, and with the environment.
    let o = run(
        &["config", "check", &f, "--", "live", "-r", "3"],
        &[("FIXSCOPE_NO_PROGRESS", "1")],
    );
    let out = text(&o).0;
    assert!(
        out.lines()
            .any(|l| l.starts_with("interval = 3 ") && l.ends_with("# command line")),
        "{out}"
    );
    assert!(out.contains("# env FIXSCOPE_NO_PROGRESS is set"), "{out}");
    // An invalid file fails the check (a service's ExecStartPre).
    let bad = write(dir.path(), "bad.toml", "[live]\nprot = 1\n");
    let o = run(&["config", "check", &bad.display().to_string()], &[]);
    assert!(!o.status.success());
    assert!(
        text(&o)
            .1
            .contains("bad.toml:2: unknown key `prot` in [live] (did you mean `port`?)"),
        "{}",
        text(&o).1
    );
}

fn example() -> String {
    let o = run(&["config", "example"], &[]);
    assert!(o.status.success());
    text(&o).0
}

#[test]
fn the_packaged_file_is_config_example_s_output() {
    let packaged = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../packaging/fixscope.toml");
    let want = std::fs::read_to_string(&packaged).unwrap_or_default();
    assert!(
        want == example(),
        "packaging/fixscope.toml differs from `fixscope config example`: regenerate it with \
         `cargo run -p fixscope -- config example > packaging/fixscope.toml`"
    );
}

#[test]
fn config_example_parses_back_to_the_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let text_of = example();
    // Every table, every key, each with its default and its help.
    for table in schema() {
        let name = table["table"].as_str().unwrap();
        assert!(text_of.contains(&format!("\n[{name}]\n")), "[{name}]");
        for key in table["keys"].as_array().unwrap() {
            let k = key["name"].as_str().unwrap();
            let short = match k {
                "prometheus" => "listen",
                _ => k.strip_prefix("prometheus-").unwrap_or(k),
            };
            assert!(text_of.contains(&format!("\n#{short} = ")), "[{name}] {k}");
        }
    }
    // As written (all commented out) it is valid and sets nothing.
    let as_is = write(dir.path(), "as_is.toml", &text_of);
    let empty = write(dir.path(), "empty.toml", "");
    // Uncommented where a default is given, it parses to what no file gives.
    let mut uncommented = String::new();
    let mut default_follows = false;
    for line in text_of.lines() {
        if line.starts_with("# Default: ") {
            default_follows = true;
        } else if default_follows && line.starts_with('#') {
            uncommented.push_str(&line[1..]);
            uncommented.push('\n');
            default_follows = false;
            continue;
        }
        uncommented.push_str(line);
        uncommented.push('\n');
    }
    let defaults = write(dir.path(), "defaults.toml", &uncommented);
    assert!(uncommented.contains("\ninterval = 1\n") && uncommented.contains("\nsessions = 0\n"));
    for table in schema() {
        let name = table["table"].as_str().unwrap();
        let mode: Vec<&str> = name.split('.').collect();
        let base = base(name, "");
        let none = parsed(&empty, &mode, &base).unwrap();
        assert_eq!(
            parsed(&as_is, &mode, &base).unwrap(),
            none,
            "[{name}] as written"
        );
        assert_eq!(
            parsed(&defaults, &mode, &base).unwrap_or_else(|e| panic!("[{name}]: {e}")),
            none,
            "[{name}]: the example's defaults are the defaults"
        );
    }
}

/// A file for a live service — interface, ports, Prometheus address, records, hlog — run
/// with `fixscope run --config FILE` against the simulator.
#[test]
fn a_live_service_file_runs_end_to_end() {
    require_root("a_live_service_file_runs_end_to_end");
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let mut exchange = start_exchange(None, "127.0.0.1:0", &dir.path().join("ex.csv"), &[]);
    let metrics = free_port();
    let (records, hlog) = (dir.path().join("rec"), dir.path().join("live.hlog"));
    let file = write(
        dir.path(),
        "live.toml",
        &format!(
            "command = \"live\"\n\n[live]\ninterface = \"lo\"\nport = {port}\njson = true\n\
             interval = 0.5\nrecords = {records:?}\nhlog = {hlog:?}\n\n\
             [live.prometheus]\nlisten = \"127.0.0.1:{metrics}\"\nsessions = 4\n",
            port = exchange.addr.port(),
            records = records.display().to_string(),
            hlog = hlog.display().to_string(),
        ),
    );
    let f = file.display().to_string();
    let o = run(&["config", "check", &f], &[]);
    assert!(o.status.success(), "{}", text(&o).1);
    let mut live = Proc::spawn("fixscope run", fixscope_cmd(None, &["run", "--config", &f]));
    live.wait_for_stderr("fixscope: watching", Duration::from_secs(15));
    run_client(
        None,
        &exchange,
        &["--sessions", "2", "--rate", "2000", "--count", "1000"],
        Duration::from_secs(20),
    );
    std::thread::sleep(Duration::from_millis(1200));
    let scraped = http_get(&format!("127.0.0.1:{metrics}"));
    let done = stop_live_proc(&mut live, libc::SIGTERM);
    exchange.proc.signal(libc::SIGTERM);
    exchange.proc.finish(Duration::from_secs(10));

    let (_, summary) = parse_report(&done.stdout);
    assert_eq!(support::counter(&summary, "requests"), 1000, "{summary}");
    assert!(
        scraped.contains("fixscope_"),
        "Prometheus on the file's address:\n{scraped}"
    );
    assert!(
        scraped.contains("session="),
        "[live.prometheus] sessions = 4:\n{scraped}"
    );
    let log = std::fs::read_to_string(&hlog).expect("the file's hlog");
    assert!(log.contains("#[StartTime:"), "{log}");
    let parquet = walk(&records.join("orders"));
    assert!(
        parquet
            .iter()
            .any(|p| p.extension().is_some_and(|e| e == "parquet")),
        "{parquet:?}"
    );
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        match e.path().is_dir() {
            true => out.extend(walk(&e.path())),
            false => out.push(e.path()),
        }
    }
    out
}

fn http_get(addr: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connect to the metrics");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET /metrics HTTP/1.0\r\nHost: {addr}\r\nAccept: text/plain\r\n\r\n"
    )
    .unwrap();
    let mut body = String::new();
    let _ = s.read_to_string(&mut body);
    body
}
