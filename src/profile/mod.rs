//! Profiles: everything release-specific the system side of a request is
//! built from, as one serde JSON data file.
//!
//! A profile holds the billing-header rule, the CLI prefix variants, the
//! system prompt as static sections and templated dynamic sections, the
//! gitStatus / user-context / skills-listing templates, the tool list (JSON
//! kept verbatim, key order included), the request params in wire order,
//! the betas and a model-name table. Templates use `{{name}}` variables (see
//! [`template`]; the names are listed in [`DYNAMIC_VARS`], [`GIT_VARS`],
//! [`USER_CONTEXT_VARS`], [`SKILL_VARS`]).
//!
//! The system prompt text and tools of a release are never shipped: the two
//! built-in profiles ([`Profile::load`] `"seed"`, `"cc-2.1.328"`) carry
//! placeholders, and a usable profile is extracted from a capture
//! ([`crate::assemble::extract`])
//! (`wire.jsonl` plus the session's `env/`, or a 2.1.3xx transcript with
//! `api-request-shape` entries).
//!
//! Format (JSON object, members in this order):
//! ```text
//! name, layout {name, system_from_shape, dynamic_boundary, …: see [`Layout`]}, version, entrypoint,
//! extracted_from (path | null), notes,
//! billing {salt, cch (" cch=00000;" | null), suffix_text ("first_text" | "first_non_reminder"),
//!          header_block (default true)},
//! cli_prefix {default, sdk, sdk_with_append, sdk_with_custom (optional)},
//! prompt {static_sections [..], dynamic_sections [..templates..]},
//! git_status {text (template), clean, max_status_chars, truncated_note} | null,
//! user_context {head, claude_md, current_date, fixed_sections (default []), tail} | null,
//! skills {head, builtin, line, description_max, ellipsis, tail} | null,
//! tools [..verbatim..], params {max_tokens, thinking, context_management, output_config, ..},
//! betas [..], models [{id, name, knowledge_cutoff}],
//! system_cache {enabled, ttl}, proactive_agent_header, reminders {todo, todo_every},
//! metadata ("json_user_id" (default) | "legacy_user_id"), allowed_tools (template | null),
//! agents [{warmup, model, prefix, prompt, git_status, tools, betas}] (only when there are some),
//! memory {trim, strip_comments, rules (each default true)}, skills_note (optional),
//! model_params {model id: {param: value | null}} (only when there are some),
//! attachments [{kind, when {bool field: value}, role ("user" | "system"), text (template)}] (default []),
//! model_variants [{model, prompt {..}, attachments [..], tools [..] | null, params {..} | null}] (default [])
//! mcp {tool {..template..} | null, sorted, instructions {head, server, joiner, tail, before} | null, keeps_boundary,
//!      attachment {kind, role, text {head, server, joiner, tail} | null} (optional)} (optional)
//! ```

mod agent;
mod layout;
pub mod mcp;
pub mod shelf;
pub mod template;
mod traits;

pub use crate::time::month_year;
pub use agent::AgentProfile;
pub use layout::Layout;
pub use mcp::{McpInstructions, McpStyle};
pub use shelf::{Choice, Shelf, Shelved, Version};
pub use traits::{ATTACHMENTS_KEPT_FROM, ONE_MESSAGE_MARK_FROM, ReleaseTraits, release_traits};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Why a profile could not be loaded or extracted. Every variant names the
/// file (or the unknown name).
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// Neither a built-in name nor an existing file.
    #[error("unknown profile `{0}` (built-in: seed, cc-2.1.328; or a path to a profile JSON file)")]
    Unknown(String),
    /// A cached profile whose release is neither in its `version` member
    /// nor in its file name.
    #[error("{}: a cached profile needs a release number (`version` member or file name like 2.1.88.json)", .0.display())]
    NoVersion(PathBuf),
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid JSON of the expected shape.
    #[error("{}: invalid JSON: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The parse error.
        source: serde_json::Error,
    },
    /// The capture does not hold what extraction needs.
    #[error("{}: {message}", path.display())]
    Extract {
        /// The capture.
        path: PathBuf,
        /// What was missing or inconsistent.
        message: String,
    },
}

/// Which text of the first user message feeds the billing-header suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SuffixText {
    /// The first text block, reminder or not (2.1.88: always the skills
    /// reminder, so every session's suffix is `e09`; checked on all 14
    /// captures, `resume-multi-prompt` requests 2–3 start with the
    /// user-context reminder and give `516`).
    #[serde(rename = "first_text")]
    FirstText,
    /// The first text block that is not a `<system-reminder>` (2.1.328).
    #[serde(rename = "first_non_reminder")]
    FirstNonReminder,
}

