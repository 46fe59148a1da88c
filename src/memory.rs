//! Memory files: Claude Code's CLAUDE.md system, loaded from a session's
//! environment snapshot and rendered the way the client rendered it.
//!
//! # What is loaded, in order (lowest to highest priority)
//!
//! [`load`] follows `getMemoryFiles` of Claude Code 2.1.88 (the release the
//! 2.1.88 captures come from; the 2.1.328 captures load the same files the
//! same way):
//!
//! 1. managed: `/etc/claude-code/CLAUDE.md`, then the unconditional rules of
//!    `/etc/claude-code/.claude/rules/`;
//! 2. user: `<home>/.claude/CLAUDE.md`, then the unconditional rules of
//!    `<home>/.claude/rules/`;
//! 3. for every directory from the one below the filesystem root down to the
//!    cwd: `CLAUDE.md`, `.claude/CLAUDE.md`, the unconditional rules of
//!    `.claude/rules/` (project), then `CLAUDE.local.md` (local);
//! 4. auto memory: `<home>/.claude/projects/<slug>/memory/MEMORY.md`, `slug`
//!    = the project root with every character outside `[A-Za-z0-9]` replaced
//!    by `-` (the captures' system prompts name exactly this directory).
//!
//! Every file is followed by the files it `@include`s (depth first, the
//! includer first). A file is loaded once: the first time its path is met
//! (the path, and its symlink target, are remembered for the whole load).
//! A file whose content is blank after processing is dropped, and its
//! includes are not followed (MEMORY.md is kept but renders nothing).
//!
//! Rules (`.claude/rules/**/*.md`, directories walked recursively, entries in
//! byte order of their names) with a `paths:` frontmatter are *conditional*:
//! they are not part of [`Memory::files`] but of [`Memory::conditional`], and
//! [`Memory::rules_for`] tells which ones a file read brings in.
//!
//! # Processing of one file
//!
//! - only text extensions are read (`.md`, `.txt`, source files…: the list
//!   of Claude Code, [`TEXT_EXTENSIONS`]); a file without extension is read;
//! - YAML frontmatter (`---` … `---`) is removed from every file; its
//!   `paths:` (a comma-separated string or a list, `{a,b}` expanded, a
//!   trailing `/**` dropped) are the rule's globs;
//! - HTML block comments (a top-level Markdown HTML block that starts with
//!   `<!--` and holds its `-->`) are removed; text after `-->` on the same
//!   line is kept; comments inside paragraphs, lists, quotes and code, and an
//!   unterminated `<!--`, are kept. When a file holds `<!--`, its line ends
//!   are normalised to `\n` (Claude Code rebuilds it from the Markdown
//!   lexer's tokens, which normalise them);
//! - `@path` includes are found in Markdown text outside code blocks and
//!   code spans, after whitespace or at the start of a text run: `@./x`,
//!   `@~/x`, `@/abs/x`, or `@x` starting with `[A-Za-z0-9._-]`; a `#fragment`
//!   is cut, `\ ` is a space; relative paths are relative to the including
//!   file's directory (after symlinks). Depth is limited to
//!   [`MAX_INCLUDE_DEPTH`] (the top-level file is depth 0: four levels of
//!   nested includes are loaded). A project, local or managed file may only
//!   include files inside the cwd unless
//!   [`MemoryRoots::external_includes_approved`]; user files may include any
//!   path.
//!
//! # Logical paths and the snapshot
//!
//! Every path is a *logical* path of the session (`/home/dev/projects/x`);
//! files are read from the on-disk snapshot through [`MemoryRoots`]: the cwd,
//! `<home>/.claude` and `/etc/claude-code` map to directories of the snapshot,
//! nothing else exists. Symlinks of the snapshot are followed in logical
//! space (an absolute target is a logical path), component by component, so a
//! link can never reach a file outside the snapshot; a loop is cut after 40
//! links. Transcripts and snapshots are untrusted input: an include or a link
//! that leads outside the roots is refused with a [`MemoryWarning`] (the
//! caller turns those into diagnostics), never read.
//!
//! # Not covered
//!
//! - directories *below* the cwd: Claude Code loads their `CLAUDE.md`,
//!   `CLAUDE.local.md` and rules as `nested_memory` when a file in them is
//!   read; only the conditional rules of the cwd, its ancestors, the user and
//!   managed levels are here;
//! - the `claudeMdExcludes` and `settingSources` settings, `--add-dir`
//!   directories, the git-worktree skip, team memory, feature flags that
//!   drop levels; CLAUDE.md files of the cwd's ancestors (the snapshot holds
//!   only the cwd, `~/.claude` and the managed directory);
//! - NFC normalisation of include paths, auto-memory slugs over 200
//!   characters (Claude Code shortens them with a hash);
//! - the Markdown scan is a line-based approximation of marked's lexer
//!   (fences, indented code, HTML blocks, lists, quotes, code spans, links,
//!   emphasis openers); unusual nesting may differ.
//!
//! # Rendering
//!
//! - [`Memory::render_claude_md`]: the `claudeMd` user-context value. 2.1.88
//!   sends it as `# claudeMd\n<it>\n# currentDate\n…` inside the
//!   `As you answer the user's questions…` reminder (messages\[0\] block 1);
//!   2.1.328 sends it as its own `instructions` attachment,
//!   `<system-reminder>\n<it>\n</system-reminder>`
//!   ([`Memory::render_instructions_reminder`]). Checked byte for byte on
//!   every captured scenario of both releases.
//! - [`Memory::render_rule_reminder`]: the `nested_memory` reminder a
//!   conditional rule adds when a matching file is read.

use globset::{GlobBuilder, GlobMatcher};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The text that opens the `claudeMd` value (Claude Code's
/// `MEMORY_INSTRUCTION_PROMPT`).
pub const MEMORY_INSTRUCTION_PROMPT: &str = "Codebase and user instructions are shown below. Be sure to adhere to these instructions. IMPORTANT: These instructions OVERRIDE any default behavior and you MUST follow them exactly as written.";

/// A file reached at this include depth is not loaded (the top-level file is
/// depth 0).
pub const MAX_INCLUDE_DEPTH: usize = 5;

/// The logical managed-policy directory (Linux).
pub const MANAGED_DIR: &str = "/etc/claude-code";

/// Lines of MEMORY.md kept (Claude Code's `MAX_ENTRYPOINT_LINES`).
pub const MAX_ENTRYPOINT_LINES: usize = 200;

/// UTF-16 code units of MEMORY.md kept (Claude Code's `MAX_ENTRYPOINT_BYTES`,
/// which measures `string.length`).
pub const MAX_ENTRYPOINT_UNITS: usize = 25_000;

/// Symlinks followed while resolving one path before it counts as a loop.
const MAX_SYMLINK_HOPS: usize = 40;

/// The extensions a memory file may have (compared lowercased; a file without
/// extension is allowed). Claude Code's `TEXT_FILE_EXTENSIONS`.
pub const TEXT_EXTENSIONS: &[&str] = &[
    ".md",
    ".txt",
    ".text",
    ".json",
    ".yaml",
    ".yml",
    ".toml",
    ".xml",
    ".csv",
    ".html",
    ".htm",
    ".css",
    ".scss",
    ".sass",
    ".less",
    ".js",
    ".ts",
    ".tsx",
    ".jsx",
    ".mjs",
    ".cjs",
    ".mts",
    ".cts",
    ".py",
    ".pyi",
    ".pyw",
    ".rb",
    ".erb",
    ".rake",
    ".go",
    ".rs",
    ".java",
    ".kt",
    ".kts",
    ".scala",
    ".c",
    ".cpp",
    ".cc",
    ".cxx",
    ".h",
    ".hpp",
    ".hxx",
    ".cs",
    ".swift",
    ".sh",
    ".bash",
    ".zsh",
    ".fish",
    ".ps1",
    ".bat",
    ".cmd",
    ".env",
    ".ini",
    ".cfg",
    ".conf",
    ".config",
    ".properties",
    ".sql",
    ".graphql",
    ".gql",
    ".proto",
    ".vue",
    ".svelte",
    ".astro",
    ".ejs",
    ".hbs",
    ".pug",
    ".jade",
    ".php",
    ".pl",
    ".pm",
    ".lua",
    ".r",
    ".dart",
    ".ex",
    ".exs",
    ".erl",
    ".hrl",
    ".clj",
    ".cljs",
    ".cljc",
    ".edn",
    ".hs",
    ".lhs",
    ".elm",
    ".ml",
    ".mli",
    ".f",
    ".f90",
    ".f95",
    ".for",
    ".cmake",
    ".make",
    ".makefile",
    ".gradle",
    ".sbt",
    ".rst",
    ".adoc",
    ".asciidoc",
    ".org",
    ".tex",
    ".latex",
    ".lock",
    ".log",
    ".diff",
    ".patch",
];

/// Where the session's files are: its logical paths and the on-disk snapshot
/// of each root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryRoots {
    /// Logical cwd of the session (absolute).
    pub cwd: String,
    /// Logical home directory (absolute).
    pub home: String,
    /// On-disk copy of the cwd.
    pub project_dir: Option<PathBuf>,
    /// On-disk copy of `<home>/.claude`.
    pub home_claude_dir: Option<PathBuf>,
    /// On-disk copy of [`MANAGED_DIR`].
    pub managed_dir: Option<PathBuf>,
    /// The project's `hasClaudeMdExternalIncludesApproved`: project, local and
    /// managed files may include files outside the cwd. Default false.
    pub external_includes_approved: bool,
    /// Load `MEMORY.md` (auto memory was on in every capture). Default true.
    pub auto_memory: bool,
    /// The canonical git root when it is not the cwd: the auto-memory slug is
    /// made from it. None = the cwd.
    pub project_root: Option<String>,
}

impl MemoryRoots {
    /// Roots with no snapshot directory yet, auto memory on, external
    /// includes not approved.
    pub fn new(cwd: &str, home: &str) -> Self {
        MemoryRoots {
            cwd: normalize(cwd),
            home: normalize(home),
            project_dir: None,
            home_claude_dir: None,
            managed_dir: None,
            external_includes_approved: false,
            auto_memory: true,
            project_root: None,
        }
    }

    /// Roots of a captured environment directory: `env.json` (`cwd`, `home`),
    /// `project/` (the cwd) and `home/.claude/`, each when present.
    pub fn from_env_dir(env_dir: &Path) -> std::io::Result<Self> {
        let bytes = std::fs::read(env_dir.join("env.json"))?;
        let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(std::io::Error::other)?;
        let field = |k: &str| {
            v.get(k)
                .and_then(|x| x.as_str())
                .map(str::to_owned)
                .ok_or_else(|| std::io::Error::other(format!("env.json has no string `{k}`")))
        };
        let mut roots = MemoryRoots::new(&field("cwd")?, &field("home")?);
        let project = env_dir.join("project");
        roots.project_dir = project.is_dir().then_some(project);
        let claude = env_dir.join("home").join(".claude");
        roots.home_claude_dir = claude.is_dir().then_some(claude);
        Ok(roots)
    }
}

/// Which level a memory file belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemoryKind {
    Managed,
    User,
    Project,
    Local,
    AutoMemory,
}

