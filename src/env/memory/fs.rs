//! The logical file system over the snapshot: logical paths of the session
//! mapped onto the on-disk directories of [`super::MemoryRoots`], symlinks
//! followed in logical space, and the reads themselves.
//!
//! This is the only place memory loading touches the disk: a path that does
//! not resolve inside a mount is never read. It knows nothing of memory
//! files, levels or Markdown.

use super::paths::{is_within, normalize};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Symlinks followed while resolving one path before it counts as a loop.
const MAX_SYMLINK_HOPS: usize = 40;

pub(super) struct Mount {
    pub(super) logical: String,
    pub(super) disk: PathBuf,
}

pub(super) struct LogicalFs {
    /// Longest logical prefix first; each `disk` resolved once
    /// (canonicalized) when the file system is made.
    mounts: Vec<Mount>,
}

/// What [`LogicalFs::read_text`] read.
pub(super) struct ReadText {
    pub(super) text: String,
    /// The file's length on disk when it was cut at the limit.
    pub(super) cut_from: Option<u64>,
    /// Bytes read (what counts against a session's budget).
    pub(super) bytes: u64,
}

/// Why [`LogicalFs::read_text`] read nothing.
#[derive(Debug)]
pub(super) enum ReadError {
    /// On disk the file lies outside every (resolved) snapshot root.
    Outside(PathBuf),
    /// Not a regular file any more (a FIFO would block the read).
    NotRegular,
    Io(std::io::Error),
}

enum Loc {
    /// Inside a mount: this on-disk path.
    Disk(PathBuf),
    /// A strict ancestor of a mount (`/`, `/home`…): a directory with no
    /// other content.
    Virtual,
    Outside,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NodeKind {
    File,
    Dir,
    Other,
}

pub(super) struct Resolved {
    /// The logical path with every symlink resolved.
    pub(super) real: String,
    pub(super) disk: Option<PathBuf>,
    pub(super) kind: NodeKind,
}

#[derive(Debug)]
pub(super) enum ResolveError {
    NotFound,
    Outside { target: String, via_symlink: bool },
    Loop,
    Io(String),
}

impl LogicalFs {
    /// The file system over `mounts`. Each mount's directory is resolved
    /// once here (`canonicalize`): a root that is itself a symlink is the
    /// directory it names, and every read is confined below the resolved
    /// roots. A root that cannot be resolved (missing) keeps its path:
    /// nothing under it resolves.
    pub(super) fn new(mounts: Vec<Mount>) -> Self {
        let mut mounts: Vec<Mount> = mounts
            .into_iter()
            .map(|m| Mount { disk: std::fs::canonicalize(&m.disk).unwrap_or(m.disk), logical: m.logical })
            .collect();
        mounts.sort_by_key(|m| std::cmp::Reverse(m.logical.len()));
        LogicalFs { mounts }
    }

    /// The text of a resolved file (invalid UTF-8 replaced, as Node's
    /// `readFile(…, 'utf8')`), at most `limit` bytes of it (a longer file is
    /// cut there, at a character boundary, and says so in
    /// [`ReadText::cut_from`]). Every memory file is read here: the place for
    /// limits on what a snapshot may make ctxasm read. The file's canonical
    /// path must lie below a resolved root, and it must be a regular file.
    pub(super) fn read_text(&self, disk: &Path, limit: u64) -> Result<ReadText, ReadError> {
        let canon = std::fs::canonicalize(disk).map_err(ReadError::Io)?;
        if !self.mounts.iter().any(|m| canon.starts_with(&m.disk)) {
            return Err(ReadError::Outside(canon));
        }
        // Checked before opening: opening a FIFO for reading blocks.
        if !std::fs::metadata(&canon).map_err(ReadError::Io)?.is_file() {
            return Err(ReadError::NotRegular);
        }
        let file = std::fs::File::open(&canon).map_err(ReadError::Io)?;
        let len = file.metadata().map_err(ReadError::Io)?.len();
        let want = len.min(limit);
        let mut bytes = Vec::with_capacity(usize::try_from(want).unwrap_or(0));
        // One byte past the limit tells a file that grew since fstat.
        file.take(limit.saturating_add(1)).read_to_end(&mut bytes).map_err(ReadError::Io)?;
        let cut = bytes.len() as u64 > limit;
        if cut {
            bytes.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
            cut_partial_char(&mut bytes);
        }
        let n = bytes.len() as u64;
        let text = match String::from_utf8(bytes) {
            Ok(t) => t,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        };
        Ok(ReadText { text, cut_from: cut.then_some(len.max(limit + 1)), bytes: n })
    }

