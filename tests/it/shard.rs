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
        for (n, by) in [(1, "session"), (2, "session"), (3, "session"), (5, "session"), (3, "project"), (2, "root")] {
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
    let mut agents = 0;
    for k in 0..n {
        let part = batch(tmp.path(), "part.jsonl", SAMPLE, &["--shard", &format!("{k}/{n}")]);
        for id in custom_ids(&part) {
            agents += usize::from(id.split('_').count() > 2);
            let session = id.split('_').next().unwrap().to_string();
            let want = ctxasm::input::shard::shard_of(&session, n);
            assert_eq!(want, k, "{id}");
            assert_eq!(*shard_of_session.entry(session).or_insert(k), k, "{id}");
        }
    }
    assert!(shard_of_session.len() > 10, "{shard_of_session:?}");
    // The sample has both kinds of subagent (2.1.x `<sid>/subagents/`,
    // 2.0.x `agent-*.jsonl` beside their session) and a main transcript
    // and an agent file saved under other names (`-fasthooks/sample_*`).
    for sid in [
        "ef958aa1-0e93-49f0-bb71-150f63befcd1",
        "7acd37a8-2745-4b58-a8a9-46164b22ad9e",
        "c45af7b1-cb7c-4e51-93db-8cbb250a877a",
    ] {
        assert!(shard_of_session.contains_key(sid), "{sid}");
    }
    assert!(agents > 10, "{agents} subagent requests");
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
        // ...so the merged store is smaller than the shards' stores together.
        let bytes = |d: &Path| {
            ["segments.bin", "recipes.jsonl"].iter().map(|f| std::fs::metadata(d.join(f)).unwrap().len()).sum::<u64>()
        };
        let shards: u64 = stores.iter().map(|d| bytes(d)).sum();
        if corpus == SAMPLE {
            assert!(bytes(&merged) < shards, "{corpus}: merged {} of shards {shards}", bytes(&merged));
        }
        // OUT exists: refused, left as it was.
        let before = std::fs::read(merged.join("recipes.jsonl")).unwrap();
        let out = ctxasm(&["merge", p(&merged), p(&stores[0])]);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("{}: already holds a dedup store", merged.display())), "{err}");
        assert_eq!(std::fs::read(merged.join("recipes.jsonl")).unwrap(), before);
    }
    // A store of another format version: refused, both named.
    let (d2, d3) = (t.join("4-d2"), t.join("4-d3"));
    let man = std::fs::read_to_string(d3.join("manifest.json")).unwrap();
    // (d3 as an older ctxasm wrote it: version 2, where this one writes 3.)
    assert!(man.contains("\"version\": 3,"), "{man}");
    std::fs::write(d3.join("manifest.json"), man.replace("\"version\": 3,", "\"version\": 2,")).unwrap();
    let out = ctxasm(&["merge", p(&t.join("versions")), p(&d2), p(&d3)]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{} is dedup format version 3, {} is version 2: not merged", d2.display(), d3.display())),
        "{err}"
    );
    assert!(!t.join("versions").exists());
    // A directory that is not a store.
    let out = ctxasm(&["merge", p(&t.join("nostore")), p(&d2), SAMPLE]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("corpora/sample: not a dedup store (no manifest.json, segments.bin or recipes.jsonl)"),
        "{err}"
    );
    assert!(!t.join("nostore").exists());
    // A store given twice: the same custom_ids, both lines named.
    let d0 = t.join("4-d0");
    let out = ctxasm(&["merge", p(&t.join("twice")), p(&d0), p(&d0)]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let recipes = d0.join("recipes.jsonl");
    assert!(err.contains(&format!("{}:1: custom_id ", recipes.display())), "{err}");
    assert!(err.contains(&format!("is also at {}:1: the stores overlap", recipes.display())), "{err}");
    assert!(!t.join("twice").exists());
    // What a killed run leaves (the manifest is written last): refused.
    let d1 = t.join("4-d1");
    std::fs::remove_file(d1.join("manifest.json")).unwrap();
    let out = ctxasm(&["merge", p(&t.join("partial")), p(&d0), p(&d1)]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "{}: an incomplete dedup store (no manifest.json: left by an interrupted or killed run): not merged",
            d1.display()
        )),
        "{err}"
    );
    assert!(!t.join("partial").exists());
    // Nothing of the refused merges is left beside them.
    let hidden: Vec<String> = std::fs::read_dir(t)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(hidden.is_empty(), "{hidden:?}");
}

