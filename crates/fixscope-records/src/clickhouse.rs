//! `--clickhouse URL`: the same Arrow batches the Parquet files get, sent to ClickHouse's
//! HTTP interface as `INSERT … FORMAT ArrowStream`, from a thread of their own.
//!
//! The tables are created when missing (the DDL below, documented in docs/records.md).
//! A batch that cannot be delivered after its retries (back-off 0.2 s, 0.8 s, 3.2 s), or
//! finds the sender's queue full, is counted (`clickhouse_failed_rows`) and dropped: the
//! capture never waits for ClickHouse. One fixscope per gateway, all pointed at one
//! cluster, is how a firm keeps every order of every machine in one place.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use arrow_array::RecordBatch;

use crate::files::Table;
use crate::name_lookup::NssFreeResolver;

/// Where and as whom to insert.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClickHouseTarget {
    /// `http://host:port` (or https), no path.
    pub endpoint: String,
    pub user: String,
    pub password: String,
    pub database: String,
}

impl ClickHouseTarget {
    /// `http[s]://[user[:password]@]host[:port][/database]`; the password may instead come
    /// from `FIXSCOPE_CLICKHOUSE_PASSWORD` (kept out of process listings). Database
    /// `fixscope` and user `default` when not given.
    pub fn parse(url: &str, password_env: Option<String>) -> Result<Self> {
        let (scheme, rest) = url
            .split_once("://")
            .filter(|(s, _)| *s == "http" || *s == "https")
            .ok_or_else(|| {
                anyhow!(
                    "--clickhouse {url}: expected http://[user[:password]@]host[:port][/database]"
                )
            })?;
        let (authority, path) = match rest.split_once('/') {
            Some((a, p)) => (a, p),
            None => (rest, ""),
        };
        let (credentials, host) = match authority.rsplit_once('@') {
            Some((c, h)) => (Some(c), h),
            None => (None, authority),
        };
        if host.is_empty() {
            bail!("--clickhouse {url}: no host");
        }
        let (user, password) = match credentials.map(|c| c.split_once(':').unwrap_or((c, ""))) {
            Some((u, p)) => (u.to_string(), p.to_string()),
            None => ("default".to_string(), String::new()),
        };
        let password = if password.is_empty() {
            password_env.unwrap_or_default()
        } else {
            password
        };
        let database = path.split(['?', '/']).next().unwrap_or("");
        let database = if database.is_empty() {
            "fixscope"
        } else {
            database
        };
        if !database
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            bail!("--clickhouse {url}: database name {database:?}: letters, digits and _ only");
        }
        Ok(ClickHouseTarget {
            endpoint: format!("{scheme}://{host}"),
            user,
            password,
            database: database.to_string(),
        })
    }

    /// The statements that create the database and tables when missing.
    pub fn ddl(&self) -> [String; 4] {
        let db = &self.database;
        [
            format!("CREATE DATABASE IF NOT EXISTS {db}"),
            format!(
                "CREATE TABLE IF NOT EXISTS {db}.orders (\
                 request_time DateTime64(9, 'UTC'), session UInt64, \
                 sender_comp_id LowCardinality(Nullable(String)), \
                 target_comp_id LowCardinality(Nullable(String)), clordid Nullable(String), \
                 msg_type LowCardinality(String), symbol LowCardinality(Nullable(String)), \
                 side LowCardinality(Nullable(String)), account LowCardinality(Nullable(String)), \
                 msg_seq_num Int64, first_response_ns Nullable(Int64), ack_ns Nullable(Int64), \
                 fill_ns Nullable(Int64), outcome LowCardinality(String), timed_out Bool, \
                 INDEX clordid_bloom clordid TYPE bloom_filter GRANULARITY 4) \
                 ENGINE = MergeTree PARTITION BY toDate(request_time) ORDER BY request_time"
            ),
            format!(
                "CREATE TABLE IF NOT EXISTS {db}.messages (\
                 time DateTime64(9, 'UTC'), session UInt64, direction LowCardinality(String), \
                 msg_type LowCardinality(String), key Nullable(String), \
                 INDEX key_bloom key TYPE bloom_filter GRANULARITY 4) \
                 ENGINE = MergeTree PARTITION BY toDate(time) ORDER BY time"
            ),
            format!(
                "CREATE TABLE IF NOT EXISTS {db}.links (\
                 request_time DateTime64(9, 'UTC'), parent_session UInt64, \
                 parent_sender_comp_id LowCardinality(Nullable(String)), \
                 parent_target_comp_id LowCardinality(Nullable(String)), \
                 parent_clordid Nullable(String), msg_type LowCardinality(String), \
                 child_time DateTime64(9, 'UTC'), child_session UInt64, \
                 child_sender_comp_id LowCardinality(Nullable(String)), \
                 child_target_comp_id LowCardinality(Nullable(String)), \
                 child_clordid Nullable(String), rule LowCardinality(String), children UInt32, \
                 hop_out_ns Int64, venue_rtt_ns Nullable(Int64), hop_back_ns Nullable(Int64), \
                 client_rtt_ns Nullable(Int64), local_ack Nullable(Bool), \
                 INDEX parent_bloom parent_clordid TYPE bloom_filter GRANULARITY 4) \
                 ENGINE = MergeTree PARTITION BY toDate(request_time) ORDER BY request_time"
            ),
        ]
    }
}

