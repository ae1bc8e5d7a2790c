//! `fixscope config check | example | keys` (#48).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, Result};
use clap::CommandFactory;
use serde_json::{json, Value};

use crate::cli::Cli;
use crate::cli_config::{ConfigCheckArgs, ConfigCommand, ConfigKeysArgs, DEFAULT_CONFIG_PATH};
use crate::config_args::{self, Failure, Origin, Resolved, Setting};
use crate::config_env;
use crate::config_file::ConfigFile;
use crate::config_keys::{KeyKind, Schema};

pub fn run(command: &ConfigCommand, global_config: Option<&Path>) -> Result<ExitCode> {
    let schema = Schema::of(Cli::command());
    match command {
        ConfigCommand::Example => {
            print!("{}", crate::config_example::example(&schema));
            Ok(ExitCode::SUCCESS)
        }
        ConfigCommand::Keys(args) => keys(&schema, args),
        ConfigCommand::Check(args) => check(&schema, args, global_config),
    }
}

/// One parse `check` makes: a mode, and whether its required arguments must all be there.
struct Checked {
    resolved: Resolved,
    strict: bool,
}

fn check(schema: &Schema, args: &ConfigCheckArgs, global: Option<&Path>) -> Result<ExitCode> {
    let path: PathBuf = args
        .file
        .clone()
        .or_else(|| global.map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from(DEFAULT_CONFIG_PATH));
    let file = ConfigFile::load(&path)?;
    config_args::plan(&file, schema)?;
    // What to parse: the command line given, else the file's mode, with every other table
    // of the file checked as far as it goes (the command line may complete it).
    let mut runs: Vec<(Vec<OsString>, bool)> = Vec::new();
    let mode = match file.top_level(config_args::COMMAND_KEY) {
        Some(_) => Some(config_args::mode_of(&file, schema)?),
        None => None,
    };
    if !args.command_line.is_empty() {
        runs.push((args.command_line.clone(), true));
    } else {
        if let Some(mode) = &mode {
            runs.push((mode.iter().map(OsString::from).collect(), true));
        }
        let mut present: Vec<Vec<String>> = Vec::new();
        for setting in file.settings.iter().filter(|s| !s.table.is_empty()) {
            let table = match schema.table(&setting.table) {
                Some(t) => t.path.clone(),
                None => setting.table[..setting.table.len() - 1].to_vec(),
            };
            if Some(&table) != mode.as_ref() && !present.contains(&table) {
                present.push(table);
            }
        }
        runs.extend(
            present
                .into_iter()
                .map(|t| (t.into_iter().map(OsString::from).collect(), false)),
        );
    }
    let mut checked = Vec::new();
    for (command_line, strict) in runs {
        let mut argv = vec![
            OsString::from("fixscope"),
            OsString::from("--config"),
            path.clone().into_os_string(),
        ];
        argv.extend(command_line);
        let resolved = config_args::resolve(argv, !strict).map_err(|f| match f {
            Failure::Config(e) => anyhow!(e),
            Failure::Clap(e) => anyhow!("{}", clap_said(&e)),
        })?;
        if strict {
            let cli = resolved.cli().map_err(|f| match f {
                Failure::Config(e) => anyhow!(e),
                Failure::Clap(e) => anyhow!("{}", clap_said(&e)),
            })?;
            crate::settings_check::check(&cli.command).map_err(|e| resolved.locate(e))?;
            if args.parsed {
                println!("{:#?}", cli.command);
                return Ok(ExitCode::SUCCESS);
            }
        }
        checked.push(Checked { resolved, strict });
    }
    if args.json {
        println!("{}", report_json(&path, mode.as_deref(), &checked));
    } else {
        print!("{}", report_text(&path, &checked));
        crate::say::info(format!("{}: valid", path.display()));
    }
    Ok(ExitCode::SUCCESS)
}

/// clap's message without its `error: ` and usage lines.
fn clap_said(e: &clap::Error) -> String {
    let text = e.to_string();
    text.trim_start_matches("error: ")
        .split("\n\n")
        .next()
        .unwrap_or_default()
        .trim_end()
        .to_string()
}

/// A setting's value as the file would write it (a URL's password masked).
fn shown(setting: &Setting) -> String {
    let values: Vec<String> = setting
        .values
        .iter()
        .map(|v| match setting.key.name.as_str() {
            "clickhouse" => config_env::masked(v),
            _ => v.clone(),
        })
        .collect();
    let quoted: Vec<String> = values
        .iter()
        .map(|v| match setting.key.kind {
            KeyKind::Switch | KeyKind::Count => v.clone(),
            _ => crate::config_example::scalar(v),
        })
        .collect();
    match (setting.key.kind, quoted.len()) {
        (KeyKind::Values, _) => format!("[{}]", quoted.join(", ")),
        _ => quoted.join(", "),
    }
}

