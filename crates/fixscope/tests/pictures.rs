//! The slowest orders (`--slowest`), plots (`fixscope plot`) and the HTML report (`--html`),
//! end to end through the real binary on captures with exactly known latencies.

mod support;

use std::path::{Path, PathBuf};

use fixscope_core::pcap_writer::SyntheticConnection;
use fixscope_testkit::fix::ack_and_fill;
use serde_json::Value;
use support::*;

/// One latency the capture holds, with what identifies its order.
#[derive(Clone, Debug, PartialEq)]
struct Expected {
    stage: &'static str,
    latency_ns: u64,
    key: String,
    session: u64,
    sender: String,
    client: String,
    request_ns: u64,
    response_ns: u64,
    response_msg_type: &'static str,
}

const T0: u64 = 1_700_000_000_000_000_000;
/// `-x` of the runs: the big order's ack is above it.
const RANGE_MS: &str = "1000";
const BIG_ACK_NS: u64 = 1_500_000_123;

/// Two sessions of orders with distinct ack and fill latencies, one order acked after
/// 1.5 s (above `-x 1000`), one cancel rejected with 35=9. Returns the capture and every
/// latency it holds.
fn orders_capture(dir: &Path, orders: usize) -> (PathBuf, Vec<Expected>) {
    let server = endpoint(false, 1, SERVER_PORT);
    let mut packets = Vec::new();
    let mut expected = Vec::new();
    for s in 0..2usize {
        let client = endpoint(false, 2 + s as u8, 40000 + s as u16);
        let sender = format!("CLIENT{s}");
        let session = s as u64 + 1;
        // (ts, from client, message), sent in time order per connection so sequence
        // numbers follow time.
        let mut events: Vec<(u64, bool, Vec<u8>)> = Vec::new();
        let t_start = T0 + s as u64 * 300_000;
        let logon = fix_message("FIX.4.4", &[(35, "A"), (49, &sender), (56, "EXCH")]);
        events.push((t_start, true, logon));
        let push = |events: &mut Vec<_>, expected: &mut Vec<_>, i: usize, ack_ns: u64| {
            let t = t_start + 1_000 + i as u64 * 1_000_000;
            let id = format!("S{s}-ORD{i:03}");
            let order = fix_message(
                "FIX.4.4",
                &[
                    (35, "D"),
                    (49, &sender),
                    (56, "EXCH"),
                    (11, &id),
                    (55, "IBM"),
                ],
            );
            let fill_ns = 5_000 + (i as u64 % 7) * 1_000;
            let (ack, fill) = ack_and_fill(&sender, &id);
            events.push((t, true, order));
            events.push((t + ack_ns, false, ack));
            events.push((t + ack_ns + fill_ns, false, fill));
            let e = |stage, latency_ns, response_ns| Expected {
                stage,
                latency_ns,
                key: id.clone(),
                session,
                sender: sender.clone(),
                client: client.to_string(),
                request_ns: t,
                response_ns,
                response_msg_type: "8",
            };
            expected.push(e("first_response", ack_ns, t + ack_ns));
            expected.push(e("ack", ack_ns, t + ack_ns));
            expected.push(e("fill", ack_ns + fill_ns, t + ack_ns + fill_ns));
            expected.push(e("ack_to_fill", fill_ns, t + ack_ns + fill_ns));
        };
        for i in 0..orders {
            let ack_ns = 10_000 + ((i as u64 * 7919 + s as u64 * 104_729) % 997) * 113;
            push(&mut events, &mut expected, i, ack_ns);
        }
        if s == 0 {
            push(&mut events, &mut expected, orders, BIG_ACK_NS);
        } else {
            // A cancel of an unknown order, rejected (35=9): an ack-stage response.
            let t = t_start + 1_000 + orders as u64 * 1_000_000;
            let cancel = fix_message(
                "FIX.4.4",
                &[
                    (35, "F"),
                    (49, &sender),
                    (56, "EXCH"),
                    (11, "CXL-1"),
                    (41, "NOPE"),
                ],
            );
            let reject = fix_message(
                "FIX.4.4",
                &[
                    (35, "9"),
                    (49, "EXCH"),
                    (56, &sender),
                    (11, "CXL-1"),
                    (39, "8"),
                ],
            );
            let latency = 900_000;
            events.push((t, true, cancel));
            events.push((t + latency, false, reject));
            for stage in ["first_response", "ack"] {
                expected.push(Expected {
                    stage,
                    latency_ns: latency,
                    key: "CXL-1".into(),
                    session,
                    sender: sender.clone(),
                    client: client.to_string(),
                    request_ns: t,
                    response_ns: t + latency,
                    response_msg_type: "9",
                });
            }
        }
        events.sort_by_key(|e| e.0);
        let mut conn = SyntheticConnection::new(client, server);
        for p in conn.handshake() {
            packets.push(at(t_start - 1, p));
        }
        for (ts, from_client, msg) in events {
            let spec = if from_client {
                conn.client_sends(&msg)
            } else {
                conn.server_sends(&msg)
            };
            packets.push(at(ts, spec));
        }
    }
    packets.sort_by_key(|p| p.ts_ns);
    let path = dir.join("orders.pcap");
    write_pcap(&path, &packets);
    (path, expected)
}