/// What the sender did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Delivered {
    pub inserted_rows: u64,
    /// Rows not delivered: retries exhausted, or the sender's queue full.
    pub failed_rows: u64,
}

/// The capture's side of the sender: a bounded queue to its thread.
pub(crate) struct ClickHouseSender {
    queue: Option<SyncSender<(Table, Arc<RecordBatch>)>>,
    thread: Option<JoinHandle<u64>>,
    failed: Arc<AtomicU64>,
    /// Set at the end: what is still queued gets one attempt, no back-off (the run's exit
    /// is not held for minutes by a ClickHouse that is down).
    hurry: Arc<AtomicBool>,
}

/// Batches waiting for the sender at most (one more finds the queue full: counted).
const QUEUED_BATCHES: usize = 16;
/// Waits before each retry of a batch.
const BACKOFF: [Duration; 3] = [
    Duration::from_millis(200),
    Duration::from_millis(800),
    Duration::from_millis(3200),
];

impl ClickHouseSender {
    /// Starts the sender; rows not delivered are added to `failed` as they are given up.
    pub(crate) fn start(target: ClickHouseTarget, failed: Arc<AtomicU64>) -> Result<Self> {
        let (tx, rx) = sync_channel(QUEUED_BATCHES);
        let hurry = Arc::new(AtomicBool::new(false));
        let (f, h) = (Arc::clone(&failed), Arc::clone(&hurry));
        let thread = std::thread::Builder::new()
            .name("fixscope-clickhouse".into())
            .spawn(move || send_loop(&target, rx, &f, &h))
            .context("cannot start the ClickHouse sender")?;
        Ok(ClickHouseSender {
            queue: Some(tx),
            thread: Some(thread),
            failed,
            hurry,
        })
    }

    /// Queues a batch; a full queue drops it (counted).
    pub(crate) fn send(&self, table: Table, batch: Arc<RecordBatch>) {
        let rows = batch.num_rows() as u64;
        if let Some(q) = &self.queue {
            match q.try_send((table, batch)) {
                Ok(()) => {}
                Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                    self.failed.fetch_add(rows, Ordering::Relaxed);
                }
            }
        }
    }

    /// Sends what is queued and stops. `hurry` (live): the batch being retried finishes
    /// its retries, the rest get one attempt each.
    pub(crate) fn finish(&mut self, hurry: bool) -> Delivered {
        self.hurry.store(hurry, Ordering::Relaxed);
        drop(self.queue.take());
        let inserted_rows = self.thread.take().map_or(0, |t| t.join().unwrap_or(0));
        Delivered {
            inserted_rows,
            failed_rows: self.failed.load(Ordering::Relaxed),
        }
    }
}

