//! The text report a person reads (#35): the brief default (one line per interval, a
//! summary in one screen, alarms first) and `--full`, whose facts are the JSON's; the
//! alarms on a real terminal in red; `fixscope -v`.

mod support;

use std::path::Path;
use std::process::Command;

use fixscope_core::pcap_writer::SyntheticConnection;
use fixscope_core::report::counter_kinds::is_alarm;
use fixscope_core::report::human_ns;
use serde_json::Value;
use support::*;

fn text(args: &[&str]) -> String {
    let out = fixscope(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// The summary's lines, from its `===` line to the end.
fn summary_lines(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("=== fixscope summary"))
        .unwrap_or_else(|| panic!("no summary in:\n{text}"));
    lines[at..].to_vec()
}

/// A plain capture: 3 sessions of 200 orders, each answered by an ack and a fill.
fn plain_capture(dir: &Path) -> std::path::PathBuf {
    let (packets, _) = build_scenario(&ScenarioSpec::default());
    let path = dir.join("plain.pcap");
    write_pcap(&path, &packets);
    path
}

/// A capture with alarms: an order answered after `-t` (timed_out, then late), a
/// response no request asked for, a message with a bad checksum; and an order filled at
/// once (no ack), so `ack` is not `first_response` over again.
fn alarming_capture(dir: &Path) -> std::path::PathBuf {
    let client = endpoint(false, 2, 40000);
    let server = endpoint(false, 1, SERVER_PORT);
    let mut conn = SyntheticConnection::new(client, server);
    let mut packets = Vec::new();
    let order = |id: &str| fix_message("FIX.4.4", &[(35, "D"), (11, id)]);
    let er = |id: &str, exec: &str| {
        fix_message(
            "FIX.4.4",
            &[
                (35, "8"),
                (11, id),
                (150, exec),
                (39, if exec == "F" { "2" } else { "0" }),
            ],
        )
    };
    let ms = 1_000_000;
    for (i, id) in ["A1", "A2", "SLOW", "FILLED"].iter().enumerate() {
        let t = (i as u64 + 1) * 100 * ms;
        packets.push(at(t, conn.client_sends(&order(id))));
        let (after, exec) = match *id {
            "SLOW" => (30 * ms, "0"),
            "FILLED" => (50_000, "F"),
            _ => (40_000, "0"),
        };
        packets.push(at(t + after, conn.server_sends(&er(id, exec))));
    }
    packets.push(at(600 * ms, conn.server_sends(&er("NOBODY", "0"))));
    let mut bad = order("BAD");
    let n = bad.len();
    bad[n - 2] = if bad[n - 2] == b'0' { b'1' } else { b'0' };
    packets.push(at(700 * ms, conn.client_sends(&bad)));
    let path = dir.join("alarms.pcap");
    write_pcap(&path, &packets);
    path
}

/// A stage row of a text table: `name count min mean p50 p90 p99 p99.9 p99.99 p99.999 max`.
fn row<'a>(summary: &[&'a str], name: &str) -> Option<Vec<&'a str>> {
    summary
        .iter()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|cols| cols.first() == Some(&name) && cols.len() == 11)
}

fn ns_text(v: &Value) -> String {
    v.as_u64().map_or("-".to_string(), |ns| human_ns(ns as f64))
}

