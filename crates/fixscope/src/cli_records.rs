//! `--records`, `--records-rotate` and `--clickhouse` (#33): every order kept as Parquet, for `pcap`,
//! `live` and `tap`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

/// Where every order's record goes.
#[derive(Args, Debug, Clone, Default)]
pub struct RecordsArgs {
    /// Keep every order: Parquet (zstd) files under DIR/orders/date=YYYY-MM-DD/ (one row
    /// per request: its time, session, ClOrdID, symbol, side, account, latencies and
    /// outcome) and DIR/messages/date=…/ (one row per request and response). DuckDB,
    /// ClickHouse, pandas and Polars read them; a file appears only once complete.
    #[arg(long, value_name = "DIR")]
    pub records: Option<PathBuf>,
    /// Also send every record to ClickHouse's HTTP interface:
    /// http[s]://[user[:password]@]host[:port][/database] (database `fixscope` by default;
    /// the password may come from FIXSCOPE_CLICKHOUSE_PASSWORD). The database and the
    /// `orders` and `messages` tables are created when missing; rows go as INSERT … FORMAT
    /// ArrowStream every 65,536 rows or second; what cannot be delivered after retries is
    /// counted (clickhouse_failed_rows), never waited for.
    #[arg(long, value_name = "URL")]
    pub clickhouse: Option<String>,
    /// Live: close the record files and begin new ones this often (e.g. 5m, 30s, 1h).
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = humantime::parse_duration)]
    pub records_rotate: Duration,
}
