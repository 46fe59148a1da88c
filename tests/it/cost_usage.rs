//! Recorded usage (`ctxasm::cost::usage`) against numbers computed here,
//! independently: the test walks the fixture files itself, reads every line
//! with serde_json, and applies the dedup rule written out below as a plain
//! scan over the kept requests (no hash maps), with its own price list.
//!
//! The rule (ccusage 20.0.24, `src/cost/usage.rs` module docs): assistant
//! lines with a `message.usage` object, not `<synthetic>`; files in
//! path-byte order, lines in order; a line without `message.id` is always
//! new; a line matches a kept request with the same (message.id, requestId)
//! — without requestId: the same message.id, no requestId and the same
//! sessionId — else one with the same message.id, sessionId and instant
//! when either is a sidechain line; on a match it replaces the kept line
//! when it is main-chain and the kept one sidechain, or (same chain) when
//! its token total is larger.
//!
//! `dump_report` writes a report for scripts/compare-ccusage when
//! `CTXASM_DUMP` is set (see that test).

use ctxasm::corpus::{RunOptions, for_each_session};
use ctxasm::cost::pricing::Pricing;
use ctxasm::cost::usage::{RecordedReport, recorded_report, recorded_requests, recorded_requests_corpus};
use ctxasm::input::discover::discover;
use proptest::prelude::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const FIXTURES: &str = "tests/fixtures/usage";

/// One usage line, as the independent reader sees it.
#[derive(Debug, Clone)]
struct Line {
    file: PathBuf,
    line: u32,
    mid: Option<String>,
    rid: Option<String>,
    sidechain: bool,
    model: String,
    /// input, 5m writes, 1h writes, reads, output
    t: [u64; 5],
    ts: Option<String>,
    sid: Option<String>,
}

/// Milliseconds since 1970 of `YYYY-MM-DDTHH:MM:SS.mmm` + `Z` or `±HH:MM`
/// (the fixtures' forms), counting days month by month.
fn instant(ts: &str) -> i64 {
    let n = |r: std::ops::Range<usize>| ts[r].parse::<i64>().unwrap();
    let (y, mo, d) = (n(0..4), n(5..7), n(8..10));
    let leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let mut days = (1970..y).map(|y| if leap(y) { 366 } else { 365 }).sum::<i64>();
    let month_days = [31, if leap(y) { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    days += month_days[..(mo - 1) as usize].iter().sum::<i64>() + d - 1;
    let offset = if ts.ends_with('Z') {
        0
    } else {
        let sign = if ts.as_bytes()[ts.len() - 6] == b'-' { -1 } else { 1 };
        sign * (n(ts.len() - 5..ts.len() - 3) * 60 + n(ts.len() - 2..ts.len()))
    };
    let millis = if ts.as_bytes()[19] == b'.' { n(20..23) } else { 0 };
    (((days * 24 + n(11..13)) * 60 + n(14..16) - offset) * 60 + n(17..19)) * 1000 + millis
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
}

fn usage_lines(root: &str) -> Vec<Line> {
    let mut files = Vec::new();
    walk(Path::new(root), &mut files);
    files.sort_by(|a, b| a.as_os_str().as_encoded_bytes().cmp(b.as_os_str().as_encoded_bytes()));
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, l) in text.lines().enumerate() {
            let Ok(v) = serde_json::from_str::<Value>(l) else { continue };
            if v["type"] != "assistant" || !v["message"]["usage"].is_object() || v["message"]["model"] == "<synthetic>"
            {
                continue;
            }
            let u = &v["message"]["usage"];
            let n = |x: &Value| x.as_u64().unwrap_or(0);
            let (w5, w1) = match u.get("cache_creation") {
                Some(c) if c.is_object() => (n(&c["ephemeral_5m_input_tokens"]), n(&c["ephemeral_1h_input_tokens"])),
                _ => (n(&u["cache_creation_input_tokens"]), 0),
            };
            out.push(Line {
                file: f.clone(),
                line: i as u32 + 1,
                mid: v["message"]["id"].as_str().map(str::to_string),
                rid: v["requestId"].as_str().map(str::to_string),
                sidechain: v["isSidechain"] == true,
                model: v["message"]["model"].as_str().unwrap_or("unknown").to_string(),
                t: [n(&u["input_tokens"]), w5, w1, n(&u["cache_read_input_tokens"]), n(&u["output_tokens"])],
                ts: v["timestamp"].as_str().map(str::to_string),
                sid: v["sessionId"].as_str().map(str::to_string),
            });
        }
    }
    out
}

