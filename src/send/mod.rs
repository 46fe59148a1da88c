//! `ctxasm send`: a rate-limited async dispatcher of assembled Messages API
//! requests that never loses or duplicates a result, and `ctxasm batch`:
//! the same requests through the Message Batches API.
//!
//! One concern per module:
//! - [`input`]: the batch file or dedup directory → requests (body bytes
//!   untouched);
//! - [`journal`]: the append-only results file, resume and crash safety;
//! - [`retry`]: the SDKs' retry policy (facts §3.4);
//! - [`limits`]: client-side token buckets and server-header adaptation
//!   (facts §3.1, §3.2);
//! - [`client`] and [`sse`]: one HTTP attempt, streamed replies rebuilt;
//! - [`dispatch`]: the scheduler and the attempts;
//! - [`report`]: counters, the progress hook, the summary;
//! - [`dryrun`]: `--dry-run`'s per-model estimate;
//! - [`baseline`]: the fixed-concurrency sender the benchmark compares with;
//! - [`batches`]: `batch submit|status|results` (facts §4).
//!
//! Fact references (§…) are to `../shared/docs/anthropic-api-facts.md`.

pub mod baseline;
pub mod batches;
pub mod client;
pub mod dispatch;
pub mod dryrun;
pub mod input;
pub mod journal;
pub mod limits;
pub mod report;
pub mod retry;
pub mod sse;

use client::{Client, ClientConfig, ClientError};
use dispatch::{Dispatch, Stop};
use input::{Input, Request};
use journal::{JournalError, Resume, Writer};
use limits::{Limiter, Limits};
use report::{Counters, Summary};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Everything `send` needs besides the input.
#[derive(Clone)]
pub struct SendOptions {
    pub client: ClientConfig,
    /// The journal (`--results`).
    pub results: PathBuf,
    pub concurrency: usize,
    pub limits: Limits,
    /// Follow the server's rate-limit headers.
    pub adapt: bool,
    pub max_attempts: u32,
    /// Told how the run goes (the CLI draws a progress bar from it).
    pub progress: Option<Arc<dyn report::Progress>>,
}

/// What [`send_with`] takes besides [`SendOptions`] (kept apart so that
/// callers building `SendOptions` field by field keep compiling).
#[derive(Debug, Clone, Copy)]
pub struct SendPolicy {
    /// `--max-retry-wait`: the longest wait before a retry; a server asking
    /// for more is not waited for (the request is journaled as
    /// `rate_limited` and the run drains, [`dispatch`]).
    pub max_retry_wait: Duration,
}

impl Default for SendPolicy {
    fn default() -> Self {
        SendPolicy { max_retry_wait: retry::DEFAULT_MAX_RETRY_WAIT }
    }
}

impl std::fmt::Debug for SendOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendOptions")
            .field("client", &self.client)
            .field("results", &self.results)
            .field("concurrency", &self.concurrency)
            .field("limits", &self.limits)
            .field("adapt", &self.adapt)
            .field("max_attempts", &self.max_attempts)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

/// A run that could not go on.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error("{0}")]
    JournalWrite(std::io::Error),
    #[error(transparent)]
    Client(#[from] ClientError),
}

/// What a run did.
#[derive(Debug, Clone)]
pub struct SendRun {
    pub summary: Summary,
    /// The journal as it was found.
    pub resume: Resume,
    /// Records the writer refused (their `custom_id` was already written):
    /// always empty unless something is wrong.
    pub refused: Vec<String>,
}

/// The requests of `input` not yet in the journal, and the summary's
/// counts of the others.
pub fn pending(input: &Input, resume: &Resume) -> (Vec<Request>, Summary) {
    let mut summary = Summary { requests: input.requests.len() as u64, ..Summary::default() };
    let mut todo = Vec::with_capacity(input.requests.len());
    for r in &input.requests {
        match resume.done.get(&r.custom_id) {
            Some(&status) => {
                summary.already_done += 1;
                if status != 200 {
                    summary.already_failed += 1;
                }
            }
            None => {
                summary.resumed_retries += u64::from(resume.retry.contains_key(&r.custom_id));
                todo.push(r.clone());
            }
        }
    }
    (todo, summary)
}

/// Send every request of `input` without a final line in the journal
/// ([`send_with`] and the default [`SendPolicy`]).
pub async fn send(opts: &SendOptions, input: &Input, stop: watch::Receiver<Stop>) -> Result<SendRun, SendError> {
    send_with(opts, &SendPolicy::default(), input, stop).await
}

/// Send every request of `input` without a final line in the journal
/// (requests with only retryable lines are sent again).
pub async fn send_with(
    opts: &SendOptions,
    policy: &SendPolicy,
    input: &Input,
    stop: watch::Receiver<Stop>,
) -> Result<SendRun, SendError> {
    let client = Client::new(&opts.client)?;
    let (file, resume) = journal::open(&opts.results)?;
    let (todo, base) = pending(input, &resume);
    let handle = journal::spawn(Writer::new(file, &opts.results, resume.done.keys().cloned()))
        .map_err(SendError::JournalWrite)?;
    let Some(sender) = handle.sender() else {
        return Err(SendError::JournalWrite(std::io::Error::other("journal writer is not running")));
    };
    let counters = Arc::new(Counters::default());
    let progress = opts.progress.clone().filter(|p| p.start(todo.len() as u64));
    let ticker = progress.clone().map(|p| {
        let c = counters.clone();
        tokio::spawn(async move {
            loop {
                p.update(Counters::get(&c.ok) + Counters::get(&c.failed), &c);
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
    });
    let d = Dispatch {
        client,
        limiter: Arc::new(Limiter::new(opts.limits, opts.adapt)),
        journal: sender,
        concurrency: opts.concurrency,
        max_attempts: opts.max_attempts,
        max_retry_wait: policy.max_retry_wait,
        counters,
    };
    let ran = dispatch::run(d, todo.into(), stop).await;
    if let Some(t) = ticker {
        t.abort();
    }
    if let Some(p) = progress {
        p.finish();
    }
    let written = tokio::task::spawn_blocking(move || handle.finish())
        .await
        .unwrap_or_else(|e| Err(std::io::Error::other(format!("journal writer: {e}"))))
        .map_err(SendError::JournalWrite)?;
    let summary = Summary {
        requests: base.requests,
        already_done: base.already_done,
        already_failed: base.already_failed,
        resumed_retries: base.resumed_retries,
        ..ran
    };
    Ok(SendRun { summary, resume, refused: written.refused })
}

/// The exit status of a finished `send`: 0 when every request of the input
/// finished with 200 (in this run or an earlier one), 1 when some finished
/// with an error status or are left for the next run (no reply,
/// rate-limited past `--max-retry-wait`, interrupted); 2 when the input had
/// bad lines (the rest was sent); a stop by signal is the caller's (130 / 143).
pub fn exit_status(summary: &Summary, input_errors: usize) -> u8 {
    if input_errors > 0 {
        2
    } else if summary.failed > 0 || summary.already_failed > 0 || summary.left_for_next_run() > 0 {
        1
    } else {
        0
    }
}