impl MemoryKind {
    /// Claude Code's name of the type (the `type` of a 2.1.328 `instructions`
    /// attachment's files).
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryKind::Managed => "Managed",
            MemoryKind::User => "User",
            MemoryKind::Project => "Project",
            MemoryKind::Local => "Local",
            MemoryKind::AutoMemory => "AutoMem",
        }
    }

    /// The parenthesised description after the path in `claudeMd` (checked on
    /// the user, project and local files of the memory-files captures; managed
    /// files share the user text in Claude Code, auto memory has its own).
    pub fn description(self) -> &'static str {
        match self {
            MemoryKind::Project => "project instructions, checked into the codebase",
            MemoryKind::Local => "user's private project instructions, not checked in",
            MemoryKind::AutoMemory => "user's auto-memory, persists across conversations",
            MemoryKind::Managed | MemoryKind::User => "user's private global instructions for all projects",
        }
    }
}

/// One loaded memory file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryFile {
    /// Logical path, as rendered. For a rule file reached through a symlink,
    /// the link's target (as Claude Code).
    pub path: String,
    pub kind: MemoryKind,
    /// Content after frontmatter removal and comment stripping (MEMORY.md:
    /// trimmed and truncated). Not trimmed otherwise: `claudeMd` trims it, the
    /// rule reminder does not.
    pub content: String,
    /// The `paths:` globs after normalisation (`src/api/**` → `src/api`, as
    /// the 2.1.328 `nested_memory` attachment records them). Empty = none.
    pub globs: Vec<String>,
    /// The directory globs are relative to: for a project rule the directory
    /// holding its `.claude`, else the cwd. Set on conditional rules only.
    pub glob_base: Option<String>,
    /// The file whose `@include` loaded this one.
    pub included_from: Option<String>,
}

/// A path that was not loaded for a reason the caller should report (an
/// include or link leading outside the snapshot roots, a symlink loop, an
/// unreadable file). Loading goes on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryWarning {
    /// The logical path concerned.
    pub path: String,
    pub message: String,
}

/// The memory of a session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Memory {
    /// Files loaded at start, in priority order (lowest first), each followed
    /// by its includes. This is Claude Code's `getMemoryFiles()` list: all
    /// are rendered, even a `CLAUDE.md` with `paths:` (only rules are made
    /// conditional by their globs).
    pub files: Vec<MemoryFile>,
    /// Conditional rules (managed, user, then each directory from the root
    /// down to the cwd), brought in by [`Memory::rules_for`].
    pub conditional: Vec<MemoryFile>,
    pub warnings: Vec<MemoryWarning>,
}

/// Load every memory file of the session described by `roots`.
pub fn load(roots: &MemoryRoots) -> Memory {
    let mut l = Loader::new(roots);
    let approved = roots.external_includes_approved;
    let mut files = Vec::new();
    let managed_rules = format!("{MANAGED_DIR}/.claude/rules");
    let user_claude = join(&l.home, ".claude");
    let user_rules = join(&user_claude, "rules");
    let dirs = walk_dirs(&l.cwd);

    l.process_file(&join(MANAGED_DIR, "CLAUDE.md"), MemoryKind::Managed, approved, 0, None, &mut files);
    l.rules_dir(&managed_rules, MemoryKind::Managed, approved, false, &mut HashSet::new(), &mut files);
    l.process_file(&join(&user_claude, "CLAUDE.md"), MemoryKind::User, true, 0, None, &mut files);
    l.rules_dir(&user_rules, MemoryKind::User, true, false, &mut HashSet::new(), &mut files);
    for dir in &dirs {
        l.process_file(&join(dir, "CLAUDE.md"), MemoryKind::Project, approved, 0, None, &mut files);
        l.process_file(&join(dir, ".claude/CLAUDE.md"), MemoryKind::Project, approved, 0, None, &mut files);
        let rules = join(dir, ".claude/rules");
        l.rules_dir(&rules, MemoryKind::Project, approved, false, &mut HashSet::new(), &mut files);
        l.process_file(&join(dir, "CLAUDE.local.md"), MemoryKind::Local, approved, 0, None, &mut files);
    }
    if roots.auto_memory {
        l.auto_memory(&mut files);
    }

    // Conditional rules: a pass of their own, with a fresh set of processed
    // paths (the start-up pass has marked them processed), keeping only files
    // with globs. Claude Code runs this pass for each file read; its result
    // only depends on the snapshot, so it is done once here.
    l.processed.clear();
    let mut conditional = Vec::new();
    let passes: Vec<(String, MemoryKind, bool, String)> = [
        (managed_rules, MemoryKind::Managed, false, l.cwd.clone()),
        (user_rules, MemoryKind::User, true, l.cwd.clone()),
    ]
    .into_iter()
    .chain(dirs.iter().map(|d| (join(d, ".claude/rules"), MemoryKind::Project, false, d.clone())))
    .collect();
    for (dir, kind, external, base) in passes {
        let start = conditional.len();
        l.rules_dir(&dir, kind, external, true, &mut HashSet::new(), &mut conditional);
        for f in &mut conditional[start..] {
            f.glob_base = Some(base.clone());
        }
    }
    Memory { files, conditional, warnings: l.warnings }
}

impl Memory {
    /// The `claudeMd` user-context value: [`MEMORY_INSTRUCTION_PROMPT`], then
    /// for each file with content, `Contents of <path> (<description>):\n\n`
    /// followed by its content trimmed (JavaScript `trim`), all joined by `\n\n`;
    /// None when no file has content (the section is then absent).
    ///
    /// Checked on tests/fixtures/cc-2.1.88/*/wire.jsonl (the text between
    /// `# claudeMd\n` and `\n# currentDate` of the first request) and
    /// cc-2.1.328/*/ (the `instructions` attachment).
    pub fn render_claude_md(&self) -> Option<String> {
        let parts: Vec<String> = self
            .files
            .iter()
            .filter(|f| !f.content.is_empty())
            .map(|f| format!("Contents of {} ({}):\n\n{}", f.path, f.kind.description(), js_trim(&f.content)))
            .collect();
        if parts.is_empty() {
            return None;
        }
        Some(format!("{MEMORY_INSTRUCTION_PROMPT}\n\n{}", parts.join("\n\n")))
    }

    /// The 2.1.328 `instructions` attachment text:
    /// `<system-reminder>\n` + [`Memory::render_claude_md`] +
    /// `\n</system-reminder>` (checked on cc-2.1.328/memory-files and
    /// bash-tool).
    pub fn render_instructions_reminder(&self) -> Option<String> {
        self.render_claude_md().map(|t| system_reminder(&t))
    }

    /// Conditional rules whose globs match `file`, a logical path that was
    /// read (absolute; a relative path is taken as already relative to the
    /// rule's base). Globs match the path relative to the rule's
    /// [`MemoryFile::glob_base`] with `.gitignore` semantics (the `ignore`
    /// package Claude Code uses: case-insensitive, a pattern without `/`
    /// matches at any depth, a matching directory matches everything below
    /// it, `!` negates). A file outside the base matches nothing.
    ///
    /// Claude Code adds each rule once per session; the caller keeps track
    /// of the rules already added.
    pub fn rules_for(&self, file: &str) -> Vec<&MemoryFile> {
        self.conditional
            .iter()
            .filter(|r| {
                let rel = if file.starts_with('/') {
                    let base = r.glob_base.as_deref().unwrap_or("/");
                    match relative(base, &normalize(file)) {
                        Some(rel) => rel,
                        None => return false,
                    }
                } else {
                    file.to_owned()
                };
                !rel.is_empty() && ignore_matches(&r.globs, &rel)
            })
            .collect()
    }

    /// The reminder a conditional rule adds when a matching file is read:
    /// `<system-reminder>\nContents of <path>:\n\n<content>\n</system-reminder>`,
    /// content not trimmed (`API rules apply.\n` gives `…apply.\n\n</system-reminder>`).
    ///
    /// 2.1.328 sends it as its own text block after the tool_result (the
    /// `nested_memory` attachment's `rendered`, cc-2.1.328/memory-files).
    /// 2.1.88 smooshes it into a string tool_result:
    /// [`append_to_tool_result`] (cc-2.1.88/memory-files wire line 2).
    pub fn render_rule_reminder(rule: &MemoryFile) -> String {
        system_reminder(&format!("Contents of {}:\n\n{}", rule.path, rule.content))
    }
}

/// How 2.1.88 appends a reminder to a string tool_result: the tool_result
/// text trimmed, `\n\n`, the reminder. Checked on cc-2.1.88/memory-files (the
/// recorded text ends with `</system-reminder>\n`, the wire has
/// `</system-reminder>\n\n<system-reminder>\nContents of …`) and long-session
/// (a text without final newline gets `\n\n` before the todo reminder).
pub fn append_to_tool_result(tool_result: &str, reminder: &str) -> String {
    format!("{}\n\n{}", js_trim(tool_result), reminder)
}

fn system_reminder(text: &str) -> String {
    format!("<system-reminder>\n{text}\n</system-reminder>")
}

// ---------------------------------------------------------------------------
// Loading
// ---------------------------------------------------------------------------

struct Loader<'r> {
    roots: &'r MemoryRoots,
    fs: LogicalFs,
    cwd: String,
    home: String,
    processed: HashSet<String>,
    warnings: Vec<MemoryWarning>,
}

impl<'r> Loader<'r> {
    fn new(roots: &'r MemoryRoots) -> Self {
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
        mounts.sort_by_key(|m| std::cmp::Reverse(m.logical.len()));
        Loader { roots, fs: LogicalFs { mounts }, cwd, home, processed: HashSet::new(), warnings: Vec::new() }
    }

    fn warn(&mut self, path: &str, message: String) {
        let w = MemoryWarning { path: path.to_owned(), message };
        if !self.warnings.contains(&w) {
            self.warnings.push(w);
        }
    }

