//! Stage: the reminders a running CLI process adds without writing them to
//! the transcript (2.1.88, seeds `TODO_REMINDER_CONFIG`).
//!
//! *What it does.* [`anchor_reminders`] finds the CLI process a turn belongs
//! to (a process starts at the first plain prompt of the file and at the
//! first one after each `last-prompt` line), forgets the reminders of the
//! processes before it, and anchors the todo reminder after the newest
//! message when [`Extras::todo_reminder`]'s count of assistant lines without
//! a `TodoWrite` call is reached.
//!
//! *Why.* The client keeps these attachments in memory: later requests of
//! the same process repeat them, a new process does not (checked on the
//! 2.1.88 `long-session` and `resume-multi-prompt` captures).
//!
//! *Invariants.* Only the running process's reminders are in
//! [`ChainState::anchored`].
//!
//! [`Extras::todo_reminder`]: super::plan::Extras::todo_reminder

use super::chain::{ChainCtx, ChainState};
use crate::model::content::BlockKind;
use crate::model::entry::{Entry, EntryKind};

/// The process start of the turn whose first entry is `first` (its
/// reminders reset when the process changed), after anchoring the todo
/// reminder if it is due.
pub(crate) fn anchor_reminders<'a>(
    cx: &ChainCtx<'a, '_>,
    st: &mut ChainState<'a>,
    first: usize,
    projected: &[usize],
) -> Option<usize> {
    let current = cx.process_starts.iter().rev().find(|&&i| i < first).copied();
    if st.anchored_process != current {
        st.anchored.clear();
        st.anchored_process = current;
        st.anchored_epoch += 1;
    }
    st.anchored_low = None;
    if let Some((text, every)) = &cx.extras.todo_reminder
        && let Some(&last) = projected.last()
    {
        let mut since = 0usize;
        for &i in projected.iter().rev() {
            if st.anchored.contains_key(&i) || uses_tool(&cx.entries[i], "TodoWrite") {
                break;
            }
            if matches!(cx.entries[i].kind, EntryKind::Assistant(_)) {
                since += 1;
            }
        }
        if since >= *every {
            st.anchored.entry(last).or_default().push(cx.bump.alloc_str(text));
            st.anchored_low = Some(st.anchored_low.map_or(last, |l| l.min(last)));
        }
    }
    current
}

/// Entry indices of the prompts that begin a CLI process: the first plain
/// user prompt of the file and the first one after each `last-prompt` line
/// (a `-p` process writes `last-prompt` as it ends; checked on
/// resume-multi-prompt of the 2.1.88 captures), and after the `<synthetic>`
/// filler a resumed process writes when the previous one wrote no
/// `last-prompt` (killed, or `/compact` only: the 2.1.88 killed-resume and
/// compact-resume captures). A file without any
/// `last-prompt` line (2.1.50 writes none) marks a `-p` process by the
/// `queue-operation` dequeue of its prompt (checked on 2.1.50's
/// resume-multi-prompt; an interactive session that queued a prompt while
/// busy would be cut there too).
pub(crate) fn process_first_prompts(entries: &[Entry<'_>]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut waiting = true;
    let marks_by_queue = !entries.iter().any(|e| matches!(e.kind, EntryKind::LastPrompt { .. }));
    for (i, e) in entries.iter().enumerate() {
        match &e.kind {
            EntryKind::LastPrompt { .. } => waiting = true,
            EntryKind::Assistant(_) if super::normalize::is_resume_filler(e) => waiting = true,
            EntryKind::QueueOperation { operation: Some("dequeue"), .. } if marks_by_queue => waiting = true,
            EntryKind::User(u) if waiting && !e.env.is_meta => {
                let is_tool_result = u.content.blocks().iter().any(|b| matches!(b.kind, BlockKind::ToolResult { .. }));
                if !is_tool_result {
                    out.push(i);
                    waiting = false;
                }
            }
            _ => {}
        }
    }
    out
}

/// Whether `e` is an assistant line calling tool `name`.
fn uses_tool(e: &Entry<'_>, name: &str) -> bool {
    e.as_assistant().is_some_and(|a| {
        a.content.blocks().iter().any(|b| matches!(b.kind, BlockKind::ToolUse { name: n, .. } if n == name))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{ReadOptions, parse_bytes};
    use bumpalo::Bump;

    /// Lines cut from the 2.1.88 resume-multi-prompt capture's shape: a
    /// prompt, a tool result, `last-prompt`, a second prompt.
    const LINES: &str = concat!(
        r#"{"type":"user","uuid":"u1","message":{"role":"user","content":"first"}}"#,
        "\n",
        r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"TodoWrite","input":{}}]}}"#,
        "\n",
        r#"{"type":"user","uuid":"u2","parentUuid":"a1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}}"#,
        "\n",
        r#"{"type":"last-prompt","lastPrompt":"first"}"#,
        "\n",
        r#"{"type":"user","uuid":"u3","parentUuid":"u2","message":{"role":"user","content":"second"}}"#,
        "\n",
    );

    #[test]
    fn processes_start_at_the_file_and_after_last_prompt() {
        let bump = Bump::new();
        let parsed = parse_bytes(&bump, LINES.as_bytes(), "t.jsonl", &ReadOptions::default());
        assert_eq!(process_first_prompts(&parsed.entries), [0, 4]);
        assert!(uses_tool(&parsed.entries[1], "TodoWrite"));
        assert!(!uses_tool(&parsed.entries[1], "Bash"));
        assert!(!uses_tool(&parsed.entries[0], "TodoWrite"));
    }

    #[test]
    fn without_last_prompt_the_queue_marks_the_processes() {
        // 2.1.50 writes no last-prompt: each -p process dequeues its prompt.
        let dequeue = r#"{"type":"queue-operation","operation":"dequeue"}"#;
        let lines = [
            dequeue,
            r#"{"type":"user","uuid":"u1","message":{"role":"user","content":"first"}}"#,
            r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"ok"}]}}"#,
            dequeue,
            r#"{"type":"user","uuid":"u2","parentUuid":"a1","message":{"role":"user","content":"second"}}"#,
        ]
        .join("\n");
        let bump = Bump::new();
        let parsed = parse_bytes(&bump, lines.as_bytes(), "t.jsonl", &ReadOptions::default());
        assert_eq!(process_first_prompts(&parsed.entries), [1, 4]);
        // With a last-prompt line anywhere, the queue marks nothing.
        let with = format!("{lines}\n{}", r#"{"type":"last-prompt","lastPrompt":"second"}"#);
        let parsed = parse_bytes(&bump, with.as_bytes(), "t.jsonl", &ReadOptions::default());
        assert_eq!(process_first_prompts(&parsed.entries), [1]);
    }
}
