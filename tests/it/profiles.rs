//! The profile cache and `--profile auto` (issue 12): `profile list`, the
//! choice of each session's own release, the nearest older one with an
//! `approximated_profile` diagnostic, and a damaged cache file reported
//! and skipped. The cache is a temporary `CTXASM_CACHE_DIR`.

use serde_json::Value;
use std::path::Path;

fn run(cache: &Path, args: &[&str]) -> std::process::Output {
    crate::common::bin().env("CTXASM_CACHE_DIR", cache).args(args).output().unwrap()
}

/// The profile of `cc-2.1.88/hello`, as release `version`, in `cache`.
fn shelve(cache: &Path, version: &str) {
    let dir = cache.join("profiles");
    std::fs::create_dir_all(&dir).unwrap();
    let fix = "tests/fixtures/cc-2.1.88/hello";
    let out = crate::common::ctxasm(&[
        "profile",
        "extract",
        &format!("{fix}/wire.jsonl"),
        "--env",
        &format!("{fix}/env"),
        "-o",
        "-",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut p: Value = serde_json::from_slice(&out.stdout).unwrap();
    p["version"] = Value::from(version);
    std::fs::write(dir.join(format!("{version}.json")), p.to_string()).unwrap();
}

fn verify_memory_files(cache: &Path) -> (Option<i32>, Value, String) {
    let dir = "tests/fixtures/cc-2.1.88/memory-files";
    let out = run(
        cache,
        &[
            "verify",
            &format!("{dir}/transcripts"),
            "--wire",
            &format!("{dir}/wire.jsonl"),
            "--device-id",
            "wire",
            "--mode",
            "pipeline",
            "--env",
            &format!("{dir}/env"),
            "--json",
        ],
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    (out.status.code(), v, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// `assemble --json`'s summary (the last line of stderr).
fn summary_of(out: &std::process::Output) -> Value {
    let err = String::from_utf8_lossy(&out.stderr);
    serde_json::from_str(err.lines().last().unwrap_or_default()).unwrap_or_else(|e| panic!("{e}: stderr {err}"))
}

#[test]
fn list_says_what_is_cached() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(tmp.path(), &["profile", "list"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("no cached profiles in "), "{text}");
    assert!(text.contains("ctxasm profile capture VERSION"), "{text}");
    shelve(tmp.path(), "2.1.88");
    shelve(tmp.path(), "2.0.77");
    let out = run(tmp.path(), &["profile", "list", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let rows: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let got: Vec<(&str, &str, u64)> = rows
        .iter()
        .map(|r| (r["version"].as_str().unwrap(), r["layout"].as_str().unwrap(), r["tools"].as_u64().unwrap()))
        .collect();
    assert_eq!(got, [("2.0.77", "seed", 22), ("2.1.88", "seed", 22)]);
    let text = String::from_utf8_lossy(&run(tmp.path(), &["profile", "list"]).stdout).into_owned();
    assert!(text.starts_with("2 cached profiles in "), "{text}");
}

#[test]
fn auto_takes_the_sessions_own_release() {
    let tmp = tempfile::tempdir().unwrap();
    shelve(tmp.path(), "2.1.88");
    let (code, v, err) = verify_memory_files(tmp.path());
    assert_eq!(code, Some(0), "{v}");
    assert_eq!((v["wire_compared"].as_u64(), v["wire_byte_equal"].as_u64()), (Some(2), Some(2)), "{v}");
    assert_eq!(v["approximated_profiles"], 0);
    assert!(err.contains("--profile auto: 1 cached profile in "), "{err}");
}

#[test]
fn auto_takes_the_nearest_older_release_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    // Not /dev/null: a regression in how outputs are renamed into place
    // would replace the machine's device with a file.
    let sink = tmp.path().join("out.jsonl");
    let sink = sink.to_str().unwrap();
    // 2.1.80 and 2.1.90 are cached, 2.1.88 is not: 2.1.80 is used.
    shelve(tmp.path(), "2.1.80");
    shelve(tmp.path(), "2.1.90");
    let (code, v, _) = verify_memory_files(tmp.path());
    // Same text, so still byte-equal; the approximation is counted, not a mismatch.
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["approximated_profiles"], 1, "{v}");
    let dir = "tests/fixtures/cc-2.1.88/memory-files";
    let out = run(tmp.path(), &["assemble", &format!("{dir}/transcripts"), "--mode", "pipeline", "--json", "-o", sink]);
    let summary = summary_of(&out);
    let d = &summary["diagnostics"][0];
    assert_eq!(d["kind"], "approximated_profile", "{}", summary["diagnostics"]);
    let msg = d["message"].as_str().unwrap();
    assert!(msg.starts_with("Claude Code 2.1.88: no cached profile of this release; built with 2.1.80's"), "{msg}");
    assert!(msg.ends_with("`ctxasm profile capture 2.1.88` makes it exact"), "{msg}");
}

#[test]
fn nothing_older_cached_falls_back_to_the_built_in_layout_with_a_diagnostic() {
    let tmp = tempfile::tempdir().unwrap();
    // Not /dev/null: a regression in how outputs are renamed into place
    // would replace the machine's device with a file.
    let sink = tmp.path().join("out.jsonl");
    let sink = sink.to_str().unwrap();
    shelve(tmp.path(), "2.1.88");
    let out = run(
        tmp.path(),
        &["assemble", "tests/fixtures/cc-1.0.128/hello/transcripts", "--mode", "pipeline", "--json", "-o", sink],
    );
    let summary = summary_of(&out);
    let kinds: Vec<&str> =
        summary["diagnostics"].as_array().unwrap().iter().map(|d| d["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["approximated_profile"], "{summary}");
    let msg = summary["diagnostics"][0]["message"].as_str().unwrap();
    assert!(msg.starts_with("Claude Code 1.0.128: no cached profile of this release or an older one"), "{msg}");
    assert!(msg.contains("`ctxasm profile capture 1.0.128`"), "{msg}");
    // A given profile is used as it is: no choice, no diagnostic.
    let out = run(
        tmp.path(),
        &[
            "assemble",
            "tests/fixtures/cc-1.0.128/hello/transcripts",
            "--mode",
            "pipeline",
            "--profile",
            "cc-2.1.328",
            "--json",
            "-o",
            sink,
        ],
    );
    let summary = summary_of(&out);
    assert_eq!(summary["diagnostics"], serde_json::json!([]), "{summary}");
}

#[test]
fn a_damaged_cache_file_is_named_and_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    shelve(tmp.path(), "2.1.88");
    std::fs::write(tmp.path().join("profiles/2.1.99.json"), "{\"name\": ").unwrap();
    let (code, v, err) = verify_memory_files(tmp.path());
    assert_eq!(code, Some(0), "{v}");
    assert!(err.contains("cached profile skipped: ") && err.contains("2.1.99.json"), "{err}");
    let out = run(tmp.path(), &["profile", "list"]);
    assert_eq!(out.status.code(), Some(1), "a damaged cache is a finding");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("1 cached profile in "));
}
