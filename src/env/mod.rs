//! The environment a session ran in: the facts the system prompt and the
//! contexts are rendered from (working directory, home, platform, git
//! snapshot, date, the project tree on disk).
//!
//! Claude Code 2.1.88 transcripts do not record these facts (only `cwd` and
//! `gitBranch` on each line), so a session's environment comes either from a
//! captured `env/` directory ([`SessionEnv::from_dir`]: `env.json`,
//! `project/`, `home/.claude/`, the layout of
//! `tests/fixtures/cc-2.1.88/<scenario>/env/`) or from the transcript with
//! documented defaults ([`SessionEnv::from_transcript`]).
//!
//! # The environment layer
//!
//! `env` is the only layer that reads a session's environment: the
//! [`SessionEnv`] snapshot here, the memory files ([`memory`]), the skills
//! directories ([`skills`]), `~/.claude.json` ([`claude_json`]) and the
//! MCP servers ([`mcp`]). Everything above it (`profile`, `assemble`, the
//! outputs) gets data from these functions and must not open those files
//! itself. `env` renders no request text and knows no profile: it may use
//! only `json`, `time`, `diag`, `model`, `input` and `corpus`.

pub mod claude_json;
pub mod mcp;
pub mod memory;
pub mod skills;

use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Why an environment directory could not be read. Every variant names the
/// file.
#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    /// The file could not be read (missing, unreadable).
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid JSON of the expected shape.
    #[error("{}: invalid env JSON: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The parse error.
        source: serde_json::Error,
    },
    /// A directory of the snapshot (`project`, `home`, `home/.claude`) is a
    /// symlink: what it names may lie anywhere on this machine, so the
    /// snapshot is refused rather than read through it.
    #[error("{}: refused: a snapshot root is a symlink (to {}); project/, home/ and home/.claude/ must be directories of the snapshot", path.display(), target.display())]
    SymlinkRoot {
        /// The symlink.
        path: PathBuf,
        /// What it points to.
        target: PathBuf,
    },
    /// A file of the snapshot (`env.json`, `mcp.json`) is a symlink, not a
    /// regular file, or larger than [`MAX_SNAPSHOT_FILE_BYTES`].
    #[error("{}: refused: {why}", path.display())]
    RefusedFile {
        /// The file.
        path: PathBuf,
        /// Why: `a symlink (to …)`, `not a regular file`, `N bytes, over …`.
        why: String,
    },
    /// A required field is absent.
    #[error("{}: missing field `{field}`", path.display())]
    Missing {
        /// The file.
        path: PathBuf,
        /// The field.
        field: &'static str,
    },
}

/// The git snapshot taken at session start (Claude Code's `getGitStatus`).
/// Values are kept as the commands printed them (trailing newlines
/// included); renderers trim them as Claude Code does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitFacts {
    /// `git branch --show-current`.
    pub branch: String,
    /// The default branch (`main` when unknown: Claude Code's fallback, and
    /// what every 2.1.88 capture shows for repositories without a remote).
    pub main_branch: String,
    /// `git status --short`.
    pub status_short: String,
    /// `git log --oneline -n 5`.
    pub log_oneline: String,
    /// `git config user.name`.
    pub user_name: Option<String>,
    /// `git config user.email`.
    pub user_email: Option<String>,
}

/// The environment of one session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionEnv {
    /// Primary working directory (as the session saw it, not where the
    /// project tree lies on this disk).
    pub cwd: String,
    /// The user's home directory (as the session saw it).
    pub home: String,
    /// Node's `process.platform`: `linux`, `darwin`, `win32`.
    pub platform: String,
    /// `os.type() + " " + os.release()`, e.g. `Linux 6.18.44-fc-v782`.
    pub os_version: String,
    /// `$SHELL`; `None` renders as `unknown` (all 2.1.88 captures).
    pub shell: Option<String>,
    /// Whether `cwd` is inside a git work tree.
    pub is_git: bool,
    /// The git snapshot (present when `is_git`).
    pub git: Option<GitFacts>,
    /// The session's local date, `YYYY-MM-DD` (callers fill it from the
    /// transcript's first timestamp; `None` = today, UTC).
    pub date: Option<String>,
    /// Where the project tree (the session's `cwd`) lies on this disk.
    pub project_dir: Option<PathBuf>,
    /// Where the session's `~/.claude` lies on this disk.
    pub home_claude_dir: Option<PathBuf>,
    /// `claude --version` as captured, e.g. `2.1.88 (Claude Code)`.
    pub cli_version: Option<String>,
    /// The arguments of each CLI process of the session, when the snapshot
    /// records them (`scripts/capture` does): what the transcript does not
    /// hold, such as `-p`.
    pub argv: Vec<Vec<String>>,
    /// The MCP servers the session's CLI was started with, as they
    /// answered it (`env/mcp.json`, [`mcp`]); empty when the snapshot has
    /// none.
    pub mcp: Vec<mcp::McpServer>,
}