    /// Report a path that could not be resolved. A plain probe of a location
    /// the snapshot does not hold (an ancestor directory's CLAUDE.md) is
    /// silent; an include or a link that leads there is refused loudly.
    fn report(&mut self, path: &str, parent: Option<&str>, err: ResolveError) {
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

    /// Claude Code's `processMemoryFile`: `path`, then its includes.
    fn process_file(
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
        let raw = match std::fs::read(disk) {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(e) => return self.warn(&key, format!("not loaded: {e}")),
        };
        let Some(parsed) = parse_memory_content(&raw, &key, kind) else { return };
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
    fn rules_dir(
        &mut self,
        dir: &str,
        kind: MemoryKind,
        include_external: bool,
        conditional: bool,
        visited: &mut HashSet<String>,
        out: &mut Vec<MemoryFile>,
    ) {
        let dir = normalize(dir);
        if visited.contains(&dir) {
            return;
        }
        let r = match self.fs.resolve(&dir) {
            Ok(r) => r,
            Err(e) => return self.report(&dir, None, e),
        };
        visited.insert(dir.clone());
        visited.insert(r.real.clone());
        let (Some(disk), NodeKind::Dir) = (&r.disk, r.kind) else { return };
        let Ok(rd) = std::fs::read_dir(disk) else { return };
        let mut names: Vec<String> = rd.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect();
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
    fn auto_memory(&mut self, out: &mut Vec<MemoryFile>) {
        let base = self.roots.project_root.as_deref().map(normalize).unwrap_or_else(|| self.cwd.clone());
        let slug: String = base.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
        let path = format!("{}/.claude/projects/{slug}/memory/MEMORY.md", self.home.trim_end_matches('/'));
        let r = match self.fs.resolve(&path) {
            Ok(r) => r,
            Err(e) => return self.report(&path, None, e),
        };
        let (Some(disk), NodeKind::File) = (&r.disk, r.kind) else { return };
        let raw = match std::fs::read(disk) {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(e) => return self.warn(&path, format!("not loaded: {e}")),
        };
        let Some(parsed) = parse_memory_content(&raw, &path, MemoryKind::AutoMemory) else { return };
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
fn walk_dirs(cwd: &str) -> Vec<String> {
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
/// comment stripping (and MEMORY.md truncation). None for a non-text file.
fn parse_memory_content(raw: &str, path: &str, kind: MemoryKind) -> Option<Parsed> {
    let ext = extname(path).to_ascii_lowercase();
    if !ext.is_empty() && !TEXT_EXTENSIONS.contains(&ext.as_str()) {
        return None;
    }
    let (body, globs) = parse_frontmatter_paths(raw);
    let lexed = body.replace("\r\n", "\n").replace('\r', "\n");
    let blocks = scan_blocks(&lexed);
    let mut content = if body.contains("<!--") { strip_comments(&lexed, &blocks) } else { body.to_owned() };
    if kind == MemoryKind::AutoMemory {
        content = truncate_entrypoint(&content);
    }
    Some(Parsed { content, globs, lexed, blocks })
}

// ---------------------------------------------------------------------------
// Logical file system over the snapshot
// ---------------------------------------------------------------------------

struct Mount {
    logical: String,
    disk: PathBuf,
}

struct LogicalFs {
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
enum NodeKind {
    File,
    Dir,
    Other,
}

struct Resolved {
    /// The logical path with every symlink resolved.
    real: String,
    disk: Option<PathBuf>,
    kind: NodeKind,
}

#[derive(Debug)]
enum ResolveError {
    NotFound,
    Outside { target: String, via_symlink: bool },
    Loop,
    Io(String),
}

impl LogicalFs {
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
    fn resolve(&self, logical: &str) -> Result<Resolved, ResolveError> {
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

// ---------------------------------------------------------------------------
// Logical path helpers (POSIX, lexical)
// ---------------------------------------------------------------------------

/// Lexically normalised absolute path (`.`, `..`, `//` and a trailing `/`
/// removed); a relative path is taken from `/`.
fn normalize(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    if parts.is_empty() { "/".to_owned() } else { format!("/{}", parts.join("/")) }
}

fn join(dir: &str, rel: &str) -> String {
    normalize(&format!("{dir}/{rel}"))
}

/// `p` is `dir` or below it (both normalised).
fn is_within(p: &str, dir: &str) -> bool {
    dir == "/" || p == dir || (p.starts_with(dir) && p.as_bytes().get(dir.len()) == Some(&b'/'))
}

fn dirname(p: &str) -> &str {
    match p.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &p[..i],
    }
}

/// `target` relative to `base` when it is below it (`""` when equal).
fn relative(base: &str, target: &str) -> Option<String> {
    is_within(target, base).then(|| target[base.len().min(target.len())..].trim_start_matches('/').to_owned())
}

/// Node's `path.extname`: from the last `.` of the base name, `""` when the
/// name has no dot or only a leading one.
fn extname(p: &str) -> &str {
    let base = &p[p.rfind('/').map_or(0, |i| i + 1)..];
    match base.rfind('.') {
        Some(i) if i > 0 && base != ".." => &base[i..],
        _ => "",
    }
}

/// JavaScript's `\s` / `trim` whitespace.
fn js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}'
    )
}

fn js_trim(s: &str) -> &str {
    s.trim_matches(js_space)
}

// ---------------------------------------------------------------------------
// Frontmatter
// ---------------------------------------------------------------------------

/// Claude Code's `parseFrontmatterPaths`: the content after the frontmatter
/// and the normalised `paths:` globs (a trailing `/**` dropped; none when
/// empty or all `**`).
fn parse_frontmatter_paths(raw: &str) -> (&str, Vec<String>) {
    let Some((yaml, content)) = split_frontmatter(raw) else { return (raw, Vec::new()) };
    let globs: Vec<String> = frontmatter_paths(yaml)
        .into_iter()
        .flat_map(|v| split_paths(&v))
        .map(|p| p.strip_suffix("/**").map(str::to_owned).unwrap_or(p))
        .filter(|p| !p.is_empty())
        .collect();
    if globs.iter().all(|g| g == "**") {
        return (content, Vec::new());
    }
    (content, globs)
}

/// `FRONTMATTER_REGEX = /^---\s*\n([\s\S]*?)---\s*\n?/`: the YAML text and
/// the content after the match (all whitespace after the closing `---` is
/// part of the match).
fn split_frontmatter(raw: &str) -> Option<(&str, &str)> {
    let s = raw.strip_prefix("---")?;
    let ws = s.len() - s.trim_start_matches(js_space).len();
    let body = &s[s[..ws].rfind('\n')? + 1..];
    let close = body.find("---")?;
    Some((&body[..close], body[close + 3..].trim_start_matches(js_space)))
}

/// The `paths` value of the YAML frontmatter as a list of strings (a scalar
/// gives one string). Only the forms Claude Code documents are understood:
/// `paths: a, b`, `paths: "a"`, `paths: [a, b]` and a block list.
fn frontmatter_paths(yaml: &str) -> Vec<String> {
    let lines: Vec<&str> = yaml.lines().collect();
    let Some(i) = lines.iter().position(|l| l.starts_with("paths:")) else { return Vec::new() };
    let value = lines[i]["paths:".len()..].trim();
    if !value.is_empty() && !value.starts_with('#') {
        if let Some(inner) = value.strip_prefix('[') {
            let inner = inner.rsplit_once(']').map_or(inner, |(a, _)| a);
            return split_outside(inner, ',').iter().map(|s| yaml_scalar(s)).filter(|s| !s.is_empty()).collect();
        }
        return vec![yaml_scalar(value)];
    }
    let mut items = Vec::new();
    for l in &lines[i + 1..] {
        let t = l.trim();
        if t.is_empty() {
            continue;
        }
        match t.strip_prefix('-') {
            Some(item) if item.is_empty() || item.starts_with([' ', '\t']) => items.push(yaml_scalar(item.trim())),
            _ => break,
        }
    }
    items
}

/// A YAML scalar: quoted (`"…"` with escapes, `'…'`) or plain (a ` #`
/// comment cut).
fn yaml_scalar(s: &str) -> String {
    let s = s.trim();
    if let Some(inner) = s.strip_prefix('"').and_then(|r| r.rfind('"').map(|i| &r[..i])) {
        let mut out = String::new();
        let mut it = inner.chars();
        while let Some(c) = it.next() {
            if c == '\\' {
                match it.next() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some(o) => out.push(o),
                    None => {}
                }
            } else {
                out.push(c);
            }
        }
        return out;
    }
    if let Some(inner) = s.strip_prefix('\'').and_then(|r| r.rfind('\'').map(|i| &r[..i])) {
        return inner.replace("''", "'");
    }
    let cut = s.find(" #").map_or(s, |i| &s[..i]);
    cut.trim().to_owned()
}

/// Split on `sep` outside `{…}` and quotes.
fn split_outside(s: &str, sep: char) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    for c in s.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (None, '"' | '\'') => quote = Some(c),
            (None, '{') => depth += 1,
            (None, '}') => depth -= 1,
            (None, c) if c == sep && depth == 0 => {
                parts.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    parts.push(cur);
    parts
}

/// Claude Code's `splitPathInFrontmatter`: split on commas outside braces,
/// trim, drop empty parts, expand braces.
fn split_paths(s: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut depth = 0i32;
    for c in s.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    parts.push(cur);
    parts.iter().map(|p| p.trim()).filter(|p| !p.is_empty()).flat_map(expand_braces).collect()
}

/// `^([^{]*)\{([^}]+)\}(.*)$` expanded recursively (alternatives trimmed).
fn expand_braces(p: &str) -> Vec<String> {
    let Some(open) = p.find('{') else { return vec![p.to_owned()] };
    let Some(close) = p[open..].find('}').map(|i| open + i) else { return vec![p.to_owned()] };
    if close == open + 1 {
        return vec![p.to_owned()];
    }
    let (prefix, alts, suffix) = (&p[..open], &p[open + 1..close], &p[close + 1..]);
    alts.split(',').flat_map(|a| expand_braces(&format!("{prefix}{}{suffix}", a.trim()))).collect()
}

// ---------------------------------------------------------------------------
// Glob matching (the `ignore` package's .gitignore semantics)
// ---------------------------------------------------------------------------

struct IgnoreRule {
    negated: bool,
    dir_only: bool,
    glob: GlobMatcher,
}

fn compile_ignore(patterns: &[String]) -> Vec<IgnoreRule> {
    let mut rules = Vec::new();
    for p in patterns {
        let mut p = p.trim_end_matches(' ');
        if p.is_empty() || p.starts_with('#') {
            continue;
        }
        let negated = p.starts_with('!');
        if negated {
            p = &p[1..];
        }
        let p = p.strip_prefix('\\').filter(|r| r.starts_with(['#', '!'])).unwrap_or(p);
        let dir_only = p.ends_with('/');
        let p = p.trim_end_matches('/');
        let anchored = p.contains('/');
        let p = p.trim_start_matches('/');
        if p.is_empty() {
            continue;
        }
        let glob = if anchored { p.to_owned() } else { format!("**/{p}") };
        let built =
            GlobBuilder::new(&glob).literal_separator(true).case_insensitive(true).backslash_escape(true).build();
        if let Ok(g) = built {
            rules.push(IgnoreRule { negated, dir_only, glob: g.compile_matcher() });
        }
    }
    rules
}

/// `ignore().add(patterns).ignores(rel)`: a path is ignored when one of its
/// parent directories is, else when the last matching pattern is not a
/// negation.
fn ignore_matches(patterns: &[String], rel: &str) -> bool {
    let rules = compile_ignore(patterns);
    let parts: Vec<&str> = rel.split('/').filter(|c| !c.is_empty()).collect();
    let test = |path: &str, is_dir: bool| {
        let mut ignored = false;
        for r in &rules {
            if (!r.dir_only || is_dir) && r.glob.is_match(path) {
                ignored = !r.negated;
            }
        }
        ignored
    };
    for k in 1..parts.len() {
        if test(&parts[..k].join("/"), true) {
            return true;
        }
    }
    !parts.is_empty() && test(&parts.join("/"), rel.ends_with('/'))
}

// ---------------------------------------------------------------------------
// Markdown: top-level blocks (an approximation of marked's block lexer)
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    /// Paragraph, list, quote or other inline-bearing lines.
    Text,
    /// An ATX heading line (a text run of its own).
    Heading,
    /// Fenced or indented code.
    Code,
    /// An HTML block that is not a comment.
    Html,
    /// An HTML block starting with `<!--`: its raw text runs to the end of
    /// the line holding `-->` (or to the end of the text when there is none)
    /// and the newlines after it.
    Comment,
    Blank,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Block {
    start: usize,
    end: usize,
    kind: BlockKind,
}

/// The end of the line starting at `pos` (after its `\n`).
fn line_end(s: &str, pos: usize) -> usize {
    s[pos..].find('\n').map_or(s.len(), |i| pos + i + 1)
}

/// Indentation in columns (tab stops of 4) and in bytes.
fn indent_of(line: &str) -> (usize, usize) {
    let mut cols = 0;
    for (i, b) in line.bytes().enumerate() {
        match b {
            b' ' => cols += 1,
            b'\t' => cols += 4 - cols % 4,
            _ => return (cols, i),
        }
    }
    (cols, line.len())
}

fn is_blank(line: &str) -> bool {
    line.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
}

fn fence_open(rest: &str) -> Option<(u8, usize)> {
    let ch = *rest.as_bytes().first()?;
    if ch != b'`' && ch != b'~' {
        return None;
    }
    let n = rest.bytes().take_while(|&c| c == ch).count();
    if n < 3 || (ch == b'`' && rest[n..].contains('`')) {
        return None;
    }
    Some((ch, n))
}

fn fence_closes(rest: &str, ch: u8, n: usize) -> bool {
    rest.len() >= n
        && rest.bytes().take(n).all(|c| c == ch)
        && rest[n..].trim_end_matches([' ', '\r', '\n']).bytes().all(|c| c == b'`' || c == b'~')
}

/// The end of a fenced block opened on the line ending at `from`: after its
/// closing fence line, or the end of the text.
fn fence_end(src: &str, from: usize, ch: u8, n: usize, max_indent: usize) -> usize {
    let mut pos = from;
    while pos < src.len() {
        let le = line_end(src, pos);
        let (ind, ib) = indent_of(&src[pos..le]);
        if ind <= max_indent && fence_closes(&src[pos + ib..le], ch, n) {
            return le;
        }
        pos = le;
    }
    src.len()
}

/// The text of a block-quote line after its `>` markers.
fn strip_quote(mut s: &str) -> &str {
    loop {
        let t = s.trim_start_matches(' ');
        match t.strip_prefix('>') {
            Some(r) => s = r.strip_prefix(' ').unwrap_or(r),
            None => return s,
        }
    }
}

/// Width of a list marker and the spaces after it (the item's content
/// indent), when `rest` starts a list item.
fn list_marker(rest: &str) -> Option<usize> {
    let b = rest.as_bytes();
    let m = match b.first()? {
        b'-' | b'*' | b'+' => 1,
        b'0'..=b'9' => {
            let d = b.iter().take_while(|c| c.is_ascii_digit()).count();
            if d > 9 || !matches!(b.get(d), Some(b'.' | b')')) {
                return None;
            }
            d + 1
        }
        _ => return None,
    };
    let after = &rest[m..];
    let body = after.trim_end_matches(['\n', '\r']);
    if body.is_empty() {
        return Some(m + 1);
    }
    let sp = body.bytes().take_while(|&c| c == b' ' || c == b'\t').count();
    match sp {
        0 => None,
        1..=4 if sp < body.len() => Some(m + sp),
        _ => Some(m + 1),
    }
}

fn is_atx_heading(rest: &str) -> bool {
    let n = rest.bytes().take_while(|&c| c == b'#').count();
    (1..=6).contains(&n) && rest[n..].bytes().next().is_none_or(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
}

fn is_hr(rest: &str) -> bool {
    let t: Vec<u8> = rest.bytes().filter(|c| !matches!(c, b' ' | b'\t' | b'\n' | b'\r')).collect();
    t.len() >= 3 && matches!(t[0], b'-' | b'*' | b'_') && t.iter().all(|&c| c == t[0])
}

const BLOCK_TAGS: &[&str] = &[
    "address",
    "article",
    "aside",
    "base",
    "basefont",
    "blockquote",
    "body",
    "caption",
    "center",
    "col",
    "colgroup",
    "dd",
    "details",
    "dialog",
    "dir",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "frame",
    "frameset",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "head",
    "header",
    "hr",
    "html",
    "iframe",
    "legend",
    "li",
    "link",
    "main",
    "menu",
    "menuitem",
    "meta",
    "nav",
    "noframes",
    "ol",
    "optgroup",
    "option",
    "p",
    "param",
    "search",
    "section",
    "summary",
    "table",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "title",
    "tr",
    "track",
    "ul",
];

fn starts_with_ci(s: &str, prefix: &str) -> bool {
    s.len() >= prefix.len() && s.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

fn find_ci(s: &str, needle: &str) -> Option<usize> {
    let n = needle.len();
    (0..s.len().saturating_sub(n - 1)).find(|&i| s.as_bytes()[i..i + n].eq_ignore_ascii_case(needle.as_bytes()))
}

/// After the line holding byte `at`, and the newlines that follow it.
fn past_line_and_newlines(src: &str, at: usize) -> usize {
    let mut e = src[at..].find('\n').map_or(src.len(), |i| at + i);
    while src.as_bytes().get(e) == Some(&b'\n') {
        e += 1;
    }
    e
}

/// The start of the first blank line at or after `from` (or the end).
fn until_blank_line(src: &str, from: usize) -> usize {
    let mut pos = from;
    while pos < src.len() {
        let le = line_end(src, pos);
        if is_blank(&src[pos..le]) {
            return pos;
        }
        pos = le;
    }
    src.len()
}

/// An HTML block starting at `lt` (a `<` at most 3 columns into the line
/// ending at `le`): its end and kind. `prev_para`: the line continues a
/// paragraph, which only comments and HTML types 1 and 6 can interrupt.
fn html_block(src: &str, lt: usize, le: usize, prev_para: bool) -> Option<(usize, BlockKind)> {
    let s = &src[lt..];
    if s.starts_with("<!--") {
        let after = lt + 4;
        let close = if src[after..].starts_with('>') {
            Some(after + 1)
        } else if src[after..].starts_with("->") {
            Some(after + 2)
        } else {
            src[after..].find("-->").map(|i| after + i + 3)
        };
        return Some(match close {
            Some(c) => (past_line_and_newlines(src, c), BlockKind::Comment),
            None => (src.len(), BlockKind::Comment),
        });
    }
    for tag in ["script", "pre", "style", "textarea"] {
        if starts_with_ci(&s[1..], tag)
            && s[1 + tag.len()..].bytes().next().is_some_and(|c| c == b'>' || js_space(c as char))
        {
            let end =
                find_ci(&src[lt..], &format!("</{tag}>")).map_or(src.len(), |i| past_line_and_newlines(src, lt + i));
            return Some((end, BlockKind::Html));
        }
    }
    let line = src[lt..le].trim_end_matches(['\n', '\r', ' ', '\t']);
    // Type 6: a known block tag.
    let name_start = if s.starts_with("</") { 2 } else { 1 };
    let name_len = s[name_start..].bytes().take_while(|c| c.is_ascii_alphanumeric()).count();
    let name = s[name_start..name_start + name_len].to_ascii_lowercase();
    let next = &line[(name_start + name_len).min(line.len())..];
    if BLOCK_TAGS.contains(&name.as_str())
        && (next.is_empty() || next.starts_with([' ', '>']) || next.starts_with("/>"))
    {
        return Some((until_blank_line(src, le), BlockKind::Html));
    }
    if prev_para {
        return None;
    }
    let marker = |open: &str, close: &str| {
        s.starts_with(open).then(|| src[lt..].find(close).map_or(src.len(), |i| past_line_and_newlines(src, lt + i)))
    };
    if let Some(end) = marker("<![CDATA[", "]]>").or_else(|| marker("<?", "?>")) {
        return Some((end, BlockKind::Html));
    }
    if s.starts_with("<!") && s.as_bytes().get(2).is_some_and(u8::is_ascii_uppercase) {
        return Some((marker("<!", ">").unwrap_or(src.len()), BlockKind::Html));
    }
    // Type 7: a complete open or closing tag alone on its line.
    let tag_name_ok = name_len > 0
        && s.as_bytes()[name_start].is_ascii_alphabetic()
        && !["script", "pre", "style", "textarea"].contains(&name.as_str());
    let whole_tag = line.ends_with('>') && !line[1..line.len() - 1].contains(['<', '>']);
    if tag_name_ok && whole_tag {
        return Some((until_blank_line(src, le), BlockKind::Html));
    }
    None
}

/// Split `src` (line ends normalised) into top-level blocks.
fn scan_blocks(src: &str) -> Vec<Block> {
    let mut out: Vec<Block> = Vec::new();
    let mut push = |start: usize, end: usize, kind: BlockKind| {
        if end > start {
            out.push(Block { start, end, kind });
        }
    };
    let mut pos = 0;
    let mut prev_para = false;
    let mut prev_blank = true;
    let mut list_indent: Option<usize> = None;
    while pos < src.len() {
        let le = line_end(src, pos);
        let line = &src[pos..le];
        if is_blank(line) {
            push(pos, le, BlockKind::Blank);
            pos = le;
            prev_para = false;
            prev_blank = true;
            continue;
        }
        let (ind, ib) = indent_of(line);
        let rest = &line[ib..];
        // Inside a list item, lines indented to its content belong to it.
        let mut base = 0;
        if let Some(ci) = list_indent {
            if ind >= ci {
                base = ci;
            } else if !(ind <= 3 && list_marker(rest).is_some()) && prev_blank {
                list_indent = None;
            }
        }
        let nested = base > 0;
        let rel = ind - base;
        prev_blank = false;

        if rel <= 3 {
            if let Some((ch, n)) = fence_open(rest) {
                let end = fence_end(src, le, ch, n, base + 3);
                push(pos, end, BlockKind::Code);
                pos = end;
                prev_para = false;
                if !nested {
                    list_indent = None;
                }
                continue;
            }
            if rest.starts_with('>')
                && let Some((ch, n)) = fence_open(strip_quote(rest))
            {
                let mut end = le;
                while end < src.len() {
                    let e2 = line_end(src, end);
                    let (i2, b2) = indent_of(&src[end..e2]);
                    let r2 = &src[end + b2..e2];
                    if i2 > 3 || !r2.starts_with('>') {
                        break;
                    }
                    end = e2;
                    if fence_closes(strip_quote(r2), ch, n) {
                        break;
                    }
                }
                push(pos, end, BlockKind::Code);
                pos = end;
                prev_para = false;
                continue;
            }
        }
        if !nested && list_indent.is_none() && ind >= 4 && !prev_para {
            let mut end = le;
            let mut scan = le;
            while scan < src.len() {
                let e2 = line_end(src, scan);
                let l2 = &src[scan..e2];
                if is_blank(l2) {
                    scan = e2;
                } else if indent_of(l2).0 >= 4 {
                    scan = e2;
                    end = e2;
                } else {
                    break;
                }
            }
            push(pos, end, BlockKind::Code);
            pos = end;
            continue;
        }
        if !nested
            && ind <= 3
            && rest.starts_with('<')
            && let Some((end, kind)) = html_block(src, pos + ib, le, prev_para)
        {
            push(pos, end, kind);
            pos = end;
            prev_para = false;
            list_indent = None;
            continue;
        }
        if !nested && ind <= 3 {
            if is_atx_heading(rest) {
                push(pos, le, BlockKind::Heading);
                pos = le;
                prev_para = false;
                list_indent = None;
                continue;
            }
            if is_hr(rest) {
                push(pos, le, BlockKind::Text);
                pos = le;
                prev_para = false;
                list_indent = None;
                continue;
            }
            if let Some(w) = list_marker(rest) {
                list_indent = Some(ind + w);
            }
        }
        push(pos, le, BlockKind::Text);
        pos = le;
        prev_para = true;
    }
    out
}

/// Remove every `<!--…-->` span (the `-->` searched after the `<!--`).
fn remove_comment_spans(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("<!--") {
        match rest[i + 4..].find("-->") {
            Some(j) => {
                out.push_str(&rest[..i]);
                rest = &rest[i + 4 + j + 3..];
            }
            None => break,
        }
    }
    out.push_str(rest);
    out
}

/// A comment block as Claude Code treats it: when its raw text starts with
/// `<!--` and holds `-->`, the text left once the comments are removed;
/// else None (kept as is).
fn comment_residue(raw: &str) -> Option<String> {
    let t = raw.trim_start_matches(js_space);
    (t.starts_with("<!--") && t.contains("-->")).then(|| remove_comment_spans(raw))
}

/// Claude Code's `stripHtmlComments`: the blocks' text, comment blocks
/// replaced by their residue (dropped when blank).
fn strip_comments(src: &str, blocks: &[Block]) -> String {
    let mut out = String::with_capacity(src.len());
    for b in blocks {
        let raw = &src[b.start..b.end];
        match (b.kind, comment_residue(raw)) {
            (BlockKind::Comment, Some(residue)) => {
                if !js_trim(&residue).is_empty() {
                    out.push_str(&residue);
                }
            }
            _ => out.push_str(raw),
        }
    }
    out
}

// ---------------------------------------------------------------------------
// @includes
// ---------------------------------------------------------------------------

/// The include paths of a file (absolute, normalised, first occurrence
/// order): `@…` in text runs outside code and HTML (in a comment block, in
/// its residue).
fn extract_includes(src: &str, blocks: &[Block], base_dir: &str, home: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut add = |text: &str| {
        for p in scan_at_paths(text) {
            let abs = expand_path(&p, base_dir, home);
            if !found.contains(&abs) {
                found.push(abs);
            }
        }
    };
    let mut para = String::new();
    for b in blocks {
        let raw = &src[b.start..b.end];
        if b.kind == BlockKind::Text {
            para.push_str(raw);
            continue;
        }
        for seg in inline_segments(&std::mem::take(&mut para)) {
            add(&seg);
        }
        match b.kind {
            BlockKind::Heading => {
                for seg in inline_segments(raw) {
                    add(&seg);
                }
            }
            BlockKind::Comment => {
                if let Some(residue) = comment_residue(raw)
                    && !js_trim(&residue).is_empty()
                {
                    add(&residue);
                }
            }
            _ => {}
        }
    }
    for seg in inline_segments(&para) {
        add(&seg);
    }
    found
}

/// Split a paragraph into the text runs marked would give (approximately):
/// code spans, escapes (`\@`), inline HTML and comments end a run and are
/// dropped; a link `[text](dest)` gives its text as runs of its own.
fn inline_segments(s: &str) -> Vec<String> {
    let c: Vec<char> = s.chars().collect();
    let mut segs = Vec::new();
    inline_segments_into(&c, &mut segs);
    segs
}

fn inline_segments_into(c: &[char], segs: &mut Vec<String>) {
    let mut cur = String::new();
    let flush = |cur: &mut String, segs: &mut Vec<String>| {
        if !cur.is_empty() {
            segs.push(std::mem::take(cur));
        }
    };
    let starts = |i: usize, pat: &str| pat.chars().enumerate().all(|(k, p)| c.get(i + k) == Some(&p));
    let find = |from: usize, pat: &str| (from..c.len()).find(|&i| starts(i, pat));
    // Where the last `-->` starts: a `<!--` after it cannot close (keeps the
    // scan linear on text full of unclosed comments).
    let last_close = (0..c.len()).rev().find(|&i| starts(i, "-->"));
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch == '\\' && c.get(i + 1).is_some_and(char::is_ascii_punctuation) {
            flush(&mut cur, segs);
            i += 2;
            continue;
        }
        if ch == '`' {
            let n = c[i..].iter().take_while(|&&x| x == '`').count();
            let mut j = i + n;
            let mut close = None;
            while j < c.len() {
                if c[j] == '`' {
                    let m = c[j..].iter().take_while(|&&x| x == '`').count();
                    if m == n {
                        close = Some(j);
                        break;
                    }
                    j += m;
                } else {
                    j += 1;
                }
            }
            match close {
                Some(j) => {
                    flush(&mut cur, segs);
                    i = j + n;
                }
                None => {
                    cur.extend(&c[i..i + n]);
                    i += n;
                }
            }
            continue;
        }
        if starts(i, "<!--")
            && last_close.is_some_and(|l| l >= i + 4)
            && let Some(j) = find(i + 4, "-->")
        {
            flush(&mut cur, segs);
            i = j + 3;
            continue;
        }
        if ch == '<'
            && c.get(i + 1).is_some_and(|&x| x.is_ascii_alphabetic() || x == '/')
            && let Some(j) = (i + 1..c.len()).take_while(|&j| c[j] != '\n' && c[j] != '<').find(|&j| c[j] == '>')
        {
            flush(&mut cur, segs);
            i = j + 1;
            continue;
        }
        if ch == '['
            && let Some((text_end, link_end)) = parse_link(c, i)
        {
            flush(&mut cur, segs);
            inline_segments_into(&c[i + 1..text_end], segs);
            i = link_end;
            continue;
        }
        cur.push(ch);
        i += 1;
    }
    flush(&mut cur, segs);
}

/// Longest link text or destination looked for, in characters (keeps the
/// scan linear on text full of unclosed `[`).
const MAX_LINK_PART: usize = 4096;

/// `[text](dest)` at `i`: the index of `]` and the index after `)`.
fn parse_link(c: &[char], i: usize) -> Option<(usize, usize)> {
    let mut depth = 0;
    let mut j = i;
    let text_end = loop {
        if j > i + MAX_LINK_PART {
            return None;
        }
        match c.get(j)? {
            '\\' => j += 1,
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    break j;
                }
            }
            _ => {}
        }
        j += 1;
    };
    if c.get(text_end + 1) != Some(&'(') {
        return None;
    }
    let mut depth = 0;
    let mut k = text_end + 1;
    loop {
        if k > text_end + MAX_LINK_PART {
            return None;
        }
        match c.get(k)? {
            '\\' => k += 1,
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some((text_end, k + 1));
                }
            }
            '\n' if c.get(k + 1) == Some(&'\n') => return None,
            _ => {}
        }
        k += 1;
    }
}

/// `/(?:^|\s)@((?:[^\s\\]|\\ )+)/g` over one text run, each match with its
/// `#fragment` cut, `\ ` unescaped and Claude Code's path check
/// (`./`, `~/`, `/x`, or a first character in `[A-Za-z0-9._-]`). An `@`
/// right after an emphasis opener (`**@x**`) counts as at the start of a run
/// (marked puts the emphasis text in a run of its own) and the closer is cut.
fn scan_at_paths(text: &str) -> Vec<String> {
    let c: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        if c[i] != '@' {
            i += 1;
            continue;
        }
        let mut closer: Option<(char, usize)> = None;
        let at_start = if i == 0 || js_space(c[i - 1]) {
            true
        } else if matches!(c[i - 1], '*' | '_') {
            let d = c[i - 1];
            let run_start = (0..i).rev().take_while(|&k| c[k] == d).last().unwrap_or(i - 1);
            let opens = run_start == 0 || js_space(c[run_start - 1]);
            if opens {
                closer = Some((d, i - run_start));
            }
            opens
        } else {
            false
        };
        if !at_start {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        let mut cap = String::new();
        while j < c.len() {
            if c[j] == '\\' {
                if c.get(j + 1) == Some(&' ') {
                    cap.push_str("\\ ");
                    j += 2;
                    continue;
                }
                break;
            }
            if js_space(c[j]) {
                break;
            }
            cap.push(c[j]);
            j += 1;
        }
        i = j.max(i + 1);
        if let Some((d, n)) = closer {
            // The emphasis text ends at the closing run.
            if let Some(k) = cap.find(&d.to_string().repeat(n)) {
                cap.truncate(k);
            }
        }
        let mut p = cap.as_str();
        if let Some(h) = p.find('#') {
            p = &p[..h];
        }
        if p.is_empty() {
            continue;
        }
        let p = p.replace("\\ ", " ");
        let valid = p.starts_with("./")
            || p.starts_with("~/")
            || (p.starts_with('/') && p != "/")
            || p.chars().next().is_some_and(|f| f.is_ascii_alphanumeric() || matches!(f, '.' | '_' | '-'));
        if valid {
            out.push(p);
        }
    }
    out
}

/// Claude Code's `expandPath(path, base)` on logical paths.
fn expand_path(p: &str, base_dir: &str, home: &str) -> String {
    let p = js_trim(p);
    if p == "~" {
        return normalize(home);
    }
    if let Some(rest) = p.strip_prefix("~/") {
        return join(home, rest);
    }
    if p.starts_with('/') {
        return normalize(p);
    }
    join(base_dir, p)
}

// ---------------------------------------------------------------------------
// MEMORY.md truncation
// ---------------------------------------------------------------------------

fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// The longest prefix of `s` of at most `units` UTF-16 code units.
fn utf16_prefix(s: &str, units: usize) -> &str {
    let mut u = 0;
    for (i, ch) in s.char_indices() {
        u += ch.len_utf16();
        if u > units {
            return &s[..i];
        }
    }
    s
}

/// Claude Code's `formatFileSize` (`toFixed(1)` rounds half up on these
/// exact binary fractions).
fn format_file_size(bytes: usize) -> String {
    let fmt = |tenths: usize, unit: &str| {
        if tenths.is_multiple_of(10) {
            format!("{}{unit}", tenths / 10)
        } else {
            format!("{}.{}{unit}", tenths / 10, tenths % 10)
        }
    };
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    if bytes < 1024 * 1024 {
        return fmt((bytes * 20 + 1024) / 2048, "KB");
    }
    if bytes < 1024 * 1024 * 1024 {
        return fmt((bytes * 20 + (1 << 20)) / (2 << 20), "MB");
    }
    fmt((bytes * 20 + (1 << 30)) / (2 << 30), "GB")
}

/// Claude Code's `truncateEntrypointContent`: trimmed; over 200 lines or
/// 25,000 UTF-16 units, cut (at the last newline within the limit) and
/// followed by a warning.
fn truncate_entrypoint(raw: &str) -> String {
    let trimmed = js_trim(raw);
    let lines: Vec<&str> = trimmed.split('\n').collect();
    let line_count = lines.len();
    let units = utf16_len(trimmed);
    let by_lines = line_count > MAX_ENTRYPOINT_LINES;
    let by_size = units > MAX_ENTRYPOINT_UNITS;
    if !by_lines && !by_size {
        return trimmed.to_owned();
    }
    let mut truncated = if by_lines { lines[..MAX_ENTRYPOINT_LINES].join("\n") } else { trimmed.to_owned() };
    if utf16_len(&truncated) > MAX_ENTRYPOINT_UNITS {
        // lastIndexOf('\n', limit): the last newline starting at a unit index <= limit.
        let mut u = 0;
        let mut cut = None;
        for (i, ch) in truncated.char_indices() {
            if u > MAX_ENTRYPOINT_UNITS {
                break;
            }
            if ch == '\n' {
                cut = Some(i);
            }
            u += ch.len_utf16();
        }
        let end = match cut {
            Some(i) if i > 0 => i,
            _ => utf16_prefix(&truncated, MAX_ENTRYPOINT_UNITS).len(),
        };
        truncated.truncate(end);
    }
    let reason = match (by_lines, by_size) {
        (false, _) => format!(
            "{} (limit: {}) — index entries are too long",
            format_file_size(units),
            format_file_size(MAX_ENTRYPOINT_UNITS)
        ),
        (true, false) => format!("{line_count} lines (limit: {MAX_ENTRYPOINT_LINES})"),
        (true, true) => format!("{line_count} lines and {}", format_file_size(units)),
    };
    format!(
        "{truncated}\n\n> WARNING: MEMORY.md is {reason}. Only part of it was loaded. Keep index entries to one line \
         under ~200 chars; move detail into topic files."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use std::fs;

    // -- captured fixtures -------------------------------------------------

    fn fixtures(release: &str) -> Vec<PathBuf> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(release);
        let mut dirs: Vec<PathBuf> =
            fs::read_dir(root).unwrap().map(|e| e.unwrap().path()).filter(|p| p.join("env").is_dir()).collect();
        dirs.sort();
        assert!(dirs.len() >= 14, "{release}: {dirs:?}");
        dirs
    }

    fn wire(dir: &Path, n: usize) -> Value {
        let text = fs::read_to_string(dir.join("wire.jsonl")).unwrap();
        serde_json::from_str(text.lines().nth(n).unwrap()).unwrap()
    }

    fn transcript_entries(dir: &Path) -> Vec<Value> {
        let mut files: Vec<PathBuf> = walkdir::WalkDir::new(dir.join("transcripts"))
            .into_iter()
            .map(|e| e.unwrap().into_path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        files.sort();
        files
            .iter()
            .flat_map(|f| {
                fs::read_to_string(f).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect::<Vec<_>>()
            })
            .collect()
    }

    fn load_fixture(dir: &Path) -> (MemoryRoots, Memory) {
        let roots = MemoryRoots::from_env_dir(&dir.join("env")).unwrap();
        let memory = load(&roots);
        assert_eq!(memory.warnings, vec![], "{}", dir.display());
        (roots, memory)
    }

    /// The text between `# claudeMd\n` and `\n# currentDate\n` in the first
    /// user message of a 2.1.88 request.
    fn claude_md_section(body: &Value) -> Option<String> {
        let content = &body["messages"][0]["content"];
        let texts: Vec<&str> = match content {
            Value::String(s) => vec![s.as_str()],
            Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect(),
            _ => vec![],
        };
        texts.iter().find_map(|t| {
            let start = t.find("\n# claudeMd\n")? + "\n# claudeMd\n".len();
            let end = start + t[start..].find("\n# currentDate\n")?;
            Some(t[start..end].to_owned())
        })
    }

    #[test]
    fn every_2_1_88_scenario_renders_claude_md_as_captured() {
        let mut with_section = 0;
        for dir in fixtures("cc-2.1.88") {
            let (_, memory) = load_fixture(&dir);
            let captured = claude_md_section(&wire(&dir, 0)["body"]);
            with_section += usize::from(captured.is_some());
            assert_eq!(memory.render_claude_md(), captured, "{}", dir.display());
        }
        // bash-tool and memory-files have memory files.
        assert_eq!(with_section, 2);
    }

    #[test]
    fn memory_files_2_1_88_parts_and_kinds() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cc-2.1.88/memory-files");
        let (_, memory) = load_fixture(&dir);
        let got: Vec<(&str, MemoryKind, Option<&str>)> =
            memory.files.iter().map(|f| (f.path.as_str(), f.kind, f.included_from.as_deref())).collect();
        let p = "/home/dev/projects/memory-files";
        assert_eq!(
            got,
            vec![
                ("/home/dev/homes/memory-files/.claude/CLAUDE.md", MemoryKind::User, None),
                ("/home/dev/projects/memory-files/CLAUDE.md", MemoryKind::Project, None),
                (
                    "/home/dev/projects/memory-files/docs/style.md",
                    MemoryKind::Project,
                    Some(&*format!("{p}/CLAUDE.md"))
                ),
                ("/home/dev/projects/memory-files/.claude/rules/general.md", MemoryKind::Project, None),
                ("/home/dev/projects/memory-files/CLAUDE.local.md", MemoryKind::Local, None),
            ]
        );
        // The comment line is stripped; the content is not trimmed.
        assert_eq!(memory.files[1].content, "# Project\nSee @docs/style.md for style.\n");
        assert_eq!(memory.conditional.len(), 1);
        assert_eq!(memory.conditional[0].globs, vec!["src/api"]);
    }

    #[test]
    fn rule_reminder_2_1_88_is_smooshed_into_the_tool_result() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cc-2.1.88/memory-files");
        let (roots, memory) = load_fixture(&dir);
        let read = format!("{}/src/api/x.py", roots.cwd);
        let rules = memory.rules_for(&read);
        assert_eq!(rules.len(), 1);
        assert_eq!(rules[0].path, "/home/dev/projects/memory-files/.claude/rules/api.md");
        let reminder = Memory::render_rule_reminder(rules[0]);
        assert_eq!(
            reminder,
            "<system-reminder>\nContents of /home/dev/projects/memory-files/.claude/rules/api.md:\n\nAPI rules \
             apply.\n\n</system-reminder>"
        );
        // The transcript records the tool_result without the reminder.
        let recorded = transcript_entries(&dir)
            .into_iter()
            .find_map(|e| {
                let block = e["message"]["content"].as_array()?.iter().find(|b| b["type"] == "tool_result")?;
                block["content"].as_str().map(str::to_owned)
            })
            .unwrap();
        assert!(recorded.ends_with("</system-reminder>\n"));
        let sent = wire(&dir, 1)["body"]["messages"][2]["content"][0]["content"].as_str().unwrap().to_owned();
        assert_eq!(sent, append_to_tool_result(&recorded, &reminder));
        // Files the globs do not cover bring nothing in.
        assert!(memory.rules_for(&format!("{}/src/other.py", roots.cwd)).is_empty());
        assert!(memory.rules_for(&format!("{}/README.md", roots.cwd)).is_empty());
    }

