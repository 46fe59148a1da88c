//! A session costs what it adds: each turn's request shares the last one's
//! messages, so the dedup store (recipes included) grows with the session,
//! not with its square, and expands back to the batch format byte for byte.

use crate::common::first_diff;
use ctxasm::assemble::pipeline::{Overrides, Setup};
use ctxasm::assemble::{Assembler, Mode};
use ctxasm::corpus::RunOptions;
use ctxasm::input::discover::discover;
use ctxasm::write::{
    AssembleOptions, Spill, Turns, expand, write_batch, write_batch_spilling, write_dedup, write_dedup_store_sending,
};
use serde_json::{Value, json};
use std::path::Path;

fn pipeline(turns: Turns) -> AssembleOptions {
    let profile = ctxasm::profile::Profile::load("cc-2.1.328").unwrap();
    AssembleOptions {
        assembler: Assembler {
            mode: Mode::Pipeline,
            pipeline: Some(Setup { profile, env: None, overrides: Overrides::default() }),
            ..Assembler::default()
        },
        turns,
    }
}

/// A session of `n` user/assistant text turns (a valid `parentUuid`
/// chain), in `dir`.
fn long_session(dir: &Path, n: usize) {
    let sid = "5f0c7a8e-1d2b-4c3a-9e8f-0a1b2c3d4e5f";
    let mut out = String::new();
    let mut parent = Value::Null;
    for i in 0..n {
        let (u, a) = (format!("u-{i:08}"), format!("a-{i:08}"));
        let common = |uuid: &str, parent: &Value, t: usize| {
            json!({"parentUuid": parent, "isSidechain": false, "userType": "external", "cwd": "/home/dev/p",
                   "sessionId": sid, "version": "2.1.328", "gitBranch": "main", "uuid": uuid,
                   "timestamp": format!("2026-01-01T00:{:02}:{:02}.000Z", (t / 60) % 60, t % 60)})
        };
        let mut user = common(&u, &parent, 2 * i);
        user["type"] = json!("user");
        user["message"] = json!({"role": "user", "content": format!("Question {i}: explain item {i} in a few words.")});
        let mut asst = common(&a, &json!(u), 2 * i + 1);
        asst["type"] = json!("assistant");
        asst["requestId"] = json!(format!("req_{i}"));
        asst["message"] = json!({"model": "claude-sonnet-4-5", "id": format!("msg_{i:024}"), "type": "message",
            "role": "assistant", "content": [{"type": "text", "text": format!("Item {i} is a thing that does something useful.")}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 10, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 1000, "output_tokens": 30}});
        out.push_str(&format!("{user}\n{asst}\n"));
        parent = json!(a);
    }
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(format!("{sid}.jsonl")), out).unwrap();
}

/// The dedup store of a session of `turns` turns (in the returned
/// directory, kept while it lives), every turn's request.
fn store_of(turns: usize) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    long_session(&tmp.path().join("s"), turns);
    let disc = discover(&[tmp.path().join("s")]);
    let store = tmp.path().join("store");
    write_dedup(&disc, &RunOptions::default(), &pipeline(Turns::All), &store).unwrap();
    (tmp, store)
}

/// The store's recipe bytes, after checking it expands to the batch format.
fn recipes_of(dir: &Path, opts: &AssembleOptions) -> (u64, Vec<Value>) {
    let disc = discover(&[dir.to_path_buf()]);
    let mut batch = Vec::new();
    let b = write_batch(&disc, &RunOptions::default(), opts, &mut batch).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let d = write_dedup(&disc, &RunOptions::default(), opts, &store).unwrap();
    assert_eq!((d.requests_written, d.batch_bytes), (b.requests_written, batch.len() as u64));
    let mut expanded = Vec::new();
    assert_eq!(expand(&store, &mut expanded).unwrap(), b.requests_written);
    assert!(expanded == batch, "expand differs: {}", first_diff(&expanded, &batch));
    let text = std::fs::read_to_string(store.join("recipes.jsonl")).unwrap();
    (text.len() as u64, text.lines().map(|l| serde_json::from_str(l).unwrap()).collect())
}

