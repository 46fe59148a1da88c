//! Past one machine: `--shard K/N` covers a corpus exactly once, `merge`
//! makes one dedup store of the shards' stores, `cost merge` makes the
//! corpus's report of the shards' reports — each checked against a single
//! run of the binary on the same corpus, byte for byte or field for field.

use crate::common::ctxasm;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const SAMPLE: &str = "corpora/sample";
const FIXTURES: &str = "tests/fixtures";
const USAGE: &str = "tests/fixtures/usage";

/// Run the binary; its stdout, after checking the exit status is 0.
fn run(args: &[&str]) -> Vec<u8> {
    let out = ctxasm(args);
    assert!(out.status.success(), "ctxasm {args:?}: {}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    out.stdout
}

fn json(args: &[&str]) -> Value {
    serde_json::from_slice(&run(args)).unwrap()
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The batch output of `assemble PATH [extra]` (`-o FILE`, read back).
fn batch(dir: &Path, name: &str, path: &str, extra: &[&str]) -> Vec<u8> {
    let out = dir.join(name);
    let mut args = vec!["assemble", path, "-o", p(&out)];
    args.extend_from_slice(extra);
    run(&args);
    std::fs::read(&out).unwrap()
}

fn custom_ids(batch: &[u8]) -> Vec<String> {
    batch
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice::<Value>(l).unwrap()["custom_id"].as_str().unwrap().to_string())
        .collect()
}

fn sorted_lines(batch: &[u8]) -> Vec<&[u8]> {
    let mut lines: Vec<&[u8]> = batch.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
    lines.sort();
    lines
}

#[test]
fn shards_cover_the_corpus_exactly_once() {
    let tmp = tempfile::tempdir().unwrap();
    for corpus in [SAMPLE, FIXTURES] {
        let all = batch(tmp.path(), "all.jsonl", corpus, &[]);
        let all_stats = json(&["stats", corpus, "--json"]);
        assert!(!all.is_empty());
        for (n, by) in [(1, "session"), (3, "session"), (4, "session"), (4, "project"), (2, "root")] {
            let mut union = Vec::new();
            let mut owner: BTreeMap<String, u32> = BTreeMap::new();
            let mut files = 0;
            let mut lines = 0;
            for k in 0..n {
                let shard = format!("{k}/{n}");
                let part = batch(tmp.path(), "part.jsonl", corpus, &["--shard", &shard, "--shard-by", by]);
                for id in custom_ids(&part) {
                    if let Some(other) = owner.insert(id.clone(), k) {
                        panic!("{corpus} {n} by {by}: {id} is in shard {other} and shard {k}");
                    }
                }
                union.extend_from_slice(&part);
                let st = json(&["stats", corpus, "--json", "--shard", &shard, "--shard-by", by]);
                files += st["files"].as_u64().unwrap();
                lines += st["lines"].as_u64().unwrap();
            }
            assert_eq!(sorted_lines(&union), sorted_lines(&all), "{corpus}: {n} shards by {by}");
            assert_eq!(files, all_stats["files"].as_u64().unwrap(), "{corpus}: {n} shards by {by}");
            assert_eq!(lines, all_stats["lines"].as_u64().unwrap(), "{corpus}: {n} shards by {by}");
        }
    }
}

#[test]
fn a_session_and_its_subagents_stay_in_one_shard() {
    // corpora/sample has a 2.1.x session with subagents/ and 2.0.x agent
    // files beside their sessions: every custom_id of a session (main
    // chain and agents) is in the shard of its session id.
    let tmp = tempfile::tempdir().unwrap();
    let n = 5;
    let mut shard_of_session: BTreeMap<String, u32> = BTreeMap::new();
    for k in 0..n {
        let part = batch(tmp.path(), "part.jsonl", SAMPLE, &["--shard", &format!("{k}/{n}")]);
        for id in custom_ids(&part) {
            let session = id.split('_').next().unwrap().to_string();
            let want = ctxasm::input::shard::shard_of(&session, n);
            assert_eq!(want, k, "{id}");
            assert_eq!(*shard_of_session.entry(session).or_insert(k), k, "{id}");
        }
    }
    assert!(shard_of_session.len() > 10, "{shard_of_session:?}");
}

#[test]
fn merged_dedup_store_expands_to_the_shards_batches() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    for (corpus, n) in [(SAMPLE, 4), ("tests/fixtures/cc-2.1.328/hello", 8)] {
        let mut concatenated = Vec::new();
        let mut stores: Vec<PathBuf> = Vec::new();
        for k in 0..n {
            let shard = format!("{k}/{n}");
            concatenated.extend(batch(t, &format!("b{k}.jsonl"), corpus, &["--shard", &shard]));
            let store = t.join(format!("{n}-d{k}"));
            run(&["assemble", corpus, "--shard", &shard, "--format", "dedup", "-o", p(&store)]);
            // An empty shard still writes its (empty) store.
            assert!(store.join("manifest.json").is_file(), "{}", store.display());
            stores.push(store);
        }
        let merged = t.join(format!("{n}-merged"));
        let mut args = vec!["merge", p(&merged)];
        args.extend(stores.iter().map(|s| p(s)));
        let out = ctxasm(&args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let back = t.join(format!("{n}-back.jsonl"));
        run(&["expand", p(&merged), "-o", p(&back)]);
        let expanded = std::fs::read(&back).unwrap();
        assert!(expanded == concatenated, "{corpus}: {}", crate::common::first_diff(&expanded, &concatenated));
        // Equal segments collapsed: the merged store holds as many as a
        // single run's store.
        let single = t.join(format!("{n}-single"));
        run(&["assemble", corpus, "--format", "dedup", "-o", p(&single)]);
        let manifest =
            |d: &Path| -> Value { serde_json::from_slice(&std::fs::read(d.join("manifest.json")).unwrap()).unwrap() };
        let (m, s) = (manifest(&merged), manifest(&single));
        for key in ["requests", "segments", "segment_bytes", "batch_bytes"] {
            assert_eq!(m[key], s[key], "{corpus}: {key}");
        }
    }
    // A store given twice: the same custom_ids, both lines named.
    let d0 = t.join("4-d0");
    let out = ctxasm(&["merge", p(&t.join("twice")), p(&d0), p(&d0)]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let recipes = d0.join("recipes.jsonl");
    assert!(err.contains(&format!("{}:1: custom_id ", recipes.display())), "{err}");
    assert!(err.contains(&format!("is also at {}:1: the stores overlap", recipes.display())), "{err}");
    assert!(!t.join("twice").exists());
    // An incomplete store (no manifest) is refused.
    let d1 = t.join("4-d1");
    std::fs::remove_file(d1.join("manifest.json")).unwrap();
    let out = ctxasm(&["merge", p(&t.join("partial")), p(&d0), p(&d1)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a complete dedup store"));
    assert!(!t.join("partial").exists());
}

/// `cost --json [extra]` on `corpus` unsharded, and its `n` shards merged.
fn cost_runs(dir: &Path, corpus: &str, n: u32, extra: &[&str]) -> (Value, Value, Vec<Value>) {
    let mut args = vec!["cost", corpus, "--json"];
    args.extend_from_slice(extra);
    let single = json(&args);
    let mut files = Vec::new();
    let mut shards = Vec::new();
    for k in 0..n {
        let shard = format!("{k}/{n}");
        let mut a = args.clone();
        a.extend(["--shard", &shard]);
        let out = run(&a);
        shards.push(serde_json::from_slice::<Value>(&out).unwrap());
        let f = dir.join(format!("shard-{k}.json"));
        std::fs::write(&f, out).unwrap();
        files.push(f);
    }
    let mut m = vec!["cost", "merge", "--json"];
    m.extend(files.iter().map(|f| p(f)));
    (single, json(&m), shards)
}

#[test]
fn recorded_cost_of_shards_merges_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let mut doubled = false;
    for (corpus, n) in [(SAMPLE, 4), (SAMPLE, 3), (USAGE, 2), (USAGE, 3), (USAGE, 4), (USAGE, 5)] {
        let (single, merged, shards) = cost_runs(tmp.path(), corpus, n, &["--recorded-only"]);
        // Every field: totals, by session, project, day and model, the
        // unpriced models, the diagnostics.
        assert_eq!(merged["recorded"], single["recorded"], "{corpus} {n}");
        assert_eq!(merged["report"], single["report"], "{corpus} {n}");
        assert_eq!(merged["merged"]["shards"], n);
        // The shards' own counts double a request copied into sessions of
        // two shards (the usage fixtures' resumed session); the merge
        // counts it once, as a single run does.
        let naive: u64 = shards.iter().map(|s| s["recorded"]["requests"].as_u64().unwrap()).sum();
        let exact = single["recorded"]["requests"].as_u64().unwrap();
        assert!(naive >= exact);
        doubled |= naive > exact;
    }
    assert!(doubled, "no shard split a copied request: the test shows nothing");
}

#[test]
fn modeled_cost_of_shards_merges_exactly_when_shards_model_as_one_run() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    // The estimator a single run fits, given to every run below.
    let fit = t.join("fit.json");
    std::fs::write(&fit, run(&["cost", SAMPLE, "--json"])).unwrap();
    let dropped = |mut v: Value| {
        for s in ["cache_read", "cache_write"] {
            for q in ["median_abs_tokens", "p90_abs_tokens", "median_relative", "p90_relative"] {
                v["accuracy"][s][q] = Value::Null;
            }
        }
        v["estimator"]["median_relative_error"] = Value::Null;
        v["estimator"]["p90_relative_error"] = Value::Null;
        v
    };
    for (account, by) in [("project", "project"), ("session", "session"), ("session", "root")] {
        let extra = ["--account", account, "--shard-by", by, "--estimator", p(&fit), "--what-if", "ttl=1h"];
        let (single, merged, _) = cost_runs(t, SAMPLE, 4, &extra[..]);
        let mut single = dropped(single);
        single["merged"] = merged["merged"].clone();
        assert_eq!(merged, single, "--account {account} --shard-by {by}");
        let notes: Vec<&str> =
            merged["merged"]["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].starts_with("medians and 90th percentiles"));
        assert!(notes[1].starts_with("per-request rows"));
    }
    // The default: each shard fits its own estimator, and sessions of one
    // account (the projects root) in other shards share no cache. The
    // recorded side is still exact; the model is not, and the notes say why.
    let (single, merged, _) = cost_runs(t, SAMPLE, 4, &[]);
    assert_eq!(merged["recorded"], single["recorded"]);
    assert_eq!(merged["recorded_by_category"], single["recorded_by_category"]);
    assert_eq!(merged["modeled"]["requests"], single["modeled"]["requests"]);
    assert_eq!(merged["estimator"]["samples"], single["estimator"]["samples"]);
    assert_eq!(merged["estimator"]["bytes_per_token"]["text"], Value::Null);
    let notes = merged["merged"]["notes"].to_string();
    assert!(notes.contains("each shard fitted its own estimator"), "{notes}");
    assert!(notes.contains("sharded by session with --account root"), "{notes}");
}

#[test]
fn shard_flags_and_merges_say_what_is_wrong() {
    let err = |args: &[&str]| {
        let out = ctxasm(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let e = err(&["stats", SAMPLE, "--shard", "4/4"]);
    assert!(e.contains("invalid value '4/4' for '--shard <K/N>': K is 0-based and must be below N: 0 to 3 for N = 4"));
    let e = err(&["stats", SAMPLE, "--shard", "0/0"]);
    assert!(e.contains("N must be at least 1"), "{e}");
    let e = err(&["stats", SAMPLE, "--shard-by", "project"]);
    assert!(e.contains("--shard <K/N>"), "{e}");
    // An empty shard: exit 0, an empty file, a note.
    let tmp = tempfile::tempdir().unwrap();
    let hello = "tests/fixtures/cc-2.1.328/hello";
    let roots = [PathBuf::from(hello)];
    let disc = ctxasm::input::discover::discover(&roots);
    assert_eq!(disc.groups.len(), 1);
    let key = ctxasm::input::shard::group_key(&disc, &disc.groups[0], &roots, ctxasm::input::shard::ShardBy::Session);
    let empty = (ctxasm::input::shard::shard_of(&key, 16) + 1) % 16;
    let out_file = tmp.path().join("empty.jsonl");
    let out = ctxasm(&["assemble", hello, "--shard", &format!("{empty}/16"), "-o", p(&out_file)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("shard {empty}/16 (by session): 0 of 1 session")));
    assert_eq!(std::fs::read(&out_file).unwrap(), b"");
    // cost merge: a missing shard, a report that is not a shard's.
    let r0 = tmp.path().join("r0.json");
    std::fs::write(&r0, run(&["cost", SAMPLE, "--recorded-only", "--json", "--shard", "0/2"])).unwrap();
    let e = err(&["cost", "merge", p(&r0)]);
    assert!(e.contains("shard 1/2 is missing: a merge covers the corpus only with every shard"), "{e}");
    let whole = tmp.path().join("whole.json");
    std::fs::write(&whole, run(&["cost", SAMPLE, "--recorded-only", "--json"])).unwrap();
    let e = err(&["cost", "merge", p(&r0), p(&whole)]);
    assert!(e.contains("whole.json: not the report of a shard (no \"partial\" object"), "{e}");
}
