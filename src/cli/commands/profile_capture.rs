//! `ctxasm profile capture VERSION|--cli PATH`: the profile of a release,
//! made on this machine from what its CLI sends. Install (npm, into the
//! cache), run the probes against the in-process mock server, merge what
//! the extract probes show into one profile, check every probe against it
//! (the fidelity table), write it to the cache.

use crate::cli::args::CaptureArgs;
use crate::cli::exit::Outcome;
use crate::cli::output;
use crate::cli::runtime::{self, Flavour};
use crate::cli::settings;
use anyhow::Context;
use ctxasm::env::SessionEnv;
use ctxasm::probe::{Probe, ProbeRun};
use ctxasm::profile::{Profile, Shelf, Version};
use std::path::{Path, PathBuf};

pub fn run(args: &CaptureArgs) -> anyhow::Result<Outcome> {
    if let Some(dir) = &args.from {
        return from_kept(dir, &chosen_probes(&args.probes)?, args.output.as_deref());
    }
    let cache = settings::cache_dir().context("profile capture: no cache directory (set CTXASM_CACHE_DIR or HOME)")?;
    let cli = match (&args.cli, &args.version) {
        (Some(cli), _) => cli.clone(),
        (None, Some(v)) => {
            let dir = cache.join("cli").join(v);
            eprintln!("ctxasm: installing @anthropic-ai/claude-code@{v} into {} (npm)", dir.display());
            ctxasm::probe::install(v, &dir)?
        }
        (None, None) => anyhow::bail!("profile capture: give a VERSION or --cli PATH"),
    };
    let version = cli_version(&cli)?;
    if let Some(v) = &args.version
        && Version::parse(v) != Some(version)
    {
        anyhow::bail!("profile capture: {} says it is {version}, not {v}", cli.display());
    }
    let probes = chosen_probes(&args.probes)?;
    let scratch = cache.join("work").join(format!("{version}-{}", std::process::id()));
    let out = args.keep.clone().unwrap_or_else(|| scratch.join("captures"));
    let result = capture(&cli, &probes, &scratch.join("root"), &out, version, args.output.as_deref());
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

fn capture(
    cli: &Path,
    probes: &[Probe],
    root: &Path,
    out: &Path,
    version: Version,
    output: Option<&Path>,
) -> anyhow::Result<Outcome> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let rt = runtime::build(Flavour::MultiThread).context("profile capture")?;
    let mut runs: Vec<(ProbeRun, bool)> = Vec::new();
    for probe in probes {
        eprintln!("ctxasm: probe {} ({} step{})…", probe.name, probe.steps.len(), plural(probe.steps.len()));
        let run = rt.block_on(ctxasm::probe::run_probe(cli, probe, root, out, &path))?;
        for f in &run.failed_steps {
            eprintln!("ctxasm: probe {}: the CLI failed: {f} (see {})", probe.name, run.dir.join("cli.log").display());
        }
        runs.push((run, probe.extract));
    }
    finish(&runs, version, output)
}

/// `--from DIR`: the probes' captures kept by an earlier `--keep DIR`; the
/// release is the one `hello`'s snapshot names.
fn from_kept(dir: &Path, probes: &[Probe], output: Option<&Path>) -> anyhow::Result<Outcome> {
    let mut runs = Vec::new();
    for probe in probes {
        let d = dir.join(&probe.name);
        if d.join("wire.jsonl").is_file() {
            runs.push((
                ProbeRun { name: probe.name.clone(), dir: d, requests: 0, failed_steps: Vec::new() },
                probe.extract,
            ));
        } else {
            eprintln!("ctxasm: probe {}: no capture in {}", probe.name, d.display());
        }
    }
    let hello = SessionEnv::from_dir(&dir.join("hello/env"))
        .with_context(|| format!("profile capture --from {}: the hello probe's env/", dir.display()))?;
    let version = hello.cli_version.as_deref().and_then(Version::parse).with_context(|| {
        format!("profile capture --from {}: hello/env/env.json names no release (cli_version)", dir.display())
    })?;
    finish(&runs, version, output)
}

/// Merge, write and check the profile of the probes' captures.
fn finish(runs: &[(ProbeRun, bool)], version: Version, output: Option<&Path>) -> anyhow::Result<Outcome> {
    let profile = merged_profile(runs, version)?;
    let dest = match output {
        Some(p) => p.to_path_buf(),
        None => Shelf::path_for(&settings::profile_dir().unwrap_or_default(), version),
    };
    let mut text = profile.to_json();
    text.push('\n');
    output::write_atomic(&dest, text.as_bytes())?;
    eprintln!(
        "ctxasm: profile {version} ({} layout, {} tools, {} models) written to {}",
        profile.layout.name,
        profile.tools.len(),
        profile.models.len(),
        dest.display()
    );
    let exact = fidelity(runs, &profile)?;
    Ok(if exact { Outcome::Clean } else { Outcome::Problems })
}

