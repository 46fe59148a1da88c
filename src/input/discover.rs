//! Finding transcript files and grouping them into sessions.
//!
//! A path may be one `.jsonl` file (always taken, whatever its name), a session
//! directory or a projects root (walked recursively). In a walk every `*.jsonl`
//! is a transcript except two known non-transcripts: workflow journals
//! (`…/workflows/<run>/journal.jsonl`) and capture files named `wire.jsonl`.
//! Subagent files are the ones named `agent-*.jsonl`: in
//! `<project>/<sid>/subagents/` (2.1.2+, flat, or under `workflows/<run>/`) they
//! join the group of `<project>/<sid>.jsonl`; 2.0.x files beside the session
//! files (`<project>/agent-<id>.jsonl`) are linked to `<project>/<sid>.jsonl`
//! by the `sessionId` of their first line, read from the file's head.

use crate::diag::{DiagKind, Diagnostic};
use std::path::{Path, PathBuf};

/// Whether a file is a main session transcript or a subagent's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileKind {
    Session,
    Subagent {
        /// The id after `agent-` in the file name.
        agent_id: String,
        /// The `agent-<id>.meta.json` sidecar, when present.
        meta: Option<PathBuf>,
    },
}

/// Whether a subagent id is a compaction agent's (2.1.88 writes a
/// compaction's request into `agent-acompact-<hex>.jsonl`).
pub fn is_compaction_agent(agent_id: &str) -> bool {
    agent_id.starts_with("acompact")
}

impl FileKind {
    /// A compaction agent's file ([`is_compaction_agent`]).
    pub fn is_compaction(&self) -> bool {
        matches!(self, FileKind::Subagent { agent_id, .. } if is_compaction_agent(agent_id))
    }
}

/// One transcript file to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranscriptFile {
    pub path: PathBuf,
    /// The path as shown in diagnostics (as found, not canonicalized).
    pub display: String,
    pub kind: FileKind,
    /// Size at discovery time.
    pub size: u64,
}

impl TranscriptFile {
    pub fn is_subagent(&self) -> bool {
        matches!(self.kind, FileKind::Subagent { .. })
    }
}

/// Files that belong together: a main session file and the subagent files
/// stored under its `<sid>/subagents/` directory. Indices into
/// [`Discovery::files`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionGroup {
    pub main: Option<usize>,
    pub subagents: Vec<usize>,
}

impl SessionGroup {
    /// All file indices of the group, main first.
    pub fn files(&self) -> impl Iterator<Item = usize> + '_ {
        self.main.into_iter().chain(self.subagents.iter().copied())
    }
}

/// What discovery found.
#[derive(Debug, Default)]
pub struct Discovery {
    /// Sorted by path bytes, no duplicates.
    pub files: Vec<TranscriptFile>,
    /// Sorted by the path of their first file.
    pub groups: Vec<SessionGroup>,
    /// Paths that do not exist or could not be walked.
    pub diagnostics: Vec<Diagnostic>,
}

impl Discovery {
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }

    /// Keep the groups whose `keep` entry is true (one per group, in
    /// order), and only their files; file indices are renumbered, orders
    /// kept.
    pub fn retain_groups(&mut self, keep: &[bool]) {
        let mut file_kept = vec![false; self.files.len()];
        for (g, _) in self.groups.iter().zip(keep).filter(|(_, k)| **k) {
            for i in g.files() {
                file_kept[i] = true;
            }
        }
        let mut new_index = vec![usize::MAX; self.files.len()];
        let mut next = 0usize;
        for (i, &k) in file_kept.iter().enumerate() {
            if k {
                new_index[i] = next;
                next += 1;
            }
        }
        let mut i = 0usize;
        self.files.retain(|_| {
            i += 1;
            file_kept[i - 1]
        });
        let mut groups = std::mem::take(&mut self.groups);
        let mut k = keep.iter();
        groups.retain(|_| k.next().copied().unwrap_or(false));
        for g in &mut groups {
            g.main = g.main.map(|m| new_index[m]);
            for s in &mut g.subagents {
                *s = new_index[*s];
            }
        }
        self.groups = groups;
    }
}

