//! The configuration file's schema, read off the clap definition (#48): one table per
//! subcommand (`[live]`, `[sim.exchange]`), one key per long flag (its long name) or
//! positional argument (its name, `-` for `_`). A flag added to the CLI is a key of the file
//! with no other change, and its own value parser judges the file's values.

use clap::{ArgAction, Command};

/// Flag families that may be written as a sub-table: in `[live.prometheus]`, key `sessions`
/// is `prometheus-sessions`, and the family's own flag (`--prometheus`) is the key named
/// here (`listen`), since TOML cannot have both a key `prometheus` and a table of that name
/// in `[live]`. Every key may also be written in full in the subcommand's table.
pub const FAMILIES: &[Family] = &[Family {
    name: "prometheus",
    own_key: "listen",
}];

/// A flag family written as a sub-table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Family {
    /// The family's flag and the prefix of its other flags.
    pub name: &'static str,
    /// The key of the family's own flag in the sub-table.
    pub own_key: &'static str,
}

impl Family {
    /// Whether `key` (a long name) belongs to the family: the flag itself or `NAME-…`.
    pub fn has(&self, key: &str) -> bool {
        key.strip_prefix(self.name)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
    }

    /// `key`'s name in the sub-table (`listen`, `sessions`).
    pub fn short_name<'k>(&self, key: &'k str) -> &'k str {
        match key.strip_prefix(self.name) {
            Some("") => self.own_key,
            Some(rest) => rest.trim_start_matches('-'),
            None => key,
        }
    }
}

/// Subcommands without a table: `config` and `run` read configuration files themselves;
/// `completions` and `manpages` write what packages install, and have nothing to configure.
const NOT_CONFIGURABLE: &[&str] = &["config", "run", "completions", "manpages"];

/// Arguments that are not settings.
const NOT_KEYS: &[&str] = &["config", "help", "version"];

/// How a key's TOML value becomes arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    /// `true` is the bare flag, `false` leaves it out (`--full`).
    Switch,
    /// An integer: the flag that many times.
    Count,
    /// One value (a string or a number).
    Value,
    /// Several values: an array (or one value), the flag repeated.
    Values,
}

impl KeyKind {
    pub fn name(self) -> &'static str {
        match self {
            KeyKind::Switch => "switch",
            KeyKind::Count => "count",
            KeyKind::Value => "value",
            KeyKind::Values => "values",
        }
    }
}

/// One key: a long flag or a positional argument of a subcommand.
#[derive(Clone, Debug)]
pub struct Key {
    /// The key in the file: the long flag's name, or the positional argument's.
    pub name: String,
    /// clap's id of the argument.
    pub id: String,
    /// `Some` for a flag (`--NAME`), `None` for a positional argument.
    pub long: Option<String>,
    pub kind: KeyKind,
    pub value_name: Option<String>,
    pub defaults: Vec<String>,
    pub possible: Vec<String>,
    pub help: String,
    /// The environment variable clap reads for it, if any (it beats the file).
    pub env: Option<String>,
}

impl Key {
    /// How the key is named on the command line (`--port`, `<CAPTURE>`).
    pub fn flag(&self) -> String {
        match &self.long {
            Some(long) => format!("--{long}"),
            None => format!("<{}>", self.value_name.as_deref().unwrap_or(&self.name)),
        }
    }
}

/// One subcommand's keys.
#[derive(Clone, Debug)]
pub struct Table {
    /// The subcommand's path: `["live"]`, `["sim", "exchange"]`.
    pub path: Vec<String>,
    pub about: String,
    pub keys: Vec<Key>,
}

impl Table {
    /// `[live]`, `[sim.exchange]`.
    pub fn header(&self) -> String {
        format!("[{}]", self.path.join("."))
    }

    pub fn key(&self, name: &str) -> Option<&Key> {
        self.keys.iter().find(|k| k.name == name)
    }

    /// The key `name` of the sub-table `[… .family]` (`sessions` of `prometheus`).
    pub fn family_key(&self, family: &Family, name: &str) -> Option<&Key> {
        match name == family.own_key {
            true => self.key(family.name),
            false => self.key(&format!("{}-{name}", family.name)),
        }
    }

    /// The families of this table that have keys (`prometheus` for live and pcap).
    pub fn families(&self) -> Vec<&'static Family> {
        FAMILIES
            .iter()
            .filter(|f| self.keys.iter().any(|k| k.name == f.name))
            .collect()
    }

    /// The family `name` names (`prometheus`), if this table has it.
    pub fn family(&self, name: &str) -> Option<&'static Family> {
        self.families().into_iter().find(|f| f.name == name)
    }

    /// Every key's name, for messages.
    pub fn names(&self) -> String {
        let mut names: Vec<String> = self.keys.iter().map(|k| k.name.clone()).collect();
        for family in self.families() {
            names.push(format!("[{}.{}] …", self.path.join("."), family.name));
        }
        names.join(", ")
    }
}

/// Every table of the file.
#[derive(Clone, Debug)]
pub struct Schema {
    pub tables: Vec<Table>,
}

impl Schema {
    /// The schema of a clap command (built here, so global flags and value counts are known).
    pub fn of(mut command: Command) -> Schema {
        command.build();
        let mut tables = Vec::new();
        collect(&command, &mut Vec::new(), &mut tables);
        Schema { tables }
    }