fn report_text(path: &Path, checked: &[Checked]) -> String {
    let mut out = String::new();
    for c in checked {
        let r = &c.resolved;
        out.push_str(&format!("[{}]", r.path.join(".")));
        match c.strict {
            true => out.push_str(&format!(
                "  # fixscope {} --config {}\n",
                r.path.join(" "),
                path.display()
            )),
            false => out.push_str("  # checked as far as the file goes\n"),
        }
        if !r.missing.is_empty() {
            out.push_str(&format!(
                "# the command line must give: {}\n",
                r.missing.join(", ")
            ));
        }
        let lines: Vec<(String, String)> = r
            .settings
            .iter()
            .filter(|s| s.origin != Origin::Unset)
            .map(|s| {
                (
                    format!("{} = {}", s.key.name, shown(s)),
                    s.origin.describe(path),
                )
            })
            .collect();
        let width = lines
            .iter()
            .map(|(l, _)| l.len())
            .max()
            .unwrap_or(0)
            .min(60);
        for (line, origin) in lines {
            out.push_str(&format!("{line:width$}  # {origin}\n"));
        }
        out.push('\n');
    }
    for (var, what) in config_env::set_by_hand() {
        out.push_str(&format!("# env {var} is set: {what}\n"));
    }
    out
}

fn report_json(path: &Path, mode: Option<&[String]>, checked: &[Checked]) -> Value {
    let tables: Vec<Value> = checked
        .iter()
        .map(|c| {
            let r = &c.resolved;
            let settings: Vec<Value> = r
                .settings
                .iter()
                .map(|s| {
                    json!({
                        "key": s.key.name,
                        "values": s.values.iter().map(|v| match s.key.name.as_str() {
                            "clickhouse" => config_env::masked(v),
                            _ => v.clone(),
                        }).collect::<Vec<_>>(),
                        "source": s.origin.source(),
                        "origin": s.origin.describe(path),
                        "line": s.origin.line(),
                        "env": match &s.origin {
                            Origin::Env(var) => Some(var.to_string()),
                            Origin::FileWithEnvPassword(_, var) => Some(var.to_string()),
                            _ => None,
                        },
                    })
                })
                .collect();
            json!({
                "table": r.path.join("."),
                "run": c.strict,
                "missing": r.missing,
                "settings": settings,
            })
        })
        .collect();
    let env: Vec<Value> = config_env::set_by_hand()
        .into_iter()
        .map(|(var, what)| json!({"var": var, "meaning": what}))
        .collect();
    json!({
        "file": path.display().to_string(),
        "command": mode.map(|m| m.join(" ")),
        "valid": true,
        "tables": tables,
        "environment": env,
    })
}

fn keys(schema: &Schema, args: &ConfigKeysArgs) -> Result<ExitCode> {
    if args.json {
        let tables: Vec<Value> = schema
            .tables
            .iter()
            .map(|t| {
                let keys: Vec<Value> = t
                    .keys
                    .iter()
                    .map(|k| {
                        json!({
                            "name": k.name,
                            "id": k.id,
                            "long": k.long,
                            "kind": k.kind.name(),
                            "value_name": k.value_name,
                            "defaults": k.defaults,
                            "possible": k.possible,
                            "help": k.help,
                            "env": k.env,
                        })
                    })
                    .collect();
                json!({
                    "table": t.path.join("."),
                    "path": t.path,
                    "families": t.families().iter().map(|f| json!({"name": f.name, "own_key": f.own_key})).collect::<Vec<_>>(),
                    "keys": keys,
                })
            })
            .collect();
        println!("{}", json!({ "tables": tables }));
        return Ok(ExitCode::SUCCESS);
    }
    for t in &schema.tables {
        println!("{}", t.header());
        for k in &t.keys {
            let mut about = vec![k.kind.name().to_string()];
            if let Some(v) = &k.value_name {
                about.push(v.clone());
            }
            if !k.defaults.is_empty() {
                about.push(format!("default {}", k.defaults.join(",")));
            }
            println!("  {:24} {}", k.name, about.join(", "));
        }
        for f in t.families() {
            println!(
                "  [{}.{}]: `{}` for --{1} and the {1}-* keys without `{1}-`",
                t.path.join("."),
                f.name,
                f.own_key
            );
        }
        println!();
    }
    Ok(ExitCode::SUCCESS)
}
