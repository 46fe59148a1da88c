//! `ctxasm mock-server`: a local stand-in for the Messages API until
//! SIGINT/SIGTERM, then its request counts on stderr.

use crate::cli::args::MockServerArgs;
use crate::cli::exit::Outcome;
use crate::cli::runtime::{self, Flavour};
use crate::cli::settings;
use crate::cli::signal::Signals;
use anyhow::Context;
use std::io::Write;

pub fn run(args: MockServerArgs) -> anyhow::Result<Outcome> {
    if args.header_timeout.is_zero() || args.body_timeout.is_zero() {
        anyhow::bail!("mock-server: --header-timeout and --body-timeout must be more than 0");
    }
    let bounds = ctxasm::mock::ServerLimits {
        max_connections: usize::try_from(args.max_connections).unwrap_or(usize::MAX),
        header_timeout: args.header_timeout,
        body_timeout: args.body_timeout,
        ..ctxasm::mock::ServerLimits::default()
    };
    let cfg = settings::mock_config(args)?;
    let rt = runtime::build(Flavour::MultiThread).context("mock-server")?;
    rt.block_on(serve(cfg, bounds))
}

async fn serve(cfg: ctxasm::mock::MockConfig, bounds: ctxasm::mock::ServerLimits) -> anyhow::Result<Outcome> {
    let record = cfg.record.clone();
    let server = ctxasm::mock::MockServer::start_with(cfg, bounds).await.context("mock-server")?;
    {
        // The first line is how a caller learns the port (with port 0).
        let mut out = std::io::stdout().lock();
        if writeln!(out, "listening on {}", server.addr()).and_then(|()| out.flush()).is_err() {
            eprintln!("ctxasm mock-server: cannot write to stdout");
        }
    }
    let stop = match Signals::new() {
        Ok(mut signals) => signals.recv().await.map(|_| ()),
        Err(e) => Err(e),
    };
    if let Err(e) = stop {
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
            Ok(Outcome::Clean)
        }
        Err(e) => {
            eprintln!("ctxasm mock-server: {e}");
            Ok(Outcome::Problems)
        }
    }
}
