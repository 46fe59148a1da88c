//! The `ctxasm` command line: a thin layer over the library.

use clap::{Args, Parser, Subcommand};
use ctxasm::assemble::records::{PLACEHOLDER_DEVICE_ID, RecordOptions, local_device_id};
use ctxasm::corpus::RunOptions;
use ctxasm::diag::DiagKind;
use ctxasm::input::ReadOptions;
use ctxasm::input::discover::{Discovery, default_roots, discover};
use ctxasm::input::source::SourceOptions;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(
    name = "ctxasm",
    version,
    about = "Rebuild the Anthropic API requests of Claude Code sessions from their transcripts"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Count files, lines, entries and messages, and list every defect found.
    Stats(StatsArgs),
    /// Rebuild the request bodies of every turn (batch or dedup output).
    Assemble(AssembleArgs),
    /// Check rebuilt requests against the transcript's hashes and a capture.
    Verify(VerifyArgs),
    /// Write the batch format of a dedup directory.
    Expand(ExpandArgs),
    /// Release profiles for the pipeline.
    #[command(subcommand)]
    Profile(ProfileCommand),
    /// What the sessions cost: recorded usage priced (--recorded-only).
    Cost(CostArgs),
    /// Send assembled requests to the Messages API: rate-limited, retried,
    /// resumable (one journal line per finished request).
    Send(SendArgs),
    /// The same requests through the Message Batches API.
    #[command(subcommand)]
    Batch(BatchCommand),
    /// Serve a local stand-in for the Anthropic Messages API (rate limits,
    /// faults, latency, scripted replies, Message Batches, a request record).
    MockServer(MockServerArgs),
    /// Speed baseline for scripts/bench-compare: parse every line with
    /// simd-json's owned DOM and nothing else.
    #[command(hide = true)]
    BenchBaseline(InputArgs),
    /// Send baseline for scripts/bench-compare: N workers, the same retry
    /// policy, no client-side limits, no header adaptation.
    #[command(hide = true)]
    BenchSendBaseline(SendBaselineArgs),
}

#[derive(Args)]
struct ApiArgs {
    /// Base URL of the API.
    #[arg(long, default_value = "https://api.anthropic.com")]
    endpoint: String,
    /// anthropic-beta header (a comma list); the batch format carries no betas.
    #[arg(long, value_name = "LIST")]
    beta: Option<String>,
}

#[derive(Args)]
struct SendArgs {
    /// A batch file (`assemble --format batch`) or a dedup directory.
    input: PathBuf,
    #[command(flatten)]
    api: ApiArgs,
    /// The journal: one JSON line per finished request; requests already in
    /// it are skipped (required unless --dry-run).
    #[arg(long, value_name = "FILE")]
    results: Option<PathBuf>,
    /// Requests on the wire at once.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    /// Client-side limit: requests per minute.
    #[arg(long)]
    rpm: Option<u64>,
    /// Client-side limit: input tokens per minute (input + cache writes).
    #[arg(long)]
    itpm: Option<u64>,
    /// Client-side limit: output tokens per minute.
    #[arg(long)]
    otpm: Option<u64>,
    /// Attempts per request in all (retries follow the SDKs' policy).
    #[arg(long, default_value_t = 5)]
    max_attempts: u32,
    /// Seconds per attempt, connect to last byte.
    #[arg(long, default_value_t = 600.0, value_name = "SECS")]
    timeout: f64,
    /// Read and validate the input, print requests, estimated input tokens
    /// and cost per model; send nothing (no key needed).
    #[arg(long)]
    dry_run: bool,
    /// Ignore the server's anthropic-ratelimit-* headers.
    #[arg(long, hide = true)]
    no_adapt: bool,
}

#[derive(Args)]
struct SendBaselineArgs {
    input: PathBuf,
    #[command(flatten)]
    api: ApiArgs,
    #[arg(long, value_name = "FILE")]
    results: PathBuf,
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    #[arg(long, default_value_t = 5)]
    max_attempts: u32,
    #[arg(long, default_value_t = 600.0, value_name = "SECS")]
    timeout: f64,
}

#[derive(Subcommand)]
enum BatchCommand {
    /// Submit the input as Message Batches (≤ 100,000 requests and 256 MB
    /// each); print each batch id and append it to the state file.
    Submit(BatchSubmitArgs),
    /// Print processing_status and request_counts.
    Status(BatchStatusArgs),
    /// Download the results of ended batches in the journal format of
    /// `send --results`.
    Results(BatchResultsArgs),
}

#[derive(Args)]
struct BatchSubmitArgs {
    /// A batch file or a dedup directory.
    input: PathBuf,
    #[command(flatten)]
    api: ApiArgs,
    /// Append each submitted batch (one JSON line) to this file.
    #[arg(long, value_name = "FILE")]
    state: Option<PathBuf>,
    /// Attempts per submission for error statuses (no reply is never retried).
    #[arg(long, default_value_t = 5)]
    max_attempts: u32,
    #[arg(long, hide = true, default_value_t = ctxasm::send::batches::MAX_REQUESTS)]
    max_batch_requests: usize,
    #[arg(long, hide = true, default_value_t = ctxasm::send::batches::MAX_BYTES)]
    max_batch_bytes: usize,
}

#[derive(Args)]
struct BatchIds {
    /// A batch id.
    id: Option<String>,
    /// Every batch of a state file written by `batch submit --state`.
    #[arg(long, value_name = "FILE", conflicts_with = "id")]
    state: Option<PathBuf>,
}

impl BatchIds {
    fn ids(&self) -> Result<Vec<String>, String> {
        match (&self.id, &self.state) {
            (Some(id), None) => Ok(vec![id.clone()]),
            (None, Some(p)) => ctxasm::send::batches::read_state(p).map_err(|e| e.to_string()),
            _ => Err("give a batch id or --state FILE".into()),
        }
    }
}

#[derive(Args)]
struct BatchStatusArgs {
    #[command(flatten)]
    ids: BatchIds,
    #[command(flatten)]
    api: ApiArgs,
    /// Poll until every batch has ended.
    #[arg(long)]
    wait: bool,
    /// First poll interval with --wait (then ×1.5 per poll, at most 60 s).
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    poll_ms: u64,
}

