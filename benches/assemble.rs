//! Criterion benches of assembly on the captured scenarios
//! (`tests/fixtures/cc-2.1.328`, `tests/fixtures/cc-2.1.88`): reading alone
//! as the baseline, record replay, the pipeline end to end (both layouts)
//! and its stages one by one, batch and dedup output; and one generated
//! session of 1,000, 2,000 and 4,000 turns (`long_session/*`: the cost of a
//! turn must not grow with the session), the pipeline's (2.0.77, plain text)
//! and record replay's (the 2.1.328 long-session capture carried on:
//! `long_records_session/*`).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ctxasm::assemble::pipeline::normalize::{self, Rules};
use ctxasm::assemble::pipeline::pairing::ensure_tool_result_pairing;
use ctxasm::assemble::pipeline::projection::{Links, project, turns};
use ctxasm::assemble::pipeline::{Overrides, Setup};
use ctxasm::assemble::pipeline::{breakpoints, media};
use ctxasm::assemble::records::{RecordOptions, assemble_records};
use ctxasm::assemble::{Assembler, Mode, assemble_session};
use ctxasm::corpus::{RunOptions, for_each_session, for_each_session_of};
use ctxasm::env::SessionEnv;
use ctxasm::input::discover::discover;
use ctxasm::json::Json;
use ctxasm::write::{AssembleOptions, write_batch, write_dedup};
use std::path::{Path, PathBuf};

#[path = "../tests/it/long_records.rs"]
mod long_records;

fn pipeline(prep: Setup) -> Assembler {
    Assembler { mode: Mode::Pipeline, records: RecordOptions::default(), pipeline: Some(prep), chooser: None }
}

