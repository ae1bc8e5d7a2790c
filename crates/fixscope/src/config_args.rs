//! The command line with a configuration file folded in (#48). Each key of the file's table
//! for the subcommand becomes the argument it names (`port = 9878` → `--port=9878`),
//! placed before the real command line's, and clap parses the whole once: every flag's own
//! value parser judges the file's values too, and an error about an argument that came from
//! the file is told as `FILE:LINE`.
//!
//! Precedence — defaults < file < environment < command line — holds because a key is left
//! out when the command line gives its flag (clap would refuse it twice, or append) or when
//! its environment variable is set (clap lets any explicit argument beat `env`).

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches};

use crate::cli::Cli;
use crate::config_env;
use crate::config_file::{ConfigError, ConfigFile, FileSetting, FileValue};
use crate::config_keys::{suggestion, Family, Key, KeyKind, Schema, Table};

/// The only top-level key: the mode `fixscope run` runs.
pub const COMMAND_KEY: &str = "command";

/// Where a setting's value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    Default,
    /// The file, at this line.
    File(usize),
    /// The file, at this line, with the value the default has (nothing to pass on).
    FileSameAsDefault(usize),
    /// The file's URL, with the password of this environment variable.
    FileWithEnvPassword(usize, &'static str),
    Env(String),
    CommandLine,
    Unset,
}

impl Origin {
    /// `default`, `FILE:LINE`, `env VAR`, `command line`.
    pub fn describe(&self, file: &Path) -> String {
        match self {
            Origin::Default => "default".into(),
            Origin::File(line) => format!("{}:{line}", file.display()),
            Origin::FileSameAsDefault(line) => {
                format!("{}:{line} (the default)", file.display())
            }
            Origin::FileWithEnvPassword(line, var) => {
                format!("{}:{line}, password from env {var}", file.display())
            }
            Origin::Env(var) => format!("env {var}"),
            Origin::CommandLine => "command line".into(),
            Origin::Unset => "not set".into(),
        }
    }

    /// The JSON `source`: `default`, `file`, `env`, `command line`, `unset`.
    pub fn source(&self) -> &'static str {
        match self {
            Origin::Default => "default",
            Origin::File(_) | Origin::FileSameAsDefault(_) | Origin::FileWithEnvPassword(..) => {
                "file"
            }
            Origin::Env(_) => "env",
            Origin::CommandLine => "command line",
            Origin::Unset => "unset",
        }
    }

    pub fn line(&self) -> Option<usize> {
        match self {
            Origin::File(l) | Origin::FileSameAsDefault(l) | Origin::FileWithEnvPassword(l, _) => {
                Some(*l)
            }
            _ => None,
        }
    }
}

/// One key's effective setting.
#[derive(Clone, Debug)]
pub struct Setting {
    pub key: Key,
    /// As clap holds them (raw strings; a switch is `true`/`false`).
    pub values: Vec<String>,
    pub origin: Origin,
}

/// The arguments parsed, and where each of the subcommand's settings came from.
pub struct Resolved {
    pub matches: ArgMatches,
    /// The subcommand parsed (`["live"]`).
    pub path: Vec<String>,
    pub file: Option<ConfigFile>,
    /// The subcommand's settings (empty for a subcommand without a table, or no file).
    pub settings: Vec<Setting>,
    /// Required arguments neither the file nor the command line gave (lenient parses only).
    pub missing: Vec<String>,
    /// `valid keys of [live]: …`, for messages.
    pub valid: Option<String>,
}

/// Why the arguments could not be parsed.
#[derive(Debug)]
pub enum Failure {
    /// clap's own (usage, `--help`, `--version`): it prints and exits itself.
    Clap(clap::Error),
    /// The configuration file's, at a line.
    Config(ConfigError),
}

impl Resolved {
    /// The parsed command line.
    pub fn cli(&self) -> Result<Cli, Failure> {
        Cli::from_arg_matches(&self.matches).map_err(Failure::Clap)
    }

    /// An error found after parsing (a flag's value checked by the run, e.g. `--timeout`'s
    /// range) told at the file's line when it names a flag the file set.
    pub fn locate(&self, err: anyhow::Error) -> anyhow::Error {
        let Some(file) = &self.file else {
            return err;
        };
        let text = format!("{err:#}");
        let from_file = self
            .settings
            .iter()
            .filter_map(|s| Some((s, s.origin.line()?)))
            .filter_map(|(s, line)| Some((mentioned_at(&text, &s.key.flag())?, s, line)))
            .min_by_key(|(at, _, _)| *at);
        match from_file {
            Some((_, s, line)) => anyhow::Error::new(file.error(
                line,
                format!("`{}`: {text}", s.key.name),
                self.valid.clone(),
            )),
            None => err,
        }
    }
}

