//! Load-level tests of memory loading: the captured fixtures of both
//! releases byte for byte, then hand-made snapshots (includes, symlinks,
//! comments, rules, truncation).

use super::truncate::truncate_entrypoint;
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
            ("/home/dev/projects/memory-files/docs/style.md", MemoryKind::Project, Some(&*format!("{p}/CLAUDE.md"))),
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
        let instr: Vec<&&Value> = attachments.iter().filter(|e| e["attachment"]["type"] == "instructions").collect();
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
fn memory_as_read_keeps_comments_and_the_last_newline() {
    // 2.1.0/2.1.50 send memory files as read (memory-files captures).
    let mut s = snap();
    write(&s.proj, "CLAUDE.md", "<!-- maintainers only -->\n# Project\n");
    write(&s.claude, "CLAUDE.md", "Be terse.\n");
    let trimmed = load(&s.roots).render_claude_md().unwrap();
    assert!(trimmed.ends_with("checked into the codebase):\n\n# Project"), "{trimmed}");
    assert!(trimmed.contains("Be terse.\n\nContents of"), "{trimmed}");
    s.roots.keep_comments = true;
    let verbatim = load(&s.roots).render_claude_md_as(false).unwrap();
    assert!(verbatim.ends_with("codebase):\n\n<!-- maintainers only -->\n# Project\n"), "{verbatim}");
    assert!(verbatim.contains("Be terse.\n\n\nContents of"), "{verbatim}");
}

// -- hostile snapshots (issue 14) -----------------------------------------

#[test]
fn memory_files_are_capped_per_file_and_per_session() {
    let s = snap();
    let big = MAX_MEMORY_FILE_BYTES + MAX_MEMORY_FILE_BYTES / 2;
    let mut includes = String::new();
    for i in 0..20 {
        let f = fs::File::create(s.proj.join(format!("big{i}.md"))).unwrap();
        f.set_len(big).unwrap();
        includes.push_str(&format!("@big{i}.md "));
    }
    // A multi-byte character across the cut is dropped whole.
    let mut text = "é".repeat(usize::try_from(MAX_MEMORY_FILE_BYTES).unwrap() / 2 + 1).into_bytes();
    text.insert(0, b'x');
    fs::write(s.proj.join("accents.md"), &text).unwrap();
    write(&s.proj, "CLAUDE.md", &format!("@accents.md {includes}\n"));
    let m = load(&s.roots);
    let total: usize = m.files.iter().map(|f| f.content.len()).sum();
    assert!(total as u64 <= MAX_MEMORY_SESSION_BYTES, "{total}");
    let accents = m.files.iter().find(|f| f.path == "/work/proj/accents.md").unwrap();
    assert_eq!(accents.content.len() as u64, MAX_MEMORY_FILE_BYTES - 1);
    assert!(!accents.content.contains('\u{fffd}'));
    let warned = |p: &str| m.warnings.iter().find(|w| w.path == p).map(|w| w.message.as_str()).unwrap_or("");
    assert!(warned("/work/proj/big0.md").starts_with("cut: "), "{:?}", m.warnings);
    assert!(warned("/work/proj/big0.md").contains("(included from /work/proj/CLAUDE.md)"));
    assert!(warned("/work/proj/big19.md").contains("reached the 16777216-byte cap"), "{:?}", m.warnings);
}

#[test]
fn env_dir_with_a_symlinked_root_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    write(&outside, "CLAUDE.md", "@passwd\n");
    write(&outside, ".claude/CLAUDE.md", "@~/.claude/passwd\n");
    write(&outside, "passwd", "root:x:0:0\n");
    for (link, target) in [("project", outside.clone()), ("home", outside.clone()), ("home/.claude", outside.clone())] {
        let env = tmp.path().join(format!("env-{}", link.replace('/', "-")));
        write(&env, "env.json", "{\"cwd\": \"/work/proj\", \"home\": \"/users/me\"}");
        fs::create_dir_all(env.join("project")).unwrap();
        fs::create_dir_all(env.join("home")).unwrap();
        let p = env.join(link);
        let _ = fs::remove_dir(&p);
        std::os::unix::fs::symlink(&target, &p).unwrap();
        let err = MemoryRoots::from_env_dir(&env).unwrap_err().to_string();
        assert!(err.contains("symlink") && err.contains(&p.display().to_string()), "{err}");
        let err = crate::env::SessionEnv::from_dir(&env).unwrap_err().to_string();
        assert!(err.contains("symlink") && err.contains(&p.display().to_string()), "{err}");
    }
}

#[test]
fn env_dir_roots_refuse_what_the_session_env_refuses() {
    // Found by the memory_layout fuzz target: `from_env_dir` read env.json
    // through a link out of the snapshot, and took a snapshot whose
    // mcp.json `SessionEnv::from_dir` refuses.
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    let good = "{\"cwd\": \"/work/proj\", \"home\": \"/users/me\"}";
    write(&outside, "env.json", good);
    // env.json a link out of the snapshot; mcp.json not JSON; env.json
    // with a wrong-typed member.
    for (k, file) in ["env.json", "mcp.json", "env.json"].into_iter().enumerate() {
        let env = tmp.path().join(format!("env{k}"));
        fs::create_dir_all(env.join("project")).unwrap();
        match k {
            0 => std::os::unix::fs::symlink(outside.join("env.json"), env.join("env.json")).unwrap(),
            1 => {
                write(&env, "env.json", good);
                write(&env, "mcp.json", "{\"servers\": ");
            }
            _ => write(&env, "env.json", "{\"cwd\": \"/w\", \"home\": \"/h\", \"is_git\": \"yes\"}"),
        }
        let want = crate::env::SessionEnv::from_dir(&env).unwrap_err().to_string();
        let err = MemoryRoots::from_env_dir(&env).map(|_| ()).unwrap_err().to_string();
        assert_eq!(err, want, "case {k}");
        assert!(err.contains(&env.join(file).display().to_string()), "case {k}: {err}");
    }
    // A snapshot from_dir reads gives the roots of its memory_roots().
    let env = tmp.path().join("env0");
    fs::remove_file(env.join("env.json")).unwrap();
    write(&env, "env.json", good);
    let session = crate::env::SessionEnv::from_dir(&env).unwrap();
    assert_eq!(MemoryRoots::from_env_dir(&env).unwrap(), session.memory_roots());
}
