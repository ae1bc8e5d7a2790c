//! NSS key log files (`SSLKEYLOGFILE`): one secret a line, `LABEL <client_random> <secret>`
//! in hex, both randoms 32 bytes. Comments (`#`), blank lines, labels we do not use and
//! malformed lines are counted and skipped, never an error: a key log is written by other
//! programs, often several appending to one file.

use std::collections::HashMap;

/// The secrets one connection (one client random) logged.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Secrets {
    /// TLS 1.2 (and earlier): `CLIENT_RANDOM`, the 48-byte master secret.
    pub master: Option<Vec<u8>>,
    /// TLS 1.3: `CLIENT_HANDSHAKE_TRAFFIC_SECRET`.
    pub client_handshake: Option<Vec<u8>>,
    /// TLS 1.3: `SERVER_HANDSHAKE_TRAFFIC_SECRET`.
    pub server_handshake: Option<Vec<u8>>,
    /// TLS 1.3: `CLIENT_TRAFFIC_SECRET_0`.
    pub client_traffic: Option<Vec<u8>>,
    /// TLS 1.3: `SERVER_TRAFFIC_SECRET_0`.
    pub server_traffic: Option<Vec<u8>>,
}

/// What reading key log text found, line by line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyLogStats {
    /// Lines that gave a secret we use.
    pub secrets: u64,
    /// Blank lines and `#` comments.
    pub comments: u64,
    /// Well-formed lines whose label we do not use (`EXPORTER_SECRET`,
    /// `CLIENT_EARLY_TRAFFIC_SECRET`, …).
    pub unknown_labels: u64,
    /// Lines that are not `LABEL <64 hex digits> <hex>`.
    pub malformed: u64,
}

/// The labels whose secrets decrypt records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Label {
    ClientRandom,
    ClientHandshake,
    ServerHandshake,
    ClientTraffic0,
    ServerTraffic0,
}

impl Label {
    pub fn parse(name: &[u8]) -> Option<Label> {
        Some(match name {
            b"CLIENT_RANDOM" => Label::ClientRandom,
            b"CLIENT_HANDSHAKE_TRAFFIC_SECRET" => Label::ClientHandshake,
            b"SERVER_HANDSHAKE_TRAFFIC_SECRET" => Label::ServerHandshake,
            b"CLIENT_TRAFFIC_SECRET_0" => Label::ClientTraffic0,
            b"SERVER_TRAFFIC_SECRET_0" => Label::ServerTraffic0,
            _ => return None,
        })
    }
}

/// Every secret read, by client random.
#[derive(Clone, Debug, Default)]
pub struct KeyLog {
    by_random: HashMap<[u8; 32], Secrets>,
    stats: KeyLogStats,
}

impl KeyLog {
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads key log text (a file's bytes, or a pcapng Decryption Secrets Block's).
    pub fn add_text(&mut self, text: &[u8]) {
        for line in text.split(|&b| b == b'\n') {
            self.add_line(line);
        }
    }

    /// Reads one line (a trailing `\r` is allowed).
    pub fn add_line(&mut self, line: &[u8]) {
        let line = trim(line);
        if line.is_empty() || line[0] == b'#' {
            self.stats.comments += 1;
            return;
        }
        let mut fields = line
            .split(|b| b.is_ascii_whitespace())
            .filter(|f| !f.is_empty());
        let (Some(label), Some(random), Some(secret), None) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            self.stats.malformed += 1;
            return;
        };
        let (Some(random), Some(secret)) = (hex(random), hex(secret)) else {
            self.stats.malformed += 1;
            return;
        };
        let Ok(random) = <[u8; 32]>::try_from(random.as_slice()) else {
            self.stats.malformed += 1;
            return;
        };
        if secret.is_empty() {
            self.stats.malformed += 1;
            return;
        }
        match Label::parse(label) {
            Some(label) => {
                self.insert(label, random, secret);
                self.stats.secrets += 1;
            }
            None => self.stats.unknown_labels += 1,
        }
    }

    /// Records one secret (a later line for the same label and random replaces it).
    pub fn insert(&mut self, label: Label, client_random: [u8; 32], secret: Vec<u8>) {
        let s = self.by_random.entry(client_random).or_default();
        let slot = match label {
            Label::ClientRandom => &mut s.master,
            Label::ClientHandshake => &mut s.client_handshake,
            Label::ServerHandshake => &mut s.server_handshake,
            Label::ClientTraffic0 => &mut s.client_traffic,
            Label::ServerTraffic0 => &mut s.server_traffic,
        };
        *slot = Some(secret);
    }

    /// Takes every secret and count of `other` (lines read later: theirs replace ours).
    pub fn absorb(&mut self, other: KeyLog) {
        for (random, theirs) in other.by_random {
            let mine = self.by_random.entry(random).or_default();
            let slots = [
                (&mut mine.master, theirs.master),
                (&mut mine.client_handshake, theirs.client_handshake),
                (&mut mine.server_handshake, theirs.server_handshake),
                (&mut mine.client_traffic, theirs.client_traffic),
                (&mut mine.server_traffic, theirs.server_traffic),
            ];
            for (slot, secret) in slots {
                if secret.is_some() {
                    *slot = secret;
                }
            }
        }
        let (s, o) = (&mut self.stats, other.stats);
        s.secrets += o.secrets;
        s.comments += o.comments;
        s.unknown_labels += o.unknown_labels;
        s.malformed += o.malformed;
    }

    /// The secrets logged for a connection's client random.
    pub fn get(&self, client_random: &[u8; 32]) -> Option<&Secrets> {
        self.by_random.get(client_random)
    }

    /// Connections (client randoms) with at least one secret.
    pub fn len(&self) -> usize {
        self.by_random.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_random.is_empty()
    }

    pub fn stats(&self) -> KeyLogStats {
        self.stats
    }
}

