//! Bad and moving input: random corruption never panics and never costs more
//! than the lines it touches; a 100 MB line parses; a file appended to (and
//! replaced) while it is read gives complete entries or a `truncated_line`.

use bumpalo::Bump;
use ctxasm::corpus::RunOptions;
use ctxasm::diag::DiagKind;
use ctxasm::input::discover::discover;
use ctxasm::input::{ReadOptions, parse_bytes, read_file};
use ctxasm::model::content::BlockKind;
use ctxasm::model::messages::assistant_messages;
use ctxasm::model::tree::Tree;
use proptest::prelude::*;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// A real Claude Code 2.1.328 transcript (32 lines).
const REAL: &[u8] =
    include_bytes!("../../corpora/sample/-home-dev-projects-parallel-tools/bc4a5825-e230-4da5-b082-11127d358a34.jsonl");

fn good_entries(data: &[u8]) -> usize {
    let bump = Bump::new();
    let mut p = parse_bytes(&bump, data, "p.jsonl", &ReadOptions::default());
    let tree = Tree::build(&p.entries, "p.jsonl", &|_| false, &mut p.diagnostics);
    let _ = tree.active_branch();
    let _ = assistant_messages(&p.entries);
    assert!(p.bad_lines <= p.lines);
    p.entries.len()
}

#[derive(Debug, Clone)]
enum Edit {
    Flip(usize, u8),
    Insert(usize, u8),
    Delete(usize),
    Truncate(usize),
}

fn apply(data: &[u8], edit: &Edit) -> Vec<u8> {
    let mut d = data.to_vec();
    match *edit {
        Edit::Flip(i, b) => d[i % data.len()] ^= b | 1,
        Edit::Insert(i, b) => d.insert(i % data.len(), b),
        Edit::Delete(i) => {
            d.remove(i % data.len());
        }
        Edit::Truncate(i) => d.truncate(i % data.len()),
    }
    d
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::Flip(i, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::Insert(i, b)),
        any::<usize>().prop_map(Edit::Delete),
        any::<usize>().prop_map(Edit::Truncate),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// One corrupted byte never panics and loses at most the two lines it
    /// can touch (the line it is in, and its neighbour when it hits a
    /// newline); a truncation loses only what was cut plus one line.
    #[test]
    fn corruption_never_panics_and_stays_local(e in edit()) {
        let total = good_entries(REAL);
        let corrupted = apply(REAL, &e);
        let got = good_entries(&corrupted);
        match e {
            Edit::Truncate(i) => {
                let cut = i % REAL.len();
                let whole_lines = REAL[..cut].iter().filter(|&&b| b == b'\n').count();
                prop_assert!(got >= whole_lines, "{got} < {whole_lines}");
            }
            _ => prop_assert!(got + 2 >= total, "{got} of {total}"),
        }
    }

    /// Arbitrary bytes, many corruptions at once: never a panic.
    #[test]
    fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..2048),
                                edits in proptest::collection::vec(edit(), 0..40)) {
        let mut d: Vec<u8> = REAL[..4096].to_vec();
        d.extend_from_slice(&data);
        for e in &edits {
            if !d.is_empty() {
                d = apply(&d, e);
            }
        }
        good_entries(&d);
    }
}

#[test]
fn a_100_mb_line_parses() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    f.write_all(b"{\"type\":\"summary\",\"summary\":\"before\"}\n").unwrap();
    f.write_all(br#"{"type":"user","uuid":"u1","message":{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":""#).unwrap();
    let chunk = vec![b'A'; 1 << 20];
    for _ in 0..100 {
        f.write_all(&chunk).unwrap();
    }
    f.write_all(b"\"}}]}}\n{\"type\":\"summary\",\"summary\":\"after\"}\n").unwrap();
    drop(f);
    let bump = Bump::new();
    let p = read_file(&bump, &path, "big.jsonl", &ReadOptions::default());
    assert!(p.diagnostics.is_empty(), "{:?}", p.diagnostics);
    assert_eq!(p.entries.len(), 3);
    let user = p.entries[1].as_user().unwrap();
    match user.content.blocks()[0].kind {
        BlockKind::Image { source } => assert_eq!(source.data_len, 100 << 20),
        other => panic!("{other:?}"),
    }
    // With a limit the line is skipped, the others are kept.
    let bump = Bump::new();
    let opts = ReadOptions { max_line_bytes: 1 << 20, ..ReadOptions::default() };
    let p = read_file(&bump, &path, "big.jsonl", &opts);
    assert_eq!(p.entries.len(), 2);
    assert_eq!(p.diagnostics.len(), 1);
    assert_eq!((p.diagnostics[0].line, p.diagnostics[0].kind), (2, DiagKind::LineTooLong));
}

fn line(n: u32) -> String {
    let parent = if n == 0 { "null".to_string() } else { format!("\"u{}\"", n - 1) };
    format!(
        "{{\"type\":\"user\",\"uuid\":\"u{n}\",\"parentUuid\":{parent},\"message\":{{\"role\":\"user\",\"content\":\"text-{n}-{}\"}}}}\n",
        "x".repeat((n as usize * 37) % 300)
    )
}

/// A writer appends lines in two halves (so a reader can see half a line)
/// and now and then replaces the file; readers never see a damaged entry.
#[test]
fn live_file_appends_and_replacements() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.jsonl");
    std::fs::write(&path, line(0)).unwrap();
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut n = 1;
            for round in 0..2000u32 {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                if round % 500 == 499 {
                    // The file vanishes and comes back (an atomic replace).
                    let tmp = dir.path().join("tmp");
                    std::fs::write(&tmp, line(0)).unwrap();
                    std::fs::rename(&tmp, &path).unwrap();
                    n = 1;
                    continue;
                }
                let text = line(n);
                let (a, b) = text.as_bytes().split_at(text.len() / 2);
                let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
                f.write_all(a).unwrap();
                f.flush().unwrap();
                std::thread::sleep(Duration::from_micros(50));
                f.write_all(b).unwrap();
                n += 1;
            }
        });
        let disc = discover(std::slice::from_ref(&path));
        let mut seen_truncated = 0;
        for _ in 0..300 {
            let bump = Bump::new();
            let p = read_file(&bump, &path, "live.jsonl", &ReadOptions::default());
            for d in &p.diagnostics {
                assert_eq!(d.kind, DiagKind::TruncatedLine, "{d}");
                seen_truncated += 1;
            }
            for (i, e) in p.entries.iter().enumerate() {
                assert_eq!(e.env.uuid, Some(format!("u{i}").as_str()));
                let text = match e.as_user().unwrap().content {
                    ctxasm::model::content::Content::Text(t) => t,
                    other => panic!("{other:?}"),
                };
                assert!(text.starts_with(&format!("text-{i}-")), "{text}");
            }
            // The same through the parallel reader.
            let st = ctxasm::stats::collect(&disc, &RunOptions::default());
            assert!(st.diagnostics.iter().all(|d| d.kind == DiagKind::TruncatedLine), "{:?}", st.diagnostics);
        }
        stop.store(true, Ordering::Relaxed);
        eprintln!("live file: {seen_truncated} reads ended in a cut line");
    });
}
