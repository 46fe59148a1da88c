//! Issue 13, sessions as they really go: compaction, killed and
//! `/compact`-only processes. Real captures of Claude Code 2.1.88, 2.1.328
//! and 2.1.332 (`tests/fixtures/shapes/cc-<v>/`, made with
//! `scripts/capture … scripts/scenarios/shapes.py`), rebuilt with the
//! profile `profile capture --from` makes from that release's kept probes
//! (`tests/fixtures/probes/cc-<v>/`).
//!
//! - `compact-resume`: a prompt; `--resume` running only `/compact` (the
//!   compaction request: 2.1.88 writes it into `agent-acompact-*`, 2.1.3xx
//!   nowhere); `--resume` with a new prompt (2.1.88 sends the resume's
//!   `<synthetic>` filler and the skills listing on the new prompt;
//!   2.1.3xx one system message of the listings and the date).
//! - `killed-resume`: a process killed in a long Bash call, then `--resume`
//!   with a new prompt (the filler, a new process).

use crate::common::ctxasm;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::OnceLock;

const RELEASES: [&str; 3] = ["2.1.88", "2.1.328", "2.1.332"];

/// The profile of `release` made by `profile capture --from` its probes
/// (made once per test run).
fn profile(release: &str) -> String {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    let dir = DIR.get_or_init(|| tempfile::tempdir().unwrap());
    let out: PathBuf = dir.path().join(format!("{release}.json"));
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _g = LOCK.lock().unwrap();
    if !out.exists() {
        let probes = format!("tests/fixtures/probes/cc-{release}");
        let o = ctxasm(&["profile", "capture", "--from", &probes, "-o", out.to_str().unwrap()]);
        // Written even when a probe is not byte-equal (then the exit says so).
        assert!(out.exists(), "{release}: {}", String::from_utf8_lossy(&o.stderr));
    }
    out.to_str().unwrap().to_string()
}

/// `verify --json` of a shape: exit code, the five wire counts, the report.
fn verify(release: &str, shape: &str, mode: &str, with_profile: bool) -> (Option<i32>, [u64; 5], Value) {
    let dir = format!("tests/fixtures/shapes/cc-{release}/{shape}");
    let (t, w, env) = (format!("{dir}/transcripts"), format!("{dir}/wire.jsonl"), format!("{dir}/env"));
    let p = profile(release);
    let mut args = vec!["verify", &t, "--wire", &w, "--device-id", "wire", "--mode", mode, "--json"];
    if with_profile {
        args.extend(["--profile", &p]);
        if mode == "pipeline" {
            args.extend(["--env", &env]);
        }
    }
    let o = ctxasm(&args);
    let v: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    let counts = ["wire_requests", "wire_compared", "wire_byte_equal", "wire_unmatched", "wire_side_calls"]
        .map(|k| v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}")));
    (o.status.code(), counts, v)
}

fn all_equal(release: &str, shape: &str, mode: &str, n: u64) {
    let (code, counts, v) = verify(release, shape, mode, true);
    assert_eq!(counts, [n, n, n, 0, 0], "{release} {shape} {mode}: {}", v["mismatches"]);
    assert_eq!(code, Some(0), "{release} {shape} {mode}");
}

#[test]
fn issue_13_compaction_and_the_prompt_after_it_are_byte_equal() {
    for r in RELEASES {
        all_equal(r, "compact-resume", "pipeline", 3);
    }
    // 2.1.3xx writes no record of the compaction: records mode builds it.
    for r in ["2.1.328", "2.1.332"] {
        all_equal(r, "compact-resume", "records", 3);
    }
}

#[test]
fn issue_13_a_killed_process_and_its_resume_are_byte_equal() {
    for r in RELEASES {
        all_equal(r, "killed-resume", "pipeline", 2);
    }
    for r in ["2.1.328", "2.1.332"] {
        all_equal(r, "killed-resume", "records", 2);
    }
}

#[test]
fn issue_13_compaction_requests_say_what_they_are() {
    let tmp = tempfile::tempdir().unwrap();
    for r in RELEASES {
        let dir = format!("tests/fixtures/shapes/cc-{r}/compact-resume");
        let out = tmp.path().join(format!("{r}.jsonl"));
        let p = profile(r);
        let o = ctxasm(&[
            "assemble",
            &format!("{dir}/transcripts"),
            "--mode",
            "pipeline",
            "--profile",
            &p,
            "--env",
            &format!("{dir}/env"),
            "-o",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{r}: {}", String::from_utf8_lossy(&o.stderr));
        let ids: Vec<String> = std::fs::read_to_string(&out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["custom_id"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(ids.len(), 3, "{r}: {ids:?}");
        // The two turns of the main chain, and one compaction (2.1.88's
        // compaction file no longer gives a request for its history copy).
        let compact: Vec<&String> = ids.iter().filter(|i| i.ends_with("_compact_0")).collect();
        assert_eq!(compact.len(), 1, "{r}: {ids:?}");
        assert_eq!(ids.iter().filter(|i| i.ends_with("_0") || i.ends_with("_1")).count(), 3, "{r}: {ids:?}");
    }
}

#[test]
fn issue_13_records_mode_without_the_instruction_says_what_it_did_not_rebuild() {
    let (code, counts, v) = verify("2.1.332", "compact-resume", "records", false);
    assert_eq!(counts, [3, 2, 2, 1, 0], "{v}");
    assert_ne!(code, Some(0));
    let text = v.to_string();
    assert!(text.contains("1 compaction request(s) not rebuilt"), "{v}");
}
