//! `ctxasm merge OUT DIR...`: dedup stores (of the shards of a corpus, or
//! any others) merged into one, without re-serializing a request.
//!
//! - `segments.bin`: the records of every store, in the order of the DIRs
//!   given, each id once: segments are content-addressed (xxh3-128 of their
//!   bytes), so an equal segment of two stores is one record. Each record's
//!   bytes are checked against its id on the way (a damaged store is
//!   refused, naming the byte).
//! - `recipes.jsonl`: the recipe lines of every store, byte for byte,
//!   concatenated in the order of the DIRs given, so `expand` of the merged
//!   store is the concatenation of the stores' batch outputs. A recipe is
//!   read only for its `custom_id` (which must be unique across the stores:
//!   a second one is refused, naming both lines) and for the segment ids it
//!   names: every string of 32 lowercase hex digits in a field other than
//!   `custom_id`, `head`, `mid` and `tail` (today `messages`, `system`,
//!   `tools`), each of which must be in some store. Anything else in a
//!   recipe is kept as it is, so fields a later format adds survive a merge:
//!   each store's recipes stay contiguous and in order, so a reference from
//!   one recipe to another by `custom_id` or by relative position does too
//!   (one by absolute line number would not). Version 2's `keep` (the first
//!   ids of the previous recipe's messages) is such a reference: a store's
//!   first recipe must keep none, as every store written keeps none there,
//!   or it would keep the messages of the store before it.
//! - `manifest.json`: recomputed (requests, segments, bytes; `batch_bytes`
//!   the sum of the stores'). Every store must be complete (have its
//!   manifest), of one format version this ctxasm reads (1 to
//!   [`DEDUP_VERSION`]), the same for all, and hold as many recipes as its
//!   manifest says.
//!
//! Written as `write_dedup` writes: into a temporary directory beside OUT,
//! renamed to OUT when complete; OUT must not exist or be empty.

use super::{DEDUP_VERSION, MANIFEST, bad, check_dedup_target, hex128, segment_header};
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// What a merge wrote.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct MergeSummary {
    pub stores: u64,
    pub requests: u64,
    /// Distinct segments written.
    pub segments: u64,
    /// Segment records read, over all stores (`segments_in - segments`
    /// collapsed as equal).
    pub segments_in: u64,
    pub segment_bytes: u64,
    pub recipe_bytes: u64,
    /// Size of the batch format of the merged store.
    pub batch_bytes: u64,
}

/// One input store's manifest, checked.
struct Store {
    dir: PathBuf,
    version: serde_json::Value,
    requests: u64,
    batch_bytes: Option<u64>,
}

fn open_store(dir: &Path) -> io::Result<Store> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            let msg = format!("{}: not a dedup store (not a directory): not merged", dir.display());
            return Err(io::Error::new(io::ErrorKind::InvalidInput, msg));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let msg = format!("{}: no such dedup directory", dir.display());
            return Err(io::Error::new(io::ErrorKind::NotFound, msg));
        }
        Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", dir.display()))),
    }
    let man_path = dir.join(MANIFEST);
    let manifest: serde_json::Value = match std::fs::read(&man_path) {
        Ok(b) => serde_json::from_slice(&b).map_err(|e| bad(&man_path, 0, format!("not a dedup manifest: {e}")))?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let msg = if dir.join("segments.bin").exists() || dir.join("recipes.jsonl").exists() {
                format!(
                    "{}: an incomplete dedup store (no {MANIFEST}: left by an interrupted or killed run): not merged",
                    dir.display()
                )
            } else {
                format!(
                    "{}: not a dedup store (no {MANIFEST}, segments.bin or recipes.jsonl): not merged",
                    dir.display()
                )
            };
            return Err(io::Error::new(io::ErrorKind::NotFound, msg));
        }
        Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", man_path.display()))),
    };
    if manifest["format"] != "ctxasm-dedup" {
        return Err(bad(&man_path, 0, "not a ctxasm dedup manifest (format is not \"ctxasm-dedup\")"));
    }
    let requests =
        manifest["requests"].as_u64().ok_or_else(|| bad(&man_path, 0, "the manifest has no number of requests"))?;
    if !manifest["version"].is_u64() {
        return Err(bad(&man_path, 0, "the manifest has no format version"));
    }
    Ok(Store {
        dir: dir.to_path_buf(),
        version: manifest["version"].clone(),
        requests,
        batch_bytes: manifest["batch_bytes"].as_u64(),
    })
}

