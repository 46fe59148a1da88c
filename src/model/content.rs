//! Message content: a string or a list of typed blocks.

use crate::json::Json;
use bumpalo::Bump;

/// `message.content`: Claude Code writes both forms, often in one file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Content<'a> {
    Text(&'a str),
    Blocks(&'a [Block<'a>]),
    /// Absent or of an unexpected JSON type (kept in the entry's raw value).
    Missing,
}

impl<'a> Content<'a> {
    /// The blocks, or an empty slice for string / missing content.
    pub fn blocks(&self) -> &'a [Block<'a>] {
        match *self {
            Content::Blocks(b) => b,
            _ => &[],
        }
    }
}

/// One content block with its raw JSON (for byte-exact re-serialization).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Block<'a> {
    pub raw: &'a Json<'a>,
    pub kind: BlockKind<'a>,
}

/// Where an image's or document's bytes come from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MediaSource<'a> {
    /// `base64`, `url`, `text`, `file`, …
    pub source_type: Option<&'a str>,
    pub media_type: Option<&'a str>,
    /// Length of the base64 `data` (or `url`) string, without decoding it.
    pub data_len: usize,
}

/// `tool_result.content`: a string or a list of blocks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ToolResultContent<'a> {
    Text(&'a str),
    Blocks(&'a [Block<'a>]),
    Missing,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BlockKind<'a> {
    Text {
        text: &'a str,
    },
    Image {
        source: MediaSource<'a>,
    },
    Document {
        source: MediaSource<'a>,
    },
    Thinking {
        thinking: &'a str,
        signature: Option<&'a str>,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: &'a Json<'a>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: ToolResultContent<'a>,
        is_error: Option<bool>,
    },
    /// `server_tool_use` (web search, web fetch, code execution, …).
    ServerToolUse {
        id: &'a str,
        name: &'a str,
        input: &'a Json<'a>,
    },
    /// A server tool's result block (`web_search_tool_result`, …): the type
    /// name ends in `_tool_result` and the block has a `tool_use_id`.
    ServerToolResult {
        block_type: &'a str,
        tool_use_id: &'a str,
        content: &'a Json<'a>,
    },
    /// `tool_reference` (ToolSearch results inside a tool_result).
    ToolReference {
        tool_name: &'a str,
    },
    /// Any other block; the raw value is in [`Block::raw`].
    Unknown {
        block_type: &'a str,
    },
}

fn media<'a>(v: &'a Json<'a>) -> MediaSource<'a> {
    let src = v.get("source");
    let data = src.and_then(|s| s.get_str("data").or_else(|| s.get_str("url")));
    MediaSource {
        source_type: src.and_then(|s| s.get_str("type")),
        media_type: src.and_then(|s| s.get_str("media_type")),
        data_len: data.map_or(0, str::len),
    }
}

/// Type one block.
pub fn block<'a>(bump: &'a Bump, raw: &'a Json<'a>) -> Block<'a> {
    let t = raw.get_str("type").unwrap_or("");
    let s = |k: &str| raw.get_str(k).unwrap_or("");
    let kind = match t {
        "text" => BlockKind::Text { text: s("text") },
        "image" => BlockKind::Image { source: media(raw) },
        "document" => BlockKind::Document { source: media(raw) },
        "thinking" => BlockKind::Thinking { thinking: s("thinking"), signature: raw.get_str("signature") },
        "redacted_thinking" => BlockKind::RedactedThinking { data: s("data") },
        "tool_use" => {
            BlockKind::ToolUse { id: s("id"), name: s("name"), input: raw.get("input").unwrap_or(&crate::json::NULL) }
        }
        "tool_result" => BlockKind::ToolResult {
            tool_use_id: s("tool_use_id"),
            content: match raw.get("content") {
                Some(Json::Str(text)) => ToolResultContent::Text(text),
                Some(Json::Arr(items)) => ToolResultContent::Blocks(blocks(bump, items)),
                _ => ToolResultContent::Missing,
            },
            is_error: raw.get_bool("is_error"),
        },
        "server_tool_use" => BlockKind::ServerToolUse {
            id: s("id"),
            name: s("name"),
            input: raw.get("input").unwrap_or(&crate::json::NULL),
        },
        "tool_reference" => BlockKind::ToolReference { tool_name: s("tool_name") },
        other if other.ends_with("_tool_result") && raw.get_str("tool_use_id").is_some() => {
            BlockKind::ServerToolResult {
                block_type: other,
                tool_use_id: s("tool_use_id"),
                content: raw.get("content").unwrap_or(&crate::json::NULL),
            }
        }
        other => BlockKind::Unknown { block_type: other },
    };
    Block { raw, kind }
}