/// The projects roots used when no path is given: every entry of
/// `$CLAUDE_CONFIG_DIR` (a comma-separated list) + `/projects`, else
/// `~/.claude/projects`.
pub fn default_roots() -> Vec<PathBuf> {
    if let Some(dirs) = std::env::var_os("CLAUDE_CONFIG_DIR") {
        let dirs = dirs.to_string_lossy().into_owned();
        let roots: Vec<PathBuf> =
            dirs.split(',').map(str::trim).filter(|d| !d.is_empty()).map(|d| Path::new(d).join("projects")).collect();
        if !roots.is_empty() {
            return roots;
        }
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
    vec![home.join(".claude").join("projects")]
}

/// Find every transcript under `paths` and group them into sessions.
pub fn discover(paths: &[PathBuf]) -> Discovery {
    let mut out = Discovery::default();
    // Each file found, and whether a walk found it (its directory listed)
    // with its size, if read.
    let mut found: Vec<(PathBuf, Option<Option<u64>>)> = Vec::new();
    let mut metas = rustc_hash::FxHashSet::default();
    for root in paths {
        match std::fs::metadata(root) {
            Err(e) => out.diagnostics.push(Diagnostic::new(
                root.to_string_lossy(),
                0,
                if e.kind() == std::io::ErrorKind::NotFound { DiagKind::NotFound } else { DiagKind::Io },
                format!("cannot read path: {e}"),
            )),
            Ok(m) if m.is_dir() => {
                let walked = walk(root);
                found.extend(walked.files.into_iter().map(|(f, size)| (f, Some(size))));
                metas.extend(walked.metas);
                out.diagnostics.extend(walked.diagnostics);
            }
            Ok(m) if m.is_file() => found.push((root.clone(), None)),
            Ok(m) => out.diagnostics.push(not_regular(root, &m.file_type())),
        }
    }
    // Stable: of a path both named and walked, the first stays.
    found.sort_by(|a, b| a.0.as_os_str().as_encoded_bytes().cmp(b.0.as_os_str().as_encoded_bytes()));
    found.dedup_by(|a, b| a.0 == b.0);
    // A stat per file the walk did not size, on the threads of the pool it
    // runs in (`RunOptions::install`), as the agent files' heads in `group`.
    use rayon::prelude::*;
    out.files = found.into_par_iter().map(|(path, walked)| classify(path, walked.map(|size| (size, &metas)))).collect();
    out.groups = group(&out.files);
    out
}

/// What a walk found: the transcripts, the `agent-*.meta.json` sidecars
/// (files, or links to files) and the walk's problems, in walk order
/// (depth first, each directory's entries in the order it lists them).
#[derive(Default)]
struct Walked {
    /// With their sizes, when the walk read them.
    files: Vec<(PathBuf, Option<u64>)>,
    metas: Vec<PathBuf>,
    diagnostics: Vec<Diagnostic>,
}

impl Walked {
    fn append(&mut self, other: Walked) {
        self.files.extend(other.files);
        self.metas.extend(other.metas);
        self.diagnostics.extend(other.diagnostics);
    }
}

/// Walk `root`: its own entries here, each directory in it on the pool (a
/// projects root holds a directory per project), the results in the order
/// of one walk.
fn walk(root: &Path) -> Walked {
    enum Top {
        Done(Walked),
        Dir(PathBuf),
    }
    // The root's entries listed here, each directory in it walked on the
    // pool.
    let listing = match list(root) {
        Ok(listing) => listing,
        Err(e) => return Walked { diagnostics: vec![e], ..Walked::default() },
    };
    let top: Vec<Top> = listing
        .into_iter()
        .map(|entry| match entry {
            Ok(e) if e.ft.is_dir() => Top::Dir(e.path),
            entry => {
                let mut w = Walked::default();
                visit(entry, &mut w);
                Top::Done(w)
            }
        })
        .collect();
    use rayon::prelude::*;
    let parts: Vec<Walked> = top
        .into_par_iter()
        .map(|t| match t {
            Top::Done(w) => w,
            Top::Dir(dir) => walk_dir(&dir),
        })
        .collect();
    let mut all = Walked::default();
    for w in parts {
        all.append(w);
    }
    all
}

/// One entry of a directory's listing.
struct Listed {
    path: PathBuf,
    /// A link's own type.
    ft: std::fs::FileType,
    /// A regular transcript file's size, asked of the directory (a stat
    /// relative to it, not a lookup of the whole path).
    size: Option<u64>,
}

/// The entries of `dir` in the order it lists them (each unreadable one a
/// diagnostic in its place), or the diagnostic of a directory that cannot
/// be read.
fn list(dir: &Path) -> Result<Vec<Result<Listed, Diagnostic>>, Diagnostic> {
    let listing = std::fs::read_dir(dir).map_err(|e| walk_error(dir, &e))?;
    Ok(listing
        .map(|entry| {
            let entry = entry.map_err(|e| walk_error(dir, &e))?;
            let path = entry.path();
            let ft = entry.file_type().map_err(|e| walk_error(&path, &e))?;
            let size =
                (ft.is_file() && is_transcript_name(&path)).then(|| entry.metadata().ok().map(|m| m.len())).flatten();
            Ok(Listed { path, ft, size })
        })
        .collect())
}

/// Walk `dir` and all under it, depth first (links to directories are not
/// followed), without holding a directory open while walking another.
fn walk_dir(dir: &Path) -> Walked {
    let mut w = Walked::default();
    let mut stack = match list(dir) {
        Ok(listing) => vec![listing.into_iter()],
        Err(e) => {
            w.diagnostics.push(e);
            return w;
        }
    };
    while let Some(top) = stack.last_mut() {
        match top.next() {
            None => {
                stack.pop();
            }
            Some(Ok(e)) if e.ft.is_dir() => match list(&e.path) {
                Ok(listing) => stack.push(listing.into_iter()),
                Err(d) => w.diagnostics.push(d),
            },
            Some(entry) => visit(entry, &mut w),
        }
    }
    w
}

/// A walk's error at `path`, worded as the walk's own errors are.
fn walk_error(path: &Path, e: &std::io::Error) -> Diagnostic {
    Diagnostic::new(
        path.to_string_lossy(),
        0,
        DiagKind::Io,
        format!("cannot walk: IO error for operation on {}: {e}", path.display()),
    )
}

/// One entry of a walk: a transcript, a sidecar, a problem or nothing.
fn visit(entry: Result<Listed, Diagnostic>, w: &mut Walked) {
    let Listed { path, ft, size } = match entry {
        Ok(e) => e,
        Err(d) => {
            w.diagnostics.push(d);
            return;
        }
    };
    // A link is judged by what it names (`stat`).
    let target = |path: &Path| {
        if ft.is_symlink() {
            std::fs::metadata(path).ok().map(|m| (m.file_type(), Some(m.len())))
        } else {
            Some((ft, size))
        }
    };
    if is_meta_name(&path) {
        if target(&path).is_some_and(|(t, _)| t.is_file()) {
            w.metas.push(path);
        }
        return;
    }
    if !is_transcript_name(&path) {
        return;
    }
    match target(&path) {
        Some((t, size)) if t.is_file() => w.files.push((path, size)),
        Some((t, _)) if !t.is_dir() => w.diagnostics.push(not_regular(&path, &t)),
        _ => {}
    }
}

/// `agent-<id>.meta.json`, a subagent's sidecar.
fn is_meta_name(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("agent-") && n.ends_with(".meta.json"))
}

