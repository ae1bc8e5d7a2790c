//! Stand-alone driver for the simulator (the `fixscope sim` subcommands do the same):
//!
//! ```text
//! cargo run --release -p fixscope-sim --example sim -- exchange --listen 127.0.0.1:9878
//! cargo run --release -p fixscope-sim --example sim -- router --venue 127.0.0.1:9878 --slice 2
//! cargo run --release -p fixscope-sim --example sim -- client --connect 127.0.0.1:9879 --window 256 --duration 10
//! ```

use clap::{Parser, Subcommand};
use fixscope_sim::{
    run_client, run_exchange, run_router, ClientArgs, ExchangeArgs, RouterArgs, Shutdown,
};

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    Exchange(ExchangeArgs),
    Client(ClientArgs),
    Router(RouterArgs),
}

fn main() -> anyhow::Result<()> {
    let shutdown = Shutdown::on_signals()?;
    match Cli::parse().cmd {
        Cmd::Exchange(args) => {
            let summary = run_exchange(&args, &shutdown, |addr| eprintln!("listening on {addr}"))?;
            println!("{summary}");
        }
        Cmd::Client(args) => println!("{}", run_client(&args, &shutdown)?),
        Cmd::Router(args) => {
            let summary = run_router(&args, &shutdown, |addr| eprintln!("listening on {addr}"))?;
            println!("{summary}");
        }
    }
    Ok(())
}
