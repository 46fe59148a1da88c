//! `ctxasm expand`: the batch format of a dedup directory.

use crate::cli::args::ExpandArgs;
use crate::cli::exit::Outcome;
use crate::cli::{output, render};

pub fn run(args: &ExpandArgs) -> anyhow::Result<Outcome> {
    let mut out = output::open(&args.output)?;
    let requests = ctxasm::write::expand(&args.dir, &mut out)?;
    // A failed expansion leaves no file (`out` dropped unfinished).
    out.finish()?;
    let to = if args.output.as_os_str() == "-" { "stdout".to_string() } else { args.output.display().to_string() };
    eprintln!(
        "ctxasm: {} of {} written to {to}, every segment checked against its hash",
        render::count(requests, "request"),
        args.dir.display()
    );
    Ok(Outcome::Clean)
}
