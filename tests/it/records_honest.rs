//! Record replay is honest about what it cannot prove (issue 14): one bad
//! line loses only the requests that need it, each with a diagnostic that
//! names the line that lost it; numbers no 64-bit type holds keep their
//! line; recorded fields of the wrong type are reported, never written.
//!
//! Every case is a copy of a real 2.1.328 transcript (mostly
//! `tests/fixtures/cc-2.1.328/long-session`: 6 requests, records at lines
//! 19, 27, 31, 37, 41, 45) with a few lines changed; what is still written
//! is compared with the bytes the CLI sent (`wire.jsonl`).

use crate::common::captured;
use ctxasm::assemble::Assembler;
use ctxasm::assemble::records::RecordOptions;
use ctxasm::corpus::RunOptions;
use ctxasm::input::discover::discover;
use ctxasm::write::{AssembleOptions, AssembleSummary, Turns, write_batch};
use std::path::{Path, PathBuf};

/// A captured 2.1.328 scenario: its folder, session id, transcript lines
/// and captured requests.
struct Scenario {
    dir: &'static str,
    project: &'static str,
    sid: &'static str,
    lines: usize,
    requests: usize,
}

const LONG: Scenario = Scenario {
    dir: "tests/fixtures/cc-2.1.328/long-session",
    project: "-home-dev-projects-long-session",
    sid: "bb3794f2-f0ef-4056-944f-7c6515c703d6",
    lines: 48,
    requests: 6,
};

/// Records at lines 17, 24 (base: 17), 33 and 41 (no base: resumed).
const RESUME: Scenario = Scenario {
    dir: "tests/fixtures/cc-2.1.328/resume-multi-prompt",
    project: "-home-dev-projects-resume-multi-prompt",
    sid: "54d2a754-5127-496c-a8db-abc858d64ff3",
    lines: 44,
    requests: 4,
};

const SID: &str = LONG.sid;

/// The request ids of long-session's records 1 to 5 (lines 27 to 45).
const R1: &str = "09161668-1df1-4eaa-aaba-f24ab652bda4";
const R2: &str = "f660c86c-3831-4aa4-b6ec-6d780f730e06";
const R3: &str = "54cbc0e9-c9e8-415f-aaaa-e372b7007bd0";
const R4: &str = "f02d41e5-5304-4e5c-bbed-45782a5f45fc";
const R5: &str = "a3183ac1-10bb-4190-9be5-3cee9e980220";

/// A copy of long-session's transcript in a temp dir with `edit` applied.
fn copy_with(edit: impl FnOnce(&mut Vec<String>)) -> tempfile::TempDir {
    copy_of(&LONG, edit)
}

/// A copy of the scenario's transcript in a temp dir with `edit` applied
/// to its lines (index 0 = line 1); the file keeps its name (the session id).
fn copy_of(sc: &Scenario, edit: impl FnOnce(&mut Vec<String>)) -> tempfile::TempDir {
    let path: PathBuf = Path::new(sc.dir).join(format!("transcripts/{}/{}.jsonl", sc.project, sc.sid));
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    assert_eq!(lines.len(), sc.lines);
    edit(&mut lines);
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join(format!("{}.jsonl", sc.sid)), lines.join("\n") + "\n").unwrap();
    tmp
}

/// Replace `from` (which must be there) by `to` in line `n` (1-based).
fn replace(lines: &mut [String], n: usize, from: &str, to: &str) {
    assert!(lines[n - 1].contains(from), "line {n} has no {from}");
    lines[n - 1] = lines[n - 1].replacen(from, to, 1);
}

/// The written bodies, with their custom ids.
type Bodies = Vec<(String, Vec<u8>)>;

/// Assemble a copy of long-session.
fn assemble(tmp: &Path) -> (AssembleSummary, Vec<String>, Bodies) {
    assemble_as(&LONG, tmp)
}

