//! The binary's exit-status policy seen from outside: a reader that closes
//! the pipe early (`| head`) is not an error.

use std::io::Read;
use std::process::{Command, Stdio};

/// Run ctxasm with stdout on a pipe of which `keep` bytes are read before
/// the read end is closed; the exit code and stderr.
fn closed_early(args: &[&str], keep: usize) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ctxasm"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut head = vec![0u8; keep];
    stdout.read_exact(&mut head).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
#[cfg(unix)]
fn assemble_piped_to_head_exits_0() {
    // ctxasm's own status, echoed to stderr (the pipeline's is head's).
    // 450 kB of output, more than a pipe holds: the write after head exits
    // fails (stats' few kB would fit and prove nothing).
    let script = format!(
        "{{ '{}' assemble corpora/sample; echo \"status $?\" >&2; }} | head -c 10",
        env!("CARGO_BIN_EXE_ctxasm")
    );
    let out = Command::new("sh").arg("-c").arg(script).output().unwrap();
    assert_eq!(out.stdout.len(), 10);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().last(), Some("status 0"), "{stderr}");
}

#[test]
fn assemble_into_a_closed_pipe_exits_0() {
    // 450 kB of output: the pipe fills, so the write after the close fails.
    let (code, stderr) = closed_early(&["assemble", "corpora/sample"], 10);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("Broken pipe"), "{stderr}");
}

#[test]
fn a_missing_input_still_exits_2() {
    let out = crate::common::bin().args(["stats", "no/such/dir"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
