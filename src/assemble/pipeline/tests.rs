//! Snapshot tests of the stages on real captures: for every turn of every
//! chain of a scenario, each stage's output as a stable text rendering
//! (`snapshots/`, reviewed like code). A change to any stage shows as a
//! diff here, named by scenario, turn and stage; the byte-equality with the
//! wire is `tests/it/pipeline.rs`'s.

use super::chain::{ChainCtx, ChainState, SessionCtx};
use super::normalize::Piece;
use super::plan::{Extras, Plan, Statics};
use super::*;
use crate::assemble::extract::extract;
use crate::corpus::{RunOptions, for_each_session_of};
use crate::env::SessionEnv;
use crate::input::discover::discover;
use crate::json::Json;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

fn short(s: &str) -> String {
    let one = s.replace('\n', "⏎");
    if one.chars().count() > 48 { format!("{}…", one.chars().take(47).collect::<String>()) } else { one }
}

fn piece_line(p: &Piece<'_>) -> String {
    match p {
        Piece::User { blocks, tool_results } => {
            let kinds: Vec<&str> = blocks.iter().filter_map(|b| b.get_str("type")).collect();
            format!("user{} [{}]", if *tool_results { " (results)" } else { "" }, kinds.join(","))
        }
        Piece::Assistant { id, blocks } => format!("assistant {} ({} blocks)", id.unwrap_or("-"), blocks.len()),
        Piece::Attachment { role, texts } => {
            format!("attachment {role:?} {:?}", texts.iter().map(|t| short(t)).collect::<Vec<_>>())
        }
        Piece::Params { extra } => format!("params {:?}", extra.iter().map(|(k, _)| *k).collect::<Vec<_>>()),
    }
}

fn message_line(m: &Json<'_>) -> String {
    let role = m.get_str("role").unwrap_or("?");
    match m.get("content") {
        Some(Json::Str(s)) => format!("{role}: {:?}", short(s)),
        Some(Json::Arr(blocks)) => {
            let b: Vec<String> = blocks
                .iter()
                .map(|b| {
                    let t = b.get_str("type").unwrap_or("?");
                    let cc = if b.get("cache_control").is_some() { "+cc" } else { "" };
                    match b.get_str("text") {
                        Some(text) => format!("{t}{cc} {:?}", short(text)),
                        None => format!("{t}{cc}"),
                    }
                })
                .collect();
            format!("{role}: [{}]", b.join(", "))
        }
        _ => format!("{role}: ?"),
    }
}

/// The trace of every stage over every turn of `dir`'s session.
fn trace(dir: &Path, plan: &Plan, extras: &Extras) -> String {
    let disc = discover(&[dir.join("transcripts")]);
    let out = for_each_session_of(&disc, &disc.groups, &RunOptions::default(), |bump, session| {
        let mut t = String::new();
        let statics = Statics::new(bump, plan);
        let identity = RecordOptions::default();
        for f in session.files() {
            let mut report = PipelineReport::default();
            let sx = SessionCtx { bump, session, plan, statics: &statics, extras, identity: &identity, warmups: &[] };
            let cx = ChainCtx::new(&sx, f, chain::Part::Whole, &mut report);
            let _ = writeln!(t, "chain {} (agent {:?})", f.file.display.rsplit('/').next().unwrap_or(""), cx.agent_id);
            let mut st = ChainState::default();
            let mut prev_turn = Vec::new();
            let mut collapsed = rustc_hash::FxHashMap::default();
            for (n, turn) in projection::turns(cx.entries).iter().enumerate() {
                let projected = projection::project(cx.entries, &cx.links, turn);
                let _ = writeln!(t, "  turn {n} (line {}): projection {:?}", cx.entries[turn.first].line, projected);
                let start = reminders::anchor_reminders(&cx, &mut st, turn.first, &projected);
                let _ = writeln!(
                    t,
                    "    reminders: process start {start:?}, anchored {}",
                    st.anchored.values().map(Vec::len).sum::<usize>()
                );
                pieces::gather_pieces(&cx, &mut st, &projected, start);
                for p in &st.scratch {
                    let _ = writeln!(t, "    piece: {}", piece_line(p));
                }
                let (messages, nrep) = normalize::normalize(bump, &st.scratch, &statics.rules);
                let _ = writeln!(t, "    normalize: {} messages, {nrep:?}", messages.len());
                let (messages, prep) = pairing::ensure_tool_result_pairing(bump, &messages);
                let _ = writeln!(t, "    pairing: {prep:?}");
                let (mut messages, stripped) = media::limit_media(bump, &messages);
                let _ = writeln!(t, "    media: {stripped} stripped");
                let inserted = leading_user::ensure_leading_user(bump, &mut messages, cx.agent_prompt);
                let _ = writeln!(t, "    leading user: {}", if inserted { "inserted" } else { "present" });
                let header =
                    billing::billing_header(&cx, cx.entries[turn.first].env.shared.version.unwrap_or(""), &messages);
                let _ = writeln!(t, "    billing: {}", header.as_deref().unwrap_or("(no block)"));
                share::share_with_previous(&mut messages, &mut prev_turn);
                breakpoints::add_cache_breakpoints(
                    bump,
                    &mut messages,
                    statics.cache_control,
                    plan.message_breakpoints,
                );
                let messages = collapse::collapse_messages(bump, messages, &mut collapsed, &cx.prompts, false);
                for m in &messages {
                    let _ = writeln!(t, "    message {}", message_line(m));
                }
                match system::select_system(&cx, &mut st, turn.first, false) {
                    Ok(system) => {
                        let tools = system.tools.and_then(Json::as_array).map_or(0, <[_]>::len);
                        let _ = writeln!(t, "    system: {} blocks, {tools} tools", system.nodes.len());
                        let process = start.and_then(|s| cx.process_starts.iter().position(|&p| p == s));
                        let req = body::build_request(
                            &cx,
                            super::body::RequestId::Turn(n),
                            turn.first,
                            process,
                            messages.into(),
                            system,
                            header.as_deref(),
                        );
                        let mut bytes = Vec::new();
                        crate::write::body::write_body(&mut bytes, &req.body, &mut Default::default());
                        let _ = writeln!(
                            t,
                            "    body: {} {} bytes, xxh3 {:032x}",
                            req.custom_id,
                            bytes.len(),
                            xxhash_rust::xxh3::xxh3_128(&bytes)
                        );
                    }
                    Err(d) => {
                        let _ = writeln!(t, "    system: {d}");
                    }
                }
            }
        }
        t
    });
    out.into_iter().map(|r| r.unwrap_or_else(|d| format!("error: {d}\n"))).collect()
}

