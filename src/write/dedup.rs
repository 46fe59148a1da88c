//! The dedup format (see the module docs of [`crate::write`]): writing a
//! store, a session's new segments and recipes handed over early, and
//! `expand` back to the batch format.

use super::*;

/// Write the dedup format of every selected request into `dir` (created;
/// must not already hold a dedup output). Nothing to store writes no
/// directory.
pub fn write_dedup(
    disc: &Discovery,
    run: &RunOptions<'_>,
    opts: &AssembleOptions,
    dir: &Path,
) -> io::Result<AssembleSummary> {
    write_dedup_store(disc, run, opts, dir, false)
}

/// Bytes of new segments and recipes a session hands to the writer at a
/// time while it is the writer's next ([`write_dedup_store_sending`]).
/// Small: a part is held twice over while it grows and once more while it
/// is written, beside the session's own state. At 2 MiB (the batch
/// format's [`Spill::SEND_AT`]) a generated session of 8,000 turns peaked
/// at 54.2 MiB; at 256 KiB, 50.3 MiB, and smaller parts gave no less.
const SEND_AT: usize = 256 << 10;

/// The buffer of each file of the store: a session's parts arrive
/// [`SEND_AT`] bytes at a time, and a larger buffer is only more memory
/// (two of 1 MiB were 1.5 MB of a long session's peak).
const WRITE_BUF: usize = SEND_AT;

/// [`write_dedup`]; with `keep_empty`, a store without a request is
/// written too (a shard of a corpus may hold none, and `merge` takes it).
pub fn write_dedup_store(
    disc: &Discovery,
    run: &RunOptions<'_>,
    opts: &AssembleOptions,
    dir: &Path,
    keep_empty: bool,
) -> io::Result<AssembleSummary> {
    write_dedup_store_sending(disc, run, opts, dir, keep_empty, SEND_AT)
}

/// [`write_dedup_store`], the session the writer takes next handing its
/// new segments and recipes over whenever they pass `send_at` bytes (a
/// long session's output is not held whole until it is done).
pub fn write_dedup_store_sending(
    disc: &Discovery,
    run: &RunOptions<'_>,
    opts: &AssembleOptions,
    dir: &Path,
    keep_empty: bool,
    send_at: usize,
) -> io::Result<AssembleSummary> {
    check_dedup_target(dir)?;
    // Written under a temporary name beside `dir`, renamed when complete:
    // a killed run leaves no store that looks whole.
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "dedup".into());
    let tmp = dir.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", tmp.display())))?;
    let result = write_dedup_into(disc, run, opts, &tmp, send_at);
    let finish = |summary: &AssembleSummary| -> io::Result<()> {
        if summary.requests_written == 0 && !keep_empty {
            // Nothing to store: no directory (the caller says why).
            return std::fs::remove_dir_all(&tmp);
        }
        if dir.is_dir() {
            std::fs::remove_dir(dir)?; // empty: checked above
        }
        std::fs::rename(&tmp, dir).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))
    };
    match result.and_then(|s| finish(&s).map(|()| s)) {
        Ok(s) => Ok(s),
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            Err(e)
        }
    }
}

/// A dedup target must not exist or be an empty directory; a store (whole,
/// or left by an interrupted run of an older ctxasm) is named so.
pub(super) fn check_dedup_target(dir: &Path) -> io::Result<()> {
    let exists = |msg: String| Err(io::Error::new(io::ErrorKind::AlreadyExists, format!("{}: {msg}", dir.display())));
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io::Error::new(e.kind(), format!("{}: {e}", dir.display()))),
        Ok(m) if !m.is_dir() => exists("exists and is not a directory".into()),
        Ok(_) => {
            let mut entries = std::fs::read_dir(dir)?;
            if entries.next().is_none() {
                return Ok(());
            }
            if dir.join(MANIFEST).is_file() {
                exists("already holds a dedup store; remove it or choose another -o".into())
            } else if dir.join("segments.bin").exists() || dir.join("recipes.jsonl").exists() {
                exists(format!("an incomplete dedup store (no {MANIFEST}: left by an interrupted run); remove it"))
            } else {
                exists("exists and is not empty; choose another -o".into())
            }
        }
    }
}

/// The file a complete dedup store ends with.
pub(super) const MANIFEST: &str = "manifest.json";

