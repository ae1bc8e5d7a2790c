//! The Prometheus flags of `pcap` and `live` read into the exporter's settings.

use anyhow::{bail, Result};

use crate::cli::AnalysisArgs;

/// Prometheus snapshots are refreshed at each interval report; `-r 0` with `--prometheus`
/// still refreshes them every second (the interval lines stay off: see `output`).
const PROMETHEUS_REFRESH_NS: u64 = 1_000_000_000;

impl AnalysisArgs {
    /// The pipeline's interval: `-r`, or 1 s for the metrics when `-r 0` and `--prometheus`.
    pub(crate) fn effective_interval_ns(&self) -> u64 {
        match (self.interval_s * 1e9) as u64 {
            0 if self.prometheus.is_some() => PROMETHEUS_REFRESH_NS,
            ns => ns,
        }
    }

    /// `--prometheus [ADDR:]PORT` as an address (a bare port binds 127.0.0.1).
    pub fn prometheus_listen(&self) -> Result<Option<std::net::SocketAddr>> {
        let Some(spec) = &self.prometheus else {
            return Ok(None);
        };
        if let Ok(port) = spec.parse::<u16>() {
            return Ok(Some((std::net::Ipv4Addr::LOCALHOST, port).into()));
        }
        match spec.parse() {
            Ok(addr) => Ok(Some(addr)),
            Err(_) => bail!(
                "--prometheus takes PORT or ADDR:PORT (e.g. 9874, 0.0.0.0:9874, [::1]:9874), got `{spec}`"
            ),
        }
    }

    /// The Prometheus exporter's settings from the flags.
    pub fn prometheus_settings(&self) -> Result<crate::prometheus::collect::Settings> {
        use crate::prometheus::histogram::ClassicBounds;
        let bounds = match &self.prometheus_buckets {
            Some(list) => ClassicBounds::parse(list)
                .map_err(|e| anyhow::anyhow!("--prometheus-buckets: {e}"))?,
            None => ClassicBounds::default(),
        };
        let max = fixscope_core::stats::MAX_TRACKED_SESSIONS;
        if self.prometheus_sessions > max {
            bail!(
                "--prometheus-sessions must be at most {max} (sessions broken down), got {}",
                self.prometheus_sessions
            );
        }
        Ok(crate::prometheus::collect::Settings {
            bounds,
            sessions: self.prometheus_sessions,
            by: self.prometheus_by,
        })
    }
}
