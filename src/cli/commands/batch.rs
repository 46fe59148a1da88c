//! `ctxasm batch submit|status|results`: the same requests through the
//! Message Batches API.

use crate::cli::args::{
    ApiArgs, BatchApiArgs, BatchCommand, BatchIds, BatchResultsArgs, BatchStatusArgs, BatchSubmitArgs,
};
use crate::cli::exit::{self, Outcome};
use crate::cli::runtime::{self, Flavour};
use crate::cli::{input, output, settings};
use anyhow::Context;
use ctxasm::send::batches;
use ctxasm::send::client::Client;
use std::io::Write;
use std::time::Duration;

pub fn run(cmd: &BatchCommand) -> anyhow::Result<Outcome> {
    match cmd {
        BatchCommand::Submit(a) => submit(a),
        BatchCommand::Status(a) => status(a),
        BatchCommand::Results(a) => results(a),
    }
}

/// Batch calls are few and large: a long timeout, a small pool.
fn client(api: &ApiArgs) -> anyhow::Result<Client> {
    let cfg = settings::client_config(api, settings::api_key()?, Duration::from_secs(600), 4);
    Ok(Client::new(&cfg)?)
}

/// The default endpoint of `batch status|results` without `--state`.
const DEFAULT_ENDPOINT: &str = "https://api.anthropic.com";

/// The batches asked about and a client for the endpoint they belong to:
/// with `--state`, the state file's (an explicit `--endpoint` must equal
/// it); else `--endpoint` or the default.
fn batches_and_client(ids: &BatchIds, api: &BatchApiArgs) -> anyhow::Result<(Vec<String>, Client)> {
    let (ids, endpoint) = match &ids.state {
        Some(p) if ids.id.is_none() => {
            let state = batches::read_state_file(p)?;
            let endpoint = batches::state_endpoint(&state, p, api.endpoint.as_deref())?;
            (state.ids, endpoint)
        }
        _ => (settings::batch_ids(ids)?, api.endpoint.clone().unwrap_or_else(|| DEFAULT_ENDPOINT.to_string())),
    };
    let cfg = ctxasm::send::client::ClientConfig {
        endpoint,
        api_key: Some(settings::api_key()?),
        beta: api.beta.clone(),
        timeout: Duration::from_secs(600),
        pool: 4,
    };
    Ok((ids, Client::new(&cfg)?))
}

fn submit(a: &BatchSubmitArgs) -> anyhow::Result<Outcome> {
    let input = input::read_requests(&a.input)?;
    let client = client(&a.api)?;
    let rt = runtime::build(Flavour::CurrentThread)?;
    let split = batches::Split { requests: a.max_batch_requests.max(1), bytes: a.max_batch_bytes };
    let (chunks, errors) = batches::split(&input, split);
    input::print_bad_lines(&errors);
    let shown = a.input.display().to_string();
    let mut on_batch = |s: &batches::Submitted| {
        // A closed stdout must not stop the submissions: the state file is
        // the record that matters.
        let _ = writeln!(std::io::stdout().lock(), "{} {} requests", s.id, s.requests);
        match &a.state {
            Some(p) => batches::append_state(p, s, &shown, &a.api.endpoint),
            None => Ok(()),
        }
    };
    match rt.block_on(batches::submit(&client, chunks, a.max_attempts.max(1), &mut on_batch)) {
        Ok(done) => {
            let n: usize = done.iter().map(|s| s.requests).sum();
            eprintln!("ctxasm: batch submit: {} batches, {n} requests", done.len());
            Ok(Outcome::Clean.unless_failed(!input.errors.is_empty() || !errors.is_empty()))
        }
        Err(e) => Ok(exit::problem(e)),
    }
}

fn status(a: &BatchStatusArgs) -> anyhow::Result<Outcome> {
    let (ids, client) = batches_and_client(&a.ids, &a.api)?;
    let rt = runtime::build(Flavour::CurrentThread)?;
    let result = rt.block_on(async {
        if a.wait {
            let mut print = |b: &serde_json::Value| eprintln!("ctxasm: {}", batches::status_line(b));
            return batches::wait(&client, &ids, Duration::from_millis(a.poll_ms.max(1)), &mut print).await;
        }
        let mut all = Vec::new();
        for id in &ids {
            all.push(batches::status(&client, id).await?);
        }
        Ok(all)
    });
    match result {
        Ok(all) => {
            output::text(&all.iter().map(|b| batches::status_line(b) + "\n").collect::<String>())?;
            Ok(Outcome::Clean)
        }
        Err(e) => Ok(exit::problem(e)),
    }
}

fn results(a: &BatchResultsArgs) -> anyhow::Result<Outcome> {
    let (ids, client) = batches_and_client(&a.ids, &a.api)?;
    let rt = runtime::build(Flavour::CurrentThread)?;
    rt.block_on(download(&client, &ids, &a.output))
}

/// Every batch's results into the journal; status 1 when a batch failed to
/// download or holds failed requests or bad lines.
async fn download(client: &Client, ids: &[String], output: &std::path::Path) -> anyhow::Result<Outcome> {
    use ctxasm::send::journal;
    let (file, resume) = journal::open(output)?;
    let handle = journal::spawn(journal::Writer::new(file, output, resume.done.keys().cloned()))
        .with_context(|| format!("journal {}", output.display()))?;
    let Some(sender) = handle.sender() else { return Ok(Outcome::Fatal) };
    let mut total = batches::ResultCounts::default();
    let mut outcome = Outcome::Clean;
    for id in ids {
        match batches::results(client, id, &sender).await {
            Ok(c) => {
                c.warnings.iter().for_each(|w| eprintln!("ctxasm: {w}"));
                eprintln!("ctxasm: batch {id}: {} succeeded, {} failed", c.succeeded, c.failed);
                total.succeeded += c.succeeded;
                total.failed += c.failed;
                total.bad_lines += c.bad_lines;
            }
            Err(e) => outcome = exit::problem(e),
        }
    }
    drop(sender);
    let report = tokio::task::spawn_blocking(move || handle.finish()).await.context("journal writer")??;
    eprintln!(
        "ctxasm: batch results: {} lines written to {} ({} skipped: already there)",
        report.written,
        output.display(),
        report.refused.len()
    );
    if total.failed > 0 || total.bad_lines > 0 {
        outcome = Outcome::Problems;
    }
    Ok(outcome)
}
