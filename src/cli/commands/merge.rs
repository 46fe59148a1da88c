//! `ctxasm merge OUT DIR...`: dedup stores merged into one.

use crate::cli::args::MergeArgs;
use crate::cli::exit::Outcome;
use crate::cli::render::{count, size};

pub fn run(args: &MergeArgs) -> anyhow::Result<Outcome> {
    let s = ctxasm::write::merge_stores(&args.out, &args.dirs)?;
    if args.json {
        eprintln!("{}", serde_json::to_string(&s)?);
        return Ok(Outcome::Clean);
    }
    let ratio = if s.batch_bytes > 0 { (s.segment_bytes + s.recipe_bytes) as f64 / s.batch_bytes as f64 } else { 0.0 };
    eprintln!(
        "ctxasm: {} of {} merged into {}, {} (dedup: {}, {} equal ones collapsed, {:.1}% of the batch format's {})",
        count(s.requests, "request"),
        count(s.stores, "store"),
        args.out.display(),
        size(s.segment_bytes + s.recipe_bytes),
        count(s.segments, "segment"),
        s.segments_in - s.segments,
        ratio * 100.0,
        size(s.batch_bytes)
    );
    Ok(Outcome::Clean)
}
