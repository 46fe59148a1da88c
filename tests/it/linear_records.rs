//! Record replay costs what a turn adds: a request keeps its base's message
//! nodes, so the dedup store of a long 2.1.3xx session (recipes included)
//! grows with the session, not with its square, and every request is the
//! one the records describe (checked against what the generator wrote, not
//! against ctxasm's own replay).

use crate::common::first_diff;
use crate::long_records::long_records_session;
use ctxasm::corpus::RunOptions;
use ctxasm::input::discover::discover;
use ctxasm::write::{AssembleOptions, AssembleSummary, expand, write_batch, write_dedup};
use serde_json::{Value, json};
use std::path::Path;

/// Records mode, every turn (the defaults).
fn records() -> AssembleOptions {
    AssembleOptions::default()
}

/// The store's summary, bytes (recipes, segments) and recipes.
fn store_of(dir: &Path) -> (AssembleSummary, u64, u64, Vec<Value>) {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let d = write_dedup(&discover(&[dir.to_path_buf()]), &RunOptions::default(), &records(), &store).unwrap();
    let text = std::fs::read_to_string(store.join("recipes.jsonl")).unwrap();
    let segments = std::fs::metadata(store.join("segments.bin")).unwrap().len();
    (d, text.len() as u64, segments, text.lines().map(|l| serde_json::from_str(l).unwrap()).collect())
}

#[test]
fn each_records_recipe_lists_only_what_its_turn_adds() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    long_records_session(&dir, 50);
    let (d, _, _, recipes) = store_of(&dir);
    assert_eq!((d.recorded_requests, d.requests_written), (50, 50));
    assert!(d.diagnostics.is_empty(), "{:?}", d.diagnostics);
    // The first request: the capture's two messages. Each later one keeps
    // all of the last request's messages but its last (it carried the
    // breakpoint) and adds that message, the reply and the tool result.
    assert!(recipes[0].get("keep").is_none());
    assert_eq!(recipes[0]["messages"].as_array().unwrap().len(), 2);
    for (i, r) in recipes.iter().enumerate().skip(1) {
        assert_eq!((r["keep"].as_u64(), r["messages"].as_array().unwrap().len()), (Some(2 * i as u64 - 1), 3), "{i}");
    }

    // The store expands to the batch format byte for byte.
    let disc = discover(std::slice::from_ref(&dir));
    let mut batch = Vec::new();
    let b = write_batch(&disc, &RunOptions::default(), &records(), &mut batch).unwrap();
    assert_eq!((d.requests_written, d.batch_bytes), (b.requests_written, batch.len() as u64));
    let store = tmp.path().join("store");
    write_dedup(&disc, &RunOptions::default(), &records(), &store).unwrap();
    let mut expanded = Vec::new();
    assert_eq!(expand(&store, &mut expanded).unwrap(), 50);
    assert!(expanded == batch, "expand differs: {}", first_diff(&expanded, &batch));

    // Each request is what its record says: the last request's messages up
    // to its own, the breakpoint on its last message only, and the turns'
    // messages as the generator wrote them.
    let bodies: Vec<Value> = batch
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice::<Value>(l).unwrap()["params"].clone())
        .collect();
    // A message without its breakpoint, as the wire sends it then: a user
    // or system message of one plain text block as a string.
    let unmarked = |m: &Value| {
        let mut m = m.clone();
        let plain = m["role"] == "user" || m["role"] == "system";
        if let Some(Value::Array(blocks)) = m.get_mut("content") {
            for b in blocks.iter_mut() {
                b.as_object_mut().unwrap().remove("cache_control");
            }
            if let [b] = &blocks[..]
                && plain
                && b.as_object().unwrap().len() == 2
                && b["type"] == "text"
            {
                let text = b["text"].clone();
                m["content"] = text;
            }
        }
        m
    };
    let last = bodies[49]["messages"].as_array().unwrap();
    assert_eq!(last.len(), 100);
    for (i, body) in bodies.iter().enumerate() {
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 2 * i + 2, "{i}");
        for (j, m) in messages.iter().enumerate() {
            let marked = m["content"].as_array().is_some_and(|c| c.iter().any(|b| b.get("cache_control").is_some()));
            assert_eq!(marked, j == 2 * i + 1, "request {i}, message {j}");
            assert_eq!(unmarked(m), unmarked(&last[j]), "request {i}, message {j}");
        }
    }
    for k in 0..49 {
        let tool_id = format!("toolu_gen{k:016}");
        assert_eq!(
            last[2 + 2 * k],
            json!({"role": "assistant", "content": [{"type": "text", "text": format!("Step {k}.")},
                {"type": "tool_use", "id": tool_id, "name": "Bash",
                 "input": {"command": format!("echo step {}; head -{} data.csv | tail -3", k + 1, 10 * (k + 1)),
                           "description": format!("Step {k}")}}]})
        );
        assert_eq!(last[3 + 2 * k]["content"][0]["tool_use_id"], json!(tool_id));
    }
}

#[test]
fn the_records_store_of_twice_the_turns_is_twice_the_size() {
    let tmp = tempfile::tempdir().unwrap();
    let sizes: Vec<(u64, u64)> = [200, 400, 800]
        .iter()
        .map(|&n| {
            let dir = tmp.path().join(format!("t{n}"));
            long_records_session(&dir, n);
            let (d, recipes, segments, _) = store_of(&dir);
            assert_eq!(d.requests_written, n as u64);
            assert!(d.diagnostics.is_empty(), "{n} turns: {:?}", d.diagnostics);
            (recipes, recipes + segments)
        })
        .collect();
    // Per request: a head and tail of a few hundred bytes, four ids and
    // its three messages' segments; the first request's system prompt and
    // tools are stored once.
    let [(r200, s200), (r400, s400), (r800, s800)] = sizes[..] else { unreachable!() };
    assert!(r800 * 10 <= r400 * 21 && r800 * 10 >= r400 * 19, "recipes {r200} → {r400} → {r800} bytes");
    let (grow1, grow2) = (s400 - s200, s800 - s400);
    assert!(grow2 * 10 <= grow1 * 21 && grow2 * 10 >= grow1 * 19, "store {s200} → {s400} → {s800} bytes");
}

#[test]
fn the_bench_generates_the_same_records_session() {
    // scripts/bench-compare's long-records rows time the sessions these
    // tests check: its generator writes the same bytes.
    let tmp = tempfile::tempdir().unwrap();
    let ours = long_records_session(&tmp.path().join("rust"), 30);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/bench-compare");
    let code = "import sys, importlib.machinery as m, importlib.util as u\n\
                from pathlib import Path\n\
                l = m.SourceFileLoader('bc', sys.argv[1]); s = u.spec_from_loader('bc', l)\n\
                bc = u.module_from_spec(s); l.exec_module(bc)\n\
                print(bc.long_records_session(Path(sys.argv[2]), 30))";
    let out = std::process::Command::new("python3")
        .args(["-c", code])
        .arg(&script)
        .arg(tmp.path().join("py"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let theirs = String::from_utf8(out.stdout).unwrap();
    let (a, b) = (std::fs::read(&ours).unwrap(), std::fs::read(theirs.trim()).unwrap());
    assert!(a == b, "the generators differ: {}", first_diff(&a, &b));
}