impl SuffixText {
    /// The text that feeds the suffix, from the texts of the first user
    /// message in order (`""` when there is none).
    pub fn pick<'t>(self, texts: &[&'t str]) -> &'t str {
        match self {
            SuffixText::FirstText => texts.first().copied(),
            SuffixText::FirstNonReminder => texts.iter().copied().find(|t| !t.starts_with("<system-reminder>")),
        }
        .unwrap_or("")
    }
}

/// The billing header rule: `x-anthropic-billing-header:
/// cc_version=<version>.<3 hex>; cc_entrypoint=<entrypoint>;<cch>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Billing {
    /// Salt of the 3-hex suffix (see `assemble::wire::billing_suffix`).
    pub salt: String,
    /// What follows `cc_entrypoint=…;` verbatim (2.1.88: ` cch=00000;`;
    /// 2.1.328: nothing).
    pub cch: Option<String>,
    /// Which text feeds the suffix.
    pub suffix_text: SuffixText,
    /// The header is sent as the first system block (every 2.1.x capture);
    /// `false`: no billing block at all (2.0.77).
    #[serde(default = "default_true")]
    pub header_block: bool,
    /// The native client's attestation (2.1.150): the body is written with
    /// ` cch=00000;` and the zeros then replaced by the low 20 bits of
    /// xxHash64 of those bytes with this seed (16 hex digits), as 5 hex.
    /// `None`: `cch` is sent as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cch_seed: Option<String>,
    /// What a subagent's request adds after the header's `cch` part
    /// (2.1.328: ` cc_is_subagent=true;`; 2.1.88: nothing, `None`), learned
    /// from the `subagent` probe's agent request
    /// (`assemble::extract::learn_subagent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent: Option<String>,
}

fn default_true() -> bool {
    true
}

/// The form of `metadata.user_id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum MetadataForm {
    /// The JSON text `{"device_id":…,"account_uuid":…,"session_id":…}`
    /// (2.1.x).
    #[default]
    #[serde(rename = "json_user_id")]
    JsonUserId,
    /// The string `user_<device>_account_<uuid>_session_<uuid>` (1.0.x,
    /// 2.0.x).
    #[serde(rename = "legacy_user_id")]
    LegacyUserId,
}

/// The three CLI prefixes of `getCLISyspromptPrefix` (seeds/001), each
/// seen in the captures: `default` (interactive), `sdk` (non-interactive,
/// every 2.1.88 scenario but one), `sdk_with_append` (non-interactive with
/// `--append-system-prompt`, scenario `append-system-prompt`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CliPrefixes {
    /// Interactive sessions.
    pub default: String,
    /// Non-interactive (`-p`, SDK) sessions.
    pub sdk: String,
    /// Non-interactive sessions with an appended system prompt.
    pub sdk_with_append: String,
    /// Non-interactive sessions with a custom system prompt, when not
    /// `sdk` (1.0.128: the `sdk_with_append` text of later releases).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sdk_with_custom: Option<String>,
}

/// The default system prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct PromptTemplate {
    /// Sections before the dynamic boundary, verbatim (not rendered).
    pub static_sections: Vec<String>,
    /// Sections after it, rendered with [`DYNAMIC_VARS`].
    pub dynamic_sections: Vec<String>,
}

/// The `gitStatus` value of `getSystemContext` (rendered with [`GIT_VARS`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitStatusTemplate {
    /// The value template (without the `gitStatus: ` key).
    pub text: String,
    /// The status shown when `git status --short` prints nothing
    /// (`(clean)`, every 2.1.88 capture).
    pub clean: String,
    /// Longer statuses are cut to this many characters (UTF-16 units)…
    pub max_status_chars: usize,
    /// …and this note appended (Claude Code's `getGitStatus`; no capture has
    /// a status that long).
    pub truncated_note: String,
}

/// The `prependUserContext` reminder: `head` + the present sections joined
/// by `\n` (claudeMd, currentDate, then the fixed ones) + `tail`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserContextTemplate {
    /// Up to the first section.
    pub head: String,
    /// The claudeMd section (variable `claude_md`).
    pub claude_md: String,
    /// The currentDate section (variable `date`).
    pub current_date: String,
    /// Sections sent in every session, verbatim, after the others (1.0.x:
    /// `# important-instruction-reminders`).
    #[serde(default)]
    pub fixed_sections: Vec<String>,
    /// After the last section.
    pub tail: String,
}

