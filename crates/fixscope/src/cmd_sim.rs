//! `fixscope sim exchange|client|router`: the built-in FIX exchange simulator, load client
//! and order router.

use std::process::ExitCode;

use anyhow::Result;
use fixscope_core::shutdown::Shutdown;
use fixscope_sim::{run_client, run_exchange, run_router};

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
        SimCommand::Router(args) => {
            let summary = run_router(args, &shutdown, |addr| {
                say::info(format!(
                    "sim router: listening on {addr}, venue {}",
                    args.venue
                ));
            })?;
            say::info(summary);
        }
    }
    Ok(ExitCode::SUCCESS)
}