fn benches(c: &mut Criterion) {
    let disc = discover(&[PathBuf::from("tests/fixtures/cc-2.1.328")]);
    let run = RunOptions::with_threads(Some(1));
    let opts = AssembleOptions::default();
    let cc = pipeline(Setup {
        profile: ctxasm::profile::Profile::load("cc-2.1.328").expect("built-in profile"),
        env: None,
        overrides: Overrides::default(),
    });
    let mut g = c.benchmark_group("assemble");
    g.throughput(Throughput::Bytes(disc.total_bytes()));
    g.bench_function("read_only_baseline", |b| {
        b.iter(|| for_each_session(&disc, &run, |s| s.files().map(|f| f.parsed.entries.len()).sum::<usize>()).len())
    });
    g.bench_function("records", |b| {
        b.iter(|| {
            for_each_session_of(&disc, &disc.groups, &run, |bump, s| {
                assemble_records(bump, s, &opts.assembler.records).requests.len()
            })
            .len()
        })
    });
    g.bench_function("pipeline_cc_2_1_328", |b| {
        b.iter(|| {
            for_each_session_of(&disc, &disc.groups, &run, |bump, s| assemble_session(bump, s, &cc).requests.len())
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

    // The seed layout: a profile extracted from the 2.1.88 hello capture,
    // every 2.1.88 scenario with its own environment.
    let fix = Path::new("tests/fixtures/cc-2.1.88");
    let hello_env = SessionEnv::from_dir(&fix.join("hello/env")).expect("hello env");
    let profile = ctxasm::assemble::extract::extract(&fix.join("hello/wire.jsonl"), Some(&hello_env)).expect("profile");
    let disc88 = discover(&[fix.to_path_buf()]);
    let seed = pipeline(Setup { profile, env: Some(hello_env), overrides: Overrides::default() });
    let mut g = c.benchmark_group("pipeline");
    g.throughput(Throughput::Bytes(disc88.total_bytes()));
    g.bench_function("read_only_baseline_2_1_88", |b| {
        b.iter(|| for_each_session(&disc88, &run, |s| s.files().map(|f| f.parsed.entries.len()).sum::<usize>()).len())
    });
    g.bench_function("seed_end_to_end", |b| {
        b.iter(|| {
            for_each_session_of(&disc88, &disc88.groups, &run, |bump, s| {
                assemble_session(bump, s, &seed).requests.len()
            })
            .len()
        })
    });
    g.bench_function("stage_prepare", |b| {
        b.iter(|| for_each_session_of(&disc88, &disc88.groups, &run, |_, s| seed.plan(s).1.after_read.len()).len())
    });
    // Stages on the 2.1.328 sessions, each fed by the previous one.
    g.bench_function("stage_projection", |b| {
        b.iter(|| {
            for_each_session(&disc, &run, |s| {
                s.files()
                    .map(|f| {
                        let e = &f.parsed.entries;
                        let links = Links::new(e);
                        turns(e).iter().map(|t| project(e, &links, t).len()).sum::<usize>()
                    })
                    .sum::<usize>()
            })
            .len()
        })
    });
    g.bench_function("stage_projection_normalize", |b| b.iter(|| stage_messages(&disc, &run, |_, m| m.len())));
    g.bench_function("stage_projection_normalize_pairing_media_breakpoints", |b| {
        b.iter(|| {
            stage_messages(&disc, &run, |bump, m| {
                let (m, _) = ensure_tool_result_pairing(bump, &m);
                let (mut m, _) = media::limit_media(bump, &m);
                let cc = Json::Obj(bump.alloc_slice_copy(&[("type", Json::Str("ephemeral"))]));
                breakpoints::add_cache_breakpoints(bump, &mut m, cc, 1);
                m.len()
            })
        })
    });
    g.finish();

    // Scaling: one session of N plain turns, pipeline dedup; the time of
    // 2N over the time of N is the ratio to watch (issue 15: ≤ 2.2).
    let mut g = c.benchmark_group("long_session");
    let tmp = tempfile::tempdir().expect("temp dir");
    let long_opts = AssembleOptions {
        assembler: pipeline(Setup {
            profile: ctxasm::profile::Profile::load("cc-2.1.328").expect("built-in profile"),
            env: None,
            overrides: Overrides::default(),
        }),
        ..AssembleOptions::default()
    };
    for turns in [1000, 2000, 4000] {
        let dir = tmp.path().join(format!("t{turns}"));
        long_session(&dir, turns);
        let disc = discover(&[dir]);
        g.throughput(Throughput::Elements(turns as u64));
        let mut n = 0u64;
        g.bench_function(format!("pipeline_dedup_{turns}_turns"), |b| {
            b.iter(|| {
                n += 1;
                let out = tmp.path().join(format!("out{turns}-{n}"));
                let s = write_dedup(&disc, &run, &long_opts, &out);
                let _ = std::fs::remove_dir_all(&out);
                s.map(|s| s.requests_written).unwrap_or(0)
            })
        });
    }
    g.finish();

    // The same for record replay: one 2.1.328 session of N recorded
    // requests, records dedup.
    let mut g = c.benchmark_group("long_records_session");
    for turns in [1000, 2000, 4000] {
        let dir = tmp.path().join(format!("r{turns}"));
        long_records::long_records_session(&dir, turns);
        let disc = discover(&[dir]);
        g.throughput(Throughput::Elements(turns as u64));
        let mut n = 0u64;
        g.bench_function(format!("records_dedup_{turns}_turns"), |b| {
            b.iter(|| {
                n += 1;
                let out = tmp.path().join(format!("rout{turns}-{n}"));
                let s = write_dedup(&disc, &run, &opts, &out);
                let _ = std::fs::remove_dir_all(&out);
                s.map(|s| s.requests_written).unwrap_or(0)
            })
        });
    }
    g.finish();
}

/// One 2.0.77 session of `turns` user/assistant text turns in `dir`.
fn long_session(dir: &Path, turns: usize) {
    use std::fmt::Write;
    let mut out = String::new();
    let sid = "00000000-0000-4000-8000-000000000001";
    let mut parent = "null".to_string();
    for i in 0..turns {
        let common = format!(
            r#""isSidechain":false,"userType":"external","cwd":"/home/dev/p","sessionId":"{sid}","version":"2.0.77","timestamp":"2026-01-01T00:00:00.000Z""#
        );
        let (u, a) = (format!("u-{i:08}"), format!("a-{i:08}"));
        let _ = writeln!(
            out,
            r#"{{"parentUuid":{parent},{common},"type":"user","uuid":"{u}","message":{{"role":"user","content":"Question {i}: explain item {i} in a few words."}}}}"#
        );
        let _ = writeln!(
            out,
            r#"{{"parentUuid":"{u}",{common},"type":"assistant","uuid":"{a}","requestId":"req_{i}","message":{{"model":"claude-sonnet-4-5","id":"msg_{i:024}","type":"message","role":"assistant","content":[{{"type":"text","text":"Item {i} is a thing that does something useful."}}],"stop_reason":"end_turn","stop_sequence":null,"usage":{{"input_tokens":10,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":30}}}}}}"#
        );
        parent = format!("\"{a}\"");
    }
    std::fs::create_dir_all(dir).expect("bench dir");
    std::fs::write(dir.join(format!("{sid}.jsonl")), out).expect("bench session");
}

/// Normalized messages of every turn of every session, handed to `f`.
fn stage_messages(
    disc: &ctxasm::input::discover::Discovery,
    run: &RunOptions<'_>,
    f: impl for<'a> Fn(&'a bumpalo::Bump, Vec<&'a Json<'a>>) -> usize + Sync,
) -> usize {
    for_each_session_of(disc, &disc.groups, run, |bump, s| {
        let mut n = 0;
        for file in s.files() {
            let e = &file.parsed.entries;
            let links = Links::new(e);
            let pieces: Vec<Option<normalize::Piece>> = e.iter().map(|x| normalize::piece_of_entry(bump, x)).collect();
            for t in turns(e) {
                let p: Vec<normalize::Piece> =
                    project(e, &links, &t).into_iter().filter_map(|i| pieces[i].clone()).collect();
                let (m, _) = normalize::normalize(bump, &p, &Rules::default());
                n += f(bump, m);
            }
        }
        n
    })
    .len()
}

criterion_group! {
    name = assemble;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(3));
    targets = benches
}
criterion_main!(assemble);
