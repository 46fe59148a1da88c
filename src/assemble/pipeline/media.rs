//! Media limit: at most [`MAX_MEDIA`] image / document blocks per request,
//! the oldest stripped first (SPEC.md stage 4, `stripExcessMediaItems`).
//!
//! Media inside `tool_result` content count too. A message or tool result
//! whose content would become empty keeps one text block,
//! [`STRIPPED_MEDIA`] (ctxasm's text: no capture has more than 100 media).

use crate::assemble::validate::MAX_MEDIA;
use crate::json::Json;
use bumpalo::Bump;

/// Put in place of content that held only stripped media.
pub const STRIPPED_MEDIA: &str = "[media removed: over the limit of 100 per request]";

fn is_media(b: &Json<'_>) -> bool {
    matches!(b.get_str("type"), Some("image") | Some("document"))
}

fn count(blocks: &[Json<'_>]) -> usize {
    blocks
        .iter()
        .map(|b| {
            usize::from(is_media(b))
                + match (b.get_str("type"), b.get("content")) {
                    (Some("tool_result"), Some(Json::Arr(inner))) => count(inner),
                    _ => 0,
                }
        })
        .sum()
}

/// Media blocks of message `m` (inside its tool results too).
pub(crate) fn count_of(m: &Json<'_>) -> usize {
    m.get("content").and_then(Json::as_array).map_or(0, count)
}

fn placeholder<'a>(bump: &'a Bump) -> Json<'a> {
    Json::Obj(bump.alloc_slice_copy(&[("type", Json::Str("text")), ("text", Json::Str(STRIPPED_MEDIA))]))
}

/// Drop the first `*excess` media blocks of `blocks` (depth first).
fn strip<'a>(bump: &'a Bump, blocks: &[Json<'a>], excess: &mut usize) -> Vec<Json<'a>> {
    let mut out = Vec::with_capacity(blocks.len());
    for b in blocks {
        if *excess == 0 {
            out.push(*b);
            continue;
        }
        if is_media(b) {
            *excess -= 1;
            continue;
        }
        match (b.get_str("type"), b.get("content"), b.as_object()) {
            (Some("tool_result"), Some(Json::Arr(inner)), Some(members)) if count(inner) > 0 => {
                let mut kept = strip(bump, inner, excess);
                if kept.is_empty() {
                    kept.push(placeholder(bump));
                }
                let content = Json::Arr(bump.alloc_slice_copy(&kept));
                let m: Vec<(&'a str, Json<'a>)> =
                    members.iter().map(|&(k, v)| if k == "content" { (k, content) } else { (k, v) }).collect();
                out.push(Json::Obj(bump.alloc_slice_copy(&m)));
            }
            _ => out.push(*b),
        }
    }
    out
}

/// Keep at most [`MAX_MEDIA`] media blocks; returns the messages and how many
/// blocks were stripped.
pub fn limit_media<'a>(bump: &'a Bump, messages: &[&'a Json<'a>]) -> (Vec<&'a Json<'a>>, usize) {
    let blocks_of = |m: &Json<'a>| m.get("content").and_then(Json::as_array).unwrap_or(&[]);
    let total: usize = messages.iter().map(|m| count(blocks_of(m))).sum();
    if total <= MAX_MEDIA {
        return (messages.to_vec(), 0);
    }
    let mut excess = total - MAX_MEDIA;
    let out = messages
        .iter()
        .map(|&m| {
            let blocks = blocks_of(m);
            if excess == 0 || count(blocks) == 0 {
                return m;
            }
            let mut kept = strip(bump, blocks, &mut excess);
            if kept.is_empty() {
                kept.push(placeholder(bump));
            }
            let content = Json::Arr(bump.alloc_slice_copy(&kept));
            let members: Vec<(&'a str, Json<'a>)> = m
                .as_object()
                .unwrap_or(&[])
                .iter()
                .map(|&(k, v)| if k == "content" { (k, content) } else { (k, v) })
                .collect();
            &*bump.alloc(Json::Obj(bump.alloc_slice_copy(&members)))
        })
        .collect();
    (out, total - MAX_MEDIA)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::LineParser;

    const IMG: &str = r#"{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA"}}"#;

    fn msgs<'a>(bump: &'a Bump, text: &str) -> Vec<&'a Json<'a>> {
        let v: &'a Json<'a> = bump.alloc(LineParser::new().parse(bump, text.as_bytes()).unwrap());
        v.as_array().unwrap().iter().collect()
    }

    fn media_left(m: &[&Json<'_>]) -> usize {
        m.iter().map(|m| count(m.get("content").and_then(Json::as_array).unwrap_or(&[]))).sum()
    }

    #[test]
    fn at_or_under_the_limit_nothing_changes() {
        let bump = Bump::new();
        let text = format!(r#"[{{"role":"user","content":[{}]}}]"#, [IMG; 100].join(","));
        let m = msgs(&bump, &text);
        let (out, stripped) = limit_media(&bump, &m);
        assert_eq!(stripped, 0);
        assert!(std::ptr::eq(out[0], m[0]));
    }

    #[test]
    fn the_oldest_go_first_including_inside_tool_results() {
        let bump = Bump::new();
        // 3 media in a tool result (oldest), then a message of 99 + text.
        let text = format!(
            r#"[{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t","content":[{IMG},{IMG},{IMG}]}}]}},
               {{"role":"user","content":[{},{{"type":"text","text":"keep"}}]}}]"#,
            [IMG; 99].join(",")
        );
        let m = msgs(&bump, &text);
        let (out, stripped) = limit_media(&bump, &m);
        assert_eq!(stripped, 2);
        assert_eq!(media_left(&out), 100);
        // The tool result kept its newest image; the later message is untouched.
        let inner = out[0].get("content").unwrap().as_array().unwrap()[0].get("content").unwrap();
        assert_eq!(inner.as_array().unwrap().len(), 1);
        assert!(std::ptr::eq(out[1], m[1]));
    }

    #[test]
    fn emptied_content_keeps_a_placeholder() {
        let bump = Bump::new();
        let text =
            format!(r#"[{{"role":"user","content":[{IMG}]}},{{"role":"user","content":[{}]}}]"#, [IMG; 100].join(","));
        let m = msgs(&bump, &text);
        let (out, stripped) = limit_media(&bump, &m);
        assert_eq!(stripped, 1);
        let first = out[0].get("content").unwrap().as_array().unwrap();
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].get_str("text"), Some(STRIPPED_MEDIA));
    }
}
