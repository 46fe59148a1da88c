//! `ctxasm expand`: the batch format of a dedup directory.

use crate::cli::args::ExpandArgs;
use crate::cli::exit::Outcome;
use crate::cli::output;

pub fn run(args: &ExpandArgs) -> anyhow::Result<Outcome> {
    let mut out = output::open(&args.output)?;
    ctxasm::write::expand(&args.dir, &mut out)?;
    // A failed expansion leaves no file (`out` dropped unfinished).
    out.finish()?;
    Ok(Outcome::Clean)
}