/// Where `a` and `b` differ: every count, string and list exactly; money
/// (USD) to its last digit shown (1e-6) and percentages to theirs (1e-4),
/// one unit either way: the shards' subtotals are added in another order
/// than a single run adds its requests, and a sum rounded on a boundary of
/// the last digit may round the other way.
fn differences(a: &Value, b: &Value, path: &str) -> Vec<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) if x.len() == y.len() => x
            .iter()
            .flat_map(|(k, v)| match y.get(k) {
                Some(w) => differences(v, w, &format!("{path}.{k}")),
                None => vec![format!("{path}.{k}: only in the first")],
            })
            .collect(),
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            x.iter().zip(y).enumerate().flat_map(|(i, (v, w))| differences(v, w, &format!("{path}[{i}]"))).collect()
        }
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            let unit = if path.ends_with("_pct") { 1e-4 } else { 1e-6 };
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            if (x - y).abs() <= unit * 1.000_001 { Vec::new() } else { vec![format!("{path}: {x} != {y}")] }
        }
        _ if a == b => Vec::new(),
        _ => vec![format!("{path}: {a} != {b}")],
    }
}

/// `cost --json [extra]` on `corpus` unsharded, and its `n` shards (with
/// `sharding` too) merged.
fn cost_runs(dir: &Path, corpus: &str, n: u32, extra: &[&str], sharding: &[&str]) -> (Value, Value, Vec<Value>) {
    let mut args = vec!["cost", corpus, "--json"];
    args.extend_from_slice(extra);
    let single = json(&args);
    let mut files = Vec::new();
    let mut shards = Vec::new();
    for k in 0..n {
        let shard = format!("{k}/{n}");
        let mut a = args.clone();
        a.extend(["--shard", &shard]);
        a.extend_from_slice(sharding);
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
        let (single, merged, shards) = cost_runs(tmp.path(), corpus, n, &["--recorded-only"], &[]);
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
        v["estimator"]["median_relative_error"] = Value::Null;
        v["estimator"]["p90_relative_error"] = Value::Null;
        v
    };
    for (account, by) in [("project", "project"), ("session", "session"), ("session", "root")] {
        let extra = ["--account", account, "--estimator", p(&fit), "--what-if", "ttl=1h"];
        let (single, merged, _) = cost_runs(t, SAMPLE, 4, &extra[..], &["--shard-by", by]);
        let mut single = dropped(single);
        single["merged"] = merged["merged"].clone();
        let diffs = differences(&merged, &single, "");
        assert!(diffs.is_empty(), "--account {account} --shard-by {by}: {diffs:#?}");
        let notes: Vec<&str> =
            merged["merged"]["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].starts_with("the estimator's medians and 90th percentiles"), "{notes:?}");
        assert!(notes[1].starts_with("per-request rows"));
    }
    // The default: each shard fits its own estimator, and sessions of one
    // account (the projects root) in other shards share no cache. The
    // recorded side is still exact; the model is not, and the notes say why.
    let (single, merged, _) = cost_runs(t, SAMPLE, 4, &[], &[]);
    assert_eq!(merged["recorded"], single["recorded"]);
    assert_eq!(merged["bill"], single["bill"], "the bill at a glance merges exactly");
    assert_eq!(merged["ttl_misses"], single["ttl_misses"], "so do the pauses that let the cache expire");
    assert_eq!(merged["recorded_by_category"], single["recorded_by_category"]);
    assert_eq!(merged["modeled"]["requests"], single["modeled"]["requests"]);
    assert_eq!(merged["estimator"]["samples"], single["estimator"]["samples"]);
    assert_eq!(merged["estimator"]["bytes_per_token"]["text"], Value::Null);
    let notes = merged["merged"]["notes"].to_string();
    assert!(notes.contains("each shard fitted its own estimator"), "{notes}");
    assert!(notes.contains("sharded by session with --account root"), "{notes}");
}

/// A request copied into sessions of two shards (the usage fixtures'
/// resumed session) is compared once in the merge, as in a single run:
/// the accuracy, its quantiles too, is the single run's.
#[test]
fn a_request_copied_across_shards_is_compared_once() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let fit = t.join("fit.json");
    std::fs::write(&fit, run(&["cost", USAGE, "--json"])).unwrap();
    let extra = ["--account", "session", "--estimator", p(&fit)];
    let mut split = false;
    for n in 2..=5 {
        let (single, merged, shards) = cost_runs(t, USAGE, n, &extra[..], &[]);
        for k in ["accuracy", "modeled_compared", "recorded_by_category", "modeled_by_category"] {
            assert_eq!(merged[k], single[k], "{k} of {n} shards");
        }
        let naive: u64 = shards.iter().map(|s| s["accuracy"]["requests_compared"].as_u64().unwrap()).sum();
        let exact = single["accuracy"]["requests_compared"].as_u64().unwrap();
        assert!(naive >= exact);
        split |= naive > exact;
    }
    assert!(split, "no shard split a copied request: the test shows nothing");
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
    let e = err(&["cost", "merge", p(&r0), p(&r0)]);
    assert!(e.contains(&format!("shard 0/2 is given twice: {} and {}", r0.display(), r0.display())), "{e}");
    let r3 = tmp.path().join("r3.json");
    std::fs::write(&r3, run(&["cost", SAMPLE, "--recorded-only", "--json", "--shard", "1/3"])).unwrap();
    let e = err(&["cost", "merge", p(&r0), p(&r3)]);
    assert!(
        e.contains("r3.json is shard 1/3 by session, ")
            && e.contains("r0.json is shard 0/2 by session: not shards of one run"),
        "{e}"
    );
    // Another price table than the shards'.
    let table = tmp.path().join("prices.json");
    let builtin: Value = serde_json::from_str(include_str!("../../src/cost/pricing.json")).unwrap();
    let mut other = builtin.clone();
    other["date"] = "1999-12-31".into();
    std::fs::write(&table, other.to_string()).unwrap();
    let r1 = tmp.path().join("r1.json");
    std::fs::write(&r1, run(&["cost", SAMPLE, "--recorded-only", "--json", "--shard", "1/2"])).unwrap();
    let e = err(&["cost", "merge", "--pricing", p(&table), p(&r0), p(&r1)]);
    assert!(e.contains("r0.json was priced with the built-in price table") && e.contains("this merge with"), "{e}");
}