/// Type a list of blocks into the arena.
pub fn blocks<'a>(bump: &'a Bump, items: &'a [Json<'a>]) -> &'a [Block<'a>] {
    bump.alloc_slice_fill_iter(items.iter().map(|raw| block(bump, raw)))
}

/// Type a `message.content` value.
pub fn content<'a>(bump: &'a Bump, v: Option<&'a Json<'a>>) -> Content<'a> {
    match v {
        Some(Json::Str(s)) => Content::Text(s),
        Some(Json::Arr(items)) => Content::Blocks(blocks(bump, items)),
        _ => Content::Missing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::LineParser;

    #[test]
    fn types_every_block_kind() {
        let bump = Bump::new();
        let line = br#"[{"type":"text","text":"hi"},
            {"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}},
            {"type":"document","source":{"type":"url","url":"https://x/y.pdf"}},
            {"type":"thinking","thinking":"","signature":"sig"},
            {"type":"redacted_thinking","data":"zz"},
            {"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"/a"}},
            {"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"ok"},{"type":"tool_reference","tool_name":"Bash"}],"is_error":true},
            {"type":"tool_result","tool_use_id":"toolu_2","content":"plain"},
            {"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}},
            {"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]},
            {"type":"future_block","x":1}]"#;
        let v = LineParser::new().parse(&bump, line).unwrap();
        let c = content(&bump, Some(bump.alloc(v)));
        let b = c.blocks();
        assert_eq!(b.len(), 11);
        assert_eq!(b[0].kind, BlockKind::Text { text: "hi" });
        assert!(matches!(
            b[1].kind,
            BlockKind::Image {
                source: MediaSource { source_type: Some("base64"), media_type: Some("image/png"), data_len: 4 }
            }
        ));
        assert!(matches!(
            b[2].kind,
            BlockKind::Document { source: MediaSource { source_type: Some("url"), data_len: 15, .. } }
        ));
        assert_eq!(b[3].kind, BlockKind::Thinking { thinking: "", signature: Some("sig") });
        assert_eq!(b[4].kind, BlockKind::RedactedThinking { data: "zz" });
        assert!(
            matches!(b[5].kind, BlockKind::ToolUse { id: "toolu_1", name: "Read", input } if input.get_str("file_path") == Some("/a"))
        );
        match b[6].kind {
            BlockKind::ToolResult {
                tool_use_id: "toolu_1",
                content: ToolResultContent::Blocks(inner),
                is_error: Some(true),
            } => {
                assert_eq!(inner[1].kind, BlockKind::ToolReference { tool_name: "Bash" });
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(matches!(
            b[7].kind,
            BlockKind::ToolResult { content: ToolResultContent::Text("plain"), is_error: None, .. }
        ));
        assert!(matches!(b[8].kind, BlockKind::ServerToolUse { name: "web_search", .. }));
        assert!(matches!(b[9].kind, BlockKind::ServerToolResult { block_type: "web_search_tool_result", .. }));
        assert_eq!(b[10].kind, BlockKind::Unknown { block_type: "future_block" });
        assert_eq!(b[10].raw.get_u64("x"), Some(1));
    }

    #[test]
    fn string_and_missing_content() {
        let bump = Bump::new();
        let s = bump.alloc(Json::Str("hello"));
        assert_eq!(content(&bump, Some(s)), Content::Text("hello"));
        assert_eq!(content(&bump, None), Content::Missing);
        assert_eq!(content(&bump, Some(bump.alloc(Json::U64(3)))).blocks().len(), 0);
    }
}