#[derive(Args)]
struct BatchResultsArgs {
    #[command(flatten)]
    ids: BatchIds,
    #[command(flatten)]
    api: ApiArgs,
    /// The journal file to write (appended to; results already in it are skipped).
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
}

#[derive(Args)]
struct InputArgs {
    /// Transcript files, session directories or projects roots
    /// [default: $CLAUDE_CONFIG_DIR/projects or ~/.claude/projects].
    paths: Vec<PathBuf>,
    /// Worker threads [default: all cores].
    #[arg(long)]
    threads: Option<usize>,
    /// Files modified less than this many seconds ago are read, not mapped.
    #[arg(long, default_value_t = 10)]
    live_window: u64,
    /// Never memory-map; read every file.
    #[arg(long)]
    no_mmap: bool,
    /// Skip lines longer than this many bytes (with a diagnostic).
    #[arg(long, default_value_t = 1 << 30)]
    max_line_bytes: usize,
}

impl InputArgs {
    fn source(&self) -> SourceOptions {
        SourceOptions { live_window: Duration::from_secs(self.live_window), no_mmap: self.no_mmap }
    }

    fn run_options(&self) -> RunOptions<'static> {
        RunOptions {
            read: ReadOptions { source: self.source(), max_line_bytes: self.max_line_bytes },
            ..RunOptions::with_threads(self.threads)
        }
    }

    fn discover(&self) -> Discovery {
        let paths = if self.paths.is_empty() { default_roots() } else { self.paths.clone() };
        discover(&paths)
    }
}

#[derive(Args)]
struct IdentityArgs {
    /// metadata.user_id.device_id [default: userID of ~/.claude.json, else 64
    /// zeros]; for `verify`, `wire` takes it from each session's capture.
    #[arg(long)]
    device_id: Option<String>,
    /// metadata.user_id.account_uuid (empty for API-key sessions).
    #[arg(long, default_value = "")]
    account_uuid: String,
}