#[test]
fn verify_shards_compare_each_session_once() {
    // The 14 captures of 2.1.328 as one corpus, with every capture's wire:
    // each shard compares its sessions' captured requests, and leaves the
    // other shards' alone (neither compared nor counted as side calls).
    let base = Path::new("tests/fixtures/cc-2.1.328");
    let mut scenarios: Vec<PathBuf> = std::fs::read_dir(base).unwrap().map(|e| e.unwrap().path()).collect();
    scenarios.sort();
    let mut args: Vec<String> = ["verify", "--device-id", "wire", "--json"].map(String::from).to_vec();
    for s in &scenarios {
        args.push(p(&s.join("transcripts")).to_string());
        args.extend(["--wire".to_string(), p(&s.join("wire.jsonl")).to_string()]);
    }
    let argv = |extra: &[String]| -> Vec<String> { args.iter().chain(extra).cloned().collect() };
    let as_str = |v: &[String]| -> Value {
        let a: Vec<&str> = v.iter().map(String::as_str).collect();
        json(&a)
    };
    let whole = as_str(&argv(&[]));
    assert_eq!((whole["sessions"].as_u64(), whole["wire_compared"].as_u64()), (Some(14), Some(29)));
    for n in [2u32, 5] {
        let mut sum = BTreeMap::<&str, u64>::new();
        for k in 0..n {
            // Exit 0 (run() checks it): every shard is clean on its own.
            let r = as_str(&argv(&["--shard".into(), format!("{k}/{n}")]));
            for key in [
                "sessions",
                "requests",
                "messages_hashed",
                "wire_requests",
                "wire_compared",
                "wire_byte_equal",
                "wire_side_calls",
            ] {
                *sum.entry(key).or_default() += r[key].as_u64().unwrap();
            }
        }
        for (key, got) in sum {
            assert_eq!(Some(got), whole[key].as_u64(), "{n} shards: {key}");
        }
    }
}

/// Real usage (the public corpus, Claude Code 1.0.24 to 2.1.198, with
/// sessions copied into two folders): the recorded report of 4 shards
/// merged is a single run's, every field; the model of 4 shards by root
/// with one estimator is a single run's (money to its last digit).
#[test]
#[ignore = "needs ../shared/corpora/public beside the checkout (CI has it)"]
fn public_corpus_shards_merge_as_a_single_run() {
    let public = "../shared/corpora/public";
    assert!(Path::new(public).is_dir(), "../shared/corpora/public is not here");
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let (single, merged, _) = cost_runs(t, public, 4, &["--recorded-only"], &[]);
    assert_eq!(merged["recorded"], single["recorded"]);
    assert_eq!(merged["report"], single["report"]);
    assert_eq!(single["recorded"]["requests"], 1179);
    let fit = t.join("fit.json");
    std::fs::write(&fit, run(&["cost", public, "--json"])).unwrap();
    let extra = ["--estimator", p(&fit), "--what-if", "ttl=1h"];
    let (mut single, merged, shards) = cost_runs(t, public, 4, &extra[..], &["--shard-by", "root"]);
    // Sessions copied into two roots: the shards compare a copied request
    // each, the merge once.
    let naive: u64 = shards.iter().map(|s| s["accuracy"]["requests_compared"].as_u64().unwrap()).sum();
    assert!(naive > single["accuracy"]["requests_compared"].as_u64().unwrap(), "no copy split: the test shows nothing");
    single["estimator"]["median_relative_error"] = Value::Null;
    single["estimator"]["p90_relative_error"] = Value::Null;
    single["merged"] = merged["merged"].clone();
    let diffs = differences(&merged, &single, "");
    assert!(diffs.is_empty(), "{diffs:#?}");
}