/// The extract probes' captures merged, `hello`'s first; a probe whose
/// capture does not merge is named and left out (the others still count).
fn merged_profile(runs: &[(ProbeRun, bool)], version: Version) -> anyhow::Result<Profile> {
    let mut accepted: Vec<(PathBuf, SessionEnv)> = Vec::new();
    let mut last_error = None;
    for (run, extract) in runs {
        if !extract {
            continue;
        }
        if run.answered_without_model() {
            eprintln!(
                "ctxasm: probe {}: the CLI answered without asking the model (it has no such feature); not in the profile",
                run.name
            );
            continue;
        }
        let env = SessionEnv::from_dir(&run.dir.join("env"))?;
        let mut trial = accepted.clone();
        trial.push((run.dir.join("wire.jsonl"), env));
        match extract_all(&trial) {
            Ok(_) => accepted = trial,
            Err(e) => {
                eprintln!("ctxasm: probe {}: not in the profile: {e}", run.name);
                last_error = Some(e);
            }
        }
    }
    if accepted.is_empty() {
        let why = last_error.map(|e| e.to_string()).unwrap_or_else(|| "no probe ran".into());
        anyhow::bail!("profile capture: no probe of {version} gave a profile: {why}");
    }
    let mut profile = extract_all(&accepted)?;
    profile.version = version.to_string();
    // The checked subagent probe teaches what its agent's requests need.
    for (run, _) in runs.iter().filter(|(r, _)| r.name == "subagent") {
        ctxasm::assemble::extract::learn_subagent(&mut profile, &run.dir.join("wire.jsonl"))?;
    }
    Ok(profile)
}

fn extract_all(captures: &[(PathBuf, SessionEnv)]) -> Result<Profile, ctxasm::profile::ProfileError> {
    let refs: Vec<(&Path, Option<&SessionEnv>)> = captures.iter().map(|(p, e)| (p.as_path(), Some(e))).collect();
    ctxasm::assemble::extract::extract_merged(&refs)
}

/// Every probe verified in pipeline mode with the new profile; prints the
/// table; true when every conversation request of every probe is
/// byte-equal.
fn fidelity(runs: &[(ProbeRun, bool)], profile: &Profile) -> anyhow::Result<bool> {
    let mut table = format!(
        "{:<22} {:>8} {:>8} {:>10} {:>10}  {}\n",
        "probe", "requests", "compared", "byte-equal", "unmatched", "side calls (not rebuilt)"
    );
    let mut exact = true;
    for (run, _) in runs {
        let env = SessionEnv::from_dir(&run.dir.join("env"))?;
        let setup = ctxasm::assemble::pipeline::Setup {
            profile: profile.clone(),
            env: Some(env),
            overrides: Default::default(),
        };
        let assembler = ctxasm::assemble::Assembler {
            mode: ctxasm::assemble::Mode::Pipeline,
            pipeline: Some(setup),
            ..Default::default()
        };
        let wire =
            ctxasm::verify::read_wire(&run.dir.join("wire.jsonl")).with_context(|| format!("probe {}", run.name))?;
        let disc = ctxasm::input::discover::discover(&[run.dir.join("transcripts")]);
        let r = ctxasm::verify::verify(
            &disc,
            &ctxasm::corpus::RunOptions::default(),
            &assembler,
            Some(&wire),
            ctxasm::verify::DeviceId::FromWire,
        );
        // A probe the release has no feature for sent nothing to rebuild:
        // named so, not counted as a miss.
        let unsupported = r.wire_requests == 0 && run.answered_without_model();
        exact &= r.clean() || unsupported;
        table.push_str(&format!(
            "{:<22} {:>8} {:>8} {:>10} {:>10}  {}{}\n",
            run.name,
            r.wire_requests,
            r.wire_compared,
            r.wire_byte_equal,
            r.wire_unmatched,
            r.wire_side_calls,
            if unsupported { "  (not supported by this release: answered without the model)" } else { "" }
        ));
    }
    output::text(&table)?;
    Ok(exact)
}

/// The release a CLI binary says it is (`2.1.88 (Claude Code)`, on the
/// last line that names one).
fn cli_version(cli: &Path) -> anyhow::Result<Version> {
    let out = std::process::Command::new(cli)
        .arg("--version")
        .output()
        .with_context(|| format!("profile capture: cannot run {}", cli.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    // 1.0.x may print warnings first (a missing ~/.claude.json): the
    // release is the line that says it.
    let line = text.lines().rev().find(|l| Version::parse(l).is_some()).unwrap_or(&text);
    Version::parse(line).with_context(|| {
        format!("profile capture: {} --version printed {:?}, not a release number", cli.display(), text.trim())
    })
}

/// The probes `--probes` names (all when empty), `hello` always first.
fn chosen_probes(names: &[String]) -> anyhow::Result<Vec<Probe>> {
    let all = ctxasm::probe::probes();
    if let Some(bad) = names.iter().find(|n| !all.iter().any(|p| &p.name == *n)) {
        let known: Vec<&str> = all.iter().map(|p| p.name.as_str()).collect();
        anyhow::bail!("profile capture: no probe {bad:?} (probes: {})", known.join(", "));
    }
    Ok(all.into_iter().filter(|p| names.is_empty() || p.name == "hello" || names.contains(&p.name)).collect())
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