fn scenario(release: &str, name: &str) -> PathBuf {
    Path::new(FIX).join(release).join(name)
}

#[test]
fn stages_on_2_1_328_captures() {
    for name in ["hello", "bash-tool", "parallel-tools", "thinking", "resume-multi-prompt"] {
        let t = trace(&scenario("cc-2.1.328", name), &Plan::cc_2_1_328(), &Extras::default());
        insta::assert_snapshot!(format!("cc_2_1_328__{}", name.replace('-', "_")), t);
    }
}

#[test]
fn stages_on_2_1_88_captures() {
    let hello = scenario("cc-2.1.88", "hello");
    let env = SessionEnv::from_dir(&hello.join("env")).unwrap();
    let profile = extract(&hello.join("wire.jsonl"), Some(&env)).unwrap();
    for name in ["hello", "bash-tool", "long-session", "memory-files", "resume-multi-prompt"] {
        let dir = scenario("cc-2.1.88", name);
        let setup = Setup {
            profile: profile.clone(),
            env: Some(SessionEnv::from_dir(&dir.join("env")).unwrap()),
            overrides: Overrides::default(),
        };
        let disc = discover(&[dir.join("transcripts")]);
        let prepared = for_each_session_of(&disc, &disc.groups, &RunOptions::default(), |_, s| setup.prepare(s));
        let (plan, extras) = prepared.into_iter().next().unwrap().unwrap();
        let t = trace(&dir, &plan, &extras);
        insta::assert_snapshot!(format!("cc_2_1_88__{}", name.replace('-', "_")), t);
    }
}