    #[test]
    fn every_2_1_328_scenario_matches_its_memory_attachments() {
        let (mut instructions, mut nested) = (0, 0);
        for dir in fixtures("cc-2.1.328") {
            let (roots, memory) = load_fixture(&dir);
            let entries = transcript_entries(&dir);
            let attachments: Vec<&Value> = entries.iter().filter(|e| e["type"] == "attachment").collect();
            let instr: Vec<&&Value> =
                attachments.iter().filter(|e| e["attachment"]["type"] == "instructions").collect();
            match memory.render_instructions_reminder() {
                None => assert!(instr.is_empty(), "{}", dir.display()),
                Some(text) => {
                    assert!(!instr.is_empty(), "{}", dir.display());
                    for e in &instr {
                        instructions += 1;
                        assert_eq!(e["rendered"][0]["content"].as_str(), Some(text.as_str()), "{}", dir.display());
                        let files: Vec<(String, String, String)> = e["attachment"]["files"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|f| (f["path"].to_string(), f["type"].to_string(), f["content"].to_string()))
                            .collect();
                        let ours: Vec<(String, String, String)> = memory
                            .files
                            .iter()
                            .map(|f| {
                                (
                                    Value::from(f.path.as_str()).to_string(),
                                    Value::from(f.kind.as_str()).to_string(),
                                    Value::from(js_trim(&f.content)).to_string(),
                                )
                            })
                            .collect();
                        assert_eq!(ours, files, "{}", dir.display());
                    }
                }
            }
            for e in attachments.iter().filter(|e| e["attachment"]["type"] == "nested_memory") {
                nested += 1;
                let a = &e["attachment"]["content"];
                let rule = memory.conditional.iter().find(|r| a["path"] == r.path.as_str()).unwrap();
                assert_eq!(a["content"].as_str(), Some(rule.content.as_str()));
                assert_eq!(a["type"].as_str(), Some(rule.kind.as_str()));
                let globs: Vec<&str> = a["globs"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
                assert_eq!(globs, rule.globs);
                let reminder = Memory::render_rule_reminder(rule);
                assert_eq!(e["rendered"][0]["content"].as_str(), Some(reminder.as_str()));
                // The read that brought it in (scenario.json: PROJ/src/api/x.py).
                let read = format!("{}/src/api/x.py", roots.cwd);
                assert!(memory.rules_for(&read).iter().any(|r| r.path == rule.path));
                // 2.1.328 sends it as its own text block after the tool_result.
                let sent = &wire(&dir, 1)["body"]["messages"][3]["content"][1]["text"];
                assert_eq!(sent.as_str(), Some(reminder.as_str()));
            }
        }
        assert_eq!((instructions, nested), (2, 1));
        // The wire carries the same text as the first user block.
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cc-2.1.328/memory-files");
        let (_, memory) = load_fixture(&dir);
        let sent = &wire(&dir, 0)["body"]["messages"][0]["content"][0]["text"];
        assert_eq!(sent.as_str(), memory.render_instructions_reminder().as_deref());
    }

    #[test]
    fn env_dir_roots() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cc-2.1.88/bash-tool/env");
        let roots = MemoryRoots::from_env_dir(&dir).unwrap();
        assert_eq!(roots.cwd, "/home/dev/projects/bash-tool");
        assert_eq!(roots.home, "/home/dev/homes/bash-tool");
        assert_eq!(roots.project_dir, Some(dir.join("project")));
        assert_eq!(roots.home_claude_dir, None);
        assert!(MemoryRoots::from_env_dir(&dir.join("nope")).is_err());
    }