fn dedup(lines: Vec<Line>) -> Vec<Line> {
    let mut kept: Vec<Line> = Vec::new();
    for l in lines {
        let Some(mid) = &l.mid else {
            kept.push(l);
            continue;
        };
        let same_key = kept
            .iter()
            .position(|k| k.mid.as_ref() == Some(mid) && k.rid == l.rid && (l.rid.is_some() || k.sid == l.sid));
        let same_instant = |k: &Line| k.ts.as_deref().map(instant) == l.ts.as_deref().map(instant);
        let found = same_key.or_else(|| {
            kept.iter().position(|k| {
                k.mid.as_ref() == Some(mid) && (l.sidechain || k.sidechain) && k.sid == l.sid && same_instant(k)
            })
        });
        match found {
            None => kept.push(l),
            Some(i) => {
                let k = &kept[i];
                let replace = if l.sidechain != k.sidechain {
                    k.sidechain
                } else {
                    l.t.iter().sum::<u64>() > k.t.iter().sum::<u64>()
                };
                if replace {
                    kept[i] = l;
                }
            }
        }
    }
    kept
}

/// USD per MTok: input, 5m write, 1h write, read, output (facts §2a); the
/// Sonnet 4 / 4.5 rows also have the >200K whole-request tier.
fn price(model: &str, t: &[u64; 5]) -> Option<f64> {
    let base = |m: &str| -> Option<[f64; 5]> {
        Some(match m {
            "claude-sonnet-4-20250514" | "claude-sonnet-4-5-20250929" => [3.0, 3.75, 6.0, 0.3, 15.0],
            "claude-opus-4-20250514" => [15.0, 18.75, 30.0, 1.5, 75.0],
            "claude-opus-4-5-20251101" | "claude-opus-4-6" => [5.0, 6.25, 10.0, 0.5, 25.0],
            "claude-haiku-4-5-20251001" => [1.0, 1.25, 2.0, 0.1, 5.0],
            _ => return None,
        })
    };
    let mut r = base(model)?;
    let input: u64 = t[..4].iter().sum();
    if model.starts_with("claude-sonnet-4-") && input > 200_000 {
        r = [6.0, 7.5, 12.0, 0.6, 22.5];
    }
    Some(t.iter().zip(r).map(|(&n, p)| n as f64 * p).sum::<f64>() / 1e6)
}

/// The projects-dir folder of a file.
fn project_of(p: &Path) -> String {
    let name = |p: &Path| p.file_name().unwrap().to_string_lossy().into_owned();
    match p.ancestors().find(|a| a.file_name().is_some_and(|n| n == "subagents")) {
        Some(sub) => name(sub.parent().unwrap().parent().unwrap()),
        None => name(p.parent().unwrap()),
    }
}

fn report(paths: &[&str], threads: Option<usize>) -> RecordedReport {
    let paths: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
    recorded_report(&discover(&paths), &RunOptions::with_threads(threads), &Pricing::builtin())
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(1.0)
}