/// The skills-listing reminder: `head` + lines joined by `\n` + `tail`; the
/// lines are the built-in ones, then one `line` per skill found on disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillsTemplate {
    /// Up to the first line.
    pub head: String,
    /// The built-in skills' lines, verbatim (joined by `\n`).
    pub builtin: String,
    /// One skill (variables `name`, `description`).
    pub line: String,
    /// Descriptions longer than this (characters) are cut…
    pub description_max: usize,
    /// …to `description_max - 1` characters and this appended.
    pub ellipsis: String,
    /// After the last line.
    pub tail: String,
}

/// One model of the model-name table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// API model id.
    pub id: String,
    /// Marketing name (`Sonnet 4.6`).
    pub name: String,
    /// `August 2025`; `None` drops the cutoff line.
    pub knowledge_cutoff: Option<String>,
}

/// Cache control of the system blocks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemCache {
    /// Whether system blocks carry `cache_control` at all.
    pub enabled: bool,
    /// `ttl` member (`1h`), when set.
    pub ttl: Option<String>,
}

impl Default for SystemCache {
    fn default() -> Self {
        SystemCache { enabled: true, ttl: None }
    }
}

fn default_agent_header() -> String {
    DEFAULT_PROACTIVE_AGENT_HEADER.to_string()
}

/// Header put before an agent's prompt when it is appended to the default
/// one (proactive mode; `buildEffectiveSystemPrompt` of 2.1.88, in no
/// capture).
pub const DEFAULT_PROACTIVE_AGENT_HEADER: &str = "\n# Custom Agent Instructions\n";

/// Variables of the dynamic sections.
pub const DYNAMIC_VARS: &[&str] = &[
    "cwd",
    "home",
    "project_slug",
    "is_git",
    "platform",
    "shell",
    "os_version",
    "model_name",
    "model_id",
    "knowledge_cutoff",
    "date",
    "allowed_tools",
    "is_git_yes_no",
    "skills_note",
];
/// Variables of the tool descriptions: `month_year` is the session date's
/// month, `November 2026` (WebSearch: "The current month is …"); `skills`
/// the session's skills, one `- name: description` line each (2.0.77's
/// Skill tool: "Available skills:"); `model_name` the model's name (Bash's
/// `Co-Authored-By: Claude Sonnet 4.6` in 2.1.88); `date` the session's
/// date, `2026-12-01` (2.0.77's WebSearch: "Today's date is …").
pub const TOOL_VARS: &[&str] = &["month_year", "skills", "model_name", "date"];

/// Variables of the params (`{{cwd}}`, `{{home}}`: 2.1.28x `safeguards`
/// names the session's directories).
pub const PARAM_VARS: &[&str] = &["cwd", "home"];

/// Variables of the gitStatus template.
pub const GIT_VARS: &[&str] = &["branch", "main_branch", "status", "recent_commits", "git_user"];
/// Variables of the user-context template.
pub const USER_CONTEXT_VARS: &[&str] = &["claude_md", "date"];
/// Variables of a skill line.
pub const SKILL_VARS: &[&str] = &["name", "description"];

