//! What a release does with its requests that its transcripts do not
//! record, by release number: learned from captures of the real CLI (what
//! it sent), for the sessions of releases no profile is extracted for.
//!
//! Data only: the cost model reads it (see `cost::modeled`).

use super::Version;

/// What a release sends that its transcripts do not say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReleaseTraits {
    /// Run with stream-json input (the 2.0 VS Code extension, the SDK),
    /// the attachments a prompt is sent with (an @-mentioned file's "Called
    /// the Read tool" message and its text, a todo reminder, the IDE's
    /// context; none is written to the transcript) are sent only by the
    /// requests of that prompt: the next prompt sends it without them, so
    /// the cache breaks at that prompt's message. (In a terminal, the
    /// releases captured keep them: see [`ATTACHMENTS_KEPT_FROM`].)
    pub attachments_one_prompt: bool,
    /// The request's messages carry two breakpoints: on the last block of
    /// each of its last two messages (none on a message whose last block
    /// cannot carry one, such as a thinking block); later releases mark the
    /// last message only.
    pub marks_last_two_messages: bool,
}

/// The first release that sends a prompt's attachments again with every
/// later request under stream-json input. Captured
/// (`scripts/interactive/ide-extension.py` with `ONE_PROCESS=1`, the
/// prompts' messages compared request to request): 1.0.128, 2.0.5, 2.0.14,
/// 2.0.24, 2.0.28 and 2.0.29 send the next prompt without the @-mention of
/// the one before (and without a todo reminder it had); 2.0.30, 2.0.31 and
/// 2.0.37 send it unchanged. In a terminal
/// (`scripts/interactive/mention.py`), 1.0.51, 1.0.128 and 2.0.5 send it
/// unchanged.
pub const ATTACHMENTS_KEPT_FROM: Version = Version(2, 0, 30);

/// The first release that marks only the last message. Captured (three
/// prompts, stream-json): 1.0.24, 1.0.128, 2.0.5, 2.0.30, 2.0.37, 2.0.77,
/// 2.1.0, 2.1.50, 2.1.58, 2.1.63, 2.1.67 and 2.1.68 mark the last two
/// messages, 2.1.69 and 2.1.88 the last one (a terminal session of 2.0.5
/// the same as stream-json).
pub const ONE_MESSAGE_MARK_FROM: Version = Version(2, 1, 69);

/// The traits of release `version` (`"2.0.5"`); the defaults (what current
/// releases do) for a version that does not parse.
pub fn release_traits(version: &str) -> ReleaseTraits {
    match Version::parse(version) {
        Some(v) => ReleaseTraits {
            attachments_one_prompt: v < ATTACHMENTS_KEPT_FROM,
            marks_last_two_messages: v < ONE_MESSAGE_MARK_FROM,
        },
        None => ReleaseTraits::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attachments_are_sent_with_one_prompt_before_2_0_30() {
        let one = |v: &str| release_traits(v).attachments_one_prompt;
        assert!(one("1.0.24"));
        assert!(one("1.0.128"));
        assert!(one("2.0.5"));
        assert!(one("2.0.29"));
        assert!(!one("2.0.30"));
        assert!(!one("2.0.37"));
        assert!(!one("2.1.88"));
        assert!(!one(""));
        assert!(!one("unknown"));
    }

    #[test]
    fn the_last_two_messages_are_marked_before_2_1_69() {
        let two = |v: &str| release_traits(v).marks_last_two_messages;
        assert!(two("1.0.24"));
        assert!(two("2.0.5"));
        assert!(two("2.1.68"));
        assert!(!two("2.1.69"));
        assert!(!two("2.1.88"));
        assert!(!two("2.1.328"));
        assert!(!two("not a version"));
    }
}
