//! Helpers the test modules share: the captured scenarios, their wire
//! bodies, a JSON Lines file's values, a readable first difference of two
//! byte strings, the binary.

use base64::Engine;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The 14 scenario folders of a captured release, sorted.
pub fn scenarios(root: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root).unwrap().map(|e| e.unwrap().path()).collect();
    v.sort();
    assert_eq!(v.len(), 14, "{root}");
    v
}

/// The values of a JSON Lines file, one per line.
pub fn jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The captured requests of a scenario: (device_id, raw bodies in order).
pub fn captured(dir: &Path) -> (String, Vec<Vec<u8>>) {
    let mut device = String::new();
    let mut raws = Vec::new();
    for line in std::fs::read_to_string(dir.join("wire.jsonl")).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if v["body"].get("messages").is_none() {
            continue;
        }
        let uid: Value = serde_json::from_str(v["body"]["metadata"]["user_id"].as_str().unwrap()).unwrap();
        device = uid["device_id"].as_str().unwrap().to_string();
        raws.push(base64::engine::general_purpose::STANDARD.decode(v["raw_b64"].as_str().unwrap()).unwrap());
    }
    (device, raws)
}

/// Where two byte strings first differ, with 150 bytes of each around it.
pub fn first_diff(a: &[u8], b: &[u8]) -> String {
    let at = a.iter().zip(b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
    let s = at.saturating_sub(150);
    format!(
        "at byte {at} (len {} vs {}):\n ours {}\n wire {}",
        a.len(),
        b.len(),
        String::from_utf8_lossy(&a[s..(at + 150).min(a.len())]),
        String::from_utf8_lossy(&b[s..(at + 150).min(b.len())])
    )
}

/// The `ctxasm` binary, with a profile cache of its own (none): a
/// developer's `~/.cache/ctxasm/profiles` must not change what `--profile
/// auto` picks in a test.
pub fn bin() -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_ctxasm"));
    c.env("CTXASM_CACHE_DIR", concat!(env!("CARGO_MANIFEST_DIR"), "/target/no-such-cache"));
    c
}

/// Run the `ctxasm` binary.
pub fn ctxasm(args: &[&str]) -> std::process::Output {
    bin().args(args).output().unwrap()
}
