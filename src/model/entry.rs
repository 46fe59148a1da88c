//! Typed transcript entries (one per JSONL line).
//!
//! Every kind named in `../shared/docs/transcript-format.md` §4 is typed; the
//! fields that later stages need are pulled out, and the whole parsed line is
//! kept in [`Entry::raw`] so nothing is lost. A `type` nobody knows becomes
//! [`EntryKind::Unknown`] with the raw line bytes.

use super::content::{self, Content};
use crate::json::Json;
use bumpalo::Bump;

/// Fields shared by conversation entries (absent on metadata entries).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Envelope<'a> {
    pub uuid: Option<&'a str>,
    pub parent_uuid: Option<&'a str>,
    pub timestamp: Option<&'a str>,
    /// The members most lines of a file repeat, held once while they stay
    /// the same ([`type_entry_with`]'s `prev`): an entry is 88 bytes
    /// smaller than with them inline.
    pub shared: &'a EnvShared<'a>,
    pub is_sidechain: bool,
    pub is_meta: bool,
}

/// The envelope members that repeat from line to line.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct EnvShared<'a> {
    /// Only on `system/compact_boundary`: the pre-compaction leaf.
    pub logical_parent_uuid: Option<&'a str>,
    pub session_id: Option<&'a str>,
    pub cwd: Option<&'a str>,
    pub version: Option<&'a str>,
    pub git_branch: Option<&'a str>,
    pub agent_id: Option<&'a str>,
}

/// The shared members of a line that has none.
static NO_SHARED: EnvShared<'static> = EnvShared {
    logical_parent_uuid: None,
    session_id: None,
    cwd: None,
    version: None,
    git_branch: None,
    agent_id: None,
};

impl Default for &EnvShared<'_> {
    fn default() -> Self {
        &NO_SHARED
    }
}

/// Token usage of an assistant message (`message.usage`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage<'a> {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_creation_input_tokens: u64,
    pub cache_read_input_tokens: u64,
    /// `cache_creation.ephemeral_5m_input_tokens` (1.0.98+).
    pub cache_creation_5m: Option<u64>,
    /// `cache_creation.ephemeral_1h_input_tokens` (1.0.98+).
    pub cache_creation_1h: Option<u64>,
    pub service_tier: Option<&'a str>,
}

/// A user message (`message.role == "user"`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UserEntry<'a> {
    pub content: Content<'a>,
    /// The harness' structured copy of a tool outcome (dict, string or list).
    pub tool_use_result: Option<&'a Json<'a>>,
    pub is_compact_summary: bool,
    pub is_visible_in_transcript_only: bool,
    pub source_tool_assistant_uuid: Option<&'a str>,
    pub prompt_id: Option<&'a str>,
}

/// One line of an assistant message: usually exactly one content block; the
/// blocks of one API message share `message_id` (see `model::messages`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AssistantEntry<'a> {
    pub message_id: Option<&'a str>,
    pub request_id: Option<&'a str>,
    pub model: Option<&'a str>,
    pub content: Content<'a>,
    pub stop_reason: Option<&'a str>,
    /// In the arena: most entries are not assistant lines, and an entry is
    /// as large as its largest kind.
    pub usage: Option<&'a Usage<'a>>,
    pub is_api_error_message: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AttachmentEntry<'a> {
    /// `attachment.type` (`prompt_snapshot`, `skill_listing`, `date`, …).
    pub attachment_type: Option<&'a str>,
    pub attachment: &'a Json<'a>,
    /// `rendered`: what the client sends for it (2.1.270+), as written.
    pub rendered: Option<&'a Json<'a>>,
    /// `renderedRole`: `user` or `system`.
    pub rendered_role: Option<&'a str>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SystemEntry<'a> {
    /// `compact_boundary`, `local_command`, `api_error`, … (none before 1.0.56).
    pub subtype: Option<&'a str>,
    pub content: Option<&'a str>,
    pub level: Option<&'a str>,
    pub compact_metadata: Option<&'a Json<'a>>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ApiRequest<'a> {
    pub id: Option<&'a str>,
    /// The previous request this one extends.
    pub base: Option<&'a str>,
    /// Messages kept from `base`.
    pub keep: Option<u64>,
    /// SHA-256 hashes of the appended messages.
    pub tail: &'a [&'a str],
    pub cache_control: Option<&'a Json<'a>>,
    pub params: Option<&'a Json<'a>>,
    pub shape_hash: Option<&'a str>,
    pub request_digest: Option<&'a str>,
    pub query_source: Option<&'a str>,
}

