//! The lines of a log: the tag scheme, the Java header lines, and fixscope's own
//! `#fixscope-…` comment lines (serde structs, one JSON object per line).

use serde::{Deserialize, Serialize};

use crate::report::{Counters, SessionSummary};
use fixscope_figures::stats::Distribution;
use fixscope_model::segment::{ConnectionKey, Endpoint};
use fixscope_orders::breakdown::OrderBreakdown;
use fixscope_orders::correlate::{RequestType, Stage};
use fixscope_orders::group::ByField;
use fixscope_orders::slowest::SlowOrder;

/// Version of fixscope's comment lines; a reader refuses a newer one.
pub const LOG_VERSION: u32 = 1;

/// The Java writer's legend line.
pub(crate) const LEGEND: &str =
    "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"";
/// The Java writer's format version comment.
pub(crate) const FORMAT_VERSION: &str = "#[Histogram log format version 1.3]";
/// Interval_Max is written in ms (ns / 1e6), as Java's writer does by default.
pub(crate) const MAX_VALUE_UNIT_RATIO: f64 = 1e6;

pub(crate) const HEADER_PREFIX: &str = "#fixscope-log ";
pub(crate) const INTERVAL_PREFIX: &str = "#fixscope-interval ";
pub(crate) const SUMMARY_PREFIX: &str = "#fixscope-summary ";
pub(crate) const BY_PREFIX: &str = "#fixscope-by ";
/// At the top of a log a run switched to (SIGHUP after logrotate renamed the file): the
/// run's cumulative counters at the end of the previous file, so the counters of the files
/// read together are the run's, not the sum of each file's cumulative ones.
pub(crate) const CONTINUED_PREFIX: &str = "#fixscope-continued ";

/// The `#fixscope-continued` line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Continued {
    /// Cumulative counters of the run at the end of the file before this one.
    pub counters: Counters,
}

/// The tag of a stage: its name (`first_response`).
pub fn stage_tag(stage: Stage) -> &'static str {
    stage.name()
}

/// The tag of a stage for one request type: `first_response.D`.
pub fn type_tag(stage: Stage, t: RequestType) -> String {
    format!("{}.{}", stage.name(), t.msg_type())
}

/// The tag of a stage for one value of a `--by` tag: `first_response.55=AAPL` (a binary
/// protocol's field by its name: `first_response.Stock=AAPL`). The value is written as on
/// the wire except `%`, `,`, `=`, and bytes outside printable ASCII, which are `%XX`
/// (HdrHistogram's readers end a tag at the first `,`).
pub fn value_tag(stage: Stage, field: &ByField, value: &str) -> String {
    let mut out = format!("{}.{field}=", stage.name());
    for b in value.bytes() {
        if b.is_ascii_graphic() && !matches!(b, b'%' | b',' | b'=') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A `--by` value tag's parts (see [`value_tag`]).
pub fn parse_value_tag(tag: &str) -> Option<(Stage, ByField, String)> {
    let (stage, rest) = tag.split_once('.')?;
    let stage = Stage::from_name(stage)?;
    let (field, escaped) = rest.split_once('=')?;
    let field = ByField::parse(field).filter(|_| field.trim() == field)?;
    let mut bytes = Vec::with_capacity(escaped.len());
    let mut it = escaped.bytes();
    while let Some(b) = it.next() {
        if b == b'%' {
            let hex = [it.next()?, it.next()?];
            bytes.push(u8::from_str_radix(std::str::from_utf8(&hex).ok()?, 16).ok()?);
        } else {
            bytes.push(b);
        }
    }
    Some((stage, field, String::from_utf8(bytes).ok()?))
}

/// What a tag stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TagKind {
    /// The untagged line: `first_response`, for tools that read no tags.
    Untagged,
    Stage(Stage),
    ByType(Stage, RequestType),
    /// A `--by` value's whole-run line ([`value_tag`]; [`parse_value_tag`] gives the value):
    /// its FIX tag, `None` for a binary protocol's field (by name).
    ByValue(Stage, Option<u32>),
}

impl TagKind {
    /// `None` for a tag fixscope does not write.
    pub fn parse(tag: Option<&str>) -> Option<TagKind> {
        let Some(tag) = tag else {
            return Some(TagKind::Untagged);
        };
        let (stage, t) = match tag.split_once('.') {
            Some((s, t)) => (s, Some(t)),
            None => (tag, None),
        };
        if let Some((stage, field, _)) = parse_value_tag(tag) {
            return Some(TagKind::ByValue(stage, field.tag()));
        }
        let stage = Stage::from_name(stage)?;
        match t {
            None => Some(TagKind::Stage(stage)),
            Some(t) => RequestType::ALL
                .into_iter()
                .find(|r| r.msg_type() == t)
                .map(|r| TagKind::ByType(stage, r)),
        }
    }
}

/// The first fixscope line of a log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogHeader {
    pub version: u32,
    pub tool: String,
    /// Unit of the histograms' values.
    pub units: String,
    /// fixscope's histogram range (`-x`): values above it are counted apart.
    pub range_ns: u64,
}

