//! The terminal UI rendered into ratatui's `TestBackend`: known reports in, the screen's
//! text and colours asserted (figures equal to the text summary's, alarms in red, TAB
//! switching views, the help, the feed holding stdout back while the screen is up).

use std::cell::RefCell;
use std::io::{self, Write};
use std::net::{IpAddr, Ipv4Addr};
use std::rc::Rc;

use fixscope_core::consumer::OrderSink;
use fixscope_core::correlate::{RequestType, Stage};
use fixscope_core::order::Latency;
use fixscope_core::report::human_ns;
use fixscope_core::report::text::{percentile_text, TextOptions, TextReporter};
use fixscope_core::report::{Counters, IntervalReport, Reporter, SummaryReport, TimeSpan};
use fixscope_core::slowest::OrderRef;
use fixscope_core::source::Counter;
use fixscope_core::stats::Stats;
use fixscope_core::{ConnectionKey, Endpoint};
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::Color;
use ratatui::Terminal;

use super::model::Model;
use super::slowest::SlowRow;
use super::view::{self, Ui, View};
use super::Tui;
use crate::keys::Key;

/// The histogram's top in these tests: 1 ms, so values above range are easy to make.
const RANGE_NS: u64 = 1_000_000;
/// When every order of the known figures was sent (UNIX ns: the reports' offset is 0).
const SLOW_REQUEST_NS: u64 = 1_700_000_000_000_000_042;

/// A writer the test can read after handing it to a reporter.
#[derive(Clone, Default)]
struct Shared(Rc<RefCell<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Shared {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.borrow()).into_owned()
    }
}

fn latency(stage: Stage, session: u64, ns: u64) -> Latency {
    Latency {
        stage,
        request_type: RequestType::NewOrder,
        session,
        ns,
        late: false,
        request_ts_ns: 0,
        request_seq: 0,
        groups: fixscope_core::group::NO_GROUPS,
    }
}

fn endpoint(last: u8, port: u16) -> Endpoint {
    Endpoint {
        addr: IpAddr::V4(Ipv4Addr::new(10, 0, 0, last)),
        port,
    }
}

/// 1000 first responses and acks of 1..=998 µs plus two of 5 ms (above the 1 ms range:
/// p99.9's rank, 999, falls among them), on two sessions.
fn known_stats() -> Stats {
    let mut stats = Stats::new(RANGE_NS);
    for id in 1..=2u64 {
        stats.open_session(
            id,
            ConnectionKey {
                client: endpoint(id as u8, 40_000 + id as u16),
                server: endpoint(100, 9878),
            },
        );
        let s = stats.session_mut(id).expect("session");
        s.sender_comp_id = format!("CLIENT{id}");
        s.target_comp_id = "EXCH".into();
        s.requests = 500;
        s.responses = 500;
    }
    for i in 0..1000u64 {
        let ns = if i < 998 { (i + 1) * 1_000 } else { 5_000_000 };
        let session = 1 + i % 2;
        let key = format!("ORD-{i}");
        let order = OrderRef {
            key: key.as_bytes(),
            response_msg_type: b"8",
            exec_type: Some(b'0'),
            ord_status: Some(b'0'),
            response_ts_ns: SLOW_REQUEST_NS + ns,
            breakdown: None,
        };
        for stage in [Stage::FirstResponse, Stage::Ack] {
            let mut l = latency(stage, session, ns);
            l.request_ts_ns = SLOW_REQUEST_NS;
            stats.record_order(l, &order);
        }
    }
    stats.refresh_views();
    stats
}

fn span() -> TimeSpan {
    TimeSpan {
        start_ns: 1_700_000_000_000_000_000,
        end_ns: 1_700_000_001_000_000_000,
        unix_offset_ns: 0,
        timestamp_source: None,
    }
}

fn alarming_counters() -> Counters {
    let mut c = Counters::default();
    c.correlation.requests = 1003;
    c.correlation.matched = 1000;
    c.correlation.timed_out = 3;
    c.framing.messages = 4000;
    c.over_range = 4;
    c
}

fn source() -> Vec<Counter> {
    vec![
        ("kernel_records".into(), 9000),
        ("kernel_ring_drops".into(), 7),
        ("kernel_cut_bytes".into(), 0),
    ]
}