/// The dedup store's format version: 2 lets a recipe keep the previous
/// recipe's leading message ids (`keep`), so a session's recipes grow
/// with what each turn adds; 3 stores each recipe's tail (the params after
/// the tools, ~500 bytes a recipe of 2.1.x) as a segment (`tail_id`);
/// `expand` reads 1 to 3.
pub const DEDUP_VERSION: u64 = 3;

fn write_dedup_into(
    disc: &Discovery,
    run: &RunOptions<'_>,
    opts: &AssembleOptions,
    dir: &Path,
    send_at: usize,
) -> io::Result<AssembleSummary> {
    let open = |name: &str| -> io::Result<BufWriter<std::fs::File>> {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(dir.join(name))
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.join(name).display())))?;
        Ok(BufWriter::with_capacity(WRITE_BUF, f))
    };
    let mut segs = open("segments.bin")?;
    let mut recipes = open("recipes.jsonl")?;
    let mut seen: HashSet<u128> = HashSet::default();
    let (mut seg_bytes, mut recipe_bytes) = (0u64, 0u64);
    let mut summary = run_chunks(
        disc,
        run,
        |part| {
            // The dedup writer sends parts of its output, never bytes.
            let (Part::Partial(s) | Part::Done(s)) = part else { return Ok(()) };
            for (id, seg) in &s.segments {
                if seen.insert(*id) {
                    let bytes = s.bytes(seg);
                    segs.write_all(&id.to_be_bytes())?;
                    let len = u32::try_from(bytes.len())
                        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "segment over 4 GiB"))?;
                    segs.write_all(&len.to_le_bytes())?;
                    segs.write_all(bytes)?;
                    seg_bytes += 20 + bytes.len() as u64;
                }
            }
            recipe_bytes += s.lines.len() as u64;
            recipes.write_all(&s.lines)
        },
        |bump, session, early| {
            let (requests, mut so) = replay(bump, session, opts);
            CACHE.with(|c| dedup_session(&requests, opts.turns, &mut c.borrow_mut(), &mut so, (early, send_at)));
            so
        },
    )?;
    segs.flush()?;
    recipes.flush()?;
    summary.segments = seen.len() as u64;
    summary.bytes_written = seg_bytes + recipe_bytes;
    let manifest = serde_json::json!({
        "format": "ctxasm-dedup",
        "version": DEDUP_VERSION,
        "requests": summary.requests_written,
        "segments": summary.segments,
        "segment_bytes": seg_bytes,
        "recipe_bytes": recipe_bytes,
        "batch_bytes": summary.batch_bytes,
    });
    for f in [segs, recipes] {
        f.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    }
    let mut m = open(MANIFEST)?;
    serde_json::to_writer_pretty(&mut m, &manifest).map_err(io::Error::other)?;
    m.write_all(b"\n")?;
    m.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    Ok(summary)
}

/// `"<32 lowercase hex digits>"`.
fn push_hex128(out: &mut Vec<u8>, id: u128) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    for shift in (0..32).rev() {
        out.push(HEX[((id >> (shift * 4)) & 0xf) as usize]);
    }
    out.push(b'"');
}

/// A `segments.bin` record's header: the segment's id (16 bytes, big-endian)
/// and its length (4 bytes, little-endian).
pub(super) fn segment_header(h: &[u8; 20]) -> (u128, usize) {
    let (id, len) = h.split_at(16);
    let id = u128::from_be_bytes(id.try_into().unwrap_or_default());
    let len = u32::from_le_bytes(len.try_into().unwrap_or_default());
    (id, len as usize)
}

pub(super) fn hex128(id: u128) -> String {
    format!("{id:032x}")
}

