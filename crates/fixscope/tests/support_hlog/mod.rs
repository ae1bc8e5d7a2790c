//! Independent readers of HdrHistogram interval logs for the hlog tests: HdrHistogram's Java
//! library (its `HistogramLogReader` and `HistogramLogProcessor`) and PyPI's `hdrhistogram`,
//! both installed inside the repository by scripts/install-deps.sh (target/interop).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use fixscope_testkit::require_tool;
use hdrhistogram::Histogram;
use serde_json::Value;

pub const JAVA_VERSION: &str = "2.2.2";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn interop() -> PathBuf {
    repo().join("target/interop")
}

fn require_file(test: &str, path: &Path, what: &str) {
    if !path.exists() {
        panic!(
            "\n\n!!!!!!!! {test} CANNOT RUN HERE: {what} is missing at {} (scripts/install-deps.sh installs it) !!!!!!!!\n",
            path.display()
        );
    }
}

pub fn java_jar(test: &str) -> PathBuf {
    require_tool(test, "java");
    let jar = interop().join(format!("HdrHistogram-{JAVA_VERSION}.jar"));
    require_file(test, &jar, "HdrHistogram's Java library");
    jar
}

pub fn python(test: &str) -> PathBuf {
    let py = interop().join("py/bin/python");
    require_file(test, &py, "the Python venv with PyPI's hdrhistogram");
    py
}

/// What an independent reader found for one tag: all its lines merged.
#[derive(Debug, Clone, PartialEq)]
pub struct Read {
    pub tag: String,
    pub lines: u64,
    pub count: u64,
    pub min: u64,
    pub max: u64,
    /// At fixscope's quantiles (0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999).
    pub percentiles: Vec<u64>,
}

fn parse_reads(stdout: &[u8]) -> Vec<Read> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            Read {
                tag: v["tag"].as_str().unwrap().to_string(),
                lines: v["lines"].as_u64().unwrap(),
                count: v["count"].as_u64().unwrap(),
                min: v["min"].as_u64().unwrap(),
                max: v["max"].as_u64().unwrap(),
                percentiles: v["percentiles"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| p.as_u64().unwrap())
                    .collect(),
            }
        })
        .collect()
}

fn run(cmd: &mut Command, what: &str) -> Vec<u8> {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    out.stdout
}

/// Java's `HistogramLogReader`, per tag (`-` = untagged).
pub fn java_reads(test: &str, log: &Path, tags: &[&str]) -> Vec<Read> {
    let jar = java_jar(test);
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/HlogCheck.java");
    let out = run(
        Command::new("java")
            .arg("-cp")
            .arg(&jar)
            .arg(&src)
            .arg(log)
            .args(tags),
        "java HlogCheck",
    );
    parse_reads(&out)
}

/// PyPI's hdrhistogram, per tag (`-` = untagged).
pub fn python_reads(test: &str, log: &Path, tags: &[&str]) -> Vec<Read> {
    let py = python(test);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/hlog_check.py");
    let out = run(
        Command::new(py).arg(&script).arg(log).args(tags),
        "python hlog_check.py",
    );
    parse_reads(&out)
}

/// `HistogramLogProcessor -i LOG [-tag TAG]` in ns: its `.hgrm` total count and max.
pub fn java_processor_total(test: &str, log: &Path, tag: Option<&str>, dir: &Path) -> (u64, f64) {
    let jar = java_jar(test);
    let out = dir.join(format!("processed-{}", tag.unwrap_or("untagged")));
    let mut cmd = Command::new("java");
    cmd.arg("-cp")
        .arg(&jar)
        .arg("org.HdrHistogram.HistogramLogProcessor")
        .arg("-i")
        .arg(log)
        .arg("-o")
        .arg(&out)
        .args(["-outputValueUnitRatio", "1"]);
    if let Some(tag) = tag {
        cmd.args(["-tag", tag]);
    }
    run(&mut cmd, "HistogramLogProcessor");
    let hgrm = std::fs::read_to_string(out.with_extension("hgrm"))
        .or_else(|_| std::fs::read_to_string(format!("{}.hgrm", out.display())))
        .expect("HistogramLogProcessor writes OUT.hgrm");
    let line = hgrm
        .lines()
        .find(|l| l.starts_with("#[Max"))
        .unwrap_or_else(|| panic!("no #[Max line in\n{hgrm}"));
    // #[Max     =    12345.000, Total count    =         1000]
    let nums: Vec<&str> = line
        .split(['=', ',', ']'])
        .map(str::trim)
        .filter(|s| s.parse::<f64>().is_ok())
        .collect();
    (nums[1].parse().unwrap(), nums[0].parse().unwrap())
}

/// Whether two values are the same HDR value (3 significant digits from 1 ns: the same
/// bucket), as fixscope reports a bucket's upper edge clamped to the exact min/max and the
/// readers report the bucket's edge.
pub fn same_bucket(a: u64, b: u64) -> bool {
    let h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
    h.lowest_equivalent(a) == h.lowest_equivalent(b)
}

/// The stage object `name` of a summary's `stages` (or `by_msg_type[..].stages`).
pub fn stage_of<'a>(stages: &'a Value, name: &str) -> &'a Value {
    stages
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stage"] == name)
        .unwrap_or_else(|| panic!("no stage {name}"))
}

pub const PERCENTILE_FIELDS: [&str; 6] = [
    "p50_ns",
    "p90_ns",
    "p99_ns",
    "p99_9_ns",
    "p99_99_ns",
    "p99_999_ns",
];

/// An independent reader's figures equal fixscope's summary of the same stage: the same
/// count, the same maximum and the same percentiles (same HDR bucket). A percentile
/// fixscope reports above range (`null`) must not be lower in the reader than the range.
pub fn assert_reader_agrees(who: &str, read: &Read, stage: &Value) {
    let count = stage["count"].as_u64().unwrap();
    assert_eq!(read.count, count, "{who} {}: count", read.tag);
    if count == 0 {
        return;
    }
    let max = stage["max_ns"].as_u64().unwrap();
    assert!(
        same_bucket(read.max, max),
        "{who} {}: max {} vs fixscope {max}",
        read.tag,
        read.max
    );
    let min = stage["min_ns"].as_u64().unwrap();
    assert!(
        same_bucket(read.min, min),
        "{who} {}: min {} vs fixscope {min}",
        read.tag,
        read.min
    );
    let range = stage["range_ns"].as_u64().unwrap();
    for (field, theirs) in PERCENTILE_FIELDS.iter().zip(&read.percentiles) {
        match stage[field].as_u64() {
            Some(ours) => assert!(
                same_bucket(ours, *theirs),
                "{who} {}: {field} {theirs} vs fixscope {ours}",
                read.tag
            ),
            None => assert!(
                *theirs > range,
                "{who} {}: {field} is above range for fixscope, {theirs} for the reader (a better tail)",
                read.tag
            ),
        }
    }
}