#[test]
fn totals_and_breakdowns_match_the_independent_count() {
    let kept = dedup(usage_lines(FIXTURES));
    let rep = report(&[FIXTURES], None);
    let sum = |i: usize| kept.iter().map(|l| l.t[i]).sum::<u64>();
    let t = &rep.totals;
    assert_eq!(t.requests, kept.len() as u64);
    assert_eq!(t.input_tokens, sum(0));
    assert_eq!(rep.cache_creation.ephemeral_5m_input_tokens, sum(1));
    assert_eq!(rep.cache_creation.ephemeral_1h_input_tokens, sum(2));
    assert_eq!(t.cache_creation_input_tokens, sum(1) + sum(2));
    assert_eq!(t.cache_read_input_tokens, sum(3));
    assert_eq!(t.output_tokens, sum(4));
    let priced: Vec<f64> = kept.iter().filter_map(|l| price(&l.model, &l.t)).collect();
    assert!(close(t.cost_usd, priced.iter().sum()), "{} vs {}", t.cost_usd, priced.iter().sum::<f64>());
    assert_eq!(rep.unpriced_requests, (kept.len() - priced.len()) as u64);
    assert_eq!(rep.unpriced_models, vec!["claude-opus-9-9".to_string()]);
    assert_eq!(rep.long_context_requests, 1);
    // What reading found is reported: two empty files, two sidechain
    // lines whose parent is in another file.
    let diags: Vec<(String, u32, &str)> = rep
        .diagnostics
        .iter()
        .map(|d| (d.file.rsplit('/').next().unwrap_or("").to_string(), d.line, d.kind.as_str()))
        .collect();
    let want = [
        ("2c5941bd-b9de-41d6-9414-221d175776f7.jsonl", 0, "empty_file"),
        ("b23cbd1d-a39d-4f31-98fd-98f8ff69b816.jsonl", 0, "empty_file"),
        ("sidechain.jsonl", 1, "missing_parent"),
        ("sidechain.jsonl", 8, "missing_parent"),
    ];
    assert_eq!(diags, want.map(|(f, l, k)| (f.to_string(), l, k)));

    // The fixtures do exercise what they are meant to.
    let lines = usage_lines(FIXTURES);
    assert!(lines.len() > kept.len() + 50, "streamed copies: {} lines, {} requests", lines.len(), kept.len());
    assert!(sum(2) > 0 && sum(1) > 0, "both TTLs");
    assert!(kept.iter().any(|l| l.file.to_string_lossy().contains("/subagents/")));
    assert!(kept.iter().any(|l| l.file.to_string_lossy().contains("/agent-")));

    // By project and by model.
    let mut by_project: BTreeMap<String, (u64, [u64; 5])> = BTreeMap::new();
    let mut by_model: BTreeMap<String, (u64, [u64; 5])> = BTreeMap::new();
    for l in &kept {
        for (map, key) in [(&mut by_project, project_of(&l.file)), (&mut by_model, l.model.clone())] {
            let e = map.entry(key).or_default();
            e.0 += 1;
            for i in 0..5 {
                e.1[i] += l.t[i];
            }
        }
    }
    let got = |u: &ctxasm::cost::usage::UsageSum| {
        (
            u.totals.requests,
            [
                u.totals.input_tokens,
                u.cache_creation.ephemeral_5m_input_tokens,
                u.cache_creation.ephemeral_1h_input_tokens,
                u.totals.cache_read_input_tokens,
                u.totals.output_tokens,
            ],
        )
    };
    let projects: BTreeMap<String, (u64, [u64; 5])> = rep.by_project.iter().map(|(k, u)| (k.clone(), got(u))).collect();
    assert_eq!(projects, by_project);
    let models: BTreeMap<String, (u64, [u64; 5])> =
        rep.by_model.iter().map(|(k, m)| (k.clone(), got(&m.usage))).collect();
    assert_eq!(models, by_model);
    assert_eq!(rep.by_model["claude-sonnet-4-20250514"].priced_as.as_deref(), Some("claude-sonnet-4"));
    assert_eq!(rep.by_model["claude-opus-9-9"].priced_as, None);

    // By day: UTC dates (every fixture timestamp but one hand-made line is
    // in `Z`; that one is checked in `hand_made_requests_one_by_one`).
    let mut by_day: BTreeMap<String, u64> = BTreeMap::new();
    for l in &kept {
        let ts = l.ts.as_deref().unwrap();
        let day = if ts.ends_with('Z') { ts[..10].to_string() } else { "2026-01-02".to_string() };
        *by_day.entry(day).or_default() += 1;
    }
    let days: BTreeMap<String, u64> = rep.by_day.iter().map(|(d, u)| (d.clone(), u.totals.requests)).collect();
    assert_eq!(days, by_day);

    // The very lines kept, in order.
    let paths = [PathBuf::from(FIXTURES)];
    let (reqs, _) = recorded_requests_corpus(&discover(&paths), &RunOptions::default(), &Pricing::builtin());
    let got: Vec<(PathBuf, u32)> = reqs.iter().map(|r| (PathBuf::from(&r.file), r.line)).collect();
    let want: Vec<(PathBuf, u32)> = kept.iter().map(|l| (l.file.clone(), l.line)).collect();
    assert_eq!(got, want);
    let sessions: u64 = rep.by_session.iter().map(|s| s.usage.totals.requests).sum();
    assert_eq!(sessions, kept.len() as u64);
}

