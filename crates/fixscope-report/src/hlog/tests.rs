//! Writer → reader round trips, header parsing and bad input.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::format::LEGEND;
use super::*;
use crate::report::{Counters, IntervalReport, Reporter, SummaryReport, TimeSpan};
use fixscope_figures::stats::Stats;
use fixscope_model::order::Latency;
use fixscope_orders::correlate::{RequestType, Stage};

const RANGE_NS: u64 = 1_000_000_000;
const T0_NS: u64 = 1_700_000_000_123_456_789;

fn latency(stage: Stage, t: RequestType, ns: u64) -> Latency {
    Latency {
        stage,
        request_type: t,
        session: 1,
        ns,
        late: false,
        request_ts_ns: T0_NS,
        request_seq: 0,
        groups: fixscope_model::order::NO_GROUPS,
    }
}

/// Three 1 s intervals of varied latencies (some above the 1 s range) written to a log;
/// returns the log text and the run's statistics.
fn write_run(intervals: u64) -> (Vec<u8>, Stats, Counters) {
    let (mut files, stats, counters) = write_run_switching(intervals, None);
    (files.remove(0), stats, counters)
}

/// [`write_run`], switching to a second file before interval `switch_at` (SIGHUP after
/// logrotate): the files, in order.
fn write_run_switching(intervals: u64, switch_at: Option<u64>) -> (Vec<Vec<u8>>, Stats, Counters) {
    let mut stats = Stats::new(RANGE_NS);
    let mut w = HlogWriter::new(Vec::new());
    let mut files = Vec::new();
    let mut counters = Counters::default();
    let mut previous = Counters::default();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for i in 0..intervals {
        if switch_at == Some(i) {
            files.push(w.switch_to(Vec::new()).unwrap());
        }
        for n in 0..(500 + i * 300) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let t = RequestType::ALL[(n % 7 % 3) as usize];
            let ns = 1_000 + x % 5_000_000;
            stats.record(latency(Stage::FirstResponse, t, ns));
            if n % 2 == 0 {
                stats.record(latency(Stage::Ack, t, ns / 2));
            }
            if n % 97 == 0 {
                // Above the range: counted apart, never in the histogram's top bucket.
                stats.record(latency(
                    Stage::FirstResponse,
                    t,
                    RANGE_NS + 1 + x % 3_000_000_000,
                ));
            }
        }
        counters.correlation.requests += 500 + i * 300;
        counters.pending = i;
        stats.refresh_views();
        let span = TimeSpan {
            start_ns: T0_NS + i * 1_000_000_000,
            end_ns: T0_NS + (i + 1) * 1_000_000_000,
            unix_offset_ns: 0,
            timestamp_source: None,
        };
        let report = IntervalReport::new(span, &stats, counters, &previous, &[]);
        w.interval(&report).unwrap();
        previous = counters;
        stats.reset_interval();
    }
    stats.refresh_views();
    let span = TimeSpan {
        start_ns: T0_NS,
        end_ns: T0_NS + intervals * 1_000_000_000,
        unix_offset_ns: 0,
        timestamp_source: None,
    };
    let source = vec![("packets".to_string(), 42)];
    let summary = SummaryReport::new(&stats, counters, &source, span);
    w.summary(&summary).unwrap();
    files.push(w.into_inner());
    (files, stats, counters)
}

