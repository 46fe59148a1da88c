//! The context-assembly pipeline: build every request of a session from the
//! conversation itself, stage by stage (SPEC.md "The pipeline described by
//! the seeds"), instead of replaying recorded requests.
//!
//! [`setup`] resolves, once per session, the profile, the environment and
//! the what-if overrides into a [`Plan`] and its [`Extras`]. Then per chain
//! (main transcript, then each subagent; [`chain::ChainCtx`]) and per turn
//! (assistant API message, [`projection::turns`]), [`chain`] calls the
//! stages in this fixed order, each one file and one function:
//!
//! | stage | file | does |
//! |---|---|---|
//! | projection | [`projection`] | the `parentUuid` path of the turn |
//! | reminders | [`reminders`] | the running CLI process, the todo reminder |
//! | pieces | [`pieces`] | entry pieces plus the profile's extra pieces |
//! | normalize | [`normalize`] | pieces → API messages |
//! | pairing | [`pairing`] | every `tool_use` answered, every result asked |
//! | media | [`media`] | at most 100 media blocks |
//! | leading user | [`leading_user`] | a user message first |
//! | billing | [`billing`] | the billing header's text |
//! | share | [`share`] | one node per message across turns |
//! | breakpoints | [`breakpoints`] | the message cache breakpoint |
//! | collapse | [`collapse`] | one-block messages as strings |
//! | system | [`system`] | system blocks and tools |
//! | body | [`body`] | the request |
//!
//! The system side of a session without recorded shapes is rendered by
//! [`setup`] from the profile with [`contexts`], [`system_prompt`] and
//! [`system_blocks`]; [`attachments`] renders attachment entries for
//! [`normalize`], [`notifications`] the background-task notifications.

mod agent;
pub mod attachments;
mod billing;
mod body;
pub mod breakpoints;
mod chain;
mod collapse;
pub mod contexts;
mod leading_user;
pub mod media;
pub mod normalize;
pub mod notifications;
pub mod pairing;
mod pieces;
pub mod plan;
mod processes;
pub mod projection;
mod reminders;
pub mod report;
pub mod setup;
mod share;
pub mod snapshot;
mod system;
pub mod system_blocks;
pub mod system_prompt;

pub use agent::AgentPlan;
pub use leading_user::MISSING_START;
pub use plan::{Extras, Plan, ShapeEdits, SystemSource};
pub use report::{PairingRepairsTotal, PipelineReport};
pub use setup::{Overrides, Setup, SetupError};

use super::Request;
use super::wire::RecordOptions;
use crate::corpus::Session;
use crate::diag::Diagnostic;
use bumpalo::Bump;
use chain::{ChainCtx, ChainState, SessionCtx};
use plan::Statics;

/// What the pipeline produced for one session.
#[derive(Debug, Default)]
pub struct SessionPipeline<'a> {
    pub requests: Vec<Request<'a>>,
    pub report: PipelineReport,
    pub diagnostics: Vec<Diagnostic>,
}

/// Assemble every turn of `session` with `plan` and `extras`.
pub fn assemble_pipeline<'a>(
    bump: &'a Bump,
    session: &Session<'a, '_>,
    plan: &Plan,
    extras: &Extras,
    identity: &RecordOptions,
) -> SessionPipeline<'a> {
    let mut out = SessionPipeline::default();
    let statics = Statics::new(bump, plan);
    let warmups = agent::assign_warmups(session, plan, |id| chain::names_agent(session, id));
    let sx = SessionCtx { bump, session, plan, statics: &statics, extras, identity, warmups: &warmups };
    for f in session.files() {
        let cx = ChainCtx::new(&sx, f, &mut out.report);
        assemble_chain(&cx, &mut out);
    }
    out
}

/// Every turn of one chain, the stages in order (see the module docs).
fn assemble_chain<'a>(cx: &ChainCtx<'a, '_>, out: &mut SessionPipeline<'a>) {
    let bump = cx.bump;
    let mut st = ChainState::default();
    let turns = projection::turns(cx.entries);
    // A warmup whose reply was not written still was sent (agent.rs).
    let unanswered = turns.is_empty().then(|| agent::unanswered(cx)).flatten();
    let projected = turns.iter().map(|t| (t.first, projection::project(cx.entries, &cx.links, t)));
    for (n, (first, projected)) in projected.chain(unanswered).enumerate() {
        out.report.turns += 1;
        let current_start = reminders::anchor_reminders(cx, &mut st, first, &projected);
        pieces::gather_pieces(cx, &mut st, &projected, current_start);
        let (messages, nrep) = normalize::normalize(bump, &st.scratch, &cx.statics.rules);
        let (messages, prep) = pairing::ensure_tool_result_pairing(bump, &messages);
        let (mut messages, stripped) = media::limit_media(bump, &messages);
        let inserted = leading_user::ensure_leading_user(bump, &mut messages, cx.agent_prompt);
        count_repairs(&mut out.report, &nrep, &prep, stripped, inserted);
        let header = billing::billing_header(cx, cx.entries[first].env.version.unwrap_or(""), &messages);
        share::share_with_previous(&mut messages, &mut st.prev_turn);
        let (cc, count) = (cx.statics.cache_control, cx.plan.message_breakpoints);
        breakpoints::add_cache_breakpoints_skipping(bump, &mut messages, cc, count, cx.plan.breakpoint_skips_system);
        let messages = collapse::collapse_messages(bump, messages, &mut st.collapsed, keeps_blocks(cx, first));
        match system::select_system(cx, &mut st, first) {
            Ok(system) => {
                let process = current_start.and_then(|s| cx.process_starts.iter().position(|&p| p == s));
                out.requests.push(body::build_request(cx, n, first, process, messages, system, header.as_deref()))
            }
            Err(d) => out.diagnostics.push(d),
        }
    }
}

/// Whether the turn's user messages keep their blocks: a main-chain turn of
/// a resumed process in a layout that says so (`processes.rs`).
fn keeps_blocks(cx: &ChainCtx<'_, '_>, first: usize) -> bool {
    cx.plan.user_text_as_blocks
        && cx.agent_id.is_none()
        && cx.plan.resumed_processes.get(processes::process_of(cx.entries, first)).copied().unwrap_or(false)
}

/// Add one request's repairs to the session's counts.
fn count_repairs(
    r: &mut PipelineReport,
    nrep: &normalize::Report,
    prep: &pairing::PairingRepairs,
    stripped: usize,
    inserted: bool,
) {
    r.thinking_only_dropped += nrep.dropped_thinking_only as u64;
    r.empty_assistant_dropped += nrep.dropped_empty_assistant as u64;
    r.pairing.add(prep);
    r.media_stripped += stripped as u64;
    r.leading_user_inserted += u64::from(inserted);
    if prep.any() || stripped > 0 || inserted {
        r.requests_repaired += 1;
    }
}

#[cfg(test)]
mod tests;
