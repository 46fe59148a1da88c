//! `ctxasm profile extract`: a release profile from a capture or transcript.

use crate::cli::args::ExtractArgs;
use crate::cli::exit::{self, Outcome};
use crate::cli::output;

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
    let mut text = profile.to_json();
    text.push('\n');
    if args.output.as_os_str() == "-" {
        output::text(&text)?;
    } else {
        output::write_atomic(&args.output, text.as_bytes())?;
    }
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

/// `ctxasm profile list`: the cached profiles, oldest release first.
pub fn list(args: &crate::cli::args::ListArgs) -> anyhow::Result<Outcome> {
    let Some(dir) = crate::cli::settings::profile_dir() else {
        anyhow::bail!("profile list: no cache directory (set CTXASM_CACHE_DIR, XDG_CACHE_HOME or HOME)");
    };
    let (shelf, errors) = ctxasm::profile::Shelf::open(&dir);
    for e in &errors {
        eprintln!("ctxasm: warning: cached profile skipped: {e}");
    }
    let rows: Vec<serde_json::Value> = shelf
        .profiles
        .iter()
        .map(|s| {
            serde_json::json!({
                "version": s.version.to_string(),
                "layout": s.profile.layout.name,
                "tools": s.profile.tools.len(),
                "models": s.profile.models.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
                "path": s.path.display().to_string(),
            })
        })
        .collect();
    if args.json {
        let mut text = String::new();
        for r in &rows {
            text.push_str(&r.to_string());
            text.push('\n');
        }
        output::text(&text)?;
    } else {
        output::text(&crate::cli::render::profile_list(&dir, &rows))?;
    }
    Ok(if errors.is_empty() { Outcome::Clean } else { Outcome::Problems })
}
