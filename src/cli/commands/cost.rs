//! `ctxasm cost`: the recorded usage priced (`--recorded-only`), or the
//! modeled cost with what-if deltas, an HTML report and per-request lines;
//! with `--shard`, the partial report `cost merge` merges.

use crate::cli::args::{CostArgs, CostCommand, CostMergeArgs, CostViewArgs};
use crate::cli::exit::Outcome;
use crate::cli::settings::{self, Input};
use crate::cli::{input, output, progress, render};
use ctxasm::cost::merge::Partial;
use ctxasm::cost::modeled::WhatIf;
use ctxasm::cost::pricing::Pricing;
use ctxasm::cost::usage::{BLOCK_MS, ViewKind, ViewOptions};

pub fn run(args: &CostArgs) -> anyhow::Result<Outcome> {
    match &args.command {
        Some(CostCommand::Merge(m)) => return merge(m),
        Some(CostCommand::Daily(v)) => return view(v, ViewKind::Daily),
        Some(CostCommand::Monthly(v)) => return view(v, ViewKind::Monthly),
        Some(CostCommand::Session(v)) => return view(v, ViewKind::Session),
        Some(CostCommand::Blocks(v)) => return view(v, ViewKind::Blocks),
        None => {}
    }
    let pricing = settings::pricing(args.pricing.as_deref())?;
    if args.recorded_only && (args.html.is_some() || !args.what_if.is_empty()) {
        anyhow::bail!("cost: --html and --what-if need the modeled cost (drop --recorded-only)");
    }
    // Before any transcript is read: a what-if the table cannot price.
    let what_ifs = settings::what_ifs(&args.what_if)?;
    for w in &what_ifs {
        w.check(&pricing).map_err(|e| anyhow::anyhow!("--what-if {w}: {e}"))?;
    }
    let estimator = match &args.estimator {
        Some(path) => Some(estimator_of(path)?),
        None => None,
    };
    let input = Input::resolve(&args.input)?;
    if let Some(s) = &input.shard {
        eprintln!("ctxasm: {}", s.describe(&input.disc));
        if !args.json {
            eprintln!("ctxasm: the report of this shard only; with --json it carries what `ctxasm cost merge` merges");
        }
    }
    let failed = input::failed(&input.disc);
    let outcome = if args.recorded_only {
        recorded(args, &input, &pricing)?
    } else {
        modeled(args, input, &pricing, what_ifs, estimator)?
    };
    Ok(outcome.unless_failed(failed))
}

/// `--estimator REPORT`: the estimator of an earlier report.
fn estimator_of(path: &std::path::Path) -> anyhow::Result<(ctxasm::cost::sim::Estimator, Option<u64>)> {
    let text = std::fs::read(path).map_err(|e| anyhow::anyhow!("--estimator {}: {e}", path.display()))?;
    let report: serde_json::Value =
        serde_json::from_slice(&text).map_err(|e| anyhow::anyhow!("--estimator {}: not JSON: {e}", path.display()))?;
    ctxasm::cost::modeled::estimator_of_report(&report)
        .map_err(|e| anyhow::anyhow!("--estimator {}: {e}", path.display()))
}

fn recorded(args: &CostArgs, input: &Input, pricing: &Pricing) -> anyhow::Result<Outcome> {
    let (report, partial) = match &input.shard {
        Some(s) => {
            let (report, lines) = ctxasm::cost::usage::recorded_report_and_lines(&input.disc, &input.run, pricing);
            let partial = Partial::recorded(s.shard, s.by, &report, &lines);
            (report, Some(partial))
        }
        None => (ctxasm::cost::usage::recorded_report(&input.disc, &input.run, pricing), None),
    };
    print_diagnostics(&report.diagnostics);
    if args.json {
        let partial = partial.map(|p| p.to_json()).transpose()?;
        output::json(&RecordedJson { recorded: &report.totals, report: &report, partial, merged: None })?;
    } else {
        output::text(&ctxasm::cost::report::recorded_table(&report))?;
    }
    Ok(strict_outcome(args.strict, &report.diagnostics))
}

/// `cost --json`'s object: the report's own members, then a shard's
/// `partial` or a merge's `merged`. Written as it is serialized (a report
/// of thousands of sessions made into a JSON tree first took 8 MB more).
#[derive(serde::Serialize)]
struct ModeledJson<'a> {
    #[serde(flatten)]
    report: &'a ctxasm::cost::modeled::CostReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    partial: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    merged: Option<serde_json::Value>,
}

