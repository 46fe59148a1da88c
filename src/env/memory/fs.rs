//! The logical file system over the snapshot: logical paths of the session
//! mapped onto the on-disk directories of [`super::MemoryRoots`], symlinks
//! followed in logical space, and the reads themselves.
//!
//! This is the only place memory loading touches the disk: a path that does
//! not resolve inside a mount is never read. It knows nothing of memory
//! files, levels or Markdown.

use super::paths::{is_within, normalize};
use std::path::{Path, PathBuf};

/// Symlinks followed while resolving one path before it counts as a loop.
const MAX_SYMLINK_HOPS: usize = 40;

pub(super) struct Mount {
    pub(super) logical: String,
    pub(super) disk: PathBuf,
}

pub(super) struct LogicalFs {
    /// Longest logical prefix first.
    mounts: Vec<Mount>,
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
    pub(super) fn new(mut mounts: Vec<Mount>) -> Self {
        mounts.sort_by_key(|m| std::cmp::Reverse(m.logical.len()));
        LogicalFs { mounts }
    }

    /// The text of a resolved file (invalid UTF-8 replaced, as Node's
    /// `readFile(…, 'utf8')`). Every memory file is read here: the place for
    /// limits on what a snapshot may make ctxasm read.
    pub(super) fn read_text(&self, disk: &Path) -> std::io::Result<String> {
        std::fs::read(disk).map(|b| String::from_utf8_lossy(&b).into_owned())
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

fn components_path(c: &[String]) -> String {
    if c.is_empty() { "/".to_owned() } else { format!("/{}", c.join("/")) }
}
