//! The dispatcher: one scheduler task hands requests to at most
//! `--concurrency` attempts at a time, each only once the limiter
//! ([`super::limits`]) lets it go; retries (policy in [`super::retry`])
//! come back to the scheduler after their wait and go before new requests.
//! Every finished request goes to the journal writer exactly once.
//!
//! Stopping ([`Stop`]): `Drain` (first Ctrl-C / SIGTERM) takes no new
//! request and no retry; attempts on the wire finish and are journaled when
//! they are final. `Abort` (second Ctrl-C) cancels those attempts too.
//! What is not journaled is sent again by the next run.
//!
//! Waits are capped by `max_retry_wait` ([`super::retry::decide_capped`]):
//! a request whose attempts got no reply is journaled as retryable
//! (`retry_later: no_reply`); one the server asks to wait longer than the
//! cap for is journaled as `rate_limited` — and since that wait holds for
//! every request (a 429 pauses all sends, below), the run then drains: no
//! new request starts, and the rest is left for the next run.

use super::client::{Attempt, Client};
use super::input::Request;
use super::journal::{JournalSender, Outcome, Record, RetryLater, error_envelope};
use super::limits::{Limiter, Ticket, UsageCounts};
use super::report::{Counters, Summary};
use super::retry::{Decision, Failure, decide_capped, is_spend_cap};
use rand::{Rng, SeedableRng};
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};
use tokio::time::Instant;

/// How far to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stop {
    Run,
    /// No new work; finish what is on the wire.
    Drain,
    /// Cancel what is on the wire too.
    Abort,
}