fn save(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::File::create(&path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
    path
}

#[test]
fn a_log_read_back_reproduces_the_run_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, stats, counters) = write_run(3);
    let path = save(dir.path(), "run.hlog", &bytes);
    let merged = merge(&[path], &Window::default()).unwrap();
    assert!(!merged.approximate);
    for stage in Stage::ALL {
        assert_eq!(
            merged.stats.cumulative(stage).distribution(),
            stats.cumulative(stage).distribution(),
            "{}",
            stage.name()
        );
        for t in RequestType::ALL {
            assert_eq!(
                merged.stats.by_request_type(t, stage).distribution(),
                stats.by_request_type(t, stage).distribution()
            );
        }
    }
    let d = stats.cumulative(Stage::FirstResponse).distribution();
    assert!(d.over_range > 0, "the run has values above range");
    assert_eq!(merged.counters, Some(counters));
    assert_eq!(merged.source, vec![("packets".to_string(), 42)]);
    assert_eq!(merged.span.start_ns, T0_NS);
    assert_eq!(merged.span.end_ns, T0_NS + 3_000_000_000);
    assert!(merged.notes.is_empty(), "{:?}", merged.notes);
}

#[test]
fn the_log_is_the_java_format() {
    let (bytes, _, _) = write_run(2);
    let text = String::from_utf8(bytes).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[1], "#[Histogram log format version 1.3]");
    assert_eq!(
        lines[2],
        "#[StartTime: 1700000000.123 (seconds since epoch), Tue Nov 14 22:13:20 UTC 2023]"
    );
    assert_eq!(
        lines[3],
        "#[BaseTime: 1700000000.123 (seconds since epoch)]"
    );
    assert!(lines.contains(&format::LEGEND));
    // Every histogram line: [Tag=x,]start,length,max_ms,HISTF… (V2 compressed cookie).
    let hist_lines: Vec<&&str> = lines
        .iter()
        .filter(|l| !l.starts_with('#') && !l.starts_with('"'))
        .collect();
    assert!(hist_lines
        .iter()
        .any(|l| l.starts_with("Tag=first_response.D,0.000,1.000,")));
    assert!(hist_lines
        .iter()
        .any(|l| l.starts_with("Tag=ack,1.000,1.000,")));
    let untagged: Vec<_> = hist_lines
        .iter()
        .filter(|l| !l.starts_with("Tag="))
        .collect();
    assert_eq!(untagged.len(), 2, "one untagged line per interval");
    for l in hist_lines {
        let payload = l.rsplit(',').next().unwrap();
        assert!(payload.starts_with("HISTF"), "compressed V2: {l}");
    }
    let log = read_text(&text);
    assert_eq!(log.start_time_s, Some(1_700_000_000.123));
    assert_eq!(log.base_time_s, Some(1_700_000_000.123));
    assert_eq!(log.header.as_ref().unwrap().range_ns, RANGE_NS);
    let second: Vec<_> = log.tagged(None).collect();
    assert!((second[1].offset_s - 1.0).abs() < 1e-9);
    assert!((second[1].start_unix_s - 1_700_000_001.123).abs() < 1e-6);
    // Interval_Max in ms, as Java's default max value unit ratio.
    let max_ns = second[0].histogram.max() as f64;
    assert!((second[0].max - max_ns / 1e6).abs() < 1e-3);
}

fn read_text(text: &str) -> HistogramLog {
    let dir = tempfile::tempdir().unwrap();
    let path = save(dir.path(), "x.hlog", text.as_bytes());
    read(&path).unwrap()
}

#[test]
fn values_above_range_are_at_the_maximum_in_the_log_never_lower() {
    let (bytes, stats, _) = write_run(1);
    let log = read_text(&String::from_utf8(bytes).unwrap());
    let line = log.tagged(Some("first_response")).next().unwrap();
    let rec = stats.cumulative(Stage::FirstResponse);
    // What a reader without fixscope's lines sees: every value counted, the top ones at
    // the true maximum.
    assert_eq!(line.histogram.len(), rec.count());
    assert_eq!(line.histogram.count_at(rec.max_ns()), rec.over_range());
    assert_eq!(
        line.histogram.value_at_quantile(1.0),
        line.histogram.highest_equivalent(rec.max_ns())
    );
    let exact = line.exact.unwrap();
    assert_eq!(exact.over_range, rec.over_range());
    assert_eq!(line.recorder().unwrap().distribution(), rec.distribution());
}