/// `cost --recorded-only --json`'s object (see [`ModeledJson`]).
#[derive(serde::Serialize)]
struct RecordedJson<'a> {
    recorded: &'a ctxasm::cost::usage::Totals,
    report: &'a ctxasm::cost::usage::RecordedReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    partial: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    merged: Option<serde_json::Value>,
}

/// `cost daily|monthly|session|blocks`: a view of the recorded usage.
fn view(args: &CostViewArgs, kind: ViewKind) -> anyhow::Result<Outcome> {
    let pricing = settings::pricing(args.pricing.as_deref())?;
    let tz = match &args.timezone {
        Some(name) => jiff::tz::TimeZone::get(name).map_err(|e| anyhow::anyhow!("--timezone {name}: {e}"))?,
        None => jiff::tz::TimeZone::system(),
    };
    let since = args.since.as_deref().map(|d| date_arg("--since", d)).transpose()?;
    let until = args.until.as_deref().map(|d| date_arg("--until", d)).transpose()?;
    if let (Some(s), Some(u)) = (since, until)
        && s > u
    {
        anyhow::bail!("--since {s} is after --until {u}: no date is kept");
    }
    let input = Input::resolve(&args.input)?;
    if input.shard.is_some() {
        anyhow::bail!(
            "cost {}: --shard is for `cost --json` (whose partial reports `cost merge` merges)",
            kind_name(kind)
        );
    }
    let failed = input::failed(&input.disc);
    let now_ms = jiff::Timestamp::now().as_millisecond();
    let opts = ViewOptions { kind, tz, since, until, project: args.project.clone(), block_ms: BLOCK_MS, now_ms };
    let view = ctxasm::cost::usage::usage_view(&input.disc, &input.run, &pricing, &opts);
    print_diagnostics(&view.diagnostics);
    if args.json {
        output::json(&view)?;
    } else {
        output::text(&ctxasm::cost::report::view_table(&view, args.breakdown, args.desc))?;
    }
    if view.rows.is_empty() {
        // Read, but nothing to show: not a success.
        eprintln!(
            "ctxasm: no request with recorded usage{}",
            if args.since.is_some() || args.until.is_some() || args.project.is_some() {
                " matches the filters"
            } else {
                " in what was read"
            }
        );
        return Ok(Outcome::Problems.unless_failed(failed));
    }
    Ok(strict_outcome(args.strict, &view.diagnostics).unless_failed(failed))
}

fn kind_name(kind: ViewKind) -> &'static str {
    match kind {
        ViewKind::Daily => "daily",
        ViewKind::Monthly => "monthly",
        ViewKind::Session => "session",
        ViewKind::Blocks => "blocks",
    }
}

/// A date option: `YYYYMMDD` (ccusage's form) or `YYYY-MM-DD`.
fn date_arg(flag: &str, text: &str) -> anyhow::Result<jiff::civil::Date> {
    let iso = match text.len() {
        8 if text.bytes().all(|b| b.is_ascii_digit()) => format!("{}-{}-{}", &text[..4], &text[4..6], &text[6..]),
        _ => text.to_string(),
    };
    iso.parse().map_err(|e| anyhow::anyhow!("{flag} {text}: not a date (YYYYMMDD or YYYY-MM-DD): {e}"))
}

/// The first ten diagnostics on stderr, then their count; the sessions
/// built without a profile of their release in one line.
fn print_diagnostics(diagnostics: &[ctxasm::diag::Diagnostic]) {
    eprint!("{}{}", render::diagnostics(diagnostics, 10), render::approximated(diagnostics));
}

/// `Problems` under `--strict` when there is any diagnostic.
fn strict_outcome(strict: bool, diagnostics: &[ctxasm::diag::Diagnostic]) -> Outcome {
    if strict && !diagnostics.is_empty() {
        eprintln!(
            "ctxasm: {} diagnostic{} and --strict",
            diagnostics.len(),
            if diagnostics.len() == 1 { "" } else { "s" }
        );
        return Outcome::Problems;
    }
    Outcome::Clean
}

