//! `ctxasm stats`: the counts and defects of a corpus.

use crate::cli::args::StatsArgs;
use crate::cli::exit::Outcome;
use crate::cli::settings::Input;
use crate::cli::{input, output, progress};
use ctxasm::corpus::RunOptions;
use std::time::Instant;

pub fn run(args: &StatsArgs) -> anyhow::Result<Outcome> {
    let start = Instant::now();
    let Input { disc, run, shard } = Input::resolve(&args.input)?;
    if let Some(s) = &shard {
        eprintln!("ctxasm: {}", s.describe(&disc));
    }
    let bar = progress::reading(&disc);
    let tick = progress::ticker(&bar);
    let st = ctxasm::stats::collect(&disc, &RunOptions { progress: Some(&tick), ..run });
    progress::finish(&bar);
    if args.json {
        output::json(&st)?;
    } else {
        output::text(&ctxasm::stats::render_table(&st, start.elapsed().as_secs_f64(), args.show))?;
    }
    if input::failed(&disc) {
        input::print_discovery(&disc);
        return Ok(Outcome::Fatal);
    }
    if args.strict && !st.diagnostics.is_empty() {
        eprintln!("ctxasm: {} diagnostic(s) and --strict", st.diagnostics.len());
        return Ok(Outcome::Problems);
    }
    Ok(Outcome::Clean)
}