impl IdentityArgs {
    fn record_options(&self) -> RecordOptions {
        let device_id =
            self.device_id.clone().or_else(local_device_id).unwrap_or_else(|| PLACEHOLDER_DEVICE_ID.to_string());
        RecordOptions { device_id, account_uuid: self.account_uuid.clone(), ..RecordOptions::default() }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    Batch,
    Dedup,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Mode {
    /// Replay the requests the transcript recorded (api-request entries).
    Records,
    /// Build every request from the conversation (records ignored).
    Pipeline,
    /// Records when a session has them, the pipeline otherwise.
    Auto,
}

impl From<Mode> for ctxasm::assemble::driver::Mode {
    fn from(m: Mode) -> Self {
        match m {
            Mode::Records => Self::Records,
            Mode::Pipeline => Self::Pipeline,
            Mode::Auto => Self::Auto,
        }
    }
}

/// How requests are obtained (shared by assemble and verify).
#[derive(Args)]
struct PipelineArgs {
    /// records: replay api-request entries; pipeline: build every request
    /// from the conversation; auto: records when present, else pipeline.
    #[arg(long, value_enum, default_value = "records")]
    mode: Mode,
    /// Pipeline profile: a built-in name (cc-2.1.328, seed) or a profile file
    /// written by `ctxasm profile extract`.
    #[arg(long, default_value = "cc-2.1.328", help_heading = "Pipeline")]
    profile: String,
    /// The session's environment: a directory in the captures' env/ layout
    /// (env.json, project/, home/.claude/) [default: what the transcript says].
    #[arg(long, help_heading = "Pipeline")]
    env: Option<PathBuf>,
    /// What-if: this file's text replaces the default system prompt.
    #[arg(long, help_heading = "What-if")]
    system_prompt_file: Option<PathBuf>,
    /// What-if: text appended to the system prompt.
    #[arg(long, help_heading = "What-if")]
    append_system_prompt: Option<String>,
    /// What-if: the model of every request.
    #[arg(long, help_heading = "What-if")]
    model: Option<String>,
    /// What-if: read the memory files (CLAUDE.md, .claude/rules, …) from
    /// this directory as the session's working directory.
    #[arg(long, help_heading = "What-if")]
    claude_md_root: Option<PathBuf>,
    /// What-if: the tool list (a JSON array of tool definitions).
    #[arg(long, help_heading = "What-if")]
    tools: Option<PathBuf>,
    /// What-if: cache TTL of every breakpoint (5m or 1h).
    #[arg(long, help_heading = "What-if")]
    cache_ttl: Option<String>,
    /// What-if: output_config.effort (low, medium, high, …).
    #[arg(long, help_heading = "What-if")]
    effort: Option<String>,
}

impl PipelineArgs {
    fn overrides(&self) -> Result<ctxasm::assemble::prep::Overrides, String> {
        let read = |p: &PathBuf| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
        let tools = match &self.tools {
            Some(p) => match serde_json::from_str::<serde_json::Value>(&read(p)?) {
                Ok(serde_json::Value::Array(t)) => Some(t),
                Ok(_) => return Err(format!("{}: --tools needs a JSON array of tool definitions", p.display())),
                Err(e) => return Err(format!("{}: {e}", p.display())),
            },
            None => None,
        };
        Ok(ctxasm::assemble::prep::Overrides {
            system_prompt: self.system_prompt_file.as_ref().map(read).transpose()?,
            append_system_prompt: self.append_system_prompt.clone(),
            model: self.model.clone(),
            claude_md_root: self.claude_md_root.clone(),
            tools,
            cache_ttl: self.cache_ttl.clone(),
            effort: self.effort.clone(),
        })
    }

    fn what_if(&self) -> bool {
        self.system_prompt_file.is_some()
            || self.append_system_prompt.is_some()
            || self.model.is_some()
            || self.claude_md_root.is_some()
            || self.tools.is_some()
            || self.cache_ttl.is_some()
            || self.effort.is_some()
    }

    fn assembler(&self, identity: &IdentityArgs) -> Result<ctxasm::assemble::driver::Assembler, String> {
        if self.mode == Mode::Records && (self.what_if() || self.env.is_some()) {
            return Err("what-if flags and --env apply to --mode pipeline or auto".into());
        }
        let prep = ctxasm::assemble::prep::ProfilePrep::load(&self.profile, self.env.as_deref(), self.overrides()?)?;
        if self.mode != Mode::Records
            && let Some(note) = prep.note()
        {
            eprintln!("ctxasm: note: {note}");
        }
        Ok(ctxasm::assemble::driver::Assembler {
            mode: self.mode.into(),
            records: identity.record_options(),
            pipeline: Box::new(prep),
        })
    }
}

#[derive(Args)]
struct AssembleArgs {
    #[command(flatten)]
    input: InputArgs,
    #[command(flatten)]
    identity: IdentityArgs,
    #[command(flatten)]
    pipeline: PipelineArgs,
    #[arg(long, value_enum, default_value = "batch")]
    format: Format,
    /// Output file (batch; `-` = stdout) or directory (dedup).
    #[arg(short, long, default_value = "-")]
    output: PathBuf,
    /// Requests per chain: all, last, or N (the 0-based request index).
    #[arg(long, default_value = "all")]
    turns: ctxasm::write::Turns,
    /// Print the summary as JSON on stderr.
    #[arg(long)]
    json: bool,
    /// Exit with status 1 when there is any diagnostic.
    #[arg(long)]
    strict: bool,
}

#[derive(Args)]
struct VerifyArgs {
    #[command(flatten)]
    input: InputArgs,
    #[command(flatten)]
    identity: IdentityArgs,
    #[command(flatten)]
    pipeline: PipelineArgs,
    /// A capture (wire.jsonl: one object per request with body and raw_b64).
    #[arg(long)]
    wire: Vec<PathBuf>,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct CostArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Only the usage recorded in the transcripts, priced (each request
    /// counted once, as ccusage counts it).
    #[arg(long)]
    recorded_only: bool,
    /// A price table (JSON, the format of src/cost/pricing.json)
    /// [default: the built-in table, with its source and date].
    #[arg(long)]
    pricing: Option<PathBuf>,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
    /// Also write a self-contained HTML report (inline SVG charts) here.
    #[arg(long)]
    html: Option<PathBuf>,
    /// Also write one JSON line per request here: recorded and modeled
    /// tokens and cost.
    #[arg(long, value_name = "FILE")]
    per_request: Option<PathBuf>,
    /// A change simulated against the baseline, reported as a delta
    /// (repeatable): ttl=1h|5m, breakpoints=N, model=NAME,
    /// system-prompt-growth=BYTES, no-cross-session-cache, boundary=none|tools.
    #[arg(long = "what-if", value_name = "CHANGE")]
    what_if: Vec<String>,
    /// Which sessions share a prompt cache: every session under one projects
    /// root, of one project, or none.
    #[arg(long, default_value = "root", value_parser = ["root", "project", "session"])]
    account: String,
    /// Pipeline profile for sessions without records: a built-in name
    /// (cc-2.1.328, seed) or a profile file.
    #[arg(long, default_value = "cc-2.1.328")]
    profile: String,
    /// The sessions' environment (env/ layout) for the pipeline.
    #[arg(long)]
    env: Option<PathBuf>,
}

#[derive(Args)]
struct MockServerArgs {
    /// Address to listen on (port 0 = any free port; the first line printed
    /// is `listening on ADDR` with the real port).
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: std::net::SocketAddr,
    /// Requests per minute (token bucket refilled continuously).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    rpm: Option<u64>,
    /// Input tokens per minute (input + cache writes; cache reads are free).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    itpm: Option<u64>,
    /// Output tokens per minute.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    otpm: Option<u64>,
    /// Injected faults: KIND=P,… with KIND an HTTP status (400–599), drop or
    /// slow, e.g. 529=0.05,500=0.02,drop=0.01,slow=0.05.
    #[arg(long = "fail", value_name = "SPEC")]
    fail: Option<ctxasm::mock::Faults>,
    /// Latency of every reply in ms: 50 (fixed), 20-200 (uniform) or exp:40
    /// (exponential with that mean).
    #[arg(long = "latency-ms", value_name = "SPEC", default_value = "0")]
    latency_ms: ctxasm::mock::Latency,
    /// Extra delay of a `slow` fault, in ms.
    #[arg(long, default_value_t = 5000)]
    slow_ms: u64,
    /// Seed of the fault and latency draws.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Append every request to this file as one JSON line (wire.jsonl format).
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Reply rules (the rule list of mock_anthropic.py, or a scenario.json).
    #[arg(long, value_name = "FILE")]
    script: Option<PathBuf>,
    /// How long a message batch stays in_progress, in ms.
    #[arg(long, default_value_t = 2000)]
    batch_delay_ms: u64,
    /// usage.output_tokens of a reply when no rule sets it.
    #[arg(long, default_value_t = 32)]
    output_tokens: u32,
}

#[derive(Subcommand)]
enum ProfileCommand {
    /// Write a profile (static prompt text, tools, params, templates of the
    /// dynamic sections) from one capture (wire.jsonl) or one 2.1.3xx
    /// transcript of a release.
    Extract(ExtractArgs),
}

#[derive(Args)]
struct ExtractArgs {
    /// A wire.jsonl capture or a transcript with api-request-shape entries.
    path: PathBuf,
    /// The capture's environment (env/ layout), to name its values as
    /// template variables [default: inferred from the text].
    #[arg(long)]
    env: Option<PathBuf>,
    /// Output file (`-` = stdout).
    #[arg(short, long, default_value = "-")]
    output: PathBuf,
}

#[derive(Args)]
struct ExpandArgs {
    /// A directory written by `assemble --format dedup`.
    dir: PathBuf,
    /// Output file (`-` = stdout).
    #[arg(short, long, default_value = "-")]
    output: PathBuf,
}

#[derive(Args)]
struct StatsArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
    /// Exit with status 1 when there is any diagnostic.
    #[arg(long)]
    strict: bool,
    /// Diagnostics shown in the table (all are in --json).
    #[arg(long, default_value_t = 20)]
    show: usize,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Stats(args) => stats(&args),
        Command::Assemble(args) => assemble(&args),
        Command::Verify(args) => verify(&args),
        Command::Profile(ProfileCommand::Extract(args)) => profile_extract(&args),
        Command::Cost(args) => cost(&args),
        Command::Expand(args) => expand(&args),
        Command::Send(args) => send(&args),
        Command::Batch(cmd) => batch(&cmd),
        Command::BenchSendBaseline(args) => send_baseline(&args),
        Command::MockServer(args) => mock_server(args),
        Command::BenchBaseline(args) => {
            let disc = args.discover();
            let report = ctxasm::baseline::owned_dom(&disc, args.threads, &args.source());
            print_json(&report)
        }
    }
}

fn mock_server(args: MockServerArgs) -> ExitCode {
    let script = match &args.script {
        Some(p) => match ctxasm::mock::load_script(p) {
            Ok(rules) => rules,
            Err(e) => {
                eprintln!("ctxasm mock-server: --script: {e}");
                return ExitCode::from(2);
            }
        },
        None => Vec::new(),
    };
    let cfg = ctxasm::mock::MockConfig {
        addr: args.addr,
        rpm: args.rpm,
        itpm: args.itpm,
        otpm: args.otpm,
        faults: args.fail.unwrap_or_default(),
        latency: args.latency_ms,
        slow_ms: args.slow_ms,
        seed: args.seed,
        record: args.record,
        script,
        batch_delay: Duration::from_millis(args.batch_delay_ms),
        output_tokens: args.output_tokens,
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ctxasm mock-server: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    runtime.block_on(run_mock_server(cfg))
}

async fn run_mock_server(cfg: ctxasm::mock::MockConfig) -> ExitCode {
    let record = cfg.record.clone();
    let server = match ctxasm::mock::MockServer::start(cfg).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("ctxasm mock-server: {e}");
            return ExitCode::from(2);
        }
    };
    {
        let mut out = std::io::stdout().lock();
        if writeln!(out, "listening on {}", server.addr()).and_then(|()| out.flush()).is_err() {
            eprintln!("ctxasm mock-server: cannot write to stdout");
        }
    }
    if let Err(e) = stop_signal().await {
        eprintln!("ctxasm mock-server: cannot wait for signals: {e}; stopping");
    }
    match server.shutdown().await {
        Ok(st) => {
            let statuses: Vec<String> = st.by_status.iter().map(|(s, n)| format!("{s}: {n}")).collect();
            let record = record.map(|p| format!("; recorded to {}", p.display())).unwrap_or_default();
            eprintln!(
                "ctxasm mock-server: {} requests ({}), {} dropped, {} rate-limited{record}",
                st.requests,
                statuses.join(", "),
                st.dropped,
                st.rate_limited
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ctxasm mock-server: {e}");
            ExitCode::from(1)
        }
    }
}

/// Resolves on SIGINT or SIGTERM.
async fn stop_signal() -> std::io::Result<()> {
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            r = tokio::signal::ctrl_c() => r,
            _ = term.recv() => Ok(()),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c().await
    }
}

