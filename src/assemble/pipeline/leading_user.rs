//! Stage: a request's conversation starts with a user message.
//!
//! *What it does.* When the first non-system message is not a user message
//! (or there is none), [`ensure_leading_user`] puts one first: the prompt
//! the main chain gave this subagent when the main transcript has it, else
//! [`MISSING_START`].
//!
//! *Why.* The API rejects a conversation that starts with an assistant
//! message; a subagent file without its prompt, an excerpt or a lost line
//! leaves the start out of the file.
//!
//! *Invariants.* Returns whether it inserted (the caller counts repairs).

use super::normalize;
use crate::json::Json;
use bumpalo::Bump;

/// Text of the user message put before a conversation whose start is not in
/// the transcript (ctxasm's wording).
pub const MISSING_START: &str = "[The start of this conversation is not in the transcript]";

/// Put a user message first when the conversation does not start with one.
pub(crate) fn ensure_leading_user<'a>(
    bump: &'a Bump,
    messages: &mut Vec<&'a Json<'a>>,
    agent_prompt: Option<&'a str>,
) -> bool {
    if starts_with_user(messages) {
        return false;
    }
    let text = agent_prompt.unwrap_or(MISSING_START);
    messages.insert(0, normalize::message(bump, "user", &[normalize::text_block(bump, text)], &[]));
    true
}

/// Whether the first message that is not a system turn is a user message.
pub(crate) fn starts_with_user(messages: &[&Json<'_>]) -> bool {
    messages.iter().find(|m| m.get_str("role") != Some("system")).is_some_and(|m| m.get_str("role") == Some("user"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::writer;

    #[test]
    fn inserts_only_before_a_non_user_start() {
        let bump = Bump::new();
        let assistant = normalize::message(&bump, "assistant", &[normalize::text_block(&bump, "hi")], &[]);
        let system = normalize::message(&bump, "system", &[normalize::text_block(&bump, "s")], &[]);
        let user = normalize::message(&bump, "user", &[normalize::text_block(&bump, "u")], &[]);

        let mut m = vec![system, user];
        assert!(!ensure_leading_user(&bump, &mut m, None));
        assert_eq!(m.len(), 2);

        let mut m = vec![system, assistant];
        assert!(ensure_leading_user(&bump, &mut m, Some("do the task")));
        assert_eq!(writer::to_vec(m[0]), br#"{"role":"user","content":[{"type":"text","text":"do the task"}]}"#);

        let mut m = Vec::new();
        assert!(ensure_leading_user(&bump, &mut m, None));
        assert_eq!(
            m[0].get("content").and_then(|c| c.as_array()).map(|c| c[0].get_str("text")),
            Some(Some(MISSING_START))
        );
    }
}
