//! Criterion benches of record replay on the 14 captured 2.1.328 scenarios
//! (`tests/fixtures/cc-2.1.328`): assembly alone, batch output and dedup
//! output (into memory / a temp dir), against reading alone as baseline.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ctxasm::assemble::records::{RecordOptions, assemble_records};
use ctxasm::input::discover::discover;
use ctxasm::model::session::{RunOptions, for_each_session, for_each_session_of};
use ctxasm::write::{AssembleOptions, Turns, write_batch, write_dedup};
use std::path::PathBuf;

fn benches(c: &mut Criterion) {
    let disc = discover(&[PathBuf::from("tests/fixtures/cc-2.1.328")]);
    let run = RunOptions::with_threads(Some(1));
    let opts = AssembleOptions::default();
    let mut g = c.benchmark_group("assemble");
    g.throughput(Throughput::Bytes(disc.total_bytes()));
    g.bench_function("read_only_baseline", |b| {
        b.iter(|| for_each_session(&disc, &run, |s| s.files().map(|f| f.parsed.entries.len()).sum::<usize>()).len())
    });
    g.bench_function("records", |b| {
        b.iter(|| {
            for_each_session_of(&disc, &disc.groups, &run, |bump, s| {
                assemble_records(bump, s, &opts.records).requests.len()
            })
            .len()
        })
    });
    g.bench_function("batch", |b| {
        let mut out = Vec::with_capacity(4 << 20);
        b.iter(|| {
            out.clear();
            write_batch(&disc, &run, &opts, &mut out).map(|s| s.requests_written).unwrap_or(0)
        })
    });
    g.bench_function("dedup", |b| {
        let tmp = tempfile::tempdir().expect("temp dir");
        let mut n = 0u64;
        b.iter(|| {
            n += 1;
            write_dedup(&disc, &run, &opts, &tmp.path().join(n.to_string())).map(|s| s.segments).unwrap_or(0)
        })
    });
    g.finish();
}

criterion_group! {
    name = assemble;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(3));
    targets = benches
}
criterion_main!(assemble);