/// What kind of line this is, with its typed fields.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum EntryKind<'a> {
    User(UserEntry<'a>),
    Assistant(AssistantEntry<'a>),
    Attachment(AttachmentEntry<'a>),
    System(SystemEntry<'a>),
    /// Hook / bash / agent progress (2.1.17 – 2.1.42).
    Progress {
        data_type: Option<&'a str>,
        tool_use_id: Option<&'a str>,
        parent_tool_use_id: Option<&'a str>,
    },
    /// A title for the conversation ending at `leaf_uuid` (often another file).
    Summary {
        summary: Option<&'a str>,
        leaf_uuid: Option<&'a str>,
    },
    FileHistorySnapshot {
        message_id: Option<&'a str>,
        is_snapshot_update: bool,
    },
    QueueOperation {
        operation: Option<&'a str>,
        content: Option<&'a Json<'a>>,
    },
    LastPrompt {
        last_prompt: Option<&'a str>,
        leaf_uuid: Option<&'a str>,
    },
    PermissionMode {
        permission_mode: Option<&'a str>,
    },
    ApiRequestShape {
        shape_hash: Option<&'a str>,
        shape: Option<&'a Json<'a>>,
    },
    ApiRequestBlob {
        hash: Option<&'a str>,
        message: Option<&'a Json<'a>>,
    },
    /// (In the arena: rare but large.)
    ApiRequest(&'a ApiRequest<'a>),
    CostState {
        total_cost_usd: Option<f64>,
        model_usage: Option<&'a Json<'a>>,
    },
    ToolsUsed {
        tools: &'a [&'a str],
    },
    Mode {
        mode: Option<&'a str>,
    },
    AtisLatch {
        atis: Option<&'a str>,
    },
    /// A known metadata kind without typed fields (titles, links, settings…).
    Metadata,
    /// A `type` ctxasm does not know; `raw_line` is the line as written.
    Unknown {
        raw_line: &'a [u8],
    },
}

/// One parsed line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Entry<'a> {
    /// 1-based line number in the file.
    pub line: u32,
    /// The `type` string.
    pub type_name: &'a str,
    pub env: Envelope<'a>,
    pub kind: EntryKind<'a>,
    /// The whole line as parsed.
    pub raw: &'a Json<'a>,
}

impl<'a> Entry<'a> {
    /// True for entries that take part in the conversation tree.
    pub fn is_conversation(&self) -> bool {
        self.env.uuid.is_some()
    }

    pub fn as_assistant(&self) -> Option<&AssistantEntry<'a>> {
        match &self.kind {
            EntryKind::Assistant(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_user(&self) -> Option<&UserEntry<'a>> {
        match &self.kind {
            EntryKind::User(u) => Some(u),
            _ => None,
        }
    }

    pub fn as_system(&self) -> Option<&SystemEntry<'a>> {
        match &self.kind {
            EntryKind::System(s) => Some(s),
            _ => None,
        }
    }

    /// A `system/compact_boundary` entry.
    pub fn is_compact_boundary(&self) -> bool {
        self.as_system().is_some_and(|s| s.subtype == Some("compact_boundary"))
    }
}

/// Metadata / conversation types that are known but carry no typed fields
/// here (transcript-format.md §4); they raise no `unknown_type` diagnostic.
const KNOWN_UNTYPED: &[&str] = &[
    "file-history-delta",
    "custom-title",
    "agent-name",
    "agent-color",
    "ai-title",
    "pr-link",
    "tag",
    "saved_hook_context",
    "agent-setting",
    "bridge-session",
    "worktree-state",
    "frame-link",
    "artifact-autoreact-ledger",
    "artifact-comment-monitor",
    "continued-in",
    "fork-context-ref",
    "content-replacement",
    "ended-by-model",
    "relocated",
    "history-suppression",
    "attribution-snapshot",
];

fn is_known_untyped(t: &str) -> bool {
    KNOWN_UNTYPED.contains(&t) || t.starts_with("marble-origami-")
}

fn usage<'a>(v: &'a Json<'a>) -> Usage<'a> {
    let n = |k: &str| v.get_u64(k).unwrap_or(0);
    let cc = v.get("cache_creation");
    Usage {
        input_tokens: n("input_tokens"),
        output_tokens: n("output_tokens"),
        cache_creation_input_tokens: n("cache_creation_input_tokens"),
        cache_read_input_tokens: n("cache_read_input_tokens"),
        cache_creation_5m: cc.and_then(|c| c.get_u64("ephemeral_5m_input_tokens")),
        cache_creation_1h: cc.and_then(|c| c.get_u64("ephemeral_1h_input_tokens")),
        service_tier: v.get_str("service_tier"),
    }
}

fn str_list<'a>(bump: &'a Bump, v: Option<&'a Json<'a>>) -> &'a [&'a str] {
    match v {
        Some(Json::Arr(items)) => {
            let strs: smallvec::SmallVec<[&'a str; 8]> = items.iter().filter_map(Json::as_str).collect();
            bump.alloc_slice_copy(&strs)
        }
        _ => &[],
    }
}

/// Type one parsed line. `raw_line` is the line as written (kept only for
/// unknown types). Returns `None` when the value is not an object with a
/// string `type`.
pub fn type_entry<'a>(bump: &'a Bump, line: u32, raw: &'a Json<'a>, raw_line: &[u8]) -> Option<Entry<'a>> {
    type_entry_with(bump, line, raw, raw_line, &[], None)
}

