//! The flags of the commands that talk HTTP (send, batch, mock-server,
//! bench-send-baseline): built only with the `net` feature. No logic.

use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Args)]
pub struct ApiArgs {
    /// Base URL of the API.
    #[arg(long, default_value = "https://api.anthropic.com")]
    pub endpoint: String,
    /// anthropic-beta header (a comma list); the batch format carries no betas.
    #[arg(long, value_name = "LIST")]
    pub beta: Option<String>,
}

#[derive(Args)]
pub struct SendArgs {
    /// A batch file (`assemble --format batch`) or a dedup directory.
    pub input: PathBuf,
    #[command(flatten)]
    pub api: ApiArgs,
    /// The journal: one JSON line per finished request; requests already in
    /// it are skipped (required unless --dry-run).
    #[arg(long, value_name = "FILE")]
    pub results: Option<PathBuf>,
    /// Requests on the wire at once.
    #[arg(long, default_value_t = 8)]
    pub concurrency: usize,
    /// Client-side limit: requests per minute.
    #[arg(long)]
    pub rpm: Option<u64>,
    /// Client-side limit: input tokens per minute (input + cache writes).
    #[arg(long)]
    pub itpm: Option<u64>,
    /// Client-side limit: output tokens per minute.
    #[arg(long)]
    pub otpm: Option<u64>,
    /// Attempts per request in all (retries follow the SDKs' policy).
    #[arg(long, default_value_t = 5)]
    pub max_attempts: u32,
    /// Seconds per attempt, connect to last byte.
    #[arg(long, default_value_t = 600.0, value_name = "SECS")]
    pub timeout: f64,
    /// Longest wait before a retry (60s, 500ms, 2m; a bare number is
    /// seconds). A server asking for more (retry-after) is not waited for:
    /// the request is journaled as rate_limited, the run stops taking new
    /// requests, and the next run sends the rest.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = ctxasm::send::retry::parse_duration)]
    pub max_retry_wait: std::time::Duration,
    /// Read and validate the input, print requests, estimated input tokens
    /// and cost per model; send nothing (no key needed).
    #[arg(long)]
    pub dry_run: bool,
    /// Ignore the server's anthropic-ratelimit-* headers.
    #[arg(long, hide = true)]
    pub no_adapt: bool,
}

#[derive(Args)]
pub struct SendBaselineArgs {
    pub input: PathBuf,
    #[command(flatten)]
    pub api: ApiArgs,
    #[arg(long, value_name = "FILE")]
    pub results: PathBuf,
    #[arg(long, default_value_t = 8)]
    pub concurrency: usize,
    #[arg(long, default_value_t = 5)]
    pub max_attempts: u32,
    #[arg(long, default_value_t = 600.0, value_name = "SECS")]
    pub timeout: f64,
}

#[derive(Subcommand)]
pub enum BatchCommand {
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
pub struct BatchSubmitArgs {
    /// A batch file or a dedup directory.
    pub input: PathBuf,
    #[command(flatten)]
    pub api: ApiArgs,
    /// Append each submitted batch (one JSON line) to this file.
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// Attempts per submission for error statuses (no reply is never retried).
    #[arg(long, default_value_t = 5)]
    pub max_attempts: u32,
    #[arg(long, hide = true, default_value_t = ctxasm::send::batches::MAX_REQUESTS)]
    pub max_batch_requests: usize,
    #[arg(long, hide = true, default_value_t = ctxasm::send::batches::MAX_BYTES)]
    pub max_batch_bytes: usize,
}

#[derive(Args)]
pub struct BatchIds {
    /// A batch id.
    pub id: Option<String>,
    /// Every batch of a state file written by `batch submit --state`.
    #[arg(long, value_name = "FILE", conflicts_with = "id")]
    pub state: Option<PathBuf>,
}

/// The API flags of `batch status|results`: with `--state`, the endpoint
/// is the one the state file names (`--endpoint` must then match it).
#[derive(Args)]
pub struct BatchApiArgs {
    /// Base URL of the API (default https://api.anthropic.com; with --state,
    /// the state file's endpoint, which this must equal if given).
    #[arg(long)]
    pub endpoint: Option<String>,
    /// anthropic-beta header (a comma list).
    #[arg(long, value_name = "LIST")]
    pub beta: Option<String>,
}

#[derive(Args)]
pub struct BatchStatusArgs {
    #[command(flatten)]
    pub ids: BatchIds,
    #[command(flatten)]
    pub api: BatchApiArgs,
    /// Poll until every batch has ended.
    #[arg(long)]
    pub wait: bool,
    /// First poll interval with --wait (then ×1.5 per poll, at most 60 s).
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    pub poll_ms: u64,
}

#[derive(Args)]
pub struct BatchResultsArgs {
    #[command(flatten)]
    pub ids: BatchIds,
    #[command(flatten)]
    pub api: BatchApiArgs,
    /// The journal file to write (appended to; results already in it are skipped).
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
}

#[derive(Args)]
pub struct MockServerArgs {
    /// Address to listen on (port 0 = any free port; the first line printed
    /// is `listening on ADDR` with the real port).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: std::net::SocketAddr,
    /// Requests per minute (token bucket refilled continuously).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub rpm: Option<u64>,
    /// Input tokens per minute (input + cache writes; cache reads are free).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub itpm: Option<u64>,
    /// Output tokens per minute.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub otpm: Option<u64>,
    /// Injected faults: KIND=P,… with KIND an HTTP status (400–599), drop or
    /// slow, e.g. 529=0.05,500=0.02,drop=0.01,slow=0.05.
    #[arg(long = "fail", value_name = "SPEC")]
    pub fail: Option<ctxasm::mock::Faults>,
    /// Latency of every reply in ms: 50 (fixed), 20-200 (uniform) or exp:40
    /// (exponential with that mean).
    #[arg(long = "latency-ms", value_name = "SPEC", default_value = "0")]
    pub latency_ms: ctxasm::mock::Latency,
    /// Extra delay of a `slow` fault, in ms.
    #[arg(long, default_value_t = 5000)]
    pub slow_ms: u64,
    /// Seed of the fault and latency draws.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Append every request to this file as one JSON line (wire.jsonl format).
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Reply rules (the rule list of mock_anthropic.py, or a scenario.json).
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,
    /// How long a message batch stays in_progress, in ms.
    #[arg(long, default_value_t = 2000)]
    pub batch_delay_ms: u64,
    /// usage.output_tokens of a reply when no rule sets it.
    #[arg(long, default_value_t = 32)]
    pub output_tokens: u32,
    /// Connections served at once (more wait in the listen backlog).
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections: u64,
    /// Longest wait for a request head before the connection is closed.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = ctxasm::send::retry::parse_duration)]
    pub header_timeout: std::time::Duration,
    /// Longest wait for a request body before a 408.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = ctxasm::send::retry::parse_duration)]
    pub body_timeout: std::time::Duration,
}