/// A release profile (see the module docs for the JSON format).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// Profile name.
    pub name: String,
    /// How the release lays a request out ([`Layout`]).
    #[serde(deserialize_with = "layout::deserialize", serialize_with = "layout::serialize")]
    pub layout: Layout,
    /// CLI version (`2.1.88`), as in the billing header.
    pub version: String,
    /// `cc_entrypoint` of the billing header (`sdk-cli` in every capture).
    pub entrypoint: String,
    /// The capture it was extracted from; `None` for built-in profiles
    /// (placeholder prompt text, no tools).
    #[serde(default)]
    pub extracted_from: Option<String>,
    /// Free text: where the values come from.
    #[serde(default)]
    pub notes: String,
    /// Billing header rule.
    pub billing: Billing,
    /// CLI prefixes.
    pub cli_prefix: CliPrefixes,
    /// Default system prompt.
    pub prompt: PromptTemplate,
    /// gitStatus template (`None`: no gitStatus section).
    #[serde(default)]
    pub git_status: Option<GitStatusTemplate>,
    /// User-context reminder template.
    #[serde(default)]
    pub user_context: Option<UserContextTemplate>,
    /// Skills-listing reminder template.
    #[serde(default)]
    pub skills: Option<SkillsTemplate>,
    /// The tool list, verbatim but for `{{month_year}}` ([`TOOL_VARS`]):
    /// the 2.1.88 WebSearch description names the current month.
    #[serde(default)]
    pub tools: Vec<Value>,
    /// Body params after `metadata`, in wire order (`max_tokens`,
    /// `thinking`, `context_management`, `output_config`).
    #[serde(default)]
    pub params: Map<String, Value>,
    /// `anthropic-beta` header values.
    #[serde(default)]
    pub betas: Vec<String>,
    /// Model-name table.
    #[serde(default)]
    pub models: Vec<ModelInfo>,
    /// Cache control of the system blocks.
    #[serde(default)]
    pub system_cache: SystemCache,
    /// See [`DEFAULT_PROACTIVE_AGENT_HEADER`].
    #[serde(default = "default_agent_header")]
    pub proactive_agent_header: String,
    /// Periodic reminders the client adds without writing them to the
    /// transcript (seed layout).
    #[serde(default)]
    pub reminders: Reminders,
    /// The form of `metadata.user_id`.
    #[serde(default)]
    pub metadata: MetadataForm,
    /// Params a model sends otherwise, by model id: `{param: value}`, `null`
    /// for a param it does not send (learned from captures run with other
    /// `--model`s).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub model_params: Map<String, Value>,
    /// How the release renders the attachment kinds its transcripts write
    /// without `rendered` (before 2.1.270), learned from a capture.
    #[serde(default)]
    pub attachments: Vec<AttachmentTemplate>,
    /// Models the release sends another prompt (2.1.198 and 2.1.250: Sonnet
    /// 5 gets a prompt of its own, and 2.1.250 keeps the reminder wrappers
    /// in its system turns), each learned from a capture run with it.
    #[serde(default)]
    pub model_variants: Vec<ModelVariant>,
    /// The prompt's line naming the tools allowed without approval, as the
    /// `{{allowed_tools}}` dynamic variable renders it when the session
    /// allowed some (variable `tools`, the names joined by `, `; 1.0.128:
    /// `\nYou can use the following tools without requiring user approval:
    /// {{tools}}\n`); the variable is empty otherwise.
    #[serde(default)]
    pub allowed_tools: Option<String>,
    /// The agents the release warms up, in the capture's order
    /// ([`AgentProfile`]; 2.0.x).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentProfile>,
    /// How the claudeMd text is made from the memory files.
    #[serde(default)]
    pub memory: MemoryStyle,
    /// Text the prompt holds only when the session has skills on disk, as
    /// the `{{skills_note}}` dynamic variable (2.0.77: the `/<skill-name>`
    /// line); found by comparing a capture with skills to one without.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills_note: Option<String>,
    /// The tool list a session run with `--system-prompt` gets, when it is
    /// not [`Profile::tools`] (2.1.250: the Agent tool's "Reach for this
    /// when…" paragraph); learned from a capture run so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_prompt_tools: Option<Vec<Value>>,
    /// How the release asks for a compaction (`/compact`), learned from a
    /// capture that compacted; `None` when none was captured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<Compaction>,
    /// How the release sends a session's MCP servers ([`McpStyle`]),
    /// learned from a capture run with `--mcp-config` (the `mcp` probe);
    /// `None`: no such capture was seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<McpStyle>,
    /// Tool names a transcript's `tool_use` blocks hold that the release
    /// sends under another name, `{written: sent}` (2.1.88 and 2.1.3xx
    /// write a `Task` call as the model made it and send it as `Agent`);
    /// learned from a capture whose transcript and wire name one call
    /// differently.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub tool_aliases: std::collections::BTreeMap<String, String>,
}

/// The compaction request: the conversation so far, then this instruction
/// as a plain string user message (2.1.88 writes it into the
/// `agent-acompact-*` file; 2.1.3xx writes it nowhere, so replay needs it
/// from here).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compaction {
    pub instruction: String,
    /// Texts the compaction request leaves out of the rendered system
    /// prompt and tools, as `layout.resumed_drops` are for a resumed
    /// process (2.1.150: the model line's ` (1M context)` and `[1m]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drops: Vec<String>,
    /// Params the compaction request sends with another value than the
    /// main chain's (2.1.150: `max_tokens` 20000).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub params: Map<String, Value>,
    /// A compaction sent as a request of its own rather than as the main
    /// chain's next turn (1.0.128 – 2.1.50): the history without the
    /// reminders, the instruction as a text block, breakpoints over both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own: Option<OwnCompaction>,
}

/// The system side and params of a compaction sent as its own request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnCompaction {
    /// Its system blocks' texts after the CLI prefix, each marked as the
    /// profile's system blocks are.
    pub system: Vec<String>,
    /// The names of the profile tools it sends, in order.
    pub tools: Vec<String>,
    /// Its params, in wire order (replacing the main chain's).
    pub params: Map<String, Value>,
}