/// Exact figures of one tag's histogram over one interval (or a run).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exact {
    pub count: u64,
    pub sum_ns: u128,
    pub min_ns: u64,
    pub max_ns: u64,
    /// Values above `range_ns`: in the log's histogram they are recorded at `max_ns`.
    pub over_range: u64,
    pub range_ns: u64,
}

/// The `#fixscope-interval` line written before an interval's histogram lines.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IntervalFigures {
    /// UNIX ns of the interval's start and end (the histogram lines round them to ms).
    pub start_ns: u64,
    pub end_ns: u64,
    /// Cumulative counters of the run at the end of the interval.
    pub counters: Counters,
    /// Exact figures per tag written for this interval.
    pub tags: Vec<(String, Exact)>,
    /// Add to the slow orders' `request_ns`/`response_ns` for UNIX ns (the run's clock:
    /// pcap 0, live CLOCK_MONOTONIC's offset). Absent in older logs: 0.
    #[serde(default)]
    pub unix_offset_ns: i64,
    /// The run's `--slowest N` (absent in older logs: none kept).
    #[serde(default)]
    pub slowest_n: usize,
    /// The interval's N slowest orders per stage, each stage's slowest first.
    #[serde(default)]
    pub slowest: Vec<SlowLine>,
}

/// One slow order of an interval: every field of [`SlowOrder`], self-contained (session
/// names and addresses inline), so `fixscope report` rebuilds the run's list exactly.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlowLine {
    pub stage: String,
    pub latency_ns: u64,
    /// The request's MsgType (`D`, `F`, `G`).
    pub msg_type: String,
    pub response_msg_type: String,
    pub exec_type: Option<char>,
    pub ord_status: Option<char>,
    pub key: String,
    pub session: u64,
    pub sender_comp_id: String,
    pub target_comp_id: String,
    /// `ip:port` / `[ip6]:port`; absent beyond the sessions broken down individually.
    pub client: Option<String>,
    pub server: Option<String>,
    /// In the run's clock (add `unix_offset_ns`).
    pub request_ns: u64,
    pub response_ns: u64,
    pub late: bool,
    /// The order's breakdown (`--breakdown` runs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breakdown: Option<OrderBreakdown>,
}

impl From<&SlowOrder> for SlowLine {
    fn from(o: &SlowOrder) -> Self {
        SlowLine {
            stage: o.stage.name().to_string(),
            latency_ns: o.latency_ns,
            msg_type: o.request_type.msg_type().to_string(),
            response_msg_type: o.response_msg_type.clone(),
            exec_type: o.exec_type,
            ord_status: o.ord_status,
            key: o.key.clone(),
            session: o.session,
            sender_comp_id: o.sender_comp_id.clone(),
            target_comp_id: o.target_comp_id.clone(),
            client: o.connection.map(|c| c.client.to_string()),
            server: o.connection.map(|c| c.server.to_string()),
            request_ns: o.request_ts_ns,
            response_ns: o.response_ts_ns,
            late: o.late,
            breakdown: o.breakdown,
        }
    }
}

impl SlowLine {
    /// The order back; an unknown stage or request type, or a bad address, says which.
    pub fn to_order(&self) -> Result<SlowOrder, String> {
        let stage = Stage::from_name(&self.stage)
            .ok_or_else(|| format!("slow order: unknown stage {:?}", self.stage))?;
        let request_type = RequestType::ALL
            .into_iter()
            .find(|t| t.msg_type() == self.msg_type)
            .ok_or_else(|| format!("slow order: unknown msg_type {:?}", self.msg_type))?;
        let endpoint = |s: &str| -> Result<Endpoint, String> {
            let a: std::net::SocketAddr = s
                .parse()
                .map_err(|_| format!("slow order: bad address {s:?}"))?;
            Ok(Endpoint {
                addr: a.ip(),
                port: a.port(),
            })
        };
        let connection = match (&self.client, &self.server) {
            (Some(c), Some(s)) => Some(ConnectionKey {
                client: endpoint(c)?,
                server: endpoint(s)?,
            }),
            (None, None) => None,
            _ => return Err("slow order: client without server or server without client".into()),
        };
        Ok(SlowOrder {
            stage,
            latency_ns: self.latency_ns,
            request_type,
            response_msg_type: self.response_msg_type.clone(),
            exec_type: self.exec_type,
            ord_status: self.ord_status,
            key: self.key.clone(),
            session: self.session,
            sender_comp_id: self.sender_comp_id.clone(),
            target_comp_id: self.target_comp_id.clone(),
            connection,
            request_ts_ns: self.request_ns,
            response_ts_ns: self.response_ns,
            late: self.late,
            breakdown: self.breakdown,
        })
    }
}

