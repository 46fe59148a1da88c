//! `scripts/bench-compare --self-test`: the regression check's decisions on
//! synthetic timings (a 30% regression fails, noise shaped like the measured
//! one passes, a 5% slowdown is reported but passes, stalls pass, any one
//! metric of wall, CPU and peak RSS fails the gate) and which REF it picks
//! (`--against` on a scratch git repository: nothing compared on main or when
//! the build inputs are the same, the merge base otherwise). No timing of
//! this machine is asserted: the inputs are synthetic and seeded. And the
//! script's own error path: a REF that is no commit stops it (exit 2) before
//! anything is built.

use std::path::Path;
use std::process::{Command, Output};

fn bench_compare(args: &[&str]) -> Output {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    Command::new("python3")
        .arg(repo.join("scripts/bench-compare"))
        .args(args)
        .current_dir(repo)
        .output()
        .expect("python3 is not installed")
}

/// Every check of the self-test, in order: one missing, renamed or failed
/// fails this test.
const CHECKS: [&str; 22] = [
    "noise passes (50 A/A commands of 12 rounds)",
    "twice the measured noise passes",
    "a 30% regression fails",
    "a 30% regression fails while the load doubles over the run",
    "a 20% speedup passes",
    "a steady 5% slowdown is reported, not failed",
    "two 4x stalls on HEAD's side pass",
    "judge",
    "a CPU-only regression fails the gate",
    "a 25% peak RSS growth fails the gate",
    "the table names every metric and the regressions",
    "no regression is said so",
    "nothing compared is said so, neither passed nor failed",
    "on main: REF is HEAD, nothing compared",
    "a docs-only branch: same build inputs, nothing compared",
    "--even-if-same compares it",
    "REF is HEAD but src/ is edited: compared",
    "a branch changing src/: compared against the merge base",
    "an untracked file in src/ counts as a change",
    "an unknown REF is an error",
    "no main: said so, nothing compared",
    "a REF far slower than HEAD is stopped in its warm-up, the rest compared",
];

#[test]
#[ignore = "needs python3 and git (CI has both)"]
fn bench_compare_self_test_passes_every_check() {
    let out = bench_compare(&["--self-test"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench-compare --self-test failed:\n{stdout}\n{stderr}");
    let verdicts: Vec<&str> = stdout.lines().filter(|l| l.starts_with("self-test")).collect();
    assert_eq!(verdicts.len(), CHECKS.len() + 1, "one line per check and the summary:\n{stdout}");
    for (line, check) in verdicts.iter().zip(CHECKS) {
        // `self-test ok   NAME` or `self-test ok   NAME: detail`.
        let rest = line.strip_prefix("self-test ok   ").and_then(|r| r.strip_prefix(check));
        assert!(
            matches!(rest, Some(r) if r.is_empty() || r.starts_with(": ")),
            "expected {check:?} ok, got {line:?}\n{stdout}"
        );
    }
    assert_eq!(verdicts[CHECKS.len()], "self-test: all passed", "{stdout}");
}

#[test]
#[ignore = "needs python3 and git (CI has both)"]
fn bench_compare_against_an_unknown_ref_stops_before_building() {
    // Checked before the release build: this run builds nothing.
    let out = bench_compare(&["--quick", "--against", "no-such-ref-for-bench-compare"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "bench-compare: error: --against no-such-ref-for-bench-compare: not a commit in this repository\n"
    );
}