#[test]
fn hand_made_requests_one_by_one() {
    let rep = report(&[&format!("{FIXTURES}/hand-made")], None);
    let t = &rep.totals;
    // tier, unknown, 2 without id, empty split, split, a later sidechain
    // replay (another instant), msg_b (synthetic out, the replay at the same
    // instant and the resumed copy collapsed).
    assert_eq!(t.requests, 8);
    assert_eq!(t.input_tokens, 150_000 + 100 + 5 + 5 + 1 + 3 + 1 + 10);
    assert_eq!(t.cache_creation_input_tokens, 50 + 1000 + 30);
    assert_eq!(
        (rep.cache_creation.ephemeral_5m_input_tokens, rep.cache_creation.ephemeral_1h_input_tokens),
        (350, 730)
    );
    assert_eq!(t.cache_read_input_tokens, 100_000 + 2000 + 40);
    assert_eq!(t.output_tokens, 1000 + 10 + 5 + 5 + 2 + 40 + 1 + 20);
    // Long context, Anthropic's rule: the whole request at 6 / 22.50 (and
    // 0.60 reads) = 0.9825; ccusage's marginal rule would give 0.495.
    let tier = 0.9825;
    let haiku = 2.0 * 30e-6 + 11e-6 + (3.0 + 375.0 + 1400.0 + 200.0 + 200.0) / 1e6 + 6e-6;
    let opus46 = (50.0 + 300.0 + 20.0 + 500.0) / 1e6;
    assert!(close(t.cost_usd, tier + haiku + opus46), "{}", t.cost_usd);
    assert_eq!(rep.unpriced_requests, 1);
    assert_eq!(rep.long_context_requests, 1);
    let ids: Vec<(&str, u64)> = rep.by_session.iter().map(|s| (&s.session_id[..4], s.usage.totals.requests)).collect();
    assert_eq!(ids, vec![("aaaa", 7), ("bbbb", 1)]);
    assert_eq!(rep.by_session[0].first_timestamp.as_deref(), Some("2026-01-01T10:00:01.000Z"));
    assert_eq!(rep.by_session[0].last_timestamp.as_deref(), Some("2026-01-02T02:00:00.000Z"));
    let days: Vec<(&str, u64)> = rep.by_day.iter().map(|(d, u)| (d.as_str(), u.totals.requests)).collect();
    assert_eq!(days, vec![("2026-01-01", 5), ("2026-01-02", 2), ("2026-01-03", 1)]);

    // The kept line of the streamed request is the final one; the replay and
    // the copy are gone; the line without id is twice.
    let paths = [PathBuf::from(format!("{FIXTURES}/hand-made"))];
    let (reqs, _) = recorded_requests_corpus(&discover(&paths), &RunOptions::default(), &Pricing::builtin());
    let kept: Vec<(u32, Option<&str>, Option<f64>, bool)> =
        reqs.iter().map(|r| (r.line, r.message_id.as_deref(), r.cost_usd, r.long_context)).collect();
    assert_eq!(kept[0], (3, Some("msg_tier"), Some(tier), true));
    assert_eq!(kept[1].1, Some("msg_unknown"));
    assert_eq!(kept[1].2, None);
    assert_eq!(reqs.iter().filter(|r| r.message_id.is_none()).count(), 2);
    let split = reqs.iter().find(|r| r.message_id.as_deref() == Some("msg_split")).unwrap();
    assert!(split.file.contains("aaaa") && split.line == 9 && !split.is_sidechain && split.tokens.output == 40);

    // Per session, the resumed session keeps its copy.
    let per_session = for_each_session(&discover(&paths), &RunOptions::default(), |s| recorded_requests(s).len());
    let per_session: Vec<usize> = per_session.into_iter().map(Result::unwrap).collect();
    assert_eq!(per_session, vec![7, 2]);
}

