//! Resolution of the parsed flags and the environment (~/.claude.json's
//! device id, profile files, price tables) into the option values the
//! library takes, done once per command. Reads only what a flag names;
//! runs nothing.

use super::args::{IdentityArgs, InputArgs, Mode, PipelineArgs};
use super::exit::NothingFound;
use ctxasm::assemble::Assembler;
use ctxasm::assemble::choose::Chooser;
use ctxasm::assemble::pipeline::{Overrides, Setup};
use ctxasm::assemble::records::{PLACEHOLDER_DEVICE_ID, RecordOptions};
use ctxasm::corpus::RunOptions;
use ctxasm::env::claude_json::local_device_id;
use ctxasm::input::Fields;
use ctxasm::input::ReadOptions;
use ctxasm::input::discover::{Discovery, default_roots, discover};
use ctxasm::input::shard::{Shard, ShardBy, keep_shard};
use ctxasm::input::source::SourceOptions;
use ctxasm::profile::Shelf;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[cfg(feature = "net")]
mod net;
#[cfg(feature = "net")]
pub use net::*;

/// The files of a run and how to read them.
pub struct Input {
    pub disc: Discovery,
    pub run: RunOptions<'static>,
    /// `--shard`: which shard this run reads.
    pub shard: Option<Sharded>,
}

/// A run of one shard: which, by what key, and how many session groups
/// the whole corpus has.
#[derive(Clone, Copy)]
pub struct Sharded {
    pub shard: Shard,
    pub by: ShardBy,
    pub groups_total: usize,
}

impl Sharded {
    /// `shard 1/4 (by session): 5 of 21 sessions`.
    pub fn describe(&self, disc: &Discovery) -> String {
        format!(
            "shard {} (by {}): {} of {}",
            self.shard,
            self.by,
            disc.groups.len(),
            crate::cli::render::count(self.groups_total as u64, "session")
        )
    }
}

impl Input {
    /// Walk the paths (or the default projects roots) and set up the pool.
    /// No transcript found is a [`NothingFound`] error naming where it
    /// looked (unless a named path could not be read: that run goes on and
    /// exits 2 with its report; an absent default root is nothing found).
    /// With `--shard`, the corpus is found first (nothing found is about
    /// the corpus), then only the shard's sessions are kept: a shard may
    /// be empty.
    pub fn resolve(args: &InputArgs) -> anyhow::Result<Self> {
        let run = RunOptions {
            read: ReadOptions { source: source(args), max_line_bytes: args.max_line_bytes, fields: Fields::All },
            ..RunOptions::with_threads(args.threads)
        };
        let mut disc = run.install(|| discovery(args));
        if disc.files.is_empty() && (args.paths.is_empty() || !crate::cli::input::failed(&disc)) {
            return Err(nothing_found(args, &disc).into());
        }
        let shard = run.install(|| apply_shard(args, &mut disc));
        Ok(Self { disc, run, shard })
    }
}

/// `--shard K/N` and `--shard-by`: keep the shard's session groups of
/// `disc`.
pub fn apply_shard(args: &InputArgs, disc: &mut Discovery) -> Option<Sharded> {
    let shard = args.shard?;
    let by = args.shard_by.as_deref().and_then(|b| b.parse().ok()).unwrap_or_default();
    let groups_total = disc.groups.len();
    keep_shard(disc, &roots(args), shard, by);
    Some(Sharded { shard, by, groups_total })
}

/// Where the search for transcripts looked, when it found none.
fn nothing_found(args: &InputArgs, disc: &Discovery) -> NothingFound {
    if !args.paths.is_empty() {
        let named: Vec<String> = args.paths.iter().map(|p| p.display().to_string()).collect();
        return NothingFound(format!("no transcript (*.jsonl) under {}", named.join(", ")));
    }
    let roots: Vec<String> = default_roots().iter().map(|p| p.display().to_string()).collect();
    let absent = disc.diagnostics.iter().any(|d| d.kind == ctxasm::diag::DiagKind::NotFound);
    NothingFound(format!(
        "no transcript found in {}{} (the default: $CLAUDE_CONFIG_DIR/projects for each comma-separated \
         CLAUDE_CONFIG_DIR, else ~/.claude/projects); name the transcripts or their directories, or set \
         CLAUDE_CONFIG_DIR",
        roots.join(", "),
        if absent { ", which does not exist" } else { "" }
    ))
}

/// The paths named on the command line, or the default projects roots.
fn roots(args: &InputArgs) -> Vec<PathBuf> {
    if args.paths.is_empty() { default_roots() } else { args.paths.clone() }
}

/// The files named on the command line, or the default projects roots.
pub fn discovery(args: &InputArgs) -> Discovery {
    discover(&roots(args))
}

/// How each file is loaded (mapped or read).
pub fn source(args: &InputArgs) -> SourceOptions {
    SourceOptions { live_window: Duration::from_secs(args.live_window), no_mmap: args.no_mmap }
}

/// metadata.user_id: the flag, else ~/.claude.json's userID, else zeros.
pub fn record_options(args: &IdentityArgs) -> RecordOptions {
    let device_id =
        args.device_id.clone().or_else(local_device_id).unwrap_or_else(|| PLACEHOLDER_DEVICE_ID.to_string());
    RecordOptions { device_id, account_uuid: args.account_uuid.clone() }
}

