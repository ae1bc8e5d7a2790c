//! `fixscope completions SHELL` and the hidden `fixscope manpages DIR`: both generated from
//! the CLI definition the binary parses with, so they can never describe another version's
//! flags. A binary command rather than a build step: the definition (cli.rs) needs the whole
//! workspace, which a build script cannot import, and a user of the bare static binary (no
//! package) can still install completions with one command.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::CommandFactory;

use crate::cli::Cli;
use crate::cli_packaging::{CompletionsArgs, ManpagesArgs};

/// The binary's name in completions and pages (what users type).
const BIN: &str = "fixscope";

pub fn completions(args: &CompletionsArgs) -> Result<ExitCode> {
    let mut cmd = Cli::command();
    clap_complete::generate(args.shell, &mut cmd, BIN, &mut std::io::stdout());
    Ok(ExitCode::SUCCESS)
}

pub fn manpages(args: &ManpagesArgs) -> Result<ExitCode> {
    write_manpages(&args.dir)?;
    Ok(ExitCode::SUCCESS)
}

/// fixscope.1 and, for every visible command at any depth, fixscope-CMD[-SUB].1.
fn write_manpages(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // clap_mangen names each page after the command's path (`fixscope-sim-exchange`) and
    // leaves hidden commands (this one) out.
    clap_mangen::generate_to(Cli::command(), dir)
        .with_context(|| format!("cannot write the manual pages into {}", dir.display()))
}