/// SIGHUP's reopen: both files are logs of their own with the run's header, every
/// interval is in exactly one of them, and the two read together are the whole run.
#[test]
fn a_log_switched_to_a_new_file_continues_without_losing_an_interval() {
    let dir = tempfile::tempdir().unwrap();
    let (files, stats, counters) = write_run_switching(4, Some(2));
    let (whole, ..) = write_run(4);
    assert_eq!(files.len(), 2);
    let old = save(dir.path(), "run.hlog.1", &files[0]);
    let new = save(dir.path(), "run.hlog", &files[1]);
    let text = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
    // The header: up to the CSV legend line.
    let header = |t: &str| -> Vec<String> {
        let legend = t.lines().position(|l| l == LEGEND).expect("a legend");
        t.lines().take(legend + 1).map(str::to_string).collect()
    };
    let (old_text, new_text) = (text(&files[0]), text(&files[1]));
    assert!(header(&old_text)
        .iter()
        .any(|l| l.starts_with("#[StartTime: ")));
    assert_eq!(
        header(&old_text),
        header(&new_text),
        "the same header in both"
    );
    // The lines after the header, in order, are the unswitched log's.
    let body = |t: &str| -> Vec<String> {
        t.lines()
            .skip(header(t).len())
            .map(str::to_string)
            .collect()
    };
    let mut both = body(&old_text);
    let mut continued = body(&new_text);
    let first = continued.remove(0);
    assert!(
        first.starts_with("#fixscope-continued {\"counters\":{"),
        "the new file says where the run's counters stood: {first}"
    );
    both.extend(continued);
    assert_eq!(both, body(&text(&whole)), "every line once, in order");
    let starts =
        |p: &Path| -> Vec<f64> { read(p).unwrap().tagged(None).map(|i| i.offset_s).collect() };
    assert_eq!(starts(&old), [0.0, 1.0]);
    assert_eq!(starts(&new), [2.0, 3.0]);
    let merged = merge(&[old, new], &Window::default()).unwrap();
    assert_eq!(
        merged.stats.cumulative(Stage::FirstResponse).distribution(),
        stats.cumulative(Stage::FirstResponse).distribution()
    );
    assert_eq!(
        merged.counters.unwrap().correlation.requests,
        counters.correlation.requests
    );
}

#[test]
fn logs_merge_into_the_union_and_windows_select_intervals() {
    let dir = tempfile::tempdir().unwrap();
    let (a, stats_a, counters_a) = write_run(3);
    let (b, stats_b, counters_b) = write_run(2);
    let pa = save(dir.path(), "a.hlog", &a);
    let pb = save(dir.path(), "b.hlog", &b);
    let merged = merge(&[pa.clone(), pb], &Window::default()).unwrap();
    let mut union = stats_a.cumulative(Stage::FirstResponse).clone();
    union.merge(stats_b.cumulative(Stage::FirstResponse));
    assert_eq!(
        merged.stats.cumulative(Stage::FirstResponse).distribution(),
        union.distribution()
    );
    let c = merged.counters.unwrap();
    assert_eq!(
        c.correlation.requests,
        counters_a.correlation.requests + counters_b.correlation.requests
    );
    assert!(
        merged.sessions.is_none(),
        "sessions only from one whole log"
    );

    // The second interval only (seconds from the start, as HistogramLogProcessor's -start/-end).
    let window = Window {
        from: Some(TimeBound::parse("0.5").unwrap()),
        to: Some(TimeBound::parse("1.5").unwrap()),
    };
    let one = merge(std::slice::from_ref(&pa), &window).unwrap();
    let log = read(&pa).unwrap();
    let second = log
        .tagged(Some("first_response"))
        .nth(1)
        .unwrap()
        .recorder()
        .unwrap();
    assert_eq!(
        one.stats.cumulative(Stage::FirstResponse).distribution(),
        second.distribution()
    );
    // Counters: what happened in the window (800 requests), gauges at its end.
    let c = one.counters.unwrap();
    assert_eq!(c.correlation.requests, 800);
    assert_eq!(c.pending, 1);
    assert!(one.source.is_empty(), "source counters only for whole logs");
    // The same window as UTC times.
    let utc = Window {
        from: Some(TimeBound::parse("2023-11-14T22:13:21Z").unwrap()),
        to: Some(TimeBound::parse("2023-11-14 22:13:21.5").unwrap()),
    };
    let same = merge(&[pa], &utc).unwrap();
    assert_eq!(
        same.stats.cumulative(Stage::FirstResponse).distribution(),
        second.distribution()
    );
}

