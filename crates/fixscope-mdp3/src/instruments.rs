//! SecurityID → symbol. MDP 3.0's book, trade and volume entries carry only the
//! instrument's SecurityID; its Symbol and SecurityGroup are in the instrument
//! definitions (MDInstrumentDefinitionFuture54 and the other definition templates),
//! sent on the instrument definition feed and, when an instrument is added or changed
//! mid-week, on the incremental feed. [`Instruments`] learns them from decoded
//! definitions; a capture that holds none (a definition feed not captured) can be given
//! the map as a file, `--instruments FILE`:
//!
//! ```text
//! # security_id,symbol
//! security_id,symbol
//! 1234,ESZ6
//! 5678,NQZ6
//! ```
//!
//! One instrument a line, `security_id,symbol`, the SecurityID a decimal i32; blank lines
//! and lines starting with `#` are skipped, and a first line `security_id,symbol` is a
//! header. A bad line is an error naming the file and line, never skipped silently. A
//! definition seen on the wire replaces a file's entry (the wire is the venue's word).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::messages::{InstrumentDefinition, Message};

/// One instrument's names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Instrument {
    pub symbol: String,
    /// Empty when only a file named it.
    pub security_group: String,
}

/// Why an instruments file could not be read.
#[derive(Debug)]
pub enum InstrumentsError {
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    /// Line `line` (from 1) is not `security_id,symbol`.
    Line {
        path: PathBuf,
        line: usize,
        text: String,
    },
}

impl std::fmt::Display for InstrumentsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InstrumentsError::Io { path, error } => write!(f, "{}: {error}", path.display()),
            InstrumentsError::Line { path, line, text } => write!(
                f,
                "{}:{line}: expected `security_id,symbol` (an integer, a name), got {text:?}",
                path.display()
            ),
        }
    }
}

impl std::error::Error for InstrumentsError {}

/// SecurityID → instrument.
#[derive(Clone, Debug, Default)]
pub struct Instruments {
    by_id: HashMap<i32, Instrument>,
}

impl Instruments {
    pub fn new() -> Self {
        Self::default()
    }

    /// The `--instruments FILE` map (the module doc has the format).
    pub fn load_csv(path: &Path) -> Result<Self, InstrumentsError> {
        let text = std::fs::read_to_string(path).map_err(|error| InstrumentsError::Io {
            path: path.to_path_buf(),
            error,
        })?;
        Self::from_csv(&text).map_err(|(line, text)| InstrumentsError::Line {
            path: path.to_path_buf(),
            line,
            text,
        })
    }

    /// The map of a file's text; the error is the bad line's number (from 1) and text.
    pub fn from_csv(text: &str) -> Result<Self, (usize, String)> {
        let mut out = Self::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if i == 0 && line.eq_ignore_ascii_case("security_id,symbol") {
                continue;
            }
            let bad = || (i + 1, raw.to_string());
            let (id, symbol) = line.split_once(',').ok_or_else(bad)?;
            let id: i32 = id.trim().parse().map_err(|_| bad())?;
            let symbol = symbol.trim();
            if symbol.is_empty() || symbol.contains(',') {
                return Err(bad());
            }
            out.by_id.insert(
                id,
                Instrument {
                    symbol: symbol.to_string(),
                    security_group: String::new(),
                },
            );
        }
        Ok(out)
    }

    /// Learns from a decoded message, if it is an instrument definition; `true` if so.
    pub fn learn(&mut self, m: &Message<'_>) -> bool {
        match m {
            Message::InstrumentDefinition(d) => {
                self.define(d);
                true
            }
            _ => false,
        }
    }

    /// Adds (or replaces) a definition's instrument; a deletion (`D`) removes it.
    pub fn define(&mut self, d: &InstrumentDefinition<'_>) {
        if d.security_update_action == Some(b'D') {
            self.by_id.remove(&d.security_id);
            return;
        }
        self.by_id.insert(
            d.security_id,
            Instrument {
                symbol: String::from_utf8_lossy(d.symbol).into_owned(),
                security_group: String::from_utf8_lossy(d.security_group).into_owned(),
            },
        );
    }

    pub fn get(&self, security_id: i32) -> Option<&Instrument> {
        self.by_id.get(&security_id)
    }

    /// The symbol of `security_id`, if known.
    pub fn symbol(&self, security_id: i32) -> Option<&str> {
        self.get(security_id).map(|i| i.symbol.as_str())
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{decode, encode};

    #[test]
    fn definitions_on_the_wire_name_instruments_and_replace_a_files() {
        let mut m =
            Instruments::from_csv("security_id,symbol\n# ES\n1234, ESZ6\n\n5678,NQZ6\n").unwrap();
        assert_eq!(
            (m.len(), m.symbol(1234), m.symbol(5678)),
            (2, Some("ESZ6"), Some("NQZ6"))
        );
        let def = encode::instrument_definition_future(1234, b"ESH7", b"ES");
        assert!(m.learn(&decode(&def).unwrap()));
        let i = m.get(1234).unwrap();
        assert_eq!(
            (i.symbol.as_str(), i.security_group.as_str()),
            ("ESH7", "ES")
        );
        assert!(!m.learn(&decode(&encode::heartbeat()).unwrap()));
        assert_eq!(m.symbol(42), None);
    }

    #[test]
    fn a_bad_line_is_an_error_naming_it() {
        assert_eq!(
            Instruments::from_csv("1,A\nx,B\n").unwrap_err(),
            (2, "x,B".to_string())
        );
        assert_eq!(Instruments::from_csv("1\n").unwrap_err().0, 1);
        assert_eq!(Instruments::from_csv("1,\n").unwrap_err().0, 1);
        assert_eq!(Instruments::from_csv("1,A,B\n").unwrap_err().0, 1);
        let dir = std::env::temp_dir().join(format!("mdp3-instruments-{}", std::process::id()));
        let e = Instruments::load_csv(&dir.join("missing.csv")).unwrap_err();
        assert!(e.to_string().contains("missing.csv"), "{e}");
    }
}