fn print_json<T: serde::Serialize>(value: &T) -> ExitCode {
    let mut out = std::io::stdout().lock();
    let written = serde_json::to_writer(&mut out, value).map_err(std::io::Error::other).and_then(|()| writeln!(out));
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ctxasm: cannot write output: {e}");
            ExitCode::from(2)
        }
    }
}

/// A progress bar on stderr for long runs on a terminal.
fn progress_bar(disc: &Discovery) -> Option<indicatif::ProgressBar> {
    let long = disc.files.len() >= 500 || disc.total_bytes() >= 256 << 20;
    if !long || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new(disc.total_bytes());
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{spinner} reading {bytes}/{total_bytes} [{wide_bar}] {bytes_per_sec} eta {eta}",
    ) {
        bar.set_style(style);
    }
    Some(bar)
}

/// `send`'s progress bar on stderr (only when stderr is a terminal): the
/// library reports through `send::report::Progress`, the CLI draws.
#[derive(Default)]
struct SendBar(std::sync::OnceLock<indicatif::ProgressBar>);

impl ctxasm::send::report::Progress for SendBar {
    fn start(&self, total: u64) -> bool {
        if !std::io::stderr().is_terminal() || total == 0 {
            return false;
        }
        let bar = indicatif::ProgressBar::new(total);
        if let Ok(style) =
            indicatif::ProgressStyle::with_template("{spinner} [{wide_bar}] {pos}/{len} {msg} {per_sec} eta {eta}")
        {
            bar.set_style(style);
        }
        self.0.set(bar).is_ok()
    }
    fn update(&self, finished: u64, counters: &ctxasm::send::report::Counters) {
        if let Some(bar) = self.0.get() {
            bar.set_position(finished);
            bar.set_message(ctxasm::send::report::progress_message(counters));
        }
    }
    fn finish(&self) {
        if let Some(bar) = self.0.get() {
            bar.finish_and_clear();
        }
    }
}

fn stats(args: &StatsArgs) -> ExitCode {
    let start = Instant::now();
    let disc = args.input.discover();
    let bar = progress_bar(&disc);
    let tick = |bytes: u64| {
        if let Some(b) = &bar {
            b.inc(bytes);
        }
    };
    let opts = RunOptions { progress: Some(&tick), ..args.input.run_options() };
    let st = ctxasm::stats::collect(&disc, &opts);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let code = if args.json {
        print_json(&st)
    } else {
        let table = ctxasm::stats::render_table(&st, start.elapsed().as_secs_f64(), args.show);
        match std::io::stdout().lock().write_all(table.as_bytes()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("ctxasm: cannot write output: {e}");
                ExitCode::from(2)
            }
        }
    };
    if code != ExitCode::SUCCESS {
        return code;
    }
    let missing = disc.diagnostics.iter().any(|d| matches!(d.kind, DiagKind::NotFound | DiagKind::Io));
    if missing {
        for d in &disc.diagnostics {
            eprintln!("ctxasm: {d}");
        }
        return ExitCode::from(2);
    }
    if args.strict && !st.diagnostics.is_empty() {
        eprintln!("ctxasm: {} diagnostic(s) and --strict", st.diagnostics.len());
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

fn open_output(path: &std::path::Path) -> std::io::Result<Box<dyn Write>> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock())));
    }
    let f =
        std::fs::File::create(path).map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    Ok(Box::new(std::io::BufWriter::with_capacity(1 << 20, f)))
}

