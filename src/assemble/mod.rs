//! Assembly: from a parsed session to the request bodies the client sent.
//!
//! Two ways, one entry point ([`assemble_session`], by [`Mode`]):
//! - [`records`] replays the requests recent transcripts recorded
//!   (`api-request*` entries, 2.1.3xx);
//! - [`pipeline`] builds every request from the conversation with the
//!   client's context-assembly stages, for transcripts of any release.
//!
//! [`wire`] holds the wire rules both share (billing header, metadata,
//! custom ids); [`request`] the assembled [`Request`]; [`validate`] checks a
//! body against the API's rules; [`extract`] makes a profile from a capture
//! and checks it by rendering it back. Serializing a request is
//! [`crate::write`]'s.

pub mod choose;
pub mod extract;
pub mod pipeline;
pub mod records;
pub mod request;
pub mod validate;
pub mod wire;

pub use request::{Body, Messages, Request};

use crate::corpus::Session;
use crate::diag::{DiagKind, Diagnostic};
use crate::model::entry::EntryKind;
use bumpalo::Bump;
use pipeline::{Extras, PipelineReport, Plan, Setup, assemble_pipeline};
use records::{RecordOptions, assemble_records};

/// How requests are obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Replay the `api-request` records (2.1.3xx transcripts).
    #[default]
    Records,
    /// Build every request from the conversation (records ignored).
    Pipeline,
    /// Records when the session has any, the pipeline otherwise.
    Auto,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "records" => Ok(Mode::Records),
            "pipeline" => Ok(Mode::Pipeline),
            "auto" => Ok(Mode::Auto),
            other => Err(format!("expected records, pipeline or auto, got {other:?}")),
        }
    }
}

/// Everything `assemble` needs to turn a session into requests.
#[derive(Debug, Default)]
pub struct Assembler {
    pub mode: Mode,
    /// Identity fields the transcript does not hold (`metadata.user_id`).
    pub records: RecordOptions,
    /// The pipeline's profile, environment and what-ifs; `None`: the
    /// built-in `cc-2.1.328` plan with the session's own recorded shapes
    /// only (a session without shapes gives no request).
    pub pipeline: Option<Setup>,
    /// `--profile auto`: the profile of each session's own release, from
    /// the cache (it takes the place of `pipeline`).
    pub chooser: Option<choose::Chooser>,
}

impl Assembler {
    /// The pipeline's plan and extras for `session`.
    pub fn plan(&self, session: &Session<'_, '_>) -> (Plan, Extras) {
        if let Some(chooser) = &self.chooser {
            return chooser.prepare(session);
        }
        match &self.pipeline {
            Some(setup) => setup.prepare(session),
            None => (Plan::cc_2_1_328(), Extras::default()),
        }
    }
}

/// What assembling one session produced.
#[derive(Debug, Default)]
pub struct Assembled<'a> {
    pub requests: Vec<Request<'a>>,
    pub diagnostics: Vec<Diagnostic>,
    /// `api-request` entries the session holds (replayed in records mode,
    /// counted in pipeline mode).
    pub recorded: u64,
    pub messages_hashed: u64,
    pub hash_matches: u64,
    /// The pipeline ran for this session.
    pub by_pipeline: bool,
    pub pipeline: PipelineReport,
    /// The Claude Code release the transcript records.
    pub release: Option<&'a str>,
    /// Per request: replayed from records, so every message and the
    /// system prompt and tools were found by the SHA-256 the transcript
    /// recorded for them (a compaction the pipeline adds is not).
    pub proven: Vec<bool>,
}

