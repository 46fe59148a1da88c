//! Any bytes as a session's transcripts replayed from their `api-request`
//! records (`--mode records`, 2.1.3xx): the main file, then subagent files
//! after `\n\x1eagent-<id>\n` lines (`common::split_files`). The profile is
//! one extracted from the 2.1.328 compact-resume capture, so compactions
//! (which no record holds) are rebuilt by the pipeline among the replayed
//! requests. Never a panic; no more requests than records plus compact
//! boundaries; every request has the properties of
//! `common::check_requests`. Seeds: `fuzz/seeds.sh` (real captured
//! transcripts).
#![no_main]

mod common;

use bumpalo::Bump;
use ctxasm::assemble::pipeline::Setup;
use ctxasm::assemble::{Assembler, Mode, assemble_session};
use ctxasm::env::SessionEnv;
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fn assembler() -> &'static Assembler {
    static A: OnceLock<Assembler> = OnceLock::new();
    A.get_or_init(|| {
        let dir = common::fixtures().join("shapes/cc-2.1.328/compact-resume");
        let env = SessionEnv::from_dir(&dir.join("env")).expect("the compact-resume env");
        let profile = ctxasm::assemble::extract::extract(&dir.join("wire.jsonl"), Some(&env)).expect("a profile");
        assert!(profile.compaction.is_some(), "the compact-resume profile knows the compaction instruction");
        let setup = Setup { profile, env: Some(env), overrides: Default::default() };
        Assembler { mode: Mode::Records, pipeline: Some(setup), ..Assembler::default() }
    })
}

fuzz_target!(|data: &[u8]| {
    let a = assembler();
    let (main, agents) = common::split_files(data);
    let files = common::transcript_files(main, &agents);
    let bump = Bump::new();
    let session = common::session(&bump, &files, main, &agents);
    let out = assemble_session(&bump, &session, a);
    assert!(!out.by_pipeline);
    assert!(out.hash_matches <= out.messages_hashed);
    let boundaries = session.main.iter().flat_map(|m| &m.parsed.entries).filter(|e| e.is_compact_boundary()).count();
    assert!(
        out.requests.len() as u64 <= out.recorded + boundaries as u64,
        "{} requests from {} records and {boundaries} compact boundaries",
        out.requests.len(),
        out.recorded
    );
    for d in &out.diagnostics {
        assert!(files.iter().any(|f| f.display == d.file), "a diagnostic names no file of the session: {d:?}");
    }
    common::check_requests(&out.requests, &[]);
});