/// The diagnostic of a path that is neither a regular file nor a directory
/// (a FIFO, a socket, a device): skipped, since opening or reading it may
/// block forever or never end.
fn not_regular(path: &Path, ft: &std::fs::FileType) -> Diagnostic {
    Diagnostic::new(
        path.to_string_lossy(),
        0,
        DiagKind::Io,
        format!("skipped: not a regular file ({})", file_type_name(ft)),
    )
}

/// A file type's name for diagnostics.
pub(crate) fn file_type_name(ft: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return "a FIFO";
        }
        if ft.is_socket() {
            return "a socket";
        }
        if ft.is_block_device() || ft.is_char_device() {
            return "a device";
        }
    }
    if ft.is_dir() { "a directory" } else { "a special file" }
}

/// The walk's file-name rule (see the module docs).
fn is_transcript_name(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        // A non-UTF-8 name: take it if it ends in .jsonl.
        return path.extension().is_some_and(|e| e == "jsonl");
    };
    if !name.ends_with(".jsonl") || name == "wire.jsonl" {
        return false;
    }
    if name == "journal.jsonl" {
        let grandparent = path.parent().and_then(Path::parent).and_then(Path::file_name);
        if grandparent.is_some_and(|g| g == "workflows") {
            return false;
        }
    }
    true
}