#[test]
fn the_brief_summary_fits_one_screen_with_what_matters() {
    let dir = tempfile::tempdir().unwrap();
    let path = plain_capture(dir.path());
    let p = path.to_str().unwrap();
    let brief = text(&["pcap", p, "-p", "9878", "-r", "0.005"]);
    let (intervals, json) = analyse(&[&path], &["-r", "0.005"]);

    // One line per interval, first_response with p50 and p99; no stage lines under it.
    let interval_lines: Vec<&str> = brief.lines().filter(|l| l.starts_with("--- ")).collect();
    assert_eq!(interval_lines.len(), intervals.len(), "{brief}");
    for (line, iv) in interval_lines.iter().zip(&intervals) {
        let fr = iv["stages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["stage"] == "first_response")
            .unwrap();
        if fr["count"] == 0 {
            assert!(line.ends_with("first_response        -"), "{line}");
            continue;
        }
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cols[3], "first_response", "{line}");
        assert_eq!(cols[4], fr["count"].to_string(), "{line}");
        for (label, field) in [("p50", "p50_ns"), ("p99", "p99_ns"), ("MAX", "max_ns")] {
            let at = cols.iter().position(|c| *c == label).unwrap();
            assert_eq!(cols[at + 1], ns_text(&fr[field]), "{label} in {line}");
        }
    }
    assert!(!brief.lines().any(|l| l.starts_with("  ack ")), "{brief}");

    let summary = summary_lines(&brief);
    assert!(
        summary.len() <= 30,
        "{} lines:\n{}",
        summary.len(),
        summary.join("\n")
    );
    // Every first response here is an ack: one row, and a line that says so.
    assert!(row(&summary, "ack").is_none(), "{}", summary.join("\n"));
    assert!(summary
        .iter()
        .any(|l| l.starts_with("(ack: the same figures as first_response")));
    for stage in ["first_response", "fill", "ack_to_fill"] {
        let cols = row(&summary, stage).unwrap_or_else(|| panic!("no {stage} row"));
        let j = stage_json(&json, stage);
        assert_eq!(cols[1], j["count"].to_string(), "{stage}");
        assert_eq!(cols[6], ns_text(&j["p99_ns"]), "{stage} p99");
    }
    // Three sessions: the table; five slowest first responses; no alarm; the way to more.
    assert!(summary
        .iter()
        .any(|l| l.starts_with("sessions (first_response)")));
    let slowest_rows = summary
        .iter()
        .filter(|l| l.trim_start().starts_with("first_response ") && l.contains("->"))
        .count();
    assert_eq!(slowest_rows, 5, "{}", summary.join("\n"));
    assert!(summary.contains(&"alarms: none"), "{}", summary.join("\n"));
    assert!(summary.iter().any(|l| l.starts_with("more: --full")));
    for absent in ["histogram (", "counters:", "slowest orders:", "  segments "] {
        assert!(!brief.contains(absent), "{absent:?} in the brief report");
    }
    assert!(!brief.contains('\x1b'), "no colour into a pipe");
}

#[test]
fn the_full_text_report_says_what_the_json_says() {
    let dir = tempfile::tempdir().unwrap();
    for path in [plain_capture(dir.path()), alarming_capture(dir.path())] {
        let p = path.to_str().unwrap();
        let full = text(&["pcap", p, "-p", "9878", "-t", "0.01", "--full"]);
        let (_, json) = analyse(&[&path], &["-t", "0.01"]);
        let summary = summary_lines(&full);

        // Every counter, with the JSON's value (pipeline counters, then the source's).
        let at = summary
            .iter()
            .position(|l| *l == "counters:")
            .expect("counters");
        let listed: Vec<(&str, u64)> = summary[at + 1..]
            .iter()
            .take_while(|l| l.starts_with("  "))
            .map(|l| {
                let mut it = l.split_whitespace();
                (it.next().unwrap(), it.next().unwrap().parse().unwrap())
            })
            .collect();
        let mut want: Vec<(String, u64)> = Vec::new();
        for group in ["counters", "source"] {
            for (k, v) in json[group].as_object().unwrap() {
                if let Some(v) = v.as_u64() {
                    want.push((k.clone(), v));
                }
            }
        }
        assert_eq!(listed.len(), want.len(), "{listed:?}\n{want:?}");
        for (name, v) in &want {
            assert!(
                listed.contains(&(name.as_str(), *v)),
                "{name} {v} not in the text's counters"
            );
        }
        // Every stage's row: count, min, mean, percentiles and max as the JSON has them.
        for s in json["stages"].as_array().unwrap() {
            let name = s["stage"].as_str().unwrap();
            let cols = row(&summary, name).unwrap_or_else(|| {
                assert_eq!(s["count"], 0, "{name}");
                vec![]
            });
            if cols.is_empty() {
                continue;
            }
            assert_eq!(cols[1], s["count"].to_string(), "{name}");
            let fields = [
                "min_ns",
                "mean_ns",
                "p50_ns",
                "p90_ns",
                "p99_ns",
                "p99_9_ns",
                "p99_99_ns",
                "p99_999_ns",
                "max_ns",
            ];
            for (col, field) in cols[2..].iter().zip(fields) {
                let want = match &s[field] {
                    Value::Number(n) => human_ns(n.as_f64().unwrap()),
                    _ => "-".into(),
                };
                assert_eq!(*col, want, "{name} {field}");
            }
        }
        assert!(full.contains("histogram (first_response):"));
        assert!(full.contains("slowest orders:"));
    }
}

