//! The flags of `fixscope run` and `fixscope config …` (#48): configuration files.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Subcommand};

/// Where `fixscope config check` looks when it is given no file: what the package installs.
pub const DEFAULT_CONFIG_PATH: &str = "/etc/fixscope/fixscope.toml";

/// `fixscope run --config FILE [ARGS...]`: the file's `command` key names the mode.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// More arguments for the mode, after the file's (they override it).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "ARGS"
    )]
    pub args: Vec<OsString>,
}

#[derive(Subcommand, Debug)]
pub enum ConfigCommand {
    /// Validate a configuration file and print the effective settings, each with where it
    /// came from (default, FILE:LINE, env VAR, command line). Exit status 0 when valid.
    Check(ConfigCheckArgs),
    /// Print the commented default file (every key with its default and help): what the
    /// package installs as /etc/fixscope/fixscope.toml.
    Example,
    /// List every table and key of the file (the subcommands' long flags).
    Keys(ConfigKeysArgs),
}

#[derive(Args, Debug)]
pub struct ConfigCheckArgs {
    /// The file to check (default: `--config`, else /etc/fixscope/fixscope.toml).
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// The command line to check the file with, after `--`: the mode and its flags, e.g.
    /// `-- live -i eth1` (default: the file's `command`, else every table the file has).
    #[arg(last = true, value_name = "MODE ARGS")]
    pub command_line: Vec<OsString>,
    /// The settings as one JSON object (`tables[].settings[]`: key, values, source, line).
    #[arg(long)]
    pub json: bool,
    /// Print the parsed arguments as the program sees them (for tests: a key set in the
    /// file must parse as the same flag on the command line does).
    #[arg(long, hide = true)]
    pub parsed: bool,
}

#[derive(Args, Debug)]
pub struct ConfigKeysArgs {
    /// As JSON: every table's keys with their kind, value name, defaults, possible values,
    /// help and environment variable (what the tests walk).
    #[arg(long)]
    pub json: bool,
}