/// Assemble the copy: the summary, its diagnostics as text (paths without
/// the temp dir), and the written bodies.
fn assemble_as(sc: &Scenario, tmp: &Path) -> (AssembleSummary, Vec<String>, Bodies) {
    let (device, _) = captured(Path::new(sc.dir));
    let opts = AssembleOptions {
        assembler: Assembler {
            records: RecordOptions { device_id: device, ..RecordOptions::default() },
            ..Assembler::default()
        },
        turns: Turns::All,
    };
    let disc = discover(&[tmp.to_path_buf()]);
    let mut out = Vec::new();
    let s = write_batch(&disc, &RunOptions::default(), &opts, &mut out).unwrap();
    let prefix = format!("{}/", tmp.display());
    let diags = s.diagnostics.iter().map(|d| d.to_string().replace(&prefix, "")).collect();
    let mut bodies = Vec::new();
    for line in out.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let v: serde_json::Value = serde_json::from_slice(line).unwrap();
        let id = v["custom_id"].as_str().unwrap().to_string();
        let head = format!("{{\"custom_id\":\"{id}\",\"params\":");
        bodies.push((id, line[head.len()..line.len() - 1].to_vec()));
    }
    (s, diags, bodies)
}

/// The written bodies are long-session's captured requests `want`.
fn assert_written(bodies: &[(String, Vec<u8>)], want: &[usize]) {
    assert_written_as(&LONG, bodies, want)
}

/// The written bodies are the captured ones of requests `want`, byte for
/// byte, under their custom ids.
fn assert_written_as(sc: &Scenario, bodies: &[(String, Vec<u8>)], want: &[usize]) {
    let (_, raws) = captured(Path::new(sc.dir));
    assert_eq!(raws.len(), sc.requests);
    let ids: Vec<&str> = bodies.iter().map(|(id, _)| id.as_str()).collect();
    let want_ids: Vec<String> = want.iter().map(|n| format!("{}_{n}", sc.sid)).collect();
    assert_eq!(ids, want_ids);
    for ((id, body), n) in bodies.iter().zip(want) {
        assert!(body == &raws[*n], "{id}: {}", crate::common::first_diff(body, &raws[*n]));
    }
}

