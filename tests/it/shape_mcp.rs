//! Issue 13 row 9, MCP servers: real captures of Claude Code 2.1.88,
//! 2.1.328 and 2.1.332 run with `--mcp-config` (a stdio server, `ctxasm
//! mock-mcp`, with instructions and two tools, both called:
//! `tests/fixtures/shapes/cc-<v>/mcp-tools`), rebuilt byte for byte with the
//! profile `profile capture --from tests/fixtures/probes/cc-<v>` makes (its
//! `mcp` probe teaches the MCP style) and the capture's `env/` (its
//! `mcp.json` holds the servers' answers). 2.1.88 appends the tools, puts
//! the instructions section in the prompt and drops the static/dynamic
//! boundary; 2.1.328 and 2.1.332 defer the tools and write the instructions
//! as an attachment (records mode too). Without `mcp.json` the requests are
//! built and the session is counted `approximated_mcp`.

use serde_json::Value;
use std::path::Path;

const RELEASES: [&str; 3] = ["2.1.88", "2.1.328", "2.1.332"];

/// `profile capture --from` the release's kept probes: the profile path and
/// the fidelity table's lines.
fn profile(v: &str, dir: &Path) -> (String, String) {
    let out = dir.join(format!("{v}.json"));
    let from = format!("tests/fixtures/probes/cc-{v}");
    let o = crate::common::ctxasm(&["profile", "capture", "--from", &from, "-o", out.to_str().unwrap()]);
    let table = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.is_file(), "{v}: {}", String::from_utf8_lossy(&o.stderr));
    (out.to_str().unwrap().to_string(), table)
}

/// `verify --json` of the mcp-tools capture: exit code, the five wire
/// counts, the report.
fn verify(v: &str, mode: &str, extra: &[&str]) -> (Option<i32>, [u64; 5], Value) {
    let dir = format!("tests/fixtures/shapes/cc-{v}/mcp-tools");
    let (t, w) = (format!("{dir}/transcripts"), format!("{dir}/wire.jsonl"));
    let mut args = vec!["verify", t.as_str(), "--wire", w.as_str(), "--device-id", "wire", "--mode", mode, "--json"];
    args.extend_from_slice(extra);
    let o = crate::common::ctxasm(&args);
    let j: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    let counts = ["wire_requests", "wire_compared", "wire_byte_equal", "wire_unmatched", "wire_side_calls"]
        .map(|k| j[k].as_u64().unwrap_or_else(|| panic!("{k} in {j}")));
    (o.status.code(), counts, j)
}

#[test]
fn mcp_tools_byte_equal_in_pipeline_and_records_mode() {
    let tmp = tempfile::tempdir().unwrap();
    for v in RELEASES {
        let (p, table) = profile(v, tmp.path());
        // The mcp probe itself is rebuilt byte for byte (hello + one call).
        let row = table.lines().find(|l| l.starts_with("mcp ")).unwrap_or_else(|| panic!("{v}: {table}"));
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cols[1..5], ["2", "2", "2", "0"], "{v}: {row}");
        let style: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        assert!(style["mcp"].is_object(), "{v}: no MCP style learned");
        let env = format!("tests/fixtures/shapes/cc-{v}/mcp-tools/env");
        let (code, counts, j) = verify(v, "pipeline", &["--profile", &p, "--env", &env]);
        assert_eq!(counts, [3, 3, 3, 0, 0], "{v} pipeline: {}", j["mismatches"]);
        assert_eq!(code, Some(0), "{v} pipeline");
        assert!(j.get("approximated_mcp").is_none(), "{v}: {j}");
        if v != "2.1.88" {
            let (code, counts, j) = verify(v, "records", &[]);
            assert_eq!(counts, [3, 3, 3, 0, 0], "{v} records: {}", j["mismatches"]);
            assert_eq!(code, Some(0), "{v} records");
        }
    }
}

#[test]
fn without_mcp_json_the_requests_are_built_and_marked_approximated() {
    let tmp = tempfile::tempdir().unwrap();
    let (p, _) = profile("2.1.88", tmp.path());
    let env = tmp.path().join("env");
    let src = Path::new("tests/fixtures/shapes/cc-2.1.88/mcp-tools/env");
    std::fs::create_dir_all(env.join("project")).unwrap();
    std::fs::copy(src.join("env.json"), env.join("env.json")).unwrap();
    std::fs::copy(src.join("project/README.md"), env.join("project/README.md")).unwrap();
    let (code, counts, j) = verify("2.1.88", "pipeline", &["--profile", &p, "--env", env.to_str().unwrap()]);
    // Built (every request compared), not byte-equal (no schemas, no
    // instructions, the boundary kept), and said so.
    assert_eq!(counts, [3, 3, 0, 0, 0], "{j}");
    assert_eq!(code, Some(1));
    assert_eq!(j["approximated_mcp"], 1, "{j}");
    // A bad mcp.json is an error naming the file.
    std::fs::write(env.join("mcp.json"), "{\"servers\": ").unwrap();
    let dir = "tests/fixtures/shapes/cc-2.1.88/mcp-tools/transcripts";
    let o = crate::common::ctxasm(&[
        "assemble",
        dir,
        "--mode",
        "pipeline",
        "--profile",
        &p,
        "--env",
        env.to_str().unwrap(),
        "-o",
        "-",
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("mcp.json"), "{}", String::from_utf8_lossy(&o.stderr));
}