    pub fn table(&self, path: &[String]) -> Option<&Table> {
        self.tables.iter().find(|t| t.path == path)
    }

    /// Whether `path` leads to tables (`sim` for `[sim.exchange]`).
    pub fn is_parent(&self, path: &[String]) -> bool {
        self.tables
            .iter()
            .any(|t| t.path.len() > path.len() && t.path.starts_with(path))
    }

    /// Every table's name, for messages (`live, pcap, sim.exchange, …`).
    pub fn names(&self) -> String {
        let names: Vec<String> = self.tables.iter().map(|t| t.path.join(".")).collect();
        names.join(", ")
    }
}

fn collect(command: &Command, path: &mut Vec<String>, tables: &mut Vec<Table>) {
    for sub in command.get_subcommands() {
        let name = sub.get_name().to_string();
        // `help` is clap's own, at every level.
        if name == "help" || (path.is_empty() && NOT_CONFIGURABLE.contains(&name.as_str())) {
            continue;
        }
        path.push(name);
        if sub.has_subcommands() {
            collect(sub, path, tables);
        } else {
            tables.push(Table {
                path: path.clone(),
                about: sub.get_about().map(|a| a.to_string()).unwrap_or_default(),
                keys: sub.get_arguments().filter_map(key_of).collect(),
            });
        }
        path.pop();
    }
}

fn key_of(arg: &clap::Arg) -> Option<Key> {
    let id = arg.get_id().as_str();
    if NOT_KEYS.contains(&id) || arg.is_hide_set() {
        return None;
    }
    let long = arg.get_long().map(str::to_string);
    if long.is_none() && !arg.is_positional() {
        return None;
    }
    let many = arg.get_num_args().is_some_and(|n| n.max_values() > 1);
    let kind = match arg.get_action() {
        ArgAction::SetTrue | ArgAction::SetFalse => KeyKind::Switch,
        ArgAction::Count => KeyKind::Count,
        ArgAction::Append => KeyKind::Values,
        ArgAction::Set if many => KeyKind::Values,
        ArgAction::Set => KeyKind::Value,
        _ => return None,
    };
    let help = arg
        .get_long_help()
        .or(arg.get_help())
        .map(|h| h.to_string())
        .unwrap_or_default();
    Some(Key {
        name: long.clone().unwrap_or_else(|| id.replace('_', "-")),
        id: id.to_string(),
        long,
        kind,
        value_name: arg
            .get_value_names()
            .and_then(|v| v.first())
            .map(|v| v.to_string()),
        defaults: arg
            .get_default_values()
            .iter()
            .map(|v| v.to_string_lossy().into_owned())
            .collect(),
        possible: arg
            .get_possible_values()
            .iter()
            .filter(|p| !p.is_hide_set())
            .map(|p| p.get_name().to_string())
            .collect(),
        help,
        env: arg.get_env().map(|e| e.to_string_lossy().into_owned()),
    })
}

/// The closest of `names` to a mistyped `name`, if one is close enough to be meant.
pub fn suggestion<'a>(name: &str, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    names
        .into_iter()
        .map(|n| (strsim::jaro_winkler(name, n), n))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, n)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Schema {
        use clap::CommandFactory;
        Schema::of(crate::cli::Cli::command())
    }

    #[test]
    fn every_leaf_subcommand_is_a_table_and_sim_is_a_parent() {
        let s = schema();
        for path in [&["live"][..], &["pcap"], &["sim", "exchange"], &["detach"]] {
            let path: Vec<String> = path.iter().map(|p| p.to_string()).collect();
            assert!(s.table(&path).is_some(), "{path:?}");
        }
        assert!(s.is_parent(&["sim".to_string()]));
        assert!(s.table(&["config".to_string()]).is_none());
        assert!(s.table(&["run".to_string()]).is_none());
    }

    #[test]
    fn keys_are_long_names_with_their_kind() {
        let s = schema();
        let live = s.table(&["live".to_string()]).unwrap();
        assert_eq!(live.key("interface").unwrap().kind, KeyKind::Value);
        assert_eq!(live.key("tui").unwrap().kind, KeyKind::Switch);
        assert_eq!(live.key("leg").unwrap().kind, KeyKind::Values);
        assert_eq!(live.key("interval").unwrap().defaults, ["1"]);
        assert!(live.key("config").is_none() && live.key("help").is_none());
        let prometheus = live.family("prometheus").unwrap();
        assert_eq!(
            live.family_key(prometheus, "sessions").unwrap().name,
            "prometheus-sessions"
        );
        assert_eq!(
            live.family_key(prometheus, "listen").unwrap().name,
            "prometheus"
        );
        assert_eq!(prometheus.short_name("prometheus-by"), "by");
        assert!(!prometheus.has("prometheusx") && prometheus.has("prometheus"));
        let pcap = s.table(&["pcap".to_string()]).unwrap();
        assert_eq!(pcap.key("captures").unwrap().long, None);
    }

    #[test]
    fn a_typo_is_suggested() {
        assert_eq!(
            suggestion("intervall", ["interval", "interface", "port"]),
            Some("interval")
        );
        assert_eq!(suggestion("zzz", ["interval", "port"]), None);
    }
}