/// A model fed one interval and one summary of the known figures.
fn known_model() -> (Model, Stats) {
    let stats = known_stats();
    let mut model = Model::new("lo port(s) 9878 as server via tcx");
    let source = source();
    let counters = alarming_counters();
    model.on_interval(&IntervalReport::new(
        span(),
        &stats,
        counters,
        &Counters::default(),
        &source,
    ));
    model.on_summary(&SummaryReport::new(&stats, counters, &source, span()));
    (model, stats)
}

fn render(model: &Model, ui: &Ui) -> Buffer {
    let mut terminal = Terminal::new(TestBackend::new(170, 45)).expect("test terminal");
    terminal
        .draw(|frame| view::render(frame, model, ui))
        .expect("draw");
    terminal.backend().buffer().clone()
}

fn lines(buf: &Buffer) -> Vec<String> {
    (0..buf.area.height)
        .map(|y| (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect())
        .collect()
}

fn screen_text(buf: &Buffer) -> String {
    lines(buf).join("\n")
}

/// Where `needle` is on the screen (column, row), counted in cells.
fn find(buf: &Buffer, needle: &str) -> Option<(u16, u16)> {
    lines(buf).iter().enumerate().find_map(|(y, line)| {
        let byte = line.find(needle)?;
        Some((line[..byte].chars().count() as u16, y as u16))
    })
}

fn background_at(buf: &Buffer, needle: &str, offset: u16) -> Color {
    let (x, y) = find(buf, needle).unwrap_or_else(|| panic!("{needle:?} not on screen"));
    buf[(x + offset, y)].bg
}

fn view_ui(view: View) -> Ui {
    Ui {
        view,
        ..Ui::default()
    }
}

#[test]
fn summary_view_shows_the_text_summarys_figures() {
    let (model, stats) = known_model();
    let buf = render(&model, &view_ui(View::Summary));
    let screen = screen_text(&buf);
    // The same report through the full text summary (it has every stage's row, the
    // brief one folds `ack` into `first_response` when they are the same): each stage's
    // row must read the same.
    let out = Shared::default();
    let source = source();
    let full = TextOptions {
        full: true,
        ..TextOptions::default()
    };
    TextReporter::with_options(out.clone(), full)
        .summary(&SummaryReport::new(
            &stats,
            alarming_counters(),
            &source,
            span(),
        ))
        .expect("text summary");
    let text = out.text();
    for stage in ["first_response", "ack"] {
        let want: Vec<&str> = text
            .lines()
            .find(|l| l.starts_with(&format!("{stage} ")))
            .expect("text row")
            .split_whitespace()
            .take(11)
            .collect();
        let got: Vec<&str> = screen
            .lines()
            .find(|l| l.starts_with(&format!("│{stage} ")))
            .unwrap_or_else(|| panic!("no {stage} row in\n{screen}"))
            .trim_matches('│')
            .split_whitespace()
            .collect();
        assert_eq!(got, want, "{stage} row\n{screen}");
    }
    // p99.9 lies above the range: it reads >1.00ms, in red, never as a value in range.
    assert!(screen.contains(">1.00ms"), "{screen}");
    assert_eq!(background_at(&buf, ">1.00ms", 0), Color::Red);
    assert!(
        screen.contains("above the histogram range of 1.00ms (raise -x): first_response 2, ack 2"),
        "{screen}"
    );
}

#[test]
fn counters_that_matter_are_red_when_not_zero() {
    let (model, _) = known_model();
    let buf = render(&model, &view_ui(View::Summary));
    let screen = screen_text(&buf);
    assert!(screen.contains("timed out 3"), "{screen}");
    assert_eq!(background_at(&buf, "timed out 3", 10), Color::Red);
    assert_ne!(background_at(&buf, "gaps 0", 5), Color::Red);
    assert_ne!(background_at(&buf, "late 0", 5), Color::Red);
    // The kernel's ring drops, from the interval's source counters.
    assert_eq!(background_at(&buf, "kernel_ring_drops 7", 18), Color::Red);
    assert_ne!(background_at(&buf, "kernel_records 9000", 15), Color::Red);
    // Rates from the interval's deltas: 1003 requests, 4000 messages in one second.
    assert!(screen.contains("orders 1003/s"), "{screen}");
    assert!(screen.contains("messages 4000/s"), "{screen}");

    let buf = render(&model, &view_ui(View::Counters));
    // Names take 32 columns, then one of spacing.
    assert_eq!(background_at(&buf, "timed_out ", 33), Color::Red);
    assert_ne!(background_at(&buf, "tcp_gaps ", 33), Color::Red);
}

#[test]
fn interval_percentiles_above_range_read_greater_than() {
    let (model, _) = known_model();
    let buf = render(&model, &view_ui(View::Stages));
    let screen = screen_text(&buf);
    // The interval holds the same 1000 values as the summary: the same figures, p99.9
    // above range.
    let summary = model.summary.as_ref().expect("summary");
    for stage in [Stage::FirstResponse, Stage::Ack] {
        let d = &summary.stages[stage.index()].dist;
        let want = format!(
            "{} p50 {} p99 {} p99.9 {} max {} n 1000",
            stage.name(),
            percentile_text(d, 0),
            percentile_text(d, 2),
            percentile_text(d, 3),
            human_ns(d.max_ns as f64)
        );
        assert!(want.contains("p99.9 >1.00ms"), "{want}");
        assert!(screen.contains(&want), "{want}\n{screen}");
    }
    // Stages without data say so instead of drawing zeros.
    assert!(
        screen.contains("fill p50 - p99 - p99.9 - max - n 0"),
        "{screen}"
    );
}

fn press(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn tui_with_model() -> Tui {
    let (tui, mut feed) = Tui::new(Box::new(TextReporter::new(Shared::default())));
    let stats = known_stats();
    let source = source();
    feed.summary(&SummaryReport::new(
        &stats,
        alarming_counters(),
        &source,
        span(),
    ))
    .expect("feed");
    tui
}

fn render_tui(tui: &Tui) -> String {
    screen_text(&render(&tui.shared.borrow().model, &tui.ui))
}

#[test]
fn tab_switches_views_and_question_mark_shows_help() {
    let mut tui = tui_with_model();
    assert!(render_tui(&tui).contains("cumulative: "));
    let mut seen = Vec::new();
    for _ in 0..View::ALL.len() {
        assert_eq!(
            tui.on_key(&press(KeyCode::Tab)),
            None,
            "TAB is the UI's own"
        );
        seen.push(tui.ui.view);
    }
    assert_eq!(
        seen.last(),
        Some(&View::Summary),
        "TAB cycles back: {seen:?}"
    );
    assert_eq!(&seen[..View::ALL.len() - 1], &View::ALL[1..], "{seen:?}");

    tui.on_key(&press(KeyCode::Tab));
    let stages = render_tui(&tui);
    assert!(stages.contains(" ack_to_fill "), "{stages}");
    assert!(!stages.contains("cumulative: "), "{stages}");
    tui.on_key(&press(KeyCode::Tab));
    let histogram = render_tui(&tui);
    assert!(histogram.contains("histogram (first_response, cumulative, 1000 values)"));
    // The two values above range have their own row, never folded into the last one.
    let over = histogram
        .lines()
        .find(|l| l.contains("(-x)"))
        .unwrap_or_else(|| panic!("no row above range\n{histogram}"));
    let words: Vec<&str> = over.trim_matches('│').split_whitespace().collect();
    assert_eq!(words.first(), Some(&">1.00ms"), "{over}");
    assert_eq!(&words[words.len() - 2..], ["2", "0.20%"], "{over}");
    tui.on_key(&press(KeyCode::Tab));
    let sessions = render_tui(&tui);
    assert!(sessions.contains("CLIENT1->EXCH"), "{sessions}");
    assert!(
        sessions.contains("10.0.0.2:40002 -> 10.0.0.100:9878"),
        "{sessions}"
    );
    tui.on_key(&press(KeyCode::BackTab));
    assert_eq!(tui.ui.view, View::Histogram);

    assert_eq!(tui.on_key(&press(KeyCode::Char('?'))), None);
    let help = render_tui(&tui);
    assert!(help.contains("┌ help "), "{help}");
    assert!(
        help.contains("TAB / shift-TAB  next / previous view"),
        "{help}"
    );
    // ESC closes the help rather than quitting; the view stays.
    assert_eq!(tui.on_key(&press(KeyCode::Esc)), None);
    assert!(!render_tui(&tui).contains("┌ help "));
    assert_eq!(tui.ui.view, View::Histogram);

    // The driver's keys come back to the driver.
    assert_eq!(tui.on_key(&press(KeyCode::Char(' '))), Some(Key::Summary));
    assert_eq!(tui.on_key(&press(KeyCode::Char('r'))), Some(Key::Reset));
    assert_eq!(tui.on_key(&press(KeyCode::Char('q'))), Some(Key::Quit));
    assert_eq!(tui.on_key(&press(KeyCode::Esc)), Some(Key::Quit));
}

#[test]
fn the_feed_holds_stdout_back_while_the_screen_is_up() {
    let out = Shared::default();
    let (mut tui, mut feed) = Tui::new(Box::new(TextReporter::new(out.clone())));
    let stats = known_stats();
    let source = source();
    let summary = || SummaryReport::new(&stats, alarming_counters(), &source, span());
    // As while the screen is up (entering a real terminal is for the tmux test).
    tui.shared.borrow_mut().on_screen = true;
    feed.summary(&summary()).expect("feed");
    assert_eq!(out.text(), "", "nothing on stdout under the screen");
    assert!(tui.shared.borrow().model.summary.is_some());
    tui.leave();
    // The run's last (partial) interval, reported at the end after the screen is gone:
    // the screen showed the intervals, so stdout gets none — only the summary (#36 item 6:
    // a TUI exit printed a stray interval line first).
    let interval = IntervalReport::new(
        span(),
        &stats,
        alarming_counters(),
        &Counters::default(),
        &source,
    );
    feed.interval(&interval).expect("feed");
    assert_eq!(out.text(), "", "no interval line on stdout after a TUI run");
    feed.summary(&summary()).expect("feed");
    assert!(
        out.text().starts_with("\n=== fixscope summary")
            || out.text().starts_with("=== fixscope summary"),
        "{}",
        out.text()
    );
}

/// The slowest view shows the run's slowest orders from the summary: the two 5 ms orders
/// (keys ORD-998 and ORD-999) first, with their latency, session and request time.
#[test]
fn slowest_view_shows_the_summary_s_slowest_orders() {
    let (model, _) = known_model();
    assert_eq!(
        model.slowest.len(),
        2 * 10,
        "--slowest's default, two stages"
    );
    let screen = screen_text(&render(&model, &view_ui(View::Slowest)));
    for (key, names) in [("ORD-998", "CLIENT1->EXCH"), ("ORD-999", "CLIENT2->EXCH")] {
        let rows: Vec<&str> = screen.lines().filter(|l| l.contains(key)).collect();
        assert_eq!(rows.len(), 2, "{key} at first_response and ack: {screen}");
        for row in rows {
            for part in [&human_ns(5_000_000.0), names, "8/0/0", "22:13:20.000000042"] {
                assert!(row.contains(part), "{part}: {row}");
            }
        }
    }
    // Slowest first: the 5 ms orders lead, then 998 µs (ORD-997).
    let first = screen.find("ORD-998").expect("ORD-998");
    let next = screen.find("ORD-997").expect("ORD-997 is tenth at most");
    assert!(first < next, "{screen}");
}

#[test]
fn slowest_view_lists_the_rows_it_is_given() {
    let (mut model, _) = known_model();
    model.slowest.clear();
    let empty = screen_text(&render(&model, &view_ui(View::Slowest)));
    assert!(empty.contains("no slow orders recorded yet"), "{empty}");
    model.slowest = vec![SlowRow {
        stage: Stage::FirstResponse,
        latency_ns: 5_000_000,
        key: "S1-00000000000000000042".into(),
        session: "CLIENT1->EXCH".into(),
        addresses: "10.0.0.1:40001 -> 10.0.0.100:9878".into(),
        request_utc: "2023-11-14T22:13:20.000000042Z".into(),
        response: "8/0 New".into(),
    }];
    let screen = screen_text(&render(&model, &view_ui(View::Slowest)));
    let row = screen
        .lines()
        .find(|l| l.contains("S1-00000000000000000042"))
        .unwrap_or_else(|| panic!("{screen}"));
    for part in [
        "first_response",
        "5.00ms",
        "CLIENT1->EXCH",
        "8/0 New",
        "22:13:20",
    ] {
        assert!(row.contains(part), "{part}: {row}");
    }
}

/// The Sessions view shows each session's FIX session layer, alarms in red (#21).
#[test]
fn sessions_view_shows_the_session_layer_and_its_alarms() {
    let mut stats = known_stats();
    let end = span().end_ns;
    {
        let h = &mut stats.session_mut(2).expect("session 2").health;
        h.counters.logons = 2;
        h.counters.possdup_requests = 198;
        h.heart_bt_int_s = Some(30);
        h.logged_on = true;
        // Silent for 61 s: more than 2x HeartBtInt.
        h.last_message_ns = [Some(end - 61_000_000_000), Some(end - 1_000)];
    }
    stats
        .session_mut(1)
        .expect("session 1")
        .health
        .counters
        .heartbeats = 77;
    let mut model = Model::new("t");
    model.on_summary(&SummaryReport::new(
        &stats,
        Counters::default(),
        &[],
        span(),
    ));
    let buf = render(&model, &view_ui(View::Sessions));
    let screen = screen_text(&buf);
    assert!(screen.contains("session layer"), "{screen}");
    assert!(screen.contains("stale"), "{screen}");
    assert!(
        screen.contains("198/0"),
        "possdup requests/responses: {screen}"
    );
    assert!(
        screen.contains("77/0"),
        "heartbeats/test requests: {screen}"
    );
    let (x, y) = find(&buf, "stale").unwrap();
    assert_eq!(buf[(x, y)].fg, Color::Red, "an alarm is red");
    let (x, y) = find(&buf, "77/0").unwrap();
    assert_ne!(buf[(x, y)].fg, Color::Red, "no alarm, not red");
}

/// The `by` view (#21): each value's stages with the text report's figures, busiest first,
/// `(other)` beyond `--by-limit`; without `--by` it says how to get it.
#[test]
fn by_view_shows_every_stage_of_the_busiest_values() {
    let spec = fixscope_core::group::GroupSpec::parse("55", 1).unwrap();
    let mut stats = Stats::new(RANGE_NS).with_groups(Some(spec));
    for (sym, n, ns) in [
        ("IBM", 3u64, 200_000u64),
        ("AAPL", 5, 40_000),
        ("MSFT", 1, 7_000),
    ] {
        for _ in 0..n {
            let by = stats.by_mut().unwrap();
            let groups = by.request(&[sym.as_bytes(), b"", b""]);
            let mut l = latency(Stage::Ack, 1, ns);
            l.groups = groups;
            stats.record(l);
        }
    }
    stats.refresh_views();
    let report = SummaryReport::new(&stats, Counters::default(), &[], span());
    let mut model = Model::new("t");
    model.on_summary(&report);
    let screen = screen_text(&render(&model, &view_ui(View::By)));
    let aapl = line_with(&screen, "55=AAPL ack");
    let other = line_with(&screen, "55=(other) ack");
    assert!(
        screen.find("55=AAPL").unwrap() < screen.find("55=(other)").unwrap(),
        "busiest first: {screen}"
    );
    assert!(
        !screen.contains("55=IBM"),
        "IBM is in (other) with --by-limit 1"
    );
    // The text report's figures for the same rows.
    let text = {
        let mut out = Vec::new();
        fixscope_core::report::by::write_by(&mut out, stats.by().unwrap()).unwrap();
        String::from_utf8(out).unwrap()
    };
    for (row, label) in [(aapl, "AAPL ack"), (other, "(other) ack")] {
        let want = line_with(&text, label);
        // count, min, mean, p50, p90, p99 after the stage's name.
        let figures = |l: &str| {
            l.split_whitespace()
                .skip_while(|w| *w != "ack")
                .skip(1)
                .take(6)
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(
            figures(&row),
            figures(&want),
            "{label}: {row} vs the text report's {want}"
        );
    }
    assert!(screen.contains("(other) holds 2 values"), "{screen}");

    let mut model = Model::new("t");
    model.on_summary(&SummaryReport::new(
        &known_stats(),
        Counters::default(),
        &[],
        span(),
    ));
    let screen = screen_text(&render(&model, &view_ui(View::By)));
    assert!(screen.contains("no --by"), "{screen}");
}

fn line_with(screen: &str, needle: &str) -> String {
    screen
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{screen}"))
        .to_string()
}