/// The `n` slowest of `all` at `stage`, in the documented order: slowest first, then the
/// earlier request.
fn top(all: &[&Expected], stage: &str, n: usize) -> Vec<Expected> {
    let mut v: Vec<Expected> = all
        .iter()
        .filter(|e| e.stage == stage)
        .map(|e| (*e).clone())
        .collect();
    v.sort_by(|a, b| {
        b.latency_ns
            .cmp(&a.latency_ns)
            .then(a.request_ns.cmp(&b.request_ns))
    });
    v.truncate(n);
    v
}

/// The JSON list as the same records.
fn reported(list: &Value) -> Vec<Expected> {
    list.as_array()
        .expect("a list per stage")
        .iter()
        .map(|o| Expected {
            stage: ["first_response", "ack", "fill", "ack_to_fill"]
                .into_iter()
                .find(|s| o["stage"] == *s)
                .expect("a known stage"),
            latency_ns: o["latency_ns"].as_u64().unwrap(),
            key: o["key"].as_str().unwrap().into(),
            session: o["session"].as_u64().unwrap(),
            sender: o["sender_comp_id"].as_str().unwrap().into(),
            client: o["client"].as_str().unwrap().into(),
            request_ns: o["request_ns"].as_u64().unwrap(),
            response_ns: o["response_ns"].as_u64().unwrap(),
            response_msg_type: match o["response_msg_type"].as_str().unwrap() {
                "8" => "8",
                "9" => "9",
                other => panic!("response type {other}"),
            },
        })
        .collect()
}

const STAGES: [&str; 4] = ["first_response", "ack", "fill", "ack_to_fill"];