#[test]
fn subagents_and_two_zero_x_agent_files_join_their_session() {
    let rep = report(&[FIXTURES], None);
    let row = |sid: &str| rep.by_session.iter().find(|s| s.session_id == sid).unwrap();
    // 2.1.x: <sid>/subagents/agent-*.jsonl.
    let p = "29ccd257-68b1-427f-ae5f-6524b7cb6f20";
    let lines = dedup(usage_lines(&format!("{FIXTURES}/claude-code-log/real_projects/-src-experiments-claude_p")));
    let in_sub = lines.iter().filter(|l| l.file.to_string_lossy().contains("/subagents/")).count() as u64;
    assert!(in_sub > 0);
    assert_eq!(row(p).usage.totals.requests, lines.len() as u64);
    // 2.0.x: agent-*.jsonl beside the session files, linked by sessionId.
    let s = "7acd37a8-2745-4b58-a8a9-46164b22ad9e";
    let dir = format!("{FIXTURES}/claude-code-log/real_projects/-Users-dain-workspace-JSSoundRecorder");
    let all = dedup(usage_lines(&dir));
    let mine = all
        .iter()
        .filter(|l| {
            let text = std::fs::read_to_string(&l.file).unwrap();
            text.lines().next().is_some_and(|first| first.contains(s))
        })
        .count() as u64;
    assert_eq!(row(s).usage.totals.requests, mine);
    assert!(rep.by_session.iter().all(|r| !r.session_id.starts_with("agent-")));
}

#[test]
fn report_does_not_depend_on_thread_count_and_keys_are_stable() {
    let one = report(&[FIXTURES], Some(1));
    for threads in [2, 4] {
        assert_eq!(report(&[FIXTURES], Some(threads)), one);
    }
    let v = serde_json::to_value(&one).unwrap();
    let keys: Vec<&str> = v["totals"].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "requests",
            "input_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
            "output_tokens",
            "cost_usd"
        ]
    );
    for k in ["unpriced_requests", "by_session", "by_project", "by_day", "by_model", "pricing", "cache_creation"] {
        assert!(v.get(k).is_some(), "{k}");
    }
}

/// `ctxasm cost --recorded-only --json` prints the library's totals; an
/// unreadable `--pricing` file is an error naming it; without
/// `--recorded-only` the recorded totals are the same.
#[test]
fn cli_cost_recorded_only() {
    let root = "tests/fixtures/usage";
    let out = crate::common::bin().args(["cost", "--recorded-only", "--json", root]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let lib = report(&[root], None);
    assert_eq!(v["recorded"], serde_json::to_value(lib.totals).unwrap());
    let keys: Vec<&str> = v["recorded"].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "requests",
            "input_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
            "output_tokens",
            "cost_usd"
        ]
    );
    let out = crate::common::bin()
        .args(["cost", "--recorded-only", "--pricing", "/nonexistent/prices.json", root])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/prices.json"));
    // Without --recorded-only the same totals come with the modeled ones.
    let out = crate::common::bin().args(["cost", "--json", root]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let modeled: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(modeled["recorded"], v["recorded"]);
}