    // -- hand-made snapshots -------------------------------------------------

    const CWD: &str = "/work/proj";
    const HOME: &str = "/users/me";

    struct Snap {
        _tmp: tempfile::TempDir,
        roots: MemoryRoots,
        proj: PathBuf,
        claude: PathBuf,
    }

    fn snap() -> Snap {
        let tmp = tempfile::tempdir().unwrap();
        let proj = tmp.path().join("project");
        let claude = tmp.path().join("home/.claude");
        fs::create_dir_all(&proj).unwrap();
        fs::create_dir_all(&claude).unwrap();
        let mut roots = MemoryRoots::new(CWD, HOME);
        roots.project_dir = Some(proj.clone());
        roots.home_claude_dir = Some(claude.clone());
        Snap { _tmp: tmp, roots, proj, claude }
    }

    fn write(dir: &Path, rel: &str, text: &str) {
        let p = dir.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    fn symlink(dir: &Path, rel: &str, target: &str) {
        let p = dir.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, p).unwrap();
    }

    fn paths(files: &[MemoryFile]) -> Vec<&str> {
        files.iter().map(|f| f.path.as_str()).collect()
    }

    #[test]
    fn include_depth_limit_is_five() {
        let s = snap();
        write(&s.proj, "CLAUDE.md", "root @a.md\n");
        for (f, next) in [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("e", "f")] {
            write(&s.proj, &format!("{f}.md"), &format!("{f} @{next}.md\n"));
        }
        write(&s.proj, "f.md", "f\n");
        let m = load(&s.roots);
        // CLAUDE.md is depth 0; e.md would be depth 5.
        assert_eq!(
            paths(&m.files),
            ["/work/proj/CLAUDE.md", "/work/proj/a.md", "/work/proj/b.md", "/work/proj/c.md", "/work/proj/d.md"]
        );
        assert_eq!(m.files[4].included_from.as_deref(), Some("/work/proj/c.md"));
        assert_eq!(m.warnings, vec![]);
    }