thread_local! {
    /// Every turn built from scratch (no resume): the oracle of
    /// [`resumed_turns_equal_turns_built_from_scratch`].
    pub(super) static FROM_SCRATCH: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Every request of `dir`'s sessions, as body bytes, built by the pipeline
/// with `setup` (each turn from scratch or resumed).
fn bodies_of(dir: &Path, setup: Option<&Setup>, from_scratch: bool) -> Vec<(String, Vec<u8>)> {
    let disc = discover(&[dir.to_path_buf()]);
    let run = RunOptions::with_threads(Some(1));
    let out = for_each_session_of(&disc, &disc.groups, &run, |bump, session| {
        let (plan, extras) = match setup {
            Some(s) => s.prepare(session),
            None => (Plan::cc_2_1_328(), Extras::default()),
        };
        FROM_SCRATCH.with(|f| f.set(from_scratch));
        let built = assemble_pipeline(bump, session, &plan, &extras, &RecordOptions::default());
        FROM_SCRATCH.with(|f| f.set(false));
        built
            .requests
            .iter()
            .map(|r| {
                let mut bytes = Vec::new();
                crate::write::body::write_body(&mut bytes, &r.body, &mut Default::default());
                (r.custom_id.clone(), bytes)
            })
            .collect::<Vec<_>>()
    });
    out.into_iter().flat_map(|r| r.unwrap_or_default()).collect()
}

/// The resume stage changes nothing: every request of every fixture (the
/// captures of 13 releases with the profile of their `hello` capture, the
/// probes, the sample corpus with the built-in layout) is the same bytes
/// built turn by turn from scratch.
#[test]
fn resumed_turns_equal_turns_built_from_scratch() {
    let mut compared = 0usize;
    let sample = Path::new(FIX).join("../../corpora/sample");
    let mut dirs: Vec<(PathBuf, Option<Setup>)> = vec![(sample.clone(), None)];
    let releases = std::fs::read_dir(FIX)
        .unwrap()
        .chain(std::fs::read_dir(Path::new(FIX).join("probes")).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("cc-")));
    for release in releases {
        let hello = release.join("hello");
        let profile = hello
            .join("wire.jsonl")
            .is_file()
            .then(|| extract(&hello.join("wire.jsonl"), SessionEnv::from_dir(&hello.join("env")).ok().as_ref()).ok())
            .flatten();
        for scenario in std::fs::read_dir(&release).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()) {
            let setup = profile.as_ref().map(|p| Setup {
                profile: p.clone(),
                env: SessionEnv::from_dir(&scenario.join("env")).ok(),
                overrides: Overrides::default(),
            });
            dirs.push((scenario.join("transcripts"), setup));
        }
        // The sample's sessions of every release, with the layouts of five
        // eras.
        let eras = ["cc-1.0.128", "cc-2.0.77", "cc-2.1.88", "cc-2.1.198", "cc-2.1.332"];
        let era = !release.parent().is_some_and(|p| p.ends_with("probes")) && eras.iter().any(|e| release.ends_with(e));
        if let (true, Some(p)) = (era, &profile) {
            dirs.push((sample.clone(), Some(Setup { profile: p.clone(), env: None, overrides: Overrides::default() })));
        }
    }
    for (dir, setup) in &dirs {
        if !dir.exists() {
            continue;
        }
        let resumed = bodies_of(dir, setup.as_ref(), false);
        let scratch = bodies_of(dir, setup.as_ref(), true);
        assert_eq!(resumed.len(), scratch.len(), "{}", dir.display());
        for ((id, a), (_, b)) in resumed.iter().zip(&scratch) {
            assert!(a == b, "{}: {id} differs when resumed", dir.display());
        }
        compared += resumed.len();
    }
    assert!(compared > 1500, "{compared} requests compared");
}

/// A chain's requests borrow one copy of the lists they share (system
/// blocks and keys, params, betas) instead of each holding its own: the
/// 2.1.88 long session's turns, built with its release's profile.
#[test]
fn a_chains_requests_share_their_lists() {
    use crate::assemble::Body;
    use std::borrow::Cow;
    // The variant is what is checked: borrowed, and the same slice.
    #[allow(clippy::ptr_arg)]
    fn same<T: Clone>(a: &Cow<'_, [T]>, b: &Cow<'_, [T]>) -> bool {
        matches!((a, b), (Cow::Borrowed(x), Cow::Borrowed(y)) if std::ptr::eq(x.as_ptr(), y.as_ptr()) && x.len() == y.len())
    }
    fn shares<'a>(a: &Body<'a>, b: &Body<'a>) -> bool {
        same(&a.system, &b.system)
            && same(&a.system_keys, &b.system_keys)
            && same(&a.params, &b.params)
            && same(&a.betas, &b.betas)
            && same(&a.lead_params, &b.lead_params)
    }
    let hello = scenario("cc-2.1.88", "hello");
    let env = SessionEnv::from_dir(&hello.join("env")).unwrap();
    let profile = extract(&hello.join("wire.jsonl"), Some(&env)).unwrap();
    let dir = scenario("cc-2.1.88", "long-session");
    let setup =
        Setup { profile, env: Some(SessionEnv::from_dir(&dir.join("env")).unwrap()), overrides: Overrides::default() };
    let disc = discover(&[dir.join("transcripts")]);
    let run = RunOptions::with_threads(Some(1));
    let out = for_each_session_of(&disc, &disc.groups, &run, |bump, session| {
        let (plan, extras) = setup.prepare(session);
        let built = assemble_pipeline(bump, session, &plan, &extras, &RecordOptions::default());
        let shared = built.requests.windows(2).filter(|w| shares(&w[0].body, &w[1].body)).count();
        (built.requests.len(), shared, built.requests[0].body.system.len(), built.requests[0].body.params.len())
    });
    let (n, shared, blocks, params) = out.into_iter().next().unwrap().unwrap();
    assert!(n >= 5 && blocks > 1 && params > 1, "{n} requests, {blocks} system blocks, {params} params");
    // Each request after the first borrows the one before's lists.
    assert_eq!(shared, n - 1);
}
