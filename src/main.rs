//! The `ctxasm` binary: parse the command line, run it, exit with the
//! status `cli::exit` assigns. Everything else is in `cli` (the program's
//! flags, handlers and printing) and the `ctxasm` library.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

mod cli;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::args::Cli::parse();
    cli::exit::exit_code(cli::run(args))
}