/// What one model of a release gets instead of the profile's prompt and
/// attachment renderings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelVariant {
    /// The API model id.
    pub model: String,
    /// Its default system prompt.
    pub prompt: PromptTemplate,
    /// Its attachment renderings, tried before the profile's.
    #[serde(default)]
    pub attachments: Vec<AttachmentTemplate>,
    /// Its tool list, when it is not the profile's (the Agent tool's
    /// description differs by model).
    #[serde(default)]
    pub tools: Option<Vec<Value>>,
    /// Its body params, when they are not the profile's (2.1.198 Haiku
    /// 4.5: `max_tokens` 32000, `thinking` enabled with a budget, no
    /// `output_config`).
    #[serde(default)]
    pub params: Option<Map<String, Value>>,
    /// For sessions that chose the model with `--model` (as the
    /// environment's argv says): 2.1.150 – 2.1.250 run the default model
    /// with a 1M context window (` (1M context)`, `[1m]`, the `context-1m`
    /// beta) and `--model opus`, the same model, without.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub explicit: bool,
    /// Its `anthropic-beta` values, when they are not the profile's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub betas: Option<Vec<String>>,
}

/// The text one attachment kind sends, for attachments written without
/// `rendered`: `text` is a template whose variables are the attachment's
/// own fields (a string; a list of strings joined by `\n`; `a.b` for a
/// string inside an object member), learned by `profile extract` from the
/// capture's requests and the transcripts beside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachmentTemplate {
    /// `attachment.type` (`agent_listing_delta`, `skill_listing`, …).
    pub kind: String,
    /// The attachment's boolean fields as captured (`showConcurrencyNote`):
    /// the template is for attachments with these values (another value
    /// may send other text).
    #[serde(default)]
    pub when: std::collections::BTreeMap<String, bool>,
    /// Who it speaks as: `user` (a `<system-reminder>` text block, `text`
    /// whole), `system` (a `role: "system"` turn; `text` without the
    /// reminder wrapper, joined to its neighbours by `\n\n`) or
    /// `system-reminder` (a system turn whose texts keep their wrapper:
    /// 2.1.275 Sonnet 5; a release's model wraps all or none).
    pub role: String,
    /// The template. Empty in an entry learned from attachments written
    /// with `rendered` but without `renderedRole` (2.1.27x): it gives their
    /// kind's role only.
    pub text: String,
}

/// How a release renders the memory files into the claudeMd text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryStyle {
    /// Each file's content trimmed (2.1.x); `false`: as written, its final
    /// newline kept (1.0.128, 2.0.77).
    #[serde(default = "default_true")]
    pub trim: bool,
    /// HTML comments stripped (2.1.x); `false`: sent (1.0.128, 2.0.77).
    #[serde(default = "default_true")]
    pub strip_comments: bool,
    /// `.claude/rules/*.md` files are memory files (2.0.77, 2.1.x);
    /// `false`: not read (1.0.128).
    #[serde(default = "default_true")]
    pub rules: bool,
}

impl Default for MemoryStyle {
    fn default() -> Self {
        MemoryStyle { trim: true, strip_comments: true, rules: true }
    }
}

impl MemoryStyle {
    /// Every style but the default, those that change fewer choices first
    /// (what a capture is checked against, the least assuming first).
    pub fn variants() -> Vec<MemoryStyle> {
        let mut v: Vec<MemoryStyle> =
            (1u8..8).map(|b| MemoryStyle { trim: b & 1 == 0, strip_comments: b & 2 == 0, rules: b & 4 == 0 }).collect();
        v.sort_by_key(|s| u8::from(!s.trim) + u8::from(!s.strip_comments) + u8::from(!s.rules));
        v
    }
}

/// Periodic reminders of the seed layout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reminders {
    /// The todo reminder's text (`None`: not sent).
    #[serde(default)]
    pub todo: Option<String>,
    /// Assistant lines without a `TodoWrite` call before it is sent (seeds:
    /// `TODO_REMINDER_CONFIG.TURNS_SINCE_WRITE`).
    #[serde(default = "default_todo_every")]
    pub todo_every: usize,
    /// The text a reminder attachment written with an empty list sends, by
    /// its kind (2.1.150 `task_reminder`, 2.1.100 `todo_reminder`), learned
    /// from a capture that shows one.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub attachment_texts: std::collections::BTreeMap<String, String>,
    /// How a background-task notification (a user line of `origin.kind:
    /// "task-notification"`) is sent: its raw text in place of
    /// `{notification}` (2.1.328: inside a `<system-reminder>` that says it
    /// is no user input; `None`: as written, 2.1.88), learned from a
    /// capture that shows one (`assemble::pipeline::notifications`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_notification: Option<String>,
}