fn assemble(args: &AssembleArgs) -> ExitCode {
    let start = Instant::now();
    let disc = args.input.discover();
    let run = args.input.run_options();
    let assembler = match args.pipeline.assembler(&args.identity) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("ctxasm: {e}");
            return ExitCode::from(2);
        }
    };
    let opts = ctxasm::write::AssembleOptions { assembler, turns: args.turns };
    let result = match args.format {
        Format::Batch => {
            open_output(&args.output).and_then(|mut out| ctxasm::write::write_batch(&disc, &run, &opts, &mut out))
        }
        Format::Dedup => {
            if args.output.as_os_str() == "-" {
                eprintln!("ctxasm: --format dedup needs -o DIR");
                return ExitCode::from(2);
            }
            ctxasm::write::write_dedup(&disc, &run, &opts, &args.output)
        }
    };
    let mut summary = match result {
        Ok(s) => s,
        Err(e) => {
            eprintln!("ctxasm: {e}");
            return ExitCode::from(2);
        }
    };
    summary.diagnostics.splice(0..0, disc.diagnostics.iter().cloned());
    let secs = start.elapsed().as_secs_f64();
    if args.json {
        match serde_json::to_string(&summary) {
            Ok(text) => eprintln!("{text}"),
            Err(e) => eprintln!("ctxasm: {e}"),
        }
    } else {
        for d in summary.diagnostics.iter().take(20) {
            eprintln!("ctxasm: {d}");
        }
        if summary.diagnostics.len() > 20 {
            eprintln!("ctxasm: … {} more diagnostics (--json lists all)", summary.diagnostics.len() - 20);
        }
        let ratio =
            if summary.batch_bytes > 0 { summary.bytes_written as f64 / summary.batch_bytes as f64 } else { 0.0 };
        eprintln!(
            "ctxasm: {} sessions, {} recorded requests, {} written; {:.1} MB written ({:.1}% of the batch format's {:.1} MB){}; {:.2} s, {:.0} MB/s",
            summary.sessions,
            summary.recorded_requests,
            summary.requests_written,
            summary.bytes_written as f64 / 1e6,
            ratio * 100.0,
            summary.batch_bytes as f64 / 1e6,
            if args.format == Format::Dedup { format!(", {} segments", summary.segments) } else { String::new() },
            secs,
            summary.bytes_written as f64 / 1e6 / secs.max(1e-9),
        );
        if summary.pipeline_sessions > 0 {
            let p = &summary.pipeline;
            eprintln!(
                "ctxasm: pipeline: {} sessions, {} turns; {} requests repaired ({} synthetic tool results, {} tool results dropped, {} user messages put first, {} media stripped); {} thinking-only and {} blank assistant messages dropped; {} attachments rendered by ctxasm",
                summary.pipeline_sessions,
                p.turns,
                p.requests_repaired,
                p.pairing.synthetic_results,
                p.pairing.dropped_results,
                p.leading_user_inserted,
                p.media_stripped,
                p.thinking_only_dropped,
                p.empty_assistant_dropped,
                p.approximated_attachments
            );
        }
    }
    if disc.diagnostics.iter().any(|d| matches!(d.kind, DiagKind::NotFound | DiagKind::Io)) {
        return ExitCode::from(2);
    }
    if args.strict && !summary.diagnostics.is_empty() {
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

fn verify(args: &VerifyArgs) -> ExitCode {
    let disc = args.input.discover();
    let run = args.input.run_options();
    let mut wire: Option<ctxasm::verify::Wire> = None;
    for path in &args.wire {
        match ctxasm::verify::read_wire(path) {
            Ok(w) => {
                let all = wire.get_or_insert_with(Default::default);
                for (k, mut v) in w {
                    all.entry(k).or_default().append(&mut v);
                }
            }
            Err(e) => {
                eprintln!("ctxasm: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let from_wire = args.identity.device_id.as_deref() == Some("wire");
    let device = if from_wire { ctxasm::verify::DeviceId::FromWire } else { ctxasm::verify::DeviceId::Given };
    let assembler = match args.pipeline.assembler(&args.identity) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("ctxasm: {e}");
            return ExitCode::from(2);
        }
    };
    let report = ctxasm::verify::verify(&disc, &run, &assembler, wire.as_ref(), device);
    let code = if args.json {
        print_json(&report)
    } else {
        let mut o = String::new();
        use std::fmt::Write as _;
        let _ = writeln!(o, "sessions          {:>8}", report.sessions);
        let _ = writeln!(o, "requests          {:>8}", report.requests);
        let _ = writeln!(o, "messages hashed   {:>8}   matching {}", report.messages_hashed, report.hash_matches);
        if wire.is_some() {
            let _ = writeln!(
                o,
                "wire compared     {:>8}   byte-equal {}   JSON-equal {}",
                report.wire_compared, report.wire_byte_equal, report.wire_json_equal
            );
        }
        for m in &report.mismatches {
            let _ = writeln!(o, "{} {}:{}: {}", m.kind, m.file, m.line, m.message);
            if let Some(p) = &m.path {
                let show = |v: &Option<serde_json::Value>| {
                    v.as_ref().map(|v| ctxasm::diag::clip(&v.to_string(), 200)).unwrap_or_default()
                };
                let _ = writeln!(o, "  at {p}: expected {} got {}", show(&m.expected), show(&m.got));
            }
        }
        let _ = writeln!(o, "{}", if report.clean() { "verify: clean" } else { "verify: MISMATCH" });
        match std::io::stdout().lock().write_all(o.as_bytes()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(_) => ExitCode::from(2),
        }
    };
    if code != ExitCode::SUCCESS {
        return code;
    }
    if disc.diagnostics.iter().any(|d| matches!(d.kind, DiagKind::NotFound | DiagKind::Io)) {
        return ExitCode::from(2);
    }
    if report.clean() { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

fn cost(args: &CostArgs) -> ExitCode {
    let pricing = match &args.pricing {
        Some(p) => match ctxasm::cost::pricing::Pricing::load(p) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("ctxasm: {e}");
                return ExitCode::from(2);
            }
        },
        None => ctxasm::cost::pricing::Pricing::builtin(),
    };
    if args.recorded_only && (args.html.is_some() || !args.what_if.is_empty()) {
        eprintln!("ctxasm: cost: --html and --what-if need the modeled cost (drop --recorded-only)");
        return ExitCode::from(2);
    }
    let disc = args.input.discover();
    let failed_input = disc.diagnostics.iter().any(|d| matches!(d.kind, DiagKind::NotFound | DiagKind::Io));
    if args.recorded_only {
        let report = ctxasm::cost::usage::recorded_report(&disc, &args.input.run_options(), &pricing);
        let code = if args.json {
            print_json(&serde_json::json!({ "recorded": report.totals, "report": report }))
        } else {
            write_stdout(&ctxasm::cost::report::recorded_table(&report))
        };
        return if failed_input { ExitCode::from(2) } else { code };
    }
    let what_ifs: Result<Vec<ctxasm::cost::modeled::WhatIf>, String> = args.what_if.iter().map(|w| w.parse()).collect();
    let what_ifs = match what_ifs {
        Ok(w) => w,
        Err(e) => {
            eprintln!("ctxasm: {e}");
            return ExitCode::from(2);
        }
    };
    let prep = match ctxasm::assemble::prep::ProfilePrep::load(&args.profile, args.env.as_deref(), Default::default()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("ctxasm: {e}");
            return ExitCode::from(2);
        }
    };
    let opts = ctxasm::cost::modeled::ModelOptions {
        account: args.account.parse().unwrap_or_default(),
        what_ifs,
        prompt_known: prep.profile.has_prompt_text(),
        ..Default::default()
    };
    let assembler = ctxasm::assemble::driver::Assembler {
        mode: ctxasm::assemble::driver::Mode::Auto,
        records: Default::default(),
        pipeline: Box::new(prep),
    };
    let bar = progress_bar(&disc);
    let tick = |bytes: u64| {
        if let Some(b) = &bar {
            b.inc(bytes);
        }
    };
    let run = RunOptions { progress: Some(&tick), ..args.input.run_options() };
    let report = ctxasm::cost::modeled::cost_report(&disc, &run, &assembler, &pricing, &opts);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    for d in report.diagnostics.iter().take(10) {
        eprintln!("ctxasm: {d}");
    }
    if report.diagnostics.len() > 10 {
        eprintln!("ctxasm: … {} more diagnostics (all in --json)", report.diagnostics.len() - 10);
    }
    if let Some(path) = &args.html
        && let Err(e) = std::fs::write(path, ctxasm::cost::report::html(&report))
    {
        eprintln!("ctxasm: {}: {e}", path.display());
        return ExitCode::from(2);
    }
    if let Some(path) = &args.per_request {
        let mut text = String::new();
        for t in &report.turns {
            text.push_str(&serde_json::to_string(t).unwrap_or_default());
            text.push('\n');
        }
        if let Err(e) = std::fs::write(path, text) {
            eprintln!("ctxasm: {}: {e}", path.display());
            return ExitCode::from(2);
        }
    }
    let code = if args.json { print_json(&report) } else { write_stdout(&ctxasm::cost::report::table(&report)) };
    if failed_input { ExitCode::from(2) } else { code }
}

fn write_stdout(text: &str) -> ExitCode {
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(2),
    }
}

fn profile_extract(args: &ExtractArgs) -> ExitCode {
    let env = match &args.env {
        Some(d) => match ctxasm::env::SessionEnv::from_dir(d) {
            Ok(e) => Some(e),
            Err(e) => {
                eprintln!("ctxasm: {e}");
                return ExitCode::from(2);
            }
        },
        None => None,
    };
    let profile = match ctxasm::profile::extract(&args.path, env.as_ref()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("ctxasm: {e}");
            return ExitCode::from(1);
        }
    };
    let text = profile.to_json();
    let result = open_output(&args.output).and_then(|mut out| {
        out.write_all(text.as_bytes())?;
        out.write_all(b"\n")?;
        out.flush()
    });
    match result {
        Ok(()) => {
            eprintln!(
                "ctxasm: profile {} ({:?} layout, {} tools, {} static + {} dynamic sections) from {}",
                profile.name,
                profile.layout,
                profile.tools.len(),
                profile.prompt.static_sections.len(),
                profile.prompt.dynamic_sections.len(),
                args.path.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ctxasm: {e}");
            ExitCode::from(2)
        }
    }
}

fn expand(args: &ExpandArgs) -> ExitCode {
    let result = open_output(&args.output).and_then(|mut out| ctxasm::write::expand(&args.dir, &mut out));
    match result {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ctxasm: {e}");
            ExitCode::from(2)
        }
    }
}