/// Where `flag` (`--port`) is named in `text`, as a whole word.
fn mentioned_at(text: &str, flag: &str) -> Option<usize> {
    text.match_indices(flag).map(|(at, _)| at).find(|&at| {
        let after = text[at + flag.len()..].chars().next();
        !after.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_')
    })
}

/// `--config FILE` (or `--config=FILE`) anywhere before `--`.
pub fn config_path(argv: &[OsString]) -> Option<PathBuf> {
    let mut args = argv.iter().skip(1);
    while let Some(arg) = args.next() {
        let arg = arg.to_string_lossy();
        if arg == "--" {
            return None;
        }
        if arg == "--config" {
            return args.next().map(PathBuf::from);
        }
        if let Some(path) = arg.strip_prefix("--config=") {
            return Some(PathBuf::from(path));
        }
    }
    None
}

/// The subcommand named at the start of `argv` (`["sim", "exchange"]`) and the index just
/// after it, where the file's arguments go.
fn subcommand_at(argv: &[OsString]) -> (Vec<String>, usize) {
    let root = Cli::command();
    let mut command = &root;
    let (mut path, mut at) = (Vec::new(), 1);
    while command.has_subcommands() && at < argv.len() {
        let arg = argv[at].to_string_lossy();
        if arg == "--config" {
            at += 2;
            continue;
        }
        if arg.starts_with("--config=") {
            at += 1;
            continue;
        }
        match command.find_subcommand(arg.as_ref()) {
            Some(sub) => {
                path.push(sub.get_name().to_string());
                command = sub;
                at += 1;
            }
            None => break,
        }
    }
    (path, at.min(argv.len()))
}

/// Parses the command line as `main` does: with `--config FILE`, the file folded in.
pub fn parse(argv: Vec<OsString>) -> Result<Resolved, Failure> {
    resolve(argv, false)
}

/// As [`parse`]; `lenient` lets required arguments be missing (`config check` of a table
/// the command line will complete), listed in [`Resolved::missing`].
pub fn resolve(mut argv: Vec<OsString>, lenient: bool) -> Result<Resolved, Failure> {
    let Some(path) = config_path(&argv) else {
        let matches = Cli::command()
            .try_get_matches_from(&argv)
            .map_err(Failure::Clap)?;
        let (path, _) = subcommand_at(&argv);
        return Ok(Resolved {
            matches,
            path,
            file: None,
            settings: Vec::new(),
            missing: Vec::new(),
            valid: None,
        });
    };
    let file = ConfigFile::load(&path).map_err(Failure::Config)?;
    let schema = Schema::of(Cli::command());
    let planned = plan(&file, &schema).map_err(Failure::Config)?;
    let (mut sub, mut at) = subcommand_at(&argv);
    if sub == ["run"] {
        let mode = mode_of(&file, &schema).map_err(Failure::Config)?;
        argv.splice(at - 1..at, mode.iter().map(OsString::from));
        (sub, at) = subcommand_at(&argv);
    }
    let Some(table) = schema.table(&sub) else {
        // `config …`, `run` without a mode: nothing of the file applies.
        let matches = Cli::command()
            .try_get_matches_from(&argv)
            .map_err(Failure::Clap)?;
        return Ok(Resolved {
            matches,
            path: sub,
            file: Some(file),
            settings: Vec::new(),
            missing: Vec::new(),
            valid: None,
        });
    };
    let planned: Vec<&Planned<'_>> = planned.iter().filter(|p| p.table == sub).collect();
    let Folded { origins, injected } = fold(&mut argv, at, &sub, table, &file, planned)?;

    let mut missing = Vec::new();
    let matches = match Cli::command().try_get_matches_from(&argv) {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::MissingRequiredArgument => {
            missing = context_strings(&e, ContextKind::InvalidArg);
            if !lenient {
                return Err(Failure::Config(file.error(
                    0,
                    format!(
                        "{} needs {}: set it in the file's {} table or on the command line",
                        sub.join(" "),
                        missing.join(", "),
                        table.header()
                    ),
                    None,
                )));
            }
            Cli::command()
                .ignore_errors(true)
                .try_get_matches_from(&argv)
                .map_err(Failure::Clap)?
        }
        Err(e) => return Err(blame(e, &file, table, &injected)),
    };
    let leaf = leaf_of(&matches, &sub);
    let settings = table
        .keys
        .iter()
        .map(|key| {
            let values: Vec<String> = leaf
                .get_raw(&key.id)
                .map(|v| v.map(|s| s.to_string_lossy().into_owned()).collect())
                .unwrap_or_default();
            let origin = origins
                .iter()
                .find(|(id, _)| *id == key.id)
                .map(|(_, o)| o.clone())
                .unwrap_or_else(|| match leaf.value_source(&key.id) {
                    Some(ValueSource::CommandLine) => Origin::CommandLine,
                    Some(ValueSource::EnvVariable) => {
                        Origin::Env(key.env.clone().unwrap_or_default())
                    }
                    Some(_) => Origin::Default,
                    None => Origin::Unset,
                });
            Setting {
                key: key.clone(),
                values,
                origin,
            }
        })
        .collect();
    Ok(Resolved {
        matches,
        path: sub,
        file: Some(file),
        settings,
        missing,
        valid: Some(format!(
            "valid keys of {}: {}",
            table.header(),
            table.names()
        )),
    })
}