fn modeled(
    args: &CostArgs,
    input: Input,
    pricing: &Pricing,
    what_ifs: Vec<WhatIf>,
    fixed_estimator: Option<(ctxasm::cost::sim::Estimator, Option<u64>)>,
) -> anyhow::Result<Outcome> {
    let (prep, chooser, notes) = settings::profile_prep(&args.profile, args.env.as_deref(), Default::default(), false)?;
    // On stderr: the JSON is on stdout.
    for n in &notes {
        eprintln!("ctxasm: {n}");
    }
    // With `auto`, the prompt is known when some release's profile is cached.
    let prompt_known = prep.profile.has_prompt_text() || chooser.as_ref().is_some_and(|c| !c.is_empty());
    let opts = ctxasm::cost::modeled::ModelOptions {
        account: args.account.parse().unwrap_or_default(),
        what_ifs,
        prompt_known,
        fixed_estimator,
        // Every request's row only where one is written.
        keep_turns: args.per_request.is_some() || args.html.is_some(),
        ..Default::default()
    };
    let assembler = ctxasm::assemble::Assembler {
        mode: ctxasm::assemble::Mode::Auto,
        records: Default::default(),
        pipeline: Some(prep),
        chooser,
    };
    let Input { disc, run, shard } = input;
    if let Some(s) = &shard
        && account_wider(&s.by.to_string(), &args.account)
    {
        eprintln!(
            "ctxasm: note: sharded by {} with --account {}: sessions of one account in other shards share no \
             prompt cache with these (--shard-by {} keeps each account in one shard)",
            s.by, args.account, args.account
        );
    }
    let bar = progress::reading(&disc);
    let tick = progress::ticker(&bar);
    let mut run = ctxasm::corpus::RunOptions { progress: Some(&tick), ..run };
    // Building requests and reading their usage: smaller trees.
    run.read.fields = ctxasm::input::Fields::RequestsAndUsage;
    let (report, partial) = match &shard {
        Some(s) => {
            let (report, lines) =
                ctxasm::cost::modeled::cost_report_and_lines(&disc, &run, &assembler, pricing, &opts)?;
            let partial = Partial::modeled(s.shard, s.by, &report, &lines);
            (report, Some(partial))
        }
        None => (ctxasm::cost::modeled::cost_report(&disc, &run, &assembler, pricing, &opts)?, None),
    };
    progress::finish(&bar);
    print_diagnostics(&report.diagnostics);
    if let Some(path) = &args.html {
        output::write_atomic(path, ctxasm::cost::report::html(&report).as_bytes())?;
    }
    if let Some(path) = &args.per_request {
        let mut text = String::new();
        for t in &report.turns {
            text.push_str(&serde_json::to_string(t).unwrap_or_default());
            text.push('\n');
        }
        output::write_atomic(path, text.as_bytes())?;
    }
    if args.json {
        let partial = partial.map(|p| p.to_json()).transpose()?;
        output::json(&ModeledJson { report: &report, partial, merged: None })?;
    } else {
        output::text(&ctxasm::cost::report::table(&report))?;
    }
    Ok(strict_outcome(args.strict, &report.diagnostics))
}

/// Whether the `account` scope is wider than the shard key `by`
/// (session < project < root): then sessions of one account are split.
fn account_wider(by: &str, account: &str) -> bool {
    let width = |s: &str| match s {
        "session" => 0,
        "project" => 1,
        _ => 2,
    };
    width(account) > width(by)
}

/// A shard's report file, for `cost merge`: only its `partial` is read.
#[derive(serde::Deserialize)]
struct ShardReport {
    partial: Option<Partial>,
}

/// `ctxasm cost merge REPORT...`.
fn merge(args: &CostMergeArgs) -> anyhow::Result<Outcome> {
    let pricing = settings::pricing(args.pricing.as_deref())?;
    let mut parts = Vec::new();
    for path in &args.reports {
        let name = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
        let report: ShardReport = serde_json::from_slice(&bytes)
            .map_err(|e| anyhow::anyhow!("{name}: not a report of `cost --json`: {e}"))?;
        let Some(partial) = report.partial else {
            anyhow::bail!(
                "{name}: not the report of a shard (no \"partial\" object; `ctxasm cost --json --shard K/N` writes one)"
            );
        };
        parts.push((name, partial));
    }
    let merged = ctxasm::cost::merge::merge(parts, &pricing).map_err(anyhow::Error::msg)?;
    for n in &merged.notes {
        eprintln!("ctxasm: note: {n}");
    }
    let info = serde_json::json!({
        "shards": merged.shards,
        "shard_by": merged.shard_by,
        "notes": merged.notes,
    });
    match &merged.modeled {
        Some(report) => {
            print_diagnostics(&report.diagnostics);
            if args.json {
                output::json(&ModeledJson { report, partial: None, merged: Some(info) })?;
            } else {
                output::text(&ctxasm::cost::report::table(report))?;
            }
        }
        None => {
            let report = &merged.recorded;
            print_diagnostics(&report.diagnostics);
            if args.json {
                output::json(&RecordedJson { recorded: &report.totals, report, partial: None, merged: Some(info) })?;
            } else {
                output::text(&ctxasm::cost::report::recorded_table(report))?;
            }
        }
    }
    Ok(Outcome::Clean)
}
