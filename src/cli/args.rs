//! Every clap type of the command line: flags, defaults, help text. No
//! logic: resolving these into library values is `settings`, running them is
//! `commands`. Help text here is the `--help` output users see.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[cfg(feature = "net")]
mod net;
#[cfg(feature = "net")]
pub use net::*;

#[derive(Parser)]
#[command(
    name = "ctxasm",
    version,
    about = "Rebuild the Anthropic API requests of Claude Code sessions from their transcripts"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Count files, lines, entries and messages, and list every defect found.
    Stats(StatsArgs),
    /// Rebuild the request bodies of every turn (batch or dedup output).
    Assemble(AssembleArgs),
    /// Check rebuilt requests against the transcript's hashes and a capture.
    Verify(VerifyArgs),
    /// Write the batch format of a dedup directory.
    Expand(ExpandArgs),
    /// Merge dedup stores (the shards' `assemble --format dedup` outputs)
    /// into one, without re-serializing: equal segments collapse, recipes
    /// are concatenated in the order given.
    Merge(MergeArgs),
    /// Release profiles for the pipeline.
    #[command(subcommand)]
    Profile(ProfileCommand),
    /// What the sessions cost: recorded usage priced (--recorded-only), or
    /// modeled; `cost merge` merges the reports of a corpus's shards.
    Cost(CostArgs),
    /// Send assembled requests to the Messages API: rate-limited, retried,
    /// resumable (one journal line per finished request).
    #[cfg(feature = "net")]
    Send(SendArgs),
    /// The same requests through the Message Batches API.
    #[cfg(feature = "net")]
    #[command(subcommand)]
    Batch(BatchCommand),
    /// Serve a local stand-in for the Anthropic Messages API (rate limits,
    /// faults, latency, scripted replies, Message Batches, a request record).
    #[cfg(feature = "net")]
    MockServer(MockServerArgs),
    /// Print a shell completion script (e.g. `ctxasm completions bash >
    /// ~/.local/share/bash-completion/completions/ctxasm`).
    Completions(CompletionsArgs),
    /// Write the manual pages: `ctxasm.1` on stdout, or one page per
    /// command into DIR.
    Man(ManArgs),
    /// Speed baseline for scripts/bench-compare: parse every line with
    /// simd-json's owned DOM and nothing else.
    #[command(hide = true)]
    BenchBaseline(InputArgs),
    /// Send baseline for scripts/bench-compare: N workers, the same retry
    /// policy, no client-side limits, no header adaptation.
    #[cfg(feature = "net")]
    #[command(hide = true)]
    BenchSendBaseline(SendBaselineArgs),
    /// A stdio MCP server with instructions and two tools, for captures and
    /// `profile capture`'s MCP probe.
    #[cfg(feature = "net")]
    #[command(hide = true)]
    MockMcp(MockMcpArgs),
}

#[derive(Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    pub shell: clap_complete::Shell,
}

#[derive(Args)]
pub struct ManArgs {
    /// Write `ctxasm.1` and a page per command (`ctxasm-assemble.1`, …)
    /// here instead of `ctxasm.1` on stdout.
    pub dir: Option<PathBuf>,
}

#[derive(Args)]
pub struct MockMcpArgs {
    /// Print what a client receives (instructions and tools) as JSON and exit.
    #[arg(long)]
    pub describe: bool,
}

#[derive(Args)]
pub struct InputArgs {
    /// Transcript files, session directories or projects roots
    /// [default: $CLAUDE_CONFIG_DIR/projects or ~/.claude/projects].
    pub paths: Vec<PathBuf>,
    /// Worker threads [default: all cores].
    #[arg(long)]
    pub threads: Option<usize>,
    /// Files modified less than this many seconds ago are read, not mapped.
    #[arg(long, default_value_t = 10)]
    pub live_window: u64,
    /// Never memory-map; read every file.
    #[arg(long)]
    pub no_mmap: bool,
    /// Skip lines longer than this many bytes (with a diagnostic).
    #[arg(long, default_value_t = 1 << 30)]
    pub max_line_bytes: usize,
    /// Read only shard K of N, K 0-based (0/4 … 3/4): the sessions whose
    /// key hashes to K. N runs with K = 0 … N-1 and the same paths read
    /// the corpus exactly once; a session and its subagents are never
    /// split.
    #[arg(long, value_name = "K/N", help_heading = "Sharding")]
    pub shard: Option<ctxasm::input::shard::Shard>,
    /// The shard key: session, project, or root (the projects root); a
    /// project or root keeps together every session `cost --account` lets
    /// share a prompt cache [default: session].
    #[arg(long, requires = "shard", value_parser = ["session", "project", "root"], help_heading = "Sharding")]
    pub shard_by: Option<String>,
}

