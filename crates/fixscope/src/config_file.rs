//! A configuration file read (#48): TOML into settings that each know their table and line.
//! What the keys mean is the schema's business (`config_keys`, `config_args`); this file
//! knows only TOML, so every message about the file can name `FILE:LINE`.

use std::fmt;
use std::path::{Path, PathBuf};

use toml::de::{DeTable, DeValue};

/// A problem with a configuration file, at a line: `FILE:LINE: message`, then what is valid.
#[derive(Debug)]
pub struct ConfigError {
    pub file: PathBuf,
    /// 1-based; 0 when the problem is the whole file (it cannot be read).
    pub line: usize,
    pub message: String,
    /// What would have been accepted (`valid keys of [live]: …`).
    pub valid: Option<String>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            0 => write!(f, "{}: {}", self.file.display(), self.message)?,
            line => write!(f, "{}:{line}: {}", self.file.display(), self.message)?,
        }
        if let Some(valid) = &self.valid {
            write!(f, "\n  {valid}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigError {}

/// A TOML value, as the file wrote it.
#[derive(Clone, Debug, PartialEq)]
pub enum FileValue {
    Bool(bool),
    Integer(i64),
    Float(f64),
    String(String),
    Array(Vec<FileValue>),
    /// A date-time or an inline table: never a flag's value.
    Other(&'static str),
}

impl FileValue {
    /// What TOML calls its type, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            FileValue::Bool(_) => "a boolean",
            FileValue::Integer(_) => "an integer",
            FileValue::Float(_) => "a float",
            FileValue::String(_) => "a string",
            FileValue::Array(_) => "an array",
            FileValue::Other(kind) => kind,
        }
    }

    /// A scalar as a flag's value (`None` for a boolean, array or other).
    pub fn as_arg(&self) -> Option<String> {
        match self {
            FileValue::Integer(i) => Some(i.to_string()),
            FileValue::Float(x) => Some(x.to_string()),
            FileValue::String(s) => Some(s.clone()),
            FileValue::Bool(_) | FileValue::Array(_) | FileValue::Other(_) => None,
        }
    }
}

/// One `key = value` of a table.
#[derive(Clone, Debug)]
pub struct FileSetting {
    /// The table's path: `["live"]`, `["live", "prometheus"]`; empty at the top.
    pub table: Vec<String>,
    pub key: String,
    pub line: usize,
    pub value: FileValue,
}

impl FileSetting {
    /// `[live.prometheus] sessions`, for messages.
    pub fn name(&self) -> String {
        match self.table.is_empty() {
            true => format!("`{}` (top level)", self.key),
            false => format!("[{}] `{}`", self.table.join("."), self.key),
        }
    }
}

/// A configuration file, read.
#[derive(Clone, Debug)]
pub struct ConfigFile {
    pub path: PathBuf,
    /// Every `key = value` in the order of the file.
    pub settings: Vec<FileSetting>,
}

impl ConfigFile {
    pub fn load(path: &Path) -> Result<ConfigFile, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: path.to_path_buf(),
            line: 0,
            message: format!("cannot read the configuration file: {e}"),
            valid: None,
        })?;
        ConfigFile::parse(path, &text)
    }

    pub fn parse(path: &Path, text: &str) -> Result<ConfigFile, ConfigError> {
        let root = DeTable::parse(text).map_err(|e| {
            let line = e.span().map_or(1, |s| line_of(text, s.start));
            let mut message = format!("not valid TOML: {}", e.message().trim_end());
            if message.ends_with("duplicate key") {
                // The likely one: `prometheus = …` in [live] and a [live.prometheus] table.
                message.push_str(
                    " (a key and a table of the same name cannot both be: with \
                     [live.prometheus], its `listen` is [live]'s `prometheus`)",
                );
            }
            ConfigError {
                file: path.to_path_buf(),
                line,
                message,
                valid: None,
            }
        })?;
        let mut settings = Vec::new();
        flatten(text, root.get_ref(), &mut Vec::new(), &mut settings);
        settings.sort_by_key(|s| s.line);
        Ok(ConfigFile {
            path: path.to_path_buf(),
            settings,
        })
    }

    /// An error at `line` of this file.
    pub fn error(&self, line: usize, message: String, valid: Option<String>) -> ConfigError {
        ConfigError {
            file: self.path.clone(),
            line,
            message,
            valid,
        }
    }

    /// The top-level `key`, if the file sets it.
    pub fn top_level(&self, key: &str) -> Option<&FileSetting> {
        self.settings
            .iter()
            .find(|s| s.table.is_empty() && s.key == key)
    }
}

