//! The README's `console` blocks, run: each `$ ctxasm …` line is run and
//! what it prints (stdout and stderr, in order) must be the lines below it
//! (`[..]` matches anything within a line, `...` any lines). So the
//! examples cannot go stale.
//!
//! They run in a sandbox (a temporary directory) that holds links to
//! `corpora/` and `tests/`: outputs such as `requests.jsonl` land there,
//! never in the checkout.

use std::path::Path;

#[test]
fn readme_examples_print_what_the_readme_says() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    let case = tmp.path().join("README.md");
    let readme = std::fs::read_to_string(repo.join("README.md")).unwrap();
    let blocks = readme.matches("\n```console\n").count();
    assert!(blocks >= 2, "the README has {blocks} console blocks");
    std::fs::write(&case, readme).unwrap();
    // `README.in` is the sandbox's template (copied, links as links),
    // `README.out` makes trycmd run in a sandbox (no files to compare).
    let template = tmp.path().join("README.in");
    std::fs::create_dir(&template).unwrap();
    for dir in ["corpora", "tests"] {
        std::os::unix::fs::symlink(repo.join(dir), template.join(dir)).unwrap();
    }
    std::fs::create_dir(tmp.path().join("README.out")).unwrap();
    trycmd::TestCases::new()
        .register_bin("ctxasm", Path::new(env!("CARGO_BIN_EXE_ctxasm")))
        // The cache path the README shows, relative to the sandbox (empty).
        .env("CTXASM_CACHE_DIR", "~/.cache/ctxasm")
        .env("NO_COLOR", "1")
        .case(&case);
}