/// Merge the dedup stores `dirs` into `out` (see the module docs).
pub fn merge_stores(out: &Path, dirs: &[PathBuf]) -> io::Result<MergeSummary> {
    if dirs.is_empty() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "merge: no store to merge"));
    }
    let stores = dirs.iter().map(|d| open_store(d)).collect::<io::Result<Vec<Store>>>()?;
    if let Some(other) = stores.iter().find(|s| s.version != stores[0].version) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} is dedup format version {}, {} is version {}: not merged",
                stores[0].dir.display(),
                stores[0].version,
                other.dir.display(),
                other.version
            ),
        ));
    }
    if let Some(v) = stores[0].version.as_u64().filter(|v| !(1..=DEDUP_VERSION).contains(v)) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} is dedup format version {v}, this ctxasm merges versions 1 to {DEDUP_VERSION} (a newer ctxasm \
                 wrote it?): not merged",
                stores[0].dir.display()
            ),
        ));
    }
    check_dedup_target(out)?;
    let name = out.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "dedup".into());
    let tmp = out.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", tmp.display())))?;
    let result = merge_into(&tmp, &stores).and_then(|summary| {
        if out.is_dir() {
            std::fs::remove_dir(out)?; // empty: checked above
        }
        std::fs::rename(&tmp, out).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", out.display())))?;
        Ok(summary)
    });
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    result
}

fn create(dir: &Path, name: &str) -> io::Result<BufWriter<std::fs::File>> {
    let path = dir.join(name);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    Ok(BufWriter::with_capacity(1 << 20, f))
}

fn merge_into(tmp: &Path, stores: &[Store]) -> io::Result<MergeSummary> {
    let mut summary = MergeSummary { stores: stores.len() as u64, ..MergeSummary::default() };
    let mut segs = create(tmp, "segments.bin")?;
    let mut seen: FxHashSet<u128> = FxHashSet::default();
    for s in stores {
        copy_segments(&s.dir, &mut segs, &mut seen, &mut summary)?;
    }
    summary.segments = seen.len() as u64;
    let mut recipes = create(tmp, "recipes.jsonl")?;
    // custom_id → (store, line) of its first recipe.
    let mut ids: FxHashMap<String, (usize, usize)> = FxHashMap::default();
    for (k, s) in stores.iter().enumerate() {
        let n = copy_recipes(stores, k, &mut recipes, &seen, &mut ids, &mut summary)?;
        if n != s.requests {
            return Err(bad(
                &s.dir.join("recipes.jsonl"),
                0,
                format!("{n} requests, the manifest says {}: a damaged store, not merged", s.requests),
            ));
        }
        summary.requests += n;
    }
    summary.batch_bytes = stores.iter().filter_map(|s| s.batch_bytes).sum();
    for f in [segs, recipes] {
        f.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    }
    let mut manifest = serde_json::json!({
        "format": "ctxasm-dedup",
        "version": stores[0].version,
        "requests": summary.requests,
        "segments": summary.segments,
        "segment_bytes": summary.segment_bytes,
        "recipe_bytes": summary.recipe_bytes,
    });
    // A store of an older ctxasm may not say its batch size.
    if stores.iter().all(|s| s.batch_bytes.is_some()) {
        manifest["batch_bytes"] = summary.batch_bytes.into();
    }
    let mut m = create(tmp, MANIFEST)?;
    serde_json::to_writer_pretty(&mut m, &manifest).map_err(io::Error::other)?;
    m.write_all(b"\n")?;
    m.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    Ok(summary)
}