/// The members of a line that [`Entry`] types as they are (its
/// [`Envelope`], `type_name`, an assistant's `request_id`, and its
/// message's `id`, `model` and `stop_reason`), by path: a reader that needs
/// only the typed values of them can leave them out of the line's tree and
/// hand them to [`type_entry_with`].
pub const TYPED_MEMBERS: &[&[&str]] = &[
    &["uuid"],
    &["parentUuid"],
    &["logicalParentUuid"],
    &["sessionId"],
    &["timestamp"],
    &["cwd"],
    &["version"],
    &["gitBranch"],
    &["agentId"],
    &["isSidechain"],
    &["isMeta"],
    &["type"],
    &["requestId"],
    &["message", "id"],
    &["message", "model"],
    &["message", "stop_reason"],
];

/// [`type_entry`] of a line whose [`TYPED_MEMBERS`] (some or all) were
/// taken out of `raw` into `envelope` (in document order, by path): the
/// first of a path there or in `raw` counts, as [`Json::get`] reads it. `prev`:
/// the shared envelope members of the line before, reused when equal.
pub fn type_entry_with<'a>(
    bump: &'a Bump,
    line: u32,
    raw: &'a Json<'a>,
    raw_line: &[u8],
    envelope: &[(&[&str], Json<'a>)],
    prev: Option<&'a EnvShared<'a>>,
) -> Option<Entry<'a>> {
    let member = |path: &[&str]| -> Option<Json<'a>> {
        let taken = envelope.iter().find(|(p, _)| *p == path).map(|(_, v)| *v);
        taken.or_else(|| path.iter().try_fold(raw, |v, k| v.get(k)).copied())
    };
    let text = |path: &[&str]| member(path).and_then(|v| v.as_str());
    let flag = |k: &str| matches!(member(&[k]), Some(Json::Bool(true)));
    let type_name = text(&["type"])?;
    let shared = EnvShared {
        logical_parent_uuid: text(&["logicalParentUuid"]),
        session_id: text(&["sessionId"]),
        cwd: text(&["cwd"]),
        version: text(&["version"]),
        git_branch: text(&["gitBranch"]),
        agent_id: text(&["agentId"]),
    };
    let shared = match prev {
        Some(p) if *p == shared => p,
        _ if shared == NO_SHARED => &NO_SHARED,
        _ => bump.alloc(shared),
    };
    let env = Envelope {
        uuid: text(&["uuid"]),
        parent_uuid: text(&["parentUuid"]),
        timestamp: text(&["timestamp"]),
        shared,
        is_sidechain: flag("isSidechain"),
        is_meta: flag("isMeta"),
    };
    let s = |k: &str| raw.get_str(k);
    let kind = match type_name {
        "user" => {
            let msg = raw.get("message");
            EntryKind::User(UserEntry {
                content: content::content(bump, msg.and_then(|m| m.get("content"))),
                tool_use_result: raw.get("toolUseResult"),
                is_compact_summary: raw.get_bool("isCompactSummary").unwrap_or(false),
                is_visible_in_transcript_only: raw.get_bool("isVisibleInTranscriptOnly").unwrap_or(false),
                source_tool_assistant_uuid: s("sourceToolAssistantUUID"),
                prompt_id: s("promptId"),
            })
        }
        "assistant" => {
            let msg = raw.get("message");
            EntryKind::Assistant(AssistantEntry {
                message_id: text(&["message", "id"]),
                request_id: text(&["requestId"]),
                model: text(&["message", "model"]),
                content: content::content(bump, msg.and_then(|m| m.get("content"))),
                stop_reason: text(&["message", "stop_reason"]),
                usage: msg
                    .and_then(|m| m.get("usage"))
                    .filter(|u| u.as_object().is_some())
                    .map(|u| &*bump.alloc(usage(u))),
                is_api_error_message: raw.get_bool("isApiErrorMessage").unwrap_or(false),
            })
        }
        "attachment" => {
            let att = raw.get("attachment").unwrap_or(&crate::json::NULL);
            EntryKind::Attachment(AttachmentEntry {
                attachment_type: att.get_str("type"),
                attachment: att,
                rendered: raw.get("rendered"),
                rendered_role: s("renderedRole"),
            })
        }
        "system" => EntryKind::System(SystemEntry {
            subtype: s("subtype"),
            content: s("content"),
            level: s("level"),
            compact_metadata: raw.get("compactMetadata"),
        }),
        "progress" => {
            let data = raw.get("data");
            EntryKind::Progress {
                data_type: data.and_then(|d| d.get_str("type")),
                tool_use_id: s("toolUseID"),
                parent_tool_use_id: s("parentToolUseID"),
            }
        }
        "summary" => EntryKind::Summary { summary: s("summary"), leaf_uuid: s("leafUuid") },
        "file-history-snapshot" => EntryKind::FileHistorySnapshot {
            message_id: s("messageId"),
            is_snapshot_update: raw.get_bool("isSnapshotUpdate").unwrap_or(false),
        },
        "queue-operation" => EntryKind::QueueOperation { operation: s("operation"), content: raw.get("content") },
        "last-prompt" => EntryKind::LastPrompt { last_prompt: s("lastPrompt"), leaf_uuid: s("leafUuid") },
        "permission-mode" => EntryKind::PermissionMode { permission_mode: s("permissionMode") },
        "api-request-shape" => EntryKind::ApiRequestShape { shape_hash: s("shapeHash"), shape: raw.get("shape") },
        "api-request-blob" => EntryKind::ApiRequestBlob { hash: s("hash"), message: raw.get("message") },
        "api-request" => EntryKind::ApiRequest(bump.alloc(ApiRequest {
            id: s("id"),
            base: s("base"),
            keep: raw.get_u64("keep"),
            tail: str_list(bump, raw.get("tail")),
            cache_control: raw.get("cacheControl"),
            params: raw.get("params"),
            shape_hash: s("shapeHash"),
            request_digest: s("requestDigest"),
            query_source: s("querySource"),
        })),
        "cost-state" => EntryKind::CostState {
            total_cost_usd: raw.get("totalCostUSD").and_then(Json::as_f64),
            model_usage: raw.get("modelUsage"),
        },
        "tools-used" => EntryKind::ToolsUsed { tools: str_list(bump, raw.get("tools")) },
        "mode" => EntryKind::Mode { mode: s("mode") },
        "atis-latch" => EntryKind::AtisLatch { atis: s("atis") },
        t if is_known_untyped(t) => EntryKind::Metadata,
        _ => EntryKind::Unknown { raw_line: bump.alloc_slice_copy(raw_line) },
    };
    Some(Entry { line, type_name, env, kind, raw })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::LineParser;

    fn entry<'a>(bump: &'a Bump, line: &[u8]) -> Entry<'a> {
        let v = bump.alloc(LineParser::new().parse(bump, line).unwrap());
        type_entry(bump, 1, v, line).unwrap()
    }

    #[test]
    fn assistant_fields_and_usage() {
        let bump = Bump::new();
        let e = entry(&bump, br#"{"parentUuid":"p","isSidechain":true,"message":{"id":"msg_1","model":"claude-x","content":[{"type":"text","text":"ok"}],"stop_reason":null,"usage":{"input_tokens":3,"cache_creation_input_tokens":10,"cache_read_input_tokens":20,"cache_creation":{"ephemeral_5m_input_tokens":4,"ephemeral_1h_input_tokens":6},"output_tokens":5,"service_tier":"standard"}},"requestId":"req_1","type":"assistant","uuid":"u","timestamp":"2026-01-01T00:00:00.000Z","agentId":"a1"}"#);
        assert_eq!(e.type_name, "assistant");
        assert_eq!(e.env.uuid, Some("u"));
        assert_eq!(e.env.parent_uuid, Some("p"));
        assert!(e.env.is_sidechain);
        assert_eq!(e.env.shared.agent_id, Some("a1"));
        let a = e.as_assistant().unwrap();
        assert_eq!(a.message_id, Some("msg_1"));
        assert_eq!(a.request_id, Some("req_1"));
        assert_eq!(a.stop_reason, None);
        assert_eq!(
            a.usage.copied(),
            Some(Usage {
                input_tokens: 3,
                output_tokens: 5,
                cache_creation_input_tokens: 10,
                cache_read_input_tokens: 20,
                cache_creation_5m: Some(4),
                cache_creation_1h: Some(6),
                service_tier: Some("standard"),
            })
        );
    }

    #[test]
    fn records_and_metadata() {
        let bump = Bump::new();
        let e = entry(&bump, br#"{"type":"api-request","id":"r2","base":"r1","keep":2,"tail":["aa","bb"],"cacheControl":[],"params":{"model":"m"},"shapeHash":"h","requestDigest":"d","querySource":"sdk"}"#);
        match e.kind {
            EntryKind::ApiRequest(r) => {
                assert_eq!((r.id, r.base, r.keep), (Some("r2"), Some("r1"), Some(2)));
                assert_eq!(r.tail, ["aa", "bb"]);
                assert_eq!(r.params.and_then(|p| p.get_str("model")), Some("m"));
            }
            other => panic!("{other:?}"),
        }
        assert!(!e.is_conversation());
        let t = entry(&bump, br#"{"type":"tools-used","tools":["Read","Bash"],"sessionId":"s"}"#);
        assert_eq!(t.kind, EntryKind::ToolsUsed { tools: &["Read", "Bash"] });
        assert_eq!(entry(&bump, br#"{"type":"ai-title","aiTitle":"x"}"#).kind, EntryKind::Metadata);
        let line = br#"{"type":"from-the-future","x":[1]}"#;
        assert_eq!(entry(&bump, line).kind, EntryKind::Unknown { raw_line: line });
    }

    #[test]
    fn compact_boundary_and_attachment() {
        let bump = Bump::new();
        let b = entry(&bump, br#"{"parentUuid":null,"logicalParentUuid":"old","type":"system","subtype":"compact_boundary","content":"Conversation compacted","compactMetadata":{"trigger":"auto","preTokens":1},"uuid":"b"}"#);
        assert!(b.is_compact_boundary());
        assert_eq!(b.env.parent_uuid, None);
        assert_eq!(b.env.shared.logical_parent_uuid, Some("old"));
        let a = entry(&bump, br#"{"type":"attachment","attachment":{"type":"date","date":"2026-11-30"},"rendered":[{"content":"x"}],"renderedRole":"system","uuid":"u"}"#);
        match a.kind {
            EntryKind::Attachment(at) => {
                assert_eq!(at.attachment_type, Some("date"));
                assert_eq!(at.rendered_role, Some("system"));
                assert_eq!(at.attachment.get_str("date"), Some("2026-11-30"));
            }
            other => panic!("{other:?}"),
        }
        assert!(type_entry(&bump, 1, bump.alloc(Json::Arr(&[])), b"[]").is_none());
    }
}