/// The dedup output of a session's requests into `so`; its new segments
/// and recipes go to the writer early (`send`) once they pass the given
/// size, while the session is the next the writer takes.
fn dedup_session(
    requests: &[Request<'_>],
    turns: Turns,
    cache: &mut SegmentCache,
    so: &mut SessionOut,
    send: (&Early<'_, SessionOut>, usize),
) {
    // Segment ids of values already serialized in this session, by node.
    // Message nodes are not kept: a request lists only the messages after
    // those it shares with the one before (`keep`), so a message node is
    // met again almost never (none of 3,423 in the public corpus, 8 of 81
    // in the 2.1.328 captures), and a table of every message of a long
    // session was the largest part of its writer's memory.
    let mut by_node: HashMap<usize, (u128, usize)> = HashMap::default();
    let mut local: HashSet<u128> = HashSet::default();
    // Attested billing blocks (`Body::cch_seed`), one per request, made
    // before the segment closure borrows the cache (none when no request
    // has a seed: no list of thousands of `None`s).
    let seeded = selected(requests, turns).any(|i| requests[i].body.cch_seed.is_some());
    let mut attested = selected(requests, turns)
        .filter(|_| seeded)
        .map(|i| body::attested_header(&requests[i].body, cache))
        .collect::<Vec<_>>()
        .into_iter();
    let mut attested_seen: HashSet<u128> = HashSet::default();
    let mut scratch = Vec::new();
    let mut seg = |v: &Json<'_>, key: Option<u128>, so: &mut SessionOut, remember: bool| -> (u128, usize) {
        let ptr = v as *const Json<'_> as usize;
        if let Some(&hit) = by_node.get(&ptr) {
            return hit;
        }
        let (id, shared) = cache.id_into(key, v, &mut scratch);
        let len = shared.as_ref().map_or(scratch.len(), |b| b.len());
        if local.insert(id) {
            let seg = match shared {
                Some(bytes) => Segment::Shared(bytes),
                None => {
                    let start = so.own.len();
                    so.own.extend_from_slice(&scratch);
                    Segment::Own(start..so.own.len())
                }
            };
            so.segments.push((id, seg));
        }
        if remember {
            by_node.insert(ptr, (id, len));
        }
        (id, len)
    };
    let mut head = Vec::new();
    let mut mid = Vec::new();
    let mut tail = Vec::new();
    // The last written request's message ids and, per prefix, the bytes of
    // its messages with their commas: a request whose leading messages are
    // that one's (`Body::shared`) lists only the rest (`keep`).
    let mut last: Option<usize> = None;
    // Tail segments of this session already added.
    let mut tails: HashSet<u128> = HashSet::default();
    let mut msg_ids: Vec<u128> = Vec::new();
    let mut msg_bytes: Vec<usize> = vec![0];
    for i in selected(requests, turns) {
        let req = &requests[i];
        let b = &req.body;
        head.clear();
        mid.clear();
        tail.clear();
        body_head(&mut head, b);
        body_mid(&mut mid, b);
        body_tail(&mut tail, b);
        let keep = if last.is_some_and(|l| l + 1 == i) { b.shared.min(msg_ids.len()) } else { 0 };
        last = Some(i);
        msg_ids.truncate(keep);
        msg_bytes.truncate(keep + 1);
        for m in b.messages.iter_from(keep) {
            let (id, len) = seg(m, None, so, false);
            let before = msg_bytes[msg_bytes.len() - 1];
            msg_bytes.push(before + len + usize::from(!msg_ids.is_empty()));
            msg_ids.push(id);
        }
        let mut body_len =
            head.len() + mid.len() + tail.len() + b"],\"system\":[]".len() + msg_bytes[msg_bytes.len() - 1];
        let mut ids = |list: &[&Json<'_>], keys: &[Option<u128>], so: &mut SessionOut| -> Vec<u128> {
            list.iter()
                .enumerate()
                .map(|(i, v)| {
                    let (id, len) = seg(v, keys.get(i).copied().flatten(), so, true);
                    body_len += len + usize::from(i > 0);
                    id
                })
                .collect()
        };
        let mut system = ids(&b.system, &b.system_keys, so);
        // An attested billing block is this request's own bytes (same length).
        if let Some(block) = attested.next().flatten() {
            let id = xxhash_rust::xxh3::xxh3_128(&block);
            if attested_seen.insert(id) {
                so.segments.push((id, Segment::Shared(block.into())));
            }
            if let Some(first) = system.first_mut() {
                *first = id;
            }
        }
        let tools = b.tools.map(|t| {
            let (id, len) = seg(t, b.tools_key, so, true);
            body_len += len + b",\"tools\":".len();
            id
        });
        // {"custom_id":…,"head":…,"messages":[…],"system":[…],"tools":…,"tail":…}
        let out = &mut so.lines;
        let hex_list = |out: &mut Vec<u8>, list: &[u128]| {
            out.push(b'[');
            for (i, id) in list.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                push_hex128(out, *id);
            }
            out.push(b']');
        };
        out.extend_from_slice(b"{\"custom_id\":");
        let id_start = out.len();
        writer::write_str(out, &req.custom_id);
        let id_len = out.len() - id_start;
        out.extend_from_slice(b",\"head\":");
        writer::write_str(out, &String::from_utf8_lossy(&head));
        if keep > 0 {
            out.extend_from_slice(b",\"keep\":");
            let _ = write!(out, "{keep}");
        }
        out.extend_from_slice(b",\"messages\":");
        hex_list(out, &msg_ids[keep..]);
        // Only a body with lead params (1.0.x) has a `mid`: older recipes
        // read the same.
        if !mid.is_empty() {
            out.extend_from_slice(b",\"mid\":");
            writer::write_str(out, &String::from_utf8_lossy(&mid));
        }
        out.extend_from_slice(b",\"system\":");
        hex_list(out, &system);
        out.extend_from_slice(b",\"tools\":");
        match tools {
            Some(id) => push_hex128(out, id),
            None => out.extend_from_slice(b"null"),
        }
        let tail_id = xxhash_rust::xxh3::xxh3_128(&tail);
        out.extend_from_slice(b",\"tail_id\":");
        push_hex128(out, tail_id);
        out.extend_from_slice(b"}\n");
        if tails.insert(tail_id) {
            let start = so.own.len();
            so.own.extend_from_slice(&tail);
            so.segments.push((tail_id, Segment::Own(start..so.own.len())));
        }
        so.written += 1;
        // The batch line: {"custom_id":<id>,"params":<body>}\n
        so.batch_bytes += (b"{\"custom_id\":,\"params\":}\n".len() + id_len + body_len) as u64;
        let (early, send_at) = send;
        if so.own.len() + so.lines.len() >= send_at && early.is_next() {
            // Segment ranges index `own`, which goes with them.
            let part = SessionOut {
                segments: std::mem::take(&mut so.segments),
                own: std::mem::take(&mut so.own),
                lines: std::mem::take(&mut so.lines),
                ..SessionOut::default()
            };
            // Taken (or dropped when the run is stopping on a write error).
            let _ = early.send(Piece::Out(part));
        }
    }
}