/// One session of the run's summary.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionLine {
    pub id: u64,
    pub client: String,
    pub server: String,
    /// Absent from logs written before sessions had it (#47).
    #[serde(default)]
    pub begin_string: String,
    pub sender_comp_id: String,
    pub target_comp_id: String,
    pub requests: u64,
    pub responses: u64,
    pub count: u64,
    pub min_ns: u64,
    pub mean_ns: f64,
    pub max_ns: u64,
    pub percentiles_ns: [Option<u64>; 6],
    pub over_range: u64,
    pub range_ns: u64,
    /// `--tls-keylog`: the session's TLS version and cipher suite; absent for plain FIX
    /// (and from logs written before sessions had them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_cipher_suite: Option<String>,
}

impl SessionLine {
    pub fn distribution(&self) -> Distribution {
        Distribution {
            count: self.count,
            min_ns: self.min_ns,
            mean_ns: self.mean_ns,
            max_ns: self.max_ns,
            percentiles_ns: self.percentiles_ns,
            over_range: self.over_range,
            range_ns: self.range_ns,
        }
    }

    /// The session's line of the per-session table, as the run reported it.
    pub fn summary(&self) -> SessionSummary {
        SessionSummary {
            id: self.id,
            client: self.client.clone(),
            server: self.server.clone(),
            begin_string: self.begin_string.clone(),
            sender_comp_id: self.sender_comp_id.clone(),
            target_comp_id: self.target_comp_id.clone(),
            shares_comp_ids: false,
            requests: self.requests,
            responses: self.responses,
            first_response: self.distribution(),
            // A log's session lines hold first_response only.
            breakdown: Vec::new(),
            tls: match (&self.tls_version, &self.tls_cipher_suite) {
                (Some(version), Some(suite)) => {
                    fixscope_streams::tls::TlsSession::named(version, suite)
                }
                _ => None,
            },
        }
    }
}

impl From<&SessionSummary> for SessionLine {
    fn from(s: &SessionSummary) -> Self {
        let d = &s.first_response;
        SessionLine {
            id: s.id,
            client: s.client.clone(),
            server: s.server.clone(),
            begin_string: s.begin_string.clone(),
            sender_comp_id: s.sender_comp_id.clone(),
            target_comp_id: s.target_comp_id.clone(),
            requests: s.requests,
            responses: s.responses,
            count: d.count,
            min_ns: d.min_ns,
            mean_ns: d.mean_ns,
            max_ns: d.max_ns,
            percentiles_ns: d.percentiles_ns,
            over_range: d.over_range,
            range_ns: d.range_ns,
            tls_version: s.tls.map(|t| t.version.to_string()),
            tls_cipher_suite: s.tls.map(|t| t.cipher_suite.to_string()),
        }
    }
}

/// The `#fixscope-summary` line: what a run's summary holds besides its histograms.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// UNIX ns of the run's first and last timestamps.
    pub start_ns: u64,
    pub end_ns: u64,
    pub counters: Counters,
    /// The source's counters (capture file or kernel), in display order.
    pub source: Vec<(String, u64)>,
    pub sessions: Vec<SessionLine>,
    pub untracked_sessions: u64,
    /// Latencies per stage in the summary (a check that the intervals hold them all).
    pub stage_counts: [u64; 4],
    /// The FIX session layer's figures as the summary showed them (#21; absent in older
    /// logs: `fixscope report` then leaves the session layer out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_layer: Option<Box<crate::report::session_figures::SessionLayerFigures>>,
    /// Why the run's source was not read to its end (#36; absent: complete).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
}

