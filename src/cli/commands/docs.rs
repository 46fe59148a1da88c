//! `ctxasm completions SHELL` and `ctxasm man [DIR]`: generated from the
//! clap definitions, so they always match the flags.

use crate::cli::args::{Cli, CompletionsArgs, ManArgs};
use crate::cli::exit::Outcome;
use crate::cli::output;
use clap::CommandFactory;

/// The command line without its hidden commands (baselines for the
/// benches, the MCP stand-in): bash completion would offer them otherwise.
fn visible() -> clap::Command {
    let full = Cli::command();
    let mut cmd = clap::Command::new("ctxasm").subcommand_required(true);
    if let Some(v) = full.get_version() {
        cmd = cmd.version(v.to_string());
    }
    if let Some(about) = full.get_about() {
        cmd = cmd.about(about.clone());
    }
    for sub in full.get_subcommands().filter(|s| !s.is_hide_set()) {
        cmd = cmd.subcommand(sub.clone());
    }
    cmd
}

pub fn completions(args: &CompletionsArgs) -> anyhow::Result<Outcome> {
    let mut cmd = visible();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "ctxasm", &mut script);
    output::text(&String::from_utf8_lossy(&script))?;
    Ok(Outcome::Clean)
}

pub fn man(args: &ManArgs) -> anyhow::Result<Outcome> {
    let cmd = visible();
    let Some(dir) = &args.dir else {
        output::text(&String::from_utf8_lossy(&page(cmd)?))?;
        return Ok(Outcome::Clean);
    };
    std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
    let mut written = 0u64;
    let mut pending = vec![(String::from("ctxasm"), cmd)];
    while let Some((name, mut cmd)) = pending.pop() {
        cmd.build();
        for sub in cmd.get_subcommands() {
            if sub.get_name() != "help" {
                pending.push((format!("{name}-{}", sub.get_name()), sub.clone()));
            }
        }
        let cmd = cmd.name(name.clone());
        output::write_atomic(&dir.join(format!("{name}.1")), &page(cmd)?)?;
        written += 1;
    }
    eprintln!("ctxasm: {} written to {}", crate::cli::render::count(written, "manual page"), dir.display());
    Ok(Outcome::Clean)
}

fn page(cmd: clap::Command) -> anyhow::Result<Vec<u8>> {
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut out)?;
    Ok(out)
}
