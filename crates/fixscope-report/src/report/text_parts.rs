//! The pieces both text reports write — the brief default ([`super::text_brief`]) and the
//! full one ([`super::text`]): the run line, the request accounting, the session table's
//! columns and the slowest orders' rows.

use std::io::{self, Write};

use super::rows::{opt_ns, percentile_text};
use super::{human_ns, Counters, SessionSummary, SummaryReport};
use fixscope_model::source::Counter;
use fixscope_orders::correlate::Stage;
use fixscope_orders::slowest::SlowOrder;

/// The summary's first lines: the run (when, how much), why it is incomplete, who stamped
/// the packets.
pub(super) fn write_run_line(out: &mut impl Write, r: &SummaryReport<'_>) -> io::Result<()> {
    let c = &r.counters;
    let when = match r.times_utc() {
        Some((start, end)) => format!("{start} .. {end} ({:.3}s)", r.duration_ns as f64 / 1e9),
        None => "no packet of the watched ports".to_string(),
    };
    writeln!(
        out,
        "\n=== fixscope summary: {when}, {} messages, {} requests, {} matched ===",
        c.framing.messages, c.correlation.requests, c.correlation.matched
    )?;
    if let Some(why) = &r.incomplete {
        writeln!(out, "INCOMPLETE: {why}")?;
    }
    let (mut silent, mut on_memory_bio) = (false, false);
    for (conn, why) in r.tls_undecrypted.iter().flatten() {
        // Its orders are missing from every figure below: said before them.
        writeln!(
            out,
            "TLS NOT DECRYPTED: {conn} ({why}): its orders are not measured"
        )?;
        silent |= *why == "no_ssl_calls";
        on_memory_bio |= *why == "memory_bio";
    }
    if on_memory_bio {
        writeln!(
            out,
            "  memory_bio: the process on that connection drives OpenSSL through memory BIOs \
             (Node.js, Netty's tcnative): its SSL_read/SSL_write make no socket call, so \
             nothing ties them to the connection; measure it with --tls-keylog"
        )?;
    }
    let memory_bio = source_count(r.source, "tls_uprobe_memory_bio");
    if silent && memory_bio > 0 {
        // What the kernel saw beside the silence, as a fact: not tied to this connection.
        writeln!(
            out,
            "  and {memory_bio} OpenSSL calls were on memory BIOs (tls_uprobe_memory_bio), \
             of processes not seen on that connection's socket"
        )?;
    }
    if write_trailer_line(out, r.source, r.span.timestamp_source)? {
        return Ok(());
    }
    if let Some(name) = r.span.timestamp_source {
        writeln!(
            out,
            "timestamps: {name} (who stamped the packets: --time-stamp-type)"
        )?;
    }
    Ok(())
}

/// A source counter's value (0 when the source has none of that name).
fn source_count(source: &[Counter], name: &str) -> u64 {
    source
        .iter()
        .find(|(n, _)| n == name)
        .map_or(0, |(_, v)| *v)
}

/// Which frames were timed by a tap's hardware stamp ([`fixscope_capture::wire_stamp`]), by the
/// clock's name when the run knows it: said only when some were (true then), with the
/// frames that fell back to the capture's own time.
fn write_trailer_line(
    out: &mut impl Write,
    source: &[Counter],
    clock: Option<&str>,
) -> io::Result<bool> {
    let of = |name: &str| {
        source
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0, |(_, v)| *v)
    };
    let stamped = of("trailer_timestamps");
    if stamped == 0 {
        return Ok(false);
    }
    // `live --tap` names who stamped the packets on the host (`host`, `adapter`): the
    // trailers' clock is another.
    let tap_names = ["host", "adapter", "adapter_unsynced"];
    let mut line = match clock.filter(|c| !tap_names.contains(c)) {
        Some(name) => format!("timestamps: {name}, the tap's hardware stamps on {stamped} frames"),
        None => format!("timestamps: the tap's hardware stamps on {stamped} frames"),
    };
    for (name, what) in [
        ("trailer_missing", "without a trailer (capture time used)"),
        (
            "trailer_fcs_mismatch",
            "whose trailer failed its FCS check (capture time used)",
        ),
    ] {
        let n = of(name);
        if n > 0 {
            line.push_str(&format!(", {n} {what}"));
        }
    }
    writeln!(out, "{line}")?;
    Ok(true)
}

