//! Settings of the network commands: the API key from the environment,
//! timeouts, client and send options, batch ids, the mock server's config.
//! Built only with the `net` feature.

use crate::cli::args::{ApiArgs, BatchIds, MockServerArgs, SendArgs};
use anyhow::Context;
use ctxasm::send::client::ClientConfig;
use std::path::PathBuf;
use std::time::Duration;

/// ANTHROPIC_API_KEY, which must not be blank.
pub fn api_key() -> anyhow::Result<String> {
    match std::env::var("ANTHROPIC_API_KEY") {
        Ok(k) if !k.trim().is_empty() => Ok(k),
        _ => anyhow::bail!("ANTHROPIC_API_KEY is not set"),
    }
}

/// `--timeout SECS` as a duration (positive, finite).
pub fn timeout(secs: f64) -> anyhow::Result<Duration> {
    if secs.is_finite() && secs > 0.0 {
        Ok(Duration::from_secs_f64(secs.min(1e9)))
    } else {
        anyhow::bail!("--timeout must be a positive number of seconds")
    }
}

/// The HTTP client of a command.
pub fn client_config(api: &ApiArgs, key: String, timeout: Duration, pool: usize) -> ClientConfig {
    ClientConfig { endpoint: api.endpoint.clone(), api_key: Some(key), beta: api.beta.clone(), timeout, pool }
}

/// The checks of `send`'s numeric flags, before any input is read; the
/// timeout they yield.
pub fn send_limits(args: &SendArgs) -> anyhow::Result<Duration> {
    if args.concurrency == 0 || args.max_attempts == 0 {
        anyhow::bail!("--concurrency and --max-attempts must be at least 1");
    }
    if [args.rpm, args.itpm, args.otpm].contains(&Some(0)) {
        anyhow::bail!("--rpm, --itpm and --otpm must be at least 1");
    }
    timeout(args.timeout)
}

/// Everything `send::send` takes but the input.
pub fn send_options(args: &SendArgs, results: PathBuf, key: String, timeout: Duration) -> ctxasm::send::SendOptions {
    ctxasm::send::SendOptions {
        client: client_config(&args.api, key, timeout, args.concurrency),
        results,
        concurrency: args.concurrency,
        limits: ctxasm::send::limits::Limits { rpm: args.rpm, itpm: args.itpm, otpm: args.otpm },
        adapt: !args.no_adapt,
        max_attempts: args.max_attempts,
        progress: Some(std::sync::Arc::new(crate::cli::progress::SendBar::default())),
    }
}

/// The batches a `batch status` / `batch results` is about.
pub fn batch_ids(ids: &BatchIds) -> anyhow::Result<Vec<String>> {
    match (&ids.id, &ids.state) {
        (Some(id), None) => Ok(vec![id.clone()]),
        (None, Some(p)) => Ok(ctxasm::send::batches::read_state(p)?),
        _ => anyhow::bail!("give a batch id or --state FILE"),
    }
}

/// The mock server's configuration, with its `--script` rules loaded.
pub fn mock_config(args: MockServerArgs) -> anyhow::Result<ctxasm::mock::MockConfig> {
    let script = match &args.script {
        Some(p) => ctxasm::mock::load_script(p).context("mock-server: --script")?,
        None => Vec::new(),
    };
    Ok(ctxasm::mock::MockConfig {
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
    })
}
