//! A release's layout: how it carries context and builds the system side of
//! a request, as named fields of its profile. Each field is one choice a
//! pipeline stage reads; a new release era is a profile whose fields say
//! what its captures show, not code that names the release.
//!
//! In a profile file, `layout` is either an object of these fields or the
//! name of a built-in profile (`"seed"`, `"cc-2.1.328"`) whose layout it
//! means. The built-in profiles define their layouts as objects; a profile
//! whose layout equals a built-in's is written with the name (as every
//! profile was before the fields existed).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// How a release lays its requests out (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Layout {
    /// The layout's name, for messages (`seed`, `cc-2.1.328`).
    pub name: String,
    /// The transcript records each request's system blocks and tools
    /// (`api-request-shape`, 2.1.3xx): a session that has them uses them.
    pub system_from_shape: bool,
    /// The transcript writes the session's system prompt, CLI prefix and
    /// tools in `prompt_snapshot` attachments (2.1.3xx): a session without
    /// shapes that has them uses them for the rendered system side (records
    /// stripped; the prompt the session's own flags and model made).
    pub system_from_snapshot: bool,
    /// The default prompt has a static/dynamic boundary (2.1.88): its static
    /// sections are sent verbatim in a block of their own (global cache
    /// scope), the dynamic ones rendered after the boundary marker. Without
    /// it (2.1.328) every section is rendered and there is no marker.
    pub dynamic_boundary: bool,
    /// The system context (gitStatus) is the default prompt's last section
    /// (2.1.88); otherwise it travels as an attachment in the transcript.
    pub system_context_in_prompt: bool,
    /// The user context (claudeMd, currentDate) is a meta user message put
    /// before the conversation (2.1.88 `prependUserContext`); otherwise it
    /// travels as an attachment in the transcript.
    pub user_context_message: bool,
    /// The skills listing rides on the first prompt of each CLI process
    /// (2.1.88); otherwise it is an attachment in the transcript.
    pub skills_per_process: bool,
    /// The profile's todo reminder is added after enough assistant lines
    /// without a `TodoWrite` call (2.1.88).
    pub todo_reminder: bool,
    /// Conditional memory rules are sent after the first `Read` of a
    /// matching file (2.1.88).
    pub rules_after_read: bool,
    /// Attachment text after a string tool result is joined to that result
    /// (2.1.88).
    pub attachments_into_tool_result: bool,
    /// System-role attachments are sent as user text (a layout without
    /// `role: "system"` turns).
    pub system_attachments_as_user: bool,
    /// Params a `role: "system"` message carries when their value changed
    /// since the last system turn that carried them — the first one, and a
    /// CLI process's other `--effort` (then an empty system turn when no
    /// attachment makes one); 2.1.328/2.1.332: `output_config`. `profile
    /// extract` reads them off the capture's system messages.
    pub system_message_params: Vec<String>,
    /// How many of the last messages get a cache breakpoint (1; 2.0.77: 2).
    #[serde(default = "one")]
    pub message_breakpoints: usize,
    /// Merging consecutive user messages appends `"\n"` to the earlier
    /// one's last text block (2.1.88, 2.1.100); 2.1.50 joins the blocks
    /// as they are (its skills reminder ends without one).
    #[serde(default = "yes")]
    pub merge_newline: bool,
    /// HTML comments in memory files are sent (2.1.71 and older); 2.1.72
    /// strips them.
    pub memory_comments: bool,
    /// Each memory file's claudeMd text is sent untrimmed: its last newline
    /// stays, a blank line before the next `Contents of` (2.1.0 – 2.1.78 at
    /// least); 2.1.88 trims it.
    pub memory_untrimmed: bool,
    /// The message breakpoints skip `role: "system"` messages: they go on
    /// the last user or assistant messages, a system turn after them stays
    /// unmarked (2.1.198; 2.1.250 and 2.1.3xx mark a last system turn).
    pub breakpoint_skips_system: bool,
    /// [`Layout::system_message_params`] go on the first `role: "system"`
    /// message of a request only (2.1.300: a later system turn, the nested
    /// rules or the token count, has none).
    pub system_message_params_first_only: bool,
    /// Params whose value is the session's own: taken from the turn's
    /// `api-request` record (the newest written before it), left out when
    /// that record has none (2.1.300 `safeguards`: the working directory,
    /// home and permission rules, sent on a process's first request only).
    /// A chain without records gets the profile's value on the first
    /// request of each CLI process (2.1.288).
    pub params_from_records: Vec<String>,
    /// Texts a resumed CLI process (`--resume`, `--continue`: every process
    /// of a transcript after its first) leaves out of the rendered system
    /// prompt, each at its first place after the one before (2.1.198: the
    /// model line's ` (1M context)` and `[1m]`).
    pub resumed_drops: Vec<String>,
    /// Params sent between `messages` and `system` rather than after
    /// `metadata`, in the profile's `params` order (1.0.128: `temperature`,
    /// the body's third key).
    pub params_before_system: Vec<String>,
    /// What joins an appended system prompt and the system context that
    /// follows it, when not the `\n\n` between sections (1.0.128, 2.0.77:
    /// `\n`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub append_context_joiner: Option<String>,
    /// In a resumed process (`--resume`, `--continue`), a user message of
    /// one plain text block is sent as that block, not as a string (2.0.77
    /// `resume-multi-prompt`: the first prompt is a string in its own
    /// process, a block in the two that resume it; 1.0.128 likewise).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub user_text_as_blocks: bool,
    /// Consecutive user messages are merged without the `\n` later
    /// releases append to the earlier one's last text (2.0.77 `skill`: the
    /// command message and the skill's text).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub merge_without_newline: bool,
}

