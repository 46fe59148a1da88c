//! Loading: the walk of Claude Code's `getMemoryFiles` over the logical file
//! system (levels, rules directories, `@include` recursion, auto memory) and
//! the processing of one file (`parseMemoryFileContent`).
//!
//! Owns the order files are met in and the once-per-path bookkeeping. Every
//! byte it reads comes through [`super::fs`]; it must not touch `std::fs`
//! itself, so confinement and size limits stay in one place.

use super::frontmatter::parse_frontmatter_paths;
use super::fs::{LogicalFs, Mount, NodeKind, ReadError, ResolveError};
use super::includes::extract_includes;
use super::markdown::{Block, scan_blocks, strip_comments};
use super::paths::{dirname, extname, is_within, join, js_trim, normalize};
use super::truncate::truncate_entrypoint;
use super::{
    MANAGED_DIR, MAX_INCLUDE_DEPTH, MAX_MEMORY_FILE_BYTES, MAX_MEMORY_SESSION_BYTES, MemoryFile, MemoryKind,
    MemoryRoots, MemoryWarning, TEXT_EXTENSIONS,
};
use std::collections::HashSet;
use std::path::Path;

pub(super) struct Loader<'r> {
    pub(super) roots: &'r MemoryRoots,
    pub(super) fs: LogicalFs,
    pub(super) cwd: String,
    pub(super) home: String,
    pub(super) processed: HashSet<String>,
    pub(super) warnings: Vec<MemoryWarning>,
    /// Bytes the load may still read ([`MAX_MEMORY_SESSION_BYTES`] at the
    /// start).
    pub(super) budget: u64,
}

impl<'r> Loader<'r> {
    pub(super) fn new(roots: &'r MemoryRoots) -> Self {
        let cwd = normalize(&roots.cwd);
        let home = normalize(&roots.home);
        let mut mounts = Vec::new();
        let candidates = [
            (cwd.clone(), &roots.project_dir),
            (join(&home, ".claude"), &roots.home_claude_dir),
            (MANAGED_DIR.to_owned(), &roots.managed_dir),
        ];
        for (logical, disk) in candidates {
            if let Some(disk) = disk {
                mounts.push(Mount { logical, disk: disk.clone() });
            }
        }
        Loader {
            roots,
            fs: LogicalFs::new(mounts),
            cwd,
            home,
            processed: HashSet::new(),
            warnings: Vec::new(),
            budget: MAX_MEMORY_SESSION_BYTES,
        }
    }

    pub(super) fn warn(&mut self, path: &str, message: String) {
        let w = MemoryWarning { path: path.to_owned(), message };
        if !self.warnings.contains(&w) {
            self.warnings.push(w);
        }
    }

    /// Report a path that could not be resolved. A plain probe of a location
    /// the snapshot does not hold (an ancestor directory's CLAUDE.md) is
    /// silent; an include or a link that leads there is refused loudly.
    pub(super) fn report(&mut self, path: &str, parent: Option<&str>, err: ResolveError) {
        match err {
            ResolveError::NotFound => {}
            ResolveError::Outside { target, via_symlink } => {
                if parent.is_some() || via_symlink {
                    let from = parent.map(|p| format!(" (included from {p})")).unwrap_or_default();
                    self.warn(
                        path,
                        format!(
                            "refused: resolves to {target}, outside the snapshot roots (the project, ~/.claude, \
                             {MANAGED_DIR}){from}"
                        ),
                    );
                }
            }
            ResolveError::Loop => self.warn(path, "not loaded: symlink loop".to_owned()),
            ResolveError::Io(e) => self.warn(path, format!("not loaded: {e}")),
        }
    }

