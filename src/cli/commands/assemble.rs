//! `ctxasm assemble`: the request bodies of every turn, in the batch or the
//! dedup format; the summary on stderr.

use crate::cli::args::{AssembleArgs, Format};
use crate::cli::exit::Outcome;
use crate::cli::settings::{self, Input};
use crate::cli::{input, output, render};
use std::time::Instant;

pub fn run(args: &AssembleArgs) -> anyhow::Result<Outcome> {
    let start = Instant::now();
    let Input { disc, run } = Input::resolve(&args.input);
    let assembler = settings::assembler(&args.pipeline, &args.identity)?;
    let opts = ctxasm::write::AssembleOptions { assembler, turns: args.turns };
    let mut summary = match args.format {
        Format::Batch => {
            let mut out = output::open(&args.output)?;
            ctxasm::write::write_batch(&disc, &run, &opts, &mut out)?
        }
        Format::Dedup => {
            if args.output.as_os_str() == "-" {
                anyhow::bail!("--format dedup needs -o DIR");
            }
            ctxasm::write::write_dedup(&disc, &run, &opts, &args.output)?
        }
    };
    summary.diagnostics.splice(0..0, disc.diagnostics.iter().cloned());
    if args.json {
        match serde_json::to_string(&summary) {
            Ok(text) => eprintln!("{text}"),
            Err(e) => eprintln!("ctxasm: {e}"),
        }
    } else {
        render::assemble_summary(&summary, start.elapsed().as_secs_f64(), args.format == Format::Dedup);
    }
    if input::failed(&disc) {
        return Ok(Outcome::Fatal);
    }
    if args.strict && !summary.diagnostics.is_empty() {
        return Ok(Outcome::Problems);
    }
    Ok(Outcome::Clean)
}