/// The sender's thread: tables first (again after a failure), then each batch with its
/// retries. Returns the rows inserted.
fn send_loop(
    target: &ClickHouseTarget,
    batches: Receiver<(Table, Arc<RecordBatch>)>,
    failed: &AtomicU64,
    hurry: &AtomicBool,
) -> u64 {
    let builder = ureq::AgentBuilder::new()
        .timeout_connect(Duration::from_secs(2))
        .timeout(Duration::from_secs(30));
    // The static binary cannot use NSS (name_lookup.rs); the dynamic one keeps getaddrinfo.
    let agent = if cfg!(target_feature = "crt-static") {
        builder.resolver(NssFreeResolver::system()).build()
    } else {
        builder.build()
    };
    let mut tables_made = false;
    let mut inserted = 0;
    // After a batch failed all its retries, the next ones get one attempt each until one
    // is delivered: a ClickHouse that is down costs one back-off, not one per batch.
    let mut reachable = true;
    for (table, batch) in batches {
        let rows = batch.num_rows() as u64;
        let body = match arrow_stream(&batch) {
            Ok(b) => b,
            Err(_) => {
                failed.fetch_add(rows, Ordering::Relaxed);
                continue;
            }
        };
        let insert = format!(
            "INSERT INTO {}.{} FORMAT ArrowStream",
            target.database,
            table.name()
        );
        let mut delivered = false;
        for attempt in 0..=BACKOFF.len() {
            if attempt > 0 {
                if hurry.load(Ordering::Relaxed) || !reachable {
                    break;
                }
                std::thread::sleep(BACKOFF[attempt - 1]);
            }
            if !tables_made {
                tables_made = target
                    .ddl()
                    .iter()
                    .all(|sql| post(&agent, target, sql, &[]).is_ok());
                if !tables_made {
                    continue;
                }
            }
            if post(&agent, target, &insert, &body).is_ok() {
                delivered = true;
                break;
            }
        }
        reachable = delivered;
        if delivered {
            inserted += rows;
        } else {
            failed.fetch_add(rows, Ordering::Relaxed);
        }
    }
    inserted
}

/// One request to the HTTP interface: the query in the URL, the data (if any) as the body.
fn post(agent: &ureq::Agent, target: &ClickHouseTarget, query: &str, body: &[u8]) -> Result<()> {
    let url = format!("{}/", target.endpoint);
    let mut request = agent
        .post(&url)
        .query("query", query)
        .set("X-ClickHouse-User", &target.user);
    if !target.password.is_empty() {
        request = request.set("X-ClickHouse-Key", &target.password);
    }
    match request.send_bytes(body) {
        Ok(_) => Ok(()),
        Err(ureq::Error::Status(code, response)) => {
            let text = response.into_string().unwrap_or_default();
            bail!("ClickHouse answered {code}: {}", text.trim())
        }
        Err(e) => Err(anyhow!("ClickHouse: {e}")),
    }
}

/// A batch as an Arrow IPC stream (what `FORMAT ArrowStream` reads).
fn arrow_stream(batch: &RecordBatch) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut w = arrow_ipc::writer::StreamWriter::try_new(&mut out, &batch.schema())?;
    w.write(batch)?;
    w.finish()?;
    drop(w);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_credentials_database_and_the_environment() {
        let t = ClickHouseTarget::parse("http://ch.example:8123", None).unwrap();
        assert_eq!(
            (
                t.endpoint.as_str(),
                t.user.as_str(),
                t.password.as_str(),
                t.database.as_str()
            ),
            ("http://ch.example:8123", "default", "", "fixscope")
        );
        let t = ClickHouseTarget::parse("https://ops:s3cret@ch:8443/latency", None).unwrap();
        assert_eq!(
            (
                t.endpoint.as_str(),
                t.user.as_str(),
                t.password.as_str(),
                t.database.as_str()
            ),
            ("https://ch:8443", "ops", "s3cret", "latency")
        );
        let t = ClickHouseTarget::parse("http://ops@ch:8123/", Some("fromenv".into())).unwrap();
        assert_eq!((t.user.as_str(), t.password.as_str()), ("ops", "fromenv"));
        for bad in ["ch:8123", "ftp://ch", "http://", "http://ch/bad-name;drop"] {
            assert!(ClickHouseTarget::parse(bad, None).is_err(), "{bad}");
        }
    }
}
