//! `fixscope sim exchange|client`: the built-in FIX exchange simulator and load client.

use std::process::ExitCode;

use anyhow::Result;
use fixscope_core::shutdown::Shutdown;
use fixscope_sim::{run_client, run_exchange};

use crate::cli::SimCommand;
use crate::say;

pub fn run(cmd: &SimCommand) -> Result<ExitCode> {
    let shutdown = Shutdown::on_signals()?;
    match cmd {
        SimCommand::Exchange(args) => {
            let summary = run_exchange(args, &shutdown, |addr| {
                say::info(format!("sim exchange: listening on {addr}"));
            })?;
            say::info(summary);
        }
        SimCommand::Client(args) => {
            let report = run_client(args, &shutdown)?;
            println!("{report}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
