//! `ctxasm mock-server`: a local stand-in for the Anthropic Messages API.
//!
//! It answers `POST /v1/messages` (JSON, or SSE with `"stream": true`),
//! `POST /v1/messages/count_tokens` and the Message Batches endpoints, with
//! realistic `usage` from the crate's prompt-cache simulator
//! ([`crate::cost::sim`]), token-bucket rate limits with the real headers,
//! injected faults (deterministic from a seed), per-request latency, an
//! append-only record of every request (the `wire.jsonl` capture format) and
//! scripted replies (the rule format of `shared/capture/mock_anthropic.py`).
//!
//! One concern per module: [`spec`] (fault and latency specs, the
//! per-request draw), [`script`] (reply rules), [`request`] (request bodies
//! as [`crate::assemble::Body`]), [`reply`] (messages, usage, SSE events,
//! error envelopes), [`pyjson`] (Python-compatible serializers of the
//! reply format), [`ratelimit`] (token buckets and headers), [`batches`]
//! (Message Batches), [`record`] (the request log), [`clock`] (server time),
//! [`server`] (HTTP serving and the request flow); [`mcp`] is the stdio MCP
//! server of `ctxasm mock-mcp`.

pub mod batches;
pub mod clock;
pub mod mcp;
pub mod pyjson;
pub mod ratelimit;
pub mod record;
pub mod reply;
pub mod request;
pub mod script;
pub mod server;
pub mod spec;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

pub use request::body_from_request;
pub use script::{Reply, Rule, When, load_script};
pub use server::{MockServer, ServerLimits};
pub use spec::{Fault, Faults, Latency};

/// How the mock server behaves.
#[derive(Debug, Clone)]
pub struct MockConfig {
    /// Where to listen (`127.0.0.1:0` picks a free port; see [`MockServer::addr`]).
    pub addr: SocketAddr,
    /// Requests per minute (`None` = unlimited).
    pub rpm: Option<u64>,
    /// Input tokens per minute: `input_tokens + cache_creation_input_tokens`.
    pub itpm: Option<u64>,
    /// Output tokens per minute.
    pub otpm: Option<u64>,
    /// Injected faults (`529=0.05,500=0.02,drop=0.01,slow=0.05`).
    pub faults: Faults,
    /// Latency added to every reply (`--latency-ms`).
    pub latency: Latency,
    /// Extra delay of a `slow` fault, in milliseconds.
    pub slow_ms: u64,
    /// Seed of the per-request draw (faults and latency).
    pub seed: u64,
    /// Append every request to this JSONL file.
    pub record: Option<PathBuf>,
    /// Reply rules (first match wins), see [`load_script`].
    pub script: Vec<Rule>,
    /// How long a message batch stays `in_progress`.
    pub batch_delay: Duration,
    /// `usage.output_tokens` of a reply when no rule sets it.
    pub output_tokens: u32,
}

impl Default for MockConfig {
    fn default() -> Self {
        MockConfig {
            addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
            rpm: None,
            itpm: None,
            otpm: None,
            faults: Faults::default(),
            latency: Latency::default(),
            slow_ms: 5000,
            seed: 0,
            record: None,
            script: Vec::new(),
            batch_delay: Duration::from_secs(2),
            output_tokens: 32,
        }
    }
}

/// What the server has seen so far.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct MockStats {
    /// Requests received (every method and path).
    pub requests: u64,
    /// Replies by HTTP status (a dropped reply counts under the status it began with).
    pub by_status: BTreeMap<u16, u64>,
    /// Replies cut off by a `drop` fault.
    pub dropped: u64,
    /// 429s from the rate limits (not injected 429 faults).
    pub rate_limited: u64,
    /// Arrival time (ms since server start) and path of every request, in
    /// arrival order (at most [`server::MAX_ARRIVALS`], paths cut to
    /// [`server::ARRIVAL_PATH_BYTES`]; a path answered 414 is not kept).
    pub arrivals: Vec<(u64, String)>,
    /// The most connections served at once.
    pub peak_connections: u64,
}

/// Why the mock server could not start, load its script or finish its record.
#[derive(Debug, thiserror::Error)]
pub enum MockError {
    /// A fault or latency spec (or another flag value) is malformed.
    #[error("{0}")]
    Spec(String),
    /// The script file could not be read or is not a valid rule list.
    #[error("{}: {message}", path.display())]
    Script {
        /// The file.
        path: PathBuf,
        /// What is wrong, with its position.
        message: String,
    },
    /// The listening socket could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The record file could not be opened, written or synced.
    #[error("record {}: {source}", path.display())]
    Record {
        /// The record file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A background task of the server failed (a bug).
    #[error("mock server task failed: {0}")]
    Task(String),
}
