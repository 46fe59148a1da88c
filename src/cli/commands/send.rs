//! `ctxasm send`: the requests of an input through the Messages API,
//! journaled; `--dry-run` prints the estimate and sends nothing.

use crate::cli::args::SendArgs;
use crate::cli::exit::Outcome;
use crate::cli::runtime::{self, Flavour};
use crate::cli::{input, output, settings, signal};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

pub fn run(args: &SendArgs) -> anyhow::Result<Outcome> {
    let timeout = settings::send_limits(args)?;
    let input = input::read_requests(&args.input)?;
    if args.dry_run {
        let rows = ctxasm::send::dryrun::estimate(&input, &ctxasm::cost::pricing::Pricing::builtin());
        output::text(&ctxasm::send::dryrun::render(&rows))?;
        return Ok(Outcome::Clean.unless_failed(!input.errors.is_empty()));
    }
    let Some(results) = args.results.clone() else {
        anyhow::bail!("send needs --results FILE (or --dry-run)");
    };
    let opts = settings::send_options(args, results, settings::api_key()?, timeout);
    let rt = runtime::build(Flavour::CurrentThread)?;
    // 0 until a signal stops the run; then its exit status.
    let stopped = Arc::new(AtomicU8::new(0));
    let result = rt.block_on(async {
        let (tx, rx) = tokio::sync::watch::channel(ctxasm::send::dispatch::Stop::Run);
        signal::watch_stop(tx, stopped.clone());
        let policy = ctxasm::send::SendPolicy { max_retry_wait: args.max_retry_wait };
        ctxasm::send::send_with(&opts, &policy, &input, rx).await
    });
    rt.shutdown_timeout(Duration::from_millis(100));
    let run = result?;
    print_journal(&opts, &run);
    eprintln!("{}", run.summary.line("send"));
    Ok(match stopped.load(Ordering::Relaxed) {
        0 => Outcome::from_status(ctxasm::send::exit_status(&run.summary, input.errors.len())),
        signal => Outcome::from_status(signal),
    })
}

/// What the journal held before the run, and what it refused.
fn print_journal(opts: &ctxasm::send::SendOptions, run: &ctxasm::send::SendRun) {
    let r = &run.resume;
    if r.lines > 0 || r.torn_bytes > 0 {
        eprintln!(
            "ctxasm: send: journal {}: {} lines found ({} of this input done, {} to retry){}",
            opts.results.display(),
            r.lines,
            run.summary.already_done,
            run.summary.resumed_retries,
            if r.torn_bytes > 0 {
                format!("; a torn last line of {} bytes was cut off", r.torn_bytes)
            } else {
                String::new()
            }
        );
    }
    for (line, id) in r.duplicates.iter().take(5) {
        eprintln!(
            "ctxasm: journal {}:{line}: custom_id {id:?} already has a final line earlier",
            opts.results.display()
        );
    }
    if !run.refused.is_empty() {
        eprintln!("ctxasm: {} results not written: their custom_id was already in the journal", run.refused.len());
    }
}