/// The lean read (`input::scan`, what `cost --recorded-only` reads) and
/// the full read of every `*.jsonl` under `roots`: line for line the same
/// diagnostics, counts, tree links, first session id and usage lines; per
/// session the same diagnostics (the tree's included); and the same report
/// as the full read under `dedup_files` (`recorded_requests_corpus`).
/// Returns the number of files and of usage lines compared.
fn lean_read_agrees(roots: &[&str]) -> (usize, usize) {
    use ctxasm::corpus::{read_session, scan_session};
    use ctxasm::input::scan::{UsageLine, scan_bytes};
    use ctxasm::input::{ReadOptions, parse_bytes};
    use ctxasm::model::tree::Link;
    let opts = ReadOptions::default();
    let mut files = Vec::new();
    for r in roots {
        walk(Path::new(r), &mut files);
    }
    files.sort();
    let mut usage_lines = 0;
    for f in &files {
        let data = std::fs::read(f).unwrap();
        let display = f.display().to_string();
        let (b1, b2) = (bumpalo::Bump::new(), bumpalo::Bump::new());
        let full = parse_bytes(&b1, &data, &display, &opts);
        let lean = scan_bytes(&b2, &data, &display, &opts);
        assert_eq!(lean.diagnostics, full.diagnostics, "{display}");
        assert_eq!((lean.lines, lean.bad_lines, lean.bytes), (full.lines, full.bad_lines, full.bytes), "{display}");
        let links = Link::of_entries(&full.entries);
        assert_eq!(lean.links, links, "{display}");
        assert_eq!(lean.session_id, full.entries.iter().find_map(|e| e.env.shared.session_id), "{display}");
        let usage: Vec<UsageLine<'_>> = full.entries.iter().filter_map(UsageLine::of_entry).collect();
        assert_eq!(lean.usage, usage, "{display}");
        usage_lines += usage.len();
    }
    let paths: Vec<PathBuf> = roots.iter().map(PathBuf::from).collect();
    let disc = discover(&paths);
    for g in &disc.groups {
        let (b1, b2) = (bumpalo::Bump::new(), bumpalo::Bump::new());
        let full = read_session(&b1, &disc, g, &opts);
        let lean = scan_session(&b2, &disc, g, &opts);
        let (full, lean): (Vec<_>, Vec<_>) = (full.diagnostics().collect(), lean.diagnostics().collect());
        assert_eq!(lean, full);
    }
    let run = RunOptions::default();
    let (requests, diagnostics) = recorded_requests_corpus(&disc, &run, &Pricing::builtin());
    let by_full = RecordedReport::from_requests(&requests, &Pricing::builtin(), diagnostics);
    assert_eq!(recorded_report(&disc, &run, &Pricing::builtin()), by_full);
    (files.len(), usage_lines)
}

/// On the fixtures: the usage ones, the hostile ones (`bad/`: invalid JSON
/// and UTF-8, numbers out of range, duplicate and missing uuids, cycles,
/// unknown types…), every release's captures and the sample corpus.
#[test]
fn lean_read_agrees_with_the_full_read_on_the_fixtures() {
    let (files, usage) = lean_read_agrees(&["tests/fixtures", "corpora/sample"]);
    assert!(files > 100 && usage > 1000, "{files} files, {usage} usage lines");
}

#[test]
#[ignore = "needs ../shared/corpora beside the checkout (CI has it)"]
fn lean_read_agrees_with_the_full_read_on_the_shared_corpora() {
    let roots =
        ["../shared/corpora/public", "../shared/corpora/claude-code-2.1.88", "../shared/corpora/claude-code-2.1.328"];
    for r in roots {
        assert!(Path::new(r).is_dir(), "needs {r}");
    }
    let (files, usage) = lean_read_agrees(&roots);
    assert!(files > 200 && usage > 2000, "{files} files, {usage} usage lines");
}

