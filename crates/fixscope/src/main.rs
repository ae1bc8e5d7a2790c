//! `fixscope`: FIX request→response latency from TCP traffic — live (eBPF), offline (pcap),
//! and a built-in FIX exchange simulator to try it on.

mod by_warning;
mod cli;
mod cli_demo;
mod cli_legs;
mod cli_points;
mod cli_prometheus;
mod cli_records;
mod cli_text;
mod cli_tls;
mod cmd_check;
mod cmd_compare;
mod cmd_demo;
mod cmd_live;
mod cmd_pcap;
mod cmd_plot;
mod cmd_points;
mod cmd_report;
mod cmd_sim;
mod cmd_tap;
mod compare;
mod driver;
mod html;
mod keys;
mod link_discovery;
mod output;
mod plot;
mod privilege;
mod progress;
mod prometheus;
mod records;
mod say;
mod trace;
mod tui;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            if output::is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            // One line, with the chain of causes.
            say::error(format!("{err:#}"));
            ExitCode::FAILURE
        }
    }
}

fn run(cli: cli::Cli) -> anyhow::Result<ExitCode> {
    let verbose = match &cli.command {
        cli::Command::Live(args) => args.analysis.verbose,
        cli::Command::Check(args) => args.verbose,
        _ => false,
    };
    fixscope_live::set_libbpf_logging(verbose);
    match cli.command {
        cli::Command::Pcap(mut args) => {
            args.analysis.resolve_ports()?;
            if args.points.given() {
                cmd_points::run(&args)
            } else {
                cmd_pcap::run(&args)
            }
        }
        cli::Command::Plot(args) => cmd_plot::run(&args),
        cli::Command::Demo(args) => cmd_demo::run(&args),
        cli::Command::Live(mut args) => {
            args.analysis.resolve_ports()?;
            if args.tap.tap {
                cmd_tap::run(&args)
            } else {
                cmd_live::run(&args)
            }
        }
        cli::Command::Sim(cmd) => cmd_sim::run(&cmd),
        cli::Command::Report(args) => cmd_report::run(&args),
        cli::Command::Compare(args) => cmd_compare::run(&args),
        cli::Command::Check(args) => cmd_check::run(&args),
        cli::Command::Detach(args) => {
            let removed = fixscope_live::detach_leftovers(&args.iface)?;
            println!(
                "removed {removed} fixscope tc filter(s) from {}",
                args.iface
            );
            Ok(std::process::ExitCode::SUCCESS)
        }
    }
}