#[test]
fn each_recipe_lists_only_what_its_turn_adds() {
    let tmp = tempfile::tempdir().unwrap();
    long_session(&tmp.path().join("s"), 50);
    let (_, recipes) = recipes_of(&tmp.path().join("s"), &pipeline(Turns::All));
    assert_eq!(recipes.len(), 50);
    // The first request has one message; every later one keeps all but the
    // last request's last message (it carried the breakpoint) and adds
    // that message, the reply and the new question.
    assert!(recipes[0].get("keep").is_none());
    assert_eq!(recipes[0]["messages"].as_array().unwrap().len(), 1);
    for (i, r) in recipes.iter().enumerate().skip(1) {
        let keep = Some(2 * i as u64 - 2).filter(|&k| k > 0);
        assert_eq!((r["keep"].as_u64(), r["messages"].as_array().unwrap().len()), (keep, 3), "{i}");
    }
    // One request selected per chain: nothing to keep from.
    let (_, last) = recipes_of(&tmp.path().join("s"), &pipeline(Turns::Last));
    assert_eq!((last.len(), last[0].get("keep"), last[0]["messages"].as_array().unwrap().len()), (1, None, 99));
}

#[test]
fn the_store_of_twice_the_turns_is_twice_the_size() {
    let tmp = tempfile::tempdir().unwrap();
    long_session(&tmp.path().join("a"), 400);
    long_session(&tmp.path().join("b"), 800);
    let (a, _) = recipes_of(&tmp.path().join("a"), &pipeline(Turns::All));
    let (b, _) = recipes_of(&tmp.path().join("b"), &pipeline(Turns::All));
    // Per request: the head, the tail's id and three ids.
    assert!(b <= a * 21 / 10 && b >= a * 19 / 10, "{a} → {b} bytes of recipes");
}

#[test]
fn the_sample_pipeline_store_keeps_and_expands_byte_for_byte() {
    let opts = pipeline(Turns::All);
    let (_, recipes) = recipes_of(Path::new("corpora/sample"), &opts);
    let keeping = recipes.iter().filter(|r| r.get("keep").is_some()).count();
    assert_eq!((recipes.len(), keeping), (228, 173));
}

/// Version 3 stores a session's tail (the params after the tools) once, as
/// a segment each recipe names (`tail_id`); a store as version 2 wrote it
/// (the tail's text in each recipe) still expands to the same bytes; a
/// recipe with neither or both is refused, naming its line.
#[test]
fn a_recipe_names_its_tail_segment_and_older_stores_still_expand() {
    let (_tmp, store) = store_of(20);
    let mut want = Vec::new();
    assert_eq!(expand(&store, &mut want).unwrap(), 20);
    let recipes = store.join("recipes.jsonl");
    let text = std::fs::read_to_string(&recipes).unwrap();
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let tails: std::collections::HashSet<&str> = lines.iter().map(|r| r["tail_id"].as_str().unwrap()).collect();
    assert_eq!((lines.len(), tails.len()), (20, 1));
    assert!(lines.iter().all(|r| r.get("tail").is_none()));
    // The tail's bytes, from segments.bin.
    let data = std::fs::read(store.join("segments.bin")).unwrap();
    let (mut pos, mut tail) = (0, None);
    while pos < data.len() {
        let id = format!("{:032x}", u128::from_be_bytes(data[pos..pos + 16].try_into().unwrap()));
        let len = u32::from_le_bytes(data[pos + 16..pos + 20].try_into().unwrap()) as usize;
        if tails.contains(id.as_str()) {
            tail = Some(String::from_utf8(data[pos + 20..pos + 20 + len].to_vec()).unwrap());
        }
        pos += 20 + len;
    }
    let tail = tail.unwrap();
    assert!(tail.starts_with(",\"metadata\":") && tail.contains("\"stream\":true"), "{tail}");
    // As version 2 wrote it.
    let v2: String = lines
        .iter()
        .map(|r| {
            let mut r = r.clone();
            let o = r.as_object_mut().unwrap();
            o.remove("tail_id");
            o.insert("tail".into(), json!(tail));
            format!("{r}\n")
        })
        .collect();
    std::fs::write(&recipes, &v2).unwrap();
    let manifest = store.join("manifest.json");
    let m = std::fs::read_to_string(&manifest).unwrap();
    assert!(m.contains("\"version\": 3"), "{m}");
    std::fs::write(&manifest, m.replace("\"version\": 3", "\"version\": 2")).unwrap();
    let mut got = Vec::new();
    expand(&store, &mut got).unwrap();
    assert!(got == want, "{:?}", first_diff(&got, &want));
    // Both, then neither.
    let both = text.replacen("\"tail_id\":", &format!("\"tail\":{},\"tail_id\":", json!(tail)), 1);
    std::fs::write(&recipes, both).unwrap();
    let e = expand(&store, &mut Vec::new()).unwrap_err().to_string();
    assert_eq!(e, format!("{}:1: a recipe has either a tail or a tail_id", recipes.display()));
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let mut none = first.clone();
    none.as_object_mut().unwrap().remove("tail_id");
    std::fs::write(&recipes, text.replacen(&first.to_string(), &none.to_string(), 1)).unwrap();
    let e = expand(&store, &mut Vec::new()).unwrap_err().to_string();
    assert_eq!(e, format!("{}:1: a recipe has either a tail or a tail_id", recipes.display()));
}

