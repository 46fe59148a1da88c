//! Stage (part of the entry pieces, [`super::chain`]): a background-task
//! notification as the CLI sends it.
//!
//! *Why.* When a background Bash command or an async Agent finishes, the
//! CLI writes a user line with `origin.kind: "task-notification"` whose
//! content is the raw `<task-notification>…</task-notification>` text, but
//! sends it wrapped: 2.1.328 and 2.1.332 (`background-bash` and
//! `subagent-bash` captures) put it inside a `<system-reminder>` that
//! starts `[SYSTEM NOTIFICATION - NOT USER INPUT]`. The wrapper is the
//! release's text, so it is learned, never written here: from the
//! session's own records (an `api-request-blob` that sends the raw text
//! inside a longer one, [`session_template`]) or from the profile
//! (`reminders.task_notification`, learned by extract from a capture that
//! shows one). 2.1.88 sends the raw text: no template, nothing changes.
//!
//! A template is the sent text with the raw notification replaced by
//! [`PLACEHOLDER`].

use super::normalize::{self, Piece};
use crate::corpus::Session;
use crate::json::Json;
use crate::model::content::Content;
use crate::model::entry::{Entry, EntryKind};
use bumpalo::Bump;

/// Where the raw notification goes in a template.
pub const PLACEHOLDER: &str = "{notification}";

/// The `origin.kind` of a task-notification user line.
const ORIGIN: &str = "task-notification";

/// The template of a `sent` text that holds the `raw` notification (`None`
/// when it does not, or is the raw text itself).
pub fn template_of(sent: &str, raw: &str) -> Option<String> {
    if sent == raw || raw.is_empty() {
        return None;
    }
    let at = sent.find(raw)?;
    Some(format!("{}{PLACEHOLDER}{}", &sent[..at], &sent[at + raw.len()..]))
}

/// The raw text of a task-notification user line (`None`: another line).
pub(crate) fn raw_notification<'a>(e: &Entry<'a>) -> Option<&'a str> {
    let u = e.as_user()?;
    let kind = e.raw.get("origin").and_then(|o| o.get_str("kind"));
    match (kind, u.content) {
        (Some(ORIGIN), Content::Text(t)) => Some(t),
        _ => None,
    }
}

/// The texts a recorded message sends.
fn message_texts<'a>(m: &Json<'a>) -> Vec<&'a str> {
    match m.get("content") {
        Some(Json::Str(s)) => vec![*s],
        Some(Json::Arr(blocks)) => blocks.iter().filter_map(|b| b.get_str("text")).collect(),
        _ => Vec::new(),
    }
}

/// The wrapper the session's records show: the first recorded message
/// (`api-request-blob`) that sends a task notification of the session
/// inside a longer text.
pub(crate) fn session_template(session: &Session<'_, '_>) -> Option<String> {
    let entries = || session.files().flat_map(|f| f.parsed.entries.iter());
    let raws: Vec<&str> = entries().filter_map(raw_notification).collect();
    if raws.is_empty() {
        return None;
    }
    entries().find_map(|e| match e.kind {
        EntryKind::ApiRequestBlob { message: Some(m), .. } => {
            message_texts(m).into_iter().find_map(|t| raws.iter().find_map(|raw| template_of(t, raw)))
        }
        _ => None,
    })
}

/// The piece of entry `e` when it is a task notification and a template is
/// known: one text block, the raw text put in the template.
pub(crate) fn notification_piece<'a>(bump: &'a Bump, e: &Entry<'a>, template: Option<&str>) -> Option<Piece<'a>> {
    let (raw, template) = (raw_notification(e)?, template?);
    let text = bump.alloc_str(&template.replacen(PLACEHOLDER, raw, 1));
    Some(Piece::User { blocks: bump.alloc_slice_copy(&[normalize::text_block(bump, text)]), tool_results: false })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_is_the_sent_text_around_the_raw_notification() {
        let raw = "<task-notification>\n<status>completed</status>\n</task-notification>";
        let sent = format!("<system-reminder>\nA NOTE\n\n{raw}\n</system-reminder>");
        let t = template_of(&sent, raw);
        assert_eq!(t.as_deref(), Some("<system-reminder>\nA NOTE\n\n{notification}\n</system-reminder>"));
        assert_eq!(t.map(|t| t.replacen(PLACEHOLDER, raw, 1)), Some(sent));
        assert_eq!(template_of(raw, raw), None);
        assert_eq!(template_of("other", raw), None);
    }
}