fn default_todo_every() -> usize {
    10
}

impl Default for Reminders {
    fn default() -> Self {
        Reminders {
            todo: None,
            todo_every: default_todo_every(),
            attachment_texts: Default::default(),
            task_notification: None,
        }
    }
}

/// Names of the built-in profiles.
pub const BUILTIN: &[&str] = &["seed", "cc-2.1.328"];

/// The JSON text of built-in profile `name`.
fn builtin_text(name: &str) -> Option<&'static str> {
    match name {
        "seed" => Some(include_str!("seed.json")),
        "cc-2.1.328" => Some(include_str!("cc-2.1.328.json")),
        _ => None,
    }
}

impl Profile {
    /// A built-in profile (`seed`, `cc-2.1.328`) or a profile JSON file.
    pub fn load(name_or_path: &str) -> Result<Profile, ProfileError> {
        if let Some(text) = builtin_text(name_or_path) {
            let path = PathBuf::from(format!("<built-in profile {name_or_path}>"));
            return serde_json::from_str(text).map_err(|source| ProfileError::Json { path, source });
        }
        let path = Path::new(name_or_path);
        if !path.exists() {
            return Err(ProfileError::Unknown(name_or_path.to_string()));
        }
        Self::from_file(path)
    }

    /// The built-in `cc-2.1.328` profile: the layout the 2.1.3xx captures
    /// show, used when no profile is given (parsed once per process: the
    /// assembler asks for it per session).
    #[allow(clippy::expect_used)] // compiled-in data, parsed by a unit test
    pub fn builtin_cc_2_1_328() -> &'static Profile {
        static BUILTIN: std::sync::OnceLock<Profile> = std::sync::OnceLock::new();
        BUILTIN.get_or_init(|| Profile::load("cc-2.1.328").expect("the built-in cc-2.1.328 profile parses"))
    }

    /// Read a profile JSON file.
    pub fn from_file(path: &Path) -> Result<Profile, ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Io { path: path.into(), source })?;
        serde_json::from_str(&text).map_err(|source| ProfileError::Json { path: path.into(), source })
    }

    /// Pretty JSON, members in the documented order.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Write [`Profile::to_json`] to `path`.
    pub fn save(&self, path: &Path) -> Result<(), ProfileError> {
        std::fs::write(path, self.to_json() + "\n").map_err(|source| ProfileError::Io { path: path.into(), source })
    }

    /// Whether this profile carries real prompt text (was extracted), not
    /// placeholders.
    pub fn has_prompt_text(&self) -> bool {
        self.extracted_from.is_some()
    }

    /// This profile as model `model_id` gets it: its variant's prompt and
    /// attachment renderings when it has one (a copy), else itself.
    pub fn for_model(&self, model_id: &str) -> std::borrow::Cow<'_, Profile> {
        self.for_session_model(model_id, false)
    }

    /// [`Profile::for_model`] for a session that chose its model with
    /// `--model` (`explicit`) or not: the variant made for that case.
    pub fn for_session_model(&self, model_id: &str, explicit: bool) -> std::borrow::Cow<'_, Profile> {
        // A variant of another model was learned from a `--model` capture
        // too: it serves an explicit choice when none is made for one.
        let find = |e: bool| self.model_variants.iter().find(|v| v.model == model_id && v.explicit == e);
        let Some(v) = (if explicit { find(true).or_else(|| find(false)) } else { find(false) }) else {
            return std::borrow::Cow::Borrowed(self);
        };
        let mut p = self.clone();
        p.prompt = v.prompt.clone();
        if let Some(t) = &v.tools {
            p.tools = t.clone();
        }
        if let Some(params) = &v.params {
            p.params = params.clone();
        }
        if let Some(betas) = &v.betas {
            p.betas = betas.clone();
        }
        p.attachments = v.attachments.iter().chain(self.attachments.iter()).cloned().collect();
        std::borrow::Cow::Owned(p)
    }

    /// How this release renders the memory files: [`Profile::memory`] with
    /// the layout's `memory_untrimmed` / `memory_comments` (the same facts,
    /// found on other releases) applied.
    pub fn memory_style(&self) -> MemoryStyle {
        let (m, l) = (&self.memory, &self.layout);
        MemoryStyle {
            trim: m.trim && !l.memory_untrimmed,
            strip_comments: m.strip_comments && !l.memory_comments,
            rules: m.rules,
        }
    }

    /// The model-table entry of `model_id`.
    pub fn model(&self, model_id: &str) -> Option<&ModelInfo> {
        self.models.iter().find(|m| m.id == model_id)
    }

    /// The tools for a session on `date` (`YYYY-MM-DD`) of the first model
    /// of the table: see [`Profile::render_tools_for`].
    pub fn render_tools(&self, date: Option<&str>) -> Vec<Value> {
        self.render_tools_for(date, self.models.first().map_or("", |m| m.name.as_str()))
    }

    /// The tools for a session on `date` (`YYYY-MM-DD`) with the model
    /// named `model_name` and no skills: see [`render_tool_list`].
    pub fn render_tools_for(&self, date: Option<&str>, model_name: &str) -> Vec<Value> {
        render_tool_list(&self.tools, date, "", model_name)
    }

    /// The params of a request of `model_id`: [`Profile::params`] with that
    /// model's [`Profile::model_params`], in wire order (a param only the
    /// model sends goes last).
    pub fn params_for(&self, model_id: &str) -> Vec<(String, Value)> {
        let mut params: Vec<(String, Value)> = self.params.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let Some(Value::Object(diff)) = self.model_params.get(model_id) else { return params };
        for (k, v) in diff {
            match (params.iter().position(|(p, _)| p == k), v) {
                (Some(i), Value::Null) => {
                    params.remove(i);
                }
                (Some(i), v) => params[i].1 = v.clone(),
                (None, Value::Null) => {}
                (None, v) => params.push((k.clone(), v.clone())),
            }
        }
        params
    }

    /// Variable bindings of the dynamic sections for `env` and `model_id`.
    /// A model missing from the table is named by its id and has no cutoff
    /// line.
    pub fn dynamic_vars<'a>(&'a self, env: &'a crate::env::SessionEnv, model_id: &'a str) -> DynamicVars<'a> {
        let model = self.model(model_id);
        let tools = env.allowed_tools();
        let allowed = match &self.allowed_tools {
            Some(t) if !tools.is_empty() => template::render(t, &[("tools", Some(&tools.join(", ")))]),
            _ => String::new(),
        };
        let has_skills = |d: &Option<std::path::PathBuf>, sub: &str| {
            d.as_ref().is_some_and(|d| !crate::env::skills::skills_in(&d.join(sub)).is_empty())
        };
        let note = match &self.skills_note {
            Some(n) if has_skills(&env.home_claude_dir, "") || has_skills(&env.project_dir, ".claude") => n.clone(),
            _ => String::new(),
        };
        DynamicVars {
            env,
            allowed,
            note,
            slug: env.project_slug(),
            model_id,
            model_name: model.map_or(model_id, |m| m.name.as_str()),
            cutoff: model.and_then(|m| m.knowledge_cutoff.as_deref()),
        }
    }
}