#[derive(serde::Deserialize)]
struct Recipe {
    custom_id: String,
    head: String,
    /// The first `keep` message ids are the previous recipe's (version 2).
    #[serde(default)]
    keep: usize,
    messages: Vec<String>,
    /// The bytes between the messages and the system (1.0.x lead params).
    #[serde(default)]
    mid: String,
    system: Vec<String>,
    tools: Option<String>,
    /// The tail's text (versions 1 and 2), or its segment (3).
    #[serde(default)]
    tail: Option<String>,
    #[serde(default)]
    tail_id: Option<String>,
}

/// Errors of `expand`, naming the file and (for recipes) the line.
pub(super) fn bad(path: &Path, line: usize, msg: impl std::fmt::Display) -> io::Error {
    if line > 0 {
        io::Error::new(io::ErrorKind::InvalidData, format!("{}:{line}: {msg}", path.display()))
    } else {
        io::Error::new(io::ErrorKind::InvalidData, format!("{}: {msg}", path.display()))
    }
}

/// Write the batch format of the dedup directory `dir` to `out`; returns
/// the number of requests.
pub fn expand(dir: &Path, out: &mut dyn Write) -> io::Result<u64> {
    // A store is complete when its manifest is there (written last).
    let man_path = dir.join(MANIFEST);
    let manifest: serde_json::Value = match std::fs::read(&man_path) {
        Ok(b) => serde_json::from_slice(&b).map_err(|e| bad(&man_path, 0, format!("not a dedup manifest: {e}")))?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let msg = if dir.is_dir() {
                format!("{}: not a complete dedup store (no {MANIFEST}; an interrupted run leaves none)", dir.display())
            } else {
                format!("{}: no such dedup directory", dir.display())
            };
            return Err(io::Error::new(io::ErrorKind::NotFound, msg));
        }
        Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", man_path.display()))),
    };
    if manifest["format"] != "ctxasm-dedup" {
        return Err(bad(&man_path, 0, "not a ctxasm dedup manifest (format is not \"ctxasm-dedup\")"));
    }
    match manifest["version"].as_u64() {
        Some(1..=DEDUP_VERSION) => {}
        v => {
            let v = v.map_or_else(|| manifest["version"].to_string(), |v| v.to_string());
            return Err(bad(
                &man_path,
                0,
                format!(
                    "dedup store version {v}; this ctxasm reads versions 1 to {DEDUP_VERSION} (a newer ctxasm wrote it?)"
                ),
            ));
        }
    }
    // A part missing from a store with a manifest: the store was damaged
    // after it was written; say so of the store, naming the part.
    let part = |name: &str, e: io::Error| {
        let why = if e.kind() == io::ErrorKind::NotFound { "is missing".to_string() } else { e.to_string() };
        io::Error::new(e.kind(), format!("{}: a damaged dedup store: its {name} {why}", dir.display()))
    };
    let seg_path = dir.join("segments.bin");
    let data = std::fs::read(&seg_path).map_err(|e| part("segments.bin", e))?;
    let mut segments: HashMap<u128, &[u8]> = HashMap::default();
    let mut pos = 0usize;
    while pos < data.len() {
        let header = data
            .get(pos..pos + 20)
            .and_then(|h| h.try_into().ok())
            .ok_or_else(|| bad(&seg_path, 0, format!("truncated record at byte {pos}")))?;
        let (id, len) = segment_header(header);
        let bytes = data
            .get(pos + 20..pos + 20 + len)
            .ok_or_else(|| bad(&seg_path, 0, format!("truncated segment at byte {pos}")))?;
        if xxhash_rust::xxh3::xxh3_128(bytes) != id {
            return Err(bad(&seg_path, 0, format!("segment {} at byte {pos} does not match its hash", hex128(id))));
        }
        segments.insert(id, bytes);
        pos += 20 + len;
    }
    let rec_path = dir.join("recipes.jsonl");
    let text = std::fs::read_to_string(&rec_path).map_err(|e| part("recipes.jsonl", e))?;
    let mut line_out = Vec::with_capacity(1 << 20);
    let mut n = 0u64;
    // The previous recipe's message ids (what `keep` refers to).
    let mut ids: Vec<String> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let r: Recipe = serde_json::from_str(line).map_err(|e| bad(&rec_path, i + 1, e))?;
        let get = |h: &str| -> io::Result<&[u8]> {
            let id = u128::from_str_radix(h, 16).map_err(|_| bad(&rec_path, i + 1, format!("bad segment id {h:?}")))?;
            segments
                .get(&id)
                .copied()
                .ok_or_else(|| bad(&rec_path, i + 1, format!("segment {h} is not in segments.bin")))
        };
        line_out.clear();
        line_out.extend_from_slice(b"{\"custom_id\":");
        writer::write_str(&mut line_out, &r.custom_id);
        line_out.extend_from_slice(b",\"params\":");
        line_out.extend_from_slice(r.head.as_bytes());
        if r.keep > ids.len() {
            return Err(bad(
                &rec_path,
                i + 1,
                format!("keeps {} messages of the previous recipe, which has {}", r.keep, ids.len()),
            ));
        }
        ids.truncate(r.keep);
        ids.extend(r.messages);
        for (j, h) in ids.iter().enumerate() {
            if j > 0 {
                line_out.push(b',');
            }
            line_out.extend_from_slice(get(h)?);
        }
        line_out.push(b']');
        line_out.extend_from_slice(r.mid.as_bytes());
        line_out.extend_from_slice(b",\"system\":[");
        for (j, h) in r.system.iter().enumerate() {
            if j > 0 {
                line_out.push(b',');
            }
            line_out.extend_from_slice(get(h)?);
        }
        line_out.push(b']');
        if let Some(t) = &r.tools {
            line_out.extend_from_slice(b",\"tools\":");
            line_out.extend_from_slice(get(t)?);
        }
        match (&r.tail, &r.tail_id) {
            (Some(t), None) => line_out.extend_from_slice(t.as_bytes()),
            (None, Some(h)) => line_out.extend_from_slice(get(h)?),
            _ => return Err(bad(&rec_path, i + 1, "a recipe has either a tail or a tail_id")),
        }
        line_out.extend_from_slice(b"}\n");
        out.write_all(&line_out)?;
        n += 1;
    }
    if let Some(want) = manifest["requests"].as_u64().filter(|&w| w != n) {
        return Err(bad(&rec_path, 0, format!("{n} requests, the manifest says {want}")));
    }
    out.flush()?;
    Ok(n)
}
