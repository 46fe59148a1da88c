//! Reading less of each line (`ReadOptions::fields`) changes no output:
//! every fixture directory and the bundled sample assembled from whole
//! trees and from `Fields::Requests` give the same bytes, and their
//! modeled cost from `Fields::RequestsAndUsage` the same report.

use ctxasm::assemble::pipeline::Setup;
use ctxasm::assemble::{Assembler, Mode};
use ctxasm::corpus::RunOptions;
use ctxasm::cost::modeled::{ModelOptions, cost_report};
use ctxasm::cost::pricing::Pricing;
use ctxasm::input::discover::discover;
use ctxasm::input::{Fields, ReadOptions};
use ctxasm::write::{AssembleOptions, Turns, write_batch};
use std::path::PathBuf;

/// The fixture directories of captured releases, and `corpora/`.
fn roots() -> Vec<PathBuf> {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut out: Vec<PathBuf> = std::fs::read_dir(repo.join("tests/fixtures"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("cc-")))
        .collect();
    out.sort();
    out.push(repo.join("corpora"));
    out
}

fn run(fields: Fields) -> RunOptions<'static> {
    RunOptions { read: ReadOptions { fields, ..ReadOptions::default() }, ..RunOptions::default() }
}

fn auto() -> Assembler {
    let prep = Setup::load("cc-2.1.328", None, Default::default()).unwrap();
    Assembler { mode: Mode::Auto, pipeline: Some(prep), ..Assembler::default() }
}

#[test]
fn smaller_trees_build_the_same_requests_and_cost() {
    let opts = AssembleOptions { assembler: auto(), turns: Turns::All };
    let mut requests = 0;
    for root in roots() {
        let disc = discover(std::slice::from_ref(&root));
        let batch = |fields: Fields| {
            let mut out = Vec::new();
            let summary = write_batch(&disc, &run(fields), &opts, &mut out).unwrap();
            (out, summary.requests_written)
        };
        let (whole, n) = batch(Fields::All);
        assert_eq!(batch(Fields::Requests), (whole, n), "{}", root.display());
        requests += n;
        let cost = |fields: Fields| {
            let r = cost_report(&disc, &run(fields), &auto(), &Pricing::builtin(), &ModelOptions::default())
                .expect("the modeled cost");
            serde_json::to_value(&r).unwrap()
        };
        assert_eq!(cost(Fields::RequestsAndUsage), cost(Fields::All), "{}", root.display());
    }
    // The fixtures hold hundreds of requests (a guard against reading none).
    assert!(requests > 300, "{requests} requests");
}
