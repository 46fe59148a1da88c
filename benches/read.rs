//! Criterion benches of the read path on the bundled real transcripts
//! (`corpora/sample`): line splitting, parsing into the arena model (with the
//! owned-DOM parse as the in-process baseline), tree building, and the whole
//! `stats` collection.

use bumpalo::Bump;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ctxasm::corpus::RunOptions;
use ctxasm::input::discover::discover;
use ctxasm::input::{ReadOptions, lines, parse_bytes};
use ctxasm::model::tree::Tree;
use std::hint::black_box;
use std::path::PathBuf;

/// All sample transcripts, concatenated: one ~2.6 MB "file" of real lines.
fn sample_bytes() -> Vec<u8> {
    let disc = discover(&[PathBuf::from("corpora/sample")]);
    let mut all = Vec::new();
    for f in &disc.files {
        if let Ok(bytes) = std::fs::read(&f.path) {
            all.extend_from_slice(&bytes);
            if !all.ends_with(b"\n") && !all.is_empty() {
                all.push(b'\n');
            }
        }
    }
    all
}

fn benches(c: &mut Criterion) {
    let data = sample_bytes();
    let opts = ReadOptions::default();

    let mut g = c.benchmark_group("read");
    g.throughput(Throughput::Bytes(data.len() as u64));
    g.bench_function("line_split", |b| b.iter(|| lines::lines(black_box(&data)).count()));
    g.bench_function("parse_arena", |b| {
        b.iter(|| {
            let bump = Bump::with_capacity(data.len() * 2);
            let p = parse_bytes(&bump, black_box(&data), "bench", &opts);
            p.entries.len()
        })
    });
    g.bench_function("parse_owned_dom_baseline", |b| {
        let mut buf = Vec::new();
        b.iter(|| {
            let mut n = 0usize;
            for line in lines::lines(black_box(&data)) {
                buf.clear();
                buf.extend_from_slice(line.bytes);
                n += usize::from(simd_json::to_owned_value(&mut buf).is_ok());
            }
            n
        })
    });
    // Tree building alone, on entries parsed once.
    let bump = Bump::new();
    let parsed = parse_bytes(&bump, &data, "bench", &opts);
    g.throughput(Throughput::Elements(parsed.entries.len() as u64));
    g.bench_function("tree_build", |b| {
        b.iter(|| {
            let mut diags = Vec::new();
            let t = Tree::build(black_box(&parsed.entries), "bench", &|_| false, &mut diags);
            (t.nodes.len(), diags.len())
        })
    });
    g.finish();

    let disc = discover(&[PathBuf::from("corpora/sample")]);
    let mut g = c.benchmark_group("stats");
    g.throughput(Throughput::Bytes(disc.total_bytes()));
    for threads in [1, 2] {
        g.bench_with_input(BenchmarkId::new("collect_sample", threads), &threads, |b, &t| {
            let run = RunOptions::with_threads(Some(t));
            b.iter(|| ctxasm::stats::collect(&disc, &run).lines)
        });
    }
    g.finish();
}

criterion_group! {
    name = read;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(3));
    targets = benches
}
criterion_main!(read);