#[test]
fn bad_input_is_a_clear_error_with_the_line() {
    let (bytes, _, _) = write_run(1);
    let text = String::from_utf8(bytes).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let err = |text: &str| {
        let path = save(dir.path(), "bad.hlog", text.as_bytes());
        merge(&[path], &Window::default())
            .err()
            .map(|e| e.to_string())
    };
    // A histogram cut short in the middle of the file.
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let i = lines
        .iter()
        .position(|l| l.starts_with("Tag=ack,"))
        .unwrap();
    let cut = lines[i].len() - 20;
    lines[i].truncate(cut);
    let e = err(&(lines.join("\n") + "\n")).expect("a truncated histogram is an error");
    assert!(
        e.contains(&format!("bad.hlog:{}:", i + 1)) && e.contains("histogram"),
        "{e}"
    );
    // Garbage.
    let e = err(&(text.clone() + "hello world\n")).expect("garbage is an error");
    assert!(e.contains("not a histogram line"), "{e}");
    // Invalid base64.
    let e = err(&(text.clone() + "Tag=ack,0.000,1.000,0.1,!!!notbase64\n")).unwrap();
    assert!(e.contains("base64"), "{e}");
    // A newer log version.
    let newer = text.replace("\"version\":1", "\"version\":99");
    assert!(err(&newer).unwrap().contains("newer fixscope"));
}

#[test]
fn unknown_tags_and_a_cut_last_line_are_counted_skips() {
    let (bytes, stats, _) = write_run(1);
    let text = String::from_utf8(bytes).unwrap();
    let line = text.lines().find(|l| l.starts_with("Tag=ack,")).unwrap();
    let foreign = line.replacen("Tag=ack,", "Tag=gc_pause,", 1);
    let cut = &line[..line.len() / 2];
    let dir = tempfile::tempdir().unwrap();
    let path = save(
        dir.path(),
        "x.hlog",
        format!("{text}{foreign}\n{cut}").as_bytes(),
    );
    let merged = merge(&[path], &Window::default()).unwrap();
    assert_eq!(merged.unknown_tags, 1);
    assert_eq!(merged.incomplete_last_lines, 1);
    assert_eq!(
        merged.stats.cumulative(Stage::Ack).distribution(),
        stats.cumulative(Stage::Ack).distribution()
    );
}

#[test]
fn a_log_without_fixscope_lines_reads_approximately_and_says_so() {
    let (bytes, stats, _) = write_run(1);
    let text: String = String::from_utf8(bytes)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("#fixscope") && !l.starts_with("Tag="))
        .map(|l| format!("{l}\n"))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = save(dir.path(), "java.hlog", text.as_bytes());
    let merged = merge(&[path], &Window::default()).unwrap();
    assert!(merged.approximate);
    assert_eq!(merged.counters, None, "no counters in another tool's log");
    let d = merged.stats.cumulative(Stage::FirstResponse).distribution();
    assert_eq!(d.count, stats.cumulative(Stage::FirstResponse).count());
}

