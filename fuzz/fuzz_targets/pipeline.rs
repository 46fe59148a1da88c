//! Any bytes as a session's transcripts assembled by the pipeline
//! (`--mode pipeline`, every release): the first byte picks the setup, the
//! rest is the main file, then subagent files after `\n\x1eagent-<id>\n`
//! lines (`common::split_files`). Setups: the built-in `cc-2.1.328` and
//! `seed` profiles without an environment, and profiles extracted from the
//! 2.0.77, 1.0.128 and 2.1.88 captures (hello, bash-tool, memory-files)
//! with the memory-files environment (memory loading runs per input), each
//! without and with what-if overrides. Never a panic; no more requests than
//! turns; the pipeline's repairs hold (a user message first, every
//! `tool_use` answered and every `tool_result` asked, at most 100 media
//! blocks); every request has the properties of `common::check_requests`.
//! Seeds: `fuzz/seeds.sh` (captured 2.0.77, 1.0.128 and 2.1.88 transcripts).
#![no_main]

mod common;

use bumpalo::Bump;
use ctxasm::assemble::extract::extract_merged;
use ctxasm::assemble::pipeline::{Overrides, Setup};
use ctxasm::assemble::validate::Rule;
use ctxasm::assemble::{Assembler, Mode, assemble_session};
use ctxasm::env::SessionEnv;
use ctxasm::profile::Profile;
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

/// The releases whose captured profiles are used (the seeds script gives
/// each release's transcripts the header byte of its profile).
const RELEASES: &[&str] = &["cc-2.0.77", "cc-1.0.128", "cc-2.1.88"];

fn overrides(k: usize) -> Overrides {
    let f = common::fixtures();
    match k {
        0 => Overrides::default(),
        1 => Overrides { cache_ttl: Some("1h".into()), effort: Some("high".into()), ..Overrides::default() },
        2 => Overrides {
            model: Some("claude-haiku-4-5-20251001".into()),
            tools: Some(vec![serde_json::json!({"name": "Fuzz", "description": "d", "input_schema": {}})]),
            ..Overrides::default()
        },
        _ => Overrides {
            system_prompt: Some("You are fuzzed.".into()),
            append_system_prompt: Some("Appended.".into()),
            claude_md_root: Some(f.join("cc-2.1.88/memory-files/env/project")),
            ..Overrides::default()
        },
    }
}

/// Setup `i` is profile `i / 4` with overrides `i % 4`.
fn assemblers() -> &'static [Assembler] {
    static A: OnceLock<Vec<Assembler>> = OnceLock::new();
    A.get_or_init(|| {
        let f = common::fixtures();
        let mut profiles: Vec<(Profile, Option<SessionEnv>)> =
            vec![(Profile::load("cc-2.1.328").unwrap(), None), (Profile::load("seed").unwrap(), None)];
        for r in RELEASES {
            let scenarios = ["hello", "bash-tool", "memory-files"];
            let envs: Vec<SessionEnv> =
                scenarios.iter().map(|s| SessionEnv::from_dir(&f.join(r).join(s).join("env")).unwrap()).collect();
            let wires: Vec<_> = scenarios.iter().map(|s| f.join(r).join(s).join("wire.jsonl")).collect();
            let captures: Vec<_> = wires.iter().zip(&envs).map(|(w, e)| (w.as_path(), Some(e))).collect();
            let profile = extract_merged(&captures).unwrap_or_else(|e| panic!("{r}: {e}"));
            profiles.push((profile, Some(envs[2].clone())));
        }
        profiles
            .into_iter()
            .flat_map(|(profile, env)| {
                (0..4).map(move |k| {
                    let setup = Setup { profile: profile.clone(), env: env.clone(), overrides: overrides(k) };
                    Assembler { mode: Mode::Pipeline, pipeline: Some(setup), ..Assembler::default() }
                })
            })
            .collect()
    })
}

const REPAIRED: &[Rule] = &[
    Rule::NoMessages,
    Rule::FirstNotUser,
    Rule::ToolUseUnanswered,
    Rule::ToolResultWithoutToolUse,
    Rule::TooManyMedia,
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, data)) = data.split_first() else { return };
    let all = assemblers();
    let a = &all[usize::from(pick) % all.len()];
    let (main, agents) = common::split_files(data);
    let files = common::transcript_files(main, &agents);
    let bump = Bump::new();
    let session = common::session(&bump, &files, main, &agents);
    let out = assemble_session(&bump, &session, a);
    assert!(out.by_pipeline);
    assert!(
        out.requests.len() as u64 <= out.pipeline.turns,
        "{} requests of {} turns",
        out.requests.len(),
        out.pipeline.turns
    );
    for d in &out.diagnostics {
        assert!(files.iter().any(|f| f.display == d.file), "a diagnostic names no file of the session: {d:?}");
    }
    common::check_requests(&out.requests, REPAIRED);
});
