//! Probe captures: the real Claude Code CLI of one release, driven headless
//! (`-p`) through a fixed set of probe sessions against the in-process
//! [`crate::mock`] server, so that `ctxasm profile capture` can make that
//! release's profile on the user's machine from what the CLI sends.
//!
//! Each probe's output has the corpora's capture layout:
//! `<out>/<probe>/{transcripts/, wire.jsonl, env/{env.json, project/,
//! home/.claude/}, cli.log}` — the same as `scripts/capture`'s, so a kept
//! probe is a test fixture as it stands.
//!
//! The probes ([`probes`], `probes.json`) are this project's own prompts
//! and reply rules; they hold no Claude Code text. [`install`] puts a
//! release from npm into a cache directory. Nothing here prints: progress
//! goes through a callback, and the binary renders it.

mod install;
mod run;

pub use install::{InstallError, find_binary, install};
pub use run::{ProbeRun, run_probe};

use serde::Deserialize;
use std::collections::BTreeMap;

/// One probe session.
#[derive(Debug, Clone, Deserialize)]
pub struct Probe {
    pub name: String,
    /// The profile is made from this probe's capture (the others are
    /// checked against it).
    #[serde(default)]
    pub extract: bool,
    /// Files of the project (`~/` = the home), by relative path.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// The mock server's reply rules ([`crate::mock::script`]); `PROJ/` is
    /// replaced by the project's path.
    #[serde(default)]
    pub rules: serde_json::Value,
    /// MCP servers every step is started with (`--mcp-config`), by name:
    /// `{"command", "args"}`; the command `@ctxasm` is the running binary
    /// (its hidden `mock-mcp`). Their answers go to `env/mcp.json`.
    #[serde(default)]
    pub mcp: serde_json::Map<String, serde_json::Value>,
    /// One CLI process each.
    pub steps: Vec<Step>,
}

/// One CLI process of a probe.
#[derive(Debug, Clone, Deserialize)]
pub struct Step {
    pub prompt: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// `--continue` the previous process's session.
    #[serde(default, rename = "continue")]
    pub continue_session: bool,
    /// Seconds before the process is killed.
    #[serde(default = "default_timeout")]
    pub timeout: u64,
}

fn default_timeout() -> u64 {
    180
}

/// The built-in probe set, in run order.
#[allow(clippy::expect_used)] // compiled-in data, parsed by a unit test
pub fn probes() -> Vec<Probe> {
    serde_json::from_str(include_str!("probes.json")).expect("the built-in probes parse")
}

/// Why a probe could not be run (the CLI failing inside a probe is not
/// one: that is in the probe's `cli.log` and its empty wire).
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("{}: {source}", path.display())]
    Io { path: std::path::PathBuf, source: std::io::Error },
    #[error("cannot run `{tool}`: {source} (it must be installed and on PATH)")]
    Tool { tool: String, source: std::io::Error },
    #[error("`{command}` failed: {detail}")]
    Command { command: String, detail: String },
    #[error("probe {probe}: {message}")]
    Rules { probe: String, message: String },
    #[error("mock server: {0}")]
    Mock(#[from] crate::mock::MockError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_set_parses_and_its_rules_load() {
        let probes = probes();
        let names: Vec<&str> = probes.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "hello",
                "bash-tool",
                "memory-files",
                "skill",
                "model-haiku",
                "model-sonnet",
                "model-opus",
                "custom-system-prompt",
                "append-system-prompt",
                "mcp",
                "subagent",
                "compact"
            ]
        );
        for p in &probes {
            crate::mock::script::parse_rules(&p.rules).unwrap_or_else(|e| panic!("{}: {e}", p.name));
            assert!(!p.steps.is_empty(), "{}", p.name);
        }
        let extracted: Vec<&str> = probes.iter().filter(|p| p.extract).map(|p| p.name.as_str()).collect();
        // Every probe teaches: the subagent probe a subagent type's
        // definition (2.1.88) and the billing flag, /compact the
        // compaction instruction.
        assert_eq!(extracted.len(), 12, "{extracted:?}");
        assert_eq!(extracted.last(), Some(&"compact"));
        assert!(probes[12 - 1].steps[1].continue_session);
        let mcp = &probes[9];
        assert_eq!(mcp.mcp["probe"]["command"], "@ctxasm");
    }
}
