//! `fixscope`: FIX request→response latency from TCP traffic — live (eBPF), offline (pcap),
//! and a built-in FIX exchange simulator to try it on.

mod by_warning;
mod cli;
mod cli_check;
mod cli_config;
mod cli_demo;
mod cli_legs;
mod cli_md;
mod cli_packaging;
mod cli_points;
mod cli_prometheus;
mod cli_protocol;
mod cli_records;
mod cli_text;
mod cli_tls;
mod cmd_check;
mod cmd_compare;
mod cmd_config;
mod cmd_demo;
mod cmd_live;
mod cmd_manpages;
mod cmd_pcap;
mod cmd_plot;
mod cmd_points;
mod cmd_report;
mod cmd_sim;
mod cmd_tap;
mod compare;
mod config_args;
mod config_env;
mod config_example;
mod config_file;
mod config_keys;
mod driver;
mod html;
mod keys;
mod link_discovery;
mod output;
mod plot;
mod privilege;
mod progress;
mod prometheus;
#[cfg(feature = "records")]
mod records;
#[cfg(not(feature = "records"))]
#[path = "records_absent.rs"]
mod records;
mod reopen;
mod say;
mod settings_check;
mod trace;
mod tui;
mod user_db;

use std::process::ExitCode;

use config_args::Failure;

fn main() -> ExitCode {
    let cli = match parse_args() {
        Ok(cli) => cli,
        Err(Failure::Clap(e)) => e.exit(),
        Err(Failure::Config(e)) => {
            say::error(e);
            return ExitCode::from(2);
        }
    };
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

/// The command line, with `--config FILE`'s settings folded in and checked before the run
/// (a refused value is told at the file's line).
fn parse_args() -> Result<cli::Cli, Failure> {
    let resolved = config_args::parse(std::env::args_os().collect())?;
    let cli = resolved.cli()?;
    if resolved.file.is_some() {
        if let Err(e) = settings_check::check(&cli.command) {
            let e = resolved.locate(e);
            return Err(match e.downcast::<config_file::ConfigError>() {
                Ok(e) => Failure::Config(e),
                Err(e) => Failure::Config(config_file::ConfigError {
                    file: resolved.file.map(|f| f.path).unwrap_or_default(),
                    line: 0,
                    message: format!("{e:#}"),
                    valid: None,
                }),
            });
        }
    }
    Ok(cli)
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
        cli::Command::Config(cmd) => cmd_config::run(&cmd, cli.config.as_deref()),
        cli::Command::Run(_) => anyhow::bail!(
            "`fixscope run` needs --config FILE, whose top-level `command` names the mode \
             (e.g. command = \"live\")"
        ),
        cli::Command::Completions(args) => cmd_manpages::completions(&args),
        cli::Command::Manpages(args) => cmd_manpages::manpages(&args),
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
