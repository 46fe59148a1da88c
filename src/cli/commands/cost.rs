//! `ctxasm cost`: the recorded usage priced (`--recorded-only`), or the
//! modeled cost with what-if deltas, an HTML report and per-request lines.

use crate::cli::args::CostArgs;
use crate::cli::exit::Outcome;
use crate::cli::settings::{self, Input};
use crate::cli::{input, output, progress, render};
use ctxasm::cost::modeled::WhatIf;
use ctxasm::cost::pricing::Pricing;

pub fn run(args: &CostArgs) -> anyhow::Result<Outcome> {
    let pricing = settings::pricing(args.pricing.as_deref())?;
    if args.recorded_only && (args.html.is_some() || !args.what_if.is_empty()) {
        anyhow::bail!("cost: --html and --what-if need the modeled cost (drop --recorded-only)");
    }
    // Before any transcript is read: a what-if the table cannot price.
    let what_ifs = settings::what_ifs(&args.what_if)?;
    for w in &what_ifs {
        w.check(&pricing).map_err(|e| anyhow::anyhow!("--what-if {w}: {e}"))?;
    }
    let input = Input::resolve(&args.input)?;
    let failed = input::failed(&input.disc);
    let outcome =
        if args.recorded_only { recorded(args, &input, &pricing)? } else { modeled(args, input, &pricing, what_ifs)? };
    Ok(outcome.unless_failed(failed))
}

fn recorded(args: &CostArgs, input: &Input, pricing: &Pricing) -> anyhow::Result<Outcome> {
    let report = ctxasm::cost::usage::recorded_report(&input.disc, &input.run, pricing);
    print_diagnostics(&report.diagnostics);
    if args.json {
        output::json(&serde_json::json!({ "recorded": report.totals, "report": report }))?;
    } else {
        output::text(&ctxasm::cost::report::recorded_table(&report))?;
    }
    Ok(strict_outcome(args.strict, &report.diagnostics))
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

fn modeled(args: &CostArgs, input: Input, pricing: &Pricing, what_ifs: Vec<WhatIf>) -> anyhow::Result<Outcome> {
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
        ..Default::default()
    };
    let assembler = ctxasm::assemble::Assembler {
        mode: ctxasm::assemble::Mode::Auto,
        records: Default::default(),
        pipeline: Some(prep),
        chooser,
    };
    let Input { disc, run } = input;
    let bar = progress::reading(&disc);
    let tick = progress::ticker(&bar);
    let run = ctxasm::corpus::RunOptions { progress: Some(&tick), ..run };
    let report = ctxasm::cost::modeled::cost_report(&disc, &run, &assembler, pricing, &opts);
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
        output::json(&report)?;
    } else {
        output::text(&ctxasm::cost::report::table(&report))?;
    }
    Ok(strict_outcome(args.strict, &report.diagnostics))
}
