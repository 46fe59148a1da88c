//! Memory loading on adversarial snapshot layouts (issue 14): the fuzzer's
//! bytes build a small `env/` snapshot in a temp dir — files from a small
//! alphabet of paths, memory files whose `@include`s climb with `..`, name
//! absolute logical and disk paths, symlinks inside the tree and out of it,
//! snapshot roots (`project`, `home`, `home/.claude`, the managed
//! directory) and files (`env.json`, `mcp.json`) replaced by symlinks —
//! beside a directory outside the snapshot that holds a sentinel. Reading
//! the snapshot (`SessionEnv`, the memory loader, the skills) must never
//! panic, and the sentinel must never appear in what it returns.
//! `SessionEnv::from_dir` and `MemoryRoots::from_env_dir` give the same
//! roots or the same error; a snapshot read through a link to `env/` loads
//! what `env/` loads (or fails the same way). A refused snapshot is also loaded
//! as `--claude-md-root LINK` does (roots given directly, links allowed): a
//! root that is a link loads what the directory it names loads, and the
//! sentinel appears only when a root's directory holds the outside one.
#![no_main]

use ctxasm::env::SessionEnv;
use ctxasm::env::memory::{self, MemoryRoots};
use ctxasm::env::skills::skills_in;
use libfuzzer_sys::fuzz_target;
use std::path::Path;

const SENTINEL: &str = "SENTINEL-9c1e-outside";

/// Where files and links may be put, relative to `env/`.
const PATHS: &[&str] = &[
    "project/CLAUDE.md",
    "project/CLAUDE.local.md",
    "project/.claude/CLAUDE.md",
    "project/.claude/rules/r.md",
    "project/.claude/rules/sub/s.md",
    "project/a.md",
    "project/d/b.md",
    "project/d",
    "project/.claude/rules/sub",
    "project/.claude/skills/t/SKILL.md",
    "project/.claude/skills/t",
    "home/.claude/CLAUDE.md",
    "home/.claude/rules/u.md",
    "home/.claude/rules",
    "home/.claude/projects/-work-proj/memory/MEMORY.md",
    "home/.claude/skills/s/SKILL.md",
    "home/.claude/skills/s",
    "home/.claude/x.md",
    "managed/CLAUDE.md",
    "managed/.claude/rules/m.md",
    "alt/CLAUDE.md",
    "alt/.claude/rules/r.md",
];

/// Include lines (`{out}` is the outside directory's disk path).
const INCLUDES: &[&str] = &[
    "@a.md",
    "@./d/b.md",
    "@../proj/a.md",
    "@../outside/secret.md",
    "@../../../../../../outside/secret.md",
    "@{out}/secret.md",
    "@{out}/CLAUDE.md",
    "@/work/proj/a.md",
    "@/work/proj/../../etc/hostname",
    "@~/.claude/x.md",
    "@~/.claude/../../../outside/secret.md",
    "@/etc/claude-code/CLAUDE.md",
    "@CLAUDE.md",
    "@d",
    "@/etc/passwd",
    "@x.md",
    "@/etc/claude-code/.claude/rules/m.md",
    "@../alt/CLAUDE.md",
];

/// Symlink targets (`{out}`, `{env}`: disk paths).
const TARGETS: &[&str] = &[
    "a.md",
    "../a.md",
    "d/b.md",
    ".",
    "..",
    "../..",
    "../../outside/secret.md",
    "../../../outside",
    "{out}",
    "{out}/secret.md",
    "{env}/project",
    "{env}/home/.claude/x.md",
    "/work/proj/a.md",
    "/users/me/.claude/x.md",
    "/etc/hostname",
    "/etc",
    "/etc/claude-code/CLAUDE.md",
    "{env}/alt",
];

fn fill(s: &str, out: &Path, env: &Path) -> String {
    s.replace("{out}", &out.display().to_string()).replace("{env}", &env.display().to_string())
}