    /// The text of the memory file `key` (on disk `disk`), within the caps:
    /// at most [`MAX_MEMORY_FILE_BYTES`] of it and what is left of the
    /// session's [`MAX_MEMORY_SESSION_BYTES`]. A cut, a refusal or an error
    /// is a warning naming the file (and its includer); None when nothing
    /// was read.
    fn read(&mut self, key: &str, disk: &Path, parent: Option<&str>) -> Option<String> {
        let from = parent.map(|p| format!(" (included from {p})")).unwrap_or_default();
        if self.budget == 0 {
            self.warn(
                key,
                format!("not loaded: the session's memory files reached the {MAX_MEMORY_SESSION_BYTES}-byte cap{from}"),
            );
            return None;
        }
        let limit = MAX_MEMORY_FILE_BYTES.min(self.budget);
        match self.fs.read_text(disk, limit) {
            Ok(r) => {
                self.budget -= r.bytes.min(self.budget);
                if let Some(len) = r.cut_from {
                    let cap = if limit == MAX_MEMORY_FILE_BYTES {
                        format!("the {MAX_MEMORY_FILE_BYTES}-byte cap per memory file")
                    } else {
                        format!("what was left of the session's {MAX_MEMORY_SESSION_BYTES}-byte cap")
                    };
                    self.warn(key, format!("cut: {len} bytes on disk, only the first {} read ({cap}){from}", r.bytes));
                }
                Some(r.text)
            }
            Err(ReadError::Outside(canon)) => {
                let msg = format!(
                    "refused: on disk {} lies outside the snapshot roots (the project, ~/.claude, {MANAGED_DIR}){from}",
                    canon.display()
                );
                self.warn(key, msg);
                None
            }
            Err(ReadError::NotRegular) => {
                self.warn(key, format!("not loaded: not a regular file{from}"));
                None
            }
            Err(ReadError::Io(e)) => {
                self.warn(key, format!("not loaded: {e}{from}"));
                None
            }
        }
    }

    /// Claude Code's `processMemoryFile`: `path`, then its includes.
    pub(super) fn process_file(
        &mut self,
        path: &str,
        kind: MemoryKind,
        include_external: bool,
        depth: usize,
        parent: Option<&str>,
        out: &mut Vec<MemoryFile>,
    ) {
        let key = normalize(path);
        if self.processed.contains(&key) || depth >= MAX_INCLUDE_DEPTH {
            return;
        }
        let resolved = self.fs.resolve(&key);
        self.processed.insert(key.clone());
        let r = match resolved {
            Ok(r) => r,
            Err(e) => return self.report(&key, parent, e),
        };
        if r.real != key {
            self.processed.insert(r.real.clone());
        }
        let (Some(disk), NodeKind::File) = (&r.disk, r.kind) else { return };
        let Some(raw) = self.read(&key, disk, parent) else { return };
        let Some(parsed) = parse_memory_content(&raw, &key, kind, self.roots.keep_comments) else { return };
        if js_trim(&parsed.content).is_empty() {
            return;
        }
        let includes = extract_includes(&parsed.lexed, &parsed.blocks, dirname(&r.real), &self.home);
        out.push(MemoryFile {
            path: key.clone(),
            kind,
            content: parsed.content,
            globs: parsed.globs,
            glob_base: None,
            included_from: parent.map(str::to_owned),
        });
        for inc in includes {
            if !include_external && !is_within(&inc, &self.cwd) {
                let msg = format!(
                    "not loaded: @include from {key} is outside the project {}; Claude Code follows it only when \
                     external includes were approved",
                    self.cwd
                );
                self.warn(&inc, msg);
                continue;
            }
            self.process_file(&inc, kind, include_external, depth + 1, Some(&key), out);
        }
    }