/// The file's settings of the subcommand, as arguments in `argv` at `at` (before the command
/// line's own), less those a higher layer gives.
struct Folded<'a> {
    /// Where each key the file set ended up (file, env, the default).
    origins: Vec<(String, Origin)>,
    /// The settings passed on, with their values as shown (for clap's errors).
    injected: Vec<(&'a Planned<'a>, String)>,
}

fn fold<'a>(
    argv: &mut Vec<OsString>,
    at: usize,
    sub: &[String],
    table: &Table,
    file: &ConfigFile,
    planned: Vec<&'a Planned<'a>>,
) -> Result<Folded<'a>, Failure> {
    let given = given_on_command_line(argv, sub, table);
    let mut origins: Vec<(String, Origin)> = Vec::new();
    let (mut options, mut positionals) = (Vec::new(), Vec::new());
    let mut injected: Vec<(&Planned<'_>, String)> = Vec::new();
    let positional_given = table
        .keys
        .iter()
        .any(|k| k.long.is_none() && given.contains(&k.id));
    let root = built(Cli::command());
    let leaf_command = leaf_command_of(&root, sub);
    for p in planned {
        let key = p.key;
        if given.contains(&key.id)
            || (key.long.is_none() && positional_given)
            || conflicts_with_given(leaf_command, &key.id, &given)
        {
            continue;
        }
        if let Some(var) = key.env.as_ref().filter(|v| std::env::var_os(v).is_some()) {
            origins.push((key.id.clone(), Origin::Env(var.clone())));
            continue;
        }
        let line = p.setting.line;
        if p.same_as_default() {
            origins.push((key.id.clone(), Origin::FileSameAsDefault(line)));
            continue;
        }
        let mut values = p.values.clone();
        let mut origin = Origin::File(line);
        if key.name == "clickhouse" {
            if let Some(bare) = values
                .first()
                .and_then(|u| config_env::clickhouse_url_for_env(u))
            {
                values = vec![bare];
                origin = Origin::FileWithEnvPassword(line, config_env::CLICKHOUSE_PASSWORD);
            }
        }
        origins.push((key.id.clone(), origin));
        let shown = values.join(" ");
        match (&key.long, key.kind) {
            (Some(long), KeyKind::Switch) => options.push(format!("--{long}")),
            (Some(long), KeyKind::Count) => {
                let n = p.count;
                options.extend((0..n).map(|_| format!("--{long}")));
            }
            (Some(long), _) => options.extend(values.iter().map(|v| format!("--{long}={v}"))),
            (None, _) => positionals.push((key, p.setting.line, values)),
        }
        injected.push((p, shown));
    }
    let tail = argv.split_off(at);
    argv.extend(options.into_iter().map(OsString::from));
    // Positional arguments in the order the command takes them, none skipped.
    let order = |key: &Key| table.keys.iter().position(|k| k.id == key.id);
    positionals.sort_by_key(|(key, _, _)| order(key));
    let earlier = table.keys.iter().filter(|k| k.long.is_none());
    for (expected, (key, line, _)) in earlier.zip(&positionals) {
        if expected.id != key.id {
            return Err(Failure::Config(file.error(
                *line,
                format!("`{}` needs `{}` set too", key.name, expected.name),
                None,
            )));
        }
    }
    argv.extend(
        positionals
            .into_iter()
            .flat_map(|(_, _, values)| values)
            .map(OsString::from),
    );
    argv.extend(tail);
    Ok(Folded { origins, injected })
}