#[derive(Args)]
pub struct IdentityArgs {
    /// metadata.user_id.device_id [default: userID of ~/.claude.json, else 64
    /// zeros]; for `verify`, `wire` takes it from each session's capture.
    #[arg(long)]
    pub device_id: Option<String>,
    /// metadata.user_id.account_uuid (empty for API-key sessions).
    #[arg(long, default_value = "")]
    pub account_uuid: String,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Batch,
    Dedup,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Replay the requests the transcript recorded (api-request entries).
    Records,
    /// Build every request from the conversation (records ignored).
    Pipeline,
    /// Records when a session has them, the pipeline otherwise.
    Auto,
}

/// How requests are obtained (shared by assemble and verify).
#[derive(Args)]
pub struct PipelineArgs {
    /// records: replay api-request entries; pipeline: build every request
    /// from the conversation; auto: records when present, else pipeline.
    #[arg(long, value_enum, default_value = "auto")]
    pub mode: Mode,
    /// Pipeline profile: auto (each session gets the cached profile of its
    /// own release, see `ctxasm profile list`), a built-in name
    /// (cc-2.1.328, seed) or a profile file (`ctxasm profile extract`).
    #[arg(long, default_value = "auto", help_heading = "Pipeline")]
    pub profile: String,
    /// The session's environment: a directory in the captures' env/ layout
    /// (env.json, project/, home/.claude/) [default: what the transcript says].
    #[arg(long, help_heading = "Pipeline")]
    pub env: Option<PathBuf>,
    /// What-if: this file's text replaces the default system prompt.
    #[arg(long, help_heading = "What-if")]
    pub system_prompt_file: Option<PathBuf>,
    /// What-if: text appended to the system prompt.
    #[arg(long, help_heading = "What-if")]
    pub append_system_prompt: Option<String>,
    /// What-if: the model of every request.
    #[arg(long, help_heading = "What-if")]
    pub model: Option<String>,
    /// What-if: read the memory files (CLAUDE.md, .claude/rules, …) from
    /// this directory as the session's working directory.
    #[arg(long, help_heading = "What-if")]
    pub claude_md_root: Option<PathBuf>,
    /// What-if: the tool list (a JSON array of tool definitions).
    #[arg(long, help_heading = "What-if")]
    pub tools: Option<PathBuf>,
    /// What-if: cache TTL of every breakpoint (5m or 1h).
    #[arg(long, help_heading = "What-if")]
    pub cache_ttl: Option<String>,
    /// What-if: output_config.effort (low, medium, high, …).
    #[arg(long, help_heading = "What-if")]
    pub effort: Option<String>,
}

#[derive(Args)]
pub struct AssembleArgs {
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub identity: IdentityArgs,
    #[command(flatten)]
    pub pipeline: PipelineArgs,
    #[arg(long, value_enum, default_value = "batch")]
    pub format: Format,
    /// Output file (batch; `-` = stdout) or directory (dedup).
    #[arg(short, long, default_value = "-")]
    pub output: PathBuf,
    /// Requests per chain: all, last, or N (the 0-based request index).
    #[arg(long, default_value = "all")]
    pub turns: ctxasm::write::Turns,
    /// Print the summary as JSON on stderr.
    #[arg(long)]
    pub json: bool,
    /// Exit with status 1 when there is any diagnostic.
    #[arg(long)]
    pub strict: bool,
}

