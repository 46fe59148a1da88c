//! The benchmark's baseline (`ctxasm bench-send-baseline`, hidden): the
//! simple sender most scripts are — `N` workers, each sending its next
//! request and retrying it with the same policy ([`super::retry`]: the
//! same statuses, the server's retry-after for that request, the same
//! backoff), but no client-side limits, no shared pause on a 429 and no
//! header adaptation. It writes the same journal (no resume: the file is
//! appended to as it is).

use super::client::{Attempt, Client, ClientConfig};
use super::dispatch::jitter;
use super::input::Request;
use super::journal::{self, Outcome, Record, RetryLater, Writer, error_envelope};
use super::report::Summary;
use super::retry::{Decision, Failure, decide, is_spend_cap};
use super::{SendError, pending};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

/// Send every request not yet in `results` with `concurrency` workers.
pub async fn run(
    client: &ClientConfig,
    input: &super::input::Input,
    results: &Path,
    concurrency: usize,
    max_attempts: u32,
) -> Result<Summary, SendError> {
    let start = Instant::now();
    let client = Client::new(client)?;
    let (file, resume) = journal::open(results)?;
    let (todo, base) = pending(input, &resume);
    let handle =
        journal::spawn(Writer::new(file, results, resume.done.keys().cloned())).map_err(SendError::JournalWrite)?;
    let todo: Arc<[Request]> = todo.into();
    let next = Arc::new(AtomicUsize::new(0));
    let summary = Arc::new(Mutex::new(base));
    let mut workers = Vec::new();
    for _ in 0..concurrency.max(1) {
        let (client, todo, next, summary) = (client.clone(), todo.clone(), next.clone(), summary.clone());
        let Some(journal) = handle.sender() else { break };
        workers.push(tokio::spawn(async move {
            loop {
                let Some(req) = todo.get(next.fetch_add(1, Ordering::Relaxed)) else { return };
                let mut attempts = 0u32;
                let rec = loop {
                    let t0 = Instant::now();
                    let result = client.send_message(req.body.clone()).await;
                    let latency_ms = t0.elapsed().as_millis() as u64;
                    attempts += 1;
                    let rec = |status, usage, outcome| Record {
                        custom_id: req.custom_id.clone(),
                        status,
                        attempts,
                        latency_ms,
                        usage,
                        outcome,
                        // No reply (status 0): sent again by the next run.
                        retry_later: (status == 0).then_some(RetryLater::NoReply),
                    };
                    let (decision, rec, limited) = match result {
                        Attempt::Success { status, message, .. } => {
                            let usage = message.get("usage").cloned();
                            (Decision::Final, rec(status, usage, Outcome::Response(message)), false)
                        }
                        Attempt::Status { status, headers, error } => {
                            let f = Failure::Status { status, headers: &headers, spend_cap: is_spend_cap(&error) };
                            let d = decide(&f, attempts, max_attempts, jitter(), SystemTime::now());
                            (d, rec(status, None, Outcome::Error(error)), status == 429)
                        }
                        Attempt::Transport { timeout, message } => {
                            let f = if timeout { Failure::Timeout } else { Failure::Connection };
                            let d = decide(&f, attempts, max_attempts, jitter(), SystemTime::now());
                            let kind = if timeout { "timeout" } else { "connection_error" };
                            (d, rec(0, None, Outcome::Error(error_envelope(kind, &message))), false)
                        }
                    };
                    if limited && let Ok(mut s) = summary.lock() {
                        s.rate_limited += 1;
                    }
                    match decision {
                        Decision::Final | Decision::Defer(_) => break rec,
                        Decision::Retry(wait) => tokio::time::sleep(wait).await,
                    }
                };
                if let Ok(mut s) = summary.lock() {
                    s.attempts += u64::from(rec.attempts);
                    s.retries += u64::from(rec.attempts - 1);
                    *s.statuses.entry(rec.status).or_insert(0) += 1;
                    if rec.is_ok() {
                        s.ok += 1;
                    } else {
                        s.failed += 1;
                    }
                    s.latencies_ms.push(rec.latency_ms);
                }
                journal.send(rec);
            }
        }));
    }
    for w in workers {
        let _ = w.await;
    }
    let report = tokio::task::spawn_blocking(move || handle.finish())
        .await
        .unwrap_or_else(|e| Err(std::io::Error::other(format!("journal writer: {e}"))));
    report.map_err(SendError::JournalWrite)?;
    let mut s = summary.lock().map(|s| s.clone()).unwrap_or_default();
    s.latencies_ms.sort_unstable();
    s.elapsed = start.elapsed();
    Ok(s)
}
