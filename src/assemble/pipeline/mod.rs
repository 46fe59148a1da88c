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
//! | compaction | [`compaction`] | the chain's requests: turns and compactions |
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
mod compaction;
pub mod contexts;
mod finish;
mod leading_user;
mod mcp;
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
mod resume;
pub mod setup;
mod share;
pub mod snapshot;
mod spine;
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
use body::RequestId;
use bumpalo::Bump;
use chain::{ChainCtx, ChainState, SessionCtx};
use compaction::Job;
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
    assemble_jobs(bump, session, plan, extras, identity, false)
}

/// Only the compaction requests of `session` (records mode: 2.1.3xx writes
/// no `api-request` record for them).
pub fn compaction_requests<'a>(
    bump: &'a Bump,
    session: &Session<'a, '_>,
    plan: &Plan,
    extras: &Extras,
    identity: &RecordOptions,
) -> SessionPipeline<'a> {
    assemble_jobs(bump, session, plan, extras, identity, true)
}

fn assemble_jobs<'a>(
    bump: &'a Bump,
    session: &Session<'a, '_>,
    plan: &Plan,
    extras: &Extras,
    identity: &RecordOptions,
    only_compactions: bool,
) -> SessionPipeline<'a> {
    let mut out = SessionPipeline::default();
    let statics = Statics::new(bump, plan);
    let warmups = agent::assign_warmups(session, plan, |id| chain::names_agent(session, id));
    let sx = SessionCtx { bump, session, plan, statics: &statics, extras, identity, warmups: &warmups };
    for f in session.files() {
        for part in chain::parts(f) {
            let cx = ChainCtx::new(&sx, f, part, &mut out.report);
            assemble_chain(&cx, &mut out, only_compactions);
        }
    }
    out
}

/// Every request of one chain, the stages in order (see the module docs).
fn assemble_chain<'a>(cx: &ChainCtx<'a, '_>, out: &mut SessionPipeline<'a>, only_compactions: bool) {
    let bump = cx.bump;
    let mut st = ChainState::default();
    let turns = cx.turns();
    out.requests.reserve(turns.len());
    let mut jobs = compaction::jobs(cx, &turns);
    // A warmup whose reply was not written still was sent (agent.rs).
    if turns.is_empty()
        && let Some((first, projected)) = agent::unanswered(cx)
    {
        jobs.push(Job::Given { first, projected });
    }
    let mut n = 0;
    // How many requests there were after this chain's last one was pushed.
    let mut pushed = None;
    for job in jobs {
        #[cfg(test)]
        if tests::FROM_SCRATCH.with(std::cell::Cell::get) {
            st.memo.clear();
            st.finish.forget();
        }
        if only_compactions && !matches!(job, Job::Compact { .. }) {
            n += 1;
            pushed = None;
            continue;
        }
        out.report.turns += 1;
        // A turn extends the last one's projection where it can (resume.rs);
        // a compaction or a given turn is built from scratch, and the next
        // turn too.
        let (first, kept, compact) = match job {
            Job::Turn(t) => {
                (t.first, Some(projection::project_into(cx.entries, &cx.links, t, &mut st.memo.path)), None)
            }
            Job::Given { first, projected } => {
                st.memo.clear();
                st.memo.path.path = projected;
                (first, None, None)
            }
            Job::Compact { at, projected, instruction, k, current_start } => {
                st.memo.clear();
                st.memo.path.path = projected;
                (at, None, Some((instruction, k, current_start)))
            }
        };
        let projected = std::mem::take(&mut st.memo.path.path);
        let current_start = match compact {
            None => reminders::anchor_reminders(cx, &mut st, first, &projected),
            Some((_, _, start)) => compaction::enter_process(&mut st, start),
        };
        let own = compact.is_some() && cx.plan.compaction_own.is_some();
        // A compaction of its own keeps user blocks where the layout's
        // resumed turns do (1.0.128, 2.0.77).
        let keeps = keeps_blocks(cx, first) || (own && cx.plan.user_text_as_blocks);
        let same = match kept {
            _ if own => {
                compaction::plain_pieces(cx, &mut st, &projected);
                0
            }
            Some(kept) => pieces::gather_pieces_from(cx, &mut st, &projected, kept, current_start),
            None => {
                pieces::gather_pieces(cx, &mut st, &projected, current_start);
                0
            }
        };
        st.memo.path.path = projected;
        let paired = resume::paired_messages(bump, &st.scratch, same, (&cx.statics.rules, &cx.answers), &mut st.memo);
        let turn = finish::Turn {
            version: cx.entries[first].env.shared.version.unwrap_or(""),
            keeps,
            compact: compact.map(|(instruction, ..)| (instruction, own)),
            unchanged: kept.map(|_| paired.unchanged),
            media: paired.media,
        };
        let fin = finish::finish(cx, &mut st.finish, &mut st.memo.paired, &turn);
        count_repairs(&mut out.report, &paired.normalize, &paired.pairing, fin.stripped, fin.inserted);
        if kept.is_none() {
            st.memo.clear();
        }
        let id = match compact {
            Some((_, k, _)) => RequestId::Compaction(k),
            None => {
                n += 1;
                RequestId::Turn(n - 1)
            }
        };
        // The kept messages are those of the request just before this
        // one only when that was the chain's last turn.
        let shared = if pushed == Some(out.requests.len()) { fin.shared } else { 0 };
        match system::select_system(cx, &mut st, first, compact.is_some()) {
            Ok(system) => {
                let process = current_start.and_then(|s| cx.process_starts.iter().position(|&p| p == s));
                let header = fin.header.as_deref();
                let mut request = body::build_request(cx, id, first, process, fin.messages, system, header);
                request.body.shared = shared;
                out.requests.push(request);
                pushed = Some(out.requests.len());
            }
            Err(d) => {
                out.diagnostics.push(d);
                pushed = None;
            }
        }
    }
}

/// Whether the turn's user messages keep their blocks: a main-chain turn of
/// a resumed process in a layout that says so (`processes.rs`).
fn keeps_blocks(cx: &ChainCtx<'_, '_>, first: usize) -> bool {
    cx.plan.user_text_as_blocks
        && cx.agent_id.is_none()
        && cx.plan.resumed_processes.get(processes::process_of(&cx.prompts_before, first)).copied().unwrap_or(false)
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
