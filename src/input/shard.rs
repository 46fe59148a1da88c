//! Sharding: N runs of ctxasm that together read a corpus exactly once.
//!
//! `--shard K/N` keeps the session groups ([`SessionGroup`]: a main
//! transcript and its subagents, never split) whose key hashes to `K`:
//! `xxh3_64(key) % N == K`, with `K` **0-based** (`0/4` … `3/4`, as
//! Kubernetes' `JOB_COMPLETION_INDEX` counts). Every group has one key, so
//! the N shards are disjoint and together hold every group.
//!
//! The key ([`ShardBy`]) never depends on where the corpus is mounted:
//!
//! - `session` (the default): the session id — the main file's name
//!   without `.jsonl` when it is a session id (a UUID, as Claude Code names
//!   them), else the `sessionId` of its first lines; the `<sid>` directory
//!   above `subagents/`; for a 2.0.x `agent-*.jsonl` found without its
//!   session the `sessionId` of its first lines (else its name). Copies of
//!   one session in two projects land in the same shard, and so does a
//!   transcript of the session saved under another name.
//! - `project`: the project folder, as a path relative to the command-line
//!   path it was found under (its name when that path is inside it).
//! - `root`: the projects root (the project folder's parent), the same way.
//!
//! Project and root are the cache scopes of `cost --account project|root`:
//! sharding by the account scope keeps every session that may share a
//! prompt cache in one shard. The project and root of a group are found as
//! `cost` finds them (the main file's folder, or the folder above
//! `<sid>/subagents/`; a 2.0.x agent file without its session has none: key
//! `""`).
//!
//! Every shard must be given the same paths (the same corpus, the same
//! command-line paths relative to it): the partition is a function of the
//! discovered groups and those paths only.

use super::discover::{Discovery, FileKind, SessionGroup, head_session_id};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// One shard of N: `index` is 0-based, below `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl std::str::FromStr for Shard {
    type Err = String;
    /// `K/N`: `0 ≤ K < N`, `N ≥ 1`.
    fn from_str(s: &str) -> Result<Self, String> {
        let (k, n) = s.split_once('/').ok_or("expected K/N, e.g. 0/4 (K is 0-based: 0 to N-1)")?;
        let n: u32 = n.trim().parse().map_err(|_| format!("N is not a whole number: {n:?}"))?;
        let k: u32 = k.trim().parse().map_err(|_| format!("K is not a whole number: {k:?}"))?;
        if n == 0 {
            return Err("N must be at least 1".into());
        }
        if k >= n {
            return Err(format!("K is 0-based and must be below N: 0 to {} for N = {n}", n - 1));
        }
        Ok(Shard { index: k, count: n })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// What a shard keeps together (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ShardBy {
    #[default]
    Session,
    Project,
    Root,
}

impl std::str::FromStr for ShardBy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "session" => Ok(ShardBy::Session),
            "project" => Ok(ShardBy::Project),
            "root" => Ok(ShardBy::Root),
            other => Err(format!("expected session, project or root, got {other:?}")),
        }
    }
}

impl std::fmt::Display for ShardBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ShardBy::Session => "session",
            ShardBy::Project => "project",
            ShardBy::Root => "root",
        })
    }
}

/// The shard (0-based) of a key among `count`.
pub fn shard_of(key: &str, count: u32) -> u32 {
    (xxhash_rust::xxh3::xxh3_64(key.as_bytes()) % u64::from(count.max(1))) as u32
}

/// The key of `group` (see the module docs); `roots` are the paths the
/// corpus was discovered from (the command line's, or the default roots).
pub fn group_key(disc: &Discovery, group: &SessionGroup, roots: &[PathBuf], by: ShardBy) -> String {
    let Some(first) = group.files().next().map(|i| &disc.files[i]) else { return String::new() };
    let main = group.main.map(|i| &disc.files[i]);
    // The `<sid>` directory above `subagents/`, for a group without its main file.
    let sid_dir = || first.path.ancestors().skip(1).find(|a| a.file_name().is_some_and(|n| n == "subagents"))?.parent();
    match by {
        ShardBy::Session => {
            if let Some(m) = main {
                return session_of(&m.path);
            }
            if let Some(dir) = sid_dir() {
                return name(dir);
            }
            match &first.kind {
                FileKind::Subagent { .. } => {
                    head_session_id(&first.path, Some(first.size)).unwrap_or_else(|| stem(&first.path))
                }
                FileKind::Session => session_of(&first.path),
            }
        }
        ShardBy::Project | ShardBy::Root => {
            let project = match main {
                Some(m) => m.path.parent(),
                None => sid_dir().and_then(Path::parent),
            };
            let dir = if by == ShardBy::Project { project } else { project.and_then(Path::parent) };
            dir.map(|d| relative(d, roots)).unwrap_or_default()
        }
    }
}

