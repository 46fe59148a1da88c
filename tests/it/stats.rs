//! `stats` against ground truth computed independently of ctxasm.
//!
//! The expected files in `tests/fixtures/expected/` were written by
//! `tests/fixtures/expected_counts.py` (Python's `json` module, its own
//! discovery and tree rules, written down in its docstring): run from the
//! repository root as `python3 tests/fixtures/expected_counts.py corpora/sample`
//! and `… tests/fixtures/bad`. Diagnostics are compared by (file, line, kind);
//! the message texts are ctxasm's own.

use crate::common::ctxasm;
use ctxasm::corpus::RunOptions;
use ctxasm::input::discover::discover;
use ctxasm::stats::{Stats, collect};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

fn comparable(st: &Stats) -> Value {
    let mut v = serde_json::to_value(st).unwrap();
    for d in v["diagnostics"].as_array_mut().unwrap() {
        d.as_object_mut().unwrap().remove("message");
    }
    v
}

fn expected(name: &str) -> Value {
    let text = std::fs::read_to_string(format!("tests/fixtures/expected/{name}.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn stats_of(paths: &[&str], threads: Option<usize>) -> Stats {
    let paths: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
    let disc = discover(&paths);
    collect(&disc, &RunOptions::with_threads(threads))
}

#[test]
fn sample_corpus_matches_independent_counts() {
    let got = comparable(&stats_of(&["corpora/sample"], None));
    assert_eq!(got, expected("sample"));
}

#[test]
fn bad_inputs_give_exactly_the_expected_diagnostics() {
    let got = comparable(&stats_of(&["tests/fixtures/bad"], None));
    assert_eq!(got, expected("bad"));
}

#[test]
fn output_does_not_depend_on_thread_count() {
    let one = stats_of(&["corpora/sample", "tests/fixtures/bad"], Some(1));
    for threads in [2, 3, 8] {
        assert_eq!(stats_of(&["corpora/sample", "tests/fixtures/bad"], Some(threads)), one);
    }
}

#[test]
fn cli_json_is_one_object_with_the_documented_keys() {
    let out = ctxasm(&["stats", "--json", "tests/fixtures/bad"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 1);
    let v: Value = serde_json::from_str(&text).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "files",
            "sessions",
            "subagent_files",
            "lines",
            "bad_lines",
            "entries",
            "attachments",
            "assistant_messages",
            "recorded_requests",
            "diagnostics"
        ]
    );
    let d = &v["diagnostics"][0];
    assert_eq!(d["file"], json!("tests/fixtures/bad/cycle.jsonl"));
    assert_eq!(d["line"], json!(2));
    assert_eq!(d["kind"], json!("parent_cycle"));
    assert!(d["message"].as_str().unwrap().contains("loop"));
}

#[test]
fn cli_strict_fails_on_diagnostics_and_missing_paths_fail() {
    let out = ctxasm(&["stats", "--strict", "tests/fixtures/bad"]);
    assert_eq!(out.status.code(), Some(1));
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("tests/fixtures/bad/truncated.jsonl:7: truncated_line"), "{table}");
    let ok = ctxasm(&["stats", "--strict", "tests/fixtures/bad/blank_lines.jsonl"]);
    assert_eq!(ok.status.code(), Some(0));
    let missing = ctxasm(&["stats", "--json", "no/such/dir", "tests/fixtures/bad/blank_lines.jsonl"]);
    assert_eq!(missing.status.code(), Some(2));
    let v: Value = serde_json::from_slice(&missing.stdout).unwrap();
    assert_eq!(v["files"], json!(1));
    assert_eq!(v["diagnostics"][0]["kind"], json!("not_found"));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no/such/dir"));
}

#[test]
fn default_root_comes_from_claude_config_dir() {
    let dir = tempfile::tempdir().unwrap();
    let proj = dir.path().join("projects/-p");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::copy("tests/fixtures/bad/blank_lines.jsonl", proj.join("s.jsonl")).unwrap();
    let out = crate::common::bin().args(["stats", "--json"]).env("CLAUDE_CONFIG_DIR", dir.path()).output().unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["files"], json!(1));
    assert_eq!(v["diagnostics"], json!([]));
}

/// The real captures and public transcripts in `../shared/corpora`, checked
/// against the Python script run now.
#[test]
#[ignore = "needs ../shared/corpora beside the checkout and python3 (CI has both)"]
fn real_corpora_match_independent_counts() {
    let shared = Path::new("../shared/corpora");
    assert!(shared.is_dir(), "../shared/corpora is not here");
    for sub in ["claude-code-2.1.88", "claude-code-2.1.328", "public"] {
        let path = format!("../shared/corpora/{sub}");
        let py = match Command::new("python3").args(["tests/fixtures/expected_counts.py", &path]).output() {
            Ok(out) if out.status.success() => out.stdout,
            other => panic!("python3 tests/fixtures/expected_counts.py {path} failed: {other:?}"),
        };
        let want: Value = serde_json::from_slice(&py).unwrap();
        let got = comparable(&stats_of(&[&path], None));
        assert_eq!(got, want, "{sub}");
    }
}
