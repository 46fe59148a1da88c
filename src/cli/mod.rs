//! The command line of the `ctxasm` binary (not part of the library): the
//! flags (`args`), their resolution into library options (`settings`), one
//! handler per subcommand (`commands`), and the one place each of the exit
//! policy, signals, the async runtime and progress bars is set up. All
//! printing of the program happens here; the library only returns values.

pub mod args;
pub mod commands;
pub mod exit;
pub mod input;
pub mod output;
pub mod progress;
pub mod render;
pub mod settings;

#[cfg(feature = "net")]
pub mod runtime;
#[cfg(feature = "net")]
pub mod signal;

use args::{Cli, Command, ProfileCommand};
use exit::Outcome;

/// Run the parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<Outcome> {
    match cli.command {
        Command::Stats(args) => commands::stats::run(&args),
        Command::Assemble(args) => commands::assemble::run(&args),
        Command::Verify(args) => commands::verify::run(&args),
        Command::Expand(args) => commands::expand::run(&args),
        Command::Merge(args) => commands::merge::run(&args),
        Command::Profile(ProfileCommand::Extract(args)) => commands::profile::extract(&args),
        #[cfg(feature = "net")]
        Command::Profile(ProfileCommand::Capture(args)) => commands::profile_capture::run(&args),
        Command::Profile(ProfileCommand::List(args)) => commands::profile::list(&args),
        Command::Cost(args) => commands::cost::run(&args),
        Command::Completions(args) => commands::docs::completions(&args),
        Command::Man(args) => commands::docs::man(&args),
        Command::BenchBaseline(args) => commands::bench_baseline::run(&args),
        #[cfg(feature = "net")]
        Command::Send(args) => commands::send::run(&args),
        #[cfg(feature = "net")]
        Command::Batch(cmd) => commands::batch::run(&cmd),
        #[cfg(feature = "net")]
        Command::MockServer(args) => commands::mock_server::run(args),
        #[cfg(feature = "net")]
        Command::BenchSendBaseline(args) => commands::bench_send_baseline::run(&args),
        #[cfg(feature = "net")]
        Command::MockMcp(args) => commands::mock_mcp::run(&args),
    }
}