fn mode(m: Mode) -> ctxasm::assemble::Mode {
    match m {
        Mode::Records => ctxasm::assemble::Mode::Records,
        Mode::Pipeline => ctxasm::assemble::Mode::Pipeline,
        Mode::Auto => ctxasm::assemble::Mode::Auto,
    }
}

/// How assemble and verify obtain requests, and the notes about the
/// pipeline's profile (which cache was read, a profile without prompt
/// text) for the caller to show when some session took the pipeline.
pub fn assembler(p: &PipelineArgs, identity: &IdentityArgs) -> anyhow::Result<(Assembler, Vec<String>)> {
    if p.mode == Mode::Records && (what_if(p) || p.env.is_some()) {
        anyhow::bail!("what-if flags and --env apply to --mode pipeline or auto");
    }
    let (prep, chooser, mut notes) =
        profile_prep(&p.profile, p.env.as_deref(), overrides(p)?, p.mode != Mode::Records)?;
    if p.mode != Mode::Records
        && chooser.is_none()
        && let Some(note) = prep.note()
    {
        notes.push(format!("note: {note}"));
    }
    Ok((Assembler { mode: mode(p.mode), records: record_options(identity), pipeline: Some(prep), chooser }, notes))
}

/// `--profile`: `auto` (the profile cache, chosen per session; `loud`
/// notes which cache was read), a built-in name or a profile file, with the
/// session environment; and the notes to show (cached profiles skipped).
pub fn profile_prep(
    profile: &str,
    env: Option<&Path>,
    overrides: Overrides,
    loud: bool,
) -> anyhow::Result<(Setup, Option<Chooser>, Vec<String>)> {
    if profile != "auto" {
        return Ok((Setup::load(profile, env, overrides)?, None, Vec::new()));
    }
    let template = Setup::load("cc-2.1.328", env, overrides)?;
    let dir = profile_dir().unwrap_or_default();
    let (shelf, errors) = Shelf::open(&dir);
    let mut notes: Vec<String> = errors.iter().map(|e| format!("warning: cached profile skipped: {e}")).collect();
    if loud {
        let versions: Vec<String> = shelf.profiles.iter().map(|s| s.version.to_string()).collect();
        notes.push(format!(
            "--profile auto: {} cached profile{} in {}{}",
            versions.len(),
            if versions.len() == 1 { "" } else { "s" },
            dir.display(),
            if versions.is_empty() { String::new() } else { format!(" ({})", versions.join(", ")) }
        ));
    }
    Ok((template.clone(), Some(Chooser::new(shelf, template)), notes))
}

/// ctxasm's cache: `$CTXASM_CACHE_DIR`, else `$XDG_CACHE_HOME/ctxasm`,
/// else `~/.cache/ctxasm` (`None` without a home).
pub fn cache_dir() -> Option<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("CTXASM_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("ctxasm")))
        .or_else(|| var("HOME").map(|h| h.join(".cache").join("ctxasm")))
}

/// Where cached profiles live: `<cache>/profiles`.
pub fn profile_dir() -> Option<PathBuf> {
    cache_dir().map(|d| d.join("profiles"))
}

fn what_if(p: &PipelineArgs) -> bool {
    p.system_prompt_file.is_some()
        || p.append_system_prompt.is_some()
        || p.model.is_some()
        || p.claude_md_root.is_some()
        || p.tools.is_some()
        || p.cache_ttl.is_some()
        || p.effort.is_some()
}

fn overrides(p: &PipelineArgs) -> anyhow::Result<Overrides> {
    let read = |p: &PathBuf| std::fs::read_to_string(p).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()));
    let tools = match &p.tools {
        Some(path) => match serde_json::from_str::<serde_json::Value>(&read(path)?) {
            Ok(serde_json::Value::Array(t)) => Some(t),
            Ok(_) => anyhow::bail!("{}: --tools needs a JSON array of tool definitions", path.display()),
            Err(e) => anyhow::bail!("{}: {e}", path.display()),
        },
        None => None,
    };
    Ok(Overrides {
        system_prompt: p.system_prompt_file.as_ref().map(read).transpose()?,
        append_system_prompt: p.append_system_prompt.clone(),
        model: p.model.clone(),
        claude_md_root: p.claude_md_root.clone(),
        tools,
        cache_ttl: p.cache_ttl.clone(),
        effort: p.effort.clone(),
    })
}

/// `--pricing FILE`, else the built-in table.
pub fn pricing(path: Option<&Path>) -> anyhow::Result<ctxasm::cost::pricing::Pricing> {
    match path {
        Some(p) => Ok(ctxasm::cost::pricing::Pricing::load(p)?),
        None => Ok(ctxasm::cost::pricing::Pricing::builtin()),
    }
}

/// The `--what-if` changes of cost, parsed.
pub fn what_ifs(changes: &[String]) -> anyhow::Result<Vec<ctxasm::cost::modeled::WhatIf>> {
    changes.iter().map(|w| w.parse().map_err(anyhow::Error::msg)).collect()
}
