//! A dedup store's files fuzzed: the input is `manifest.json`,
//! `segments.bin` and `recipes.jsonl` joined by `\n\x1c\x1c\n` (a file left
//! out when the input has fewer parts). `expand` must never panic: either
//! an error that names the store, or the batch format with one request per
//! non-blank recipe line, as many as the manifest says; a second run gives
//! the same bytes, and a writer that fails half-way gives an error. Seeds:
//! `fuzz/seeds.sh` (stores written by `ctxasm assemble --format dedup`).
#![no_main]

use ctxasm::write::expand;
use libfuzzer_sys::fuzz_target;
use std::io::{self, Write};

/// Joins the store's files in an input.
const SEP: &[u8] = b"\n\x1c\x1c\n";
const FILES: [&str; 3] = ["manifest.json", "segments.bin", "recipes.jsonl"];

/// A writer that fails once it has taken `left` bytes.
struct Failing {
    left: usize,
}

impl Write for Failing {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.left == 0 {
            return Err(io::Error::other("disk full"));
        }
        let n = buf.len().min(self.left);
        self.left -= n;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn split(data: &[u8]) -> Vec<&[u8]> {
    let mut parts = Vec::new();
    let mut rest = data;
    while parts.len() < 2 {
        let Some(at) = rest.windows(SEP.len()).position(|w| w == SEP) else { break };
        parts.push(&rest[..at]);
        rest = &rest[at + SEP.len()..];
    }
    parts.push(rest);
    parts
}

fuzz_target!(|data: &[u8]| {
    let Ok(tmp) = tempfile::tempdir() else { return };
    let dir = tmp.path().join("store");
    if std::fs::create_dir(&dir).is_err() {
        return;
    }
    let parts = split(data);
    for (name, bytes) in FILES.iter().zip(&parts) {
        if std::fs::write(dir.join(name), bytes).is_err() {
            return;
        }
    }
    let mut out = Vec::new();
    match expand(&dir, &mut out) {
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.contains(&*dir.to_string_lossy()), "the error names no file of the store: {msg}");
        }
        Ok(n) => {
            assert_eq!(parts.len(), 3, "a store without all its files expanded");
            let recipes = std::str::from_utf8(parts[2]).expect("recipes.jsonl was read as text");
            let lines = recipes.lines().filter(|l| !l.trim().is_empty()).count() as u64;
            assert_eq!(n, lines, "requests written vs non-blank recipe lines");
            let manifest: serde_json::Value = serde_json::from_slice(parts[0]).expect("the manifest was read as JSON");
            if let Some(want) = manifest["requests"].as_u64() {
                assert_eq!(n, want, "requests written vs the manifest's count");
            }
            assert_eq!(n == 0, out.is_empty());
            if n > 0 {
                assert!(out.starts_with(b"{\"custom_id\":\"") && out.ends_with(b"}\n"));
            }
            let mut again = Vec::new();
            assert_eq!(expand(&dir, &mut again).ok(), Some(n));
            assert!(again == out, "a second expansion differs");
            if !out.is_empty() {
                let mut w = Failing { left: out.len() / 2 };
                assert!(expand(&dir, &mut w).is_err(), "a failing writer gave no error");
            }
        }
    }
});