/// Where every request went: matched, or why it never was.
pub(super) fn write_accounting(out: &mut impl Write, c: &Counters) -> io::Result<()> {
    let k = &c.correlation;
    // Only a capture that reordered has these: said then, and the line is as before else.
    let mut reversed = match k.response_before_request {
        0 => String::new(),
        n => format!(", response before request {n} (no latency)"),
    };
    if k.answered_after_capture_hole > 0 {
        reversed.push_str(&format!(
            ", answered after a capture hole {} (no latency)",
            k.answered_after_capture_hole
        ));
    }
    writeln!(
        out,
        "requests {}: matched {} (late {}){reversed}, never answered {} (pending {}, evicted {}, connection closed {}, untracked {}); timed out {} (-t)",
        k.requests,
        k.matched,
        k.late,
        c.unanswered,
        c.unanswered_pending,
        k.unanswered_evicted,
        k.unanswered_closed,
        k.untracked_requests,
        k.timed_out,
    )
}

/// The per-session table's column names (text report and TUI).
pub const SESSION_HEADER: [&str; 8] = [
    "#",
    "sender->target",
    "client -> server",
    "requests",
    "responses",
    "p50",
    "p99",
    "max",
];

/// One session's row of the per-session table, column by column as [`SESSION_HEADER`]
/// names them: the p50/p99 columns (5, 6) are [`percentile_text`]s.
pub fn session_columns(s: &SessionSummary) -> [String; 8] {
    let d = &s.first_response;
    let names = if s.sender_comp_id.is_empty() {
        "?".to_string()
    } else if s.shares_comp_ids {
        format!(
            "{}->{} {}",
            s.sender_comp_id, s.target_comp_id, s.begin_string
        )
    } else {
        format!("{}->{}", s.sender_comp_id, s.target_comp_id)
    };
    [
        s.id.to_string(),
        names,
        format!("{} -> {}", s.client, s.server),
        s.requests.to_string(),
        s.responses.to_string(),
        percentile_text(d, 0),
        percentile_text(d, 2),
        opt_ns(d, d.max_ns),
    ]
}

/// The per-session table's TLS column (`--tls-keylog`), shown when a session of the table
/// was carried over TLS: its name, and a session's value.
pub const SESSION_TLS_HEADER: &str = "tls";

/// A session's TLS column: `TLS1.3 TLS_AES_128_GCM_SHA256`, or `-` for plain FIX.
pub fn session_tls_column(s: &SessionSummary) -> String {
    s.tls.map_or("-".to_string(), |t| {
        format!("{} {}", t.version, t.cipher_suite)
    })
}

/// The per-session table's header and one row per session, then how many sessions had no
/// row of their own. The TLS column only when a session has TLS (plaintext runs read as
/// they always did).
pub(super) fn write_session_rows(
    out: &mut impl Write,
    sessions: &[&SessionSummary],
    untracked: u64,
) -> io::Result<()> {
    let h = SESSION_HEADER;
    let tls = sessions.iter().any(|s| s.tls.is_some());
    let tls_column = |text: &str| match tls {
        true => format!(" {text}"),
        false => String::new(),
    };
    writeln!(
        out,
        "  {:>4} {:<24} {:<44} {:>9} {:>9} {:>9} {:>9} {:>9}{}",
        h[0],
        h[1],
        h[2],
        h[3],
        h[4],
        h[5],
        h[6],
        h[7],
        tls_column(SESSION_TLS_HEADER)
    )?;
    for s in sessions {
        let c = session_columns(s);
        writeln!(
            out,
            "  {:>4} {:<24} {:<44} {:>9} {:>9} {:>9} {:>9} {:>9}{}",
            c[0],
            c[1],
            c[2],
            c[3],
            c[4],
            c[5],
            c[6],
            c[7],
            tls_column(&session_tls_column(s)),
        )?;
    }
    if untracked > 0 {
        writeln!(out, "  (+{untracked} more sessions not broken down)")?;
    }
    Ok(())
}

/// Slow orders as a table (header, then one row each, and its breakdown under it).
pub(super) fn write_slowest_orders(
    out: &mut impl Write,
    orders: &[SlowOrder],
    unix_offset_ns: i64,
) -> io::Result<()> {
    let all: Vec<&SlowOrder> = orders.iter().collect();
    write_slowest_rows(out, &all, unix_offset_ns)
}