    #[test]
    fn include_cycles_load_each_file_once() {
        let s = snap();
        write(&s.proj, "CLAUDE.md", "root @CLAUDE.md @./a.md\n");
        write(&s.proj, "a.md", "A @b.md\n");
        write(&s.proj, "b.md", "B @a.md @/work/proj/CLAUDE.md @../proj/a.md\n");
        let m = load(&s.roots);
        assert_eq!(paths(&m.files), ["/work/proj/CLAUDE.md", "/work/proj/a.md", "/work/proj/b.md"]);
        // CLAUDE.local.md included from CLAUDE.md is loaded once, as project.
        write(&s.proj, "CLAUDE.md", "root @CLAUDE.local.md\n");
        write(&s.proj, "CLAUDE.local.md", "local\n");
        let m = load(&s.roots);
        let got: Vec<(&str, MemoryKind)> = m.files.iter().map(|f| (f.path.as_str(), f.kind)).collect();
        assert_eq!(
            got,
            [("/work/proj/CLAUDE.md", MemoryKind::Project), ("/work/proj/CLAUDE.local.md", MemoryKind::Project)]
        );
    }

    #[test]
    fn symlink_loops_are_cut_with_a_warning() {
        let s = snap();
        write(&s.proj, "CLAUDE.md", "root @loop1.md @self.md\n");
        symlink(&s.proj, "loop1.md", "loop2.md");
        symlink(&s.proj, "loop2.md", "loop1.md");
        symlink(&s.proj, "self.md", "./self.md");
        // A rules directory that contains itself.
        write(&s.proj, ".claude/rules/r.md", "rule\n");
        symlink(&s.proj, ".claude/rules/again", ".");
        symlink(&s.proj, ".claude/rules/up", "../rules");
        let m = load(&s.roots);
        assert_eq!(paths(&m.files), ["/work/proj/CLAUDE.md", "/work/proj/.claude/rules/r.md"]);
        let warned: Vec<(&str, &str)> = m.warnings.iter().map(|w| (w.path.as_str(), w.message.as_str())).collect();
        assert_eq!(
            warned,
            [("/work/proj/loop1.md", "not loaded: symlink loop"), ("/work/proj/self.md", "not loaded: symlink loop")]
        );
    }

