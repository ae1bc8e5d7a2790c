//! Golden outputs: every byte fixscope writes for the captures in `testdata/captures/`
//! (found recursively) under a few flag sets — stdout (text and JSON), stderr, `--hlog`,
//! `--html`, `--trace`, `--prometheus-textfile`, `--hgrm` (every file it writes),
//! `--json-file`, and `fixscope report` on the hlog written — compared with the files
//! committed under `testdata/golden/<capture>/<case>/`. A refactor that must not change
//! the output passes this test unchanged.
//!
//! Every run happens in a fresh directory holding a copy of the capture, with output files
//! named relative to it and `argv[0]` set to `fixscope`, so nothing depends on where the
//! checkout, the temporary directory or the binary are (the HTML page shows the command
//! line). Between two runs of one binary nothing else varies, so nothing is normalized
//! (see [`normalize`]).
//!
//! Intentional output changes are blessed with
//! `FIXSCOPE_GOLDEN_BLESS=1 cargo test -p fixscope --test golden` (it rewrites
//! `testdata/golden/` instead of comparing); `FIXSCOPE_GOLDEN_BIN=/path/to/fixscope` runs
//! that binary instead of this build's (e.g. to bless with another checkout's release
//! build).

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The watched ports of every capture under `testdata/captures/` (as the other tests use
/// them). A capture missing here fails the test: add it with its ports.
const PORTS: &[(&str, &str)] = &[
    ("ndpi/ndpi_fix.pcap", "4000"),
    ("ndpi/ndpi_fix2.pcap", "1-65535"),
    ("sim/sim_orders.pcap", "19478"),
];

/// Output files a case asks for, by flag and file name (relative to the run directory).
const HLOG: (&str, &str) = ("--hlog", "out.hlog");
const HTML: (&str, &str) = ("--html", "out.html");
const TRACE: (&str, &str) = ("--trace", "trace.csv");
const PROM: (&str, &str) = ("--prometheus-textfile", "metrics.prom");
const HGRM: (&str, &str) = ("--hgrm", "out.hgrm");
const JSON_FILE: (&str, &str) = ("--json-file", "out.jsonl");

/// One `fixscope pcap` run per capture: its flags (besides the capture and `-p`) and the
/// output files it writes.
struct Case {
    name: &'static str,
    flags: &'static [&'static str],
    files: &'static [(&'static str, &'static str)],
}

const CASES: &[Case] = &[
    // stdout exactly as a user sees it with no flag at all.
    Case {
        name: "default",
        flags: &[],
        files: &[],
    },
    // The full text report (#35): byte for byte what the default printed before #35.
    Case {
        name: "full",
        flags: &["--full"],
        files: &[],
    },
    Case {
        name: "json",
        flags: &["--json"],
        files: &[],
    },
    Case {
        name: "format-json",
        flags: &["--format", "json"],
        files: &[],
    },
    // Every file output at once (default flags otherwise); its hlog feeds `report`.
    Case {
        name: "files",
        flags: &[],
        files: &[HLOG, HTML, TRACE, PROM, HGRM, JSON_FILE],
    },
    // Everything on one thread.
    Case {
        name: "threads-1",
        flags: &["--threads", "1"],
        files: &[HLOG, HTML, PROM, JSON_FILE],
    },
    // Sharded: three worker pipelines, merged (no --trace nor Prometheus: they keep one
    // pipeline).
    Case {
        name: "threads-3",
        flags: &["--threads", "3"],
        files: &[HLOG, HTML, JSON_FILE],
    },
    // No interval reports (so no --hlog: it refuses -r 0).
    Case {
        name: "r0",
        flags: &["-r", "0"],
        files: &[HTML, PROM, HGRM, JSON_FILE],
    },
    // Slowest orders and the per-value breakdown (symbol, account, side).
    Case {
        name: "slowest3-by55-1-54",
        flags: &[
            "--slowest",
            "3",
            "--by",
            "55,1,54",
            "-r",
            "0.5",
            "--prometheus-by",
        ],
        files: &[HLOG, HTML, PROM, HGRM, JSON_FILE],
    },
    Case {
        name: "full-slowest3-by55-1-54",
        flags: &["--slowest", "3", "--by", "55,1,54", "-r", "0.5", "--full"],
        files: &[],
    },
    Case {
        name: "slowest3-by55-json-threads-3",
        flags: &["--slowest", "3", "--by", "55", "--json", "--threads", "3"],
        files: &[HLOG, HTML],
    },
];

/// `fixscope report` runs on the hlog the `files` case wrote (copied in as `in.hlog`).
const REPORTS: &[Case] = &[
    Case {
        name: "report",
        flags: &[],
        files: &[],
    },
    Case {
        name: "report-full",
        flags: &["--full"],
        files: &[],
    },
    Case {
        name: "report-json",
        flags: &["--json"],
        files: &[],
    },
    Case {
        name: "report-html",
        flags: &["--slowest", "2"],
        files: &[HTML, JSON_FILE],
    },
];

