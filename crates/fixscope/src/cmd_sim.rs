//! `fixscope sim exchange|client`: the built-in FIX exchange simulator and load client.

use std::process::ExitCode;

use anyhow::Result;
use fixscope_core::shutdown::Shutdown;
use fixscope_sim::{run_client, run_exchange};

use crate::cli::SimCommand;

pub fn run(cmd: &SimCommand) -> Result<ExitCode> {
    let shutdown = Shutdown::on_signals()?;
    match cmd {
        SimCommand::Exchange(args) => {
            let summary = run_exchange(args, &shutdown, |addr| {
                eprintln!("fixscope sim exchange: listening on {addr}");
            })?;
            eprintln!("{summary}");
        }
        SimCommand::Client(args) => {
            let report = run_client(args, &shutdown)?;
            println!("{report}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
