//! Flags of the commands that describe fixscope itself to the system it is installed on
//! (#48): shell completions for users, manual pages for packagers.

use std::path::PathBuf;

use clap::Args;

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

#[derive(Args, Debug)]
pub struct ManpagesArgs {
    /// The directory to write fixscope.1 and one fixscope-COMMAND.1 per command into
    /// (created when missing).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}