/// The mode the file's `command` names (`["sim", "exchange"]` for `"sim exchange"`).
pub fn mode_of(file: &ConfigFile, schema: &Schema) -> Result<Vec<String>, ConfigError> {
    let valid = || Some(format!("valid commands: {}", schema.names()));
    let Some(setting) = file.top_level(COMMAND_KEY) else {
        return Err(file.error(
            0,
            format!("`fixscope run` needs the mode: a top-level `{COMMAND_KEY} = \"live\"`"),
            valid(),
        ));
    };
    let mode: Vec<String> = match &setting.value {
        FileValue::String(s) => s
            .split([' ', '.'])
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect(),
        other => {
            return Err(file.error(
                setting.line,
                format!("`{COMMAND_KEY}` is a string, got {}", other.type_name()),
                valid(),
            ))
        }
    };
    match schema.table(&mode) {
        Some(_) => Ok(mode),
        None => Err(file.error(
            setting.line,
            format!("`{COMMAND_KEY}`: no mode `{}`", mode.join(" ")),
            valid(),
        )),
    }
}

/// A setting of the file matched to its key, its values ready for the command line.
pub struct Planned<'a> {
    pub table: Vec<String>,
    pub setting: &'a FileSetting,
    pub key: &'a Key,
    /// The values (a switch: none).
    pub values: Vec<String>,
    /// A switch: whether it is on; a count: how many times.
    pub count: usize,
}

impl Planned<'_> {
    /// Whether the file gives what the default already is (then nothing is passed on, so
    /// `link = "auto"` from the example needs no `--leg`).
    fn same_as_default(&self) -> bool {
        match self.key.kind {
            KeyKind::Switch | KeyKind::Count => self.count == 0,
            KeyKind::Value | KeyKind::Values => {
                self.values.is_empty() || self.values == self.key.defaults
            }
        }
    }
}

/// Every setting of the file matched to a key of the schema, or the first that is not
/// (unknown table or key, wrong type, set twice), with the valid keys.
pub fn plan<'a>(file: &'a ConfigFile, schema: &'a Schema) -> Result<Vec<Planned<'a>>, ConfigError> {
    let mut planned: Vec<Planned<'a>> = Vec::new();
    for setting in &file.settings {
        if setting.table.is_empty() {
            if setting.key != COMMAND_KEY {
                return Err(unknown_top_level(file, schema, setting));
            }
            mode_of(file, schema)?;
            continue;
        }
        let (table, key) = key_of(file, schema, setting)?;
        if let Some(earlier) = planned
            .iter()
            .find(|p| p.table == table.path && p.key.id == key.id)
        {
            return Err(file.error(
                setting.line,
                format!(
                    "{} sets `{}` again (line {} set it)",
                    setting.name(),
                    key.name,
                    earlier.setting.line
                ),
                None,
            ));
        }
        let (values, count) = values_of(file, table, key, setting)?;
        planned.push(Planned {
            table: table.path.clone(),
            setting,
            key,
            values,
            count,
        });
    }
    Ok(planned)
}

fn unknown_top_level(file: &ConfigFile, schema: &Schema, setting: &FileSetting) -> ConfigError {
    let owner = schema
        .tables
        .iter()
        .find(|t| t.key(&setting.key).is_some())
        .map(|t| format!(" (a key of {}: put it under that table)", t.header()))
        .unwrap_or_default();
    file.error(
        setting.line,
        format!("unknown top-level key `{}`{owner}", setting.key),
        Some(format!(
            "valid at the top: `{COMMAND_KEY}` and the tables {}",
            schema.names()
        )),
    )
}

