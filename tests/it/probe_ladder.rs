//! Issue 12, the release ladder: every ladder release's probe captures
//! (`tests/fixtures/probes/cc-<v>`, made with `ctxasm profile capture <v>
//! --keep DIR` from the real CLI of that release) rebuilt byte for byte by
//! the profile `profile capture --from` makes of them. The fidelity table
//! each prints is asserted row by row; the rows not yet byte-equal are
//! listed with their exact counts, so a fix or a regression shows here.
//! Then every ladder scenario capture (`tests/fixtures/cc-<v>/*`, made
//! with the corpora's scenario list) is verified in pipeline mode with
//! that profile: a profile made by one `profile capture` rebuilds them.

use std::collections::BTreeMap;

const LADDER: [&str; 13] = [
    "1.0.128", "2.0.77", "2.1.0", "2.1.50", "2.1.88", "2.1.100", "2.1.150", "2.1.198", "2.1.250", "2.1.275", "2.1.300",
    "2.1.328", "2.1.332",
];

/// Rows not byte-equal yet: (release, probe, [requests, compared, byte-equal, unmatched]).
const GAPS: [(&str, &str, [u64; 4]); 0] = [];

/// Probes a release has no feature for: the CLI answers without the model,
/// and the table says so (1.0.128 has no skills: "Unknown slash command").
const UNSUPPORTED: [(&str, &str); 1] = [("1.0.128", "skill")];

/// Ladder scenarios not byte-equal yet with the probes' profile:
/// (release, scenario, [byte-equal, requests]).
const SCENARIO_GAPS: [(&str, &str, [u64; 2]); 0] = [];

/// The table of `profile capture --from` the release's probes: probe ->
/// [requests, compared, byte-equal, unmatched], and the exit code; the
/// profile is written to `out`.
fn table(v: &str, out: &std::path::Path) -> (BTreeMap<String, [u64; 4]>, Vec<String>, Option<i32>) {
    let from = format!("tests/fixtures/probes/cc-{v}");
    let o = crate::common::ctxasm(&["profile", "capture", "--from", &from, "-o", out.to_str().unwrap()]);
    assert!(out.is_file(), "{v}: no profile: {}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut rows = BTreeMap::new();
    let mut unsupported = Vec::new();
    for line in text.lines().skip(1) {
        if line.ends_with("(not supported by this release: answered without the model)") {
            unsupported.push(line.split_whitespace().next().unwrap_or("").to_string());
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        let n: Vec<u64> = f.iter().skip(1).filter_map(|x| x.parse().ok()).collect();
        assert!(n.len() >= 4, "{v}: unreadable row {line:?}");
        rows.insert(f[0].to_string(), [n[0], n[1], n[2], n[3]]);
    }
    (rows, unsupported, o.status.code())
}

#[test]
fn every_ladder_release_rebuilds_its_probes_byte_for_byte() {
    let mut failures = Vec::new();
    let dir = tempfile::tempdir().unwrap();
    for v in LADDER {
        let profile = dir.path().join(format!("{v}.json"));
        let (rows, unsupported, code) = table(v, &profile);
        assert!(rows.len() >= 12, "{v}: {} probes in the table", rows.len());
        let want_unsupported: Vec<&str> = UNSUPPORTED.iter().filter(|u| u.0 == v).map(|u| u.1).collect();
        if unsupported != want_unsupported {
            failures.push(format!("{v}: unsupported probes {unsupported:?}, want {want_unsupported:?}"));
        }
        for (probe, got) in &rows {
            if want_unsupported.contains(&probe.as_str()) {
                if *got != [0, 0, 0, 0] {
                    failures.push(format!("{v} {probe}: {got:?} for a probe it does not support"));
                }
                continue;
            }
            let want = GAPS.iter().find(|g| g.0 == v && g.1 == probe).map_or([got[0], got[0], got[0], 0], |g| g.2);
            assert!(got[0] > 0, "{v} {probe}: no request rebuilt");
            if *got != want {
                failures.push(format!("{v} {probe}: {got:?}, want {want:?}"));
            }
        }
        let gap = GAPS.iter().any(|g| g.0 == v);
        if code != Some(i32::from(gap)) {
            failures.push(format!("{v}: exit {code:?}, want {}", i32::from(gap)));
        }
        scenarios(v, &profile, &mut failures);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every ladder scenario of release `v`, verified in pipeline mode with the
/// probes' profile: byte-equal / requests as [`SCENARIO_GAPS`] says.
fn scenarios(v: &str, profile: &std::path::Path, failures: &mut Vec<String>) {
    let root = format!("tests/fixtures/cc-{v}");
    let mut names: Vec<String> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{root}: {e}"))
        .filter_map(Result::ok)
        .filter(|e| e.path().join("wire.jsonl").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(!names.is_empty(), "{root}: no scenario captures");
    for s in names {
        let d = format!("{root}/{s}");
        let (t, w, e) = (format!("{d}/transcripts"), format!("{d}/wire.jsonl"), format!("{d}/env"));
        let p = profile.to_str().unwrap();
        let args = [
            "verify",
            &t,
            "--wire",
            &w,
            "--device-id",
            "wire",
            "--json",
            "--mode",
            "pipeline",
            "--profile",
            p,
            "--env",
            &e,
        ];
        let o = crate::common::ctxasm(&args);
        let j: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|err| panic!("{d}: {err}: {}", String::from_utf8_lossy(&o.stderr)));
        let n = |k: &str| j[k].as_u64().unwrap_or_else(|| panic!("{d}: {k} in {j}"));
        let got = [n("wire_byte_equal"), n("wire_requests")];
        let want = SCENARIO_GAPS.iter().find(|g| g.0 == v && g.1 == s).map_or([got[1], got[1]], |g| g.2);
        if got != want || got[1] == 0 || n("wire_unmatched") != 0 {
            failures.push(format!("{v} scenario {s}: {got:?} (unmatched {}), want {want:?}", n("wire_unmatched")));
        }
    }
}
