//! The environment's layer of the settings (#48): defaults < file < environment < command
//! line. A flag with clap's `env = "FIXSCOPE_…"` attribute is handled by `config_args`
//! (the file's key is left out when the variable is set); the variables fixscope reads by
//! hand are listed here, with what they beat.

/// ClickHouse's password (`--clickhouse`): beats a password written in the file's URL, never
/// one written in a URL on the command line (`ClickHouseTarget::parse` prefers the URL's).
pub const CLICKHOUSE_PASSWORD: &str = "FIXSCOPE_CLICKHOUSE_PASSWORD";

/// Every `FIXSCOPE_*` variable read by hand, and what it does (for `config check`).
pub const READ_BY_HAND: &[(&str, &str)] = &[
    (
        CLICKHOUSE_PASSWORD,
        "ClickHouse's password (beats the file's `clickhouse` URL's)",
    ),
    ("FIXSCOPE_NO_PROGRESS", "no progress bar for `pcap`"),
];

/// The variables of [`READ_BY_HAND`] that are set.
pub fn set_by_hand() -> Vec<(&'static str, &'static str)> {
    READ_BY_HAND
        .iter()
        .copied()
        .filter(|(var, _)| std::env::var_os(var).is_some())
        .collect()
}

/// A file's `clickhouse` URL when the environment's password must win: the URL without its
/// password (`None`: keep the URL as written).
pub fn clickhouse_url_for_env(url: &str) -> Option<String> {
    std::env::var_os(CLICKHOUSE_PASSWORD)?;
    without_password(url)
}

/// `http://user:secret@host/db` → `http://user@host/db`; `None` when there is no password.
pub fn without_password(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let (credentials, host) = authority.rsplit_once('@')?;
    let (user, _password) = credentials.split_once(':')?;
    Some(format!("{scheme}://{user}@{host}{path}"))
}

/// A URL as it may be shown: its password replaced by `***`.
pub fn masked(url: &str) -> String {
    match without_password(url) {
        Some(bare) => match bare.split_once('@') {
            Some((user, host)) => format!("{user}:***@{host}"),
            None => bare,
        },
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_taken_out_or_masked() {
        let url = "http://fx:s3cret@ch.example:8123/fixscope";
        assert_eq!(
            without_password(url).as_deref(),
            Some("http://fx@ch.example:8123/fixscope")
        );
        assert_eq!(masked(url), "http://fx:***@ch.example:8123/fixscope");
        assert_eq!(without_password("http://fx@ch/db"), None);
        assert_eq!(masked("http://ch:8123"), "http://ch:8123");
    }
}