/// Tables become paths; every other value is a setting of the table it is in.
fn flatten(text: &str, table: &DeTable<'_>, path: &mut Vec<String>, out: &mut Vec<FileSetting>) {
    for (key, value) in table.iter() {
        if let DeValue::Table(inner) = value.get_ref() {
            path.push(key.get_ref().to_string());
            flatten(text, inner, path, out);
            path.pop();
            continue;
        }
        out.push(FileSetting {
            table: path.clone(),
            key: key.get_ref().to_string(),
            line: line_of(text, key.span().start),
            value: value_of(value.get_ref()),
        });
    }
}

fn value_of(value: &DeValue<'_>) -> FileValue {
    match value {
        DeValue::Boolean(b) => FileValue::Bool(*b),
        DeValue::Integer(i) => i64::from_str_radix(&i.as_str().replace('_', ""), i.radix()).map_or(
            FileValue::Other("an integer out of range"),
            FileValue::Integer,
        ),
        DeValue::Float(x) => x
            .as_str()
            .replace('_', "")
            .parse()
            .map_or(FileValue::Other("a float"), FileValue::Float),
        DeValue::String(s) => FileValue::String(s.to_string()),
        DeValue::Array(items) => {
            FileValue::Array(items.iter().map(|v| value_of(v.get_ref())).collect())
        }
        DeValue::Datetime(_) => FileValue::Other("a date-time"),
        DeValue::Table(_) => FileValue::Other("a table"),
    }
}

/// The 1-based line of byte `offset`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ConfigFile, ConfigError> {
        ConfigFile::parse(Path::new("t.toml"), text)
    }

    #[test]
    fn settings_know_their_table_and_line() {
        let f = parse(
            "command = \"live\"\n\n[live]\ninterface = \"eth0\"\nport = 9878\n\n[live.prometheus]\nsessions = 4\n\
             [sim.exchange]\nstall = [\"1%:2s\", \"0.1%:5s\"]\nx = 2.5\n",
        )
        .unwrap();
        let got: Vec<(String, &str, usize, FileValue)> = f
            .settings
            .iter()
            .map(|s| (s.table.join("."), s.key.as_str(), s.line, s.value.clone()))
            .collect();
        let s = |v: &str| FileValue::String(v.into());
        assert_eq!(
            got,
            vec![
                ("".into(), "command", 1, s("live")),
                ("live".into(), "interface", 4, s("eth0")),
                ("live".into(), "port", 5, FileValue::Integer(9878)),
                (
                    "live.prometheus".into(),
                    "sessions",
                    8,
                    FileValue::Integer(4)
                ),
                (
                    "sim.exchange".into(),
                    "stall",
                    10,
                    FileValue::Array(vec![s("1%:2s"), s("0.1%:5s")])
                ),
                ("sim.exchange".into(), "x", 11, FileValue::Float(2.5)),
            ]
        );
        assert_eq!(f.top_level("command").unwrap().line, 1);
    }

    #[test]
    fn a_syntax_error_names_its_line() {
        let e = parse("[live]\nport = 9878\ninterface = eth0\n").unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        assert!(e.to_string().starts_with("t.toml:3: not valid TOML"), "{e}");
    }
}