#[derive(Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub identity: IdentityArgs,
    #[command(flatten)]
    pub pipeline: PipelineArgs,
    /// A capture (wire.jsonl: one object per request with body and raw_b64).
    #[arg(long)]
    pub wire: Vec<PathBuf>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct CostArgs {
    #[command(subcommand)]
    pub command: Option<CostCommand>,
    #[command(flatten)]
    pub input: InputArgs,
    /// Only the usage recorded in the transcripts, priced (each request
    /// counted once, as ccusage counts it).
    #[arg(long)]
    pub recorded_only: bool,
    /// A price table (JSON, the format of src/cost/pricing.json)
    /// [default: the built-in table, with its source and date].
    #[arg(long)]
    pub pricing: Option<PathBuf>,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also write a self-contained HTML report (inline SVG charts) here.
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// Also write one JSON line per request here: recorded and modeled
    /// tokens and cost.
    #[arg(long, value_name = "FILE")]
    pub per_request: Option<PathBuf>,
    /// A change simulated against the baseline, reported as a delta
    /// (repeatable): ttl=1h|5m, breakpoints=N, model=NAME,
    /// system-prompt-growth=BYTES, no-cross-session-cache, boundary=none|tools.
    #[arg(long = "what-if", value_name = "CHANGE")]
    pub what_if: Vec<String>,
    /// Which sessions share a prompt cache: every session under one projects
    /// root, of one project, or none.
    #[arg(long, default_value = "root", value_parser = ["root", "project", "session"])]
    pub account: String,
    /// Pipeline profile for sessions without records: auto (the cached
    /// profile of each session's release), a built-in name (cc-2.1.328,
    /// seed) or a profile file.
    #[arg(long, default_value = "auto")]
    pub profile: String,
    /// The sessions' environment (env/ layout) for the pipeline.
    #[arg(long)]
    pub env: Option<PathBuf>,
    /// Model with the token estimator of an earlier `cost --json` report
    /// (its estimator.bytes_per_token and unseen_prefix_median) instead of
    /// fitting one on the sessions read: every shard of a corpus then
    /// models as a single run with that estimator does.
    #[arg(long, value_name = "REPORT", conflicts_with = "recorded_only")]
    pub estimator: Option<PathBuf>,
    /// Exit with status 1 when there is any diagnostic.
    #[arg(long)]
    pub strict: bool,
}

#[derive(Subcommand)]
pub enum CostCommand {
    /// Merge the reports of every shard of a corpus (`cost --json --shard
    /// K/N`, K = 0 … N-1) into the corpus's report: recorded usage exactly
    /// as a single run counts it; modeled figures summed (see the README
    /// for what merges exactly).
    Merge(CostMergeArgs),
    /// The recorded usage (the bill) per day, in --timezone, as ccusage's
    /// `daily` (the same requests, counted and priced as `--recorded-only`).
    Daily(CostViewArgs),
    /// The recorded usage per month, as ccusage's `monthly`.
    Monthly(CostViewArgs),
    /// The recorded usage per session (by last activity), as ccusage's
    /// `session`.
    Session(CostViewArgs),
    /// The recorded usage per 5-hour billing block (and the gaps between
    /// them), as ccusage's `blocks`.
    Blocks(CostViewArgs),
}

#[derive(Args)]
pub struct CostViewArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// A price table (JSON, the format of src/cost/pricing.json)
    /// [default: the built-in table, with its source and date].
    #[arg(long)]
    pub pricing: Option<PathBuf>,
    /// Print one JSON object instead of the table (each row with its
    /// per-model breakdown).
    #[arg(long)]
    pub json: bool,
    /// The first date kept (YYYYMMDD or YYYY-MM-DD, in --timezone).
    #[arg(long)]
    pub since: Option<String>,
    /// The last date kept (YYYYMMDD or YYYY-MM-DD, in --timezone).
    #[arg(long)]
    pub until: Option<String>,
    /// Only this project: its directory name under the projects root.
    #[arg(long)]
    pub project: Option<String>,
    /// The time zone of the dates (an IANA name: UTC, Europe/Berlin, …)
    /// [default: the system's].
    #[arg(long)]
    pub timezone: Option<String>,
    /// Under each row, a row per model.
    #[arg(long)]
    pub breakdown: bool,
    /// Newest first.
    #[arg(long)]
    pub desc: bool,
    /// Exit with status 1 when there is any diagnostic.
    #[arg(long)]
    pub strict: bool,
}

