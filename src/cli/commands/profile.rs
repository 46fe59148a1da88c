//! `ctxasm profile extract`: a release profile from a capture or transcript.

use crate::cli::args::ExtractArgs;
use crate::cli::exit::{self, Outcome};
use crate::cli::output;
use std::io::Write;

pub fn extract(args: &ExtractArgs) -> anyhow::Result<Outcome> {
    let env = args.env.as_deref().map(ctxasm::env::SessionEnv::from_dir).transpose()?;
    // A capture that does not hold a profile is a finding about the data
    // (status 1), not bad usage.
    let profile = match ctxasm::assemble::extract::extract(&args.path, env.as_ref()) {
        Ok(p) => p,
        Err(e) => return Ok(exit::problem(e)),
    };
    let mut out = output::open(&args.output)?;
    out.write_all(profile.to_json().as_bytes())?;
    out.write_all(b"\n")?;
    out.flush()?;
    eprintln!(
        "ctxasm: profile {} ({} layout, {} tools, {} static + {} dynamic sections) from {}",
        profile.name,
        profile.layout.name,
        profile.tools.len(),
        profile.prompt.static_sections.len(),
        profile.prompt.dynamic_sections.len(),
        args.path.display()
    );
    Ok(Outcome::Clean)
}