/// The table and key a setting names: `[live] port`, or `[live.prometheus] sessions`.
fn key_of<'a>(
    file: &ConfigFile,
    schema: &'a Schema,
    setting: &FileSetting,
) -> Result<(&'a Table, &'a Key), ConfigError> {
    let path = &setting.table;
    if let Some(table) = schema.table(path) {
        return match table.key(&setting.key) {
            Some(key) => Ok((table, key)),
            None => Err(unknown_key(file, schema, table, setting, None)),
        };
    }
    // `[live.prometheus]`: a family of the table above.
    if let Some((family, parent)) = path.split_last() {
        if let Some((table, family)) = schema
            .table(parent)
            .and_then(|t| Some((t, t.family(family)?)))
        {
            return match table.family_key(family, &setting.key) {
                Some(key) => Ok((table, key)),
                None => Err(unknown_key(file, schema, table, setting, Some(family))),
            };
        }
    }
    let message = match schema.is_parent(path) {
        true => format!(
            "[{}] has no keys of its own: its subcommands' tables do",
            path.join(".")
        ),
        false => {
            let names: Vec<String> = schema.tables.iter().map(|t| t.path.join(".")).collect();
            let wanted = path.join(".");
            match suggestion(&wanted, names.iter().map(String::as_str)) {
                Some(near) => format!("unknown table [{wanted}] (did you mean [{near}]?)"),
                None => format!("unknown table [{wanted}]"),
            }
        }
    };
    Err(file.error(
        setting.line,
        message,
        Some(format!("valid tables: {}", schema.names())),
    ))
}

fn unknown_key(
    file: &ConfigFile,
    schema: &Schema,
    table: &Table,
    setting: &FileSetting,
    family: Option<&Family>,
) -> ConfigError {
    let header = match family {
        Some(f) => format!("[{}.{}]", table.path.join("."), f.name),
        None => table.header(),
    };
    let names: Vec<String> = match family {
        Some(f) => table
            .keys
            .iter()
            .filter(|k| f.has(&k.name))
            .map(|k| f.short_name(&k.name).to_string())
            .collect(),
        None => table.keys.iter().map(|k| k.name.clone()).collect(),
    };
    let mut message = format!("unknown key `{}` in {header}", setting.key);
    let elsewhere = schema.tables.iter().find(|t| t.key(&setting.key).is_some());
    if let Some(other) = elsewhere {
        message.push_str(&format!(
            " (`{}` is a key of {})",
            setting.key,
            other.header()
        ));
    } else if let Some(near) = suggestion(&setting.key, names.iter().map(String::as_str)) {
        message.push_str(&format!(" (did you mean `{near}`?)"));
    }
    let valid = match family {
        Some(_) => names.join(", "),
        None => table.names(),
    };
    file.error(
        setting.line,
        message,
        Some(format!("valid keys of {header}: {valid}")),
    )
}

/// The setting's value as arguments, or why its type does not fit the key.
fn values_of(
    file: &ConfigFile,
    table: &Table,
    key: &Key,
    setting: &FileSetting,
) -> Result<(Vec<String>, usize), ConfigError> {
    let wrong = |wanted: String| {
        file.error(
            setting.line,
            format!(
                "{} takes {wanted}, got {}",
                setting.name(),
                setting.value.type_name()
            ),
            Some(format!(
                "valid keys of {}: {}",
                table.header(),
                table.names()
            )),
        )
    };
    let what = || match &key.value_name {
        Some(v) => format!("a value ({v})"),
        None => "a value".to_string(),
    };
    match (key.kind, &setting.value) {
        (KeyKind::Switch, FileValue::Bool(on)) => Ok((Vec::new(), usize::from(*on))),
        (KeyKind::Switch, _) => Err(wrong("true or false".into())),
        (KeyKind::Count, FileValue::Integer(n)) if (0..=255).contains(n) => {
            Ok((Vec::new(), *n as usize))
        }
        (KeyKind::Count, _) => Err(wrong("a count (0 to 255)".into())),
        (KeyKind::Values, FileValue::Array(items)) => items
            .iter()
            .map(|item| item.as_arg().ok_or(()))
            .collect::<Result<Vec<_>, ()>>()
            .map(|v| (v, 0))
            .map_err(|()| wrong(format!("an array of strings or numbers ({})", what()))),
        (KeyKind::Value | KeyKind::Values, value) => match value.as_arg() {
            Some(v) => Ok((vec![v], 0)),
            None => Err(wrong(match key.kind {
                KeyKind::Value => what(),
                _ => format!("{} or an array of them", what()),
            })),
        },
    }
}

/// The ids of `table`'s arguments the command line itself gives.
fn given_on_command_line(argv: &[OsString], path: &[String], table: &Table) -> HashSet<String> {
    let Ok(matches) = Cli::command()
        .ignore_errors(true)
        .try_get_matches_from(argv)
    else {
        return HashSet::new();
    };
    let leaf = leaf_of(&matches, path);
    table
        .keys
        .iter()
        .filter(|k| leaf.value_source(&k.id) == Some(ValueSource::CommandLine))
        .map(|k| k.id.clone())
        .collect()
}

fn built(mut command: clap::Command) -> clap::Command {
    command.build();
    command
}