/// A `#fixscope-by` line, written with the summary: one `--by` tag's rows as the run
/// reported them (the busiest values, `(other)`, `(none)`), each followed by a whole-run
/// histogram line per stage with data (`Tag=first_response.55=AAPL`), so `fixscope report`
/// gives the run's `by` back and HdrHistogram's readers see each value's latencies.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ByLine {
    /// The FIX tag (0 for a binary protocol's field, named in `field`).
    pub tag: u32,
    /// A binary protocol's field, by name (absent for a FIX tag).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// `--by-limit` and `--by-candidates`.
    pub limit: usize,
    pub candidates: usize,
    /// The `(other)` row's `values`, `values_overflowed` and `busiest_exact`.
    pub other_values: u64,
    pub values_overflowed: u64,
    pub busiest_exact: bool,
    pub rows: Vec<ByRow>,
}

/// One row of a [`ByLine`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ByRow {
    pub value: String,
    /// `named`, `other` or `none`.
    pub kind: String,
    pub requests: u64,
    /// Exact figures per stage with data, by its histogram line's tag.
    pub stages: Vec<(String, Exact)>,
}

/// `Tue Nov 14 22:13:20 UTC 2023`, as Java's `Date.toString()` in UTC.
pub(crate) fn java_date(unix_s: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let iso = fixscope_model::clock::iso8601_utc(
        unix_s.saturating_mul(1_000_000_000),
        fixscope_model::clock::Precision::Seconds,
    )
    .to_string();
    // 2023-11-14T22:13:20Z
    let month = iso
        .get(5..7)
        .and_then(|m| m.parse::<usize>().ok())
        .and_then(|m| MONTHS.get(m.wrapping_sub(1)))
        .copied()
        .unwrap_or("???");
    format!(
        "{} {} {} {} UTC {}",
        DAYS[((unix_s / 86_400) % 7) as usize],
        month,
        iso.get(8..10).unwrap_or("??"),
        iso.get(11..19).unwrap_or("??"),
        iso.get(0..4).unwrap_or("????"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_round_trip_and_unknown_tags_are_none() {
        for stage in Stage::ALL {
            assert_eq!(
                TagKind::parse(Some(stage_tag(stage))),
                Some(TagKind::Stage(stage))
            );
            for t in RequestType::ALL {
                assert_eq!(
                    TagKind::parse(Some(&type_tag(stage, t))),
                    Some(TagKind::ByType(stage, t))
                );
            }
        }
        assert_eq!(TagKind::parse(None), Some(TagKind::Untagged));
        for value in ["AAPL", "BRK.B", "a,b=c %d", "(other)", "é"] {
            let tag = value_tag(Stage::Ack, &ByField::Tag(55), value);
            assert!(!tag.contains(',') && !tag.contains(' '), "{tag}");
            assert_eq!(
                TagKind::parse(Some(&tag)),
                Some(TagKind::ByValue(Stage::Ack, Some(55)))
            );
            assert_eq!(
                parse_value_tag(&tag),
                Some((Stage::Ack, ByField::Tag(55), value.to_string()))
            );
        }
        assert_eq!(
            value_tag(Stage::Fill, &ByField::Tag(1), "A,B"),
            "fill.1=A%2CB"
        );
        let stock = ByField::Named("Stock".into());
        assert_eq!(value_tag(Stage::Ack, &stock, "AAPL"), "ack.Stock=AAPL");
        assert_eq!(
            parse_value_tag("ack.Stock=AAPL"),
            Some((Stage::Ack, stock, "AAPL".into()))
        );
        assert_eq!(
            TagKind::parse(Some("ack.Stock=AAPL")),
            Some(TagKind::ByValue(Stage::Ack, None))
        );
        for bad in [
            "",
            "foo",
            "first_response.X",
            "ack.",
            ".D",
            "first_response.D.D",
            "ack.=X",
            "ack.5x=X",
            "ack.55=%4",
        ] {
            assert_eq!(TagKind::parse(Some(bad)), None, "{bad}");
        }
    }

    #[test]
    fn java_dates() {
        assert_eq!(java_date(0), "Thu Jan 01 00:00:00 UTC 1970");
        assert_eq!(java_date(1_700_000_000), "Tue Nov 14 22:13:20 UTC 2023");
    }

    #[test]
    fn exact_sums_beyond_u64_round_trip() {
        let e = Exact {
            sum_ns: u128::from(u64::MAX) * 3,
            ..Exact::default()
        };
        let line = serde_json::to_string(&e).unwrap();
        assert_eq!(serde_json::from_str::<Exact>(&line).unwrap(), e);
    }
}