    /// The UTF-8 entry names of a resolved directory, unsorted; `None` when
    /// it cannot be listed.
    pub(super) fn list_dir(&self, disk: &Path) -> Option<Vec<String>> {
        let rd = std::fs::read_dir(disk).ok()?;
        Some(rd.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect())
    }

    fn locate(&self, p: &str) -> Loc {
        for m in &self.mounts {
            if is_within(p, &m.logical) {
                let rel = p[m.logical.len()..].trim_start_matches('/');
                return Loc::Disk(if rel.is_empty() { m.disk.clone() } else { m.disk.join(rel) });
            }
        }
        if self.mounts.iter().any(|m| is_within(&m.logical, p)) { Loc::Virtual } else { Loc::Outside }
    }

    fn is_mount_root(&self, p: &str) -> bool {
        self.mounts.iter().any(|m| m.logical == p)
    }

    /// Resolve `logical` component by component, following the snapshot's
    /// symlinks in logical space (`realpath` semantics: `..` after a link
    /// applies to the link's target).
    pub(super) fn resolve(&self, logical: &str) -> Result<Resolved, ResolveError> {
        let mut pending: Vec<String> = logical.split('/').rev().map(str::to_owned).collect();
        let mut cur: Vec<String> = Vec::new();
        let mut hops = 0;
        let mut via_symlink = false;
        while let Some(c) = pending.pop() {
            match c.as_str() {
                "" | "." => continue,
                ".." => {
                    cur.pop();
                    continue;
                }
                _ => cur.push(c),
            }
            let p = components_path(&cur);
            let disk = match self.locate(&p) {
                Loc::Virtual => continue,
                Loc::Outside => {
                    let rest: Vec<&str> = pending.iter().rev().map(String::as_str).collect();
                    let target = if rest.is_empty() { p } else { normalize(&format!("{p}/{}", rest.join("/"))) };
                    return Err(ResolveError::Outside { target, via_symlink });
                }
                Loc::Disk(d) => d,
            };
            if self.is_mount_root(&p) {
                continue;
            }
            let md = match std::fs::symlink_metadata(&disk) {
                Ok(md) => md,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(ResolveError::NotFound),
                Err(e) => return Err(ResolveError::Io(e.to_string())),
            };
            if md.file_type().is_symlink() {
                hops += 1;
                if hops > MAX_SYMLINK_HOPS {
                    return Err(ResolveError::Loop);
                }
                via_symlink = true;
                let target = std::fs::read_link(&disk).map_err(|e| ResolveError::Io(e.to_string()))?;
                let Some(target) = target.to_str() else {
                    return Err(ResolveError::Io("symlink target is not UTF-8".to_owned()));
                };
                cur.pop();
                if target.starts_with('/') {
                    cur.clear();
                }
                pending.extend(target.split('/').rev().map(str::to_owned));
            } else if !pending.iter().all(|c| c.is_empty() || c == ".") && !md.is_dir() {
                // A file used as a directory (ENOTDIR).
                return Err(ResolveError::NotFound);
            }
        }
        let real = components_path(&cur);
        match self.locate(&real) {
            Loc::Disk(d) => {
                let md = std::fs::metadata(&d).map_err(|e| match e.kind() {
                    std::io::ErrorKind::NotFound => ResolveError::NotFound,
                    _ => ResolveError::Io(e.to_string()),
                })?;
                let kind = if md.is_file() {
                    NodeKind::File
                } else if md.is_dir() {
                    NodeKind::Dir
                } else {
                    NodeKind::Other
                };
                Ok(Resolved { real, disk: Some(d), kind })
            }
            Loc::Virtual => Ok(Resolved { real, disk: None, kind: NodeKind::Dir }),
            Loc::Outside => Err(ResolveError::Outside { target: real, via_symlink }),
        }
    }
}

/// Drop an incomplete UTF-8 sequence at the end of `b` (a cut in the
/// middle of a character).
fn cut_partial_char(b: &mut Vec<u8>) {
    let tail = b.len().saturating_sub(4);
    if let Some(start) = (tail..b.len()).rev().find(|&i| b[i] & 0xC0 != 0x80)
        && std::str::from_utf8(&b[start..]).is_err_and(|e| e.error_len().is_none())
    {
        b.truncate(start);
    }
}

fn components_path(c: &[String]) -> String {
    if c.is_empty() { "/".to_owned() } else { format!("/{}", c.join("/")) }
}
