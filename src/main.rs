//! Entry point: parse, set up logging, run, report the error chain once.

use std::process::ExitCode;

use assisted_boot_reporter::{agent, cli};
use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    cli::init_tracing(cli.log_level);
    match cli::run(cli) {
        Ok(code) => code,
        Err(err) => {
            // One line with the whole chain: journald shows it as a single entry.
            tracing::error!("{err:#}");
            agent::EXIT_RUNTIME_FAILURE
        }
    }
}