/// Resolves once `stop` is at least `level` (never, if its sender is gone
/// first).
pub async fn until(stop: &mut watch::Receiver<Stop>, level: Stop) {
    loop {
        if *stop.borrow_and_update() >= level {
            return;
        }
        if stop.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// What the dispatcher needs.
pub struct Dispatch {
    pub client: Client,
    pub limiter: Arc<Limiter>,
    pub journal: JournalSender,
    pub concurrency: usize,
    pub max_attempts: u32,
    /// The longest wait before a retry ([`super::retry::decide_capped`]).
    pub max_retry_wait: Duration,
    pub counters: Arc<Counters>,
}

#[derive(Debug)]
struct Job {
    index: usize,
    attempts: u32,
}

enum Event {
    Retry(Job),
    Done {
        status: u16,
        ok: bool,
        latency_ms: u64,
    },
    /// Journaled as not final (sent again by the next run).
    Later {
        why: RetryLater,
        latency_ms: u64,
    },
    /// Dropped while on the wire or waiting to be retried.
    Interrupted,
}

struct Shared {
    requests: Arc<[Request]>,
    client: Client,
    limiter: Arc<Limiter>,
    journal: JournalSender,
    max_attempts: u32,
    max_retry_wait: Duration,
    counters: Arc<Counters>,
    rate_limited: AtomicU64,
    /// Raised to `Drain` when a wait past the cap is deferred.
    stop_tx: Arc<watch::Sender<Stop>>,
    /// The longest wait the server asked for past the cap, ms.
    deferred_wait_ms: AtomicU64,
}

/// A jitter source per attempt (rand's small RNG; seeds differ per call).
pub fn jitter() -> f64 {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let seed = nanos ^ SEQ.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
    rand::rngs::SmallRng::seed_from_u64(seed).random::<f64>()
}

/// Send `requests` (those not yet in the journal) until all are final or
/// `stop` says so. Returns the run's summary (`requests`, `already_*` and
/// `elapsed` are left for the caller).
pub async fn run(d: Dispatch, requests: Arc<[Request]>, external: watch::Receiver<Stop>) -> Summary {
    let start = Instant::now();
    // An internal stop level: the caller's, or Abort when the journal fails.
    let (stop_tx, stop_rx) = watch::channel(Stop::Run);
    let stop_tx = Arc::new(stop_tx);
    let forward = tokio::spawn(forward(external, stop_tx.clone()));
    let shared = Arc::new(Shared {
        requests: requests.clone(),
        client: d.client,
        limiter: d.limiter,
        journal: d.journal,
        max_attempts: d.max_attempts.max(1),
        max_retry_wait: d.max_retry_wait,
        counters: d.counters,
        rate_limited: AtomicU64::new(0),
        stop_tx: stop_tx.clone(),
        deferred_wait_ms: AtomicU64::new(0),
    });
    let sem = Arc::new(Semaphore::new(d.concurrency.max(1)));
    let (ev_tx, mut ev_rx) = mpsc::unbounded_channel::<Event>();
    let mut summary = Summary::default();
    let mut ready: VecDeque<Job> = VecDeque::new();
    let mut next = 0usize;
    let mut outstanding = 0usize;
    let mut stop = stop_rx.clone();
    let mut latencies = Vec::with_capacity(requests.len());

    let mut handle =
        |ev: Event, summary: &mut Summary, ready: &mut VecDeque<Job>, outstanding: &mut usize, draining| {
            tally(ev, summary, &mut latencies, ready, outstanding, draining);
        };

    loop {
        if shared.journal.failed() {
            stop_tx.send_if_modified(|s| std::mem::replace(s, Stop::Abort) != Stop::Abort);
        }
        let draining = *stop.borrow() != Stop::Run;
        while let Ok(ev) = ev_rx.try_recv() {
            handle(ev, &mut summary, &mut ready, &mut outstanding, draining);
        }
        if draining {
            for _ in ready.drain(..) {
                summary.interrupted += 1;
                outstanding -= 1;
            }
        }
        let job = if let Some(j) = ready.pop_front() {
            j
        } else if !draining && next < requests.len() {
            next += 1;
            outstanding += 1;
            Job { index: next - 1, attempts: 0 }
        } else if outstanding == 0 {
            break;
        } else if *stop_rx.borrow() == Stop::Abort {
            // Everything is being cancelled: just collect the ends.
            if let Some(ev) = ev_rx.recv().await {
                handle(ev, &mut summary, &mut ready, &mut outstanding, true);
            }
            continue;
        } else {
            tokio::select! {
                ev = ev_rx.recv() => if let Some(ev) = ev {
                    let draining = *stop_rx.borrow() != Stop::Run;
                    handle(ev, &mut summary, &mut ready, &mut outstanding, draining);
                },
                _ = until(&mut stop, if draining { Stop::Abort } else { Stop::Drain }) => {}
            }
            continue;
        };
        let est = requests.get(job.index).map_or(0, Request::estimated_input_tokens);
        let Some((permit, ticket)) = admit(&sem, &shared.limiter, est, &mut stop).await else {
            if job.attempts > 0 {
                summary.interrupted += 1;
            } else {
                summary.not_started += 1;
            }
            outstanding -= 1;
            continue;
        };
        tokio::spawn(attempt(shared.clone(), job, permit, ticket, ev_tx.clone(), stop_rx.clone()));
    }
    summary.not_started += (requests.len() - next) as u64;
    forward.abort();
    latencies.sort_unstable();
    summary.latencies_ms = latencies;
    summary.attempts = Counters::get(&shared.counters.attempts);
    summary.retries = Counters::get(&shared.counters.retries);
    summary.rate_limited = shared.rate_limited.load(Ordering::Relaxed);
    let deferred = shared.deferred_wait_ms.load(Ordering::Relaxed);
    summary.deferred_wait = (deferred > 0).then(|| Duration::from_millis(deferred));
    summary.elapsed = start.elapsed();
    summary
}

/// The caller's stop level, forwarded into the run's own (which the
/// journal's failure can also raise); never lowered.
async fn forward(mut external: watch::Receiver<Stop>, stop_tx: Arc<watch::Sender<Stop>>) {
    loop {
        let level = *external.borrow_and_update();
        stop_tx.send_if_modified(|s| {
            let changed = level > *s;
            if changed {
                *s = level;
            }
            changed
        });
        if level == Stop::Abort || external.changed().await.is_err() {
            return;
        }
    }
}

/// An attempt's end, counted into the summary.
fn tally(
    ev: Event,
    summary: &mut Summary,
    latencies: &mut Vec<u64>,
    ready: &mut VecDeque<Job>,
    outstanding: &mut usize,
    draining: bool,
) {
    match ev {
        Event::Retry(job) if !draining => ready.push_back(job),
        Event::Retry(_) | Event::Interrupted => {
            summary.interrupted += 1;
            *outstanding -= 1;
        }
        Event::Done { status, ok, latency_ms } => {
            *outstanding -= 1;
            *summary.statuses.entry(status).or_insert(0) += 1;
            if ok {
                summary.ok += 1;
            } else {
                summary.failed += 1;
            }
            latencies.push(latency_ms);
        }
        Event::Later { why, latency_ms } => {
            *outstanding -= 1;
            match why {
                RetryLater::NoReply => summary.no_reply += 1,
                RetryLater::RateLimited => summary.deferred += 1,
            }
            latencies.push(latency_ms);
        }
    }
}

/// A slot, then the limiter's go for `input_estimate` tokens; `None` when a
/// stop comes first (the job is dropped).
async fn admit(
    sem: &Arc<Semaphore>,
    limiter: &Limiter,
    input_estimate: u64,
    stop: &mut watch::Receiver<Stop>,
) -> Option<(OwnedSemaphorePermit, Ticket)> {
    // A stop wins over a slot or a go that are ready at the same time.
    let permit = tokio::select! {
        biased;
        _ = until(stop, Stop::Drain) => None,
        p = sem.clone().acquire_owned() => p.ok(),
    }?;
    tokio::select! {
        biased;
        _ = until(stop, Stop::Drain) => None,
        t = limiter.take(input_estimate) => Some((permit, t)),
    }
}

async fn attempt(
    sh: Arc<Shared>,
    mut job: Job,
    permit: OwnedSemaphorePermit,
    ticket: Ticket,
    ev: mpsc::UnboundedSender<Event>,
    mut stop: watch::Receiver<Stop>,
) {
    let Some(req) = sh.requests.get(job.index) else {
        let _ = ev.send(Event::Interrupted);
        return;
    };
    let t0 = Instant::now();
    let result = tokio::select! {
        a = sh.client.send_message(req.body.clone()) => a,
        _ = until(&mut stop, Stop::Abort) => {
            let _ = ev.send(Event::Interrupted);
            return;
        }
    };
    let now = Instant::now();
    let latency_ms = now.duration_since(t0).as_millis() as u64;
    job.attempts += 1;
    Counters::add(&sh.counters.attempts);
    let record = |status: u16, usage: Option<serde_json::Value>, outcome: Outcome| Record {
        custom_id: req.custom_id.clone(),
        status,
        attempts: job.attempts,
        latency_ms,
        usage,
        outcome,
        retry_later: None,
    };
    let (failure_status, decision, rec) = match result {
        Attempt::Success { status, message, headers } => {
            let usage = message.get("usage").cloned();
            sh.limiter.on_reply(&ticket, usage.as_ref().map(UsageCounts::from_usage), Some(&headers), now);
            (None, Decision::Final, record(status, usage, Outcome::Response(message)))
        }
        Attempt::Status { status, headers, error } => {
            sh.limiter.on_reply(&ticket, None, Some(&headers), now);
            if status == 429 {
                sh.rate_limited.fetch_add(1, Ordering::Relaxed);
            }
            let f = Failure::Status { status, headers: &headers, spend_cap: is_spend_cap(&error) };
            let decision =
                decide_capped(&f, job.attempts, sh.max_attempts, sh.max_retry_wait, jitter(), SystemTime::now());
            (Some(status), decision, record(status, None, Outcome::Error(error)))
        }
        Attempt::Transport { timeout, message } => {
            let f = if timeout { Failure::Timeout } else { Failure::Connection };
            let decision =
                decide_capped(&f, job.attempts, sh.max_attempts, sh.max_retry_wait, jitter(), SystemTime::now());
            let kind = if timeout { "timeout" } else { "connection_error" };
            let mut rec = record(0, None, Outcome::Error(error_envelope(kind, &message)));
            // Not an answer of the API: the next run sends it again.
            rec.retry_later = Some(RetryLater::NoReply);
            (Some(0), decision, rec)
        }
    };
    match decision {
        Decision::Final if rec.retry_later.is_some() => {
            drop(permit);
            Counters::add(&sh.counters.failed);
            let why = rec.retry_later.unwrap_or(RetryLater::NoReply);
            sh.journal.send(rec);
            let _ = ev.send(Event::Later { why, latency_ms });
        }
        Decision::Defer(asked) => {
            Counters::add(&sh.counters.failed);
            sh.deferred_wait_ms.fetch_max(asked.as_millis().min(u128::from(u64::MAX)) as u64, Ordering::Relaxed);
            // The wait holds for every request: take no new one (the stop
            // is raised before the slot is freed, so no send takes it).
            sh.stop_tx.send_if_modified(|s| {
                let raise = *s < Stop::Drain;
                if raise {
                    *s = Stop::Drain;
                }
                raise
            });
            drop(permit);
            let mut rec = rec;
            rec.retry_later = Some(RetryLater::RateLimited);
            sh.journal.send(rec);
            let _ = ev.send(Event::Later { why: RetryLater::RateLimited, latency_ms });
        }
        Decision::Final => {
            drop(permit);
            let ok = rec.is_ok();
            let status = rec.status;
            Counters::add(if ok { &sh.counters.ok } else { &sh.counters.failed });
            // A line the writer cannot take is lost, not duplicated: the
            // scheduler sees the failed writer and aborts the run.
            sh.journal.send(rec);
            let _ = ev.send(Event::Done { status, ok, latency_ms });
        }
        Decision::Retry(wait) => {
            if failure_status == Some(429) {
                // A 429 pauses every new send until its retry-after instant.
                sh.limiter.pause_until(now + wait);
            }
            drop(permit);
            Counters::add(&sh.counters.retries);
            tokio::select! {
                _ = tokio::time::sleep(wait) => { let _ = ev.send(Event::Retry(job)); }
                _ = until(&mut stop, Stop::Drain) => { let _ = ev.send(Event::Interrupted); }
            }
        }
    }
}
