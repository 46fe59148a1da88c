//! Memory loading on adversarial snapshot layouts (issue 14): the fuzzer's
//! bytes build a small `env/` snapshot in a temp dir — files from a small
//! alphabet of paths, memory files whose `@include`s climb with `..`, name
//! absolute logical and disk paths, symlinks inside the tree and out of it,
//! snapshot roots replaced by symlinks — beside a directory outside the
//! snapshot that holds a sentinel. Reading the snapshot (`SessionEnv`, the
//! memory loader, the skills) must never panic, and the sentinel must never
//! appear in what it returns.
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
];

fn fill(s: &str, out: &Path, env: &Path) -> String {
    s.replace("{out}", &out.display().to_string()).replace("{env}", &env.display().to_string())
}

fn check(what: &str, text: &str) {
    assert!(!text.contains(SENTINEL), "the sentinel leaked through {what}: {text}");
}

fuzz_target!(|data: &[u8]| {
    let Ok(tmp) = tempfile::tempdir() else { return };
    let env = tmp.path().join("env");
    let out = tmp.path().join("outside");
    for d in ["project/.claude/rules", "home/.claude/rules"] {
        let _ = std::fs::create_dir_all(env.join(d));
    }
    let _ = std::fs::create_dir_all(out.join(".claude/skills/s"));
    let secret = format!("{SENTINEL}\n");
    let _ = std::fs::write(out.join("secret.md"), &secret);
    let _ = std::fs::write(out.join("CLAUDE.md"), format!("{secret}@secret.md\n"));
    let _ = std::fs::write(out.join(".claude/CLAUDE.md"), &secret);
    let _ = std::fs::write(out.join(".claude/skills/s/SKILL.md"), &secret);
    let _ = std::fs::write(env.join("env.json"), r#"{"cwd": "/work/proj", "home": "/users/me"}"#);

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
            let root = env.join(["project", "home", "home/.claude"][b(1) % 3]);
            let target =
                [out.clone(), out.join(".claude"), env.join("project"), tmp.path().to_path_buf()][b(2) % 4].clone();
            if root.symlink_metadata().is_ok_and(|m| m.is_dir()) {
                let _ = std::fs::remove_dir_all(&root);
            }
            let _ = std::os::unix::fs::symlink(target, &root);
        }
    }

    let session = match SessionEnv::from_dir(&env) {
        Ok(s) => s,
        Err(e) => return check("the env error", &e.to_string()),
    };
    let direct = MemoryRoots::from_env_dir(&env);
    for approved in [false, true] {
        let mut roots = session.memory_roots();
        roots.external_includes_approved = approved;
        let m = memory::load(&roots);
        for f in m.files.iter().chain(&m.conditional) {
            check(&f.path, &f.content);
        }
        for w in &m.warnings {
            check("a warning", &w.message);
        }
        if let Some(text) = m.render_claude_md() {
            check("claudeMd", &text);
        }
        if let Ok(r) = &direct {
            let mut r = r.clone();
            r.external_includes_approved = approved;
            assert_eq!(memory::load(&r), m);
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