fn cli(dir: &Path, strict: bool) -> (Option<i32>, String) {
    let out = dir.join("out.jsonl");
    let mut args = vec!["assemble", "--mode", "records", dir.to_str().unwrap(), "-o", out.to_str().unwrap()];
    if strict {
        args.push("--strict");
    }
    let o = crate::common::ctxasm(&args);
    (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn one_bad_line_loses_the_requests_that_keep_its_message_and_each_says_why() {
    // Line 21 is the first line of the assistant message request 1
    // appends (tail[0], message 2); every later request keeps that message.
    let tmp = copy_with(|l| l[20] = "{\"broken".into());
    let (s, diags, bodies) = assemble(tmp.path());
    assert_eq!((s.recorded_requests, s.requests_written), (6, 1));
    assert_written(&bodies, &[0]);
    let f = format!("{SID}.jsonl");
    let lost = format!(
        "was lost at line 27: tail[0] of api-request {R1} (hash 7ac4973e460f…) matches no message; before it, \
         line 21 (invalid_json) could not be read"
    );
    let kept = |n: usize, line: u32, id: &str, base: &str, base_line: u32| {
        format!(
            "{f}:{line}: not_rebuilt: api-request {id} (request {n} of its chain) not rebuilt: its message 2, kept \
             from api-request {base} (line {base_line}), {lost}"
        )
    };
    assert_eq!(
        diags,
        [
            format!("{f}:21: invalid_json: invalid JSON: Syntax at character 0"),
            format!("{f}:22: missing_parent: parentUuid d7a9c399-c88c-4406-b332-0df18844879e is not in the session"),
            format!(
                "{f}:27: record_mismatch: api-request {R1} (request 1 of its chain): tail[0] = message 2 of the \
                 request, hash 7ac4973e460f634bca60882bb2625d7d539286778a25c1c6203a025ffc7c96bc, matches no blob and \
                 no message rebuilt from the transcript; before it, line 21 (invalid_json) could not be read"
            ),
            kept(2, 31, R2, R1, 27),
            kept(3, 37, R3, R2, 31),
            kept(4, 41, R4, R3, 37),
            kept(5, 45, R5, R4, 41),
        ]
    );
    // Not silent: what was proven is written, --strict fails.
    assert_eq!(cli(tmp.path(), false).0, Some(0));
    assert_eq!(cli(tmp.path(), true).0, Some(1));
}

#[test]
fn a_lost_record_line_names_itself_in_every_request_it_takes_along() {
    // Line 27 is request 1's own record: request 2 extends it.
    let tmp = copy_with(|l| l[26] = "{\"type\":\"api-request\",".into());
    let (s, diags, bodies) = assemble(tmp.path());
    // The unreadable record still counts: the later requests keep their index.
    assert_eq!((s.recorded_requests, s.requests_written), (6, 1));
    assert_written(&bodies, &[0]);
    let f = format!("{SID}.jsonl");
    let cause = format!(
        "api-request {R2}: its base, api-request {R1}, is in no earlier record of this file; before it, line 27 \
         (invalid_json) could not be read"
    );
    let extends = |n: usize, line: u32, id: &str, base: &str, base_line: u32| {
        format!(
            "{f}:{line}: not_rebuilt: api-request {id} (request {n} of its chain) not rebuilt: it extends \
             api-request {base} (line {base_line}), which was not rebuilt: line 31: {cause}"
        )
    };
    assert_eq!(
        diags,
        [
            format!("{f}:27: invalid_json: invalid JSON: Syntax at character 21 (',')"),
            format!(
                "{f}:27: not_rebuilt: this line begins as an api-request record (request 1 of its chain) but cannot \
                 be read: not rebuilt"
            ),
            format!("{f}:31: record_mismatch: {cause}"),
            extends(3, 37, R3, R2, 31),
            extends(4, 41, R4, R3, 37),
            extends(5, 45, R5, R4, 41),
        ]
    );
}

#[test]
fn an_unreadable_record_keeps_the_index_of_every_later_request() {
    // resume-multi-prompt's record 1 (line 24) cut after 300 bytes: records
    // 2 and 3 have no base and are rebuilt, under their own indexes (they
    // were written as _1 and _2, the custom ids of other requests).
    let tmp = copy_of(&RESUME, |l| l[23].truncate(300));
    let (s, diags, bodies) = assemble_as(&RESUME, tmp.path());
    assert_eq!((s.recorded_requests, s.requests_written), (4, 3));
    assert_written_as(&RESUME, &bodies, &[0, 2, 3]);
    let f = format!("{}.jsonl", RESUME.sid);
    assert_eq!(
        diags,
        [
            format!("{f}:24: invalid_json: invalid JSON: Syntax at character 0"),
            format!(
                "{f}:24: not_rebuilt: this line begins as an api-request record (request 1 of its chain) but cannot \
                 be read: not rebuilt"
            ),
        ]
    );
}

#[test]
fn nothing_rebuilt_of_what_was_recorded_is_a_problem_not_nothing_found() {
    // Line 19, the first record, cut after 300 bytes: every later record
    // extends it.
    let tmp = copy_with(|l| l[18].truncate(300));
    let (s, diags, bodies) = assemble(tmp.path());
    assert_eq!((s.recorded_requests, s.requests_written, diags.len()), (6, 0, 7));
    assert!(bodies.is_empty());
    for strict in [false, true] {
        let (code, err) = cli(tmp.path(), strict);
        assert_eq!(code, Some(1), "{err}");
        assert!(err.contains("ctxasm: 6 requests recorded, none written: the diagnostics above say why"), "{err}");
        assert!(!err.contains("no assistant message came from the API"), "{err}");
    }
}

#[test]
fn numbers_no_64_bit_type_holds_keep_their_line() {
    // Line 22 holds the tool call request 1 appends; an out-of-range token
    // count used to make it invalid JSON and lose requests 1 to 5.
    let tmp = copy_with(|l| {
        replace(l, 22, "\"input_tokens\":12473", "\"input_tokens\":123456789012345678901234567890");
        replace(l, 48, "\"totalCostUSD\":0.305664", "\"totalCostUSD\":1e400");
    });
    let (s, diags, bodies) = assemble(tmp.path());
    assert_eq!((s.recorded_requests, s.requests_written), (6, 6));
    assert_written(&bodies, &[0, 1, 2, 3, 4, 5]);
    let f = format!("{SID}.jsonl");
    assert_eq!(
        diags,
        [
            format!(
                "{f}:22: number_out_of_range: field message.usage.input_tokens: integer \
                 123456789012345678901234567890 does not fit in 64 bits; read as the double 1.2345678901234568e+29 \
                 (rounded, as JavaScript reads it); a field that needs an integer treats it as absent"
            ),
            format!(
                "{f}:48: number_out_of_range: field totalCostUSD: number 1e400 is beyond the range of a double; read \
                 as null (absent), as JavaScript writes it back"
            ),
        ]
    );
    assert_eq!(cli(tmp.path(), false).0, Some(0));
    assert_eq!(cli(tmp.path(), true).0, Some(1));
}

#[test]
fn a_record_with_fields_of_the_wrong_type_is_reported_not_written() {
    let tmp = copy_with(|l| {
        replace(l, 27, "\"model\":\"claude-opus-5-5\"", "\"model\":5");
        replace(l, 31, "\"params\":{", "\"params\":null,\"was\":{");
        replace(l, 37, "\"max_tokens\":128000", "\"max_tokens\":1e400");
    });
    let (s, diags, bodies) = assemble(tmp.path());
    // Their messages are still proven: the requests after them are rebuilt.
    assert_eq!((s.recorded_requests, s.requests_written), (6, 3));
    assert_written(&bodies, &[0, 4, 5]);
    let f = format!("{SID}.jsonl");
    assert_eq!(
        diags,
        [
            format!(
                "{f}:27: invalid_record: api-request {R1}: params.model is a number (5), not a string; not rebuilt"
            ),
            format!("{f}:31: invalid_record: api-request {R2}: params is null, not an object; not rebuilt"),
            format!(
                "{f}:37: number_out_of_range: field params.max_tokens: number 1e400 is beyond the range of a double; \
                 read as null (absent), as JavaScript writes it back"
            ),
            format!(
                "{f}:37: invalid_record: api-request {R3}: params.max_tokens is null, not a positive integer; not \
                 rebuilt"
            ),
        ]
    );
    // A broken `keep` hides the messages: the requests that extend it are
    // lost with it, and say so.
    let tmp = copy_with(|l| replace(l, 37, "\"keep\":6", "\"keep\":\"6\""));
    let (s, diags, bodies) = assemble(tmp.path());
    assert_eq!((s.recorded_requests, s.requests_written), (6, 3));
    assert_written(&bodies, &[0, 1, 2]);
    let cause = format!("line 37: api-request {R3}: keep is a string (\"6\"), not a non-negative integer");
    assert_eq!(
        diags,
        [
            format!(
                "{f}:37: invalid_record: api-request {R3}: keep is a string (\"6\"), not a non-negative integer; its \
                 messages are not known"
            ),
            format!(
                "{f}:41: not_rebuilt: api-request {R4} (request 4 of its chain) not rebuilt: it extends api-request \
                 {R3} (line 37), which was not rebuilt: {cause}"
            ),
            format!(
                "{f}:45: not_rebuilt: api-request {R5} (request 5 of its chain) not rebuilt: it extends api-request \
                 {R4} (line 41), which was not rebuilt: {cause}"
            ),
        ]
    );
}
