//! The ClickHouse the tests write to (clickhouse.rs, records_binary.rs): no ClickHouse
//! server installs on this machine, so its HTTP interface is a small shim
//! (`tests/interop/clickhouse_shim.py`) that runs every request in the ClickHouse engine
//! itself (chdb, PyPI `chdb-core`).

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support_hlog;

/// The shim, listening on 127.0.0.1; stopped (stdin closed, then killed) when dropped.
pub struct Shim {
    child: Child,
    pub port: u16,
    _dir: tempfile::TempDir,
}

impl Shim {
    pub fn start(test: &str, credentials: Option<(&str, &str)>) -> Shim {
        let dir = tempfile::tempdir().expect("tempdir");
        let py = support_hlog::python(test);
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/clickhouse_shim.py");
        let mut cmd = Command::new(py);
        cmd.arg(&script).arg(dir.path().join("chdb"));
        if let Some((u, p)) = credentials {
            cmd.args([u, p]);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start clickhouse_shim.py");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the shim's port");
        let port = line
            .strip_prefix("PORT ")
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| {
                panic!("clickhouse_shim.py said {line:?} (is chdb-core installed?)")
            });
        Shim {
            child,
            port,
            _dir: dir,
        }
    }

    /// Runs one query through the shim (as any HTTP client of ClickHouse would).
    pub fn query(&self, sql: &str, credentials: Option<(&str, &str)>) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).expect("connect to the shim");
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let auth = credentials.map_or_else(String::new, |(u, p)| {
            format!("X-ClickHouse-User: {u}\r\nX-ClickHouse-Key: {p}\r\n")
        });
        write!(
            s,
            "POST / HTTP/1.0\r\nHost: 127.0.0.1\r\n{auth}Content-Length: {}\r\n\r\n{sql}",
            sql.len()
        )
        .unwrap();
        let mut response = String::new();
        s.read_to_string(&mut response).unwrap();
        let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
        assert!(
            head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
            "{sql}: {response}"
        );
        body.trim().to_string()
    }
}

impl Drop for Shim {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
