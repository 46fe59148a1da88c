//! `ctxasm bench-baseline` (hidden): the parse-only speed baseline of
//! scripts/bench-compare.

use crate::cli::args::InputArgs;
use crate::cli::exit::Outcome;
use crate::cli::{output, settings};

pub fn run(args: &InputArgs) -> anyhow::Result<Outcome> {
    let mut disc = settings::discovery(args);
    settings::apply_shard(args, &mut disc);
    let report = ctxasm::baseline::owned_dom(&disc, args.threads, &settings::source(args));
    output::json(&report)?;
    Ok(Outcome::Clean)
}