#[derive(Args)]
pub struct CostMergeArgs {
    /// The shards' `cost --json --shard K/N` reports, every K once.
    #[arg(required = true, num_args = 1..)]
    pub reports: Vec<PathBuf>,
    /// The price table the shards used [default: the built-in table].
    #[arg(long)]
    pub pricing: Option<PathBuf>,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand)]
pub enum ProfileCommand {
    /// Write a profile (static prompt text, tools, params, templates of the
    /// dynamic sections) from one capture (wire.jsonl) or one 2.1.3xx
    /// transcript of a release.
    Extract(ExtractArgs),
    /// Make the profile of a release on this machine: install it from npm
    /// into the cache (or use --cli), drive it headless through the probe
    /// sessions against the built-in mock server, extract and check the
    /// profile, and write it to the cache (`<cache>/profiles/<version>.json`)
    /// where `--profile auto` finds it.
    #[cfg(feature = "net")]
    Capture(CaptureArgs),
    /// The cached profiles (`--profile auto` chooses among them).
    List(ListArgs),
}

#[cfg(feature = "net")]
#[derive(Args)]
pub struct CaptureArgs {
    /// The release (an npm version of @anthropic-ai/claude-code, e.g. 2.1.88).
    #[arg(required_unless_present_any = ["cli", "from"])]
    pub version: Option<String>,
    /// Make the profile from probe captures kept earlier (`--keep DIR`)
    /// instead of running a CLI: after an upgrade of ctxasm, no CLI needed.
    #[arg(long, conflicts_with_all = ["version", "cli", "keep"])]
    pub from: Option<PathBuf>,
    /// Use this Claude Code binary instead of installing one (its
    /// `--version` names the release).
    #[arg(long, conflicts_with = "version")]
    pub cli: Option<PathBuf>,
    /// Keep the probe captures in this directory (the corpora's capture
    /// layout, usable as test fixtures) [default: deleted afterwards].
    #[arg(long)]
    pub keep: Option<PathBuf>,
    /// Run only these probes (comma-separated; `hello` is always run).
    #[arg(long, value_delimiter = ',')]
    pub probes: Vec<String>,
    /// Write the profile here instead of the cache.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

#[derive(Args)]
pub struct ListArgs {
    /// One JSON object per cached profile.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct ExtractArgs {
    /// A wire.jsonl capture or a transcript with api-request-shape entries;
    /// several captures of one release are merged into one profile (what
    /// each shows that the first cannot).
    #[arg(required = true, num_args = 1..)]
    pub paths: Vec<PathBuf>,
    /// The capture's environment (env/ layout), to name its values as
    /// template variables [default: inferred from the text]; repeat it,
    /// in order, once per capture.
    #[arg(long)]
    pub env: Vec<PathBuf>,
    /// Output file (`-` = stdout).
    #[arg(short, long, default_value = "-")]
    pub output: PathBuf,
}

#[derive(Args)]
pub struct ExpandArgs {
    /// A directory written by `assemble --format dedup`.
    pub dir: PathBuf,
    /// Output file (`-` = stdout).
    #[arg(short, long, default_value = "-")]
    pub output: PathBuf,
}

#[derive(Args)]
pub struct MergeArgs {
    /// The merged store (must not exist, or be an empty directory).
    pub out: PathBuf,
    /// The dedup stores, in order: `expand` of the merged store is their
    /// batch outputs concatenated in this order.
    #[arg(required = true, num_args = 1..)]
    pub dirs: Vec<PathBuf>,
    /// Print the summary as JSON on stderr.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct StatsArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Exit with status 1 when there is any diagnostic.
    #[arg(long)]
    pub strict: bool,
    /// Diagnostics shown in the table (all are in --json).
    #[arg(long, default_value_t = 20)]
    pub show: usize,
}