    #[test]
    fn symlinks_resolve_in_logical_space_and_never_leave_the_roots() {
        let s = snap();
        write(&s.proj, "docs/real.md", "real @sibling.md\n");
        write(&s.proj, "docs/sibling.md", "sibling\n");
        write(&s.proj, "docs/real2.md", "real2\n");
        symlink(&s.proj, "link.md", "docs/real.md");
        // An absolute target is a logical path of the session.
        symlink(&s.proj, "abs.md", "/work/proj/docs/real2.md");
        // Targets outside the snapshot roots (that exist on this machine).
        symlink(&s.proj, "escape.md", "../../../../../../../../etc/hostname");
        symlink(&s.proj, "host.md", "/etc/hostname");
        write(&s.proj, "CLAUDE.md", "@link.md @abs.md @escape.md @host.md\n");
        let m = load(&s.roots);
        // The include path is kept; its own includes are relative to the target.
        assert_eq!(
            paths(&m.files),
            ["/work/proj/CLAUDE.md", "/work/proj/link.md", "/work/proj/docs/sibling.md", "/work/proj/abs.md"]
        );
        assert_eq!(m.files[3].content, "real2\n");
        assert_eq!(m.warnings.len(), 2, "{:?}", m.warnings);
        assert_eq!(m.warnings[0].path, "/work/proj/escape.md");
        assert!(m.warnings[0].message.starts_with("refused: resolves to /etc/hostname, outside the snapshot roots"));
        assert_eq!(m.warnings[1].path, "/work/proj/host.md");
        assert!(m.warnings[1].message.contains("(included from /work/proj/CLAUDE.md)"));
    }

