//! `ctxasm assemble`: the request bodies of every turn, in the batch or the
//! dedup format; the summary on stderr.

use crate::cli::args::{AssembleArgs, Format};
use crate::cli::exit::{NothingFound, Outcome};
use crate::cli::settings::{self, Input};
use crate::cli::{input, output, render};
use std::time::Instant;

pub fn run(args: &AssembleArgs) -> anyhow::Result<Outcome> {
    let start = Instant::now();
    let Input { mut disc, mut run, shard } = Input::resolve(&args.input)?;
    // Building requests reads no usage: its lines' trees are smaller.
    run.read.fields = ctxasm::input::Fields::Requests;
    if let Some(s) = &shard {
        eprintln!("ctxasm: {}", s.describe(&disc));
    }
    // Never read back what this run writes (`assemble DIR -o DIR/out.jsonl`).
    let excluded = input::exclude_output(&mut disc, &args.output);
    let (assembler, notes) = settings::assembler(&args.pipeline, &args.identity)?;
    let opts = ctxasm::write::AssembleOptions { assembler, turns: args.turns };
    let mut summary = match args.format {
        Format::Batch => {
            let mut out = output::open(&args.output)?;
            let spill = ctxasm::write::Spill::to(out.scratch_dir());
            let summary = ctxasm::write::write_batch_spilling(&disc, &run, &opts, &mut out, &spill)?;
            // Nothing to write leaves no file (the error below says why);
            // a shard writes its output, empty or not.
            if summary.requests_written > 0 || shard.is_some() {
                out.finish()?;
            }
            summary
        }
        Format::Dedup => {
            if args.output.as_os_str() == "-" {
                anyhow::bail!("--format dedup needs -o DIR");
            }
            ctxasm::write::write_dedup_store(&disc, &run, &opts, &args.output, shard.is_some())?
        }
    };
    if excluded > 0 {
        eprintln!("ctxasm: {} not read: the output of this run", render::count(excluded as u64, "file"));
    }
    summary.diagnostics.splice(0..0, disc.diagnostics.iter().cloned());
    // The profile's notes matter only where the pipeline ran.
    let notes = if summary.pipeline_sessions > 0 { notes } else { Vec::new() };
    if args.json {
        let mut value = serde_json::to_value(&summary)?;
        if !notes.is_empty() {
            value["notes"] = serde_json::json!(notes);
        }
        eprintln!("{value}");
    } else {
        for n in &notes {
            eprintln!("ctxasm: {n}");
        }
        let secs = start.elapsed().as_secs_f64();
        eprint!("{}", render::assemble_summary(&summary, secs, args.format == Format::Dedup, &args.output));
    }
    if input::failed(&disc) {
        return Ok(Outcome::Fatal);
    }
    // Records that could not be rebuilt are not "nothing found": the
    // diagnostics say why each one was lost.
    if summary.requests_written == 0 && summary.recorded_requests > 0 && !summary.diagnostics.is_empty() {
        if !args.json {
            eprintln!(
                "ctxasm: {} recorded, none written: the diagnostics above say why",
                render::count(summary.recorded_requests, "request")
            );
        }
        return Ok(Outcome::Problems);
    }
    // A shard of a corpus that holds a request may hold none: its output
    // is written, empty, for the others to be merged with.
    if summary.requests_written == 0 && shard.is_none() {
        return Err(NothingFound(format!(
            "{} read, no request to write: no assistant message came from the API{}",
            render::count(summary.sessions, "session"),
            if args.pipeline.mode == crate::cli::args::Mode::Records {
                " (--mode records replays api-request records only; try --mode auto)"
            } else {
                ""
            }
        ))
        .into());
    }
    if args.strict && !summary.diagnostics.is_empty() {
        return Ok(Outcome::Problems);
    }
    Ok(Outcome::Clean)
}