#[test]
fn a_keep_past_the_previous_recipe_or_an_unknown_version_is_refused() {
    let (_tmp, store) = store_of(3);
    let recipes = store.join("recipes.jsonl");
    let text = std::fs::read_to_string(&recipes).unwrap();
    std::fs::write(&recipes, text.replacen("\"keep\":2,", "\"keep\":7,", 1)).unwrap();
    let e = expand(&store, &mut Vec::new()).unwrap_err().to_string();
    assert_eq!(e, format!("{}:3: keeps 7 messages of the previous recipe, which has 3", recipes.display()));
    std::fs::write(&recipes, text).unwrap();
    let manifest = store.join("manifest.json");
    let m = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, m.replace("\"version\": 3", "\"version\": 4")).unwrap();
    let e = expand(&store, &mut Vec::new()).unwrap_err().to_string();
    assert!(e.contains("dedup store version 4; this ctxasm reads versions 1 to 3"), "{e}");
}

/// A session's batch output past `Spill::at` bytes waits for the writer in
/// a file: the same bytes and summary as from memory, sessions in order,
/// whichever of them spill (two threads; a long session and the sample
/// corpus's); a spill that cannot be made stops the run naming where.
#[test]
fn batch_output_past_the_spill_size_is_written_the_same_from_a_file() {
    let tmp = tempfile::tempdir().unwrap();
    long_session(&tmp.path().join("long"), 60);
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpora/sample");
    let disc = discover(&[tmp.path().join("long"), sample]);
    let run = RunOptions::with_threads(Some(2));
    let opts = pipeline(Turns::All);
    let batch = |(at, send_at): (usize, usize), dir: &Path| {
        let mut out = Vec::new();
        let spill = Spill { dir: dir.to_path_buf(), at, send_at };
        write_batch_spilling(&disc, &run, &opts, &mut out, &spill).map(|s| (out, s))
    };
    let never = (usize::MAX, usize::MAX);
    let (whole, s) = batch(never, tmp.path()).unwrap();
    assert!(s.requests_written > 100 && s.sessions > 2, "{} requests, {} sessions", s.requests_written, s.sessions);
    assert_eq!((s.batch_bytes, s.bytes_written), (whole.len() as u64, whole.len() as u64));
    // To a file, to the writer early, both (sent early until a file is
    // needed, then to the file).
    for sizes in
        [(1, usize::MAX), (4096, usize::MAX), (1 << 20, usize::MAX), (usize::MAX, 1), (usize::MAX, 4096), (4096, 1)]
    {
        let (out, t) = batch(sizes, tmp.path()).unwrap();
        assert!(out == whole, "spill / send past {sizes:?} bytes: {}", first_diff(&out, &whole));
        assert_eq!(
            (t.requests_written, t.batch_bytes, t.bytes_written, t.sessions),
            (s.requests_written, s.batch_bytes, s.bytes_written, s.sessions)
        );
    }
    // Nowhere to spill: an error that says where, never a shorter output.
    let missing = tmp.path().join("no-such-dir");
    let err = batch((4096, usize::MAX), &missing).unwrap_err();
    assert!(err.to_string().contains("cannot hold a session's batch output in a temporary file in"), "{err}");
    assert!(err.to_string().contains(&missing.display().to_string()), "{err}");
    // Under the size nothing goes to a file.
    assert!(batch(never, &missing).unwrap().0 == whole);
    assert!(batch((usize::MAX, 1), &missing).unwrap().0 == whole);
    // A session written alone is always the writer's next: it streams,
    // nothing goes to a file (here there is none to go to).
    let alone = discover(&[tmp.path().join("long")]);
    let (mut by_memory, mut streamed) = (Vec::new(), Vec::new());
    write_batch(&alone, &run, &opts, &mut by_memory).unwrap();
    // (Its 60 lines are 4 times the spill size, each line under a third
    // of it: held whole, they would need the file.)
    let at = 64 << 10;
    assert!(by_memory.len() > 4 * at && by_memory.split(|&b| b == b'\n').all(|l| l.len() < at / 3));
    let spill = Spill { dir: missing.clone(), at, send_at: 1 };
    let t = write_batch_spilling(&alone, &run, &opts, &mut streamed, &spill).unwrap();
    assert_eq!(t.requests_written, 60);
    assert!(streamed == by_memory, "{}", first_diff(&streamed, &by_memory));
    let held = Spill { dir: missing.clone(), at, send_at: usize::MAX };
    assert!(write_batch_spilling(&alone, &run, &opts, &mut Vec::new(), &held).is_err());
}