#[test]
fn slowest_orders_are_the_exact_top_n_per_stage_and_interval() {
    let dir = tempfile::tempdir().unwrap();
    let (path, expected) = orders_capture(dir.path(), 60);
    let all: Vec<&Expected> = expected.iter().collect();
    let (intervals, summary) = analyse(&[&path], &["--slowest", "5", "-x", RANGE_MS, "-r", "0.01"]);
    for stage in STAGES {
        let want = top(&all, stage, 5);
        assert_eq!(
            reported(&summary["slowest"][stage]),
            want,
            "summary {stage}"
        );
    }
    // The order above -x is listed with its exact latency (its percentile is "above range").
    let first = &summary["slowest"]["ack"][0];
    assert_eq!(first["latency_ns"], BIG_ACK_NS);
    assert_eq!(first["key"], "S0-ORD060");
    assert_eq!(first["server"], format!("10.9.0.1:{SERVER_PORT}"));
    assert_eq!(
        (first["exec_type"].as_str(), first["ord_status"].as_str()),
        (Some("0"), Some("0"))
    );
    assert_eq!(first["request_time"], "2023-11-14T22:13:20.060001000Z");
    assert!(stage(&summary, "ack")["over_range"].as_u64().unwrap() >= 1);
    // The rejected cancel is among the ack stage's slowest with its 35=9.
    assert!(reported(&summary["slowest"]["ack"])
        .iter()
        .any(|o| o.key == "CXL-1" && o.response_msg_type == "9"));

    // Each interval lists the slowest of the latencies completed in it.
    assert!(intervals.len() > 3, "{} intervals", intervals.len());
    let last = intervals.len() - 1;
    for (n, iv) in intervals.iter().enumerate() {
        let (start, end) = (
            iv["start_ns"].as_u64().unwrap(),
            iv["end_ns"].as_u64().unwrap(),
        );
        let inside: Vec<&Expected> = expected
            .iter()
            .filter(|e| {
                e.response_ns >= start
                    && (e.response_ns < end || (n == last && e.response_ns == end))
            })
            .collect();
        for stage in STAGES {
            assert_eq!(
                reported(&iv["slowest"][stage]),
                top(&inside, stage, 5),
                "interval {n} {stage}"
            );
        }
    }
    let listed: usize = intervals
        .iter()
        .map(|iv| iv["slowest"]["ack"].as_array().unwrap().len())
        .sum();
    assert!(listed > 5, "intervals list their own slowest");

    // 0 disables; the full text summary shows the list per stage.
    let (intervals, summary) = analyse(&[&path], &["--slowest", "0", "-r", "0.01"]);
    for stage in STAGES {
        assert_eq!(summary["slowest"][stage], serde_json::json!([]));
        assert!(intervals
            .iter()
            .all(|iv| iv["slowest"][stage] == serde_json::json!([])));
    }
    let out = fixscope(&[
        "pcap",
        path.to_str().unwrap(),
        "-p",
        "9878",
        "--slowest",
        "3",
        "-x",
        RANGE_MS,
        "--full",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let section = &text[text.find("slowest orders:").expect("a slowest section")..];
    let row = section
        .lines()
        .find(|l| l.contains("S0-ORD060"))
        .expect("the slowest order's row");
    for part in [
        "1.500s",
        "CLIENT0->EXCH",
        "10.9.0.2:40000 -> 10.9.0.1:9878",
        "8/0/0",
        "2023-11-14T22:13:20.060001000Z",
    ] {
        assert!(row.contains(part), "{part} in {row}");
    }
    assert_eq!(
        section
            .lines()
            .filter(|l| l.trim_start().starts_with("ack "))
            .count(),
        3
    );
}

#[test]
fn slowest_flag_is_validated() {
    let out = fixscope(&["pcap", "x.pcap", "-p", "9878", "--slowest", "1000000"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--slowest"), "{err}");
}

/// The real capture of simulated order flow kept in testdata/.
fn sim_capture() -> PathBuf {
    fixscope_testkit::test_data("captures/sim/sim_orders.pcap")
}

fn run_ok(args: &[&str]) -> String {
    let out = fixscope(args);
    assert!(
        out.status.success(),
        "fixscope {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Polyline/path point counts of an SVG's drawn lines, and its texts.
fn svg_lines_and_texts(svg: &str) -> (Vec<usize>, Vec<String>) {
    let doc = roxmltree::Document::parse(svg).expect("the SVG parses as XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let lines = doc
        .descendants()
        .filter(|n| n.tag_name().name() == "polyline")
        .map(|n| {
            n.attribute("points")
                .unwrap_or("")
                .split_whitespace()
                .count()
        })
        .collect();
    let texts = doc
        .descendants()
        .filter(|n| n.tag_name().name() == "text")
        .filter_map(|n| n.text().map(|t| t.trim().to_string()))
        .collect();
    (lines, texts)
}

#[test]
fn plot_svg_from_a_real_capture_and_its_json_has_both_charts() {
    let dir = tempfile::tempdir().unwrap();
    let cap = sim_capture();
    let json = dir.path().join("run.json");
    let lines = run_ok(&[
        "pcap",
        cap.to_str().unwrap(),
        "-p",
        "19478",
        "-r",
        "0.5",
        "--json",
    ]);
    std::fs::write(&json, lines).unwrap();
    let svg = dir.path().join("out.svg");
    run_ok(&[
        "plot",
        cap.to_str().unwrap(),
        json.to_str().unwrap(),
        "-p",
        "19478",
        "-r",
        "0.5",
        "--stage",
        "ack",
        "-o",
        svg.to_str().unwrap(),
    ]);
    let (lines, texts) = svg_lines_and_texts(&std::fs::read_to_string(&svg).unwrap());
    for want in [
        "Latency by percentile",
        "99.999%",
        "sim_orders.pcap ack",
        "run.json ack",
    ] {
        assert!(
            texts.iter().any(|t| t.contains(want)),
            "{want} in {texts:?}"
        );
    }
    assert!(texts.iter().any(|t| t.starts_with("Latency over time")));
    // Curves: the capture's sampled one (long), the JSON's from its percentiles (min +
    // up to 6), and the capture's interval p50 and p99 lines (one point per interval).
    let long = lines.iter().filter(|&&n| n > 100).count();
    assert!(long >= 1, "a sampled percentile curve: {lines:?}");
    let intervals = 8; // 4 s of capture at -r 0.5
    assert!(
        lines
            .iter()
            .filter(|&&n| (intervals..=intervals + 2).contains(&n))
            .count()
            >= 2,
        "interval series: {lines:?}"
    );
    // Each input its own colour and the second dashed (issue #36: both were drawn in the
    // same colours): the JSON's lines are many short pieces in a colour of their own.
    let strokes = svg_polyline_strokes(&std::fs::read_to_string(&svg).unwrap());
    let of = |colour: &str| strokes.iter().filter(|(c, _)| c == colour).count();
    let (capture, json) = ("#1F77B4", "#2CA02C");
    assert!(of(capture) >= 3, "the capture's solid lines: {strokes:?}");
    assert!(
        strokes.iter().filter(|(c, n)| c == json && *n <= 3).count() > 20,
        "the JSON's dashed lines: {strokes:?}"
    );
}

/// Each drawn line's stroke colour and point count.
fn svg_polyline_strokes(svg: &str) -> Vec<(String, usize)> {
    let doc = roxmltree::Document::parse(svg).expect("the SVG parses as XML");
    doc.descendants()
        .filter(|n| n.tag_name().name() == "polyline")
        .map(|n| {
            (
                n.attribute("stroke").unwrap_or("").to_ascii_uppercase(),
                n.attribute("points")
                    .unwrap_or("")
                    .split_whitespace()
                    .count(),
            )
        })
        .collect()
}

/// Every drawn line's points (`points` of each polyline, in document order).
fn svg_polylines(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).expect("the SVG parses as XML");
    doc.descendants()
        .filter(|n| n.tag_name().name() == "polyline")
        .map(|n| n.attribute("points").unwrap_or("").to_string())
        .collect()
}

#[test]
fn plot_of_an_hlog_draws_what_the_capture_draws() {
    let dir = tempfile::tempdir().unwrap();
    let cap = sim_capture();
    let cap_s = cap.to_str().unwrap();
    // Default range, then -x 10 ms: the tails of three stages above range.
    for (name, range) in [("all-in.hlog", "10000"), ("over.hlog", "10")] {
        let log = dir.path().join(name);
        let log_s = log.to_str().unwrap();
        let base = ["-p", "19478", "-r", "0.5", "-x", range];
        let mut pcap = vec!["pcap", cap_s, "--hlog", log_s];
        pcap.extend(base);
        run_ok(&pcap);
        let (from_cap, from_log) = (dir.path().join("cap.svg"), dir.path().join("log.svg"));
        for (input, svg) in [(cap_s, &from_cap), (log_s, &from_log)] {
            let mut plot = vec!["plot", input, "-o", svg.to_str().unwrap()];
            plot.extend(base);
            run_ok(&plot);
        }
        let (cap_svg, log_svg) = (
            std::fs::read_to_string(&from_cap).unwrap(),
            std::fs::read_to_string(&from_log).unwrap(),
        );
        let (lines, texts) = svg_lines_and_texts(&log_svg);
        // One input: the legend names the stages.
        for stage in ["first_response", "ack", "fill", "ack_to_fill"] {
            assert!(texts.iter().any(|t| t == stage), "{stage} in {texts:?}");
        }
        assert!(
            lines.iter().filter(|&&n| n > 50).count() >= 4,
            "a sampled curve per stage: {lines:?}"
        );
        // The same points: curves from the merged histograms, intervals from each one,
        // above-range tails cut where the capture's are.
        let (cap_lines, log_lines) = (svg_polylines(&cap_svg), svg_polylines(&log_svg));
        assert_eq!(cap_lines.len(), log_lines.len(), "-x {range}");
        for (i, (c, l)) in cap_lines.iter().zip(&log_lines).enumerate() {
            assert_eq!(c, l, "-x {range}: line {i}");
        }
    }
    // Another tool's log (no #fixscope lines, no tags): its untagged lines, first_response.
    let theirs = dir.path().join("theirs.hlog");
    let text = std::fs::read_to_string(dir.path().join("all-in.hlog")).unwrap();
    let kept: String = text
        .lines()
        .filter(|l| !l.starts_with("#fixscope") && !l.starts_with("Tag="))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&theirs, kept).unwrap();
    let svg = dir.path().join("theirs.svg");
    run_ok(&[
        "plot",
        theirs.to_str().unwrap(),
        "-o",
        svg.to_str().unwrap(),
    ]);
    let (lines, texts) = svg_lines_and_texts(&std::fs::read_to_string(&svg).unwrap());
    assert!(texts.iter().any(|t| t == "first_response"), "{texts:?}");
    assert!(!texts.iter().any(|t| t == "fill"), "{texts:?}");
    assert!(lines.iter().any(|&n| n > 50), "its curve: {lines:?}");
}

#[test]
fn plot_png_decodes_and_is_not_blank() {
    let dir = tempfile::tempdir().unwrap();
    let png_path = dir.path().join("out.png");
    run_ok(&[
        "plot",
        sim_capture().to_str().unwrap(),
        "-p",
        "19478",
        "-o",
        png_path.to_str().unwrap(),
    ]);
    let decoder = png::Decoder::new(std::fs::File::open(&png_path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (1000, 960));
    let px = &buf[..info.buffer_size()];
    let channels = info.color_type.samples();
    let pixels: Vec<&[u8]> = px.chunks(channels).collect();
    let non_white = pixels
        .iter()
        .filter(|p| p[..3].iter().any(|&c| c < 200))
        .count();
    let coloured = pixels
        .iter()
        .filter(|p| {
            let (mx, mn) = (p[..3].iter().max().unwrap(), p[..3].iter().min().unwrap());
            mx - mn > 80
        })
        .count();
    let frac = non_white as f64 / pixels.len() as f64;
    assert!((0.01..0.6).contains(&frac), "ink fraction {frac}");
    assert!(coloured > 2000, "coloured curve pixels: {coloured}");
}

#[test]
fn plot_rejects_what_it_cannot_draw() {
    let dir = tempfile::tempdir().unwrap();
    let cap = sim_capture();
    let cap = cap.to_str().unwrap();
    let out = |args: &[&str]| {
        let o = fixscope(args);
        assert!(!o.status.success(), "{args:?} should fail");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let svg = dir.path().join("x.svg");
    let svg = svg.to_str().unwrap();
    assert!(out(&["plot", cap, "-o", svg]).contains("-p/--port"));
    assert!(out(&["plot", cap, "-p", "19478", "-o", "x.jpg"]).contains(".svg or .png"));
    assert!(out(&["plot", cap, "-p", "19478", "--stage", "nope", "-o", svg]).contains("--stage"));
    // No latencies on another port.
    assert!(out(&["plot", cap, "-p", "1", "-o", svg]).contains("no latencies"));
    let junk = dir.path().join("junk.txt");
    std::fs::write(&junk, "hello").unwrap();
    assert!(out(&["plot", junk.to_str().unwrap(), "-o", svg]).contains("neither a capture"));
}

/// Runs headless Chromium on `page` with its own profile and no network; returns
/// (stdout, stderr).
/// The page's DOM after chromium ran its script; it must log nothing to the console.
fn loaded_dom(profile: &Path, page: &Path) -> String {
    let (dom, log) = chromium(profile, &["--dump-dom"], page);
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    dom
}

fn chromium(profile: &Path, args: &[&str], page: &Path) -> (String, String) {
    let out = std::process::Command::new("chromium")
        .args([
            "--headless=new",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            // Offline: any attempt to reach a host fails (and is logged as a console error).
            "--host-resolver-rules=MAP * ~NOTFOUND",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every `data-k="path"` cell of the page and its text.
fn cells(dom: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = dom;
    while let Some(i) = rest.find("data-k=\"") {
        rest = &rest[i + 8..];
        let end = rest.find('"').unwrap();
        let key = rest[..end].to_string();
        let open = rest.find('>').unwrap();
        let text_end = rest[open + 1..].find('<').unwrap();
        out.push((key, rest[open + 1..open + 1 + text_end].to_string()));
    }
    out
}

/// The JSON value a page cell names (`stages.ack.p99_ns`, `by_msg_type.D.ack.count`,
/// `sessions.0.requests`, `slowest.ack.0.key`, `counters.matched`).
fn json_at<'a>(summary: &'a Value, path: &str) -> &'a Value {
    let parts: Vec<&str> = path.split('.').collect();
    let find = |list: &'a Value, field: &str, name: &str| -> &'a Value {
        list.as_array()
            .unwrap()
            .iter()
            .find(|o| o[field] == name)
            .unwrap_or_else(|| panic!("{path}: no {name}"))
    };
    match parts[..] {
        ["stages", stage, field] => &find(&summary["stages"], "stage", stage)[field],
        ["by_msg_type", t, stage, field] => &find(
            &find(&summary["by_msg_type"], "msg_type", t)["stages"],
            "stage",
            stage,
        )[field],
        ["sessions", i, field] => &summary["sessions"][i.parse::<usize>().unwrap()][field],
        ["sessions", i, "first_response", field] => {
            &summary["sessions"][i.parse::<usize>().unwrap()]["first_response"][field]
        }
        ["slowest", stage, i, field] => {
            &summary["slowest"][stage][i.parse::<usize>().unwrap()][field]
        }
        [group, name] => &summary[group][name],
        [single] => &summary[single],
        // Any deeper path (`sessions.0.session_layer.logons`, `session_stages.0.count`,
        // `by.3.stages.0.p99_ns`): fields by name, list items by index.
        _ => parts.iter().fold(summary, |v, p| match p.parse::<usize>() {
            Ok(i) if v.is_array() => &v[i],
            _ => &v[*p],
        }),
    }
}

/// "123.456" µs as nanoseconds.
fn ns_of_us(text: &str) -> u64 {
    let (whole, frac) = text
        .split_once('.')
        .unwrap_or_else(|| panic!("µs text {text}"));
    assert_eq!(frac.len(), 3, "{text}");
    whole.parse::<u64>().unwrap() * 1000 + frac.parse::<u64>().unwrap()
}

/// Checks every `data-k` cell of a page against the JSON summary; returns the cells and
/// how many figures were compared.
fn page_matches_json(dom: &str, summary: &Value) -> (Vec<(String, String)>, usize) {
    let cells = cells(dom);
    let mut compared = 0;
    for (path, text) in &cells {
        let want = json_at(summary, path);
        let field = path.rsplit('.').next().unwrap();
        match field {
            "command" | "source" if path == "command" || path == "source" => continue,
            "mean_ns" => {
                let got: f64 = text.parse().unwrap();
                let want = want.as_f64().unwrap() / 1000.0;
                assert!(
                    (got - want).abs() <= 0.0005 + 1e-9,
                    "{path}: {text} vs {want}"
                );
            }
            "duration_s" => {
                let got: f64 = text.parse().unwrap();
                assert!(
                    (got - want.as_f64().unwrap()).abs() <= 0.0005 + 1e-9,
                    "{path}"
                );
            }
            f if f.ends_with("_ns") => match want.as_u64() {
                Some(ns) => assert_eq!(ns_of_us(text), ns, "{path}: {text}"),
                // null: above range (the page says "> range"), or no data ("–", count 0).
                None if text == "–" => {
                    let count = format!("{}.count", &path[..path.rfind('.').unwrap()]);
                    assert_eq!(json_at(summary, &count), 0, "{path}: – with data");
                }
                None => assert!(
                    text.starts_with("&gt;"),
                    "{path}: null in JSON, {text} in the page"
                ),
            },
            "key" | "request_time" | "start" | "end" => {
                assert_eq!(want.as_str().unwrap(), text, "{path}")
            }
            _ => assert_eq!(want.as_u64().unwrap().to_string(), *text, "{path}"),
        }
        compared += 1;
    }
    (cells, compared)
}

#[test]
fn html_report_loads_offline_in_chromium_and_matches_the_json() {
    const TEST: &str = "html_report_loads_offline_in_chromium_and_matches_the_json";
    fixscope_testkit::require_tool(TEST, "chromium");
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    let cap = sim_capture();
    let stdout = run_ok(&[
        "pcap",
        cap.to_str().unwrap(),
        "-p",
        "19478",
        "-r",
        "0.5",
        "--slowest",
        "4",
        "--by",
        "55,49",
        "--json",
        "--html",
        page.to_str().unwrap(),
    ]);
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: nothing to fetch.
    for needle in ["src=", "href=", "url(", "@import", "<link"] {
        assert!(!html.contains(needle), "the page references {needle}");
    }
    assert_eq!(html.matches("<svg").count(), 2, "two inline charts");

    let profile = tempfile::tempdir().unwrap();
    let dom = loaded_dom(profile.path(), &page);
    assert!(dom.contains("data-ready=\"1\""), "the page's script ran");
    for section in [
        "Latency by stage",
        "By request type",
        "Slowest orders",
        "Sessions",
        "Session layer",
        "By tag 55 (--by)",
        "Counters",
        "Latency by percentile",
        "Latency over time",
    ] {
        assert!(dom.contains(section), "{section} in the page");
    }
    assert!(
        dom.contains(&format!("capture {}", cap.display())),
        "the source is named"
    );

    // Every figure in the page equals the JSON summary of the same run.
    let (cells, compared) = page_matches_json(&dom, &summary);
    let count = |prefix: &str| cells.iter().filter(|(k, _)| k.starts_with(prefix)).count();
    assert_eq!(
        count("stages."),
        4 * 11,
        "every stage figure is in the page"
    );
    assert_eq!(
        count("slowest."),
        4 * 4 * 4,
        "four slowest per stage, four figures each"
    );
    assert!(count("counters.") >= 30 && count("source.") >= 5);
    assert!(compared > 150, "{compared} figures compared");

    // What a person sees: not blank, the charts drawn.
    let shot = dir.path().join("shot.png");
    chromium(
        profile.path(),
        &[
            "--window-size=1280,2400",
            &format!("--screenshot={}", shot.display()),
        ],
        &page,
    );
    let decoder = png::Decoder::new(std::fs::File::open(&shot).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let pixels: Vec<&[u8]> = buf[..info.buffer_size()].chunks(channels).collect();
    let ink = pixels
        .iter()
        .filter(|p| p[..3].iter().any(|&c| c < 160))
        .count();
    let coloured = pixels
        .iter()
        .filter(|p| {
            let (mx, mn) = (p[..3].iter().max().unwrap(), p[..3].iter().min().unwrap());
            mx - mn > 80
        })
        .count();
    let frac = ink as f64 / pixels.len() as f64;
    assert!((0.01..0.5).contains(&frac), "ink fraction {frac}");
    assert!(
        coloured > 3000,
        "chart curves in the screenshot: {coloured} coloured pixels"
    );
}

/// `fixscope report LOG --html`: the page of a run read back from its HdrHistogram log
/// loads offline and its figures equal the report's JSON summary (slowest orders and the
/// latency-over-time series from the log included).
#[test]
fn report_html_from_an_hlog_matches_the_report_json() {
    const TEST: &str = "report_html_from_an_hlog_matches_the_report_json";
    fixscope_testkit::require_tool(TEST, "chromium");
    let dir = tempfile::tempdir().unwrap();
    let cap = sim_capture();
    let log = dir.path().join("run.hlog");
    let page = dir.path().join("report.html");
    let run = run_ok(&[
        "pcap",
        cap.to_str().unwrap(),
        "-p",
        "19478",
        "-r",
        "0.5",
        "-x",
        "10",
        "--slowest",
        "4",
        "--json",
        "--hlog",
        log.to_str().unwrap(),
    ]);
    let run_summary: Value = serde_json::from_str(run.lines().last().unwrap()).unwrap();
    let stdout = run_ok(&[
        "report",
        log.to_str().unwrap(),
        "--json",
        "--html",
        page.to_str().unwrap(),
    ]);
    let summary: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(
        summary, run_summary,
        "report gives back the run's summary (the session layer too, #21)"
    );

    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html.matches("<svg").count(), 2, "two inline charts");
    let profile = tempfile::tempdir().unwrap();
    let dom = loaded_dom(profile.path(), &page);
    assert!(
        dom.contains(&format!("HdrHistogram log {}", log.display())),
        "the source is named"
    );
    let (cells, compared) = page_matches_json(&dom, &summary);
    let count = |prefix: &str| cells.iter().filter(|(k, _)| k.starts_with(prefix)).count();
    assert_eq!(
        count("stages."),
        4 * 11,
        "every stage figure is in the page"
    );
    assert_eq!(
        count("slowest."),
        4 * 4 * 4,
        "the slowest orders from the log"
    );
    assert!(compared > 150, "{compared} figures compared");
    // The over-time chart has the log's intervals (8 at -r 0.5 over 4 s): lines of that
    // many points, as the pcap run's page draws.
    let pcap_page = dir.path().join("pcap.html");
    run_ok(&[
        "pcap",
        cap.to_str().unwrap(),
        "-p",
        "19478",
        "-r",
        "0.5",
        "-x",
        "10",
        "--slowest",
        "4",
        "--html",
        pcap_page.to_str().unwrap(),
    ]);
    let svgs = |html: &str| -> Vec<String> {
        html.split("<svg")
            .skip(1)
            .map(|s| format!("<svg{}", &s[..s.find("</svg>").unwrap() + 6]))
            .collect()
    };
    let pcap_html = std::fs::read_to_string(&pcap_page).unwrap();
    let (ours, theirs) = (svgs(&html), svgs(&pcap_html));
    assert_eq!(ours.len(), 2);
    for (chart, (a, b)) in ours.iter().zip(&theirs).enumerate() {
        assert_eq!(
            svg_polylines(a),
            svg_polylines(b),
            "chart {chart}: the report's page draws what the run's page drew"
        );
    }
}

/// `--md` and `--tick-link` in the page: the feeds' section and the tick-to-trade stages,
/// every figure equal to the JSON summary of the same run, loaded offline in Chromium.
#[test]
fn html_report_shows_the_feeds_and_tick_to_trade_as_the_json_says() {
    const TEST: &str = "html_report_shows_the_feeds_and_tick_to_trade_as_the_json_says";
    fixscope_testkit::require_tool(TEST, "chromium");
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    let cap = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/md/ticks.pcap");
    let stdout = run_ok(&[
        "pcap",
        cap.to_str().unwrap(),
        "-p",
        "9878",
        "--md",
        "233.54.12.1:26400,233.54.12.2:26400=itch50",
        "--tick-link",
        "key:1:8",
        "--json",
        "--html",
        page.to_str().unwrap(),
    ]);
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let profile = tempfile::tempdir().unwrap();
    let dom = loaded_dom(profile.path(), &page);
    assert!(dom.contains("Market data feeds"), "the feeds' section");
    let (cells, compared) = page_matches_json(&dom, &summary);
    let count = |prefix: &str| cells.iter().filter(|(k, _)| k.starts_with(prefix)).count();
    // Two legs of ten figures, two leads of five and their only-on counts.
    assert_eq!(count("feeds.0.legs."), 2 * 10, "{cells:?}");
    assert_eq!(count("feeds.0.arbitration."), 2 * 6, "{cells:?}");
    assert_eq!(count("stages.tick_to_order."), 11, "{cells:?}");
    assert_eq!(count("stages.tick_to_ack."), 11, "{cells:?}");
    assert!(compared > 60, "{compared}");
}