/// Keep the groups of `shard` (and their files) in `disc`; the number of
/// groups dropped. The keys are taken in parallel, on the pool this runs
/// in (a key may read a file's head).
pub fn keep_shard(disc: &mut Discovery, roots: &[PathBuf], shard: Shard, by: ShardBy) -> usize {
    use rayon::prelude::*;
    let d = &*disc;
    let keep: Vec<bool> =
        d.groups.par_iter().map(|g| shard_of(&group_key(d, g, roots, by), shard.count) == shard.index).collect();
    let before = disc.groups.len();
    disc.retain_groups(&keep);
    before - disc.groups.len()
}

/// The session of a main file: its name when it is a session id (as
/// Claude Code names them: nothing to read), else the `sessionId` of its
/// first lines (a renamed copy goes where its session goes), else its name.
fn session_of(path: &Path) -> String {
    let s = stem(path);
    if is_uuid(&s) { s } else { head_session_id(path, None).unwrap_or(s) }
}

/// `8-4-4-4-12` hex digits.
fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.bytes()
            .enumerate()
            .all(|(i, b)| if matches!(i, 8 | 13 | 18 | 23) { b == b'-' } else { b.is_ascii_hexdigit() })
}

/// The session ids of the groups of `disc` (their [`ShardBy::Session`]
/// keys): which sessions a shard holds, for what is matched by session
/// (`verify --wire`).
pub fn session_ids(disc: &Discovery) -> std::collections::HashSet<String> {
    disc.groups.iter().map(|g| group_key(disc, g, &[], ShardBy::Session)).collect()
}