fn check(what: &str, text: &str) {
    assert!(!text.contains(SENTINEL), "the sentinel leaked through {what}: {text}");
}

/// Check everything `m` returns for the sentinel.
fn check_memory(m: &memory::Memory) {
    for f in m.files.iter().chain(&m.conditional) {
        check(&f.path, &f.content);
    }
    for w in &m.warnings {
        check("a warning", &w.message);
    }
    if let Some(text) = m.render_claude_md() {
        check("claudeMd", &text);
    }
}

/// What can replace a snapshot root or file (`env/<ROOTS[i]>`).
const ROOTS: &[&str] = &["project", "home", "home/.claude", "managed", "env.json", "mcp.json"];

fuzz_target!(|data: &[u8]| {
    let Ok(tmp) = tempfile::tempdir() else { return };
    let env = tmp.path().join("env");
    let out = tmp.path().join("outside");
    for d in ["project/.claude/rules", "home/.claude/rules", "alt"] {
        let _ = std::fs::create_dir_all(env.join(d));
    }
    let _ = std::fs::create_dir_all(out.join(".claude/skills/s"));
    let secret = format!("{SENTINEL}\n");
    let _ = std::fs::write(out.join("secret.md"), &secret);
    let _ = std::fs::write(out.join("CLAUDE.md"), format!("{secret}@secret.md\n"));
    let _ = std::fs::write(out.join(".claude/CLAUDE.md"), &secret);
    let _ = std::fs::write(out.join(".claude/skills/s/SKILL.md"), &secret);
    let env_json = r#"{"cwd": "/work/proj", "home": "/users/me"}"#;
    let _ = std::fs::write(env.join("env.json"), env_json);
    // Valid snapshot files outside the snapshot, for links to them.
    let _ = std::fs::write(out.join("env.json"), env_json);
    let _ = std::fs::write(out.join("mcp.json"), r#"{"servers": {}}"#);

    // Files and directories first, links after (a write never goes through
    // a link: nothing outside the temp dir is touched), roots last.
    let ops: Vec<&[u8]> = data.chunks(3).take(24).collect();
    for op in &ops {
        let b = |i: usize| op.get(i).copied().unwrap_or(0) as usize;
        let path = env.join(PATHS[b(1) % PATHS.len()]);
        match b(0) % 4 {
            0 => {
                let mut text = String::new();
                for k in 0..(b(2) % 4) {
                    text.push_str(&fill(INCLUDES[(b(2) / 4 + k * 5) % INCLUDES.len()], &out, &env));
                    text.push(if k % 2 == 0 { ' ' } else { '\n' });
                }
                text.push_str("text\n");
                if let Some(parent) = path.parent() {
                    let _ = std::fs::create_dir_all(parent);
                }
                let _ = std::fs::write(&path, text);
            }
            1 => {
                let _ = std::fs::create_dir_all(&path);
            }
            _ => {}
        }
    }
    for op in &ops {
        let b = |i: usize| op.get(i).copied().unwrap_or(0) as usize;
        if b(0) % 4 == 2 {
            let path = env.join(PATHS[b(1) % PATHS.len()]);
            if path.symlink_metadata().is_err()
                && let Some(parent) = path.parent()
                && parent.symlink_metadata().is_ok_and(|m| m.is_dir())
            {
                let _ = std::os::unix::fs::symlink(fill(TARGETS[b(2) % TARGETS.len()], &out, &env), &path);
            }
        }
    }
    for op in &ops {
        let b = |i: usize| op.get(i).copied().unwrap_or(0) as usize;
        if b(0) % 4 == 3 {
            let name = ROOTS[b(1) % ROOTS.len()];
            let root = env.join(name);
            let target = if name.ends_with(".json") {
                [out.join(name), out.join("secret.md"), env.join("alt").join(name)][b(2) % 3].clone()
            } else {
                [out.clone(), out.join(".claude"), env.join("project"), tmp.path().to_path_buf(), env.join("alt")]
                    [b(2) % 5]
                    .clone()
            };
            match root.symlink_metadata() {
                Ok(m) if m.is_dir() => {
                    let _ = std::fs::remove_dir_all(&root);
                }
                Ok(_) => {
                    let _ = std::fs::remove_file(&root);
                }
                Err(_) => {}
            }
            let _ = std::os::unix::fs::symlink(target, &root);
        }
    }
    // The managed directory of the snapshot (not a link: as for the other
    // roots, a link out of the snapshot would be the caller's choice).
    let managed = env.join("managed");
    let managed = managed.symlink_metadata().is_ok_and(|m| m.is_dir()).then_some(managed);

    // The snapshot read through a link to it (a caller may name `env/` by
    // a link): the same result, paths aside.
    let link = tmp.path().join("link-to-env");
    let _ = std::os::unix::fs::symlink(&env, &link);
    let via_link = SessionEnv::from_dir(&link);
    let direct = MemoryRoots::from_env_dir(&env);
    let session = SessionEnv::from_dir(&env);
    match (&session, &via_link) {
        (Ok(_), Ok(_)) => {}
        (Err(e), Err(l)) => {
            let e = e.to_string();
            check("the env error", &e);
            let l = l.to_string().replace(&link.display().to_string(), &env.display().to_string());
            assert_eq!(l, e, "through a link to env/");
        }
        (s, l) => panic!("from_dir {s:?}, through a link {l:?}"),
    }
    match (&session, &direct) {
        (Ok(s), Ok(d)) => assert_eq!(&s.memory_roots(), d),
        (Err(s), Err(d)) => assert_eq!(s.to_string(), d.to_string()),
        (s, d) => panic!("from_dir {s:?}, from_env_dir {d:?}"),
    }

    let Ok(session) = session else {
        // Refused: load it as `--claude-md-root` does, with the roots as
        // given (links followed). A root that is a link loads what the
        // directory it names loads; the sentinel is reachable only through
        // a root whose directory holds the outside one.
        let dir = |p: std::path::PathBuf| p.is_dir().then_some(p);
        let mut given = MemoryRoots::new("/work/proj", "/users/me");
        given.project_dir = dir(env.join("project"));
        given.home_claude_dir = dir(env.join("home/.claude"));
        given.managed_dir = dir(env.join("managed"));
        let canon = |p: &Option<std::path::PathBuf>| p.as_ref().and_then(|p| std::fs::canonicalize(p).ok());
        let mut resolved = given.clone();
        resolved.project_dir = canon(&given.project_dir);
        resolved.home_claude_dir = canon(&given.home_claude_dir);
        resolved.managed_dir = canon(&given.managed_dir);
        let m = memory::load(&given);
        assert_eq!(memory::load(&resolved), m, "a linked root loads what its directory loads");
        let out = std::fs::canonicalize(&out).unwrap_or(out);
        let reaches_out = [&resolved.project_dir, &resolved.home_claude_dir, &resolved.managed_dir]
            .into_iter()
            .flatten()
            .any(|r| out.starts_with(r) || r.starts_with(&out));
        if !reaches_out {
            check_memory(&m);
        }
        return;
    };
    for approved in [false, true] {
        let mut roots = session.memory_roots();
        roots.external_includes_approved = approved;
        roots.managed_dir = managed.clone();
        let m = memory::load(&roots);
        check_memory(&m);
        if let Ok(l) = &via_link {
            let mut r = l.memory_roots();
            r.external_includes_approved = approved;
            r.managed_dir = managed.clone();
            assert_eq!(memory::load(&r), m, "through a link to env/");
        }
    }
    for dir in
        [session.home_claude_dir.clone(), session.project_dir.as_ref().map(|p| p.join(".claude"))].into_iter().flatten()
    {
        for s in skills_in(&dir) {
            check(&s.name, &s.description);
        }
    }
});
