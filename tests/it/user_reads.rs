//! What the user reads (issue 14): one-line errors that name the user's
//! input, the assemble summary per release, shell completions and manual
//! pages generated from the flags.

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let o = crate::common::ctxasm(args);
    (o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

const TRANSCRIPT: &str =
    "tests/fixtures/cc-2.1.328/hello/transcripts/-home-dev-projects-hello/07e16342-760f-4d1e-a0b6-18041c8458ff.jsonl";

/// `send transcript.jsonl` was 20 "not a batch line" errors and a missing
/// API key; it is one line saying what to run.
#[test]
fn send_and_batch_name_a_transcript_in_one_line() {
    let expected = format!(
        "ctxasm: {TRANSCRIPT}: a Claude Code transcript, not requests to send: `ctxasm assemble {TRANSCRIPT} -o \
         requests.jsonl` makes them\n"
    );
    for args in [
        vec!["send", TRANSCRIPT, "--results", "/nonexistent-dir/r.jsonl"],
        vec!["send", TRANSCRIPT, "--dry-run"],
        vec!["batch", "submit", TRANSCRIPT],
    ] {
        let (code, out, err) = run(&args);
        assert_eq!((code, out.as_str(), err.as_str()), (Some(2), "", expected.as_str()), "{args:?}");
    }
}

/// An input without a single request is an error: nothing in it exits 3,
/// only bad lines exit 2, and neither reaches the API key check.
#[test]
fn send_without_a_request_stops_before_sending() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty.jsonl");
    std::fs::write(&empty, "\n").unwrap();
    let (code, _, err) = run(&["send", empty.to_str().unwrap(), "--results", "r.jsonl"]);
    assert_eq!((code, err), (Some(3), format!("ctxasm: {}: no request in it\n", empty.display())));
    let bad = tmp.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"a\":1}\n").unwrap();
    let (code, _, err) = run(&["send", bad.to_str().unwrap(), "--dry-run"]);
    let b = bad.display();
    assert_eq!(
        (code, err),
        (
            Some(2),
            format!(
                "ctxasm: {b}:1: not a batch line {{\"custom_id\",\"params\"}}: missing field `custom_id` at line 1 \
                 column 7\nctxasm: {b}: no request in it (1 bad line); `ctxasm assemble` writes the lines `send` and \
                 `batch` read\n"
            )
        )
    );
}

/// A store whose manifest is there but a part is gone is named as a
/// damaged store (the user's directory), not as an internal file.
#[test]
fn a_damaged_store_is_named_by_its_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let (code, _, err) = run(&[
        "assemble",
        "tests/fixtures/cc-2.1.328/hello/transcripts",
        "--format",
        "dedup",
        "-o",
        store.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    std::fs::remove_file(store.join("recipes.jsonl")).unwrap();
    let (code, out, err) = run(&["expand", store.to_str().unwrap()]);
    assert_eq!(
        (code, out, err),
        (
            Some(2),
            String::new(),
            format!("ctxasm: {}: a damaged dedup store: its recipes.jsonl is missing\n", store.display())
        )
    );
}

/// Pipeline mode still counts the records a transcript holds (it said "0
/// recorded requests" of a session with one).
#[test]
fn pipeline_mode_counts_the_records_it_did_not_use() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("o.jsonl");
    let (code, _, err) = run(&[
        "assemble",
        "tests/fixtures/cc-2.1.328/parallel-tools/transcripts",
        "--mode",
        "pipeline",
        "--json",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let j: serde_json::Value = serde_json::from_str(err.trim()).unwrap();
    let records = std::fs::read_dir("tests/fixtures/cc-2.1.328/parallel-tools/transcripts")
        .unwrap()
        .flat_map(|d| std::fs::read_dir(d.unwrap().path()).unwrap())
        .map(|f| f.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .map(|p| std::fs::read_to_string(p).unwrap().matches("\"type\":\"api-request\"").count() as u64)
        .sum::<u64>();
    assert!(records > 1);
    assert_eq!(j["recorded_requests"].as_u64(), Some(records), "{j}");
    assert_eq!(j["releases"][0]["from_records"].as_u64(), Some(0), "{j}");
    assert_eq!(j["releases"][0]["proven"].as_u64(), Some(0), "{j}");
}

/// `--turns last` counts as proven only the requests it writes.
#[test]
fn proven_counts_what_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("o.jsonl");
    let dir = "tests/fixtures/cc-2.1.328/parallel-tools/transcripts";
    let all = |turns: &str| -> serde_json::Value {
        let (code, _, err) = run(&["assemble", dir, "--turns", turns, "--json", "-o", out.to_str().unwrap()]);
        assert_eq!(code, Some(0), "{err}");
        serde_json::from_str::<serde_json::Value>(err.trim()).unwrap()["releases"][0].clone()
    };
    let every = all("all");
    assert_eq!(every["release"], "2.1.328");
    assert!(every["requests"].as_u64().unwrap() > 1, "{every}");
    assert_eq!(every["proven"], every["requests"], "{every}");
    let last = all("last");
    assert_eq!((last["requests"].as_u64(), last["proven"].as_u64()), (Some(1), Some(1)), "{last}");
}

/// Completions and manual pages come from the clap definitions: every
/// visible command is in them, hidden ones are not.
#[test]
fn completions_and_man_pages_follow_the_flags() {
    let (code, out, err) = run(&["completions", "bash"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("_ctxasm()"), "{out}");
    for cmd in ["assemble", "verify", "cost", "send", "batch", "profile", "mock-server", "completions", "man"] {
        assert!(out.contains(&format!("ctxasm__subcmd__{}", cmd.replace('-', "__subcmd__"))), "{cmd} not completed");
    }
    assert!(!out.contains("bench") && !out.contains("mock-mcp"), "a hidden command is completed");
    let (code, out, _) = run(&["completions", "zsh"]);
    assert_eq!(code, Some(0));
    assert!(out.starts_with("#compdef ctxasm"), "{}", &out[..40.min(out.len())]);
    let (code, page, _) = run(&["man"]);
    assert_eq!(code, Some(0));
    assert!(page.starts_with(".ie \\n(.g .ds Aq \\(aq"), "{}", &page[..60.min(page.len())]);
    assert!(page.contains(".TH ctxasm 1"), "{page}");
    let tmp = tempfile::tempdir().unwrap();
    let (code, _, err) = run(&["man", tmp.path().to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    let mut pages: Vec<String> =
        std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    pages.sort();
    assert_eq!(err, format!("ctxasm: {} manual pages written to {}\n", pages.len(), tmp.path().display()));
    for p in ["ctxasm.1", "ctxasm-assemble.1", "ctxasm-batch-submit.1", "ctxasm-profile-capture.1", "ctxasm-send.1"] {
        assert!(pages.contains(&p.to_string()), "{p} missing from {pages:?}");
    }
    assert!(!pages.iter().any(|p| p.contains("bench") || p.contains("mock-mcp")), "{pages:?}");
    let assemble = std::fs::read_to_string(tmp.path().join("ctxasm-assemble.1")).unwrap();
    assert!(assemble.contains("\\-\\-mode"), "the assemble page lists --mode");
}