#[test]
fn hgrm_is_java_s_percentile_distribution() {
    let (_, stats, _) = write_run(1);
    let mut out = Vec::new();
    let rec = stats.cumulative(Stage::FirstResponse);
    write_hgrm(&mut out, Stage::FirstResponse, rec).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].contains("microseconds") && lines[0].contains("above the range"));
    assert_eq!(
        lines[1],
        "       Value     Percentile TotalCount 1/(1-Percentile)"
    );
    assert_eq!(lines[2], "");
    let last = lines.iter().rev().find(|l| !l.starts_with('#')).unwrap();
    let fields: Vec<&str> = last.split_whitespace().collect();
    assert_eq!(fields.len(), 3, "the 100% line has no 1/(1-p): {last}");
    assert_eq!(fields[1], "1.000000000000");
    assert_eq!(fields[2].parse::<u64>().unwrap(), rec.count());
    assert!(text.contains(&format!("Total count    = {:>12}]", rec.count())));
    let paths = hgrm_paths(Path::new("/x/run.hgrm"));
    assert_eq!(paths[0].1, Path::new("/x/run.hgrm"));
    assert_eq!(paths[1].1, Path::new("/x/run.ack.hgrm"));
    assert_eq!(
        hgrm_paths(Path::new("out"))[3].1,
        Path::new("out.ack_to_fill")
    );
}

/// `--by` (#21): a log read back gives the summary's rows exactly — the last summary's when
/// the log holds several (a TUI's SPACE, a live run's periodic summaries).
#[test]
fn by_rows_read_back_are_the_last_summarys() {
    let spec = fixscope_orders::group::GroupSpec::parse("55", 1).unwrap();
    let mut stats = Stats::new(RANGE_NS).with_groups(Some(spec));
    let mut w = HlogWriter::new(Vec::new());
    let span = |end_s: u64| TimeSpan {
        start_ns: T0_NS,
        end_ns: T0_NS + end_s * 1_000_000_000,
        unix_offset_ns: 0,
        timestamp_source: None,
    };
    let record = |stats: &mut Stats, sym: &str, n: u64, ns: u64| {
        for _ in 0..n {
            let groups = stats.by_mut().unwrap().request(&[sym.as_bytes(), b"", b""]);
            let mut l = latency(Stage::FirstResponse, RequestType::NewOrder, ns);
            l.groups = groups;
            stats.record(l);
        }
    };
    record(&mut stats, "A", 3, 5_000);
    record(&mut stats, "B", 1, 9_000);
    stats.refresh_views();
    w.interval(&IntervalReport::new(
        span(1),
        &stats,
        Counters::default(),
        &Counters::default(),
        &[],
    ))
    .unwrap();
    w.summary(&SummaryReport::new(
        &stats,
        Counters::default(),
        &[],
        span(1),
    ))
    .unwrap();
    // B becomes the busiest; A folds into (other).
    stats.reset_interval();
    record(&mut stats, "B", 5, 7_000);
    stats.refresh_views();
    w.interval(&IntervalReport::new(
        span(2),
        &stats,
        Counters::default(),
        &Counters::default(),
        &[],
    ))
    .unwrap();
    w.summary(&SummaryReport::new(
        &stats,
        Counters::default(),
        &[],
        span(2),
    ))
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = save(dir.path(), "by.hlog", &w.into_inner());
    let merged = merge(&[path], &Window::default()).unwrap();
    let rows = |g: &fixscope_orders::group::GroupStats| -> Vec<(String, u64, fixscope_figures::stats::Distribution)> {
        g.tags[0]
            .ranked()
            .iter()
            .map(|e| {
                let d = e.stage(Stage::FirstResponse).unwrap().distribution();
                (e.value.clone(), e.requests, d)
            })
            .collect()
    };
    let back = rows(merged.stats.by().expect("by read back"));
    assert_eq!(back, rows(stats.by().unwrap()));
    assert_eq!(back[0].0, "B");
    assert_eq!((back[1].0.as_str(), back[1].1), ("(other)", 3));
}