/// Values of [`DYNAMIC_VARS`] for one session and model.
pub struct DynamicVars<'a> {
    env: &'a crate::env::SessionEnv,
    /// The rendered allowed-tools line, or empty.
    allowed: String,
    /// The skills note, or empty.
    note: String,
    slug: String,
    model_id: &'a str,
    model_name: &'a str,
    cutoff: Option<&'a str>,
}

impl DynamicVars<'_> {
    /// Render a dynamic-section template.
    pub fn render(&self, template: &str) -> String {
        let env = self.env;
        let vars: [template::Var<'_>; 14] = [
            ("cwd", Some(&env.cwd)),
            ("home", Some(&env.home)),
            ("project_slug", Some(&self.slug)),
            ("is_git", Some(if env.is_git { "true" } else { "false" })),
            ("platform", Some(&env.platform)),
            ("shell", Some(env.shell.as_deref().unwrap_or("unknown"))),
            ("os_version", Some(&env.os_version)),
            ("model_name", Some(self.model_name)),
            ("model_id", Some(self.model_id)),
            ("knowledge_cutoff", self.cutoff),
            ("date", env.date.as_deref()),
            ("allowed_tools", Some(&self.allowed)),
            ("is_git_yes_no", Some(if env.is_git { "Yes" } else { "No" })),
            ("skills_note", Some(&self.note)),
        ];
        template::render(template, &vars)
    }
}