fn yes() -> bool {
    true
}

fn one() -> usize {
    1
}

impl Layout {
    /// Merging consecutive user messages appends `"\n"` to the earlier one:
    /// neither field says otherwise (`merge_newline` off, 2.1.50;
    /// `merge_without_newline`, 2.0.77: each found on its own release).
    pub fn merges_with_newline(&self) -> bool {
        self.merge_newline && !self.merge_without_newline
    }
}

impl Default for Layout {
    /// Every choice off, one message breakpoint, the merge's newline.
    fn default() -> Self {
        Layout {
            name: String::new(),
            system_from_shape: false,
            system_from_snapshot: false,
            dynamic_boundary: false,
            system_context_in_prompt: false,
            user_context_message: false,
            skills_per_process: false,
            todo_reminder: false,
            rules_after_read: false,
            attachments_into_tool_result: false,
            system_attachments_as_user: false,
            system_message_params: Vec::new(),
            message_breakpoints: one(),
            merge_newline: true,
            memory_comments: false,
            memory_untrimmed: false,
            breakpoint_skips_system: false,
            system_message_params_first_only: false,
            params_from_records: Vec::new(),
            resumed_drops: Vec::new(),
            params_before_system: Vec::new(),
            append_context_joiner: None,
            user_text_as_blocks: false,
            merge_without_newline: false,
        }
    }
}

/// `layout` as a profile file may write it: the fields, or a built-in's
/// name.
#[derive(Deserialize)]
#[serde(untagged)]
enum LayoutSpec {
    Name(String),
    Fields(Layout),
}

/// Read a profile's `layout` member (see the module docs).
pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Layout, D::Error> {
    match LayoutSpec::deserialize(d)? {
        LayoutSpec::Fields(l) => Ok(l),
        LayoutSpec::Name(name) => match super::builtin_text(&name) {
            Some(text) => serde_json::from_str::<super::Profile>(text)
                .map(|p| p.layout)
                .map_err(|e| serde::de::Error::custom(format!("built-in profile {name}: {e}"))),
            None => Err(serde::de::Error::custom(format!(
                "unknown layout {name:?} (a layout object, or the name of a built-in profile: {})",
                super::BUILTIN.join(", ")
            ))),
        },
    }
}

/// Write a profile's `layout` member: the built-in's name when it is a
/// built-in's layout, else the fields.
pub(crate) fn serialize<S: Serializer>(layout: &Layout, s: S) -> Result<S::Ok, S::Error> {
    let builtin = super::builtin_text(&layout.name)
        .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok())
        .and_then(|v| serde_json::from_value::<Layout>(v.get("layout")?.clone()).ok());
    match builtin {
        Some(b) if &b == layout => s.serialize_str(&layout.name),
        _ => layout.serialize(s),
    }
}

#[cfg(test)]
mod tests {
    use super::super::Profile;

    #[test]
    fn a_name_means_the_builtin_layout() {
        let seed = Profile::load("seed").unwrap();
        let mut v: serde_json::Value = serde_json::from_str(&seed.to_json()).unwrap();
        v["layout"] = "seed".into();
        let old: Profile = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(old.layout, seed.layout);
        v["layout"] = "cc-2.1.328".into();
        let old: Profile = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(old.layout, Profile::load("cc-2.1.328").unwrap().layout);
        // A built-in's layout is written by name, any other as fields.
        assert_eq!(serde_json::to_value(&seed).unwrap()["layout"], "seed");
        let mut changed = seed.clone();
        changed.layout.todo_reminder = false;
        assert_eq!(serde_json::to_value(&changed).unwrap()["layout"]["todo_reminder"], false);
        let back: Profile = serde_json::from_str(&changed.to_json()).unwrap();
        assert_eq!(back.layout, changed.layout);
        // A layout object written before a field existed loads it off.
        let mut older = serde_json::to_value(&changed).unwrap();
        older["layout"].as_object_mut().unwrap().remove("system_from_snapshot");
        let older: Profile = serde_json::from_value(older).unwrap();
        assert!(!older.layout.system_from_snapshot);
        v["layout"] = "2.0.x".into();
        let err = serde_json::from_value::<Profile>(v).unwrap_err().to_string();
        assert!(err.contains("unknown layout \"2.0.x\""), "{err}");
    }

    #[test]
    fn builtin_layouts_are_the_captures_choices() {
        let seed = Profile::load("seed").unwrap().layout;
        assert_eq!(seed.name, "seed");
        assert!(seed.dynamic_boundary && seed.system_context_in_prompt && seed.user_context_message);
        assert!(seed.skills_per_process && seed.todo_reminder && seed.rules_after_read);
        assert!(seed.attachments_into_tool_result && !seed.system_from_shape);
        let cc = Profile::load("cc-2.1.328").unwrap().layout;
        assert_eq!(cc.name, "cc-2.1.328");
        assert!(cc.system_from_shape && !cc.dynamic_boundary && !cc.system_context_in_prompt);
        assert!(cc.system_from_snapshot && !seed.system_from_snapshot);
        assert!(!cc.user_context_message && !cc.skills_per_process && !cc.todo_reminder && !cc.rules_after_read);
        assert!(!cc.attachments_into_tool_result && !cc.system_attachments_as_user);
        assert_eq!(cc.system_message_params, ["output_config"]);
    }
}