/// A writer that takes `left` bytes, then fails.
struct FailAfter {
    left: usize,
}

impl std::io::Write for FailAfter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            return Err(std::io::Error::other("disk full"));
        }
        let n = buf.len().min(self.left);
        self.left -= n;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A write that fails while a session streams to the writer stops the run
/// with that error (no hang, no success), whichever part it fails in.
#[test]
fn a_failed_write_while_a_session_streams_stops_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    long_session(&tmp.path().join("long"), 60);
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpora/sample");
    let disc = discover(&[tmp.path().join("long"), sample]);
    let run = RunOptions::with_threads(Some(2));
    let spill = Spill { dir: tmp.path().to_path_buf(), at: 1 << 20, send_at: 1 };
    for left in [0, 1, 5_000, 100_000] {
        let err =
            write_batch_spilling(&disc, &run, &pipeline(Turns::All), &mut FailAfter { left }, &spill).unwrap_err();
        assert_eq!(err.to_string(), "disk full", "after {left} bytes");
    }
}

/// The session the dedup writer takes next hands its new segments and
/// recipes over as it goes: the same store, file for file, whatever the
/// size they are handed over at (two threads; a long session and the
/// sample corpus's).
#[test]
fn a_dedup_store_is_the_same_whether_sessions_hand_their_output_over_early() {
    let tmp = tempfile::tempdir().unwrap();
    long_session(&tmp.path().join("long"), 60);
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpora/sample");
    let disc = discover(&[tmp.path().join("long"), sample]);
    let run = RunOptions::with_threads(Some(2));
    let files = |send_at: usize| {
        let store = tmp.path().join(format!("store-{send_at}"));
        let s = write_dedup_store_sending(&disc, &run, &pipeline(Turns::All), &store, false, send_at).unwrap();
        let read = |f: &str| std::fs::read(store.join(f)).unwrap();
        (s.requests_written, s.segments, read("segments.bin"), read("recipes.jsonl"), read("manifest.json"))
    };
    let whole = files(usize::MAX);
    assert!(whole.0 > 100, "{} requests", whole.0);
    for send_at in [1, 300, 4096] {
        let early = files(send_at);
        assert_eq!((early.0, early.1), (whole.0, whole.1), "send_at {send_at}");
        assert!(early.2 == whole.2, "segments differ at send_at {send_at}: {}", first_diff(&early.2, &whole.2));
        assert!(early.3 == whole.3, "recipes differ at send_at {send_at}: {}", first_diff(&early.3, &whole.3));
        assert!(early.4 == whole.4, "manifest differs at send_at {send_at}");
    }
}
