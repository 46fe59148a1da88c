//! One entry point for the outputs: assemble a session in the chosen
//! [`Mode`] (record replay, the pipeline, or records when the session has
//! them and the pipeline otherwise).

use super::Request;
use super::pipeline::{Extras, Layout, PipelineReport, assemble_pipeline};
use super::records::{RecordOptions, assemble_records};
use crate::corpus::Session;
use crate::diag::Diagnostic;
use crate::model::entry::EntryKind;
use bumpalo::Bump;

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

/// Prepares the pipeline's layout and extras for one session (profile,
/// environment and what-if overrides live behind it).
pub trait PipelinePrep: Send + Sync + std::fmt::Debug {
    fn prepare(&self, session: &Session<'_, '_>) -> Result<(Layout, Extras), String>;
}

/// The `cc-2.1.328` layout with no change: what the 2.1.3xx captures show.
#[derive(Debug, Default)]
pub struct Cc2_1_328;

impl PipelinePrep for Cc2_1_328 {
    fn prepare(&self, _session: &Session<'_, '_>) -> Result<(Layout, Extras), String> {
        Ok((Layout::cc_2_1_328(), Extras::default()))
    }
}

/// Everything `assemble` needs to turn a session into requests.
#[derive(Debug)]
pub struct Assembler {
    pub mode: Mode,
    pub records: RecordOptions,
    pub pipeline: Box<dyn PipelinePrep>,
}

impl Default for Assembler {
    fn default() -> Self {
        Assembler { mode: Mode::Records, records: RecordOptions::default(), pipeline: Box::new(Cc2_1_328) }
    }
}

/// What assembling one session produced.
#[derive(Debug, Default)]
pub struct Assembled<'a> {
    pub requests: Vec<Request<'a>>,
    pub diagnostics: Vec<Diagnostic>,
    /// `api-request` entries replayed (records mode).
    pub recorded: u64,
    pub messages_hashed: u64,
    pub hash_matches: u64,
    /// The pipeline ran for this session.
    pub by_pipeline: bool,
    pub pipeline: PipelineReport,
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
    let pipeline = match a.mode {
        Mode::Records => false,
        Mode::Pipeline => true,
        Mode::Auto => !has_records(session),
    };
    if !pipeline {
        let rec = assemble_records(bump, session, identity);
        return Assembled {
            requests: rec.requests,
            diagnostics: rec.diagnostics,
            recorded: rec.recorded,
            messages_hashed: rec.messages_hashed,
            hash_matches: rec.hash_matches,
            ..Assembled::default()
        };
    }
    let (layout, extras) = match a.pipeline.prepare(session) {
        Ok(v) => v,
        Err(msg) => {
            let file = session.files().next().map(|f| f.file.display.clone()).unwrap_or_default();
            return Assembled {
                diagnostics: vec![Diagnostic::new(file, 0, crate::diag::DiagKind::PipelineSetup, msg)],
                by_pipeline: true,
                ..Assembled::default()
            };
        }
    };
    let mut out = assemble_pipeline(bump, session, &layout, &extras, identity);
    let file = session.files().next().map(|f| f.file.display.clone()).unwrap_or_default();
    let mut diagnostics: Vec<Diagnostic> =
        extras.warnings.iter().map(|(kind, msg)| Diagnostic::new(file.as_str(), 0, *kind, msg.as_str())).collect();
    diagnostics.append(&mut out.diagnostics);
    Assembled { requests: out.requests, diagnostics, by_pipeline: true, pipeline: out.report, ..Default::default() }
}