/// The runtime of `send` and `batch`: one thread is plenty for network
/// I/O at API rates (the journal has its own thread), and a paced sender on
/// a multi-threaded runtime spends its CPU waking idle workers (measured by
/// scripts/bench-compare: 0.6 s → 0.3 s per 1,000 requests at 6,000/min).
fn runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| {
        eprintln!("ctxasm: cannot start the async runtime: {e}");
        ExitCode::from(2)
    })
}

fn api_key() -> Result<String, ExitCode> {
    match std::env::var("ANTHROPIC_API_KEY") {
        Ok(k) if !k.trim().is_empty() => Ok(k),
        _ => {
            eprintln!("ctxasm: ANTHROPIC_API_KEY is not set");
            Err(ExitCode::from(2))
        }
    }
}

fn timeout(secs: f64) -> Result<Duration, ExitCode> {
    if secs.is_finite() && secs > 0.0 {
        Ok(Duration::from_secs_f64(secs.min(1e9)))
    } else {
        eprintln!("ctxasm: --timeout must be a positive number of seconds");
        Err(ExitCode::from(2))
    }
}

/// Read a send/batch input; bad lines are printed (at most 20).
fn read_send_input(path: &std::path::Path) -> Result<ctxasm::send::input::Input, ExitCode> {
    let input = ctxasm::send::input::read_input(path).map_err(|e| {
        eprintln!("ctxasm: {e}");
        ExitCode::from(2)
    })?;
    print_input_errors(&input.errors);
    Ok(input)
}