/// `tools` with [`TOOL_VARS`] rendered: the month of `date`, the `skills`
/// lines (JSON-escaped into the text they sit in), the model's name; a tool
/// without a variable is cloned as it is.
pub fn render_tool_list(tools: &[Value], date: Option<&str>, skills: &str, model_name: &str) -> Vec<Value> {
    let my = date.and_then(month_year);
    let escaped = serde_json::to_string(skills).unwrap_or_default();
    let skills = escaped.get(1..escaped.len().saturating_sub(1)).unwrap_or("");
    let escaped_name = serde_json::to_string(model_name).unwrap_or_default();
    let name = escaped_name.get(1..escaped_name.len().saturating_sub(1)).unwrap_or("");
    tools
        .iter()
        .map(|t| {
            let text = t.to_string();
            if !TOOL_VARS.iter().any(|v| text.contains(&format!("{{{{{v}}}}}"))) {
                return t.clone();
            }
            let day = date.and_then(|d| d.get(..10));
            let vars =
                [("month_year", my.as_deref()), ("skills", Some(skills)), ("model_name", Some(name)), ("date", day)];
            let rendered = template::render(&text, &vars);
            serde_json::from_str(&rendered).unwrap_or_else(|_| t.clone())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_profiles_load_and_ship_no_prompt_text() {
        for name in BUILTIN {
            let p = Profile::load(name).unwrap();
            assert_eq!(&p.name, name);
            assert!(!p.has_prompt_text());
            assert!(p.tools.is_empty());
            assert!(p.user_context.is_none() && p.skills.is_none() && p.git_status.is_none());
            let keys: Vec<&str> = p.params.keys().map(String::as_str).collect();
            assert_eq!(keys, ["max_tokens", "thinking", "context_management", "output_config"]);
            // Round trip through the JSON format.
            let back: Profile = serde_json::from_str(&p.to_json()).unwrap();
            assert_eq!(back, p);
        }
        assert_eq!(Profile::load("seed").unwrap().layout.name, "seed");
        assert_eq!(Profile::load("cc-2.1.328").unwrap().layout.name, "cc-2.1.328");
        assert_eq!(Profile::builtin_cc_2_1_328(), &Profile::load("cc-2.1.328").unwrap());
    }

    #[test]
    fn load_errors_name_the_file() {
        assert!(matches!(Profile::load("no-such-profile"), Err(ProfileError::Unknown(_))));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.json");
        std::fs::write(&path, "{\"name\": 1}").unwrap();
        let err = Profile::load(path.to_str().unwrap()).unwrap_err();
        assert!(err.to_string().contains("p.json"), "{err}");
    }

    #[test]
    fn month_year_and_tool_rendering() {
        assert_eq!(month_year("2026-11-30").as_deref(), Some("November 2026"));
        assert_eq!(month_year("2026-12-01T00:00:00Z").as_deref(), Some("December 2026"));
        assert_eq!(month_year("2026-13-01"), None);
        assert_eq!(month_year("20x6-01-01"), None);
        let mut p = Profile::load("seed").unwrap();
        p.tools = vec![
            serde_json::json!({"name": "WebSearch", "description": "The current month is {{month_year}}. Use it."}),
            serde_json::json!({"name": "Bash", "description": "Run {{cmd}}"}),
        ];
        let t = p.render_tools(Some("2026-12-01"));
        assert_eq!(t[0]["description"], "The current month is December 2026. Use it.");
        assert_eq!(t[1], p.tools[1]);
    }

    #[test]
    fn suffix_text_pick() {
        let texts = ["<system-reminder>\nx", "hello"];
        assert_eq!(SuffixText::FirstText.pick(&texts), "<system-reminder>\nx");
        assert_eq!(SuffixText::FirstNonReminder.pick(&texts), "hello");
        assert_eq!(SuffixText::FirstNonReminder.pick(&[]), "");
    }

    #[test]
    fn params_for_applies_a_models_own_params_in_wire_order() {
        let mut p = Profile::builtin_cc_2_1_328().clone();
        p.params = serde_json::json!({"max_tokens": 32000, "thinking": {"type": "adaptive"}, "output_config": {"effort": "medium"}})
            .as_object()
            .unwrap()
            .clone();
        p.model_params = serde_json::json!({
            "h": {"thinking": {"budget_tokens": 31999, "type": "enabled"}, "output_config": null, "extra": 1}
        })
        .as_object()
        .unwrap()
        .clone();
        let keys = |v: &[(String, Value)]| v.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>();
        assert_eq!(
            keys(&p.params_for("h")),
            ["max_tokens=32000", r#"thinking={"budget_tokens":31999,"type":"enabled"}"#, "extra=1"]
        );
        assert_eq!(p.params_for("other").len(), 3);
        // Old profile files (no member) still load; an empty table is not written.
        assert!(!Profile::builtin_cc_2_1_328().to_json().contains("model_params"));
    }
}
