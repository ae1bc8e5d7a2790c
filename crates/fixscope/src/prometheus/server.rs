//! The `/metrics` endpoint: one thread of its own that accepts scrapes one at a time and
//! encodes the latest published snapshot. The pipeline thread only swaps a pointer under a
//! lock (never held while encoding or writing), so a scrape cannot stall the ring consumer.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use super::model::Snapshot;
use super::negotiate::{self, Format};
use super::{proto, text};

/// A scraper that sends nothing or reads nothing for this long is dropped.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest request head we read (Prometheus sends ~300 bytes).
const MAX_REQUEST: usize = 16 * 1024;

/// The latest snapshot, shared by the pipeline (writer) and the HTTP thread (reader).
#[derive(Default)]
pub struct Published {
    latest: Mutex<Arc<Snapshot>>,
}

impl Published {
    /// Makes `snapshot` what scrapes return from now on.
    pub fn publish(&self, snapshot: Snapshot) {
        let new = Arc::new(snapshot);
        let old = {
            let mut latest = self.latest.lock().unwrap_or_else(|e| e.into_inner());
            std::mem::replace(&mut *latest, new)
        };
        // The old snapshot is freed here, outside the lock (or by a scrape still using it).
        drop(old);
    }

    pub fn latest(&self) -> Arc<Snapshot> {
        Arc::clone(&self.latest.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Binds `addr` and serves `/metrics` from `published` on a new thread until the process
/// ends. Returns the bound address (port 0 picks a free one).
pub fn serve(addr: SocketAddr, published: Arc<Published>) -> io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr)?;
    let bound = listener.local_addr()?;
    thread::Builder::new()
        .name("fixscope-metrics".into())
        .spawn(move || {
            for stream in listener.incoming() {
                match stream {
                    // A failed scrape concerns only its scraper (it sees the error or a reset).
                    Ok(stream) => {
                        let _ = handle(stream, &published);
                    }
                    // Out of descriptors and the like: do not spin; the next scrape retries.
                    Err(_) => thread::sleep(Duration::from_millis(100)),
                }
            }
        })?;
    Ok(bound)
}

/// What a request asked for.
#[derive(Debug, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// `?format=` overrides `Accept`: `openmetrics`, `text` or `protobuf`.
    pub format_param: Option<String>,
    pub accept: Option<String>,
}

pub fn parse_request(head: &str) -> Option<Request> {
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let target = first.next()?;
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let format_param = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("format="))
        .map(str::to_string);
    let accept = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("accept"))
        .map(|(_, v)| v.trim().to_string());
    Some(Request {
        method,
        path: path.to_string(),
        format_param,
        accept,
    })
}

/// The format a request gets.
pub fn format_for(req: &Request) -> Format {
    match req.format_param.as_deref() {
        Some("openmetrics") => Format::OpenMetrics,
        Some("text") => Format::Text,
        Some("protobuf") => Format::Protobuf,
        _ => negotiate::choose(req.accept.as_deref()),
    }
}

/// The body and Content-Type of a scrape.
pub fn render(snapshot: &Snapshot, format: Format) -> (Vec<u8>, &'static str) {
    match format {
        Format::Protobuf => (proto::encode(snapshot), proto::CONTENT_TYPE),
        Format::OpenMetrics => (
            text::encode(snapshot, text::Flavour::OpenMetrics).into_bytes(),
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        ),
        Format::Text => (
            text::encode(snapshot, text::Flavour::Prometheus).into_bytes(),
            "text/plain; version=0.0.4; charset=utf-8",
        ),
    }
}

fn handle(mut stream: TcpStream, published: &Published) -> io::Result<()> {
    stream.set_read_timeout(Some(CLIENT_TIMEOUT))?;
    stream.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        if buf.len() > MAX_REQUEST {
            return respond(
                &mut stream,
                "431 Request Header Fields Too Large",
                "text/plain",
                b"",
            );
        }
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&buf);
    let Some(req) = parse_request(&head) else {
        return respond(
            &mut stream,
            "400 Bad Request",
            "text/plain",
            b"bad request\n",
        );
    };
    if req.method != "GET" {
        return respond(
            &mut stream,
            "405 Method Not Allowed",
            "text/plain",
            b"GET only\n",
        );
    }
    match req.path.as_str() {
        "/metrics" => {
            let snapshot = published.latest();
            let (body, content_type) = render(&snapshot, format_for(&req));
            respond(&mut stream, "200 OK", content_type, &body)
        }
        "/" => respond(
            &mut stream,
            "200 OK",
            "text/html; charset=utf-8",
            b"<html><body><a href=\"/metrics\">fixscope metrics</a></body></html>\n",
        ),
        _ => respond(
            &mut stream,
            "404 Not Found",
            "text/plain",
            b"not found: try /metrics\n",
        ),
    }
}

fn respond(
    stream: &mut TcpStream,
    status: &str,
    content_type: &str,
    body: &[u8],
) -> io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_parse_and_the_query_overrides_accept() {
        let r = parse_request(
            "GET /metrics?format=openmetrics HTTP/1.1\r\nHost: x\r\nACCEPT: application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited\r\n\r\n",
        )
        .expect("parses");
        assert_eq!(r.path, "/metrics");
        assert_eq!(format_for(&r), Format::OpenMetrics);
        let r = parse_request("GET /metrics HTTP/1.1\r\naccept: application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited\r\n\r\n").expect("parses");
        assert_eq!(format_for(&r), Format::Protobuf);
        let r = parse_request("GET /metrics HTTP/1.0\r\n\r\n").expect("parses");
        assert_eq!(format_for(&r), Format::OpenMetrics);
    }

    #[test]
    fn a_scrape_over_http_gets_the_latest_snapshot() {
        let published = Arc::new(Published::default());
        let addr =
            serve("127.0.0.1:0".parse().expect("addr"), Arc::clone(&published)).expect("bind");
        let get = |accept: &str| {
            let mut s = TcpStream::connect(addr).expect("connect");
            write!(
                s,
                "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: {accept}\r\n\r\n"
            )
            .expect("send");
            let mut out = Vec::new();
            s.read_to_end(&mut out).expect("read");
            String::from_utf8_lossy(&out).into_owned()
        };
        assert!(get("*/*").ends_with("\r\n\r\n# EOF\n"));
        published.publish(Snapshot {
            families: vec![super::super::model::Family {
                name: "fixscope_requests".into(),
                help: "h".into(),
                unit: None,
                kind: super::super::model::Kind::Counter,
                samples: vec![super::super::model::Sample {
                    labels: vec![],
                    value: super::super::model::Value::Int(9),
                }],
            }],
            classic_bounds: vec![],
        });
        let r = get("text/plain;version=0.0.4");
        assert!(r.contains("Content-Type: text/plain; version=0.0.4"), "{r}");
        assert!(r.ends_with("fixscope_requests_total 9\n"), "{r}");
        let r = get("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited");
        assert!(r.contains("proto=io.prometheus.client.MetricFamily"), "{r}");
    }
}