fn print_input_errors(errors: &[ctxasm::send::input::InputError]) {
    for e in errors.iter().take(20) {
        eprintln!("ctxasm: {e}");
    }
    if errors.len() > 20 {
        eprintln!("ctxasm: … {} more bad lines", errors.len() - 20);
    }
}

/// Ctrl-C / SIGTERM: the first drains, the second aborts. The signal's exit
/// status (130 / 143) is left in `code`.
fn watch_signals(
    tx: tokio::sync::watch::Sender<ctxasm::send::dispatch::Stop>,
    code: std::sync::Arc<std::sync::atomic::AtomicU8>,
) {
    use ctxasm::send::dispatch::Stop;
    use std::sync::atomic::Ordering;
    use tokio::signal::unix::{SignalKind, signal};
    tokio::spawn(async move {
        let (Ok(mut int), Ok(mut term)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) else {
            eprintln!("ctxasm: cannot watch for signals");
            return;
        };
        loop {
            let c = tokio::select! {
                _ = int.recv() => 130,
                _ = term.recv() => 143,
            };
            if code.load(Ordering::Relaxed) == 0 {
                code.store(c, Ordering::Relaxed);
                eprintln!("ctxasm: stopping: no new requests; waiting for those in flight (Ctrl-C again aborts them)");
                let _ = tx.send(Stop::Drain);
            } else {
                eprintln!("ctxasm: aborting the requests in flight (they are sent again by the next run)");
                let _ = tx.send(Stop::Abort);
            }
        }
    });
}

fn send(args: &SendArgs) -> ExitCode {
    if args.concurrency == 0 || args.max_attempts == 0 {
        eprintln!("ctxasm: --concurrency and --max-attempts must be at least 1");
        return ExitCode::from(2);
    }
    if [args.rpm, args.itpm, args.otpm].contains(&Some(0)) {
        eprintln!("ctxasm: --rpm, --itpm and --otpm must be at least 1");
        return ExitCode::from(2);
    }
    let timeout = match timeout(args.timeout) {
        Ok(t) => t,
        Err(c) => return c,
    };
    let input = match read_send_input(&args.input) {
        Ok(i) => i,
        Err(c) => return c,
    };
    if args.dry_run {
        let rows = ctxasm::send::dryrun::estimate(&input, &ctxasm::cost::pricing::Pricing::builtin());
        let code = write_stdout(&ctxasm::send::dryrun::render(&rows));
        return if input.errors.is_empty() { code } else { ExitCode::from(2) };
    }
    let Some(results) = args.results.clone() else {
        eprintln!("ctxasm: send needs --results FILE (or --dry-run)");
        return ExitCode::from(2);
    };
    let key = match api_key() {
        Ok(k) => k,
        Err(c) => return c,
    };
    let opts = ctxasm::send::SendOptions {
        client: ctxasm::send::client::ClientConfig {
            endpoint: args.api.endpoint.clone(),
            api_key: Some(key),
            beta: args.api.beta.clone(),
            timeout,
            pool: args.concurrency,
        },
        results,
        concurrency: args.concurrency,
        limits: ctxasm::send::limits::Limits { rpm: args.rpm, itpm: args.itpm, otpm: args.otpm },
        adapt: !args.no_adapt,
        max_attempts: args.max_attempts,
        progress: Some(std::sync::Arc::new(SendBar::default())),
    };
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(c) => return c,
    };
    let code = std::sync::Arc::new(std::sync::atomic::AtomicU8::new(0));
    let result = rt.block_on(async {
        let (tx, rx) = tokio::sync::watch::channel(ctxasm::send::dispatch::Stop::Run);
        watch_signals(tx, code.clone());
        ctxasm::send::send(&opts, &input, rx).await
    });
    rt.shutdown_timeout(Duration::from_millis(100));
    let run = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("ctxasm: {e}");
            return ExitCode::from(2);
        }
    };
    let r = &run.resume;
    if r.lines > 0 || r.torn_bytes > 0 {
        eprintln!(
            "ctxasm: send: journal {}: {} lines found ({} of this input){}",
            opts.results.display(),
            r.lines,
            run.summary.already_done,
            if r.torn_bytes > 0 {
                format!("; a torn last line of {} bytes was cut off", r.torn_bytes)
            } else {
                String::new()
            }
        );
    }
    for (line, id) in r.duplicates.iter().take(5) {
        eprintln!("ctxasm: journal {}:{line}: custom_id {id:?} is already on an earlier line", opts.results.display());
    }
    if !run.refused.is_empty() {
        eprintln!("ctxasm: {} results not written: their custom_id was already in the journal", run.refused.len());
    }
    eprintln!("{}", run.summary.line("send"));
    match code.load(std::sync::atomic::Ordering::Relaxed) {
        0 => ExitCode::from(ctxasm::send::exit_status(&run.summary, input.errors.len())),
        c => ExitCode::from(c),
    }
}

