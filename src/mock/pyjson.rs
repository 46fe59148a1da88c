//! The stand-in's Python-compatible serializers: what
//! `shared/capture/mock_anthropic.py` would write, byte for byte, where the
//! mock imitates it.
//!
//! This is deliberately not [`crate::json::writer`] (JavaScript's
//! `JSON.stringify`, which the request bodies and every other JSON output
//! of ctxasm follow): Python's `json.dumps` separates with `, ` and `: ` and
//! escapes everything outside printable ASCII as `\uXXXX` (`ensure_ascii`),
//! and its `str()` of a value differs again. Only the mock's reply format
//! uses these; nothing else may.

use serde_json::Value;

/// `v` as Python's `json.dumps(v)` writes it (separators `, ` and `: `,
/// `ensure_ascii`), for the `partial_json` of a tool_use delta.
pub fn dumps(v: &Value) -> String {
    let mut out = String::new();
    dumps_into(&mut out, v);
    out
}

fn dumps_into(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => dumps_str(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                dumps_into(out, x);
            }
            out.push(']');
        }
        Value::Object(members) => {
            out.push('{');
            for (i, (k, x)) in members.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                dumps_str(out, k);
                out.push_str(": ");
                dumps_into(out, x);
            }
            out.push('}');
        }
    }
}

fn dumps_str(out: &mut String, s: &str) {
    use std::fmt::Write;
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{u:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Python's `str()` of a JSON value, as far as the rules can tell.
pub fn py_str(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "None".into(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(true)) => "True".into(),
        Some(Value::Bool(false)) => "False".into(),
        Some(other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn python_json_dumps() {
        // Checked with python3 -c 'import json; print(json.dumps({...}))'.
        let v = json!({"command": "date +%Y", "n": [1, 2.5, null, true], "s": "é\u{1F600}\n\"\u{7f}"});
        assert_eq!(
            dumps(&v),
            r#"{"command": "date +%Y", "n": [1, 2.5, null, true], "s": "\u00e9\ud83d\ude00\n\"\u007f"}"#
        );
    }
}
