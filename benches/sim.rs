//! Criterion bench of the prompt-cache simulator: requests per second
//! through `CacheSim::step` on the long-session capture
//! (`tests/fixtures/cc-2.1.328/long-session`, 6 requests of 19–34 blocks)
//! repeated as 200 sessions, each in its own organization scope (so every
//! repetition writes, then reads, like the original) and 10 minutes after
//! the one before; and `blocks_of` (hashing and estimating the blocks).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ctxasm::assemble::{Assembler, assemble_session};
use ctxasm::corpus::{RunOptions, for_each_session_of};
use ctxasm::cost::sim::{CacheSim, Estimator, SimRequest, blocks_of};
use ctxasm::input::discover::discover;
use ctxasm::time::parse_timestamp_ms;
use std::path::PathBuf;

const REPEAT: u64 = 200;

fn benches(c: &mut Criterion) {
    let disc = discover(&[PathBuf::from("tests/fixtures/cc-2.1.328/long-session/transcripts")]);
    let a = Assembler::default();
    let est = Estimator::default();
    let run = RunOptions::with_threads(Some(1));
    let build = || -> Vec<SimRequest> {
        for_each_session_of(&disc, &disc.groups, &run, |bump, s| {
            assemble_session(bump, s, &a)
                .requests
                .iter()
                .map(|r| SimRequest {
                    at_ms: r.timestamp.and_then(parse_timestamp_ms).unwrap_or(0),
                    model: r.body.model.as_str().unwrap_or_default().to_string(),
                    scope: 0,
                    thinking: 0,
                    blocks: blocks_of(&r.body, &est.tokens_fn()),
                    ready_ms: 0,
                })
                .collect::<Vec<_>>()
        })
        .into_iter()
        .flatten()
        .flatten()
        .collect()
    };
    let one = build();
    let reqs: Vec<SimRequest> = (0..REPEAT)
        .flat_map(|k| one.iter().map(move |r| SimRequest { at_ms: r.at_ms + k * 600_000, scope: k, ..r.clone() }))
        .collect();
    let mut g = c.benchmark_group("sim");
    g.throughput(Throughput::Elements(reqs.len() as u64));
    g.bench_function("step_long_session_x200", |b| {
        b.iter(|| {
            let mut sim = CacheSim::default();
            reqs.iter().map(|r| sim.step(r).cache_read).sum::<u64>()
        })
    });
    g.throughput(Throughput::Elements(one.len() as u64));
    g.bench_function("assemble_and_blocks_of_long_session", |b| b.iter(|| build().len()));
    g.finish();
}

criterion_group!(sim, benches);
criterion_main!(sim);