#[test]
fn brief_alarms_are_the_counters_that_mean_missing_figures() {
    let dir = tempfile::tempdir().unwrap();
    let path = alarming_capture(dir.path());
    let p = path.to_str().unwrap();
    let brief = text(&["pcap", p, "-p", "9878", "-t", "0.01", "-r", "0.1"]);
    let (_, json) = analyse(&[&path], &["-t", "0.01", "-r", "0.1"]);
    let summary = summary_lines(&brief);

    let alarms_at = summary
        .iter()
        .position(|l| l.starts_with("alarms:"))
        .expect("an alarms line");
    let mut said: Vec<(String, u64)> = Vec::new();
    for l in summary[alarms_at..]
        .iter()
        .take_while(|l| !l.starts_with("notable:") && !l.starts_with("more:"))
    {
        let words: Vec<&str> = l.trim_start_matches("alarms:").split_whitespace().collect();
        for pair in words.chunks(2) {
            said.push((pair[0].to_string(), pair[1].parse().unwrap()));
        }
    }
    let mut want: Vec<(String, u64)> = Vec::new();
    for group in ["counters", "source"] {
        for (k, v) in json[group].as_object().unwrap() {
            match v.as_u64() {
                Some(v) if v > 0 && is_alarm(k) => want.push((k.clone(), v)),
                _ => {}
            }
        }
    }
    said.sort();
    want.sort();
    assert_eq!(said, want, "{}", summary.join("\n"));
    // What the capture was built with is among them.
    for name in ["timed_out", "late", "unmatched_responses", "bad_checksum"] {
        assert!(
            said.iter().any(|(n, v)| n == name && *v == 1),
            "{name}: {said:?}"
        );
    }
    // FILLED's first response was its fill, not an ack: both rows, no merge note.
    assert!(row(&summary, "ack").is_some(), "{}", summary.join("\n"));
    assert!(!summary.iter().any(|l| l.starts_with("(ack: the same")));
    // The interval in which SLOW reached -t says so on its line.
    assert!(
        brief
            .lines()
            .any(|l| l.starts_with("--- ") && l.contains("timed_out +1")),
        "{brief}"
    );
    // `--counters all` lists every counter, zero or not, in the brief summary too.
    let all = text(&["pcap", p, "-p", "9878", "-t", "0.01", "--counters", "all"]);
    assert!(all.contains("\ncounters:\n"), "{all}");
    assert!(all.contains("  possdup_requests "), "{all}");
    assert!(!all.contains("histogram ("), "only the counters: {all}");
}

#[test]
fn alarms_are_red_on_a_terminal_unless_no_color() {
    require_tool("alarms_are_red_on_a_terminal_unless_no_color", "script");
    let dir = tempfile::tempdir().unwrap();
    let path = alarming_capture(dir.path());
    let cmd = format!(
        "{} pcap {} -p 9878 -t 0.01 -r 0",
        env!("CARGO_BIN_EXE_fixscope"),
        path.display()
    );
    let on_a_terminal = |no_color: bool| {
        // `script` runs the command on a pseudo-terminal of its own.
        let mut c = Command::new("script");
        c.args(["-q", "-e", "-c", &cmd, "/dev/null"]);
        c.env("TERM", "xterm");
        if no_color {
            c.env("NO_COLOR", "1");
        } else {
            c.env_remove("NO_COLOR");
        }
        let out = c.output().expect("script");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let colored = on_a_terminal(false);
    assert!(
        colored.contains("\x1b[1;31mtimed_out 1\x1b[0m"),
        "alarm in red: {colored:?}"
    );
    let plain = on_a_terminal(true);
    assert!(
        plain.contains("timed_out 1") && !plain.contains('\x1b'),
        "{plain:?}"
    );
}

#[test]
fn dash_v_prints_the_version_and_stays_verbose_after_a_command() {
    for flag in ["-v", "-V", "--version"] {
        let out = fixscope(&[flag]);
        assert!(out.status.success(), "{flag}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            format!("fixscope {}", env!("CARGO_PKG_VERSION")),
            "{flag}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let path = plain_capture(dir.path());
    let out = fixscope(&[
        "pcap",
        path.to_str().unwrap(),
        "-p",
        "9878",
        "-v",
        "-r",
        "0",
    ]);
    assert!(out.status.success());
    assert!(
        !String::from_utf8_lossy(&out.stderr).trim().is_empty(),
        "pcap -v says what it reads on stderr"
    );
}

fn stage_json<'a>(summary: &'a Value, name: &str) -> &'a Value {
    stage(summary, name)
}

fn require_tool(test: &str, tool: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "{test}: needs `{tool}` (util-linux); install it: apt-get install bsdutils"
    );
}

#[test]
fn the_readme_shows_the_brief_report_as_fixscope_prints_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let golden =
        std::fs::read_to_string(root.join("testdata/golden/sim/sim_orders/default/stdout"))
            .expect("the golden default output of the sim capture");
    assert!(
        readme.contains(golden.trim_end()),
        "README's `fixscope pcap testdata/captures/sim/sim_orders.pcap -p 19478` block is not what it prints"
    );
}