pub(super) fn write_slowest_rows(
    out: &mut impl Write,
    orders: &[&SlowOrder],
    unix_offset_ns: i64,
) -> io::Result<()> {
    writeln!(
        out,
        "  {:<15} {:>9}  {:<20} {:<4} {:<8} {:>4} {:<24} {:<44} request time (UTC)",
        "stage", "latency", "key", "type", "response", "#", "sender->target", "client -> server"
    )?;
    for o in orders {
        let response = format!(
            "{}{}{}",
            o.response_msg_type,
            o.exec_type.map_or(String::new(), |c| format!("/{c}")),
            o.ord_status.map_or(String::new(), |c| format!("/{c}"))
        );
        let names = if o.sender_comp_id.is_empty() {
            "?".to_string()
        } else {
            format!("{}->{}", o.sender_comp_id, o.target_comp_id)
        };
        let addresses = o
            .connection
            .map_or("?".to_string(), |c| format!("{} -> {}", c.client, c.server));
        writeln!(
            out,
            "  {:<15} {:>9}  {:<20} {:<4} {:<8} {:>4} {:<24} {:<44} {}{}",
            o.stage.name(),
            human_ns(o.latency_ns as f64),
            o.key,
            o.request_type.msg_type(),
            response,
            o.session,
            names,
            addresses,
            super::utc(o.request_ts_ns, unix_offset_ns),
            if o.late { "  (late)" } else { "" },
        )?;
        if let Some(b) = o.breakdown {
            // `--breakdown`: where the order's time went ("-": not measured).
            let parts: Vec<String> = Stage::BREAKDOWN
                .iter()
                .map(|&s| {
                    let v = b.get(s).map_or("-".to_string(), |ns| human_ns(ns as f64));
                    format!("{} {v}", s.name())
                })
                .collect();
            writeln!(out, "  {:<15} {}", "", parts.join("  "))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::TimeSpan;
    use fixscope_figures::stats::{Distribution, Stats};

    /// The run line of a summary with `undecrypted` connections and `source` counters.
    fn run_line(undecrypted: &[(&str, &'static str)], source: &[Counter]) -> String {
        let mut stats = Stats::new(10_000_000_000);
        stats.refresh_views();
        let span = TimeSpan {
            start_ns: 1,
            end_ns: 2,
            unix_offset_ns: 0,
            timestamp_source: None,
        };
        let mut r = SummaryReport::new(&stats, Counters::default(), source, span);
        r.tls_undecrypted = Some(
            undecrypted
                .iter()
                .map(|&(c, why)| (c.to_string(), why))
                .collect(),
        );
        let mut out = Vec::new();
        write_run_line(&mut out, &r).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// A connection none of whose calls came because its process is on memory BIOs says
    /// so and what measures it; a silent one beside memory-BIO calls of other processes
    /// says both as facts, not as its reason.
    #[test]
    fn a_connection_on_memory_bios_is_named_and_a_silent_one_beside_them_is_not() {
        let bio = [("10.0.0.1:4000 -> 10.0.0.2:9878", "memory_bio")];
        let named = run_line(&bio, &[("tls_uprobe_memory_bio".into(), 40)]);
        assert!(named.contains("(memory_bio)"), "{named}");
        assert!(
            named.contains("drives OpenSSL through memory BIOs"),
            "{named}"
        );
        assert!(named.contains("--tls-keylog"), "{named}");
        let conn = [("10.0.0.1:4000 -> 10.0.0.2:9878", "no_ssl_calls")];
        let with = run_line(&conn, &[("tls_uprobe_memory_bio".into(), 40)]);
        assert!(with.contains("TLS NOT DECRYPTED: 10.0.0.1:4000"), "{with}");
        assert!(
            with.contains("40 OpenSSL calls were on memory BIOs"),
            "{with}"
        );
        assert!(!with.contains("drives OpenSSL"), "not its reason: {with}");
        let without = run_line(&conn, &[("tls_uprobe_memory_bio".into(), 0)]);
        assert!(!without.contains("memory BIOs"), "{without}");
        let no_key = run_line(
            &[("10.0.0.1:4000 -> 10.0.0.2:9878", "no_key")],
            &[("tls_uprobe_memory_bio".into(), 40)],
        );
        assert!(
            !no_key.contains("memory BIOs"),
            "only beside a silent one: {no_key}"
        );
    }

    #[test]
    fn session_columns_name_unknown_sessions_and_mark_percentiles_above_the_range() {
        let s = SessionSummary {
            id: 7,
            client: "10.0.0.1:40000".into(),
            server: "10.0.0.2:9878".into(),
            begin_string: String::new(),
            sender_comp_id: String::new(),
            target_comp_id: "EXCH".into(),
            shares_comp_ids: false,
            requests: 3,
            responses: 5,
            first_response: Distribution {
                count: 3,
                min_ns: 1_000,
                mean_ns: 2_000.0,
                max_ns: 20_000,
                percentiles_ns: [Some(1_500), None, None, None, None, None],
                over_range: 1,
                range_ns: 10_000,
            },
            breakdown: Vec::new(),
            tls: None,
        };
        let c = session_columns(&s);
        assert_eq!(c[0], "7");
        assert_eq!(c[1], "?", "no SenderCompID seen");
        assert_eq!(c[2], "10.0.0.1:40000 -> 10.0.0.2:9878");
        assert_eq!((c[3].as_str(), c[4].as_str()), ("3", "5"));
        assert_eq!(c[5], human_ns(1_500.0));
        assert_eq!(c[6], format!(">{}", human_ns(10_000.0)), "p99 above -x");
        assert_eq!(c[7], human_ns(20_000.0));
        assert_eq!(c.len(), SESSION_HEADER.len());
    }
}