    /// Claude Code's `processMdRules`: every `*.md` file of `dir` and its
    /// subdirectories (entries in byte order), keeping the files with globs
    /// (`conditional`) or without.
    pub(super) fn rules_dir(
        &mut self,
        dir: &str,
        kind: MemoryKind,
        include_external: bool,
        conditional: bool,
        visited: &mut HashSet<String>,
        out: &mut Vec<MemoryFile>,
    ) {
        let dir = normalize(dir);
        if visited.contains(&dir) || self.roots.no_rules {
            return;
        }
        let r = match self.fs.resolve(&dir) {
            Ok(r) => r,
            Err(e) => return self.report(&dir, None, e),
        };
        visited.insert(dir.clone());
        visited.insert(r.real.clone());
        let (Some(disk), NodeKind::Dir) = (&r.disk, r.kind) else { return };
        let Some(mut names) = self.fs.list_dir(disk) else { return };
        names.sort_unstable();
        for name in names {
            let entry = join(&dir, &name);
            let er = match self.fs.resolve(&entry) {
                Ok(er) => er,
                Err(e) => {
                    self.report(&entry, None, e);
                    continue;
                }
            };
            match er.kind {
                NodeKind::Dir => self.rules_dir(&er.real, kind, include_external, conditional, visited, out),
                NodeKind::File if name.ends_with(".md") => {
                    let mut files = Vec::new();
                    self.process_file(&er.real, kind, include_external, 0, None, &mut files);
                    out.extend(files.into_iter().filter(|f| f.globs.is_empty() != conditional));
                }
                _ => {}
            }
        }
    }

    /// MEMORY.md: read like a memory file but without includes, trimmed and
    /// truncated to [`MAX_ENTRYPOINT_LINES`] lines / [`MAX_ENTRYPOINT_UNITS`].
    pub(super) fn auto_memory(&mut self, out: &mut Vec<MemoryFile>) {
        let base = self.roots.project_root.as_deref().map(normalize).unwrap_or_else(|| self.cwd.clone());
        let slug: String = base.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
        let path = format!("{}/.claude/projects/{slug}/memory/MEMORY.md", self.home.trim_end_matches('/'));
        let r = match self.fs.resolve(&path) {
            Ok(r) => r,
            Err(e) => return self.report(&path, None, e),
        };
        let (Some(disk), NodeKind::File) = (&r.disk, r.kind) else { return };
        let Some(raw) = self.read(&path, disk, None) else { return };
        let Some(parsed) = parse_memory_content(&raw, &path, MemoryKind::AutoMemory, self.roots.keep_comments) else {
            return;
        };
        if self.processed.insert(path.clone()) {
            out.push(MemoryFile {
                path,
                kind: MemoryKind::AutoMemory,
                content: parsed.content,
                globs: parsed.globs,
                glob_base: None,
                included_from: None,
            });
        }
    }
}

/// The directories from the one below `/` down to `cwd`.
pub(super) fn walk_dirs(cwd: &str) -> Vec<String> {
    let mut dirs = Vec::new();
    let mut d = cwd.to_owned();
    while d != "/" {
        dirs.push(d.clone());
        d = dirname(&d).to_owned();
    }
    dirs.reverse();
    dirs
}

struct Parsed {
    content: String,
    globs: Vec<String>,
    /// The text after the frontmatter with line ends normalised: what the
    /// Markdown scan (comments, includes) sees.
    lexed: String,
    blocks: Vec<Block>,
}

/// Claude Code's `parseMemoryFileContent`: extension check, frontmatter,
/// comment stripping unless `keep_comments` (and MEMORY.md truncation). None
/// for a non-text file.
fn parse_memory_content(raw: &str, path: &str, kind: MemoryKind, keep_comments: bool) -> Option<Parsed> {
    let ext = extname(path).to_ascii_lowercase();
    if !ext.is_empty() && !TEXT_EXTENSIONS.contains(&ext.as_str()) {
        return None;
    }
    let (body, globs) = parse_frontmatter_paths(raw);
    let lexed = body.replace("\r\n", "\n").replace('\r', "\n");
    let blocks = scan_blocks(&lexed);
    let strip = body.contains("<!--") && !keep_comments;
    let mut content = if strip { strip_comments(&lexed, &blocks) } else { body.to_owned() };
    if kind == MemoryKind::AutoMemory {
        content = truncate_entrypoint(&content);
    }
    Some(Parsed { content, globs, lexed, blocks })
}
