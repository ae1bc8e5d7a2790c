//! `fixscope config example` (#48): the commented default file, written from the schema, so
//! every flag is in it with its default and help the moment it exists. The package installs
//! it as /etc/fixscope/fixscope.toml (`packaging/fixscope.toml`, kept equal by a test).

use std::fmt::Write;

use crate::config_args::COMMAND_KEY;
use crate::config_env::READ_BY_HAND;
use crate::config_keys::{Key, KeyKind, Schema, Table};

/// Help text is wrapped to this width (with its `# `).
const WIDTH: usize = 92;

const PREAMBLE: &str = "\
# fixscope configuration file. `fixscope config example` writes it; the package installs it as
# /etc/fixscope/fixscope.toml. Every key is commented out with its default: uncomment to set.
#
# One table per subcommand ([live], [pcap], [sim.exchange], ...). A key is the long flag's
# name (`port = 9878` is `--port 9878`) or a positional argument's (`captures = [\"a.pcap\"]`).
# A flag with a value takes a string or a number; a flag that may be repeated takes an array
# (`leg = [\"up=9878\", \"down=9001\"]`); a switch takes true or false (`tui = true`).
# The Prometheus flags may be written in a sub-table without their prefix: [live.prometheus]
# `listen = \"0.0.0.0:9874\"` is [live] `prometheus = \"0.0.0.0:9874\"`, `sessions = 8` is
# `prometheus-sessions = 8` (a file has one or the other: TOML has no key and table alike).
#
# Precedence: defaults < this file < environment (FIXSCOPE_*) < command line; a flag given
# on the command line replaces the file's key (a repeated flag's whole list, too).
#
# Run with `fixscope live --config FILE` (the [live] table), or `fixscope run --config FILE`
# (the table `command` names). `fixscope config check FILE` validates the file and prints
# every setting with where it came from; `fixscope config keys` lists the keys.
";

/// The whole example file.
pub fn example(schema: &Schema) -> String {
    let mut out = String::from(PREAMBLE);
    out.push_str("#\n# Environment variables read:\n");
    for (var, what) in READ_BY_HAND {
        let _ = writeln!(out, "#   {var}: {what}");
    }
    let modes: Vec<String> = schema.tables.iter().map(|t| t.path.join(" ")).collect();
    out.push('\n');
    comment(
        &mut out,
        &format!(
            "The mode `fixscope run --config FILE` runs (its table's settings): {}.",
            modes.join(", ")
        ),
    );
    let _ = writeln!(out, "# Not set by default.\n#{COMMAND_KEY} = \"live\"");
    for table in &schema.tables {
        write_table(&mut out, table);
    }
    out
}

fn write_table(out: &mut String, table: &Table) {
    let _ = write!(out, "\n{}\n", table.header());
    comment(
        out,
        &format!("fixscope {}: {}", table.path.join(" "), table.about),
    );
    let families = table.families();
    let in_a_family = |k: &Key| families.iter().any(|f| f.has(&k.name));
    for key in table.keys.iter().filter(|k| !in_a_family(k)) {
        write_key(out, key, &key.name);
    }
    for family in families {
        let _ = write!(out, "\n[{}.{}]\n", table.path.join("."), family.name);
        comment(
            out,
            &format!(
                "--{0} (as `{1}`) and the --{0}-* flags of fixscope {2}, without their prefix.",
                family.name,
                family.own_key,
                table.path.join(" ")
            ),
        );
        for key in table.keys.iter().filter(|k| family.has(&k.name)) {
            write_key(out, key, family.short_name(&key.name));
        }
    }
}

fn write_key(out: &mut String, key: &Key, name: &str) {
    out.push('\n');
    comment(out, &key.help);
    if !key.possible.is_empty() {
        comment(out, &format!("One of: {}.", key.possible.join(", ")));
    }
    if let Some(var) = &key.env {
        comment(out, &format!("Environment: {var} (beats this file)."));
    }
    let example = match (key.kind, key.defaults.is_empty()) {
        (KeyKind::Switch, _) => {
            let _ = writeln!(out, "# Default: false");
            "false".to_string()
        }
        (KeyKind::Count, _) => {
            let _ = writeln!(out, "# Default: 0");
            "0".to_string()
        }
        (_, false) => {
            let shown = literal_of(key, &key.defaults);
            let _ = writeln!(out, "# Default: {shown}");
            shown
        }
        (_, true) => {
            let _ = writeln!(out, "# Not set by default.");
            let placeholder = key.value_name.clone().unwrap_or_else(|| "VALUE".into());
            literal_of(key, &[placeholder])
        }
    };
    let _ = writeln!(out, "#{name} = {example}");
}

/// The TOML for `values`: an array for a repeated flag, a bare number when the text is one.
fn literal_of(key: &Key, values: &[String]) -> String {
    let items: Vec<String> = values.iter().map(|v| scalar(v)).collect();
    match key.kind {
        KeyKind::Values => format!("[{}]", items.join(", ")),
        _ => items.join(", "),
    }
}

/// A value as TOML: a bare number when the text is one, else a string.
pub fn scalar(text: &str) -> String {
    let number = text.parse::<i64>().is_ok_and(|i| i.to_string() == text)
        || (text.contains('.') && text.parse::<f64>().is_ok_and(|x| x.to_string() == text));
    match number {
        true => text.to_string(),
        false => toml::Value::String(text.to_string()).to_string(),
    }
}

/// `text` as `# ` lines, wrapped; paragraphs kept.
fn comment(out: &mut String, text: &str) {
    for (i, paragraph) in text.trim().split("\n\n").enumerate() {
        if i > 0 {
            out.push_str("#\n");
        }
        let mut line = String::from("#");
        for word in paragraph.split_whitespace() {
            if line.len() + 1 + word.len() > WIDTH && line.len() > 1 {
                out.push_str(&line);
                out.push('\n');
                line = String::from("#");
            }
            line.push(' ');
            line.push_str(word);
        }
        out.push_str(&line);
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_bare_and_the_rest_quoted() {
        assert_eq!(scalar("10000"), "10000");
        assert_eq!(scalar("0.5"), "0.5");
        assert_eq!(scalar("007"), "\"007\"");
        assert_eq!(scalar("5m"), "\"5m\"");
        assert_eq!(scalar("a\"b"), "'a\"b'");
    }

    #[test]
    fn help_is_wrapped_under_the_width() {
        let mut out = String::new();
        comment(&mut out, &"word ".repeat(60));
        assert!(out.lines().all(|l| l.len() <= WIDTH && l.starts_with("# ")));
        assert!(out.lines().count() > 2);
    }
}