fn send_baseline(args: &SendBaselineArgs) -> ExitCode {
    let input = match read_send_input(&args.input) {
        Ok(i) => i,
        Err(c) => return c,
    };
    let (key, timeout) = match (api_key(), timeout(args.timeout)) {
        (Ok(k), Ok(t)) => (k, t),
        (Err(c), _) | (_, Err(c)) => return c,
    };
    let client = ctxasm::send::client::ClientConfig {
        endpoint: args.api.endpoint.clone(),
        api_key: Some(key),
        beta: args.api.beta.clone(),
        timeout,
        pool: args.concurrency,
    };
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(c) => return c,
    };
    let result = rt.block_on(ctxasm::send::baseline::run(
        &client,
        &input,
        &args.results,
        args.concurrency,
        args.max_attempts.max(1),
    ));
    match result {
        Ok(s) => {
            eprintln!("{}", s.line("bench-send-baseline"));
            ExitCode::from(ctxasm::send::exit_status(&s, input.errors.len()))
        }
        Err(e) => {
            eprintln!("ctxasm: {e}");
            ExitCode::from(2)
        }
    }
}

fn batch_client(api: &ApiArgs) -> Result<ctxasm::send::client::Client, ExitCode> {
    let key = api_key()?;
    let cfg = ctxasm::send::client::ClientConfig {
        endpoint: api.endpoint.clone(),
        api_key: Some(key),
        beta: api.beta.clone(),
        timeout: Duration::from_secs(600),
        pool: 4,
    };
    ctxasm::send::client::Client::new(&cfg).map_err(|e| {
        eprintln!("ctxasm: {e}");
        ExitCode::from(2)
    })
}

fn batch(cmd: &BatchCommand) -> ExitCode {
    use ctxasm::send::batches;
    let api = match cmd {
        BatchCommand::Submit(a) => &a.api,
        BatchCommand::Status(a) => &a.api,
        BatchCommand::Results(a) => &a.api,
    };
    let ids = match cmd {
        BatchCommand::Submit(_) => Vec::new(),
        BatchCommand::Status(BatchStatusArgs { ids, .. }) | BatchCommand::Results(BatchResultsArgs { ids, .. }) => {
            match ids.ids() {
                Ok(ids) => ids,
                Err(e) => {
                    eprintln!("ctxasm: {e}");
                    return ExitCode::from(2);
                }
            }
        }
    };
    let input = match cmd {
        BatchCommand::Submit(a) => match read_send_input(&a.input) {
            Ok(i) => Some(i),
            Err(c) => return c,
        },
        _ => None,
    };
    let client = match batch_client(api) {
        Ok(c) => c,
        Err(c) => return c,
    };
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(c) => return c,
    };
    rt.block_on(async {
        match cmd {
            BatchCommand::Submit(a) => {
                let Some(input) = input else { return ExitCode::from(2) };
                let split = batches::Split { requests: a.max_batch_requests.max(1), bytes: a.max_batch_bytes };
                let (chunks, errors) = batches::split(&input, split);
                print_input_errors(&errors);
                let shown = a.input.display().to_string();
                let mut on_batch = |s: &batches::Submitted| {
                    println!("{} {} requests", s.id, s.requests);
                    match &a.state {
                        Some(p) => batches::append_state(p, s, &shown, &a.api.endpoint),
                        None => Ok(()),
                    }
                };
                match batches::submit(&client, chunks, a.max_attempts.max(1), &mut on_batch).await {
                    Ok(done) => {
                        let n: usize = done.iter().map(|s| s.requests).sum();
                        eprintln!("ctxasm: batch submit: {} batches, {n} requests", done.len());
                        if input.errors.is_empty() && errors.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(2) }
                    }
                    Err(e) => {
                        eprintln!("ctxasm: {e}");
                        ExitCode::from(1)
                    }
                }
            }
            BatchCommand::Status(a) => {
                let result = if a.wait {
                    let mut print = |b: &serde_json::Value| eprintln!("ctxasm: {}", batches::status_line(b));
                    batches::wait(&client, &ids, Duration::from_millis(a.poll_ms.max(1)), &mut print).await
                } else {
                    let mut all = Vec::new();
                    for id in &ids {
                        match batches::status(&client, id).await {
                            Ok(b) => all.push(b),
                            Err(e) => {
                                eprintln!("ctxasm: {e}");
                                return ExitCode::from(1);
                            }
                        }
                    }
                    Ok(all)
                };
                match result {
                    Ok(all) => {
                        let text: String = all.iter().map(|b| batches::status_line(b) + "\n").collect();
                        write_stdout(&text)
                    }
                    Err(e) => {
                        eprintln!("ctxasm: {e}");
                        ExitCode::from(1)
                    }
                }
            }
            BatchCommand::Results(a) => batch_results(&client, &ids, &a.output).await,
        }
    })
}

async fn batch_results(client: &ctxasm::send::client::Client, ids: &[String], output: &std::path::Path) -> ExitCode {
    use ctxasm::send::{batches, journal};
    let (file, resume) = match journal::open(output) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("ctxasm: {e}");
            return ExitCode::from(2);
        }
    };
    let handle = match journal::spawn(journal::Writer::new(file, output, resume.done.keys().cloned())) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("ctxasm: journal {}: {e}", output.display());
            return ExitCode::from(2);
        }
    };
    let Some(sender) = handle.sender() else { return ExitCode::from(2) };
    let mut total = batches::ResultCounts::default();
    let mut code = 0u8;
    for id in ids {
        match batches::results(client, id, &sender).await {
            Ok(c) => {
                c.warnings.iter().for_each(|w| eprintln!("ctxasm: {w}"));
                eprintln!("ctxasm: batch {id}: {} succeeded, {} failed", c.succeeded, c.failed);
                total.succeeded += c.succeeded;
                total.failed += c.failed;
                total.bad_lines += c.bad_lines;
            }
            Err(e) => {
                eprintln!("ctxasm: {e}");
                code = code.max(1);
            }
        }
    }
    drop(sender);
    let report = tokio::task::spawn_blocking(move || handle.finish()).await;
    match report {
        Ok(Ok(r)) => {
            eprintln!(
                "ctxasm: batch results: {} lines written to {} ({} skipped: already there)",
                r.written,
                output.display(),
                r.refused.len()
            );
        }
        Ok(Err(e)) => {
            eprintln!("ctxasm: {e}");
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("ctxasm: journal writer: {e}");
            return ExitCode::from(2);
        }
    }
    if total.failed > 0 || total.bad_lines > 0 {
        code = code.max(1);
    }
    ExitCode::from(code)
}