fn stem(p: &Path) -> String {
    p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

fn name(p: &Path) -> String {
    p.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// `dir` relative to the first of `roots` it is under, components joined
/// by `/`; its name when it is a root or above every root (a root inside
/// it).
fn relative(dir: &Path, roots: &[PathBuf]) -> String {
    let rel = roots.iter().find_map(|r| dir.strip_prefix(r).ok()).filter(|rel| !rel.as_os_str().is_empty());
    match rel {
        Some(rel) => rel.iter().map(|c| c.to_string_lossy()).collect::<Vec<_>>().join("/"),
        None => name(dir),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::discover::discover;

    #[test]
    fn shard_parses_and_says_what_is_wrong() {
        assert_eq!("0/4".parse::<Shard>(), Ok(Shard { index: 0, count: 4 }));
        assert_eq!("3/4".parse::<Shard>(), Ok(Shard { index: 3, count: 4 }));
        assert_eq!("0/1".parse::<Shard>(), Ok(Shard { index: 0, count: 1 }));
        assert_eq!("4/4".parse::<Shard>(), Err("K is 0-based and must be below N: 0 to 3 for N = 4".to_string()));
        assert_eq!("1/0".parse::<Shard>(), Err("N must be at least 1".to_string()));
        assert!("2".parse::<Shard>().unwrap_err().contains("expected K/N"));
        assert!("-1/4".parse::<Shard>().unwrap_err().contains("K is not a whole number"));
        assert!("1/x".parse::<Shard>().unwrap_err().contains("N is not a whole number"));
        assert_eq!(Shard { index: 2, count: 5 }.to_string(), "2/5");
        assert_eq!("root".parse::<ShardBy>(), Ok(ShardBy::Root));
        assert!("user".parse::<ShardBy>().is_err());
    }

    fn write(p: &Path, text: &str) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn keys_do_not_depend_on_the_mount_point() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path().join("mnt/projects");
        write(&r.join("p1/s1.jsonl"), "{}\n");
        write(&r.join("p1/s1/subagents/agent-a.jsonl"), "{}\n");
        write(&r.join("p2/s2/subagents/agent-b.jsonl"), "{}\n");
        write(&r.join("p2/agent-c.jsonl"), "{\"sessionId\":\"gone\"}\n");
        let keys = |roots: &[PathBuf], by| {
            let d = discover(roots);
            d.groups.iter().map(|g| group_key(&d, g, roots, by)).collect::<Vec<_>>()
        };
        let roots = [r.clone()];
        assert_eq!(keys(&roots, ShardBy::Session), ["s1", "gone", "s2"]);
        assert_eq!(keys(&roots, ShardBy::Project), ["p1", "", "p2"]);
        // The root named is the projects root: its name.
        assert_eq!(keys(&roots, ShardBy::Root), ["projects", "", "projects"]);
        // From the directory above, and relative or absolute: the same
        // sessions, projects one folder deeper.
        let above = [dir.path().join("mnt")];
        assert_eq!(keys(&above, ShardBy::Session), ["s1", "gone", "s2"]);
        assert_eq!(keys(&above, ShardBy::Project), ["projects/p1", "", "projects/p2"]);
        assert_eq!(keys(&above, ShardBy::Root), ["projects", "", "projects"]);
        // One project named: its folder is above the path, so its name.
        assert_eq!(keys(&[r.join("p1")], ShardBy::Project), ["p1"]);
    }

    #[test]
    fn a_transcript_not_named_by_its_session_goes_with_its_session() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        let sid = "c45af7b1-cb7c-4e51-93db-8cbb250a877a";
        // A renamed main transcript and a renamed 2.0.x agent file: their
        // session; a file named by a session id is not read.
        write(&r.join("p/main-copy.jsonl"), &format!("{{\"type\":\"summary\"}}\n{{\"sessionId\":\"{sid}\"}}\n"));
        write(&r.join("p/sidechain.jsonl"), &format!("{{\"isSidechain\":true,\"sessionId\":\"{sid}\"}}\n"));
        write(&r.join("p/0d3c1a9e-54e1-4a7e-9d0b-6a2f8c1e7b55.jsonl"), "{\"sessionId\":\"other\"}\n");
        write(&r.join("p/notes.jsonl"), "{\"type\":\"summary\"}\n");
        let roots = [r.to_path_buf()];
        let d = discover(&roots);
        let mut keys: Vec<String> = d.groups.iter().map(|g| group_key(&d, g, &roots, ShardBy::Session)).collect();
        keys.sort();
        assert_eq!(keys, ["0d3c1a9e-54e1-4a7e-9d0b-6a2f8c1e7b55", sid, sid, "notes"]);
        assert!(is_uuid(sid) && !is_uuid("main-copy") && !is_uuid(&sid.replace('-', "_")));
    }

    #[test]
    fn shards_are_disjoint_and_cover_every_group() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        for p in 0..3 {
            for s in 0..7 {
                write(&r.join(format!("p{p}/s{p}{s}.jsonl")), "{}\n");
                if s % 2 == 0 {
                    write(&r.join(format!("p{p}/s{p}{s}/subagents/agent-x.jsonl")), "{}\n");
                }
            }
        }
        let roots = [r.to_path_buf()];
        let all = discover(&roots);
        for by in [ShardBy::Session, ShardBy::Project, ShardBy::Root] {
            for n in [1, 2, 3, 5] {
                let mut seen: Vec<PathBuf> = Vec::new();
                for k in 0..n {
                    let mut d = discover(&roots);
                    keep_shard(&mut d, &roots, Shard { index: k, count: n }, by);
                    for g in &d.groups {
                        assert!(g.files().all(|i| i < d.files.len()));
                    }
                    assert_eq!(d.groups.iter().map(|g| g.files().count()).sum::<usize>(), d.files.len());
                    seen.extend(d.files.iter().map(|f| f.path.clone()));
                }
                seen.sort();
                let mut want: Vec<PathBuf> = all.files.iter().map(|f| f.path.clone()).collect();
                want.sort();
                assert_eq!(seen, want, "{by} {n}");
            }
        }
    }
}
