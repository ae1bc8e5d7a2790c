//! TLS decryption's counters (`--tls-keylog`): defined once in `fixscope-tls`, where they
//! are counted, and composed into [`super::Counters`] here.

pub use fixscope_tls::TlsCounters;

/// Reads [`TlsCounters`] flattened among others (an HdrHistogram log's counters): `None`
/// when the log has none of them (a run without `--tls-keylog`).
pub fn counters_if_present<'de, D>(d: D) -> Result<Option<TlsCounters>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    use serde::Deserialize;
    #[derive(Deserialize)]
    struct Maybe {
        tls_connections: Option<u64>,
        #[serde(flatten)]
        rest: serde_json::Map<String, serde_json::Value>,
    }
    let m = Maybe::deserialize(d)?;
    if m.tls_connections.is_none() {
        return Ok(None);
    }
    let mut all = m.rest;
    all.insert("tls_connections".into(), m.tls_connections.into());
    Ok(serde_json::from_value(serde_json::Value::Object(all)).ok())
}