/// Records mode: the compaction requests no record holds (2.1.3xx), built
/// by the pipeline with the session's profile and put in file order among
/// the recorded ones; without a profile that knows the instruction, a
/// diagnostic says what is missing.
fn with_compactions<'a>(
    bump: &'a Bump,
    session: &Session<'a, '_>,
    a: &Assembler,
    identity: &RecordOptions,
    requests: &mut Vec<Request<'a>>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let Some(main) = &session.main else { return };
    let boundaries = main.parsed.entries.iter().filter(|e| e.is_compact_boundary()).count();
    let acompact = session.subagents.iter().any(|f| f.file.kind.is_compaction());
    if boundaries == 0 || acompact {
        return;
    }
    let (plan, extras) = a.plan(session);
    if plan.compaction_instruction.is_none() {
        let msg = format!(
            "{boundaries} compaction request(s) not rebuilt: no record holds them and the profile has no compaction \
             instruction (make one with `ctxasm profile capture <version>`)"
        );
        diagnostics.push(Diagnostic::new(main.file.display.as_str(), 0, DiagKind::NotRebuilt, msg.as_str()));
        return;
    }
    let built = pipeline::compaction_requests(bump, session, &plan, &extras, identity);
    diagnostics.extend(built.diagnostics);
    for r in built.requests {
        let at = requests.iter().position(|q| q.file == r.file && q.line > r.line).unwrap_or(requests.len());
        requests.insert(at, r);
        // `Body::shared` counts the messages shared with the request just
        // before in the list: neither the inserted request nor the one
        // after it follows the request it was counted against.
        for q in requests.iter_mut().skip(at).take(2) {
            q.body.shared = 0;
        }
    }
}

fn has_records(session: &Session<'_, '_>) -> bool {
    session.files().any(|f| f.parsed.entries.iter().any(|e| matches!(e.kind, EntryKind::ApiRequest(_))))
}

/// Assemble `session` as `a` says.
pub fn assemble_session<'a>(bump: &'a Bump, session: &Session<'a, '_>, a: &Assembler) -> Assembled<'a> {
    assemble_session_as(bump, session, a, &a.records)
}

/// [`assemble_session`] with other identity fields (`verify --device-id
/// wire` takes them from the capture).
pub fn assemble_session_as<'a>(
    bump: &'a Bump,
    session: &Session<'a, '_>,
    a: &Assembler,
    identity: &RecordOptions,
) -> Assembled<'a> {
    let mut out = assemble_unread(bump, session, a, identity);
    out.release = choose::session_version(session);
    wire::unique_custom_ids(&mut out.requests);
    // What reading found (bad lines, broken links) comes first: every
    // command that assembles reports it.
    let read: Vec<Diagnostic> = session.files().flat_map(|f| f.parsed.diagnostics.iter().cloned()).collect();
    out.diagnostics.splice(0..0, read);
    out
}

fn assemble_unread<'a>(
    bump: &'a Bump,
    session: &Session<'a, '_>,
    a: &Assembler,
    identity: &RecordOptions,
) -> Assembled<'a> {
    let pipeline = match a.mode {
        Mode::Records => false,
        Mode::Pipeline => true,
        Mode::Auto => !has_records(session),
    };
    if !pipeline {
        let mut rec = assemble_records(bump, session, identity);
        // A shape that does not hash to its recorded value proves nothing.
        let shapes_hold = !rec.diagnostics.iter().any(|d| d.message.starts_with("api-request-shape "));
        let replayed: rustc_hash::FxHashSet<(&str, u32)> =
            rec.requests.iter().filter(|_| shapes_hold).map(|r| (r.file, r.line)).collect();
        with_compactions(bump, session, a, identity, &mut rec.requests, &mut rec.diagnostics);
        return Assembled {
            proven: rec.requests.iter().map(|r| replayed.contains(&(r.file, r.line))).collect(),
            requests: rec.requests,
            diagnostics: rec.diagnostics,
            recorded: rec.recorded,
            messages_hashed: rec.messages_hashed,
            hash_matches: rec.hash_matches,
            ..Assembled::default()
        };
    }
    let (plan, extras) = a.plan(session);
    let mut out = assemble_pipeline(bump, session, &plan, &extras, identity);
    let file = session.files().next().map(|f| f.file.display.clone()).unwrap_or_default();
    let mut diagnostics: Vec<Diagnostic> =
        extras.warnings.iter().map(|(kind, msg)| Diagnostic::new(file.as_str(), 0, *kind, msg.as_str())).collect();
    diagnostics.append(&mut out.diagnostics);
    // The records the pipeline did not use are still counted: the summary
    // says how many the transcripts hold whichever way they were built.
    let recorded = session
        .files()
        .flat_map(|f| f.parsed.entries.iter())
        .filter(|e| matches!(e.kind, EntryKind::ApiRequest(_)))
        .count() as u64;
    Assembled {
        requests: out.requests,
        diagnostics,
        recorded,
        by_pipeline: true,
        pipeline: out.report,
        ..Default::default()
    }
}