/// `env.json` as the capture harness writes it.
#[derive(Deserialize)]
struct EnvJson {
    cwd: Option<String>,
    home: Option<String>,
    #[serde(default)]
    is_git: bool,
    #[serde(default)]
    branch: String,
    main_branch: Option<String>,
    #[serde(default)]
    status_short: String,
    #[serde(default)]
    log_oneline: String,
    user_name: Option<String>,
    user_email: Option<String>,
    platform: Option<String>,
    os_version: Option<String>,
    shell: Option<String>,
    date: Option<String>,
    cli_version: Option<String>,
    #[serde(default)]
    argv: Vec<Vec<String>>,
}

/// Each CLI process's arguments from the capture's `scenario.json` beside
/// `env/` (`steps[].args`, run with `-p`), for captures whose `env.json`
/// predates its `argv` member; empty when there is none.
fn scenario_argv(env_dir: &Path) -> Vec<Vec<String>> {
    let Some(text) = env_dir.parent().and_then(|d| read_snapshot_file(&d.join("scenario.json")).ok().flatten()) else {
        return Vec::new();
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else { return Vec::new() };
    let steps = v.get("steps").and_then(|s| s.as_array()).map(Vec::as_slice).unwrap_or_default();
    steps
        .iter()
        .map(|step| {
            let mut argv = vec!["-p".to_string()];
            let args = step.get("args").and_then(|a| a.as_array()).map(Vec::as_slice).unwrap_or_default();
            argv.extend(args.iter().filter_map(|a| a.as_str()).map(str::to_string));
            for (key, flag) in [("resume", "--resume"), ("continue", "--continue")] {
                if step.get(key).and_then(serde_json::Value::as_bool) == Some(true) {
                    argv.push(flag.to_string());
                }
            }
            argv
        })
        .collect()
}

/// Default platform when nothing says otherwise: `linux`, the platform of
/// every captured session (2.1.88 and 2.1.328).
pub const DEFAULT_PLATFORM: &str = "linux";
/// Default OS version when unknown: the literal `unknown` (a transcript does
/// not record it).
pub const DEFAULT_OS_VERSION: &str = "unknown";
/// Default main branch: Claude Code falls back to `main` when no remote HEAD
/// names another (all 2.1.88 captures).
pub const DEFAULT_MAIN_BRANCH: &str = "main";

impl SessionEnv {
    /// Whether the session's first CLI process ran non-interactively (`-p`,
    /// `--print`), when the snapshot records its arguments.
    pub fn print_mode(&self) -> Option<bool> {
        self.argv.first().map(|a| a.iter().any(|x| x == "-p" || x == "--print"))
    }

    /// The memory roots of this snapshot: its cwd and home, with the
    /// captured project tree and `~/.claude` (a snapshot's files are read,
    /// not the machine's).
    pub fn memory_roots(&self) -> memory::MemoryRoots {
        let mut roots = memory::MemoryRoots::new(&self.cwd, &self.home);
        roots.project_dir = self.project_dir.clone();
        roots.home_claude_dir = self.home_claude_dir.clone();
        roots
    }

    /// The value the first CLI process got for `flag` (`--system-prompt
    /// X`), as the snapshot's argv records it.
    pub fn flag(&self, flag: &str) -> Option<&str> {
        let argv = self.argv.first()?;
        argv.windows(2).find(|w| w[0] == flag).map(|w| w[1].as_str())
    }

    /// The tools the first CLI process allowed without asking
    /// (`--allowedTools A,B` or `--allowedTools A B`, repeatable), in order,
    /// when the snapshot records its arguments.
    pub fn allowed_tools(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let Some(args) = self.argv.first() else { return out };
        let mut taking = false;
        for a in args {
            if a == "--allowedTools" || a == "--allowed-tools" {
                taking = true;
            } else if a.starts_with('-') {
                taking = false;
            } else if taking {
                out.extend(a.split([',', ' ']).map(str::trim).filter(|t| !t.is_empty()).map(str::to_string));
            }
        }
        out
    }

    /// The session's date (`YYYY-MM-DD`): the snapshot's or transcript's,
    /// else today's (UTC) — the one clock read of assembly, here at the
    /// environment's edge.
    pub fn current_date(&self) -> String {
        self.date.clone().unwrap_or_else(crate::time::today_utc)
    }

    /// Read a captured environment directory: `env.json` (required: `cwd`,
    /// `home`), `project/` (the tree at `cwd`) and `home/.claude/` when they
    /// exist.
    pub fn from_dir(env_dir: &Path) -> Result<SessionEnv, EnvError> {
        let path = env_dir.join("env.json");
        let text = read_snapshot_file(&path)?
            .ok_or_else(|| EnvError::Io { path: path.clone(), source: std::io::ErrorKind::NotFound.into() })?;
        let j: EnvJson = serde_json::from_str(&text).map_err(|source| EnvError::Json { path: path.clone(), source })?;
        let cwd = j.cwd.ok_or_else(|| EnvError::Missing { path: path.clone(), field: "cwd" })?;
        let home = j.home.ok_or_else(|| EnvError::Missing { path: path.clone(), field: "home" })?;
        let git = j.is_git.then(|| GitFacts {
            branch: j.branch,
            main_branch: j.main_branch.unwrap_or_else(|| DEFAULT_MAIN_BRANCH.to_string()),
            status_short: j.status_short,
            log_oneline: j.log_oneline,
            user_name: j.user_name,
            user_email: j.user_email,
        });
        let project = snapshot_root(env_dir, &["project"])?;
        let home_claude = snapshot_root(env_dir, &["home", ".claude"])?;
        Ok(SessionEnv {
            cwd,
            home,
            platform: j.platform.unwrap_or_else(|| DEFAULT_PLATFORM.to_string()),
            os_version: j.os_version.unwrap_or_else(|| DEFAULT_OS_VERSION.to_string()),
            shell: j.shell,
            is_git: j.is_git,
            git,
            date: j.date,
            project_dir: project,
            home_claude_dir: home_claude,
            cli_version: j.cli_version,
            argv: if j.argv.is_empty() { scenario_argv(env_dir) } else { j.argv },
            mcp: mcp::read(env_dir)?,
        })
    }

    /// An environment from what a transcript records (`cwd`, `gitBranch`,
    /// the first timestamp's date). Defaults for the rest:
    /// - `platform`: from the shape of `cwd` — `/Users/…` → `darwin`, a drive
    ///   letter or `\` → `win32`, else `linux` (the platform of every capture);
    /// - `home`: `/Users/<u>` or `/home/<u>` when `cwd` is under one, else
    ///   `/root` for `/root/…`, else `/`;
    /// - `os_version`: `unknown`; `shell`: `None` (renders `unknown`);
    /// - `is_git`: a non-empty `git_branch` is present; the git snapshot has
    ///   that branch, main branch `main`, an empty status and no log (a
    ///   transcript records neither);
    /// - no project tree or `~/.claude` on disk.
    pub fn from_transcript(cwd: &str, git_branch: Option<&str>, date: Option<&str>) -> SessionEnv {
        let platform = if cwd.starts_with("/Users/") {
            "darwin"
        } else if cwd.starts_with('\\') || cwd.as_bytes().get(1) == Some(&b':') {
            "win32"
        } else {
            DEFAULT_PLATFORM
        };
        let parts: Vec<&str> = cwd.split('/').collect();
        let home = match parts.as_slice() {
            ["", top @ ("home" | "Users"), user, ..] if !user.is_empty() => format!("/{top}/{user}"),
            ["", "root", ..] => "/root".to_string(),
            _ => "/".to_string(),
        };
        let branch = git_branch.filter(|b| !b.is_empty());
        SessionEnv {
            cwd: cwd.to_string(),
            home,
            platform: platform.to_string(),
            os_version: DEFAULT_OS_VERSION.to_string(),
            shell: None,
            is_git: branch.is_some(),
            git: branch.map(|b| GitFacts {
                branch: b.to_string(),
                main_branch: DEFAULT_MAIN_BRANCH.to_string(),
                ..GitFacts::default()
            }),
            date: date.map(str::to_string),
            project_dir: None,
            home_claude_dir: None,
            cli_version: None,
            argv: Vec::new(),
            mcp: Vec::new(),
        }
    }

    /// The project directory name under `~/.claude/projects/`: `cwd` with
    /// every character that is not an ASCII letter or digit replaced by `-`
    /// (`/home/dev/projects/hello` → `-home-dev-projects-hello`, every
    /// capture; `/Users/dain/workspace/danieldemmel.me-next` →
    /// `-Users-dain-workspace-danieldemmel-me-next`, a public corpus).
    pub fn project_slug(&self) -> String {
        project_slug(&self.cwd)
    }

    /// The auto-memory directory named in the system prompt:
    /// `<home>/.claude/projects/<slug>/memory/`.
    pub fn memory_dir(&self) -> String {
        format!("{}/.claude/projects/{}/memory/", self.home, self.project_slug())
    }
}

/// The snapshot directory `env_dir/<parts…>` when it exists as a directory;
/// an error when it or a directory on the way (`home`) is a symlink: a
/// snapshot is untrusted input, and a root that links out of it would let
/// every file below it be read (`project -> /etc`). `env_dir` itself is the
/// caller's choice and may be a link.
pub(crate) fn snapshot_root(env_dir: &Path, parts: &[&str]) -> Result<Option<PathBuf>, EnvError> {
    let mut path = env_dir.to_path_buf();
    for part in parts {
        path.push(part);
        match std::fs::symlink_metadata(&path) {
            Err(_) => return Ok(None),
            Ok(md) if md.file_type().is_symlink() => {
                let target = std::fs::read_link(&path).unwrap_or_default();
                return Err(EnvError::SymlinkRoot { path, target });
            }
            Ok(md) if !md.is_dir() => return Ok(None),
            Ok(_) => {}
        }
    }
    Ok(Some(path))
}

/// The largest `env.json` or `mcp.json` read (1 MiB: a capture's are a few
/// KB).
pub const MAX_SNAPSHOT_FILE_BYTES: u64 = 1 << 20;

/// A snapshot file's text; `None` when it does not exist. Like the roots
/// ([`snapshot_root`]), a file of an untrusted snapshot is read only when
/// it is a regular file of the snapshot: a symlink (`mcp.json ->
/// ~/.aws/…`), a FIFO or a device is refused, and so is a file over
/// [`MAX_SNAPSHOT_FILE_BYTES`].
pub(crate) fn read_snapshot_file(path: &Path) -> Result<Option<String>, EnvError> {
    use std::io::Read;
    let refused = |why: String| EnvError::RefusedFile { path: path.to_path_buf(), why };
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(EnvError::Io { path: path.to_path_buf(), source }),
        Ok(md) if md.file_type().is_symlink() => {
            let target = std::fs::read_link(path).unwrap_or_default();
            return Err(refused(format!("a symlink (to {}); the snapshot's files must be its own", target.display())));
        }
        Ok(md) if !md.is_file() => return Err(refused("not a regular file".into())),
        Ok(md) if md.len() > MAX_SNAPSHOT_FILE_BYTES => {
            return Err(refused(format!(
                "{} bytes, over the {MAX_SNAPSHOT_FILE_BYTES} a snapshot file may have",
                md.len()
            )));
        }
        Ok(_) => {}
    }
    let io = |source| EnvError::Io { path: path.to_path_buf(), source };
    let mut text = String::new();
    // Bounded even if the file grows between the check and the read.
    std::fs::File::open(path).map_err(io)?.take(MAX_SNAPSHOT_FILE_BYTES + 1).read_to_string(&mut text).map_err(io)?;
    if text.len() as u64 > MAX_SNAPSHOT_FILE_BYTES {
        return Err(refused(format!("over the {MAX_SNAPSHOT_FILE_BYTES} bytes a snapshot file may have")));
    }
    Ok(Some(text))
}

