//! `ctxasm bench-send-baseline` (hidden): the send baseline of
//! scripts/bench-compare (N workers, no client-side limits).

use crate::cli::args::SendBaselineArgs;
use crate::cli::exit::Outcome;
use crate::cli::runtime::{self, Flavour};
use crate::cli::{input, settings};

pub fn run(args: &SendBaselineArgs) -> anyhow::Result<Outcome> {
    let input = input::read_requests(&args.input)?;
    let key = settings::api_key()?;
    let client = settings::client_config(&args.api, key, settings::timeout(args.timeout)?, args.concurrency);
    let rt = runtime::build(Flavour::CurrentThread)?;
    let summary = rt.block_on(ctxasm::send::baseline::run(
        &client,
        &input,
        &args.results,
        args.concurrency,
        args.max_attempts.max(1),
    ))?;
    eprintln!("{}", summary.line("bench-send-baseline"));
    Ok(Outcome::from_status(ctxasm::send::exit_status(&summary, input.errors.len())))
}