/// Stream the segment records of the store in `dir` into `out`, each id
/// not `seen` before; each record checked against its id.
fn copy_segments(
    dir: &Path,
    out: &mut impl Write,
    seen: &mut FxHashSet<u128>,
    summary: &mut MergeSummary,
) -> io::Result<()> {
    let path = dir.join("segments.bin");
    let damaged = |e: io::Error| {
        let why = if e.kind() == io::ErrorKind::NotFound { "is missing".to_string() } else { e.to_string() };
        io::Error::new(e.kind(), format!("{}: a damaged dedup store: its segments.bin {why}", dir.display()))
    };
    let file = std::fs::File::open(&path).map_err(damaged)?;
    let mut r = BufReader::with_capacity(1 << 20, file);
    let mut header = [0u8; 20];
    let mut bytes = Vec::new();
    let mut pos = 0u64;
    loop {
        match read_full(&mut r, &mut header)? {
            0 => break,
            20 => {}
            _ => return Err(bad(&path, 0, format!("truncated record at byte {pos}"))),
        }
        let (id, len) = segment_header(&header);
        bytes.resize(len, 0);
        if read_full(&mut r, &mut bytes)? != len {
            return Err(bad(&path, 0, format!("truncated segment at byte {pos}")));
        }
        if xxhash_rust::xxh3::xxh3_128(&bytes) != id {
            return Err(bad(&path, 0, format!("segment {} at byte {pos} does not match its hash", hex128(id))));
        }
        summary.segments_in += 1;
        if seen.insert(id) {
            out.write_all(&header)?;
            out.write_all(&bytes)?;
            summary.segment_bytes += 20 + len as u64;
        }
        pos += 20 + len as u64;
    }
    Ok(())
}

/// Read until `buf` is full or the end; the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// The fields of a recipe that are not segment ids.
const NOT_IDS: &[&str] = &["custom_id", "head", "mid", "tail"];

/// Whether `s` is a segment id: 32 lowercase hex digits.
fn as_segment_id(s: &str) -> Option<u128> {
    let hex = s.len() == 32 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    hex.then(|| u128::from_str_radix(s, 16).ok()).flatten()
}

/// Every segment id in `v` (see the module docs).
fn segment_ids(v: &serde_json::Value, out: &mut Vec<u128>) {
    match v {
        serde_json::Value::String(s) => out.extend(as_segment_id(s)),
        serde_json::Value::Array(a) => a.iter().for_each(|x| segment_ids(x, out)),
        serde_json::Value::Object(o) => o.values().for_each(|x| segment_ids(x, out)),
        _ => {}
    }
}

