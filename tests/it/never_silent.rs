//! Never succeed at nothing: read problems reach every command and
//! `--strict`, nothing found is its own exit status (3), `--mode auto` is
//! the default, and an output is whole or absent (issue 14).

use std::path::Path;

const HELLO: &str = "tests/fixtures/cc-2.1.328/hello/transcripts";

/// A copy of the 2.1.328 hello session with an invalid JSON line and an
/// invalid UTF-8 line appended.
fn broken_corpus(tmp: &Path) -> std::path::PathBuf {
    let dir = tmp.join("bad/proj");
    std::fs::create_dir_all(&dir).unwrap();
    let src = std::fs::read_dir(HELLO).unwrap().next().unwrap().unwrap().path();
    let file = std::fs::read_dir(&src).unwrap().next().unwrap().unwrap().path();
    let mut bytes = std::fs::read(file).unwrap();
    let lines = bytes.iter().filter(|&&b| b == b'\n').count();
    bytes.extend_from_slice(b"{\"broken\n\xff\xfe\n");
    std::fs::write(dir.join("s.jsonl"), bytes).unwrap();
    assert!(lines > 0);
    tmp.join("bad")
}

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let o = crate::common::ctxasm(args);
    (o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn read_problems_reach_assemble_cost_and_verify() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = broken_corpus(tmp.path());
    let bad = bad.to_str().unwrap();
    let out = tmp.path().join("o.jsonl");
    let (code, _, err) = run(&["assemble", bad, "-o", out.to_str().unwrap(), "--json", "--strict"]);
    assert_eq!(code, Some(1), "{err}");
    let j: serde_json::Value = serde_json::from_str(err.trim()).unwrap_or_else(|e| panic!("{e}: {err}"));
    let kinds: Vec<&str> = j["diagnostics"].as_array().unwrap().iter().map(|d| d["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["invalid_json", "invalid_utf8"]);
    assert!(out.is_file(), "what could be rebuilt is still written");
    for extra in [&[][..], &["--recorded-only"][..]] {
        let mut args = vec!["cost", bad, "--strict"];
        args.extend_from_slice(extra);
        let (code, _, err) = run(&args);
        assert_eq!(code, Some(1), "{args:?}: {err}");
        assert!(err.contains("s.jsonl:") && err.contains("invalid_json"), "{args:?}: {err}");
        assert!(err.contains("2 diagnostics and --strict"), "{args:?}: {err}");
    }
    let (code, stdout, _) = run(&["verify", bad, "--json"]);
    assert_eq!(code, Some(1));
    let j: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let msgs: Vec<&str> = j["mismatches"].as_array().unwrap().iter().map(|m| m["message"].as_str().unwrap()).collect();
    assert_eq!(msgs, ["invalid JSON: Syntax at character 0", "line is not valid UTF-8"]);
}

#[test]
fn nothing_found_exits_3_and_says_where_it_looked() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = tmp.path().join("out.jsonl");
    for cmd in [&["stats"][..], &["assemble", "-o", out.to_str().unwrap()][..], &["cost"][..], &["verify"][..]] {
        let mut args = cmd.to_vec();
        args.push(empty.to_str().unwrap());
        let (code, stdout, err) = run(&args);
        assert_eq!(code, Some(3), "{args:?}: {err}");
        assert!(err.contains("no transcript (*.jsonl) under ") && err.contains("empty"), "{args:?}: {err}");
        assert!(stdout.is_empty(), "{args:?}: no zero table: {stdout}");
    }
    assert!(!out.exists(), "no output file for nothing");
    // The default roots, absent.
    let o = crate::common::bin().arg("stats").env("CLAUDE_CONFIG_DIR", tmp.path().join("nope")).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("nope/projects, which does not exist") && err.contains("set CLAUDE_CONFIG_DIR"), "{err}");
    // Transcripts without one request from the API.
    let p = tmp.path().join("noreq/p");
    std::fs::create_dir_all(&p).unwrap();
    std::fs::write(
        p.join("s.jsonl"),
        "{\"type\":\"user\",\"uuid\":\"a\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n",
    )
    .unwrap();
    let (code, _, err) = run(&["assemble", tmp.path().join("noreq").to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("1 session read, no request to write"), "{err}");
    assert!(!out.exists());
}

#[test]
fn auto_is_the_default_mode_and_says_which_path_each_session_took() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("o.jsonl");
    // A 2.0.77 session has no records: the pipeline builds it.
    let (code, _, err) =
        run(&["assemble", "tests/fixtures/cc-2.0.77/hello/transcripts", "-o", out.to_str().unwrap(), "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let j: serde_json::Value =
        serde_json::from_str(err.trim()).unwrap_or_else(|e| panic!("only JSON on stderr: {e}: {err}"));
    assert_eq!((j["sessions"].as_u64(), j["pipeline_sessions"].as_u64()), (Some(1), Some(1)));
    assert!(j["requests_written"].as_u64().unwrap() > 0);
    let (code, _, err) = run(&["assemble", HELLO, "-o", out.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    let summary: Vec<&str> = err.lines().skip(1).collect();
    assert!(err.starts_with(&format!("ctxasm: 1 request of 1 session written to {}, ", out.display())), "{err}");
    assert_eq!(
        summary,
        [
            "  Claude Code  sessions  requests  from records  proven  profile",
            "  2.1.328             1         1             1       1  recorded",
            "  proven: every message, the system prompt and the tools matched the SHA-256 the transcript recorded",
        ],
        "{err}"
    );
}

#[test]
fn outputs_are_whole_or_absent_and_never_read_back() {
    let tmp = tempfile::tempdir().unwrap();
    let x = tmp.path().join("x.jsonl");
    let (code, _, _) = run(&["assemble", "/nonexistent-ctxasm-input", "-o", x.to_str().unwrap()]);
    assert_eq!(code, Some(2));
    assert!(!x.exists(), "a failed run leaves no file");
    // Output inside the input: the second run does not read the first's.
    let dir = tmp.path().join("in");
    let session = std::fs::read_dir(HELLO).unwrap().next().unwrap().unwrap().path();
    std::fs::create_dir_all(dir.join("p")).unwrap();
    for f in std::fs::read_dir(&session).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, dir.join("p").join(f.file_name().unwrap())).unwrap();
    }
    let out = dir.join("out.jsonl");
    for round in 0..2 {
        let (code, _, err) = run(&["assemble", dir.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        assert_eq!(code, Some(0), "{round}: {err}");
        assert!(err.contains(" of 1 session written to "), "{round}: {err}");
        assert_eq!(err.contains("1 file not read: the output of this run"), round == 1, "{round}: {err}");
    }
    // expand of a store without its manifest: an error, no output.
    let half = tmp.path().join("half");
    std::fs::create_dir(&half).unwrap();
    std::fs::write(half.join("segments.bin"), b"").unwrap();
    let e = tmp.path().join("e.jsonl");
    let (code, _, err) = run(&["expand", half.to_str().unwrap(), "-o", e.to_str().unwrap()]);
    assert_eq!(code, Some(2));
    assert!(err.contains("not a complete dedup store (no manifest.json"), "{err}");
    assert!(!e.exists());
    let (code, _, err) = run(&["assemble", HELLO, "--format", "dedup", "-o", half.to_str().unwrap()]);
    assert_eq!(code, Some(2));
    assert!(err.contains("an incomplete dedup store (no manifest.json: left by an interrupted run)"), "{err}");
}

/// Run ctxasm with `args` (which name `fifo` as the output) while this
/// process reads the FIFO; never hangs, even when ctxasm fails before it
/// opens the FIFO: the read end is opened without blocking and read until
/// ctxasm has exited and no writer is left. (exit code, stderr, bytes read)
fn through_fifo(fifo: &Path, args: &[&str]) -> (Option<i32>, String, Vec<u8>) {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    const O_NONBLOCK: i32 = 0o4000; // Linux
    let mut rx = std::fs::OpenOptions::new().read(true).custom_flags(O_NONBLOCK).open(fifo).unwrap();
    let mut child = crate::common::bin()
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (mut got, mut buf) = (Vec::new(), vec![0u8; 1 << 16]);
    let mut exited = false;
    loop {
        match rx.read(&mut buf) {
            Ok(0) if exited => break,
            Ok(0) => {}
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                continue;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => panic!("{e}"),
        }
        exited = exited || child.try_wait().unwrap().is_some();
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let out = child.wait_with_output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned(), got)
}

/// An `-o` target that is not a regular file (a FIFO here, `/dev/null` in
/// practice) is written as it is: the temporary-name-and-rename of a
/// regular file would replace the device with a file (a test run with
/// `-o /dev/null` once left the machine's `/dev/null` a regular file,
/// which broke every later build). A symbolic link is followed: the file
/// it names is replaced, the link stays.
#[test]
fn outputs_to_a_fifo_or_through_a_link_keep_what_the_target_is() {
    use std::os::unix::fs::FileTypeExt;
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("pipe");
    let ok = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(ok.success());
    let (code, err, through) = through_fifo(&fifo, &["assemble", HELLO, "-o", fifo.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO was replaced");
    let plain = tmp.path().join("plain.jsonl");
    let (code, _, err) = run(&["assemble", HELLO, "-o", plain.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    let expected = std::fs::read(&plain).unwrap();
    assert!(!expected.is_empty());
    assert_eq!(through, expected, "the FIFO's reader got the whole output");
    // write_atomic's path (profile extract -o) to a FIFO as well.
    let wire = "tests/fixtures/cc-2.1.328/hello/wire.jsonl";
    let (code, err, profile) = through_fifo(&fifo, &["profile", "extract", wire, "-o", fifo.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(profile.starts_with(b"{"), "{}", String::from_utf8_lossy(&profile[..profile.len().min(200)]));
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    // Through a link: the linked file gets the output, the link stays a link.
    let real = tmp.path().join("real.jsonl");
    std::fs::write(&real, b"old\n").unwrap();
    let link = tmp.path().join("link.jsonl");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let (code, _, err) = run(&["assemble", HELLO, "-o", link.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link was replaced");
    assert_eq!(std::fs::read(&real).unwrap(), expected);
    // A directory is refused, naming it.
    let (code, _, err) = run(&["assemble", HELLO, "-o", tmp.path().to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("is a directory"), "{err}");
    // No temporary file is left beside any of them.
    let left: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
