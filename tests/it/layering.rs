//! The library's layering, checked on its source: each module may use only
//! the modules of its own layer or of the layers before it, and no two
//! modules use each other (directly or around a circle), neither between
//! top-level modules nor between the files of one of them.
//!
//! `json`/`time`/`diag`/`bucket` → `model` → `input` → `corpus` → `env` →
//! `profile` → `assemble` → `write` → `verify`/`stats`/`baseline` → `cost`
//! → `send`/`mock` → `cli` (the binary, not checked: it may use anything).
//!
//! Test code (`#[cfg(test)]` modules, `tests.rs` files) may reach anywhere:
//! a unit test parses a fixture with `input` wherever it lives.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, first to last.
const LAYERS: &[&[&str]] = &[
    &["json", "time", "diag", "bucket"],
    &["model"],
    &["input"],
    &["corpus"],
    &["env"],
    &["profile"],
    &["assemble"],
    &["write"],
    &["verify", "stats", "baseline"],
    &["cost"],
    &["send", "mock"],
    &["probe"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// Every `.rs` file of the library (not the binary's `cli/` and `main.rs`).
fn library_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::from("src")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                if p != Path::new("src/cli") {
                    stack.push(p);
                }
            } else if p.extension().is_some_and(|x| x == "rs") && p != Path::new("src/main.rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The module path of a file: `src/cost/sim/mod.rs` → `[cost, sim]`.
fn module_path(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix("src").unwrap();
    let mut parts: Vec<String> = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    parts
}

/// The source without its test modules and comments.
fn non_test_code(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let t = line.trim_start();
        if line.starts_with("#[cfg(test)]") {
            break;
        }
        if t.starts_with("//") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The module paths a file's code names: `crate::a::b…` and `super::…`
/// (resolved against the file's module), each as its first two segments.
fn references(path: &[String], code: &str) -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    let idents = |s: &str| -> Vec<String> {
        s.split("::")
            .map(|seg| seg.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>())
            .take_while(|seg| !seg.is_empty())
            .collect()
    };
    // `super` is the parent of the file's module (`foo.rs` and
    // `foo/mod.rs` alike: both are module `foo`).
    let parent: Vec<String> = path[..path.len().saturating_sub(1)].to_vec();
    for (prefix, base) in [("crate::", Vec::new()), ("super::", parent)] {
        let mut rest = code;
        while let Some(at) = rest.find(prefix) {
            let before = rest[..at].chars().last();
            rest = &rest[at + prefix.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let mut names: Vec<Vec<String>> = Vec::new();
            if let Some(group) = rest.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                for item in group[..end].split(',') {
                    names.push(idents(item.trim()));
                }
            } else {
                names.push(idents(rest));
            }
            for n in names.into_iter().filter(|n| !n.is_empty()) {
                let mut full = base.clone();
                full.extend(n);
                full.truncate(2);
                out.insert(full);
            }
        }
    }
    out
}

struct Graph {
    /// (from module, to module) edges with the file that makes each.
    edges: BTreeMap<(String, String), String>,
}

impl Graph {
    fn cycles(&self) -> Vec<String> {
        let nodes: BTreeSet<&String> = self.edges.keys().flat_map(|(a, b)| [a, b]).collect();
        let mut found = Vec::new();
        for start in &nodes {
            // Is `start` reachable from any node it points to?
            let mut seen = BTreeSet::new();
            let mut stack: Vec<&String> = self.edges.keys().filter(|(a, _)| a == *start).map(|(_, b)| b).collect();
            while let Some(n) = stack.pop() {
                if n == *start {
                    found.push(format!("{start} is in a circle of imports"));
                    break;
                }
                if seen.insert(n) {
                    stack.extend(self.edges.keys().filter(|(a, _)| a == n).map(|(_, b)| b));
                }
            }
        }
        found
    }
}

#[test]
fn modules_use_only_earlier_layers_and_no_module_circles() {
    let mut problems = Vec::new();
    let mut top = Graph { edges: BTreeMap::new() };
    let mut inner = Graph { edges: BTreeMap::new() };
    let files = library_files();
    assert!(files.len() > 50, "the test must see the library: {} files", files.len());
    for file in &files {
        if file.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let path = module_path(file);
        let Some(own) = path.first() else { continue };
        let Some(own_layer) = layer_of(own) else {
            problems.push(format!("{}: module `{own}` is in no layer (add it to LAYERS)", file.display()));
            continue;
        };
        let text = std::fs::read_to_string(file).unwrap();
        for r in references(&path, &non_test_code(&text)) {
            let target = &r[0];
            let Some(layer) = layer_of(target) else { continue };
            if layer > own_layer {
                problems.push(format!("{}: `{own}` uses `{}`, a later layer", file.display(), r.join("::")));
            }
            if target != own {
                top.edges.entry((own.clone(), target.clone())).or_insert_with(|| file.display().to_string());
            } else if path.len() >= 2 && r.len() == 2 && r[1] != path[1] {
                inner
                    .edges
                    .entry((format!("{own}::{}", path[1]), r.join("::")))
                    .or_insert_with(|| file.display().to_string());
            }
        }
    }
    problems.extend(top.cycles());
    problems.extend(inner.cycles());
    assert!(problems.is_empty(), "{} layering problems:\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn the_checker_sees_a_back_edge_and_a_circle() {
    let refs = references(
        &["model".into(), "tree".into()],
        "use crate::assemble::Body;\nuse super::{entry, content::Block};\nfn f() { crate::time::now_ms(); }",
    );
    let want: BTreeSet<Vec<String>> = [
        vec!["assemble".to_string(), "Body".to_string()],
        vec!["model".to_string(), "entry".to_string()],
        vec!["model".to_string(), "content".to_string()],
        vec!["time".to_string(), "now_ms".to_string()],
    ]
    .into_iter()
    .collect();
    assert_eq!(refs, want);
    assert!(layer_of("assemble") > layer_of("model"));
    let g = Graph {
        edges: [
            (("a".to_string(), "b".to_string()), String::new()),
            (("b".to_string(), "a".to_string()), String::new()),
        ]
        .into_iter()
        .collect(),
    };
    assert_eq!(g.cycles().len(), 2);
    assert_eq!(non_test_code("use a;\n// use crate::x;\n#[cfg(test)]\nmod tests { use crate::y; }\n"), "use a;\n");
}