/// Copy the recipe lines of store `k` into `out`; the number of recipes.
fn copy_recipes(
    stores: &[Store],
    k: usize,
    out: &mut impl Write,
    seen: &FxHashSet<u128>,
    ids: &mut FxHashMap<String, (usize, usize)>,
    summary: &mut MergeSummary,
) -> io::Result<u64> {
    let dir = &stores[k].dir;
    let path = dir.join("recipes.jsonl");
    let file = std::fs::File::open(&path).map_err(|e| {
        let why = if e.kind() == io::ErrorKind::NotFound { "is missing".to_string() } else { e.to_string() };
        io::Error::new(e.kind(), format!("{}: a damaged dedup store: its recipes.jsonl {why}", dir.display()))
    })?;
    let mut r = BufReader::with_capacity(1 << 20, file);
    let mut line = Vec::new();
    let mut refs = Vec::new();
    let (mut n, mut number) = (0u64, 0usize);
    loop {
        line.clear();
        if r.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        number += 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let recipe: serde_json::Value =
            serde_json::from_slice(&line).map_err(|e| bad(&path, number, format!("not a recipe: {e}")))?;
        let Some(fields) = recipe.as_object() else { return Err(bad(&path, number, "not a recipe: not an object")) };
        let Some(custom_id) = fields.get("custom_id").and_then(|c| c.as_str()) else {
            return Err(bad(&path, number, "a recipe without a string custom_id"));
        };
        if let Some(&(first_store, first_line)) = ids.get(custom_id) {
            let first = stores[first_store].dir.join("recipes.jsonl");
            return Err(bad(
                &path,
                number,
                format!(
                    "custom_id {custom_id:?} is also at {}:{first_line}: the stores overlap (the same session in two \
                     shards?), not merged",
                    first.display()
                ),
            ));
        }
        ids.insert(custom_id.to_string(), (k, number));
        if n == 0 && fields.get("keep").is_some_and(|keep| keep.as_u64() != Some(0)) {
            return Err(bad(
                &path,
                number,
                format!(
                    "{custom_id}: the store's first recipe keeps messages of a recipe before it (keep {}): a \
                     damaged store, not merged",
                    fields["keep"]
                ),
            ));
        }
        refs.clear();
        for (key, v) in fields.iter().filter(|(key, _)| !NOT_IDS.contains(&key.as_str())) {
            let before = refs.len();
            segment_ids(v, &mut refs);
            if let Some(missing) = refs[before..].iter().find(|id| !seen.contains(id)) {
                return Err(bad(
                    &path,
                    number,
                    format!("{custom_id}: segment {} ({key}) is in none of the stores", hex128(*missing)),
                ));
            }
        }
        out.write_all(&line)?;
        summary.recipe_bytes += line.len() as u64;
        if line.last() != Some(&b'\n') {
            out.write_all(b"\n")?;
            summary.recipe_bytes += 1;
        }
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(dir: &Path, segments: &[&[u8]], recipes: &str) {
        std::fs::create_dir_all(dir).unwrap();
        let mut seg = Vec::new();
        for s in segments {
            seg.extend_from_slice(&xxhash_rust::xxh3::xxh3_128(s).to_be_bytes());
            seg.extend_from_slice(&(s.len() as u32).to_le_bytes());
            seg.extend_from_slice(s);
        }
        std::fs::write(dir.join("segments.bin"), seg).unwrap();
        std::fs::write(dir.join("recipes.jsonl"), recipes).unwrap();
        let n = recipes.lines().count();
        std::fs::write(
            dir.join(MANIFEST),
            format!(r#"{{"format":"ctxasm-dedup","version":1,"requests":{n},"batch_bytes":10}}"#),
        )
        .unwrap();
    }

    fn id(s: &[u8]) -> String {
        hex128(xxhash_rust::xxh3::xxh3_128(s))
    }

    #[test]
    fn equal_segments_collapse_and_recipes_are_kept_as_they_are() {
        let t = tempfile::tempdir().unwrap();
        let (a, b) = (t.path().join("a"), t.path().join("b"));
        let (x, y, z): (&[u8], &[u8], &[u8]) = (b"{\"x\":1}", b"{\"y\":2}", b"{\"z\":3}");
        let ra = format!(
            "{{\"custom_id\":\"a_0\",\"head\":\"{{\\\"m\\\":[\",\"messages\":[\"{}\"],\"system\":[],\"tools\":\"{}\",\"tail\":\"}}\"}}\n",
            id(x),
            id(y)
        );
        // A field a later format may add is kept, byte for byte.
        let rb = format!(
            "{{\"custom_id\":\"b_0\",\"prev\":\"a_0\",\"later\":1,\"head\":\"{{\\\"m\\\":[\",\"messages\":[\"{}\",\"{}\"],\"system\":[],\"tools\":null,\"tail\":\"}}\"}}\n",
            id(y),
            id(z)
        );
        store(&a, &[x, y], &ra);
        store(&b, &[y, z], &rb);
        let out = t.path().join("m");
        let s = merge_stores(&out, &[a.clone(), b.clone()]).unwrap();
        assert_eq!((s.stores, s.requests, s.segments, s.segments_in, s.batch_bytes), (2, 2, 3, 4, 20));
        assert_eq!(std::fs::read_to_string(out.join("recipes.jsonl")).unwrap(), format!("{ra}{rb}"));
        let segs = std::fs::read(out.join("segments.bin")).unwrap();
        assert_eq!(segs.len() as u64, s.segment_bytes);
        assert_eq!(segs.len(), 3 * 20 + x.len() + y.len() + z.len());
        let m: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join(MANIFEST)).unwrap()).unwrap();
        assert_eq!(m["requests"], 2);
        assert_eq!(m["segments"], 3);
        assert_eq!(m["batch_bytes"], 20);
        // The merged store expands.
        let mut expanded = Vec::new();
        assert_eq!(super::super::expand(&out, &mut expanded).unwrap(), 2);
        // OUT exists now: refused, and nothing left behind.
        let err = merge_stores(&out, std::slice::from_ref(&a)).unwrap_err().to_string();
        assert!(err.contains("already holds a dedup store"), "{err}");
        // The same store twice: its custom_ids overlap.
        let err = merge_stores(&t.path().join("m2"), &[a.clone(), a.clone()]).unwrap_err().to_string();
        assert!(err.contains("a/recipes.jsonl:1: custom_id \"a_0\" is also at "), "{err}");
        assert!(err.ends_with("a/recipes.jsonl:1: the stores overlap (the same session in two shards?), not merged"));
        assert!(!t.path().join("m2").exists());
        let leftovers: Vec<_> = std::fs::read_dir(t.path())
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with('.'))
            .collect();
        assert!(leftovers.is_empty());
    }

    #[test]
    fn incomplete_and_damaged_stores_are_refused() {
        let t = tempfile::tempdir().unwrap();
        let (a, b) = (t.path().join("a"), t.path().join("b"));
        let x: &[u8] = b"{\"x\":1}";
        store(&a, &[x], &format!("{{\"custom_id\":\"a_0\",\"messages\":[\"{}\"]}}\n", id(x)));
        store(&b, &[], &format!("{{\"custom_id\":\"b_0\",\"messages\":[\"{}\"]}}\n", id(b"nowhere")));
        // b names a segment no store has.
        let err = merge_stores(&t.path().join("m"), &[a.clone(), b.clone()]).unwrap_err().to_string();
        assert!(err.contains("b/recipes.jsonl:1: b_0: segment "), "{err}");
        assert!(err.ends_with("(messages) is in none of the stores"), "{err}");
        // Without its manifest, a store is incomplete.
        std::fs::remove_file(b.join(MANIFEST)).unwrap();
        let err = merge_stores(&t.path().join("m"), &[a.clone(), b.clone()]).unwrap_err().to_string();
        assert!(
            err.ends_with(
                "b: an incomplete dedup store (no manifest.json: left by an interrupted or killed run): not merged"
            ),
            "{err}"
        );
        // A directory that is no store at all, a file, nothing.
        let other = t.path().join("other");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join("notes.txt"), "x").unwrap();
        let err = merge_stores(&t.path().join("m"), &[a.clone(), other.clone()]).unwrap_err().to_string();
        assert!(
            err.ends_with("other: not a dedup store (no manifest.json, segments.bin or recipes.jsonl): not merged")
        );
        let err = merge_stores(&t.path().join("m"), &[other.join("notes.txt")]).unwrap_err().to_string();
        assert!(err.ends_with("notes.txt: not a dedup store (not a directory): not merged"), "{err}");
        let err = merge_stores(&t.path().join("m"), &[t.path().join("none")]).unwrap_err().to_string();
        assert!(err.ends_with("none: no such dedup directory"), "{err}");
        // Stores of two format versions, or of one this ctxasm does not write.
        let v2 = t.path().join("v2");
        store(&v2, &[], "");
        let man = std::fs::read_to_string(v2.join(MANIFEST)).unwrap().replace(r#""version":1"#, r#""version":2"#);
        std::fs::write(v2.join(MANIFEST), man).unwrap();
        let err = merge_stores(&t.path().join("m"), &[a.clone(), v2.clone()]).unwrap_err().to_string();
        assert!(err.contains("a is dedup format version 1, ") && err.ends_with("v2 is version 2: not merged"), "{err}");
        let v4 = t.path().join("v4");
        store(&v4, &[], "");
        let man = std::fs::read_to_string(v4.join(MANIFEST)).unwrap().replace(r#""version":1"#, r#""version":4"#);
        std::fs::write(v4.join(MANIFEST), man).unwrap();
        let err = merge_stores(&t.path().join("m"), std::slice::from_ref(&v4)).unwrap_err().to_string();
        assert!(err.ends_with("v4 is dedup format version 4, this ctxasm merges versions 1 to 3 (a newer ctxasm wrote it?): not merged"), "{err}");
        // A store whose first recipe keeps messages of a recipe before it.
        let k = t.path().join("k");
        store(&k, &[x], &format!("{{\"custom_id\":\"k_1\",\"keep\":2,\"messages\":[\"{}\"]}}\n", id(x)));
        let err = merge_stores(&t.path().join("m"), &[a.clone(), k.clone()]).unwrap_err().to_string();
        assert!(
            err.contains(
                "k/recipes.jsonl:1: k_1: the store's first recipe keeps messages of a recipe before it (keep 2)"
            ),
            "{err}"
        );
        assert!(!t.path().join("m").exists());
        // A segment that does not match its id.
        let mut seg = std::fs::read(a.join("segments.bin")).unwrap();
        *seg.last_mut().unwrap() = b'2';
        std::fs::write(a.join("segments.bin"), seg).unwrap();
        let err = merge_stores(&t.path().join("m"), std::slice::from_ref(&a)).unwrap_err().to_string();
        assert!(err.contains("a/segments.bin: segment ") && err.ends_with(" at byte 0 does not match its hash"));
        assert!(!t.path().join("m").exists());
    }
}