fn leaf_command_of<'c>(root: &'c clap::Command, path: &[String]) -> &'c clap::Command {
    let mut leaf = root;
    for name in path {
        match leaf.find_subcommand(name) {
            Some(sub) => leaf = sub,
            None => break,
        }
    }
    leaf
}

/// Whether the command line gives a flag that `id` conflicts with (`--format text` there
/// replaces the file's `json = true`).
fn conflicts_with_given(command: &clap::Command, id: &str, given: &HashSet<String>) -> bool {
    command
        .get_arguments()
        .find(|a| a.get_id() == id)
        .is_some_and(|arg| {
            command
                .get_arg_conflicts_with(arg)
                .iter()
                .any(|c| given.contains(c.get_id().as_str()))
        })
}

fn leaf_of<'m>(matches: &'m ArgMatches, path: &[String]) -> &'m ArgMatches {
    let mut leaf = matches;
    for name in path {
        match leaf.subcommand_matches(name) {
            Some(m) => leaf = m,
            None => break,
        }
    }
    leaf
}

fn context_strings(err: &clap::Error, kind: ContextKind) -> Vec<String> {
    match err.get(kind) {
        Some(ContextValue::String(s)) => vec![s.clone()],
        Some(ContextValue::Strings(v)) => v.clone(),
        _ => Vec::new(),
    }
}

/// clap's refusal of an argument the file gave, told at the file's line; others stay clap's.
fn blame(
    err: clap::Error,
    file: &ConfigFile,
    table: &Table,
    injected: &[(&Planned<'_>, String)],
) -> Failure {
    let named: Vec<String> = [ContextKind::InvalidArg, ContextKind::PriorArg]
        .into_iter()
        .flat_map(|k| context_strings(&err, k))
        .collect();
    let culprit = named.iter().find_map(|n| {
        injected.iter().find(|(p, _)| {
            let flag = p.key.flag();
            n == &flag
                || n.starts_with(&format!("{flag} "))
                || n.starts_with(&format!("{flag}="))
                || (p.key.long.is_none() && n.starts_with(&flag))
        })
    });
    let Some((planned, shown)) = culprit else {
        return Failure::Clap(err);
    };
    let rendered = err.to_string();
    let said = rendered
        .trim_start_matches("error: ")
        .split("\n\n")
        .next()
        .unwrap_or_default()
        .trim_end();
    Failure::Config(file.error(
        planned.setting.line,
        format!("{} = {shown}: {said}", planned.setting.name()),
        Some(format!(
            "valid keys of {}: {}",
            table.header(),
            table.names()
        )),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_config_path_is_found_anywhere_before_a_double_dash() {
        assert_eq!(
            config_path(&argv(&[
                "fixscope", "live", "--config", "a.toml", "-i", "lo"
            ])),
            Some(PathBuf::from("a.toml"))
        );
        assert_eq!(
            config_path(&argv(&["fixscope", "--config=b.toml", "pcap"])),
            Some(PathBuf::from("b.toml"))
        );
        assert_eq!(
            config_path(&argv(&[
                "fixscope", "config", "check", "--", "--config", "x"
            ])),
            None
        );
    }

    #[test]
    fn the_subcommand_is_found_past_a_leading_config() {
        assert_eq!(
            subcommand_at(&argv(&[
                "fixscope", "--config", "f", "sim", "exchange", "--x"
            ])),
            (vec!["sim".to_string(), "exchange".to_string()], 5)
        );
        assert_eq!(
            subcommand_at(&argv(&["fixscope", "live", "-i", "lo"])),
            (vec!["live".to_string()], 2)
        );
    }

    #[test]
    fn a_flag_is_named_as_a_whole_word() {
        assert_eq!(mentioned_at("--by-limit 3 and --by", "--by"), Some(17));
        assert_eq!(mentioned_at("--prometheus-sessions", "--prometheus"), None);
    }

    #[test]
    fn a_flag_with_an_env_attribute_is_read_from_the_environment_before_the_file() {
        // No flag of the CLI has `env` today: a command that has one shows the rule.
        let command = clap::Command::new("t").arg(
            clap::Arg::new("x")
                .long("x")
                .env("FIXSCOPE_CONFIG_ARGS_TEST_X"),
        );
        let key = Schema::of(clap::Command::new("r").subcommand(command)).tables[0].keys[0].clone();
        assert_eq!(key.env.as_deref(), Some("FIXSCOPE_CONFIG_ARGS_TEST_X"));
    }
}
