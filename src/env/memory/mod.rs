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

//!
//! # Layout
//!
//! This module holds the public API (the types, [`load`], the renderers);
//! `loader` walks the levels, `fs` is the logical file system and the only
//! code that reads the snapshot, `paths` the lexical path helpers,
//! `frontmatter`, `markdown`, `includes`, `globs` and `truncate` the text
//! processing of one file. Nothing here reads outside [`MemoryRoots`] or
//! renders anything but memory text: the request is assemble's.

pub(in crate::env) mod frontmatter;
mod fs;
mod globs;
mod includes;
mod loader;
mod markdown;
mod paths;
#[cfg(test)]
mod tests;
mod truncate;

use globs::ignore_matches;
use loader::{Loader, walk_dirs};
use paths::{join, js_trim, normalize, relative};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The text that opens the `claudeMd` value (Claude Code's
/// `MEMORY_INSTRUCTION_PROMPT`).
pub const MEMORY_INSTRUCTION_PROMPT: &str = "Codebase and user instructions are shown below. Be sure to adhere to these instructions. IMPORTANT: These instructions OVERRIDE any default behavior and you MUST follow them exactly as written.";

/// A file reached at this include depth is not loaded (the top-level file is
/// depth 0).
pub const MAX_INCLUDE_DEPTH: usize = 5;

/// Bytes read of one memory file at most; a longer file is cut there (at a
/// character boundary) with a warning naming it. Claude Code itself loads a
/// memory file whole (it only warns past 40,000 characters), and no limit is
/// documented for it, so the cap is generous: 25 times that warning size,
/// far beyond any real CLAUDE.md, small enough that a hostile snapshot (a
/// 3 GB sparse file) cannot exhaust memory or time.
pub const MAX_MEMORY_FILE_BYTES: u64 = 1 << 20;

/// Bytes read of all the memory files of one load (a session) at most: 16
/// files at [`MAX_MEMORY_FILE_BYTES`]. Files past it are not loaded, each
/// with a warning; a file that crosses it is cut.
pub const MAX_MEMORY_SESSION_BYTES: u64 = 16 << 20;

/// The logical managed-policy directory (Linux).
pub const MANAGED_DIR: &str = "/etc/claude-code";

/// Lines of MEMORY.md kept (Claude Code's `MAX_ENTRYPOINT_LINES`).
pub const MAX_ENTRYPOINT_LINES: usize = 200;

/// UTF-16 code units of MEMORY.md kept (Claude Code's `MAX_ENTRYPOINT_BYTES`,
/// which measures `string.length`).
pub const MAX_ENTRYPOINT_UNITS: usize = 25_000;

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
    /// HTML comments are kept in the contents, as 1.0.x and 2.0.x send
    /// them. Default false (stripped).
    pub keep_comments: bool,
    /// No `.claude/rules` directory is read (1.0.x). Default false.
    pub no_rules: bool,
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
            keep_comments: false,
            no_rules: false,
        }
    }

    /// Roots of a captured environment directory: those of
    /// [`SessionEnv::from_dir`](crate::env::SessionEnv::from_dir)'s snapshot
    /// (`env.json`'s `cwd` and `home`, `project/` and `home/.claude/` when
    /// present), refused when it refuses the snapshot (a root or `env.json`
    /// that is a symlink, an invalid `env.json` or `mcp.json`), with its
    /// error.
    pub fn from_env_dir(env_dir: &Path) -> std::io::Result<Self> {
        Ok(crate::env::SessionEnv::from_dir(env_dir).map_err(std::io::Error::other)?.memory_roots())
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
        self.render_claude_md_as(true)
    }

    /// [`Memory::render_claude_md`] with each file's content trimmed or, as
    /// 1.0.x and 2.0.x send it, as written (`trim` false: `Be terse.\n` then
    /// the `\n\n` that joins the files).
    pub fn render_claude_md_as(&self, trim: bool) -> Option<String> {
        let parts: Vec<String> = self
            .files
            .iter()
            .filter(|f| !f.content.is_empty())
            .map(|f| {
                let content = if trim { js_trim(&f.content) } else { f.content.as_str() };
                format!("Contents of {} ({}):\n\n{content}", f.path, f.kind.description())
            })
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
