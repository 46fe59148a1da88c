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
    /// Params copied into every `role: "system"` message when the system
    /// prompt comes from the session's shapes (2.1.328: `output_config`).
    pub system_message_params: Vec<String>,
    /// How many of the last messages get a cache breakpoint (1; 2.0.77: 2).
    #[serde(default = "one")]
    pub message_breakpoints: usize,
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

fn one() -> usize {
    1
}

impl Default for Layout {
    /// Every choice off, one message breakpoint.
    fn default() -> Self {
        Layout {
            name: String::new(),
            system_from_shape: false,
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
        assert!(!cc.user_context_message && !cc.skills_per_process && !cc.todo_reminder && !cc.rules_after_read);
        assert!(!cc.attachments_into_tool_result && !cc.system_attachments_as_user);
        assert_eq!(cc.system_message_params, ["output_config"]);
    }
}
