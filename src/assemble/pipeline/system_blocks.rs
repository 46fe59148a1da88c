//! The wire `system` array (`buildSystemPromptBlocks` /
//! `splitSysPromptPrefix`, seeds/001 "第 4 层") and the billing header.
//!
//! With the dynamic boundary marker among the sections: at most four text
//! blocks — billing header (no cache control), CLI prefix (none), the
//! static sections joined by `\n\n` (`{type: ephemeral, scope: global}`),
//! the dynamic ones joined by `\n\n` (none). Without it (custom prompt,
//! 2.1.328): header (none), prefix (`{type: ephemeral}`, scope `org`, which
//! is not sent), the rest joined by `\n\n` (`{type: ephemeral}`). The marker
//! and empty sections are never sent. Checked byte for byte on every request
//! of the 14 2.1.88 captures (`tests/system_side.rs`) and on the 2.1.328
//! `hello`, `custom-system-prompt` and `append-system-prompt` captures.

use super::system_prompt::DYNAMIC_BOUNDARY;
use crate::assemble::wire;
use crate::profile::Profile;
use serde_json::{Map, Value};

/// A block's `cache_control` (`type` is always `ephemeral`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CacheControl {
    /// `ttl` (`1h`), sent before `scope`.
    pub ttl: Option<String>,
    /// `scope` (`global`); `org` is the default and not sent.
    pub scope: Option<String>,
}

impl CacheControl {
    /// `{"type":"ephemeral"[,"ttl"][,"scope"]}` in wire order.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), Value::from("ephemeral"));
        if let Some(t) = &self.ttl {
            m.insert("ttl".into(), Value::from(t.as_str()));
        }
        if let Some(s) = &self.scope {
            m.insert("scope".into(), Value::from(s.as_str()));
        }
        Value::Object(m)
    }
}

/// One system text block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemBlock {
    /// The text.
    pub text: String,
    /// Its cache control, if any.
    pub cache_control: Option<CacheControl>,
}

impl SystemBlock {
    /// `{"type":"text","text":…[,"cache_control":…]}` in wire order.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), Value::from("text"));
        m.insert("text".into(), Value::from(self.text.as_str()));
        if let Some(cc) = &self.cache_control {
            m.insert("cache_control".into(), cc.to_json());
        }
        Value::Object(m)
    }
}

/// The wire `system` array of `blocks` as a JSON value.
pub fn to_json(blocks: &[SystemBlock]) -> Value {
    Value::Array(blocks.iter().map(SystemBlock::to_json).collect())
}

/// Build the system blocks from the billing header, the CLI prefix and the
/// effective prompt sections (see the module docs).
pub fn system_blocks(billing_header: &str, prefix: &str, sections: &[String], profile: &Profile) -> Vec<SystemBlock> {
    let cache = |scope: Option<&str>| {
        profile
            .system_cache
            .enabled
            .then(|| CacheControl { ttl: profile.system_cache.ttl.clone(), scope: scope.map(str::to_string) })
    };
    let mut out = Vec::with_capacity(4);
    let mut push = |text: String, cc: Option<CacheControl>| {
        if !text.is_empty() {
            out.push(SystemBlock { text, cache_control: cc });
        }
    };
    push(billing_header.to_string(), None);
    let join = |s: &[String]| {
        s.iter().filter(|x| !x.is_empty() && x.as_str() != DYNAMIC_BOUNDARY).cloned().collect::<Vec<_>>().join("\n\n")
    };
    match sections.iter().position(|s| s == DYNAMIC_BOUNDARY) {
        Some(b) => {
            push(prefix.to_string(), None);
            push(join(&sections[..b]), cache(Some("global")));
            push(join(&sections[b + 1..]), None);
        }
        None => {
            push(prefix.to_string(), cache(None));
            push(join(sections), cache(None));
        }
    }
    out
}

/// The billing header block's text for a session whose first user message
/// yields `first_text` (pick it with the profile's
/// [`crate::profile::SuffixText::pick`]): `x-anthropic-billing-header:
/// cc_version=<version>.<suffix>; cc_entrypoint=<entrypoint>;<cch>`.
pub fn billing_header(profile: &Profile, first_text: &str) -> String {
    let b = &profile.billing;
    let suffix = wire::billing_suffix(&b.salt, first_text, &profile.version);
    wire::billing_header(&profile.version, &suffix, &profile.entrypoint, b.cch.as_deref().unwrap_or(""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_at_the_marker() {
        let p = Profile::load("seed").unwrap();
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let blocks = system_blocks("H", "P", &s(&["a", "b", DYNAMIC_BOUNDARY, "c", "", "d"]), &p);
        assert_eq!(
            to_json(&blocks),
            serde_json::json!([
                {"type": "text", "text": "H"},
                {"type": "text", "text": "P"},
                {"type": "text", "text": "a\n\nb", "cache_control": {"type": "ephemeral", "scope": "global"}},
                {"type": "text", "text": "c\n\nd"},
            ])
        );
        let blocks = system_blocks("H", "P", &s(&["custom", "append"]), &p);
        assert_eq!(
            to_json(&blocks),
            serde_json::json!([
                {"type": "text", "text": "H"},
                {"type": "text", "text": "P", "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "custom\n\nappend", "cache_control": {"type": "ephemeral"}},
            ])
        );
        // ttl before scope; caching off drops every cache_control.
        let mut q = p.clone();
        q.system_cache.ttl = Some("1h".into());
        let b = system_blocks("H", "P", &s(&["a", DYNAMIC_BOUNDARY]), &q);
        assert_eq!(
            serde_json::to_string(&b[2].to_json()).unwrap(),
            r#"{"type":"text","text":"a","cache_control":{"type":"ephemeral","ttl":"1h","scope":"global"}}"#
        );
        assert_eq!(b.len(), 3);
        q.system_cache.enabled = false;
        assert!(system_blocks("H", "P", &s(&["a"]), &q).iter().all(|b| b.cache_control.is_none()));
    }

    #[test]
    fn billing_headers_of_the_captures() {
        let p = Profile::load("seed").unwrap();
        // tests/fixtures/cc-2.1.88/hello: the first text is the skills reminder.
        assert_eq!(
            billing_header(&p, "<system-reminder>\nThe following skills are available for use with the Skill tool:"),
            "x-anthropic-billing-header: cc_version=2.1.88.e09; cc_entrypoint=sdk-cli; cch=00000;"
        );
        // tests/fixtures/cc-2.1.328/hello.
        let q = Profile::load("cc-2.1.328").unwrap();
        assert_eq!(
            billing_header(&q, "hello"),
            "x-anthropic-billing-header: cc_version=2.1.328.661; cc_entrypoint=sdk-cli;"
        );
    }
}