/// Both reads of one file's bytes: the lean read's diagnostics, counts,
/// links and usage lines are the full read's.
fn same_reads(data: &[u8]) -> Result<(), proptest::test_runner::TestCaseError> {
    use ctxasm::input::scan::{UsageLine, scan_bytes};
    use ctxasm::input::{ReadOptions, parse_bytes};
    let opts = ReadOptions { max_line_bytes: 4096, ..ReadOptions::default() };
    let (b1, b2) = (bumpalo::Bump::new(), bumpalo::Bump::new());
    let full = parse_bytes(&b1, data, "m.jsonl", &opts);
    let lean = scan_bytes(&b2, data, "m.jsonl", &opts);
    proptest::prop_assert_eq!(&lean.diagnostics, &full.diagnostics);
    proptest::prop_assert_eq!((lean.lines, lean.bad_lines), (full.lines, full.bad_lines));
    let uuids: Vec<(u32, &str, Option<&str>, Option<&str>)> = (full.entries.iter())
        .filter_map(|e| Some((e.line, e.env.uuid?, e.env.parent_uuid, e.env.shared.logical_parent_uuid)))
        .collect();
    let lean_uuids: Vec<_> = lean.links.iter().map(|l| (l.line, l.uuid, l.parent, l.logical_parent)).collect();
    proptest::prop_assert_eq!(lean_uuids, uuids);
    proptest::prop_assert_eq!(lean.session_id, full.entries.iter().find_map(|e| e.env.shared.session_id));
    let usage: Vec<UsageLine<'_>> = full.entries.iter().filter_map(UsageLine::of_entry).collect();
    proptest::prop_assert_eq!(lean.usage, usage);
    Ok(())
}

/// Real usage lines (and a few others) of the fixtures, to mutate.
fn seed_lines() -> Vec<Vec<u8>> {
    let mut files = Vec::new();
    walk(Path::new(FIXTURES), &mut files);
    files.sort();
    let mut out = Vec::new();
    for f in files {
        for line in std::fs::read(&f).unwrap().split(|&b| b == b'\n') {
            if !line.is_empty() && line.len() < 3000 && out.len() < 400 {
                out.push(line.to_vec());
            }
        }
    }
    out
}

/// Bytes a mutation puts in: JSON's structure, numbers no 64-bit type
/// holds, invalid UTF-8, escapes, keys the reads look up (again: the first
/// one counts), values of the wrong kind.
const INSERTS: &[&[u8]] = &[
    b"\"",
    b"{",
    b"}",
    b",",
    b"]",
    b"1e400",
    b"123456789012345678901234567890",
    b"-1",
    b"2.0",
    b"\xff\xfe",
    b"\\u0031",
    b"null",
    b"\"type\":\"zz-new\",",
    b"\"type\":7,",
    b"\"uuid\":\"dup\",",
    b"\"isSidechain\":true,",
    b"\"message\":{\"usage\":{\"input_tokens\":1}},",
    b"\"usage\":[],",
    b"\"cache_creation\":{},",
    b"\n",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// The lean read agrees with the full read on fixture lines cut, spliced
    /// and broken at random places.
    #[test]
    fn lean_read_agrees_on_mutated_lines(
        picks in proptest::collection::vec((any::<proptest::sample::Index>(), any::<proptest::sample::Index>(),
            0usize..INSERTS.len(), 0usize..40, 0u8..4), 1..6),
    ) {
        thread_local!(static SEEDS: Vec<Vec<u8>> = seed_lines());
        let data = SEEDS.with(|seeds| {
            let mut data = Vec::new();
            for (line, at, insert, cut, how) in &picks {
                let mut l = seeds[line.index(seeds.len())].clone();
                let at = at.index(l.len() + 1);
                match how {
                    0 => l.splice(at..at, INSERTS[*insert].iter().copied()).for_each(drop),
                    1 => l.drain(at..(at + cut).min(l.len())).for_each(drop),
                    2 => l.truncate(at),
                    _ => {}
                }
                data.extend_from_slice(&l);
                data.push(b'\n');
            }
            data
        });
        same_reads(&data)?;
        // Without the last newline: a truncated last line.
        same_reads(&data[..data.len() - 1])?;
    }
}