/// A found file, its size and kind. When a walk found the file (`walked`:
/// the size it read, if it did, and the sidecars it listed), a subagent's
/// sidecar is looked up there, else asked of the file system.
fn classify(path: PathBuf, walked: Option<(Option<u64>, &rustc_hash::FxHashSet<PathBuf>)>) -> TranscriptFile {
    let (size, metas) = match walked {
        Some((size, metas)) => (size, Some(metas)),
        None => (None, None),
    };
    let size = size.unwrap_or_else(|| std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let kind = match name.strip_prefix("agent-").and_then(|n| n.strip_suffix(".jsonl")) {
        Some(id) => {
            let meta = path.with_file_name(format!("agent-{id}.meta.json"));
            let present = match metas {
                Some(metas) => metas.contains(&meta),
                None => meta.is_file(),
            };
            FileKind::Subagent { agent_id: id.to_string(), meta: present.then_some(meta) }
        }
        None => FileKind::Session,
    };
    TranscriptFile { display: path.to_string_lossy().into_owned(), path, kind, size }
}

/// The `(project dir, session id)` a file belongs to by its location, if any.
fn session_key(file: &TranscriptFile) -> Option<(PathBuf, String)> {
    match file.kind {
        FileKind::Session => {
            let stem = file.path.file_stem()?.to_string_lossy().into_owned();
            Some((file.path.parent()?.to_path_buf(), stem))
        }
        FileKind::Subagent { .. } => {
            // <project>/<sid>/subagents[/workflows/<run>]/agent-<id>.jsonl
            let mut dir = file.path.parent()?;
            loop {
                if dir.file_name()? == "subagents" {
                    let sid_dir = dir.parent()?;
                    let sid = sid_dir.file_name()?.to_string_lossy().into_owned();
                    return Some((sid_dir.parent()?.to_path_buf(), sid));
                }
                dir = dir.parent()?;
            }
        }
    }
}

/// The `sessionId` of the first line of a file that has one, looking at the
/// first 64 KiB only (the 2.0.x agent files' lines are short). Read
/// [`HEAD_FIRST`] bytes at a time: the first line nearly always has it, and
/// discovery asks this of every loose agent file (2,318 of the 7,258 files
/// of the public corpus ×38) before any reading starts. `size`, the size
/// discovery saw, saves the read that would find the end: a read that
/// stops short at that size is taken as the end (one that stops short
/// before it reads on, to the end).
pub(crate) fn head_session_id(path: &Path, size: Option<u64>) -> Option<String> {
    use std::io::Read;
    const HEAD: u64 = 64 * 1024;
    let mut file = std::fs::File::open(path).ok()?;
    let mut head = Vec::with_capacity(HEAD_FIRST);
    let mut at_end = false;
    let mut searched = 0;
    loop {
        let want = (head.len() as u64 + HEAD_FIRST as u64).min(HEAD) - head.len() as u64;
        let start = head.len();
        head.resize(start + want as usize, 0);
        let mut got = 0;
        while start + got < head.len() {
            match file.read(&mut head[start + got..]) {
                Ok(0) => break,
                Ok(n) => {
                    got += n;
                    if size.is_some_and(|s| (start + got) as u64 >= s) {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return None,
            }
        }
        head.truncate(start + got);
        at_end |= (got as u64) < want || head.len() as u64 >= HEAD;
        // Whole lines only, but at the end (where the last is what 64 KiB
        // held of it, as before).
        let upto = if at_end { head.len() } else { head.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1) };
        let found = head[searched..upto].split(|&b| b == b'\n').find_map(|line| {
            let v: serde_json::Value = serde_json::from_slice(line).ok()?;
            v.get("sessionId")?.as_str().map(str::to_string)
        });
        searched = upto;
        if found.is_some() || at_end {
            return found;
        }
    }
}

/// What [`head_session_id`] reads at a time.
const HEAD_FIRST: usize = 8 * 1024;

fn group(files: &[TranscriptFile]) -> Vec<SessionGroup> {
    // In any order: the groups are sorted by their first file below (a
    // tree of path keys compared component by component was a fifth of
    // discovery's time on 7,000 files).
    let mut by_key: rustc_hash::FxHashMap<(PathBuf, String), SessionGroup> = rustc_hash::FxHashMap::default();
    let mut loose: Vec<SessionGroup> = Vec::new();
    for (i, f) in files.iter().enumerate() {
        match (session_key(f), f.is_subagent()) {
            (Some(key), false) => by_key.entry(key).or_default().main = Some(i),
            (Some(key), true) => by_key.entry(key).or_default().subagents.push(i),
            (None, false) => loose.push(SessionGroup { main: Some(i), subagents: Vec::new() }),
            (None, true) => loose.push(SessionGroup { main: None, subagents: vec![i] }),
        }
    }
    // 2.0.x: agent files beside the session files carry the parent's sessionId.
    use rayon::prelude::*;
    let heads: Vec<Option<String>> = loose
        .par_iter()
        .map(|g| match g.subagents[..] {
            [i] if g.main.is_none() => head_session_id(&files[i].path, Some(files[i].size)),
            _ => None,
        })
        .collect();
    let mut heads = heads.into_iter();
    loose.retain(|g| {
        let head = heads.next().flatten();
        let [i] = g.subagents[..] else { return true };
        let parent = files[i].path.parent().map(Path::to_path_buf);
        let key = parent.zip(head);
        match key.and_then(|k| by_key.get_mut(&k)).filter(|g| g.main.is_some()) {
            Some(session) => {
                session.subagents.push(i);
                false
            }
            None => true,
        }
    });
    let mut groups: Vec<SessionGroup> = by_key.into_values().chain(loose).collect();
    groups.sort_by_key(|g| g.files().min().unwrap_or(usize::MAX));
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(p: &Path) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, b"{}\n").unwrap();
    }

    /// The session id read [`HEAD_FIRST`] bytes at a time is the one of the
    /// first 64 KiB read whole: a first line longer than a chunk, the id on
    /// a later line, a line cut at 64 KiB, no newline at the end, no id,
    /// two ids in a line (serde_json's map keeps the last), an escape, a
    /// number out of range for 64 bits, spaces and a carriage return; with
    /// the size discovery saw, a larger one and a smaller one.
    #[test]
    fn the_head_session_id_read_in_chunks_is_the_one_of_64_kib() {
        fn whole(path: &Path) -> Option<String> {
            let bytes = std::fs::read(path).unwrap();
            bytes[..bytes.len().min(64 * 1024)].split(|&b| b == b'\n').find_map(|line| {
                let v: serde_json::Value = serde_json::from_slice(line).ok()?;
                v.get("sessionId")?.as_str().map(str::to_string)
            })
        }
        let long = |n: usize| format!("{{\"type\":\"user\",\"text\":\"{}\"}}", "x".repeat(n));
        let id = |s: &str| format!("{{\"sessionId\":\"{s}\"}}");
        let cases: Vec<(String, Option<&str>)> = vec![
            (format!("{}\n", id("a")), Some("a")),
            (format!("{{\"sessionId\":\"b\",\"t\":\"{}\"}}\n", "y".repeat(20_000)), Some("b")),
            (format!("{}\n{}\n{}\n", long(9_000), long(3), id("c")), Some("c")),
            (format!("{}\n{}", long(30_000), id("d")), Some("d")),
            (format!("{}\n{}\n", long(65_520), id("e")), None),
            (format!("{}\n{}\n", long(65_500), id("h")), None),
            (format!("{}\n{}\n", long(65_490), id("i")), Some("i")),
            (format!("{}\n{}\n", long(60_000), id("f")), Some("f")),
            (format!("{}\n", long(100)), None),
            (String::new(), None),
            (format!("not json\n\n{}\n", id("g")), Some("g")),
            ("{\"sessionId\":\"j1\",\"sessionId\":\"j2\"}\n".to_string(), Some("j2")),
            ("{\"sessionId\":\"k\\u0031\"}\n".to_string(), Some("k1")),
            ("{\"n\":123456789012345678901234567890,\"sessionId\":\"l\"}\n".to_string(), Some("l")),
            ("{\"sessionId\":7}\n{ \"sessionId\" : \"m\" }\r\n".to_string(), Some("m")),
        ];
        let dir = tempfile::tempdir().unwrap();
        for (i, (text, want)) in cases.iter().enumerate() {
            let path = dir.path().join(format!("agent-{i}.jsonl"));
            std::fs::write(&path, text).unwrap();
            let size = std::fs::metadata(&path).unwrap().len();
            for hint in [None, Some(size), Some(size + 1), Some(size / 2)] {
                assert_eq!(head_session_id(&path, hint).as_deref(), *want, "case {i}, size {hint:?}");
            }
            assert_eq!(head_session_id(&path, None), whole(&path), "case {i}");
        }
        assert_eq!(head_session_id(&dir.path().join("missing.jsonl"), None), None);
    }

    #[test]
    fn walks_groups_and_skips_non_transcripts() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        touch(&r.join("p/s1.jsonl"));
        touch(&r.join("p/s1/subagents/agent-a1.jsonl"));
        touch(&r.join("p/s1/subagents/agent-a1.meta.json"));
        touch(&r.join("p/s1/subagents/workflows/wf1/agent-w1.jsonl"));
        touch(&r.join("p/s1/subagents/workflows/wf1/journal.jsonl"));
        std::fs::write(r.join("p/agent-0123abcd.jsonl"), b"{\"sessionId\":\"s0\"}\n").unwrap();
        std::fs::write(r.join("p/agent-99.jsonl"), b"{\"sessionId\":\"elsewhere\"}\n").unwrap();
        touch(&r.join("p/s0.jsonl"));
        touch(&r.join("p/notes.txt"));
        touch(&r.join("cap/wire.jsonl"));
        let d = discover(&[r.to_path_buf()]);
        let rel: Vec<String> =
            d.files.iter().map(|f| f.path.strip_prefix(r).unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(
            rel,
            [
                "p/agent-0123abcd.jsonl",
                "p/agent-99.jsonl",
                "p/s0.jsonl",
                "p/s1.jsonl",
                "p/s1/subagents/agent-a1.jsonl",
                "p/s1/subagents/workflows/wf1/agent-w1.jsonl"
            ]
        );
        assert!(matches!(&d.files[4].kind, FileKind::Subagent { agent_id, meta: Some(_) } if agent_id == "a1"));
        assert!(matches!(&d.files[5].kind, FileKind::Subagent { meta: None, .. }));
        // The sizes the walk read are the files' own.
        for f in &d.files {
            assert_eq!(f.size, std::fs::metadata(&f.path).unwrap().len(), "{}", f.display);
        }
        // A file named, not walked: its sidecar asked of the file system.
        let named = discover(&[r.join("p/s1/subagents/agent-a1.jsonl")]);
        assert_eq!(named.files[0].kind, d.files[4].kind);
        assert_eq!(named.files[0].size, d.files[4].size);
        assert_eq!(
            d.groups,
            vec![
                // A 2.0.x agent file, linked by its sessionId.
                SessionGroup { main: Some(2), subagents: vec![0] },
                // Its session is not here: a group of its own.
                SessionGroup { main: None, subagents: vec![1] },
                SessionGroup { main: Some(3), subagents: vec![4, 5] },
            ]
        );
        assert!(d.diagnostics.is_empty());
    }

    #[test]
    fn explicit_files_are_taken_and_missing_paths_reported() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("wire.jsonl");
        touch(&f);
        let d = discover(&[f.clone(), dir.path().join("missing"), f.clone()]);
        assert_eq!(d.files.len(), 1);
        assert_eq!(d.diagnostics.len(), 1);
        assert_eq!(d.diagnostics[0].kind, DiagKind::NotFound);
    }
}