/// The hlog `report` reads, from [`CASES`]' `files` run.
const REPORT_SOURCE: (&str, &str) = ("files", "out.hlog");

fn workspace_testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

fn golden_root() -> PathBuf {
    workspace_testdata().join("golden")
}

fn binary() -> PathBuf {
    match std::env::var_os("FIXSCOPE_GOLDEN_BIN") {
        Some(bin) if !bin.is_empty() => PathBuf::from(bin),
        _ => PathBuf::from(env!("CARGO_BIN_EXE_fixscope")),
    }
}

fn blessing() -> bool {
    std::env::var("FIXSCOPE_GOLDEN_BLESS").is_ok_and(|v| v == "1")
}

/// Every .pcap/.pcapng under `dir`, relative to it with `/`, sorted.
fn captures_under(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else if matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("pcap" | "pcapng")
            ) {
                let rel = path.strip_prefix(root).unwrap();
                let parts: Vec<_> = rel.iter().map(|p| p.to_string_lossy()).collect();
                out.push(parts.join("/"));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// What one run produced: `stdout`, `stderr` and every file it wrote, by name.
type Produced = BTreeMap<String, Vec<u8>>;

/// Runs the binary in `dir` (a fresh directory) and collects what it wrote: stdout,
/// stderr and every file that was not there before.
fn run(dir: &Path, args: &[String], what: &str) -> Produced {
    let before: Vec<_> = file_names(dir);
    let out = Command::new(binary())
        .arg0("fixscope")
        .args(args)
        .current_dir(dir)
        .env("FIXSCOPE_NO_PROGRESS", "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", binary().display()));
    assert!(
        out.status.success(),
        "{what}: fixscope {args:?} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let mut produced = Produced::new();
    produced.insert("stdout".into(), out.stdout);
    produced.insert("stderr".into(), out.stderr);
    for name in file_names(dir) {
        if !before.contains(&name) {
            let bytes = std::fs::read(dir.join(&name)).unwrap();
            produced.insert(name, bytes);
        }
    }
    produced
}

fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// What varies between two runs of the same binary on the same input, made constant.
/// Nothing does today: paths are relative to the run directory and `argv[0]` is fixed
/// (see [`run`]). Add a narrow, named rule here only for what two runs really differ in.
fn normalize(_kind: &str, bytes: Vec<u8>) -> Vec<u8> {
    bytes
}

fn args_of(case: &Case, leading: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = leading.iter().map(|s| s.to_string()).collect();
    args.extend(case.flags.iter().map(|s| s.to_string()));
    for (flag, file) in case.files {
        args.extend([flag.to_string(), file.to_string()]);
    }
    args
}

/// One difference from the golden files: where (one line) and what (a few lines).
struct Problem {
    place: String,
    detail: String,
}

fn describe(capture: &str, case: &str, args: &[String], kind: &str, problem: &str) -> Problem {
    Problem {
        place: format!("capture {capture}, case {case}, output {kind}"),
        detail: format!("(fixscope {}): {problem}", args.join(" ")),
    }
}

/// The first differing line of two outputs, both shown (cut short), with the line counts.
fn first_difference(golden: &[u8], got: &[u8]) -> String {
    let lines = |b: &[u8]| -> Vec<String> {
        b.split(|&c| c == b'\n')
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .collect()
    };
    let (g, n) = (lines(golden), lines(got));
    let at = g
        .iter()
        .zip(&n)
        .position(|(a, b)| a != b)
        .unwrap_or(g.len().min(n.len()));
    let cut = |l: Option<&String>| match l {
        None => "<end of output>".to_string(),
        Some(l) if l.chars().count() > 240 => {
            format!("{:?}…", l.chars().take(240).collect::<String>())
        }
        Some(l) => format!("{l:?}"),
    };
    let before = at
        .checked_sub(1)
        .map(|i| format!("\n      same line {}: {}", i + 1, cut(g.get(i))))
        .unwrap_or_default();
    format!(
        "first difference at line {} (golden {} lines / {} bytes, now {} lines / {} bytes):{before}\n    - golden: {}\n    + now:    {}",
        at + 1,
        g.len(),
        golden.len(),
        n.len(),
        got.len(),
        cut(g.get(at)),
        cut(n.get(at)),
    )
}

/// Compares (or, blessing, writes) one case's outputs; differences go to `problems`.
fn check(
    golden_dir: &Path,
    produced: &Produced,
    (capture, case, args): (&str, &str, &[String]),
    problems: &mut Vec<Problem>,
) {
    if blessing() {
        std::fs::create_dir_all(golden_dir).unwrap();
        for (name, bytes) in produced {
            std::fs::write(golden_dir.join(name), bytes).unwrap();
        }
        return;
    }
    if !golden_dir.is_dir() {
        problems.push(describe(
            capture,
            case,
            args,
            "*",
            &format!(
                "no golden files in {} (bless: FIXSCOPE_GOLDEN_BLESS=1)",
                golden_dir.display()
            ),
        ));
        return;
    }
    let golden_names = file_names(golden_dir);
    for name in &golden_names {
        if !produced.contains_key(name) {
            problems.push(describe(
                capture,
                case,
                args,
                name,
                "golden file exists but the run no longer writes it",
            ));
        }
    }
    for (name, got) in produced {
        if !golden_names.contains(name) {
            problems.push(describe(
                capture,
                case,
                args,
                name,
                "written by the run but has no golden file",
            ));
            continue;
        }
        let golden = std::fs::read(golden_dir.join(name)).unwrap();
        if &golden != got {
            problems.push(describe(
                capture,
                case,
                args,
                name,
                &first_difference(&golden, got),
            ));
        }
    }
}

/// Runs every case on one capture; returns the differences found.
fn capture_goldens(testdata: &Path, capture: &str, ports: &str) -> Vec<Problem> {
    let mut problems = Vec::new();
    let work = tempfile::tempdir().unwrap();
    // The capture is copied beside the runs, keeping its relative path, so it is named
    // the same (`../captures/...`) wherever the checkout is.
    let copy = work.path().join("captures").join(capture);
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::copy(testdata.join("captures").join(capture), &copy).unwrap();
    let capture_arg = format!("../captures/{capture}");
    let stem = capture.rsplit_once('.').map_or(capture, |(s, _)| s);
    let golden = golden_root().join(stem);

    let mut report_source = None;
    for case in CASES {
        let dir = work.path().join(case.name);
        std::fs::create_dir(&dir).unwrap();
        let args = args_of(case, &["pcap", &capture_arg, "-p", ports]);
        let produced: Produced = run(&dir, &args, capture)
            .into_iter()
            .map(|(k, v)| {
                let v = normalize(&k, v);
                (k, v)
            })
            .collect();
        check(
            &golden.join(case.name),
            &produced,
            (capture, case.name, &args),
            &mut problems,
        );
        if case.name == REPORT_SOURCE.0 {
            report_source = Some(dir.join(REPORT_SOURCE.1));
        }
    }

    let source = report_source.expect("the case writing the hlog for report");
    for case in REPORTS {
        let dir = work.path().join(case.name);
        std::fs::create_dir(&dir).unwrap();
        std::fs::copy(&source, dir.join("in.hlog")).unwrap();
        let args = args_of(case, &["report", "in.hlog"]);
        let produced: Produced = run(&dir, &args, capture)
            .into_iter()
            .map(|(k, v)| {
                let v = normalize(&k, v);
                (k, v)
            })
            .collect();
        check(
            &golden.join(case.name),
            &produced,
            (capture, case.name, &args),
            &mut problems,
        );
    }
    problems
}

#[test]
fn every_output_matches_the_golden_files() {
    let testdata = workspace_testdata();
    let captures = captures_under(&testdata.join("captures"));
    assert!(!captures.is_empty(), "no captures under testdata/captures");
    let ports: BTreeMap<&str, &str> = PORTS.iter().copied().collect();
    for listed in ports.keys() {
        assert!(
            captures.iter().any(|c| c == listed),
            "PORTS lists {listed}, which is not under testdata/captures"
        );
    }
    let missing: Vec<_> = captures
        .iter()
        .filter(|c| !ports.contains_key(c.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "captures without ports in golden.rs's PORTS table: {missing:?}"
    );

    if blessing() {
        // Stale cases and captures go too: the golden tree is exactly what this run writes.
        let root = golden_root();
        if root.exists() {
            std::fs::remove_dir_all(&root).unwrap();
        }
        std::fs::create_dir_all(&root).unwrap();
    }

    // The captures in parallel, each in its own thread (its cases in order).
    let problems: Vec<Problem> = std::thread::scope(|s| {
        let handles: Vec<_> = captures
            .iter()
            .map(|c| {
                let (testdata, port) = (&testdata, ports[c.as_str()]);
                s.spawn(move || capture_goldens(testdata, c, port))
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });

    if blessing() {
        eprintln!(
            "blessed: golden files written to {} with {}",
            golden_root().display(),
            binary().display()
        );
        return;
    }
    // The first few in full, then one line for each of the others.
    const SHOWN: usize = 6;
    let mut message = String::new();
    for (i, p) in problems.iter().enumerate() {
        if i < SHOWN {
            message.push_str(&format!("\n\n{} {}", p.place, p.detail));
        } else {
            if i == SHOWN {
                message.push_str("\n\nalso differing:");
            }
            message.push_str(&format!("\n  {}", p.place));
        }
    }
    assert!(
        problems.is_empty(),
        "{} output(s) differ from testdata/golden/ (run with {}; if the change is intended, \
         bless: FIXSCOPE_GOLDEN_BLESS=1 cargo test -p fixscope --test golden):{message}",
        problems.len(),
        binary().display(),
    );
}