/// See [`SessionEnv::project_slug`].
pub fn project_slug(cwd: &str) -> String {
    cwd.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_process_argv_gives_print_mode_and_flags() {
        let argv = |a: &[&str]| SessionEnv {
            argv: vec![a.iter().map(|s| s.to_string()).collect(), vec!["--system-prompt".into(), "later".into()]],
            ..SessionEnv::default()
        };
        let e = argv(&["-p", "--system-prompt", "Be terse.", "--append-system-prompt"]);
        assert_eq!(e.print_mode(), Some(true));
        assert_eq!(e.flag("--system-prompt"), Some("Be terse."));
        // A flag without a value, or only in a later process, is not the session's.
        assert_eq!(e.flag("--append-system-prompt"), None);
        assert_eq!(argv(&["--model", "haiku"]).flag("--system-prompt"), None);
        assert_eq!(SessionEnv::default().flag("--model"), None);
    }

    #[test]
    fn allowed_tools_of_the_first_process() {
        let argv = |a: &[&[&str]]| a.iter().map(|p| p.iter().map(|s| s.to_string()).collect()).collect();
        let mut env =
            SessionEnv { argv: argv(&[&["-p", "--allowedTools", "Bash,Read", "--", "x"]]), ..SessionEnv::default() };
        // parallel-tools: `Bash,Read`, listed `Bash, Read` in 1.0.128's prompt.
        assert_eq!(env.allowed_tools(), ["Bash", "Read"]);
        env.argv = argv(&[&["--allowedTools", "Bash", "Edit", "-p"], &["--allowedTools", "Read"]]);
        assert_eq!(env.allowed_tools(), ["Bash", "Edit"]);
        env.argv = argv(&[&["-p"]]);
        assert!(env.allowed_tools().is_empty());
    }

    #[test]
    fn reads_a_captured_env_dir() {
        let env = SessionEnv::from_dir(Path::new("tests/fixtures/cc-2.1.88/memory-files/env")).unwrap();
        assert_eq!(env.cwd, "/home/dev/projects/memory-files");
        assert_eq!(env.home, "/home/dev/homes/memory-files");
        assert_eq!(env.platform, "linux");
        assert_eq!(env.os_version, "Linux 6.18.44-fc-v782");
        assert!(env.is_git);
        let git = env.git.as_ref().unwrap();
        assert_eq!(git.branch, "main\n");
        assert_eq!(git.main_branch, "main");
        assert_eq!(git.log_oneline, "c1da5c9 initial commit\n");
        assert!(env.project_dir.as_ref().unwrap().join("CLAUDE.md").is_file());
        assert!(env.home_claude_dir.as_ref().unwrap().join("CLAUDE.md").is_file());
        assert_eq!(env.project_slug(), "-home-dev-projects-memory-files");
        assert_eq!(
            env.memory_dir(),
            "/home/dev/homes/memory-files/.claude/projects/-home-dev-projects-memory-files/memory/"
        );
    }

    #[test]
    fn errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let err = SessionEnv::from_dir(dir.path()).unwrap_err();
        assert!(matches!(err, EnvError::Io { .. }));
        assert!(err.to_string().contains("env.json"), "{err}");
        std::fs::write(dir.path().join("env.json"), "{\"cwd\": ").unwrap();
        let err = SessionEnv::from_dir(dir.path()).unwrap_err();
        assert!(matches!(err, EnvError::Json { .. }));
        assert!(err.to_string().contains("env.json"), "{err}");
        std::fs::write(dir.path().join("env.json"), "{\"cwd\": \"/x\"}").unwrap();
        let err = SessionEnv::from_dir(dir.path()).unwrap_err();
        assert!(err.to_string().contains("env.json") && err.to_string().contains("home"), "{err}");
    }

    #[test]
    fn transcript_defaults() {
        let env = SessionEnv::from_transcript("/Users/ann/code/x.y", Some("dev"), Some("2026-01-02"));
        assert_eq!(env.platform, "darwin");
        assert_eq!(env.home, "/Users/ann");
        assert!(env.is_git);
        assert_eq!(env.git.as_ref().unwrap().branch, "dev");
        assert_eq!(env.project_slug(), "-Users-ann-code-x-y");
        let env = SessionEnv::from_transcript("/srv/app", None, None);
        assert_eq!((env.platform.as_str(), env.home.as_str(), env.is_git), ("linux", "/", false));
        assert!(env.git.is_none());
        assert_eq!(SessionEnv::from_transcript("C:\\work", Some(""), None).platform, "win32");
    }
}
