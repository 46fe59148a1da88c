//! `ctxasm verify`: rebuilt requests checked against the transcript's
//! message hashes and, with `--wire`, a capture.

use crate::cli::args::VerifyArgs;
use crate::cli::exit::Outcome;
use crate::cli::settings::{self, Input};
use crate::cli::{input, output, render};
use ctxasm::input::shard::session_ids;

pub fn run(args: &VerifyArgs) -> anyhow::Result<Outcome> {
    let Input { disc, mut run, shard } = Input::resolve(&args.input)?;
    // Building requests reads no usage: its lines' trees are smaller.
    run.read.fields = ctxasm::input::Fields::Requests;
    if let Some(s) = &shard {
        eprintln!("ctxasm: {}", s.describe(&disc));
    }
    let mut wire: Option<ctxasm::verify::Wire> = None;
    for path in &args.wire {
        let all = wire.get_or_insert_with(Default::default);
        for (k, mut v) in ctxasm::verify::read_wire(path)? {
            all.entry(k).or_default().append(&mut v);
        }
    }
    if let (Some(_), Some(w)) = (&shard, wire.as_mut()) {
        // The capture's requests of the other shards' sessions are theirs;
        // those of a session no transcript holds stay (each shard says so).
        let all = session_ids(&settings::discovery(&args.input));
        let mine = session_ids(&disc);
        w.retain(|sid, _| mine.contains(sid) || !all.contains(sid));
        if w.is_empty() {
            eprintln!("ctxasm: the capture holds no request of this shard's sessions: nothing to compare");
            wire = None;
        }
    }
    let from_wire = args.identity.device_id.as_deref() == Some("wire");
    let device = if from_wire { ctxasm::verify::DeviceId::FromWire } else { ctxasm::verify::DeviceId::Given };
    let (assembler, notes) = settings::assembler(&args.pipeline, &args.identity)?;
    let report = ctxasm::verify::verify(&disc, &run, &assembler, wire.as_ref(), device);
    // On stderr (the JSON is on stdout), and only where the pipeline ran:
    // the profile's notes say nothing of sessions replayed from records.
    if report.pipeline_sessions > 0 {
        for n in &notes {
            eprintln!("ctxasm: {n}");
        }
    }
    if args.json {
        output::json(&report)?;
    } else {
        output::text(&render::verify_table(&report, wire.is_some()))?;
    }
    if input::failed(&disc) {
        return Ok(Outcome::Fatal);
    }
    Ok(if report.clean() { Outcome::Clean } else { Outcome::Problems })
}
