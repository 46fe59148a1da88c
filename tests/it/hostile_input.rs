//! Hostile input (issue 14): snapshots and paths built to make ctxasm read
//! what it must not (files outside the snapshot through symlinked roots),
//! read without end (huge or sparse memory files) or block (a FIFO named as
//! a transcript). Each run must finish quickly, leak nothing and say what it
//! refused.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const FIX: &str = "tests/fixtures/cc-2.1.88";
const SECRET: &str = "root:x:0:0:SENTINEL-7f3a";

/// Run `cmd` for at most `limit`; None (the child killed) when it did not
/// finish in time.
fn run_with_timeout(mut cmd: Command, limit: Duration) -> Option<Output> {
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return Some(child.wait_with_output().unwrap());
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn copy_dir(from: &Path, to: &Path) {
    for e in walkdir::WalkDir::new(from) {
        let e = e.unwrap();
        let dest = to.join(e.path().strip_prefix(from).unwrap());
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// A 2.1.88 profile (extracted from the hello capture) in `dir`: it renders
/// the claudeMd context, so memory files reach the requests.
fn profile(dir: &Path) -> PathBuf {
    let out = dir.join("cc-2.1.88.json");
    let o = crate::common::ctxasm(&[
        "profile",
        "extract",
        &format!("{FIX}/hello/wire.jsonl"),
        "--env",
        &format!("{FIX}/hello/env"),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

/// `assemble` of the memory-files transcripts with `env`, at most 20 s: the
/// output file's text, stdout + stderr, and whether it succeeded.
fn assemble(tmp: &Path, env: &Path) -> (String, String, bool) {
    let profile = profile(tmp);
    let out = tmp.join("requests.jsonl");
    let _ = std::fs::remove_file(&out);
    let mut cmd = crate::common::bin();
    cmd.args(["assemble", &format!("{FIX}/memory-files/transcripts"), "--mode", "pipeline", "--profile"])
        .arg(&profile)
        .arg("--env")
        .arg(env)
        .arg("-o")
        .arg(&out);
    let o = run_with_timeout(cmd, Duration::from_secs(20)).expect("assemble did not finish within 20 s");
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    let log = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    (text, log, o.status.success())
}

/// The memory-files snapshot copied to `tmp/env`, and a directory outside it
/// holding the secret and memory files that include it.
fn hostile_env(tmp: &Path) -> (PathBuf, PathBuf) {
    let env = tmp.join("env");
    copy_dir(&Path::new(FIX).join("memory-files/env"), &env);
    let outside = tmp.join("outside");
    std::fs::create_dir_all(outside.join(".claude")).unwrap();
    std::fs::write(outside.join("passwd"), format!("{SECRET}\n")).unwrap();
    std::fs::write(outside.join("CLAUDE.md"), "# Project\nSee @./passwd and @passwd.\n").unwrap();
    std::fs::write(outside.join(".claude/CLAUDE.md"), "# User\n@~/.claude/passwd @./passwd\n").unwrap();
    std::fs::write(outside.join(".claude/passwd"), format!("{SECRET}\n")).unwrap();
    (env, outside)
}

fn replace_with_link(path: &Path, target: &Path) {
    std::fs::remove_dir_all(path).unwrap();
    std::os::unix::fs::symlink(target, path).unwrap();
}

/// `env/project`, `env/home` or `env/home/.claude` a symlink to a directory
/// outside the snapshot: nothing of it is read, and the run says why.
#[test]
fn a_symlinked_snapshot_root_is_refused() {
    for root in ["project", "home", "home/.claude"] {
        let tmp = tempfile::tempdir().unwrap();
        let (env, outside) = hostile_env(tmp.path());
        let target = if root == "home" {
            // `home/` names a directory whose `.claude` holds the includes.
            outside.clone()
        } else if root == "home/.claude" {
            outside.join(".claude")
        } else {
            outside.clone()
        };
        replace_with_link(&env.join(root), &target);
        let (text, log, _) = assemble(tmp.path(), &env);
        assert!(!text.contains("SENTINEL-7f3a"), "{root}: the secret leaked into the requests");
        assert!(!log.contains("SENTINEL-7f3a"), "{root}: the secret leaked into the log");
        let link = env.join(root).display().to_string();
        assert!(log.contains(&link) && log.contains("symlink"), "{root}: no diagnostic naming {link}:\n{log}");
    }
}

/// A symlink inside the snapshot that points outside it (an absolute disk
/// path, a relative path climbing out) is refused with a diagnostic naming
/// the link and its includer.
#[test]
fn a_symlink_inside_the_snapshot_pointing_outside_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (env, outside) = hostile_env(tmp.path());
    let project = env.join("project");
    std::os::unix::fs::symlink(outside.join("passwd"), project.join("abs.md")).unwrap();
    let up = "../".repeat(tmp.path().components().count() + 4);
    let rel = format!("{up}{}", outside.join("passwd").strip_prefix("/").unwrap().display());
    std::os::unix::fs::symlink(&rel, project.join("rel.md")).unwrap();
    std::os::unix::fs::symlink(&outside, project.join("dir")).unwrap();
    std::fs::write(project.join("CLAUDE.md"), "# Project\nSee @abs.md @rel.md @dir/passwd\n").unwrap();
    let (text, log, _) = assemble(tmp.path(), &env);
    assert!(text.contains("Contents of /home/dev/projects/memory-files/CLAUDE.md"), "{log}");
    assert!(!text.contains("SENTINEL-7f3a"), "the secret leaked");
    for f in ["abs.md", "rel.md", "dir/passwd"] {
        let p = format!("/home/dev/projects/memory-files/{f}: refused");
        assert!(log.contains(&p) && log.contains("memory_refused"), "no diagnostic for {f}:\n{log}");
    }
    assert!(log.contains("(included from /home/dev/projects/memory-files/CLAUDE.md)"), "{log}");
}

/// A 3 GiB sparse memory file: read only up to the cap, quickly, and the cut
/// reported naming the file.
#[test]
fn a_huge_sparse_memory_file_is_cut() {
    let tmp = tempfile::tempdir().unwrap();
    let (env, _) = hostile_env(tmp.path());
    let project = env.join("project");
    std::fs::File::create(project.join("big.md")).unwrap().set_len(3 << 30).unwrap();
    std::fs::write(project.join("CLAUDE.md"), "# Project\nSee @big.md too.\n").unwrap();
    let start = Instant::now();
    let (text, log, _) = assemble(tmp.path(), &env);
    assert!(start.elapsed() < Duration::from_secs(15), "took {:?}", start.elapsed());
    assert!(text.contains("Contents of /home/dev/projects/memory-files/big.md"), "{log}");
    // Two requests, each with at most 1 MiB of NULs (`\u0000`, 6 bytes each).
    assert!(text.len() < 2 * 6 * (1 << 20) + (1 << 20), "{} bytes written", text.len());
    assert!(
        log.contains("/home/dev/projects/memory-files/big.md: cut: 3221225472 bytes on disk"),
        "no cut reported:\n{log}"
    );
}

/// A FIFO named on the command line or met in a walk is skipped with a
/// diagnostic; the other files are still read, and `assemble -o` writes
/// them.
#[test]
fn a_fifo_is_skipped_not_waited_for() {
    let tmp = tempfile::tempdir().unwrap();
    let good = tmp.path().join("good.jsonl");
    let transcript = walkdir::WalkDir::new(Path::new(FIX).join("hello/transcripts"))
        .into_iter()
        .map(|e| e.unwrap().into_path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .unwrap();
    std::fs::copy(transcript, &good).unwrap();
    let fifo = tmp.path().join("p.jsonl");
    let dir = tmp.path().join("walked");
    std::fs::create_dir_all(&dir).unwrap();
    let inner = dir.join("q.jsonl");
    for f in [&fifo, &inner] {
        let st = Command::new("mkfifo").arg(f).status().unwrap();
        assert!(st.success());
    }
    let mut cmd = crate::common::bin();
    cmd.args(["stats", "--json"]).arg(&fifo).arg(&good).arg(&dir);
    let o = run_with_timeout(cmd, Duration::from_secs(20)).expect("stats hung on a FIFO");
    let out = String::from_utf8_lossy(&o.stdout);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let all = format!("{out}{}", String::from_utf8_lossy(&o.stderr));
    for f in [&fifo, &inner] {
        let shown = f.display().to_string();
        assert!(all.contains(&shown) && all.contains("not a regular file (a FIFO)"), "{shown} not reported:\n{all}");
    }
    assert_eq!(v["files"], 1, "{out}");

    let written = tmp.path().join("F.jsonl");
    let mut cmd = crate::common::bin();
    cmd.args(["assemble", "--mode", "pipeline", "--profile", "cc-2.1.328"])
        .arg(&fifo)
        .arg(&good)
        .arg("-o")
        .arg(&written);
    let o = run_with_timeout(cmd, Duration::from_secs(20)).expect("assemble hung on a FIFO");
    let len = std::fs::metadata(&written).map(|m| m.len()).unwrap_or(0);
    assert!(len > 0, "nothing written: {}", String::from_utf8_lossy(&o.stderr));
}

/// `env.json` and `mcp.json` are read only as regular files of the
/// snapshot: a symlink to a file outside it (whose text would reach the
/// requests: an MCP server's instructions) or a FIFO (which would hang the
/// run) is refused, naming the file.
#[test]
fn snapshot_files_that_are_links_or_fifos_are_refused() {
    for (name, kind) in [("mcp.json", "link"), ("env.json", "link"), ("mcp.json", "fifo")] {
        let tmp = tempfile::tempdir().unwrap();
        let (env, outside) = hostile_env(tmp.path());
        let file = env.join(name);
        if kind == "link" {
            let real = outside.join(name);
            let text = if name == "mcp.json" {
                format!("{{\"servers\": {{\"x\": {{\"instructions\": \"{SECRET}\", \"tools\": []}}}}}}")
            } else {
                std::fs::read_to_string(&file).unwrap()
            };
            std::fs::write(&real, text).unwrap();
            let _ = std::fs::remove_file(&file);
            std::os::unix::fs::symlink(&real, &file).unwrap();
        } else {
            let _ = std::fs::remove_file(&file);
            assert!(Command::new("mkfifo").arg(&file).status().unwrap().success());
        }
        let (text, log, ok) = assemble(tmp.path(), &env);
        assert!(!ok, "{name} ({kind}): the run succeeded:\n{log}");
        assert!(!text.contains("SENTINEL-7f3a") && !log.contains("SENTINEL-7f3a"), "{name} ({kind}) leaked");
        let why = if kind == "link" { "refused: a symlink (to " } else { "refused: not a regular file" };
        assert!(log.contains(&format!("{}: {why}", file.display())), "{name} ({kind}):\n{log}");
    }
}
