//! `fixscope check`'s flags.

use clap::Args;

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Print the findings as one JSON object (field names are a contract, see
    /// docs/kernels.md) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also print libbpf's messages (a rejected program's verifier log).
    #[arg(short = 'v', long)]
    pub verbose: bool,
}