    #[test]
    fn includes_in_code_and_html_are_ignored() {
        let s = snap();
        for f in ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"] {
            write(&s.proj, &format!("{f}.md"), &format!("{f}\n"));
        }
        let text = "Use `@a.md` here, ``x @b.md y``.\n\n```\n@c.md\n```\n\n~~~sh\n@d.md\n~~~\n\n    @e.md\n\n\
                    > ```\n> @f.md\n> ```\n\n<div>\n@g.md\n</div>\n\nSee @h.md and **@i.md**.\n\
                    <!-- @j.md -->\n";
        write(&s.proj, "CLAUDE.md", text);
        let m = load(&s.roots);
        assert_eq!(paths(&m.files), ["/work/proj/CLAUDE.md", "/work/proj/h.md", "/work/proj/i.md"]);
    }

    #[test]
    fn include_syntax() {
        let s = snap();
        for f in ["my file.md", "linked.md", "paren.md", "frag.md", "x.md", "dot.md", "@at.md", "mail.md"] {
            write(&s.proj, f, "x\n");
        }
        write(
            &s.proj,
            "CLAUDE.md",
            "@my\\ file.md [see @linked.md](http://x) (@paren.md) @frag.md#intro\nuser@x.md \\@dot.md @@at.md \
             <b>@mail.md</b>\n",
        );
        let m = load(&s.roots);
        // `<b>` is inline HTML: the text after it starts a run, as in marked.
        assert_eq!(
            paths(&m.files),
            [
                "/work/proj/CLAUDE.md",
                "/work/proj/my file.md",
                "/work/proj/linked.md",
                "/work/proj/frag.md",
                "/work/proj/mail.md"
            ]
        );
    }

    #[test]
    fn tilde_and_absolute_includes() {
        let mut s = snap();
        write(&s.claude, "CLAUDE.md", "user @~/.claude/extra.md @/etc/hostname\n");
        write(&s.claude, "extra.md", "extra\n");
        write(&s.claude, "extra2.md", "extra2\n");
        write(&s.proj, "CLAUDE.md", "proj @~/.claude/extra2.md @/etc/hostname\n");
        let m = load(&s.roots);
        let got: Vec<(&str, MemoryKind)> = m.files.iter().map(|f| (f.path.as_str(), f.kind)).collect();
        assert_eq!(
            got,
            [
                ("/users/me/.claude/CLAUDE.md", MemoryKind::User),
                ("/users/me/.claude/extra.md", MemoryKind::User),
                ("/work/proj/CLAUDE.md", MemoryKind::Project),
            ]
        );
        let warned: Vec<&str> = m.warnings.iter().map(|w| w.path.as_str()).collect();
        // User files may include anything: /etc/hostname is refused as outside the roots.
        // Project files may not include outside the cwd unless approved.
        assert_eq!(warned, ["/etc/hostname", "/users/me/.claude/extra2.md", "/etc/hostname"]);
        assert!(m.warnings[0].message.starts_with("refused: resolves to /etc/hostname"));
        assert!(m.warnings[1].message.contains("external includes were approved"));
        assert!(m.warnings[2].message.contains("external includes were approved"));

        s.roots.external_includes_approved = true;
        let m = load(&s.roots);
        assert_eq!(paths(&m.files)[3], "/users/me/.claude/extra2.md");
        assert_eq!(m.files[3].kind, MemoryKind::Project);
        // Approved: /etc/hostname is refused once (outside the roots), then
        // already processed when the project file includes it.
        assert_eq!(m.warnings.len(), 1, "{:?}", m.warnings);
        assert!(m.warnings.iter().all(|w| w.path == "/etc/hostname" && w.message.starts_with("refused")));
    }

    #[test]
    fn only_text_extensions_are_loaded() {
        let s = snap();
        fs::write(s.proj.join("pic.png"), [0x89, b'P', b'N', b'G', b'\n']).unwrap();
        write(&s.proj, "notes.TXT", "notes\n");
        write(&s.proj, "Makefile", "all:\n");
        write(&s.proj, "data.bin", "bin\n");
        write(&s.proj, "CLAUDE.md", "@pic.png @notes.TXT @Makefile @data.bin\n");
        let m = load(&s.roots);
        assert_eq!(paths(&m.files), ["/work/proj/CLAUDE.md", "/work/proj/notes.TXT", "/work/proj/Makefile"]);
        assert_eq!(m.warnings, vec![]);
    }

    #[test]
    fn html_block_comments_are_stripped() {
        let s = snap();
        let text = "<!-- top -->\n# Title\nText <!-- inline --> kept\n<!--\nmulti\nline\n-->\n  <!-- a --> residue\n\n\
                    ```\n<!-- in code -->\n```\n- item\n  <!-- nested -->\n<!-- unterminated\nrest\n";
        write(&s.proj, "CLAUDE.md", text);
        let m = load(&s.roots);
        assert_eq!(
            m.files[0].content,
            "# Title\nText <!-- inline --> kept\n   residue\n\n```\n<!-- in code -->\n```\n- item\n  <!-- nested -->\n\
             <!-- unterminated\nrest\n"
        );
        // A comment interrupts a paragraph; line ends are normalised only when
        // the file holds a comment.
        write(&s.proj, "CLAUDE.md", "para\r\n<!-- c -->\r\nmore\r\n");
        write(&s.proj, "CLAUDE.local.md", "a\r\nb\r\n");
        let m = load(&s.roots);
        assert_eq!(m.files[0].content, "para\nmore\n");
        assert_eq!(m.files[1].content, "a\r\nb\r\n");
        // A file that is only comments is dropped.
        write(&s.proj, "CLAUDE.md", "<!-- nothing -->\n\n<!-- else -->\n");
        let m = load(&s.roots);
        assert_eq!(paths(&m.files), ["/work/proj/CLAUDE.local.md"]);
    }

    #[test]
    fn frontmatter_paths_make_rules_conditional() {
        let s = snap();
        let rules = |f: &str, t: &str| write(&s.proj, &format!(".claude/rules/{f}"), t);
        rules("str.md", "---\npaths: src/**/*.ts, tests/**\n---\nTS rules.\n");
        rules("list.md", "---\npaths:\n  - \"docs/*.md\"\n  - lib/{a,b}/**\n---\n\nList rules.\n");
        rules("flow.md", "---\npaths: [\"*.py\", 'scripts/**']\n---\nPy.\n");
        rules("all.md", "---\npaths: \"**\"\n---\nAlways.\n");
        rules("plain.md", "---\ndescription: x\n---\nPlain.\n");
        rules("sub/deep.md", "Deep.\n");
        rules("notes.txt", "not a rule\n");
        let m = load(&s.roots);
        assert_eq!(
            paths(&m.files),
            [
                "/work/proj/.claude/rules/all.md",
                "/work/proj/.claude/rules/plain.md",
                "/work/proj/.claude/rules/sub/deep.md"
            ]
        );
        assert_eq!(m.files[1].content, "Plain.\n");
        let cond: Vec<(&str, Vec<&str>)> =
            m.conditional.iter().map(|r| (r.path.as_str(), r.globs.iter().map(String::as_str).collect())).collect();
        assert_eq!(
            cond,
            [
                ("/work/proj/.claude/rules/flow.md", vec!["*.py", "scripts"]),
                ("/work/proj/.claude/rules/list.md", vec!["docs/*.md", "lib/a", "lib/b"]),
                ("/work/proj/.claude/rules/str.md", vec!["src/**/*.ts", "tests"]),
            ]
        );
        assert_eq!(m.conditional[1].content, "List rules.\n");
        assert!(m.conditional.iter().all(|r| r.glob_base.as_deref() == Some(CWD)));
        let hits = |f: &str| m.rules_for(f).iter().map(|r| r.path.rsplit('/').next().unwrap()).collect::<Vec<_>>();
        assert_eq!(hits("/work/proj/src/x/y.ts"), ["str.md"]);
        assert_eq!(hits("/work/proj/SRC/A.TS"), ["str.md"]);
        assert_eq!(hits("/work/proj/tests/a/b.rs"), ["str.md"]);
        assert_eq!(hits("/work/proj/deep/x.py"), ["flow.md"]);
        assert_eq!(hits("/work/proj/scripts/run.sh"), ["flow.md"]);
        assert_eq!(hits("/work/proj/lib/b/c.rs"), ["list.md"]);
        assert_eq!(hits("/work/proj/docs/a.md"), ["list.md"]);
        assert!(hits("/work/proj/docs/sub/a.md").is_empty());
        assert!(hits("/work/proj/lib/c/x").is_empty());
        assert!(hits("/work/other/src/a.ts").is_empty());
        assert!(hits("/work/proj").is_empty());
        assert_eq!(hits("src/a.ts"), ["str.md"]);
        assert_eq!(
            Memory::render_rule_reminder(m.rules_for("/work/proj/src/a.ts")[0]),
            "<system-reminder>\nContents of /work/proj/.claude/rules/str.md:\n\nTS rules.\n\n</system-reminder>"
        );
    }

    #[test]
    fn user_rules_are_relative_to_the_cwd() {
        let s = snap();
        write(&s.claude, "rules/u.md", "---\npaths: \"*.rs\"\n---\nRust.\n");
        write(&s.claude, "rules/always.md", "Always.\n");
        let m = load(&s.roots);
        assert_eq!(paths(&m.files), ["/users/me/.claude/rules/always.md"]);
        assert_eq!(m.files[0].kind, MemoryKind::User);
        assert_eq!(
            paths(&m.rules_for("/work/proj/src/main.rs").into_iter().cloned().collect::<Vec<_>>()),
            ["/users/me/.claude/rules/u.md"]
        );
        assert!(m.rules_for("/users/me/x.rs").is_empty());
    }

    #[test]
    fn includes_of_a_conditional_rule_load_at_start() {
        // Claude Code drops the conditional rule from the start-up list but
        // keeps the files it includes.
        let s = snap();
        write(&s.proj, ".claude/rules/c.md", "---\npaths: x/**\n---\nSee @../../docs/inc.md\n");
        write(&s.proj, "docs/inc.md", "inc\n");
        let m = load(&s.roots);
        assert_eq!(paths(&m.files), ["/work/proj/docs/inc.md"]);
        assert_eq!(m.files[0].included_from.as_deref(), Some("/work/proj/.claude/rules/c.md"));
        assert_eq!(paths(&m.conditional), ["/work/proj/.claude/rules/c.md"]);
    }

    #[test]
    fn render_every_kind_in_priority_order() {
        let mut s = snap();
        let managed = s._tmp.path().join("managed");
        write(&managed, "CLAUDE.md", "Policy.\n");
        s.roots.managed_dir = Some(managed);
        write(&s.claude, "CLAUDE.md", "  User.  \n");
        write(&s.claude, "projects/-work-proj/memory/MEMORY.md", "\n- [a](a.md) @x.md\n\n");
        write(&s.claude, "projects/-work-proj/memory/x.md", "x\n");
        write(&s.proj, ".claude/CLAUDE.md", "Dot.\n");
        write(&s.proj, "CLAUDE.md", "Proj.\n");
        write(&s.proj, "CLAUDE.local.md", "Local.\n");
        write(&s.proj, "empty/CLAUDE.md", " \n");
        let m = load(&s.roots);
        assert_eq!(m.warnings, vec![]);
        assert_eq!(
            m.render_claude_md().unwrap(),
            format!(
                "{MEMORY_INSTRUCTION_PROMPT}\n\n\
                 Contents of /etc/claude-code/CLAUDE.md (user's private global instructions for all projects):\n\nPolicy.\n\n\
                 Contents of /users/me/.claude/CLAUDE.md (user's private global instructions for all projects):\n\nUser.\n\n\
                 Contents of /work/proj/CLAUDE.md (project instructions, checked into the codebase):\n\nProj.\n\n\
                 Contents of /work/proj/.claude/CLAUDE.md (project instructions, checked into the codebase):\n\nDot.\n\n\
                 Contents of /work/proj/CLAUDE.local.md (user's private project instructions, not checked in):\n\nLocal.\n\n\
                 Contents of /users/me/.claude/projects/-work-proj/memory/MEMORY.md (user's auto-memory, persists \
                 across conversations):\n\n- [a](a.md) @x.md"
            )
        );
        assert_eq!(
            m.render_instructions_reminder().unwrap(),
            format!("<system-reminder>\n{}\n</system-reminder>", m.render_claude_md().unwrap())
        );
        s.roots.auto_memory = false;
        assert_eq!(load(&s.roots).files.len(), 5);
        assert_eq!(load(&MemoryRoots::new(CWD, HOME)).render_claude_md(), None);
    }

    #[test]
    fn memory_md_is_truncated_at_200_lines() {
        let s = snap();
        let text: String = (1..=250).map(|i| format!("line {i}\n")).collect();
        write(&s.claude, "projects/-work-proj/memory/MEMORY.md", &text);
        let m = load(&s.roots);
        let expected: Vec<String> = (1..=200).map(|i| format!("line {i}")).collect();
        assert_eq!(
            m.files[0].content,
            format!(
                "{}\n\n> WARNING: MEMORY.md is 250 lines (limit: 200). Only part of it was loaded. Keep index entries \
                 to one line under ~200 chars; move detail into topic files.",
                expected.join("\n")
            )
        );
        let long = format!("{}\n{}", "a".repeat(20_000), "b".repeat(10_000));
        let t = truncate_entrypoint(&long);
        assert!(t.starts_with(&format!("{}\n\n> WARNING: MEMORY.md is 29.3KB (limit: 24.4KB)", "a".repeat(20_000))));
    }

    #[test]
    fn adversarial_text_is_scanned_in_linear_time() {
        let s = snap();
        let text = "a <!-- [x] [ `` ` <b @x.md\n".repeat(20_000);
        write(&s.proj, "CLAUDE.md", &format!("{text}\n<!-- unclosed\n{}", "[(".repeat(50_000)));
        let start = std::time::Instant::now();
        let m = load(&s.roots);
        assert_eq!(paths(&m.files), ["/work/proj/CLAUDE.md"]);
        assert!(start.elapsed() < std::time::Duration::from_secs(20), "{:?}", start.elapsed());
    }

    #[test]
    fn file_sizes_format_like_claude_code() {
        assert_eq!(format_file_size(1023), "1023 bytes");
        assert_eq!(format_file_size(1024), "1KB");
        assert_eq!(format_file_size(25_000), "24.4KB");
        // 25.25 KB: toFixed(1) rounds the tie up.
        assert_eq!(format_file_size(25_856), "25.3KB");
        assert_eq!(format_file_size(3 << 20), "3MB");
    }

    #[test]
    fn gitignore_glob_semantics() {
        let m = |pats: &[&str], rel: &str| ignore_matches(&pats.iter().map(|p| p.to_string()).collect::<Vec<_>>(), rel);
        assert!(m(&["src/api"], "src/api/x.py"));
        assert!(m(&["src/api"], "src/api"));
        assert!(!m(&["src/api"], "src/apix/y.py"));
        assert!(!m(&["src/api"], "a/src/api/x.py"));
        assert!(m(&["api"], "a/src/api/x.py"));
        assert!(m(&["*.py"], "a/b/c.py"));
        assert!(!m(&["/*.py"], "a/c.py"));
        assert!(m(&["build/"], "build/x"));
        assert!(!m(&["build/"], "build"));
        assert!(m(&["*.md", "!README.md"], "a.md"));
        assert!(!m(&["*.md", "!README.md"], "README.md"));
        assert!(m(&["docs/**/*.md"], "docs/a.md"));
        assert!(m(&["docs/**/*.md"], "docs/x/y/a.md"));
        assert!(m(&["src/*.{ts,tsx}"], "src/a.tsx"));
    }

    #[test]
    fn frontmatter_forms() {
        assert_eq!(parse_frontmatter_paths("no frontmatter\n"), ("no frontmatter\n", vec![]));
        assert_eq!(
            parse_frontmatter_paths("---\npaths: a/**, {b,c}/x\n---\nbody"),
            ("body", vec!["a".to_owned(), "b/x".to_owned(), "c/x".to_owned()])
        );
        assert_eq!(parse_frontmatter_paths("---\npaths: \"src/**\" # c\n---\n\n  body\n").1, vec!["src"]);
        assert_eq!(
            parse_frontmatter_paths("---\npaths: src/** # c\n---\n\n  body\n"),
            ("body\n", vec!["src".to_owned()])
        );
        assert_eq!(parse_frontmatter_paths("---\npaths: '**'\n---\nx").1, Vec::<String>::new());
        assert_eq!(parse_frontmatter_paths("---\npaths:\n- a\n- b, c\nother: 1\n---\nx").1, vec!["a", "b", "c"]);
        // Not frontmatter: no newline after the opening dashes.
        assert_eq!(parse_frontmatter_paths("--- x\n---\nbody").0, "--- x\n---\nbody");
    }
}
