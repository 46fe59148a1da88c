//! `ctxasm profile extract`: a release profile from a capture or transcript.

use crate::cli::args::ExtractArgs;
use crate::cli::exit::{self, Outcome};
use crate::cli::output;
use std::io::Write;

pub fn extract(args: &ExtractArgs) -> anyhow::Result<Outcome> {
    if !args.env.is_empty() && args.env.len() != args.paths.len() {
        anyhow::bail!(
            "profile extract: {} captures and {} --env: give one --env per capture, in order, or none",
            args.paths.len(),
            args.env.len()
        );
    }
    let envs: Vec<ctxasm::env::SessionEnv> =
        args.env.iter().map(|d| ctxasm::env::SessionEnv::from_dir(d)).collect::<Result<_, _>>()?;
    let captures: Vec<(&std::path::Path, Option<&ctxasm::env::SessionEnv>)> =
        args.paths.iter().enumerate().map(|(i, p)| (p.as_path(), envs.get(i))).collect();
    // A capture that does not hold a profile is a finding about the data
    // (status 1), not bad usage.
    let profile = match ctxasm::assemble::extract::extract_merged(&captures) {
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
        args.paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    );
    Ok(Outcome::Clean)
}