fn trim(mut line: &[u8]) -> &[u8] {
    while let [rest @ .., last] = line {
        if last.is_ascii_whitespace() {
            line = rest;
        } else {
            break;
        }
    }
    while let [first, rest @ ..] = line {
        if first.is_ascii_whitespace() {
            line = rest;
        } else {
            break;
        }
    }
    line
}

/// Hex digits to bytes; `None` for an odd count or a non-hex digit.
fn hex(digits: &[u8]) -> Option<Vec<u8>> {
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    let nibble = |d: u8| (d as char).to_digit(16).map(|v| v as u8);
    digits
        .chunks_exact(2)
        .map(|p| Some(nibble(p[0])? << 4 | nibble(p[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hexed(b: &[u8]) -> String {
        b.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn reads_every_label_and_counts_the_rest() {
        let r1 = [1u8; 32];
        let r2 = [0xabu8; 32];
        let text = format!(
            "# written by a test\n\n\
             CLIENT_RANDOM {r1} {m}\r\n\
             CLIENT_HANDSHAKE_TRAFFIC_SECRET {r2} {a}\n\
             SERVER_HANDSHAKE_TRAFFIC_SECRET {R2} {b}\n\
             CLIENT_TRAFFIC_SECRET_0 {r2} {c}\n\
             SERVER_TRAFFIC_SECRET_0 {r2} {d}\n\
             EXPORTER_SECRET {r2} {d}\n\
             CLIENT_RANDOM {r1}\n\
             CLIENT_RANDOM 0102 {m}\n\
             CLIENT_RANDOM {r1} zz\n",
            r1 = hexed(&r1),
            r2 = hexed(&r2),
            R2 = hexed(&r2).to_uppercase(),
            m = hexed(&[7; 48]),
            a = hexed(&[1; 32]),
            b = hexed(&[2; 32]),
            c = hexed(&[3; 32]),
            d = hexed(&[4; 32]),
        );
        let mut log = KeyLog::new();
        log.add_text(text.as_bytes());
        assert_eq!(
            log.stats(),
            KeyLogStats {
                secrets: 5,
                comments: 3, // the comment, the blank line, the empty tail
                unknown_labels: 1,
                malformed: 3,
            }
        );
        assert_eq!(log.len(), 2);
        assert_eq!(
            log.get(&r1).unwrap().master.as_deref(),
            Some(&[7u8; 48][..])
        );
        let s = log.get(&r2).unwrap();
        assert_eq!(s.client_handshake.as_deref(), Some(&[1u8; 32][..]));
        assert_eq!(s.server_handshake.as_deref(), Some(&[2u8; 32][..]));
        assert_eq!(s.client_traffic.as_deref(), Some(&[3u8; 32][..]));
        assert_eq!(s.server_traffic.as_deref(), Some(&[4u8; 32][..]));
        assert!(log.get(&[9; 32]).is_none());
    }

    proptest! {
        /// Any bytes: no panic, and every line lands in exactly one count.
        #[test]
        fn any_text_is_counted_line_by_line(text in proptest::collection::vec(any::<u8>(), 0..600)) {
            let mut log = KeyLog::new();
            log.add_text(&text);
            let s = log.stats();
            let lines = text.split(|&b| b == b'\n').count() as u64;
            prop_assert_eq!(s.secrets + s.comments + s.unknown_labels + s.malformed, lines);
        }
    }
}
